//! A database whose memory pool is larger than 8 GiB (more than 2^16
//! segments of 128 KiB, so logalloc keeps each object's size in a header
//! in front of it, issue 39) opens without taking the pool's memory when
//! it does not prefault, and writes, flushes, caches, reads and compacts
//! as a smaller one does: empty values and rows of every size round-trip,
//! and the process's resident memory stays far below the pool.
//!
//! On a machine (or cgroup) with less memory than such a pool, the
//! database refuses the configuration at `validate`, naming both figures;
//! the test checks that instead.

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::{CacheSize, Database, DatabaseConfig, Error, TableSchema};

const GIB: usize = 1 << 30;
/// Partitions written; each has three rows.
const PARTITIONS: usize = 2000;
/// The most resident memory the database may add while open.
const RESIDENT: usize = 512 << 20;

/// Resident memory of this process in bytes (Linux).
fn resident() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux has /proc");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS");
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<usize>()
        .unwrap()
        << 10
}

/// Partition `i`: an empty value, a small one and one of up to 12 KiB.
fn partition(i: usize) -> Mutation {
    let ts = Timestamp::from_micros(1);
    Mutation::builder(DecoratedKey::from_bytes(format!("pk{i:05}")).unwrap())
        .cell("empty", 0, Cell::live(Vec::<u8>::new(), ts))
        .cell("small", 0, Cell::live(vec![i as u8; i % 100], ts))
        .cell(
            "large",
            1,
            Cell::live(vec![!(i as u8); i * 7 % (12 << 10)], ts),
        )
        .build()
        .unwrap()
}

fn read_back(db: &Database) {
    for i in 0..PARTITIONS {
        let key = DecoratedKey::from_bytes(format!("pk{i:05}")).unwrap();
        let got = db.get("t", &key, ClusteringRange::full()).unwrap();
        assert_eq!(got, Some(partition(i)), "partition {i}");
    }
}

#[test]
fn a_pool_beyond_8_gib_opens_lazily_and_works() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.dirty_memory_budget = 64 << 20;
    config.cache_size = CacheSize::Bytes(8 * GIB);
    config.prefault_memory = false;
    let (pool, _) = config.memory_pool();
    assert!(pool > 8 * GIB, "{pool}");
    if let Err(e) = config.validate() {
        // A machine smaller than the pool: refused, naming both figures.
        let message = e.to_string();
        assert!(
            matches!(
                e,
                Error::InvalidOption {
                    name: "dirty_memory_budget",
                    ..
                }
            ) && message.contains(&format!("this one is {} MiB", pool >> 20)),
            "{message}"
        );
        println!("refused on this machine: {message}");
        return;
    }
    let before = resident();
    let db = Database::open(config).unwrap();
    assert_eq!(db.metrics().pool_limit, pool);
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    for i in 0..PARTITIONS {
        db.apply("t", &partition(i)).unwrap();
        if i == PARTITIONS / 2 {
            db.flush("t").unwrap();
        }
    }
    // From the memtable and the first sstable.
    read_back(&db);
    db.flush("t").unwrap();
    // From the cache (fed by the flushes and the reads) and the sstables.
    read_back(&db);
    db.compact("t").unwrap();
    read_back(&db);
    let m = db.metrics();
    assert!(
        m.pool_system_bytes <= RESIDENT,
        "the pool took {} bytes",
        m.pool_system_bytes
    );
    let grown = resident().saturating_sub(before);
    assert!(
        grown <= RESIDENT,
        "resident memory grew by {grown} bytes for a pool of {pool}"
    );
    println!(
        "pool of {} MiB: took {} MiB from the system, resident memory +{} MiB",
        pool >> 20,
        m.pool_system_bytes >> 20,
        grown >> 20
    );
    db.close().unwrap();
}
