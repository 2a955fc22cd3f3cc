//! The wiring the replica uses, end to end on a small table: writes go to
//! a memtable; a flush seals it, commits its data to the "sstables" (the
//! underlying source), updates the cache from the memtable's stream and
//! only then drops the memtable; reads merge `make_reader_opt` of every
//! memtable with the cache's. With forced evictions interleaved, every
//! single-partition read, slice and full scan equals a model.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use memtable::Memtable;
use mutation::testing::{arb_clustering_range, arb_mutation, arb_partition_key};
use mutation::{
    ClusteringRange, DecoratedKey, FragmentReader, MergingReader, Mutation, PartitionRange,
};
use proptest::prelude::*;
use region_group::{ReclaimConfig, RegionGroup};

#[derive(Debug, Clone)]
enum Op {
    Write(Mutation),
    Flush,
    Evict(usize),
    Read(DecoratedKey, ClusteringRange),
    Scan(ClusteringRange),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => arb_mutation().prop_map(Op::Write),
        2 => Just(Op::Flush),
        1 => (1usize..5).prop_map(Op::Evict),
        4 => (arb_partition_key(), arb_clustering_range()).prop_map(|(k, s)| Op::Read(k, s)),
        1 => arb_clustering_range().prop_map(Op::Scan),
    ]
}

fn read(
    memtable: &Arc<Memtable>,
    cache: &row_cache::RowCache,
    range: PartitionRange,
    slice: ClusteringRange,
) -> Vec<Mutation> {
    let mut readers: Vec<Box<dyn FragmentReader + Send>> = Vec::new();
    if let Some(r) = memtable
        .make_reader_opt(range.clone(), slice.clone())
        .unwrap()
    {
        readers.push(Box::new(r));
    }
    if let Some(r) = cache.make_reader_opt(range, slice) {
        readers.push(Box::new(r));
    }
    common::read_all(&mut MergingReader::new(readers))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn memtable_plus_cache_reads_equal_the_model(
        ops in prop::collection::vec(arb_op(), 1..40),
        piece_bytes in prop_oneof![Just(1usize), Just(60), Just(row_cache::DEFAULT_PIECE_BYTES)],
    ) {
        let config = row_cache::CacheConfig::default().with_piece_bytes(piece_bytes);
        let (pool, source, cache) = common::setup_with(8 << 20, config);
        let group = RegionGroup::new("memtables", ReclaimConfig::default());
        let mut memtable = Memtable::new(&group, &pool).unwrap();
        let mut model: BTreeMap<DecoratedKey, Mutation> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Write(m) => {
                    memtable.apply(&m).unwrap();
                    let merged = match model.remove(m.key()) {
                        Some(old) => old.merge(m.clone()).unwrap(),
                        None => m.clone(),
                    };
                    model.insert(m.key().clone(), merged);
                }
                Op::Flush => {
                    let old = std::mem::replace(&mut memtable, Memtable::new(&group, &pool).unwrap());
                    old.seal();
                    // The sstable is committed: the source sees the data.
                    let all = old.make_reader(PartitionRange::full(), ClusteringRange::full()).unwrap();
                    for m in common::read_all(&mut { all }) {
                        source.apply(&m);
                    }
                    // Then the cache is updated, the memtable still accounted.
                    let mut flushed =
                        old.make_reader(PartitionRange::full(), ClusteringRange::full()).unwrap();
                    cache.update_from(&mut flushed).unwrap();
                    old.detach_from_region_group();
                }
                Op::Evict(n) => {
                    cache.evict(n);
                }
                Op::Read(key, slice) => {
                    let range = PartitionRange::single_key(key.clone());
                    let want: Vec<Mutation> =
                        model.get(&key).map(|m| common::restrict(m, &slice)).into_iter().collect();
                    prop_assert_eq!(read(&memtable, &cache, range, slice), want);
                }
                Op::Scan(slice) => {
                    let want: Vec<Mutation> =
                        model.values().map(|m| common::restrict(m, &slice)).collect();
                    prop_assert_eq!(read(&memtable, &cache, PartitionRange::full(), slice), want);
                }
            }
            cache.check_invariants().map_err(TestCaseError::fail)?;
        }
        let want: Vec<Mutation> = model.values().cloned().collect();
        prop_assert_eq!(
            read(&memtable, &cache, PartitionRange::full(), ClusteringRange::full()),
            want
        );
    }
}
