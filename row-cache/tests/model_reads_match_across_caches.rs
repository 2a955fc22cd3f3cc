//! Several caches (tables) in one tracker, each in front of its own
//! source, driven by one random sequence of flushes, deletes, evictions
//! (of one cache, and of the tracker in LRU order across caches), clears,
//! a cache dropped and made again over the same source (a table closed and
//! reopened), single-partition reads and range scans: every read of every
//! cache equals that table's model (the same keys hold different data in
//! different tables), the caches together never hold more than the
//! tracker's budget, and the tracker's index and region agree after every
//! step.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use mutation::testing::{arb_clustering_range, arb_mutation, arb_partition_key};
use mutation::{ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp, Tombstone};
use proptest::prelude::*;
use row_cache::{CacheConfig, CacheTracker, RowCache};

use common::MemorySource;

const TABLES: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    Flush(usize, Vec<Mutation>),
    Delete(usize, DecoratedKey, i64),
    Evict(usize, usize),
    EvictAny(usize),
    Clear(usize),
    Reopen(usize),
    Read(usize, DecoratedKey, ClusteringRange),
    Scan(usize, ClusteringRange),
}

fn table() -> impl Strategy<Value = usize> {
    0..TABLES
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (table(), prop::collection::vec(arb_mutation(), 1..4))
            .prop_map(|(t, b)| Op::Flush(t, b)),
        1 => (table(), arb_partition_key(), 0i64..40).prop_map(|(t, k, ts)| Op::Delete(t, k, ts)),
        1 => (table(), 1usize..6).prop_map(|(t, n)| Op::Evict(t, n)),
        1 => (1usize..6).prop_map(Op::EvictAny),
        1 => table().prop_map(Op::Clear),
        1 => table().prop_map(Op::Reopen),
        6 => (table(), arb_partition_key(), arb_clustering_range())
            .prop_map(|(t, k, s)| Op::Read(t, k, s)),
        2 => (table(), arb_clustering_range()).prop_map(|(t, s)| Op::Scan(t, s)),
    ]
}

type Model = BTreeMap<DecoratedKey, Mutation>;

fn model_read(model: &Model, range: &PartitionRange, slice: &ClusteringRange) -> Vec<Mutation> {
    model
        .values()
        .filter(|m| range.contains(m.key()))
        .map(|m| common::restrict(m, slice))
        .collect()
}

fn apply(model: &mut Model, m: &Mutation) {
    let merged = match model.remove(m.key()) {
        Some(old) => old.merge(m.clone()).unwrap(),
        None => m.clone(),
    };
    model.insert(m.key().clone(), merged);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    #[test]
    fn every_cache_of_a_tracker_reads_its_model(
        ops in prop::collection::vec(arb_op(), 1..50),
        piece_bytes in prop_oneof![Just(1usize), Just(60), Just(row_cache::DEFAULT_PIECE_BYTES)],
        tight_budget in any::<bool>(),
    ) {
        let pool = common::pool(8 << 20);
        // One segment: most populations evict, often another table's data.
        let budget = tight_budget.then_some(64 << 10);
        let tracker = CacheTracker::new(&pool, budget).unwrap();
        let config = CacheConfig::default().with_piece_bytes(piece_bytes);
        let sources: Vec<Arc<MemorySource>> =
            (0..TABLES).map(|_| Arc::new(MemorySource::new())).collect();
        let make = |t: usize| {
            RowCache::with_tracker(&tracker, sources[t].clone(), config.clone()).unwrap()
        };
        let mut caches: Vec<RowCache> = (0..TABLES).map(&make).collect();
        let mut models: Vec<Model> = vec![Model::new(); TABLES];
        for op in ops {
            match op {
                Op::Flush(t, batch) => {
                    let batch = Mutation::reconcile_all(batch);
                    for m in &batch {
                        apply(&mut models[t], m);
                    }
                    common::flush(&caches[t], &sources[t], &batch);
                }
                Op::Delete(t, key, ts) => {
                    let m = Mutation::builder(key)
                        .partition_tombstone(Tombstone::new(Timestamp::from_micros(ts), 0))
                        .build()
                        .unwrap();
                    apply(&mut models[t], &m);
                    common::flush(&caches[t], &sources[t], &[m]);
                }
                Op::Evict(t, n) => {
                    caches[t].evict(n);
                }
                Op::EvictAny(n) => {
                    tracker.evict(n);
                }
                Op::Clear(t) => caches[t].clear(),
                Op::Reopen(t) => {
                    caches[t] = make(t);
                }
                Op::Read(t, key, slice) => {
                    let range = PartitionRange::single_key(key.clone());
                    let want = model_read(&models[t], &range, &slice);
                    if caches[t].make_reader_opt(range.clone(), slice.clone()).is_none() {
                        prop_assert!(want.is_empty(), "None for {key} in table {t}, which has it");
                    }
                    prop_assert_eq!(common::read(&caches[t], range, slice), want);
                }
                Op::Scan(t, slice) => {
                    let range = PartitionRange::full();
                    let want = model_read(&models[t], &range, &slice);
                    for _ in 0..2 {
                        prop_assert_eq!(
                            common::read(&caches[t], range.clone(), slice.clone()),
                            want.clone()
                        );
                    }
                }
            }
            let total = tracker.stats();
            if let Some(max) = budget {
                prop_assert!(total.stored_bytes <= max, "{} bytes over {max}", total.stored_bytes);
            }
            prop_assert_eq!(total.caches, TABLES);
            let parts: usize = caches.iter().map(|c| c.stats().partitions).sum();
            prop_assert_eq!(parts, total.partitions);
            tracker.check_invariants().map_err(TestCaseError::fail)?;
        }
        for (t, cache) in caches.iter().enumerate() {
            let want: Vec<Mutation> = models[t].values().cloned().collect();
            let got = common::read(cache, PartitionRange::full(), ClusteringRange::full());
            prop_assert_eq!(got, want);
        }
    }
}
