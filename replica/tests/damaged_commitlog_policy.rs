//! A commit log damaged in an older segment: by default `Database::open`
//! refuses, naming the segment, and changes nothing on disk (not the
//! leftovers of an unfinished flush, not a dropped table's directory, not
//! even the lock file); with
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

/// Every file and directory under `dir`, each file with its bytes.
fn tree(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut entries = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                entries.insert(p.display().to_string(), None);
                stack.push(p);
            } else {
                entries.insert(p.display().to_string(), Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    entries
}

/// The commit log's segment files, oldest first.
fn segments(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut segments: Vec<_> = std::fs::read_dir(dir.join(COMMITLOG_DIR_NAME))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    segments.sort();
    segments
}

/// Copies the directory `from` (files only, one level) to `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
}

#[test]
fn a_refused_open_leaves_every_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path(), CorruptionPolicy::Stop)).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    db.create_table(TableSchema::new("gone").unwrap()).unwrap();
    for i in 0..20 {
        db.apply("t", &write(i)).unwrap();
        db.apply("gone", &write(i)).unwrap();
    }
    db.flush_all().unwrap();
    // A dropped table whose directory a crash left behind (the drop
    // removes it; the copy puts it back, marker and sstables).
    let gone = replica::table_dir(dir.path(), "gone");
    let kept = dir.path().join("gone-copy");
    copy_dir(&gone, &kept);
    db.drop_table("gone").unwrap();
    // Acknowledged writes in the log, never flushed.
    for i in 20..270 {
        db.apply("t", &write(i)).unwrap();
    }
    db.crash();
    std::fs::rename(&kept, &gone).unwrap();
    // An unfinished flush's files in the live table's directory.
    let t = replica::table_dir(dir.path(), "t");
    std::fs::write(t.join("sst-900-Data.db.tmp"), b"half an sstable").unwrap();
    std::fs::write(t.join("sst-900-TemporaryTOC.txt"), b"Data.db\n").unwrap();
    let segments = segments(dir.path());
    assert!(segments.len() >= 3, "{segments:?}");
    let victim = &segments[1];
    let mut bytes = std::fs::read(victim).unwrap();
    bytes[24 + 16 + 40] ^= 0x5a;
    std::fs::write(victim, &bytes).unwrap();

    let before = tree(dir.path());
    assert!(before.contains_key(&gone.display().to_string()));
    assert!(before.keys().any(|k| k.ends_with(replica::LOCK_FILE_NAME)));
    let e = Database::open(config(dir.path(), CorruptionPolicy::Stop))
        .expect_err("a damaged log refuses the open");
    assert!(matches!(e, Error::CommitLog { .. }), "{e}");
    let after = tree(dir.path());
    for (path, content) in &before {
        assert_eq!(after.get(path), Some(content), "{path} changed or went");
    }
    assert_eq!(after.len(), before.len(), "nothing was added");

    // Skipping the damage, the open goes on: the leftovers and the dropped
    // table's directory go, the table keeps what was before the damage.
    let db = Database::open(config(dir.path(), CorruptionPolicy::Skip)).unwrap();
    assert!(!gone.exists(), "the dropped table's directory is removed");
    assert!(!t.join("sst-900-TemporaryTOC.txt").exists());
    for i in 0..20 {
        let key = write(i).key().clone();
        assert!(
            db.get("t", &key, ClusteringRange::full())
                .unwrap()
                .is_some(),
            "flushed write {i}"
        );
    }
    assert!(db.tables().iter().all(|s| s.name() != "gone"));
    db.close().unwrap();
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
