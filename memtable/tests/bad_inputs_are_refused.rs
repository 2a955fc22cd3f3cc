//! Bad input gets a clear error and changes nothing: segments too small
//! for index nodes, a value beyond the pool's chunked-string limit, a
//! write to a sealed memtable, a merge that would make a row unflushable.

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
    // of fanout 14; keys and values are chunked.
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

#[test]
fn a_merge_that_would_outgrow_an_sstable_block_is_refused_whole() {
    use mutation::limits::{MAX_CELL_VALUE_LEN, MAX_ROW_SIZE};
    // 256 KiB segments: a stored value may reach about 85 MB, so the row
    // limit, not the pool's chunked-string limit, is what refuses (with the
    // default 128 KiB segments the latter, about 21 MB, refuses first, as
    // `ValueTooLarge`).
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(256 << 10)
            .with_memory_limit(512 << 20),
    )
    .unwrap();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mt = Memtable::new(&group, &pool).unwrap();
    let key = DecoratedKey::from_bytes("wide").unwrap();
    // Each mutation alone is within the builder's limits; the row they
    // build up, one 8 MiB column at a time, is not within one block.
    let column = |c: u32| {
        Mutation::builder(key.clone())
            .cell(
                "row",
                c,
                Cell::live(vec![c as u8; MAX_CELL_VALUE_LEN], Timestamp::from_micros(1)),
            )
            .build()
            .unwrap()
    };
    let fits = (MAX_ROW_SIZE / MAX_CELL_VALUE_LEN) as u32 - 1;
    let mut model = Mutation::new(key.clone());
    for c in 0..fits {
        mt.apply(&column(c)).unwrap();
        model.apply(column(c)).unwrap();
    }
    let before = mt.stats();
    let mut refused = None;
    for c in fits..fits + 2 {
        match mt.apply(&column(c)) {
            Ok(()) => model.apply(column(c)).unwrap(),
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let err = refused.expect("the row outgrows a block within two more columns");
    assert!(
        matches!(err, Error::RowTooLarge { size, limit, .. } if size > limit && limit == MAX_ROW_SIZE),
        "{err}"
    );
    assert!(
        err.to_string().contains("row limit an sstable can write"),
        "{err}"
    );
    // Nothing of the refused apply is left: the memtable reads as the
    // model of the accepted ones.
    let mut r = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    assert_eq!(mutation::to_mutations(&mut r).unwrap(), vec![model]);
    assert!(mt.stats().region.objects >= before.region.objects);
    mt.check_invariants().unwrap();
}
