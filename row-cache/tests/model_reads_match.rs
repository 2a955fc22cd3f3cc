//! Any sequence of flushes (writes and deletes reaching the source, then
//! the cache through `update_from`, or through a memtable merged into the
//! cache's region by `update_by_merge`), forced evictions, invalidations and
//! clears, interleaved with single-partition reads, slices and range scans,
//! reads back equal to a model (a `BTreeMap` of mutations reconciled by
//! the mutation crate), streamed and whole (`next_mutation`).
//! `make_reader_opt` returns `None` only where the model has nothing, and the cache's index and region agree after every step.
//! Partitions are stored in pieces of 1 byte (a row each), 60 bytes or the
//! default, with or without a budget that evicts on most populations.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use mutation::testing::{arb_clustering_range, arb_mutation, arb_partition_key};
use mutation::{
    ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange, RingPosition,
    Timestamp, Tombstone,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Flush(Vec<Mutation>),
    Delete(DecoratedKey, i64),
    Evict(usize),
    Invalidate(DecoratedKey, DecoratedKey),
    Clear,
    Read(DecoratedKey, ClusteringRange),
    Scan(DecoratedKey, DecoratedKey, u8, ClusteringRange),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop::collection::vec(arb_mutation(), 1..4).prop_map(Op::Flush),
        1 => (arb_partition_key(), 0i64..40).prop_map(|(k, t)| Op::Delete(k, t)),
        1 => (1usize..6).prop_map(Op::Evict),
        1 => (arb_partition_key(), arb_partition_key()).prop_map(|(a, b)| Op::Invalidate(a, b)),
        1 => Just(Op::Clear),
        6 => (arb_partition_key(), arb_clustering_range()).prop_map(|(k, s)| Op::Read(k, s)),
        3 => (arb_partition_key(), arb_partition_key(), 0u8..5, arb_clustering_range())
            .prop_map(|(a, b, kind, s)| Op::Scan(a, b, kind, s)),
    ]
}

fn ordered(a: DecoratedKey, b: DecoratedKey) -> (DecoratedKey, DecoratedKey) {
    if a <= b { (a, b) } else { (b, a) }
}

/// Both kinds of bound at each end, token bounds, and the full ring.
fn scan_range(a: &DecoratedKey, b: &DecoratedKey, kind: u8) -> Option<PartitionRange> {
    let key = |k: &DecoratedKey| RingPosition::Key(k.clone());
    let token = |k: &DecoratedKey| RingPosition::Token(k.token());
    let (s, e) = match kind {
        0 => (Bound::Excluded(key(a)), Bound::Included(key(b))),
        1 => (Bound::Included(key(a)), Bound::Excluded(key(b))),
        2 => (Bound::Included(token(a)), Bound::Included(token(b))),
        3 => (Bound::Excluded(token(a)), Bound::Unbounded),
        _ => return Some(PartitionRange::full()),
    };
    PartitionRange::new(s, e).ok()
}

fn model_read(
    model: &BTreeMap<DecoratedKey, Mutation>,
    range: &PartitionRange,
    slice: &ClusteringRange,
) -> Vec<Mutation> {
    model
        .values()
        .filter(|m| range.contains(m.key()))
        .map(|m| common::restrict(m, slice))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn cache_reads_equal_the_model(
        ops in prop::collection::vec(arb_op(), 1..40),
        piece_bytes in prop_oneof![Just(1usize), Just(60), Just(row_cache::DEFAULT_PIECE_BYTES)],
        tight_budget in any::<bool>(),
        by_merge in any::<bool>(),
    ) {
        let mut config = row_cache::CacheConfig::default().with_piece_bytes(piece_bytes);
        if tight_budget {
            // One segment: the budget evicts on most populations.
            config = config.with_max_bytes(64 << 10);
        }
        let (pool, source, cache) = common::setup_with(8 << 20, config);
        let flush = |batch: &[Mutation]| {
            if by_merge {
                common::flush_by_merge(&pool, &cache, &source, batch);
            } else {
                common::flush(&cache, &source, batch);
            }
        };
        let mut model: BTreeMap<DecoratedKey, Mutation> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Flush(batch) => {
                    let batch = Mutation::reconcile_all(batch);
                    for m in &batch {
                        let merged = match model.remove(m.key()) {
                            Some(old) => old.merge(m.clone()).unwrap(),
                            None => m.clone(),
                        };
                        model.insert(m.key().clone(), merged);
                    }
                    flush(&batch);
                }
                Op::Delete(key, t) => {
                    let m = Mutation::builder(key.clone())
                        .partition_tombstone(Tombstone::new(Timestamp::from_micros(t), 0))
                        .build()
                        .unwrap();
                    let merged = match model.remove(&key) {
                        Some(old) => old.merge(m.clone()).unwrap(),
                        None => m.clone(),
                    };
                    model.insert(key, merged);
                    flush(&[m]);
                }
                Op::Evict(n) => {
                    cache.evict(n);
                }
                Op::Invalidate(a, b) => {
                    let (a, b) = ordered(a, b);
                    let range = PartitionRange::new(
                        Bound::Included(RingPosition::Key(a)),
                        Bound::Included(RingPosition::Key(b)),
                    )
                    .unwrap();
                    cache.invalidate(&range);
                }
                Op::Clear => cache.clear(),
                Op::Read(key, slice) => {
                    let range = PartitionRange::single_key(key.clone());
                    let want = model_read(&model, &range, &slice);
                    let opt = cache.make_reader_opt(range.clone(), slice.clone());
                    if opt.is_none() {
                        prop_assert!(want.is_empty(), "None for {key} but the model has it");
                    }
                    let got = common::read(&cache, range.clone(), slice.clone());
                    prop_assert_eq!(&got, &want);
                    // Whole (`next_mutation`): handed over as decoded.
                    let mut r = cache.make_reader(range, slice);
                    let whole: Vec<Mutation> = r.next_mutation().unwrap().into_iter().collect();
                    prop_assert_eq!(whole, want);
                    prop_assert_eq!(r.next_mutation().unwrap(), None);
                }
                Op::Scan(a, b, kind, slice) => {
                    let (a, b) = ordered(a, b);
                    let Some(range) = scan_range(&a, &b, kind) else { continue };
                    let want = model_read(&model, &range, &slice);
                    if let Some(mut r) = cache.make_reader_opt(range.clone(), slice.clone()) {
                        prop_assert_eq!(common::read_all(&mut r), want.clone());
                    } else {
                        prop_assert!(want.is_empty(), "None for {range} but the model has data");
                    }
                    // A second pass is served (partly) from what the first populated.
                    prop_assert_eq!(common::read(&cache, range.clone(), slice.clone()), want.clone());
                    // Partition after partition whole, alternating with
                    // streamed ones.
                    let mut r = cache.make_reader(range, slice);
                    let got = mutation::testing::read_alternating(&mut r).unwrap();
                    prop_assert_eq!(got, want);
                }
            }
            cache.check_invariants().map_err(TestCaseError::fail)?;
        }
        // A final full scan, twice: populating, then from the cache.
        let want: Vec<Mutation> = model.values().cloned().collect();
        for _ in 0..2 {
            let got = common::read(&cache, PartitionRange::full(), ClusteringRange::full());
            prop_assert_eq!(&got, &want);
        }
        let before = source.readers();
        let got = common::read(&cache, PartitionRange::full(), ClusteringRange::full());
        prop_assert_eq!(&got, &want);
        if !tight_budget {
            prop_assert_eq!(source.readers(), before, "a continuous ring read the source");
        }
    }
}
