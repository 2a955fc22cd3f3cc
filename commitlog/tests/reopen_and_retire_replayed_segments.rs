//! Reopening: replayed segments stay until the owner has flushed what they
//! held, then go; a segment replay found damaged is set aside (renamed
//! `….damaged`), never silently deleted; stale bytes of another segment
//! end a segment cleanly, without a damage report.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use commitlog::{
    CommitLog, Config, CorruptionPolicy, Preallocate, ReplayPosition, SyncMode, replay,
};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

fn m(i: usize) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("k{i}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![3u8; 600], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

fn config() -> Config {
    let mut c = Config::default();
    c.segment_size = 4096;
    c.total_size_limit = 1 << 20;
    c.sync = SyncMode::Periodic(Duration::from_secs(3600));
    // These tests count the files in the directory; a reserve segment
    // made in the background would come and go at its own pace.
    c.preallocate = Preallocate::Never;
    c
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// Writes 14 entries over several segments (tables 0 and 1) and closes.
fn fill(dir: &Path) -> Vec<ReplayPosition> {
    let (log, _) = CommitLog::open(dir, config(), |_, _, _| {}).unwrap();
    let positions = (0..14)
        .map(|i| log.add((i % 2) as u64, &m(i)).unwrap())
        .collect();
    log.close().unwrap();
    positions
}

#[test]
fn replayed_segments_stay_until_their_tables_are_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let positions = fill(dir.path());
    let before = names(dir.path());
    assert!(before.len() >= 3, "{before:?}");
    let mut newest: HashMap<u64, ReplayPosition> = HashMap::new();
    let (log, report) = CommitLog::open(dir.path(), config(), |t, _, p| {
        newest.insert(t, p);
    })
    .unwrap();
    assert_eq!(report.entries, 14);
    // Nothing flushed yet: every replayed segment stays.
    assert_eq!(names(dir.path()), before);
    let new = log.add(0, &m(99)).unwrap();
    assert!(
        new.segment > positions.last().unwrap().segment,
        "new ids come after the old ones"
    );
    // Table 0 flushed alone: segments still holding table 1 stay.
    log.discard_completed(0, newest[&0]);
    assert_eq!(names(dir.path()).len(), before.len() + 1);
    log.discard_completed(1, newest[&1]);
    let after = names(dir.path());
    assert_eq!(
        after.len(),
        1,
        "only the new active segment is left: {after:?}"
    );
    log.close().unwrap();
}

#[test]
fn a_damaged_segment_is_set_aside_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let positions = fill(dir.path());
    let first = positions[0].segment;
    let path = dir.path().join(format!("CommitLog-1-{first}.log"));
    let mut bytes = std::fs::read(&path).unwrap();
    let second = positions[1];
    bytes[second.offset as usize + 40] ^= 0x55;
    std::fs::write(&path, &bytes).unwrap();
    // By default open refuses the damage and changes nothing.
    let before = names(dir.path());
    let err = CommitLog::open(dir.path(), config(), |_, _, _| {
        panic!("nothing is replayed")
    })
    .unwrap_err();
    assert!(
        matches!(err, commitlog::Error::Corrupt { segment, offset, .. }
        if segment == first && offset == second.offset),
        "{err}"
    );
    assert_eq!(names(dir.path()), before);
    let mut skip = config();
    skip.on_corruption = CorruptionPolicy::Skip;
    let mut newest: HashMap<u64, ReplayPosition> = HashMap::new();
    let (log, report) = CommitLog::open(dir.path(), skip, |t, _, p| {
        let e = newest.entry(t).or_insert(p);
        *e = (*e).max(p);
    })
    .unwrap();
    assert_eq!(report.corrupt_segments, 1);
    assert_eq!(
        (report.damage[0].segment, report.damage[0].offset),
        (first, second.offset)
    );
    for (t, p) in newest {
        log.discard_completed(t, p);
    }
    let left = names(dir.path());
    assert_eq!(
        left,
        vec![format!("CommitLog-1-{first}.log.damaged")],
        "evidence kept: {left:?}"
    );
    log.close().unwrap();
    // The set-aside file is not replayed again, and its id is not reused.
    assert_eq!(replay(dir.path(), |_, _, _| {}).unwrap().segments, 0);
    let (log, _) = CommitLog::open(dir.path(), config(), |_, _, _| {}).unwrap();
    assert!(log.add(0, &m(0)).unwrap().segment > first);
}

#[test]
fn stale_bytes_of_another_segment_end_a_segment_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let positions = fill(dir.path());
    let (a, b) = (positions[0].segment, positions.last().unwrap().segment);
    let pa = dir.path().join(format!("CommitLog-1-{a}.log"));
    let pb = dir.path().join(format!("CommitLog-1-{b}.log"));
    let mut bytes_a = std::fs::read(&pa).unwrap();
    let bytes_b = std::fs::read(&pb).unwrap();
    // As if segment a's file were a reused file of segment b: after a's
    // last entry lie b's entries (valid checksums, another segment id).
    let end_a = bytes_a.iter().rposition(|&x| x != 0).unwrap() + 1;
    let end_b = bytes_b.iter().rposition(|&x| x != 0).unwrap() + 1;
    let stale = &bytes_b[24..end_b];
    let room = bytes_a.len() - end_a;
    let n = stale.len().min(room);
    bytes_a[end_a..end_a + n].copy_from_slice(&stale[..n]);
    std::fs::write(&pa, &bytes_a).unwrap();
    let mut got = Vec::new();
    let report = replay(dir.path(), |_, m, p| got.push((m, p))).unwrap();
    assert!(
        report.damage.is_empty() && report.torn.is_empty(),
        "{report:?}"
    );
    assert_eq!(got.len(), 14, "every real entry once, no stale one");
    assert!(got.windows(2).all(|w| w[0].1 < w[1].1));
}
