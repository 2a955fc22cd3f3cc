//! Every file operation of the writer and the reader goes through the file
//! layer of `WriterOptions::fs` and `Sstable::open_with`: an sstable
//! written and read on an in-memory file system never touches the disk;
//! one that survives a simulated machine crash after its commit reads
//! back whole; and an injected failure of any single sync or rename of a
//! commit fails the commit and leaves no file of it behind; a failed read
//! is an error naming the file and the offset, never a wrong answer.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use fs::{Crash, FaultError, FaultFs, FaultRule, FileSystem, FsHandle, Op, PowerLossFs};
use mutation::{Cell, DecoratedKey, Fragment, Mutation, Timestamp};
use sstable::{Sstable, SstableDirectory, Writer, WriterOptions};

fn fragments() -> Vec<Fragment> {
    let mutations: Vec<Mutation> = (0..200u32)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(format!("key{i:04}")).unwrap())
                .cell(
                    "ck",
                    0,
                    Cell::live(vec![(i % 251) as u8; 300], Timestamp::from_micros(1)),
                )
                .build()
                .unwrap()
        })
        .collect();
    canonical(&mutations).0
}

fn write_on(fs: &FsHandle, dir: &Path, fragments: &[Fragment]) -> Result<u64, sstable::Error> {
    let mut options: WriterOptions = small_options(true);
    options.fs = fs.clone();
    let mut w = Writer::create(dir, options)?;
    for f in fragments {
        w.write(f)?;
    }
    Ok(w.commit()?.generation)
}

#[test]
fn an_sstable_on_an_in_memory_file_system_survives_a_crash_after_commit() {
    let disk = Arc::new(PowerLossFs::new());
    let fs = FsHandle::new(disk.clone());
    let dir = Path::new("/db/t");
    fs.create_dir_all(dir).unwrap();
    fs.sync_dir(Path::new("/db")).unwrap();
    fs.sync_dir(Path::new("/")).unwrap();
    let expected = fragments();
    let generation = write_on(&fs, dir, &expected).unwrap();
    assert!(!dir.exists(), "nothing on the real disk");
    disk.crash(Crash::LoseUnsynced);

    assert_eq!(
        SstableDirectory::open_with(dir, &fs).unwrap().generations(),
        &[generation]
    );
    let sst = Sstable::open_with(dir, generation, None, &fs).unwrap();
    assert_eq!(drain(&mut sst.scan()), expected);
    sst.verify().unwrap();
}

#[test]
fn a_failed_sync_or_rename_of_a_commit_fails_it_and_leaves_nothing() {
    let expected = fragments();
    // Count the calls of one clean write first.
    let count = FaultFs::new(Arc::new(PowerLossFs::new()));
    count.create_dir_all(Path::new("/t")).unwrap();
    write_on(
        &FsHandle::new(Arc::new(count.clone())),
        Path::new("/t"),
        &expected,
    )
    .unwrap();
    let mut cases = 0;
    for op in [Op::Sync, Op::SyncDir, Op::Rename, Op::Write, Op::Create] {
        for n in 1..=count.calls(op) {
            let disk = FaultFs::new(Arc::new(PowerLossFs::new()));
            disk.create_dir_all(Path::new("/t")).unwrap();
            disk.add_rule(FaultRule::nth(op, n, FaultError::Io))
                .unwrap();
            let fs = FsHandle::new(Arc::new(disk.clone()));
            let e = write_on(&fs, Path::new("/t"), &expected)
                .expect_err("the injected failure fails the write");
            assert!(
                e.to_string().contains("/t"),
                "{op:?} {n}: names the file: {e}"
            );
            assert_eq!(disk.injected(), 1);
            disk.clear_rules();
            assert_eq!(
                fs.read_dir(Path::new("/t")).unwrap(),
                Vec::<std::path::PathBuf>::new(),
                "{op:?} {n}: nothing left behind"
            );
            cases += 1;
        }
    }
    assert!(cases >= 10, "{cases} cases");
}

#[test]
fn a_failed_read_names_the_file_and_the_offset() {
    let disk = FaultFs::new(Arc::new(PowerLossFs::new()));
    let fs = FsHandle::new(Arc::new(disk.clone()));
    fs.create_dir_all(Path::new("/t")).unwrap();
    let expected = fragments();
    let generation = write_on(&fs, Path::new("/t"), &expected).unwrap();
    let sst = Sstable::open_with("/t", generation, None, &fs).unwrap();
    disk.add_rule(FaultRule::every(Op::Read, FaultError::Io).on_paths("Data.db"))
        .unwrap();
    let key = DecoratedKey::from_bytes("key0100").unwrap();
    let err = sst.read_partition(&key).unwrap_err();
    // The message and its causes.
    let mut e = err.to_string();
    let mut cause = std::error::Error::source(&err);
    while let Some(c) = cause {
        e = format!("{e}: {c}");
        cause = c.source();
    }
    assert!(e.contains("sst-1-Data.db"), "{e}");
    assert!(e.contains("at offset"), "{e}");
    disk.clear_rules();
    assert!(sst.read_partition(&key).unwrap().is_some());
}
