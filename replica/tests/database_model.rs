//! Random writes and deletes over several tables, flushes forced at random
//! points, a close and reopen in the middle: the database reads back
//! exactly what a model (a `BTreeMap` of reconciled mutations) holds, with
//! the row cache on (reads through it, flushes updating it, evictions
//! forced at random points) and off.

use std::collections::BTreeMap;

use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Mutation, PartitionRange, RingPosition,
    Timestamp, Tombstone, to_mutations,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use replica::{CacheSize, Database, DatabaseConfig, TableSchema};

const TABLES: [&str; 3] = ["alpha", "beta", "gamma"];

type Model = BTreeMap<&'static str, BTreeMap<DecoratedKey, Mutation>>;

fn open(dir: &std::path::Path, cache: CacheSize) -> Database {
    let mut config = DatabaseConfig::new(dir.join("data"));
    config.flush_dirs = vec![dir.join("flush")];
    // Small enough that pressure flushes happen too.
    config.dirty_memory_budget = 2 << 20;
    config.cache_size = cache;
    // Compaction runs (the default strategy); the deletion times here are
    // 1 s, so a clock at 1 s keeps every tombstone within gc_grace and
    // reads equal the model's mutations, tombstones included.
    config.compaction.clock = std::sync::Arc::new(replica::compaction::ManualClock::new(1));
    Database::open(config).unwrap()
}

fn random_mutation(rng: &mut SmallRng, ts: i64) -> Mutation {
    let key = DecoratedKey::from_bytes(format!("pk{}", rng.gen_range(0..40))).unwrap();
    let t = Timestamp::from_micros(ts);
    let mut b = Mutation::builder(key);
    match rng.gen_range(0..20) {
        0 => b = b.partition_tombstone(Tombstone::new(t, 1)),
        1..=3 => {
            b = b.row_tombstone(
                format!("ck{:03}", rng.gen_range(0..30)),
                Tombstone::new(t, 1),
            )
        }
        4 => {
            let lo = rng.gen_range(0..30);
            let hi = lo + rng.gen_range(0..5);
            b = b.range_tombstone_bounds(
                mutation::Bound::Included(format!("ck{lo:03}")),
                mutation::Bound::Included(format!("ck{hi:03}")),
                Tombstone::new(t, 1),
            );
        }
        _ => {
            for _ in 0..rng.gen_range(1..4) {
                let value: Vec<u8> = (0..rng.gen_range(0..300)).map(|_| rng.r#gen()).collect();
                b = b.cell(
                    format!("ck{:03}", rng.gen_range(0..30)),
                    rng.gen_range(0..3),
                    Cell::live(value, t),
                );
            }
        }
    }
    b.build().unwrap()
}

fn key(i: u32) -> DecoratedKey {
    DecoratedKey::from_bytes(format!("pk{i}")).unwrap()
}

/// Every table's full scan, a random range scan, single-partition reads
/// (present and absent keys) and a sliced read equal the model.
fn check(db: &Database, model: &Model, rng: &mut SmallRng) {
    for table in TABLES {
        let mut reader = db.scan(table, PartitionRange::full()).unwrap();
        let got = to_mutations(&mut reader).unwrap();
        let want: Vec<Mutation> = model[table].values().cloned().collect();
        assert_eq!(got, want, "table {table}");
        // A range of the ring between two keys' positions.
        let (a, b) = (key(rng.gen_range(0..40)), key(rng.gen_range(0..40)));
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let range = PartitionRange::new(
            mutation::Bound::Included(RingPosition::Key(lo.clone())),
            mutation::Bound::Included(RingPosition::Key(hi.clone())),
        )
        .unwrap();
        let got = to_mutations(&mut db.scan(table, range).unwrap()).unwrap();
        let want: Vec<Mutation> = model[table]
            .range(lo.clone()..=hi.clone())
            .map(|(_, m)| m.clone())
            .collect();
        assert_eq!(got, want, "scan [{lo}, {hi}] of {table}");
        for _ in 0..8 {
            let k = key(rng.gen_range(0..45));
            let one = db.get(table, &k, ClusteringRange::full()).unwrap();
            assert_eq!(one.as_ref(), model[table].get(&k), "get {k} of {table}");
        }
        // A slice: the partition tombstone and the rows inside it.
        let k = key(rng.gen_range(0..40));
        let lo = rng.gen_range(0..30);
        let hi = lo + rng.gen_range(0..10);
        let slice = ClusteringRange::new(
            mutation::Bound::Included(ClusteringKey::new(format!("ck{lo:03}")).unwrap()),
            mutation::Bound::Excluded(ClusteringKey::new(format!("ck{hi:03}")).unwrap()),
        )
        .unwrap();
        let got = db.get(table, &k, slice.clone()).unwrap();
        let want = model[table].get(&k);
        let rows = |m: Option<&Mutation>| {
            m.map(|m| {
                m.rows()
                    .iter()
                    .filter(|(ck, _)| slice.contains(ck))
                    .map(|(ck, r)| (ck.clone(), r.clone()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
        };
        assert_eq!(rows(got.as_ref()), rows(want), "slice of {k} of {table}");
        assert_eq!(
            got.as_ref().and_then(Mutation::partition_tombstone),
            want.and_then(Mutation::partition_tombstone),
            "partition tombstone of {k} of {table}"
        );
    }
}

#[test]
fn random_writes_flushes_and_a_reopen_read_back_equal_to_the_model_with_the_cache() {
    run(CacheSize::Bytes(8 << 20), true);
}

#[test]
fn random_writes_flushes_and_a_reopen_read_back_equal_to_the_model_without_the_cache() {
    run(CacheSize::Off, false);
}

fn run(cache: CacheSize, cached: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SmallRng::seed_from_u64(13);
    let mut model: Model = TABLES.iter().map(|t| (*t, BTreeMap::new())).collect();
    let mut db = open(dir.path(), cache);
    for t in TABLES {
        db.create_table(TableSchema::new(t).unwrap()).unwrap();
    }
    const OPS: i64 = 3000;
    for ts in 1..=OPS {
        let table = TABLES[rng.gen_range(0..TABLES.len())];
        let m = random_mutation(&mut rng, ts);
        db.apply(table, &m).unwrap();
        match model.get_mut(table).unwrap().entry(m.key().clone()) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(m);
            }
            std::collections::btree_map::Entry::Occupied(mut o) => o.get_mut().apply(m).unwrap(),
        }
        match rng.gen_range(0..400) {
            0 => db.flush(table).unwrap(),
            1 => db.flush_all().unwrap(),
            2 => check(&db, &model, &mut rng),
            3 => db.compact(table).unwrap(),
            // Forced evictions (0 without a cache).
            4..=5 => {
                let n = rng.gen_range(1..20);
                let evicted = db.evict_cache(table, n).unwrap();
                assert!(evicted <= n);
            }
            _ => {}
        }
        if ts == OPS / 2 {
            check(&db, &model, &mut rng);
            db.close().unwrap();
            drop(db);
            db = open(dir.path(), cache);
            let names: Vec<String> = db.tables().iter().map(|s| s.name().to_owned()).collect();
            assert_eq!(names, TABLES, "the tables survive the reopen");
            check(&db, &model, &mut rng);
        }
    }
    check(&db, &model, &mut rng);
    let m = db.metrics();
    assert!(
        m.tables.iter().all(|t| t.sstables > 0),
        "every table was flushed at least once: {:?}",
        m.tables
    );
    if cached {
        assert!(
            m.tables.iter().all(|t| t.cache.is_some()),
            "every table has a cache"
        );
        assert!(
            m.cache.hits > 0 && m.cache.misses > 0 && m.cache.populations > 0,
            "reads went through the cache: {:?}",
            m.cache
        );
        assert!(
            m.cache.updated_partitions > 0,
            "flushes updated the cache: {:?}",
            m.cache
        );
        assert_eq!(m.cache.update_failures, 0);
        assert!(
            m.cache.evictions > 0,
            "evictions were forced: {:?}",
            m.cache
        );
    } else {
        assert!(m.tables.iter().all(|t| t.cache.is_none()));
        assert_eq!(m.cache, replica::CacheMetrics::default());
    }
    db.close().unwrap();
    drop(db);
    let db = open(dir.path(), cache);
    check(&db, &model, &mut rng);
    db.close().unwrap();
}
