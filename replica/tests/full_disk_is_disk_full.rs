//! A full disk (issue 37): a commit-log write, a flush or a compaction
//! that fails with `ENOSPC` reaches the caller as `Error::DiskFull` naming
//! the directory that is full (the commit log's, or the data directory the
//! flush or compaction wrote to), not as the generic "failed earlier"; every later write gets the
//! same class; and after space returns and the database is reopened, every
//! write acknowledged before is there. (Resuming without a reopen is not
//! built yet.)

mod sweep;

use std::path::Path;
use std::sync::Arc;

use fs::{FaultError, FaultFs, FaultRule, FsHandle, Op, PowerLossFs};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use replica::{Database, Error, TableSchema};
use sweep::{Acked, check, config};

fn put(db: &Database, acked: &mut Acked, i: usize) -> Result<(), Error> {
    let r = (format!("k{}", i % 4), format!("r{i:03}"));
    let value = format!("v{i}").into_bytes();
    let m = Mutation::builder(DecoratedKey::from_bytes(r.0.clone()).unwrap())
        .cell(
            r.1.clone(),
            0,
            Cell::live(value.clone(), Timestamp::from_micros(i as i64 + 1)),
        )
        .build()
        .unwrap();
    db.apply("t", &m)?;
    acked.live.insert(r, value);
    Ok(())
}

/// A database on an in-memory disk behind a fault layer, table `t` made.
fn open() -> (FaultFs, FsHandle, &'static Path, Database) {
    let dir = Path::new("/db");
    let disk = FaultFs::new(Arc::new(PowerLossFs::new()));
    let fs = FsHandle::new(Arc::new(disk.clone()));
    let db = Database::open(config(dir, fs.clone())).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    (disk, fs, dir, db)
}

#[test]
fn a_full_log_directory_is_disk_full_naming_it() {
    let (disk, fs, dir, db) = open();
    let log_dir = config(dir, fs.clone()).commitlog_dir();
    let mut acked = Acked::default();
    for i in 0..10 {
        put(&db, &mut acked, i).unwrap();
    }
    disk.add_rule(
        FaultRule::every(Op::Write, FaultError::NoSpace).on_paths(log_dir.to_string_lossy()),
    )
    .unwrap();
    let e = put(&db, &mut acked, 10).unwrap_err();
    assert!(e.is_disk_full(), "{e}");
    match &e {
        Error::DiskFull {
            dir: named, what, ..
        } => {
            assert_eq!(named, &log_dir);
            assert_eq!(what, "commit log");
        }
        other => panic!("{other}"),
    }
    assert!(
        e.to_string().contains(&*log_dir.to_string_lossy()),
        "the message names the directory: {e}"
    );
    // Every later writer gets the same class, even once space is back
    // (until a reopen).
    disk.clear_rules();
    let later = put(&db, &mut acked, 11).unwrap_err();
    assert!(later.is_disk_full(), "{later}");
    let _ = db.close();
    check(&fs, dir, &acked).unwrap();
}

#[test]
fn a_flush_into_a_full_data_directory_is_disk_full_naming_it() {
    let (disk, fs, dir, db) = open();
    let mut acked = Acked::default();
    for i in 0..10 {
        put(&db, &mut acked, i).unwrap();
    }
    // Sstable files only: the commit log still has room.
    disk.add_rule(FaultRule::every(Op::Write, FaultError::NoSpace).on_paths("sst-"))
        .unwrap();
    let e = db.flush("t").unwrap_err();
    match &e {
        Error::DiskFull {
            dir: named, what, ..
        } => {
            assert!(named.starts_with(dir), "{}", named.display());
            assert!(what.contains("flush of table \"t\""), "{what}");
        }
        other => panic!("{other}"),
    }
    // The table stays writable: the log has room.
    put(&db, &mut acked, 10).unwrap();
    disk.clear_rules();
    db.flush("t").unwrap();
    put(&db, &mut acked, 11).unwrap();
    db.close().unwrap();
    check(&fs, dir, &acked).unwrap();
}

#[test]
fn a_flush_that_hit_a_full_disk_is_retried_by_itself_once_space_returns() {
    let (disk, fs, dir, db) = open();
    let mut acked = Acked::default();
    for i in 0..10 {
        put(&db, &mut acked, i).unwrap();
    }
    disk.add_rule(FaultRule::every(Op::Write, FaultError::NoSpace).on_paths("sst-"))
        .unwrap();
    assert!(db.flush("t").unwrap_err().is_disk_full());
    assert_eq!(db.metrics().sstables(), 0);
    // Space returns; nobody asks for a flush again: the dirty-memory
    // manager's back-off retries (100 ms doubling to 10 s) bring it in.
    disk.clear_rules();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while db.metrics().sstables() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the failed flush was not retried within 60 s of space returning"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    put(&db, &mut acked, 10).unwrap();
    db.close().unwrap();
    check(&fs, dir, &acked).unwrap();
}

#[test]
fn a_compaction_into_a_full_data_directory_is_disk_full_naming_it() {
    let (disk, fs, dir, db) = open();
    let mut acked = Acked::default();
    for round in 0..3 {
        for i in 0..10 {
            put(&db, &mut acked, round * 10 + i).unwrap();
        }
        db.flush("t").unwrap();
    }
    disk.add_rule(FaultRule::every(Op::Write, FaultError::NoSpace).on_paths("sst-"))
        .unwrap();
    let e = db.compact("t").unwrap_err();
    match &e {
        Error::DiskFull {
            dir: named, what, ..
        } => {
            assert!(named.starts_with(dir), "{}", named.display());
            assert!(what.contains("compaction of table \"t\""), "{what}");
        }
        other => panic!("{other}"),
    }
    // The inputs stay; with space back the compaction runs.
    disk.clear_rules();
    db.compact("t").unwrap();
    db.close().unwrap();
    check(&fs, dir, &acked).unwrap();
}
