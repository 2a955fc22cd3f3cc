//! ScyllaDB #1942 at replica level: a cache update that falls behind the
//! flushes must not let memory overflow. A flush is held (with the test
//! hooks) after its sstable joined the table and before the row cache took
//! its memtable, while a writer keeps writing more than the budget: the
//! held memtable's memory stays accounted as real dirty memory, so every
//! sample of real dirty memory stays within the budget (plus a segment per
//! memtable, the manager's own bound) and the pool within its limit; once
//! the update goes on, every write completes and reads back.

mod pause;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp};
use replica::{CommitLogMode, Database, DatabaseConfig, HookPoint, TableSchema};

/// logalloc's default segment size, which the database's pool uses.
const SEGMENT: usize = 128 << 10;
const WRITES: u32 = 400;

fn write(i: u32) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("pk{i:04}")).unwrap())
        .cell(
            "r",
            0,
            Cell::live(vec![i as u8; 8 << 10], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

#[test]
fn a_held_cache_update_keeps_its_memtable_accounted_and_memory_in_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.dirty_memory_budget = 2 << 20;
    config.commitlog = CommitLogMode::Off;
    config.write_timeout = Duration::from_secs(60);
    let budget = config.dirty_memory_budget;
    let db = Arc::new(Database::open(config).unwrap());
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    // The ring known: every flush's partitions enter the cache.
    let mut scan = db.scan("t", PartitionRange::full()).unwrap();
    assert!(mutation::to_mutations(&mut scan).unwrap().is_empty());
    let pause = pause::at(&db, HookPoint::FlushBeforeCacheUpdate);
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, done) = (Arc::clone(&db), Arc::clone(&done));
        thread::spawn(move || {
            for i in 0..WRITES {
                db.apply("t", &write(i)).unwrap();
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    // A flush forced by the writes' pressure reaches the hook and holds.
    pause.wait_reached();
    let limit = db.metrics().pool_limit;
    let mut held_accounted = false;
    // Until the writer is done, or waits for memory the held update keeps.
    loop {
        let m = db.metrics();
        let t = &m.tables[0];
        assert!(
            t.real_dirty <= budget + SEGMENT * t.memtables,
            "real dirty {} over the budget {budget} + a segment per memtable ({})",
            t.real_dirty,
            t.memtables
        );
        assert!(m.pool_used <= limit);
        // The held memtable is still listed, and its memory counted.
        held_accounted |= t.memtables >= 2 && t.real_dirty > 0;
        if done.load(Ordering::SeqCst) || m.user.writers_waiting > 0 {
            break;
        }
        thread::yield_now();
    }
    assert!(held_accounted, "the held memtable was accounted");
    pause.release();
    writer.join().unwrap();
    db.set_test_hook(None);
    db.flush("t").unwrap();
    let m = db.metrics();
    assert!(
        m.user.peak_real_dirty <= budget + 4 * SEGMENT,
        "peak real dirty {} against the budget {budget}",
        m.user.peak_real_dirty
    );
    assert_eq!(m.tables[0].memtables, 1);
    let cache = m.tables[0].cache.clone().unwrap();
    assert_eq!(cache.update_failures, 0, "{cache:?}");
    assert!(
        cache.adopted_partitions > 0,
        "the updates went by region merge: {cache:?}"
    );
    for i in (0..WRITES).step_by(13) {
        let want = write(i);
        let got = db.get("t", want.key(), ClusteringRange::full()).unwrap();
        assert_eq!(got.as_ref(), Some(&want), "partition {i}");
    }
    db.close().unwrap();
}
