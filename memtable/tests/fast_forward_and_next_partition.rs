//! The rest of the `FragmentReader` contract: `next_partition` skips the
//! rest of the current partition (and does nothing between partitions),
//! `fast_forward_to` moves a scan to a later range; both keep the stream
//! valid (checked with the validator told about each call).

mod common;

use std::ops::Bound;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation, PartitionRange,
    RingPosition, StreamValidator, Timestamp,
};

fn data() -> Vec<Mutation> {
    let mut v: Vec<Mutation> = (0..12)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(format!("k{i:02}")).unwrap())
                .cell("a", 0, Cell::live("x", Timestamp::from_micros(1)))
                .cell("b", 0, Cell::live("y", Timestamp::from_micros(1)))
                .build()
                .unwrap()
        })
        .collect();
    v.sort_by(|a, b| a.key().cmp(b.key()));
    v
}

#[test]
fn next_partition_skips_the_rest_of_a_partition() {
    let (_pool, _group, mt) = common::setup(16 << 20);
    let data = data();
    for m in &data {
        mt.apply(m).unwrap();
    }
    let mut r = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    let mut v = StreamValidator::new();
    r.next_partition().unwrap(); // before anything: no effect
    let mut starts = Vec::new();
    while let Some(f) = r.next().unwrap() {
        v.check(&f).unwrap();
        if let Fragment::PartitionStart { key, .. } = &f {
            starts.push(key.clone());
            if starts.len() % 2 == 1 {
                r.next_partition().unwrap();
                v.skipped_partition();
            }
        }
    }
    v.finish().unwrap();
    let all: Vec<DecoratedKey> = data.iter().map(|m| m.key().clone()).collect();
    assert_eq!(starts, all);
}

#[test]
fn fast_forward_moves_to_a_later_range() {
    let (_pool, _group, mt) = common::setup(16 << 20);
    let data = data();
    for m in &data {
        mt.apply(m).unwrap();
    }
    let first = PartitionRange::new(
        Bound::Unbounded,
        Bound::Included(RingPosition::Key(data[2].key().clone())),
    )
    .unwrap();
    let mut r = mt.make_reader(first, ClusteringRange::full()).unwrap();
    let mut v = StreamValidator::new();
    let mut got = Vec::new();
    // Read one fragment of the first partition, then move on.
    let f = r.next().unwrap().unwrap();
    v.check(&f).unwrap();
    let second = PartitionRange::new(
        Bound::Included(RingPosition::Key(data[5].key().clone())),
        Bound::Excluded(RingPosition::Key(data[9].key().clone())),
    )
    .unwrap();
    r.fast_forward_to(second.clone()).unwrap();
    v.fast_forwarded(&second);
    while let Some(f) = r.next().unwrap() {
        v.check(&f).unwrap();
        got.push(f);
    }
    v.finish().unwrap();
    let mut replay = mutation::FragmentsReader::new(got);
    assert_eq!(common::read_all(&mut replay), data[5..9].to_vec());
    // And once more, to a range after that.
    let third = PartitionRange::new(
        Bound::Excluded(RingPosition::Key(data[9].key().clone())),
        Bound::Unbounded,
    )
    .unwrap();
    r.fast_forward_to(third).unwrap();
    assert_eq!(common::read_all(&mut r), data[10..].to_vec());
}
