//! `commitlog::check` reads a log directory as `CommitLog::open` with the
//! default `CorruptionPolicy::Stop` decides, and changes nothing: a missing
//! directory is an empty log (and is not created), a log with a torn tail
//! is accepted with the same torn tail open reports, and a damaged drop
//! side file is refused with the error open gives.

mod common;

use common::snapshot;

use std::time::Duration;

use commitlog::{CheckReport, CommitLog, Config, Error, Preallocate, SyncMode, check};
use mutation::Mutation;

fn config() -> Config {
    let mut c = Config::default();
    c.segment_size = 4096;
    c.total_size_limit = 1 << 20;
    c.sync = SyncMode::Batch(Duration::ZERO);
    c.preallocate = Preallocate::Never;
    c
}

fn m(i: usize) -> Mutation {
    common::row("k", i, 400)
}

#[test]
fn a_missing_directory_is_an_empty_log_and_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("log");
    assert_eq!(check(&missing).unwrap(), CheckReport::default());
    assert!(!missing.exists(), "check created the directory");
}

#[test]
fn a_torn_tail_is_accepted_as_open_accepts_it_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = CommitLog::open(dir.path(), config(), |_, _, _| {}).unwrap();
    let mut positions = Vec::new();
    for i in 0..12 {
        if i == 6 {
            log.drop_table(9).unwrap();
        }
        positions.push(log.add(3, &m(i)).unwrap());
    }
    log.close().unwrap();
    // The last entry torn: its header reached the disk, the rest did not.
    let last = *positions.last().unwrap();
    let path = dir.path().join(format!("CommitLog-1-{}.log", last.segment));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[last.offset as usize + 16..].fill(0);
    std::fs::write(&path, &bytes).unwrap();

    let before = snapshot(dir.path());
    let checked = check(dir.path()).unwrap();
    assert_eq!(snapshot(dir.path()), before, "check changed files");
    let segments = positions
        .iter()
        .map(|p| p.segment)
        .collect::<std::collections::BTreeSet<_>>();
    assert_eq!(checked.segments, segments.len() as u64);
    assert_eq!(checked.entries, positions.len() as u64 - 1);
    assert_eq!(checked.drop_records, 1);
    assert_eq!(checked.torn.len(), 1, "{checked:?}");
    assert_eq!(
        (checked.torn[0].segment, checked.torn[0].offset),
        (last.segment, last.offset)
    );

    let mut replayed = 0;
    let (log, report) = CommitLog::open(dir.path(), config(), |_, _, _| replayed += 1).unwrap();
    assert_eq!(report.torn, checked.torn);
    assert_eq!(report.entries, checked.entries);
    assert_eq!(replayed, checked.entries);
    log.close().unwrap();
}

#[test]
fn a_damaged_drop_file_is_refused_as_open_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = CommitLog::open(dir.path(), config(), |_, _, _| {}).unwrap();
    log.add(3, &m(0)).unwrap();
    log.drop_table(3).unwrap();
    log.close().unwrap();
    let drops = dir.path().join("CommitLog-1-drops");
    let mut bytes = std::fs::read(&drops).unwrap();
    bytes[13] ^= 0x01;
    std::fs::write(&drops, &bytes).unwrap();

    let before = snapshot(dir.path());
    let checked = check(dir.path()).unwrap_err();
    assert_eq!(snapshot(dir.path()), before, "check changed files");
    let opened = CommitLog::open(dir.path(), config(), |_, _, _| {})
        .map(|_| ())
        .unwrap_err();
    for err in [&checked, &opened] {
        assert!(
            matches!(err, Error::Corrupt { path, segment: 0, reason, .. }
                if *path == drops && reason == "drop file checksum mismatch"),
            "{err}"
        );
    }
    assert_eq!(checked.to_string(), opened.to_string());
    assert_eq!(snapshot(dir.path()), before);
}
