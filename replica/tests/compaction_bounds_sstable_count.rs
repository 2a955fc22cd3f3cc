//! Under a flush-heavy load, compaction keeps a table's sstable count
//! bounded (size-tiered and incremental), while with `none` every flush
//! stays an sstable; every write stays readable either way.

use std::time::{Duration, Instant};

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::compaction::{IncrementalOptions, SizeTieredOptions, StrategyConfig};
use replica::{CacheSize, CommitLogMode, Database, DatabaseConfig, TableSchema};

const FLUSHES: u64 = 40;
const ROWS_PER_FLUSH: u64 = 20;

fn tiering() -> SizeTieredOptions {
    let mut o = SizeTieredOptions::default();
    // Test-sized sstables are far below the 50 MiB default, under which
    // everything is one bucket; keep real tiers.
    o.min_sstable_size = 1;
    o
}

fn strategies() -> Vec<(&'static str, StrategyConfig)> {
    let mut ics = IncrementalOptions::default();
    ics.fragment_size = 64 << 10;
    ics.tiering = tiering();
    vec![
        ("stcs", StrategyConfig::SizeTiered(tiering())),
        ("ics", StrategyConfig::IncrementalWith(ics)),
        ("none", StrategyConfig::None),
    ]
}

fn write(i: u64) -> Mutation {
    // Keys repeat across flushes: overwrites, as a real load has.
    Mutation::builder(DecoratedKey::from_bytes(format!("k{:04}", i % 300)).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![b'v'; 200], Timestamp::from_micros(i as i64 + 1)),
        )
        .build()
        .unwrap()
}

/// Waits (bounded) until the manager has no job queued or running.
fn settle(db: &Database) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let m = db.metrics().compaction;
        if m.pending_jobs == 0 && m.running_jobs == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "compaction never settled: {m:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn compaction_bounds_the_sstable_count_and_none_does_not() {
    for (name, strategy) in strategies() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = DatabaseConfig::new(dir.path());
        config.commitlog = CommitLogMode::Off;
        config.compaction.strategy = strategy;
        // Reads must reach the sstables to count how many each consults:
        // with a cache (a new table's knows every partition) none would.
        config.cache_size = CacheSize::Off;
        let db = Database::open(config).unwrap();
        db.create_table(TableSchema::new("t").unwrap()).unwrap();
        let mut peak = 0;
        for f in 0..FLUSHES {
            for r in 0..ROWS_PER_FLUSH {
                db.apply("t", &write(f * ROWS_PER_FLUSH + r)).unwrap();
            }
            db.flush("t").unwrap();
            peak = peak.max(db.metrics().sstables());
        }
        settle(&db);
        let m = db.metrics();
        let count = m.sstables();
        if name == "none" {
            assert_eq!(count, FLUSHES as usize, "{name}: every flush stays");
            assert_eq!(m.compaction.jobs_completed, 0);
        } else {
            assert!(
                count <= 12,
                "{name}: {count} sstables after {FLUSHES} flushes"
            );
            assert!(peak < FLUSHES as usize, "{name}: peak {peak}");
            assert!(
                m.compaction.jobs_completed > 0,
                "{name}: {:?}",
                m.compaction
            );
            assert!(m.compaction.bytes_written > 0);
            let wa = m.write_amplification().unwrap();
            assert!(wa > 0.0, "{name}: write amplification {wa}");
        }
        // Every key reads its last value.
        let last = FLUSHES * ROWS_PER_FLUSH;
        for i in last - 300..last {
            let got = db
                .get("t", write(i).key(), ClusteringRange::full())
                .unwrap()
                .unwrap_or_else(|| panic!("{name}: key of write {i} lost"));
            assert_eq!(got, write(i), "{name}: write {i}");
        }
        let t = &db.metrics().tables[0];
        assert!(t.compaction.reads >= 300);
        if name != "none" {
            assert!(
                t.compaction.sstables_per_read() <= 12.0,
                "{name}: {}",
                t.compaction.sstables_per_read()
            );
        }
        db.close().unwrap();
    }
}
