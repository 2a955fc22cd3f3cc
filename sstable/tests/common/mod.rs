//! Shared helpers for the integration tests: a proptest strategy for
//! mutations, writing them to an sstable, and the expected slices.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test file uses a subset of the helpers"
)]

use std::ops::Bound;
use std::path::Path;

use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation,
    Position, Row, RowMarker, Timestamp, Tombstone, Ttl, from_mutations,
};
use proptest::prelude::*;
use sstable::{Sstable, Writer, WriterOptions};

/// Small blocks and thresholds so tiny inputs exercise multi-block
/// partitions, clustering-block indexes and several Index blocks.
pub fn small_options(compression: bool) -> WriterOptions {
    let mut o = WriterOptions::default();
    o.block_size = 512;
    o.index_block_size = 64;
    o.large_partition_threshold = 300;
    o.compression = compression;
    o.io_buffer = 4096;
    o
}

fn ts() -> impl Strategy<Value = Timestamp> {
    (-5i64..40).prop_map(Timestamp::from_micros)
}

fn tombstone() -> impl Strategy<Value = Tombstone> {
    (ts(), 0u32..3).prop_map(|(t, l)| Tombstone::new(t, l))
}

fn ckey() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(0u8..4, 0..3)
}

fn cell() -> impl Strategy<Value = Cell> {
    prop_oneof![
        6 => (prop::collection::vec(any::<u8>(), 0..24), ts()).prop_map(|(v, t)| Cell::live(v, t)),
        1 => (prop::collection::vec(any::<u8>(), 0..600), ts()).prop_map(|(v, t)| Cell::live(v, t)),
        1 => (any::<u8>(), ts(), 1u32..100).prop_map(|(v, t, ttl)| Cell::expiring(vec![v], t, Ttl::new(ttl, ttl + 1000).unwrap())),
        1 => (ts(), 0u32..5).prop_map(|(t, l)| Cell::tombstone(t, l)),
    ]
}

fn row() -> impl Strategy<Value = Row> {
    (
        prop::option::of(ts()),
        prop::option::weighted(0.15, tombstone()),
        prop::collection::btree_map(0u32..6, cell(), 0..4),
    )
        .prop_map(|(marker, tomb, cells)| {
            let mut r = Row::new();
            r.marker = marker.map(RowMarker::new);
            r.tombstone = tomb;
            r.cells = cells;
            r
        })
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        3 => ckey().prop_map(Bound::Included),
        3 => ckey().prop_map(Bound::Excluded),
    ]
}

/// A clustering range (possibly empty).
pub fn clustering_range() -> impl Strategy<Value = ClusteringRange> {
    (bound(), bound()).prop_map(|(s, e)| {
        let conv = |b: Bound<Vec<u8>>| match b {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Included(k) => Bound::Included(ClusteringKey::new(k).unwrap()),
            Bound::Excluded(k) => Bound::Excluded(ClusteringKey::new(k).unwrap()),
        };
        ClusteringRange::new(conv(s.clone()), conv(e.clone()))
            .or_else(|_| ClusteringRange::new(conv(e), conv(s)))
            .unwrap_or_else(|_| ClusteringRange::full())
    })
}

/// One partition's mutation.
pub fn mutation_strategy() -> impl Strategy<Value = Mutation> {
    (
        prop::collection::vec(any::<u8>(), 1..6),
        prop::option::weighted(0.1, tombstone()),
        prop::option::weighted(0.3, row()),
        prop::collection::vec((ckey(), row()), 0..14),
        prop::collection::vec((clustering_range(), tombstone()), 0..3),
    )
        .prop_map(|(key, ptomb, srow, rows, rts)| {
            let mut b = Mutation::builder(DecoratedKey::from_bytes(key).unwrap());
            if let Some(t) = ptomb {
                b = b.partition_tombstone(t);
            }
            if let Some(r) = srow {
                b = b.static_row(r);
            }
            for (k, r) in rows {
                b = b.row(k, r);
            }
            for (range, t) in rts {
                b = b.range_tombstone(range, t);
            }
            b.build().unwrap()
        })
}

/// Several partitions (keys may repeat; `from_mutations` merges them).
pub fn mutations_strategy(max: usize) -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(mutation_strategy(), 0..max)
}

/// All fragments of a reader.
pub fn drain(r: &mut dyn FragmentReader) -> Vec<Fragment> {
    let mut out = Vec::new();
    while let Some(f) = r.next().unwrap() {
        out.push(f);
    }
    out
}

/// The merged, ordered fragment stream of `mutations`, and the mutations
/// as merged (in ring order).
pub fn canonical(mutations: &[Mutation]) -> (Vec<Fragment>, Vec<Mutation>) {
    let frags = drain(&mut from_mutations(mutations.to_vec()));
    let merged = mutation::to_mutations(&mut from_mutations(mutations.to_vec())).unwrap();
    (frags, merged)
}

/// Writes `fragments` as a new sstable in `dir` and opens it.
pub fn write(dir: &Path, fragments: &[Fragment], options: WriterOptions) -> Sstable {
    let mut w = Writer::create(dir, options).unwrap();
    for f in fragments {
        w.write(f).unwrap();
    }
    let c = w.commit().unwrap();
    Sstable::open(dir, c.generation).unwrap()
}

/// The expected result of slicing `m` to `range`: rows in the range and
/// range tombstones intersected with it, rebuilt as a mutation. Each row is
/// built on its own and merged in, as a memtable accumulates them, since a
/// wide slice may be more than one mutation may carry
/// (`mutation::limits::MAX_MUTATION_SIZE`).
pub fn expected_slice(m: &Mutation, range: &ClusteringRange) -> Vec<Fragment> {
    let mut b = Mutation::builder(m.key().clone());
    if let Some(t) = m.partition_tombstone() {
        b = b.partition_tombstone(t);
    }
    if let Some(r) = m.static_row() {
        b = b.static_row(r.clone());
    }
    for rt in m.range_tombstones().to_range_tombstones() {
        let start = rt.range.start_position().max(range.start_position());
        let end = rt.range.end_position().min(range.end_position());
        if start < end {
            let clipped = ClusteringRange::from_positions(&start, &end).unwrap();
            b = b.range_tombstone(clipped, rt.tombstone);
        }
    }
    let mut sliced = b.build().unwrap();
    for (k, r) in m.rows() {
        if range.contains(k) {
            let row = Mutation::builder(m.key().clone())
                .row(k.clone(), r.clone())
                .build()
                .unwrap();
            sliced.apply(row).unwrap();
        }
    }
    sliced.fragments()
}

/// Positions used by tests to compare.
pub fn position_of(f: &Fragment) -> Option<Position> {
    f.position()
}
