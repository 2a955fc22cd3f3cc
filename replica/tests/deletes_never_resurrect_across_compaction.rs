//! With gc_grace zero, a tombstone is purged only when nothing outside the
//! job can hold data it shadows: an older sstable outside the job keeps it
//! alive, and so does a memtable holding an older write. A deleted row
//! never comes back, across compactions and a reopen; nor does a value an
//! expired TTL cell (which first becomes a tombstone) overwrote. With the
//! row cache on, reads answer what the sstables hold after each purge.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp, Tombstone, Ttl};
use replica::compaction::{ManualClock, SizeTieredOptions, StrategyConfig};
use replica::{CommitLogMode, Database, DatabaseConfig, TableSchema};

const NOW: u32 = 1_000_000;

fn config(dir: &std::path::Path) -> DatabaseConfig {
    let mut config = DatabaseConfig::new(dir);
    config.commitlog = CommitLogMode::Off;
    let mut stcs = SizeTieredOptions::default();
    stcs.min_sstable_size = 1;
    config.compaction.strategy = StrategyConfig::SizeTiered(stcs);
    config.compaction.gc_grace = Duration::ZERO;
    config.compaction.clock = Arc::new(ManualClock::new(NOW));
    // The row cache is on (the default): every read below fills it, and a
    // purge must reach it too (the job's keys are invalidated after its
    // swap), or `get` would keep answering with the purged tombstone.
    config
}

fn key(name: &str) -> DecoratedKey {
    DecoratedKey::from_bytes(name.to_owned()).unwrap()
}

fn cell(k: &str, ck: &str, value: &[u8], ts: i64) -> Mutation {
    Mutation::builder(key(k))
        .cell(
            ck.to_owned(),
            0,
            Cell::live(value.to_vec(), Timestamp::from_micros(ts)),
        )
        .build()
        .unwrap()
}

fn delete_row(k: &str, ck: &str, ts: i64) -> Mutation {
    Mutation::builder(key(k))
        .row_tombstone(
            ck.to_owned(),
            Tombstone::new(Timestamp::from_micros(ts), NOW - 10),
        )
        .build()
        .unwrap()
}

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

/// The live value of row `ck` of `k`, if any.
fn live(db: &Database, k: &str, ck: &str) -> Option<Vec<u8>> {
    let m = db.get("t", &key(k), ClusteringRange::full()).unwrap()?;
    let row = m.row(&mutation::ClusteringKey::new(ck.to_owned()).unwrap())?;
    row.cells.get(&0).and_then(|c| match c {
        Cell::Live { value, .. } => Some(value.to_vec()),
        _ => None,
    })
}

#[test]
fn a_tombstone_whose_data_is_in_an_sstable_outside_the_job_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    // A big sstable holding the row to delete: a tier of its own.
    db.apply("t", &cell("victim", "r", b"old", 1)).unwrap();
    for i in 0..64 {
        db.apply("t", &cell("bulk", &format!("b{i:03}"), &[b'x'; 4096], 1))
            .unwrap();
    }
    db.flush("t").unwrap();
    // Four small sstables, the last one with the delete: they compact
    // together, without the big one.
    for i in 0..3 {
        db.apply("t", &cell(&format!("small{i}"), "r", b"s", 2))
            .unwrap();
        db.flush("t").unwrap();
    }
    db.apply("t", &delete_row("victim", "r", 5)).unwrap();
    db.apply("t", &cell("small3", "r", b"s", 2)).unwrap();
    db.flush("t").unwrap();
    settle(&db);
    let m = db.metrics();
    assert_eq!(
        m.sstables(),
        2,
        "the small tier was compacted alone: {:?}",
        m.tables
    );
    assert!(m.tables[0].compaction.jobs_completed >= 1);
    assert_eq!(live(&db, "victim", "r"), None, "deleted row came back");
    db.close().unwrap();
    drop(db);
    let db = Database::open(config(dir.path())).unwrap();
    assert_eq!(
        live(&db, "victim", "r"),
        None,
        "deleted row came back at reopen"
    );
    // A major compaction holds both: the tombstone and its data go.
    db.compact("t").unwrap();
    assert_eq!(live(&db, "victim", "r"), None);
    assert_eq!(
        db.get("t", &key("victim"), ClusteringRange::full())
            .unwrap(),
        None
    );
    assert_eq!(live(&db, "small1", "r"), Some(b"s".to_vec()));
    db.close().unwrap();
}

#[test]
fn a_tombstone_is_kept_while_a_memtable_holds_older_data_it_shadows() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    db.apply("t", &delete_row("victim", "r", 10)).unwrap();
    db.flush("t").unwrap();
    db.apply("t", &cell("other", "r", b"o", 20)).unwrap();
    db.flush("t").unwrap();
    // A late write older than the delete, still in the memtable.
    db.apply("t", &cell("victim", "r", b"late", 3)).unwrap();
    db.compact("t").unwrap();
    assert_eq!(db.metrics().sstables(), 1);
    db.flush("t").unwrap();
    assert_eq!(
        live(&db, "victim", "r"),
        None,
        "the late, older write is shadowed"
    );
    db.compact("t").unwrap();
    assert_eq!(live(&db, "victim", "r"), None, "deleted row came back");
    assert_eq!(live(&db, "other", "r"), Some(b"o".to_vec()));
    db.close().unwrap();
    drop(db);
    let db = Database::open(config(dir.path())).unwrap();
    assert_eq!(
        live(&db, "victim", "r"),
        None,
        "deleted row came back at reopen"
    );
    db.close().unwrap();
}

/// As `live`, but a cell that has expired at `NOW` is not live.
fn live_at_now(db: &Database, k: &str, ck: &str) -> Option<Vec<u8>> {
    let m = db.get("t", &key(k), ClusteringRange::full()).unwrap()?;
    let row = m.row(&mutation::ClusteringKey::new(ck.to_owned()).unwrap())?;
    row.cells.get(&0).and_then(|c| match c {
        Cell::Live { value, ttl, .. } if ttl.is_none_or(|t| t.expiry() > NOW) => {
            Some(value.to_vec())
        }
        _ => None,
    })
}

/// An expiring overwrite, written at `NOW - 20` with a TTL of 10: expired.
fn expired_overwrite(k: &str, ck: &str, ts: i64) -> Mutation {
    Mutation::builder(key(k))
        .cell(
            ck.to_owned(),
            0,
            Cell::expiring(
                b"e".to_vec(),
                Timestamp::from_micros(ts),
                Ttl::new(10, NOW - 10).unwrap(),
            ),
        )
        .build()
        .unwrap()
}

#[test]
fn an_expired_cell_whose_older_value_is_outside_the_job_never_brings_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    // A big sstable holding the older value: a tier of its own.
    db.apply("t", &cell("victim", "r", b"old", 1)).unwrap();
    for i in 0..64 {
        db.apply("t", &cell("bulk", &format!("b{i:03}"), &[b'x'; 4096], 1))
            .unwrap();
    }
    db.flush("t").unwrap();
    // Four small sstables, the last one with the expired overwrite: they
    // compact together, without the big one, past gc_grace (zero).
    // Each holds two partitions, as the last one does (the expiring
    // overwrite and a small write), so the four are of a size.
    for i in 0..3 {
        db.apply("t", &cell(&format!("small{i}"), "r", b"s", 2))
            .unwrap();
        db.apply("t", &cell(&format!("pad{i}"), "r", b"padding-", 2))
            .unwrap();
        db.flush("t").unwrap();
    }
    db.apply("t", &expired_overwrite("victim", "r", 5)).unwrap();
    db.apply("t", &cell("small3", "r", b"s", 2)).unwrap();
    db.flush("t").unwrap();
    settle(&db);
    let m = db.metrics();
    assert_eq!(
        m.sstables(),
        2,
        "the small tier was compacted alone: {:?}",
        m.tables
    );
    assert_eq!(
        live_at_now(&db, "victim", "r"),
        None,
        "the older value came back"
    );
    db.close().unwrap();
    drop(db);
    let db = Database::open(config(dir.path())).unwrap();
    assert_eq!(
        live_at_now(&db, "victim", "r"),
        None,
        "the older value came back at reopen"
    );
    // A major compaction holds both: the expired cell and the older value go.
    db.compact("t").unwrap();
    assert_eq!(live_at_now(&db, "victim", "r"), None);
    assert_eq!(
        db.get("t", &key("victim"), ClusteringRange::full())
            .unwrap(),
        None
    );
    db.close().unwrap();
}
