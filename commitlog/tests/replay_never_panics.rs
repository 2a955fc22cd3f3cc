//! Replay over arbitrary segment bytes (the stable-toolchain companion of
//! the cargo-fuzz target in `fuzz/`): random files, and a valid log with
//! random bytes changed and every checksum recomputed afterwards, so the
//! changed bytes reach the length, kind and mutation decoders. Replay
//! returns a report or an error, never panics, and its counts agree with
//! what it yielded.

use std::sync::OnceLock;
use std::time::Duration;

use commitlog::{CommitLog, Config, SyncMode, replay};
use mutation::Mutation;
use mutation::testing::arb_mutation;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

/// The id of the pristine log's first segment (ids are consecutive).
fn pristine_first_id() -> u64 {
    pristine();
    *FIRST_ID.get().expect("set by pristine()")
}

static FIRST_ID: OnceLock<u64> = OnceLock::new();

fn pristine() -> &'static Vec<Vec<u8>> {
    static P: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    P.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Config::default();
        c.segment_size = 4096;
        c.total_size_limit = 1 << 20;
        c.sync = SyncMode::Periodic(Duration::from_secs(3600));
        let (log, _) = CommitLog::open(dir.path(), c, |_, _, _| {}).unwrap();
        let mut runner = TestRunner::deterministic();
        for i in 0..240u64 {
            let m = arb_mutation().new_tree(&mut runner).unwrap().current();
            log.add(i % 3, &m).unwrap();
            if i == 120 {
                log.drop_table(1).unwrap();
            }
        }
        log.close().unwrap();
        let mut files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            // Segments only (the drop side file lives beside them).
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        files.sort_by_key(|p| (p.as_os_str().len(), p.clone()));
        let first: u64 = files[0]
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| {
                n.strip_prefix("CommitLog-1-")?
                    .strip_suffix(".log")?
                    .parse()
                    .ok()
            })
            .expect("segment file name");
        let _ = FIRST_ID.set(first);
        files.iter().map(|p| std::fs::read(p).unwrap()).collect()
    })
}

fn fix_crcs(seg: &mut [u8]) {
    if seg.len() < 24 {
        return;
    }
    let crc = crc32c::crc32c(&seg[..20]);
    seg[20..24].copy_from_slice(&crc.to_le_bytes());
    let mut at = 24usize;
    while at + 20 <= seg.len() {
        let len = u32::from_le_bytes(seg[at..at + 4].try_into().unwrap()) as usize;
        let end = at + 20 + len;
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

/// Writes `segs` as segments `first_id`, `first_id + 1`, ... and replays.
fn check(segs: &[Vec<u8>], first_id: u64) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    for (i, s) in segs.iter().enumerate() {
        let name = format!("CommitLog-1-{}.log", first_id + i as u64);
        std::fs::write(dir.path().join(name), s).unwrap();
    }
    let mut yielded = Vec::new();
    if let Ok(report) = replay(dir.path(), |_, m, p| yielded.push((m, p))) {
        prop_assert_eq!(report.entries, yielded.len() as u64);
        prop_assert_eq!(report.corrupt_segments, report.damage.len() as u64);
        prop_assert!(yielded.windows(2).all(|w| w[0].1 < w[1].1));
        for (m, _) in &yielded {
            prop_assert_eq!(&Mutation::decode(&m.encode()).unwrap(), m);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn arbitrary_files(segs in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 1..3)) {
        check(&segs, 1)?;
    }

    #[test]
    fn crafted_changes_with_valid_checksums(
        patches in prop::collection::vec((0usize..3, any::<prop::sample::Index>(), 1u8..=255), 1..6),
        fix in any::<bool>(),
    ) {
        let mut segs = pristine().clone();
        for (s, at, x) in patches {
            // Changes land in the written part of each segment.
            let n = segs.len();
            let seg = &mut segs[s % n];
            let end = seg.iter().rposition(|&b| b != 0).unwrap_or(0) + 1;
            seg[at.index(end)] ^= x;
        }
        if fix {
            for seg in &mut segs {
                fix_crcs(seg);
            }
        }
        check(&segs, pristine_first_id())?;
    }
}

#[test]
fn the_pristine_log_replays_whole() {
    let dir = tempfile::tempdir().unwrap();
    for (i, s) in pristine().iter().enumerate() {
        let name = format!("CommitLog-1-{}.log", pristine_first_id() + i as u64);
        std::fs::write(dir.path().join(name), s).unwrap();
    }
    let report = replay(dir.path(), |_, _, _| {}).unwrap();
    assert!(pristine().len() >= 3);
    assert_eq!(report.corrupt_segments, 0);
    assert!(
        report.dropped_entries > 0,
        "table 1's entries before its drop are skipped"
    );
}
