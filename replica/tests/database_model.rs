//! Random writes and deletes over several tables, flushes forced at random
//! points, a close and reopen in the middle: the database reads back
//! exactly what a model (a `BTreeMap` of reconciled mutations) holds.

use std::collections::BTreeMap;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp, Tombstone,
    to_mutations,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use replica::{Database, DatabaseConfig, TableSchema};

const TABLES: [&str; 3] = ["alpha", "beta", "gamma"];

type Model = BTreeMap<&'static str, BTreeMap<DecoratedKey, Mutation>>;

fn open(dir: &std::path::Path) -> Database {
    let mut config = DatabaseConfig::new(dir.join("data"));
    config.flush_dirs = vec![dir.join("flush")];
    // Small enough that pressure flushes happen too.
    config.dirty_memory_budget = 2 << 20;
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

fn check(db: &Database, model: &Model) {
    for table in TABLES {
        let mut reader = db.scan(table, PartitionRange::full()).unwrap();
        let got = to_mutations(&mut reader).unwrap();
        let want: Vec<Mutation> = model[table].values().cloned().collect();
        assert_eq!(got, want, "table {table}");
        for (key, m) in model[table].iter().take(5) {
            let one = db.get(table, key, ClusteringRange::full()).unwrap();
            assert_eq!(one.as_ref(), Some(m), "get {key} of {table}");
        }
    }
}

#[test]
fn random_writes_flushes_and_a_reopen_read_back_equal_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SmallRng::seed_from_u64(13);
    let mut model: Model = TABLES.iter().map(|t| (*t, BTreeMap::new())).collect();
    let mut db = open(dir.path());
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
            2 => check(&db, &model),
            3 => db.compact(table).unwrap(),
            _ => {}
        }
        if ts == OPS / 2 {
            check(&db, &model);
            db.close().unwrap();
            drop(db);
            db = open(dir.path());
            let names: Vec<String> = db.tables().iter().map(|s| s.name().to_owned()).collect();
            assert_eq!(names, TABLES, "the tables survive the reopen");
            check(&db, &model);
        }
    }
    check(&db, &model);
    let m = db.metrics();
    assert!(
        m.tables.iter().all(|t| t.sstables > 0),
        "every table was flushed at least once: {:?}",
        m.tables
    );
    db.close().unwrap();
    drop(db);
    let db = open(dir.path());
    check(&db, &model);
    db.close().unwrap();
}
