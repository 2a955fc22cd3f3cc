//! The locks one uncontended write takes, counted by the sync facade's
//! lock census (feature `lock-census`) with the source line of each:
//! `Database::apply` by name and through a `TableHandle`, with the commit
//! log off, periodic and in batch mode (issue 33's target: at most 6, none
//! of them database-wide but the one log's append).
//!
//! In batch mode with no window a writer that finds no commit cycle
//! running runs one itself (it writes the pending entries and fdatasyncs
//! them for every writer waiting, as the group commit's leader), and the
//! cycle's locks (the segment's writer, its staging buffer, the cycle's
//! slot) are counted apart: they are the group's commit, not this write's.
//!
//! The census lives in this unpublished crate's tests so that the feature
//! reaches no benchmark of the crates it counts. Run with `--nocapture` to
//! see each acquisition's line.
#![cfg(not(loom))]

mod common;

use std::time::Duration;

use replica::{CommitLogMode, Database, DatabaseConfig, TableSchema};
use sync::census::{self, Census, Scope};

/// The locks of a commit cycle the writer ran as the group's leader.
fn commit_cycle(census: &Census) -> usize {
    census.count_in("commitlog/src/log/cycle.rs") + census.count_in("commitlog/src/storage.rs")
}

/// The lock of the test-hook slot: there only when the replica's `testing`
/// feature is on, as it is when the whole workspace's tests are built
/// together (feature unification); a normal build has no such lock.
fn test_hooks(census: &Census) -> usize {
    census.count_in("replica/src/hooks.rs")
}

/// The database-wide locks of the write itself: the table index (by name)
/// and the commit log's append. Everything else a write locks is its
/// table's, its memtable's or its region's.
fn database_wide(census: &Census) -> usize {
    census.count_in("replica/src/database/index.rs") + census.count_in("commitlog/src")
        - commit_cycle(census)
}

/// The census of the 100th write (the first ones warm the memtable up).
fn census_of_a_write(mode: CommitLogMode, by_handle: bool) -> Census {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.commitlog = mode;
    let db = Database::open(config).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    let handle = db.table("t").unwrap();
    let write = |i: u64| {
        if by_handle {
            handle.apply(&common::row(i, 64)).unwrap();
        } else {
            db.apply("t", &common::row(i, 64)).unwrap();
        }
    };
    for i in 0..99 {
        write(i);
    }
    let ((), census) = census::record(Scope::ThisThread, || write(99));
    drop(handle);
    db.close().unwrap();
    census
}

#[test]
fn one_write_takes_at_most_six_locks() {
    let modes = [
        ("off", CommitLogMode::Off),
        ("periodic", CommitLogMode::Periodic(Duration::from_secs(10))),
        ("batch", CommitLogMode::Batch(Duration::ZERO)),
    ];
    for (name, mode) in modes {
        for by_handle in [false, true] {
            let census = census_of_a_write(mode, by_handle);
            let path = if by_handle { "handle" } else { "name" };
            let wide = database_wide(&census);
            let cycle = commit_cycle(&census);
            let hooks = test_hooks(&census);
            let own = census.len() - cycle - hooks;
            println!(
                "log {name}, by {path}: {own} locks of the write ({wide} database-wide), \
                 {cycle} of the commit cycle it led, {hooks} of test hooks\n{census}\n"
            );
            assert!(own <= 6, "log {name}, by {path}:\n{census}");
            if name != "batch" {
                assert_eq!(cycle, 0, "log {name}: no writer runs a cycle\n{census}");
            }
            // By name, the index read; with a log, its append: nothing else
            // database-wide.
            let allowed = usize::from(!by_handle) + usize::from(name != "off");
            assert!(wide <= allowed, "log {name}, by {path}:\n{census}");
        }
    }
}
