//! A flush with a row cache commits in three steps: its sstable joins the
//! table while the memtable is still listed, the cache takes the
//! memtable's data, and only then the memtable leaves. Paused (with the
//! test hooks) between the first two steps, scans and single-partition
//! reads see every row exactly once (the duplicate in the memtable and the
//! sstable reconciled by the merge), tombstones still shadow, and nothing
//! is missing; after the flush the cache serves the same answers, and the
//! real dirty memory stayed accounted until the cache held the data.

mod pause;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation, PartitionRange,
    Timestamp, Tombstone,
};
use replica::{Database, DatabaseConfig, HookPoint, TableSchema};

fn key(i: u32) -> DecoratedKey {
    DecoratedKey::from_bytes(format!("pk{i:03}")).unwrap()
}

fn write(i: u32, ts: i64) -> Mutation {
    Mutation::builder(key(i))
        .cell(
            "a",
            0,
            Cell::live(format!("v{i}"), Timestamp::from_micros(ts)),
        )
        .cell(
            "b",
            0,
            Cell::live(format!("w{i}"), Timestamp::from_micros(ts)),
        )
        .build()
        .unwrap()
}

/// (partition, row) -> times seen, over a full scan.
fn rows_seen(db: &Database) -> BTreeMap<(String, String), u32> {
    let mut reader = db.scan("t", PartitionRange::full()).unwrap();
    let mut seen = BTreeMap::new();
    let mut pk = String::new();
    while let Some(f) = reader.next().unwrap() {
        match f {
            Fragment::PartitionStart { key, .. } => pk = key.to_string(),
            Fragment::ClusteringRow { key, .. } => {
                *seen.entry((pk.clone(), format!("{key:?}"))).or_default() += 1;
            }
            _ => {}
        }
    }
    seen
}

fn check(db: &Database, model: &BTreeMap<DecoratedKey, Mutation>, when: &str) {
    let seen = rows_seen(db);
    let rows: usize = model.values().map(|m| m.rows().len()).sum();
    assert_eq!(seen.len(), rows, "{when}: every live row");
    assert!(seen.values().all(|n| *n == 1), "{when}: a row seen twice");
    let mut reader = db.scan("t", PartitionRange::full()).unwrap();
    let got = mutation::to_mutations(&mut reader).unwrap();
    assert_eq!(got, model.values().cloned().collect::<Vec<_>>(), "{when}");
    for (k, m) in model {
        let one = db.get("t", k, ClusteringRange::full()).unwrap();
        assert_eq!(one.as_ref(), Some(m), "{when}: get {k}");
    }
}

#[test]
fn reads_paused_between_the_sstable_and_the_cache_update_see_each_row_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::open(DatabaseConfig::new(dir.path())).unwrap());
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    let mut model = BTreeMap::new();
    // Cached already: a first flush, then a full scan (the ring known).
    for i in 0..20 {
        let m = write(i, 1);
        db.apply("t", &m).unwrap();
        model.insert(m.key().clone(), m);
    }
    db.flush("t").unwrap();
    check(&db, &model, "before");
    // The flush to pause: newer values, a deleted partition, new keys.
    for i in 10..30 {
        let m = write(i, 2);
        db.apply("t", &m).unwrap();
        model.insert(m.key().clone(), m);
    }
    let deletion = Mutation::builder(key(5))
        .partition_tombstone(Tombstone::new(Timestamp::from_micros(3), 1))
        .build()
        .unwrap();
    db.apply("t", &deletion).unwrap();
    model.get_mut(&key(5)).unwrap().apply(deletion).unwrap();

    let pause = pause::at(&db, HookPoint::FlushBeforeCacheUpdate);
    let flusher = {
        let db = Arc::clone(&db);
        thread::spawn(move || db.flush("t"))
    };
    pause.wait_reached();
    let during = db.metrics();
    let t = &during.tables[0];
    assert_eq!(t.sstables, 2, "the new sstable is in the table's set");
    assert_eq!(t.memtables, 2, "the flushed memtable is still listed");
    assert!(t.real_dirty > 0, "its memory is still accounted as dirty");
    check(&db, &model, "during");
    pause.release();
    flusher.join().unwrap().unwrap();
    db.set_test_hook(None);

    let after = db.metrics();
    assert_eq!(after.tables[0].memtables, 1, "the memtable left");
    let misses_before = after.cache.misses;
    check(&db, &model, "after");
    let cache = db.metrics().cache;
    assert_eq!(
        cache.misses, misses_before,
        "after the update the cache answers alone: {cache:?}"
    );
    db.close().unwrap();
}
