//! Bad input gets a clear error and changes nothing: segments too small
//! for index nodes, a value beyond the pool's chunked-string limit, a
//! write to a sealed memtable.

use logalloc::{PoolConfig, SegmentPool};
use memtable::{Error, Memtable};
use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp};
use region_group::{ReclaimConfig, RegionGroup};

#[test]
fn value_beyond_the_chunk_limit_is_refused_whole() {
    // 4 KiB segments: largest object 409 bytes, so a chunked string holds
    // at most 51 chunks of 409 bytes.
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4 << 10)
            .with_memory_limit(16 << 20),
    )
    .unwrap();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mt = Memtable::new(&group, &pool).unwrap();
    let small = Mutation::builder(DecoratedKey::from_bytes("k").unwrap())
        .cell("c", 0, Cell::live("v", Timestamp::from_micros(1)))
        .build()
        .unwrap();
    mt.apply(&small).unwrap();
    let before = mt.stats();
    let big = Mutation::builder(DecoratedKey::from_bytes("k").unwrap())
        .cell(
            "d",
            0,
            Cell::live(vec![0u8; 64 << 10], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap();
    let err = mt.apply(&big).unwrap_err();
    assert!(matches!(err, Error::ValueTooLarge { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("exceeds") && text.contains("limit"), "{text}");
    let after = mt.stats();
    assert_eq!(after.region.objects, before.region.objects);
    assert_eq!(after.rows, 1);
    let mut r = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    assert_eq!(mutation::to_mutations(&mut r).unwrap(), vec![small]);
}

#[test]
fn empty_reader_for_an_empty_memtable() {
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mt = Memtable::new(&group, &pool).unwrap();
    assert!(mt.is_empty());
    assert!(
        mt.make_reader_opt(PartitionRange::full(), ClusteringRange::full())
            .unwrap()
            .is_none()
    );
    let mut r = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    assert!(mutation::to_mutations(&mut r).unwrap().is_empty());
    assert_eq!(group.real_usage(), 0, "an empty memtable holds no segment");
}

#[test]
fn the_smallest_segments_logalloc_accepts_are_enough() {
    // 4 KiB segments: a 409-byte largest object still holds an index node
    // of fanout 12; keys and values are chunked.
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(logalloc::MIN_SEGMENT_SIZE)
            .with_memory_limit(4 << 20),
    )
    .unwrap();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mt = Memtable::new(&group, &pool).unwrap();
    let m = Mutation::builder(DecoratedKey::from_bytes(vec![1u8; 1000]).unwrap())
        .cell(
            vec![2u8; 1000],
            0,
            Cell::live(vec![3u8; 2000], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap();
    mt.apply(&m).unwrap();
    let mut r = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    assert_eq!(mutation::to_mutations(&mut r).unwrap(), vec![m]);
}
