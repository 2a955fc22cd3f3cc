//! A writer killed at any stage leaves a directory that opens with only
//! the committed sstables: leftovers are removed, nothing half-written is
//! taken for an sstable, and later generations do not collide.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use mutation::{DecoratedKey, Fragment, Mutation, Timestamp};
use sstable::{CommitStep, Error, Sstable, SstableDirectory, Writer};

fn fragments(n: u8) -> Vec<Fragment> {
    let ms: Vec<Mutation> = (0..n)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(vec![i, i]).unwrap())
                .cell(
                    vec![i],
                    1,
                    mutation::Cell::live(vec![7u8; 200], Timestamp::from_micros(3)),
                )
                .build()
                .unwrap()
        })
        .collect();
    canonical(&ms).0
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// After a crash, the directory holds exactly the committed generations,
/// each readable and verified, and a new writer gets a fresh generation.
fn assert_recovers(dir: &Path, committed: &[u64], data: &[Fragment]) {
    let d = SstableDirectory::open(dir).unwrap();
    assert_eq!(d.generations(), committed);
    for &g in committed {
        let t = Sstable::open(dir, g).unwrap();
        t.verify().unwrap();
        assert_eq!(drain(&mut t.scan()), data);
    }
    let names = files(dir);
    assert_eq!(names.len(), committed.len() * 7, "stray files: {names:?}");
    let next = write(dir, data, small_options(false));
    assert!(next.generation() > *committed.iter().max().unwrap_or(&0));
}

#[test]
fn injected_crash_after_each_commit_step() {
    let data = fragments(20);
    for step in CommitStep::ALL {
        let dir = tempfile::tempdir().unwrap();
        let first = write(dir.path(), &data, small_options(false));
        let mut options = small_options(false);
        options.crash_after = Some(step);
        let mut w = Writer::create(dir.path(), options).unwrap();
        let generation = w.generation();
        for f in &data {
            w.write(f).unwrap();
        }
        assert!(matches!(w.commit(), Err(Error::InjectedCrash(s)) if s == step));
        let committed = if step == CommitStep::Committed {
            vec![first.generation(), generation]
        } else {
            // Not committed: no reader may take it for an sstable.
            assert!(matches!(
                Sstable::open(dir.path(), generation),
                Err(Error::NotFound { .. })
            ));
            vec![first.generation()]
        };
        assert_recovers(dir.path(), &committed, &data);
    }
}

#[test]
fn writer_forgotten_mid_stream_leaves_only_removable_files() {
    let data = fragments(40);
    let dir = tempfile::tempdir().unwrap();
    let first = write(dir.path(), &data, small_options(false));
    let mut w = Writer::create(dir.path(), small_options(false)).unwrap();
    for f in &data[..data.len() / 2] {
        w.write(f).unwrap();
    }
    // A crash runs no destructor.
    std::mem::forget(w);
    assert!(files(dir.path()).len() > 7);
    assert_recovers(dir.path(), &[first.generation()], &data);
}

#[test]
fn abort_and_drop_remove_everything() {
    let data = fragments(5);
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), small_options(false)).unwrap();
    w.write(&data[0]).unwrap();
    w.abort().unwrap();
    assert!(files(dir.path()).is_empty());
    let mut w = Writer::create(dir.path(), small_options(false)).unwrap();
    w.write(&data[0]).unwrap();
    drop(w);
    assert!(files(dir.path()).is_empty());
}

const CHILD_ENV: &str = "SSTABLE_CRASH_CHILD_DIR";

/// Runs as the child process of `process_killed_mid_write`: writes half a
/// stream and aborts the process (no destructors, buffered data lost).
#[test]
fn child_writer_that_aborts() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let data = fragments(40);
    let mut w = Writer::create(&dir, small_options(false)).unwrap();
    for f in &data[..30] {
        w.write(f).unwrap();
    }
    std::process::abort();
}

#[test]
fn process_killed_mid_write() {
    let data = fragments(40);
    let dir = tempfile::tempdir().unwrap();
    let first = write(dir.path(), &data, small_options(false));
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_writer_that_aborts",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir.path())
        .status()
        .unwrap();
    assert!(!status.success(), "the child should have aborted");
    assert!(
        files(dir.path()).len() > 7,
        "the child left no files: {:?}",
        files(dir.path())
    );
    assert_recovers(dir.path(), &[first.generation()], &data);
}
