//! Helpers shared by the memtable's integration tests.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::sync::Arc;

use logalloc::{PoolConfig, SegmentPool};
use memtable::Memtable;
use mutation::{ClusteringRange, FragmentReader, Mutation, PartitionRange, to_mutations};
use region_group::{ReclaimConfig, RegionGroup};

/// A pool of `limit` bytes in 64 KiB segments, a group, and a memtable.
pub(crate) fn setup(limit: usize) -> (Arc<SegmentPool>, Arc<RegionGroup>, Arc<Memtable>) {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(64 << 10)
            .with_memory_limit(limit),
    )
    .expect("pool");
    let group = RegionGroup::new("memtables", ReclaimConfig::default());
    let memtable = Memtable::new(&group, &pool).expect("memtable");
    (pool, group, memtable)
}

/// Everything a reader yields, validated and collected.
pub(crate) fn read_all(reader: &mut impl FragmentReader) -> Vec<Mutation> {
    to_mutations(reader).expect("a valid stream")
}

/// The full scan of a memtable.
pub(crate) fn scan(memtable: &Arc<Memtable>) -> Vec<Mutation> {
    let mut r = memtable
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .expect("reader");
    read_all(&mut r)
}

/// `m` restricted to the clustering `slice`, as a reader with that slice
/// must return it: partition tombstone and static row kept, rows in the
/// slice, range tombstones clipped to it.
pub(crate) fn restrict(m: &Mutation, slice: &ClusteringRange) -> Mutation {
    let mut b = Mutation::builder(m.key().clone());
    if let Some(t) = m.partition_tombstone() {
        b = b.partition_tombstone(t);
    }
    if let Some(s) = m.static_row() {
        b = b.static_row(s.clone());
    }
    for (k, r) in m.rows() {
        if slice.contains(k) {
            b = b.row(k.clone(), r.clone());
        }
    }
    let (s, e) = (slice.start_position(), slice.end_position());
    for rt in m.range_tombstones().to_range_tombstones() {
        let start = rt.range.start_position().max(s.clone());
        let end = rt.range.end_position().min(e.clone());
        if start < end {
            let range = ClusteringRange::from_positions(&start, &end).expect("clipped range");
            b = b.range_tombstone(range, rt.tombstone);
        }
    }
    b.build().expect("a restriction of a valid mutation")
}
