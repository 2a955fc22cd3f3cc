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
    put_sized(db, acked, i, 0)
}

/// Writes row `i` of `t` with a value padded by `pad` bytes.
fn put_sized(db: &Database, acked: &mut Acked, i: usize, pad: usize) -> Result<(), Error> {
    let r = (format!("k{}", i % 4), format!("r{i:03}"));
    let mut value = format!("v{i}").into_bytes();
    value.resize(value.len() + pad, b'.');
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

/// A small tmpfs mounted for a test, unmounted (and its mount point
/// removed, with the temporary directory) when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a `size` tmpfs, or `None` (with the reason) where mount is
    /// refused (not root, no mount namespace).
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn a_full_tmpfs_under_the_log_is_disk_full_and_loses_nothing_acknowledged() {
    let tmpfs = match Tmpfs::mount("64m") {
        Ok(t) => t,
        Err(why) => {
            eprintln!("skipped: a tmpfs cannot be mounted here ({why})");
            return;
        }
    };
    let dir = tmpfs.path().join("db");
    let fs = FsHandle::real();
    let c = config(&dir, fs.clone());
    let log_dir = c.commitlog_dir();
    let db = Database::open(c).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    let mut acked = Acked::default();
    for i in 0..20 {
        put_sized(&db, &mut acked, i, 1000).unwrap();
    }
    // Fill the file system.
    let filler = tmpfs.path().join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![1u8; 1 << 20];
        loop {
            match f.write_all(&chunk) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
                Err(e) => panic!("filling the tmpfs: {e}"),
            }
        }
        // What is left of the last chunk, a page at a time.
        while f.write_all(&chunk[..4096]).is_ok() {}
    }
    let mut failed = None;
    for i in 20..2_000 {
        if let Err(e) = put_sized(&db, &mut acked, i, 1000) {
            failed = Some(e);
            break;
        }
    }
    let e = failed.expect("the full tmpfs stopped the writes");
    match &e {
        Error::DiskFull {
            dir: named, what, ..
        } => {
            assert_eq!(named, &log_dir, "{e}");
            assert_eq!(what, "commit log");
        }
        other => panic!("{other}"),
    }
    // Space returns; the process reopens the database (resume without a
    // reopen is not built yet) and finds every acknowledged write.
    std::fs::remove_file(&filler).unwrap();
    let _ = db.close();
    drop(db);
    check(&fs, &dir, &acked).unwrap();
}
