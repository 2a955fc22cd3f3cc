//! Fuzz target for commit log replay: whatever the bytes of the segment
//! files, replay returns a report or an error and never panics; every entry
//! it yields decodes to a valid mutation (it re-encodes and decodes to
//! itself), positions increase, and the report's counts agree with what was
//! yielded.
//!
//! The input either patches a valid small log of three segments (built
//! once, through the real writer) or, with a leading 0xff, supplies up to
//! three segment files raw (each prefixed by a little-endian u16 length).
//! With a leading 0xfe the patches are applied and then every header and
//! entry checksum is recomputed, so the patched bytes get past the crc
//! checks into the length, kind and mutation decoders (a crafted file
//! rather than a damaged one).
//!
//! Run: `cd commitlog/fuzz && cargo +nightly fuzz run replay -- -max_total_time=60`
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use commitlog::{CommitLog, Config, SyncMode, replay};
use libfuzzer_sys::fuzz_target;
use mutation::{Cell, DecoratedKey, Mutation, Timestamp, Tombstone};

/// The pristine log: segment files (name, bytes) in id order.
fn pristine() -> &'static Vec<(String, Vec<u8>)> {
    static P: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    P.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut c = Config::default();
        c.segment_size = 4096;
        c.total_size_limit = 1 << 20;
        c.sync = SyncMode::Periodic(Duration::from_secs(3600));
        let (log, _) = CommitLog::open(dir.path(), c, |_, _, _| {}).expect("open");
        for i in 0..45u32 {
            let m = Mutation::builder(DecoratedKey::from_bytes(format!("k{i}")).expect("key"))
                .cell(
                    "ck",
                    1,
                    Cell::live(
                        vec![i as u8; 40 + (i as usize * 53) % 250],
                        Timestamp::from_micros(i64::from(i)),
                    ),
                )
                .row_tombstone(vec![9u8], Tombstone::new(Timestamp::from_micros(2), 3))
                .build()
                .expect("mutation");
            log.add(u64::from(i % 4), &m).expect("add");
            if i == 17 {
                log.drop_table(2).expect("drop");
            }
        }
        log.close().expect("close");
        assert!(
            std::fs::read_dir(dir.path()).expect("dir").count() >= 3,
            "three segments"
        );
        let mut files: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .collect();
        // Numeric id order (names differ only in the id's digits).
        files.sort_by_key(|p| (p.as_os_str().len(), p.clone()));
        files
            .iter()
            .map(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).expect("name");
                (name.to_string(), std::fs::read(p).expect("read"))
            })
            .collect()
    })
}

/// Recomputes the header checksum and every entry checksum it can reach.
fn fix_crcs(seg: &mut [u8]) {
    if seg.len() < 24 {
        return;
    }
    let crc = crc32c::crc32c(&seg[..20]);
    seg[20..24].copy_from_slice(&crc.to_le_bytes());
    let mut at = 24usize;
    while at + 20 <= seg.len() {
        let len = u32::from_le_bytes([seg[at], seg[at + 1], seg[at + 2], seg[at + 3]]) as usize;
        let Some(end) = (at + 16).checked_add(len).and_then(|e| e.checked_add(4)) else {
            return;
        };
        if len == 0 || end > seg.len() {
            return;
        }
        let crc = crc32c::crc32c(&seg[at..at + 12]);
        seg[at + 12..at + 16].copy_from_slice(&crc.to_le_bytes());
        let crc = crc32c::crc32c(&seg[at + 16..end - 4]);
        seg[end - 4..end].copy_from_slice(&crc.to_le_bytes());
        at = end;
    }
}

fn segments(data: &[u8]) -> Vec<(String, Vec<u8>)> {
    let (names, mut segs): (Vec<String>, Vec<Vec<u8>>) = pristine().iter().cloned().unzip();
    if data.first() == Some(&0xff) {
        segs.clear();
        let mut rest = &data[1..];
        while rest.len() >= 2 && segs.len() < 3 {
            let n = usize::from(u16::from_le_bytes([rest[0], rest[1]])).min(rest.len() - 2);
            segs.push(rest[2..2 + n].to_vec());
            rest = &rest[2 + n..];
        }
        return segs
            .into_iter()
            .enumerate()
            .map(|(i, s)| (format!("CommitLog-1-{}.log", i + 1), s))
            .collect();
    }
    let fix = data.first() == Some(&0xfe);
    let patches = if fix { &data[1..] } else { data };
    // Patches: (segment, offset u16, value) quadruples; a value of 0 at an
    // even offset truncates the segment instead.
    for p in patches.chunks_exact(4) {
        let n = segs.len();
        let seg = &mut segs[usize::from(p[0]) % n];
        if seg.is_empty() {
            continue;
        }
        let at = usize::from(u16::from_le_bytes([p[1], p[2]])) % seg.len();
        if p[3] == 0 && at % 2 == 0 {
            seg.truncate(at);
        } else {
            seg[at] ^= p[3];
        }
    }
    if fix {
        for seg in &mut segs {
            fix_crcs(seg);
        }
    }
    names.into_iter().zip(segs).collect()
}

fuzz_target!(|data: &[u8]| {
    let segs = segments(data);
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, s) in &segs {
        std::fs::write(dir.path().join(name), s).expect("write");
    }
    let mut yielded = 0u64;
    let mut last = None;
    let Ok(report) = replay(dir.path(), |_, m, pos| {
        assert_eq!(Mutation::decode(&m.encode()).expect("re-decodes"), m);
        assert!(last.is_none_or(|l| l < pos), "positions increase");
        last = Some(pos);
        yielded += 1;
    }) else {
        return;
    };
    assert_eq!(report.entries, yielded);
    assert_eq!(report.corrupt_segments, report.damage.len() as u64);
    assert_eq!(
        report.bytes_skipped,
        report.damage.iter().map(|d| d.bytes_skipped).sum::<u64>()
    );
});
