//! With 100 writer threads, real dirty memory never exceeds the budget by
//! more than one segment per memtable: sampled by every writer after every
//! write, and by the manager's own high-water mark.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use replica::{Database, DatabaseConfig, TableSchema};

/// logalloc's default segment size, which the database's pool uses.
const SEGMENT: usize = 128 << 10;

#[test]
fn real_dirty_memory_stays_within_the_budget_plus_a_segment_per_memtable() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.dirty_memory_budget = 8 << 20;
    let budget = config.dirty_memory_budget;
    let db = Arc::new(Database::open(config).unwrap());
    for t in ["a", "b"] {
        db.create_table(TableSchema::new(t).unwrap()).unwrap();
    }
    let peak_sample = Arc::new(AtomicUsize::new(0));
    let worst_excess = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..100u32)
        .map(|w| {
            let (db, peak, excess) = (
                Arc::clone(&db),
                Arc::clone(&peak_sample),
                Arc::clone(&worst_excess),
            );
            std::thread::spawn(move || {
                let table = if w % 2 == 0 { "a" } else { "b" };
                for i in 0..120u32 {
                    let m =
                        Mutation::builder(DecoratedKey::from_bytes(format!("w{w}-{i}")).unwrap())
                            .cell(
                                "r",
                                0,
                                Cell::live(vec![w as u8; 2 << 10], Timestamp::from_micros(1)),
                            )
                            .build()
                            .unwrap();
                    db.apply(table, &m).unwrap();
                    let metrics = db.metrics();
                    let real: usize = metrics.tables.iter().map(|t| t.real_dirty).sum();
                    let memtables: usize = metrics.tables.iter().map(|t| t.memtables).sum();
                    peak.fetch_max(real, Ordering::Relaxed);
                    let allowed = budget + SEGMENT * memtables;
                    if real > allowed {
                        excess.fetch_max((real - allowed) as u64, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let m = db.metrics();
    assert_eq!(
        worst_excess.load(Ordering::Relaxed),
        0,
        "a sample exceeded budget + a segment per memtable"
    );
    assert!(
        m.user.flushes_completed > 0,
        "the load forced flushes: {:?}",
        m.user
    );
    assert!(
        peak_sample.load(Ordering::Relaxed) > budget / 4,
        "the load reached the soft limit at least"
    );
    db.close().unwrap();
}
