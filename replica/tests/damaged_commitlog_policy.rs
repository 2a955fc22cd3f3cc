//! A commit log damaged in an older segment: by default `Database::open`
//! refuses, naming the segment, and changes nothing on disk; with
//! `CorruptionPolicy::Skip` it opens, reports what it skipped, and keeps
//! every write before the damage.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::{
    COMMITLOG_DIR_NAME, CommitLogMode, CorruptionPolicy, Database, DatabaseConfig, Error,
    TableSchema,
};

fn config(dir: &Path, policy: CorruptionPolicy) -> DatabaseConfig {
    let mut config = DatabaseConfig::new(dir);
    config.commitlog = CommitLogMode::Batch(Duration::ZERO);
    config.commitlog_segment_size = 64 << 10;
    config.commitlog_on_corruption = policy;
    config
}

fn write(i: u32) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("k{i:05}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![b'v'; 1000], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap() != "LOCK" && !p.ends_with(replica::LOCK_FILE_NAME) {
                files.insert(p.display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    files
}

#[test]
fn damage_in_an_older_segment_stops_open_by_default_and_skip_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path(), CorruptionPolicy::Stop)).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    // About four segments of acknowledged (synced) writes, never flushed.
    for i in 0..250 {
        db.apply("t", &write(i)).unwrap();
    }
    db.crash();
    let log = dir.path().join(COMMITLOG_DIR_NAME);
    let mut segments: Vec<_> = std::fs::read_dir(&log)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    segments.sort();
    assert!(segments.len() >= 3, "{segments:?}");
    // One flipped byte inside the first entry of the second segment.
    let victim = &segments[1];
    let mut bytes = std::fs::read(victim).unwrap();
    bytes[24 + 16 + 40] ^= 0x5a;
    std::fs::write(victim, &bytes).unwrap();

    let before = snapshot(dir.path());
    match Database::open(config(dir.path(), CorruptionPolicy::Stop)) {
        Err(Error::CommitLog { source }) => {
            let message = source.to_string();
            let name = victim.file_name().unwrap().to_string_lossy().into_owned();
            assert!(message.contains(&name), "names the segment: {message}");
        }
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("opened a database whose commit log is damaged"),
    }
    assert_eq!(
        snapshot(dir.path()),
        before,
        "a refused open changes nothing"
    );

    let db = Database::open(config(dir.path(), CorruptionPolicy::Skip)).unwrap();
    let report = db.replay_report().unwrap().clone();
    assert_eq!(report.damage.len(), 1, "{report:?}");
    assert!(report.entries_skipped >= 1);
    // Every write in the first segment (before the damage) is there.
    let first_segment_entries = 60;
    for i in 0..first_segment_entries {
        let key = write(i).key().clone();
        assert!(
            db.get("t", &key, ClusteringRange::full())
                .unwrap()
                .is_some(),
            "write {i} before the damage lost"
        );
    }
    db.close().unwrap();
}
