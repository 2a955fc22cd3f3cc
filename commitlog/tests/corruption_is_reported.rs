//! Every single-byte flip and every truncation point of a small log of
//! several segments: replay never panics, yields every entry that lies
//! wholly before the damage (and every entry of the other segments), never
//! yields an entry that was not written, and reports the damage (as
//! corruption, or as a torn tail where the damage looks exactly like an
//! unfinished write).

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use commitlog::{CommitLog, Config, ReplayPosition, ReplayReport, SyncMode, replay};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

type Entry = (u64, Mutation, ReplayPosition);

struct Pristine {
    dir: tempfile::TempDir,
    /// Segment id → (path, bytes).
    files: BTreeMap<u64, (PathBuf, Vec<u8>)>,
    entries: Vec<Entry>,
    /// Framed length of each entry, by position.
    ends: BTreeMap<ReplayPosition, u32>,
}

fn build() -> Pristine {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Config::default();
    c.segment_size = 4096;
    c.total_size_limit = 1 << 20;
    c.sync = SyncMode::Batch(Duration::ZERO);
    let (log, _) = CommitLog::open(dir.path(), c, |_, _, _| {}).unwrap();
    let mut entries = Vec::new();
    let mut ends = BTreeMap::new();
    for i in 0..36u32 {
        let m = Mutation::builder(DecoratedKey::from_bytes(format!("key{i}")).unwrap())
            .cell(
                "ck",
                1,
                Cell::live(
                    vec![i as u8 + 1; 100 + (i as usize * 37) % 300],
                    Timestamp::from_micros(i64::from(i)),
                ),
            )
            .build()
            .unwrap();
        let pos = log.add(u64::from(i % 3), &m).unwrap();
        ends.insert(pos, pos.offset + (9 + m.encoded_len() + 20) as u32);
        entries.push((u64::from(i % 3), m, pos));
    }
    log.close().unwrap();
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let id: u64 = name
            .trim_start_matches("CommitLog-1-")
            .trim_end_matches(".log")
            .parse()
            .unwrap();
        files.insert(id, (path.clone(), std::fs::read(&path).unwrap()));
    }
    assert!(
        files.len() >= 3,
        "a log of several segments: {}",
        files.len()
    );
    Pristine {
        dir,
        files,
        entries,
        ends,
    }
}

fn run(dir: &Path) -> (Vec<Entry>, ReplayReport) {
    let mut got = Vec::new();
    let report = replay(dir, |t, m, p| got.push((t, m, p))).unwrap();
    (got, report)
}

/// Checks a damaged replay of `segment`, damaged from byte `at` on.
fn check(p: &Pristine, segment: u64, at: usize, got: &[Entry], report: &ReplayReport, what: &str) {
    // Nothing invented, order kept: `got` is a subsequence of the entries.
    let mut it = p.entries.iter();
    for g in got {
        assert!(
            it.any(|e| e == g),
            "{what}: replay yielded an entry never written or out of order: {:?}",
            g.2
        );
    }
    // Everything before the damage, and every other segment, is there.
    for e in &p.entries {
        let before = e.2.segment != segment || (p.ends[&e.2] as usize) <= at;
        if before {
            assert!(
                got.contains(e),
                "{what}: lost entry at {} before the damage",
                e.2
            );
        }
    }
    let missing = p.entries.len() - got.len();
    let reported = report
        .damage
        .iter()
        .any(|d| d.segment == segment && d.offset as usize <= at)
        || report
            .torn
            .iter()
            .any(|t| t.segment == segment && t.offset as usize <= at);
    // A change that cost an entry is always reported; so is damage to a
    // segment's header or to the never-written zeros.
    assert!(
        reported || missing == 0,
        "{what}: {missing} entries lost without a report: {report:?}"
    );
    assert_eq!(
        report.corrupt_segments,
        report.damage.len() as u64,
        "{what}"
    );
    assert!(report.damage.iter().all(|d| d.bytes_skipped > 0), "{what}");
}

#[test]
fn every_single_byte_flip_is_survived_and_reported() {
    let p = build();
    let mut unreported = 0;
    for (&id, (path, bytes)) in &p.files {
        // Damage in place (pwrite of one byte), then put it back: cheap.
        let file = OpenOptions::new().write(true).open(path).unwrap();
        for at in 0..bytes.len() {
            file.write_all_at(&[bytes[at] ^ 0xff], at as u64).unwrap();
            let (got, report) = run(p.dir.path());
            file.write_all_at(&bytes[at..=at], at as u64).unwrap();
            let what = format!("flip of byte {at} of segment {id}");
            check(&p, id, at, &got, &report, &what);
            let flagged = !report.damage.is_empty() || !report.torn.is_empty();
            if !flagged {
                unreported += 1;
            }
        }
    }
    // Every flip of a written or a never-written byte is noticed.
    assert_eq!(unreported, 0, "flips that replay did not notice");
}

/// Segments are made at their full size before anything is written, so a
/// cut is damage in every segment, the last written ones included; only a
/// segment cut to nothing (a crash between creating the file and sizing
/// it) is a torn tail, in one of the segments written last.
#[test]
fn every_truncation_point_is_survived_and_reported() {
    let p = build();
    let tail: Vec<u64> = p.files.keys().rev().take(2).copied().collect();
    for (&id, (path, bytes)) in &p.files {
        let file = OpenOptions::new().write(true).open(path).unwrap();
        for len in 0..bytes.len() {
            file.set_len(len as u64).unwrap();
            let (got, report) = run(p.dir.path());
            file.set_len(bytes.len() as u64).unwrap();
            file.write_all_at(&bytes[len..], len as u64).unwrap();
            let what = format!("segment {id} cut to {len} bytes");
            check(&p, id, len, &got, &report, &what);
            if len == 0 && tail.contains(&id) {
                assert!(
                    report.damage.is_empty() && report.torn.iter().any(|t| t.segment == id),
                    "{what}: a last segment without a header is a torn tail: {report:?}"
                );
            } else {
                assert!(
                    report.damage.iter().any(|d| d.segment == id)
                        && !report.torn.iter().any(|t| t.segment == id),
                    "{what}: a cut is damage, not a torn tail: {report:?}"
                );
                if len > 0 {
                    let d = report.damage.iter().find(|d| d.segment == id).unwrap();
                    assert!(
                        d.reason.starts_with("segment is cut short: "),
                        "{what}: {}",
                        d.reason
                    );
                }
            }
        }
    }
}

#[test]
fn mid_segment_damage_is_reported_with_offset_and_bytes_and_replay_goes_on() {
    let p = build();
    let (&id, (path, bytes)) = p.files.iter().next().unwrap();
    // Damage the payload of the second entry of the first segment.
    let second = p
        .entries
        .iter()
        .filter(|e| e.2.segment == id)
        .nth(1)
        .unwrap()
        .2;
    let mut damaged = bytes.clone();
    damaged[second.offset as usize + 30] ^= 0x01;
    std::fs::write(path, &damaged).unwrap();
    let (got, report) = run(p.dir.path());
    assert_eq!(report.corrupt_segments, 1);
    let d = &report.damage[0];
    assert_eq!((d.segment, d.offset), (id, second.offset));
    let data_end = bytes.iter().rposition(|&b| b != 0).unwrap() as u64 + 1;
    assert_eq!(d.bytes_skipped, data_end - u64::from(second.offset));
    assert_eq!(report.bytes_skipped, d.bytes_skipped);
    assert_eq!(d.reason, "entry payload checksum mismatch");
    let lost = p
        .entries
        .iter()
        .filter(|e| e.2.segment == id && e.2 >= second)
        .count();
    assert_eq!(got.len(), p.entries.len() - lost);
    assert_eq!(report.segments, p.files.len() as u64);
    assert_eq!(report.entries, got.len() as u64);
}
