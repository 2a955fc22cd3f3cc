//! The model test under every compaction strategy, with gc_grace zero and
//! a controllable clock: random writes, overwrites, every kind of delete
//! and TTLs, random flushes, major compactions and clock steps, a close
//! and reopen; after each step checked, the live data the database reads
//! (cells not shadowed by a tombstone, not expired) equals the model's.
//! Tombstones themselves may be purged, so they are not compared; a
//! deleted row that came back would be live data the model lacks.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Position, Timestamp, Tombstone,
    Ttl, to_mutations,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use replica::compaction::{IncrementalOptions, ManualClock, SizeTieredOptions, StrategyConfig};
use replica::{CommitLogMode, Database, DatabaseConfig, TableSchema};

const TABLES: [&str; 2] = ["alpha", "beta"];
const START: u32 = 1_000_000;

type Model = BTreeMap<&'static str, BTreeMap<DecoratedKey, Mutation>>;
/// (partition, clustering key, column) -> value.
type Live = BTreeMap<(DecoratedKey, Vec<u8>, u32), Vec<u8>>;

fn tiering() -> SizeTieredOptions {
    let mut o = SizeTieredOptions::default();
    o.min_sstable_size = 1;
    o
}

fn strategies() -> Vec<(&'static str, StrategyConfig)> {
    let mut ics = IncrementalOptions::default();
    ics.fragment_size = 16 << 10;
    ics.tiering = tiering();
    vec![
        ("stcs", StrategyConfig::SizeTiered(tiering())),
        ("ics", StrategyConfig::IncrementalWith(ics)),
        ("none", StrategyConfig::None),
    ]
}

fn open(dir: &std::path::Path, strategy: &StrategyConfig, clock: &Arc<ManualClock>) -> Database {
    let mut config = DatabaseConfig::new(dir.join("data"));
    config.flush_dirs = vec![dir.join("flush")];
    config.commitlog = CommitLogMode::Off;
    config.dirty_memory_budget = 2 << 20;
    config.compaction.strategy = strategy.clone();
    config.compaction.gc_grace = Duration::ZERO;
    config.compaction.clock = Arc::clone(clock) as Arc<dyn replica::compaction::Clock>;
    Database::open(config).unwrap()
}

fn random_mutation(rng: &mut SmallRng, ts: i64, now: u32) -> Mutation {
    let key = DecoratedKey::from_bytes(format!("pk{}", rng.gen_range(0..25))).unwrap();
    let t = Timestamp::from_micros(ts);
    let ck = |rng: &mut SmallRng| format!("ck{:03}", rng.gen_range(0..20));
    let mut b = Mutation::builder(key);
    match rng.gen_range(0..20) {
        0 => b = b.partition_tombstone(Tombstone::new(t, now)),
        1..=3 => b = b.row_tombstone(ck(rng), Tombstone::new(t, now)),
        4 => {
            let lo = rng.gen_range(0..20);
            let hi = lo + rng.gen_range(0..4);
            b = b.range_tombstone_bounds(
                mutation::Bound::Included(format!("ck{lo:03}")),
                mutation::Bound::Included(format!("ck{hi:03}")),
                Tombstone::new(t, now),
            );
        }
        5 => b = b.cell(ck(rng), rng.gen_range(0..3), Cell::tombstone(t, now)),
        6..=8 => {
            // Expires between clock steps (the clock moves by 10 s).
            let ttl = 5 + 10 * rng.gen_range(0..4u32);
            let value: Vec<u8> = (0..rng.gen_range(1..100)).map(|_| rng.r#gen()).collect();
            b = b.cell(
                ck(rng),
                rng.gen_range(0..3),
                Cell::expiring(value, t, Ttl::new(ttl, now + ttl).unwrap()),
            );
        }
        _ => {
            for _ in 0..rng.gen_range(1..4) {
                let value: Vec<u8> = (0..rng.gen_range(0..300)).map(|_| rng.r#gen()).collect();
                b = b.cell(ck(rng), rng.gen_range(0..3), Cell::live(value, t));
            }
        }
    }
    b.build().unwrap()
}

fn live_of<'a>(mutations: impl IntoIterator<Item = &'a Mutation>, now: u32) -> Live {
    let mut live = Live::new();
    for m in mutations {
        for (ck, row) in m.rows() {
            let range = m.range_tombstones().tombstone_at(&Position::At(ck.clone()));
            let over = m.partition_tombstone().max(range).max(row.tombstone);
            for (&column, cell) in &row.cells {
                let Cell::Live {
                    value,
                    timestamp,
                    ttl,
                } = cell
                else {
                    continue;
                };
                if over.is_some_and(|t| t.shadows(*timestamp))
                    || ttl.is_some_and(|t| t.expiry() <= now)
                {
                    continue;
                }
                live.insert(
                    (m.key().clone(), ck.as_bytes().to_vec(), column),
                    value.to_vec(),
                );
            }
        }
    }
    live
}

fn check(db: &Database, model: &Model, now: u32, what: &str) {
    for table in TABLES {
        let mut reader = db.scan(table, PartitionRange::full()).unwrap();
        let got = to_mutations(&mut reader).unwrap();
        assert_eq!(
            live_of(&got, now),
            live_of(model[table].values(), now),
            "{what}: table {table}"
        );
        for (key, m) in model[table].iter().take(5) {
            let one = db.get(table, key, ClusteringRange::full()).unwrap();
            assert_eq!(
                live_of(&one, now),
                live_of([m], now),
                "{what}: get {key} of {table}"
            );
        }
    }
}

#[test]
fn every_strategy_reads_back_the_models_live_data_with_gc_grace_zero() {
    for (name, strategy) in strategies() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(START));
        let mut now = START;
        let mut rng = SmallRng::seed_from_u64(20);
        let mut model: Model = TABLES.iter().map(|t| (*t, BTreeMap::new())).collect();
        let mut db = open(dir.path(), &strategy, &clock);
        for t in TABLES {
            db.create_table(TableSchema::new(t).unwrap()).unwrap();
        }
        const OPS: i64 = 1500;
        for ts in 1..=OPS {
            let table = TABLES[rng.gen_range(0..TABLES.len())];
            let m = random_mutation(&mut rng, ts, now);
            db.apply(table, &m).unwrap();
            match model.get_mut(table).unwrap().entry(m.key().clone()) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(m);
                }
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    o.get_mut().apply(m).unwrap()
                }
            }
            match rng.gen_range(0..100) {
                0..=2 => db.flush(table).unwrap(),
                3 => db.compact(table).unwrap(),
                4 | 5 => {
                    now += 10;
                    clock.set(now);
                }
                6 => check(&db, &model, now, &format!("{name} op {ts}")),
                _ => {}
            }
            if ts == OPS / 2 {
                check(&db, &model, now, &format!("{name} before reopen"));
                db.close().unwrap();
                drop(db);
                db = open(dir.path(), &strategy, &clock);
                check(&db, &model, now, &format!("{name} after reopen"));
            }
        }
        db.flush_all().unwrap();
        for t in TABLES {
            db.compact(t).unwrap();
        }
        check(
            &db,
            &model,
            now,
            &format!("{name} after a major compaction"),
        );
        let m = db.metrics();
        if name != "none" {
            assert!(
                m.compaction.jobs_completed > 0,
                "{name}: {:?}",
                m.compaction
            );
        }
        db.close().unwrap();
        drop(db);
        let db = open(dir.path(), &strategy, &clock);
        check(&db, &model, now, &format!("{name} at the end"));
        db.close().unwrap();
    }
}
