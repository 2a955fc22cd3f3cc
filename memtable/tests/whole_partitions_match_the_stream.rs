//! `next_mutation` reads a partition whole from the index; it must give
//! what streaming and collecting the partition gives: for a wide partition
//! read over several holds of the lock, for slices of it, for a partition
//! with range tombstones (sliced: the streaming path clips them), after an
//! apply moved the index under a reader made by `make_reader_opt`, and for
//! a flush reader (always streamed).

mod common;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange, Timestamp,
    Tombstone, collect_partition,
};

fn key(i: usize) -> DecoratedKey {
    DecoratedKey::from_bytes(format!("pk{i:04}")).unwrap()
}

/// A partition of `rows` rows (more than one lock hold's worth when wide),
/// a static cell and, if asked, a range tombstone over some of its rows.
fn wide(i: usize, rows: usize, range_tombstone: bool) -> Mutation {
    let ts = Timestamp::from_micros;
    let mut b = Mutation::builder(key(i)).static_cell(9, Cell::live("s", ts(3)));
    for r in 0..rows {
        b = b.cell(format!("ck{r:04}"), 0, Cell::live(vec![r as u8; 40], ts(5)));
    }
    if range_tombstone {
        b = b.range_tombstone_bounds(
            std::ops::Bound::Included("ck0010"),
            std::ops::Bound::Excluded("ck0020"),
            Tombstone::new(ts(9), 1),
        );
    }
    b.build().unwrap()
}

fn slices() -> Vec<ClusteringRange> {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    let ck = |s: &str| mutation::ClusteringKey::new(s.to_owned()).unwrap();
    vec![
        ClusteringRange::full(),
        ClusteringRange::new(Included(ck("ck0005")), Excluded(ck("ck0150"))).unwrap(),
        ClusteringRange::new(Excluded(ck("ck0005")), Unbounded).unwrap(),
        ClusteringRange::new(Unbounded, Included(ck("ck0070"))).unwrap(),
        ClusteringRange::new(Included(ck("ck0015")), Included(ck("ck0015"))).unwrap(),
    ]
}

#[test]
fn whole_partitions_equal_the_collected_stream() {
    let (_pool, _group, memtable) = common::setup(16 << 20);
    for i in 0..6 {
        memtable.apply(&wide(i, 30 + 50 * i, i % 2 == 1)).unwrap();
    }
    for slice in slices() {
        for i in 0..6 {
            let range = PartitionRange::single_key(key(i));
            let mut streamed = memtable.make_reader(range.clone(), slice.clone()).unwrap();
            let want = collect_partition(&mut streamed).unwrap();
            assert!(want.is_some());
            let mut whole = memtable
                .make_reader_opt(range, slice.clone())
                .unwrap()
                .unwrap();
            assert_eq!(whole.next_mutation().unwrap(), want, "{i} {slice:?}");
            assert_eq!(whole.next_mutation().unwrap(), None);
        }
        // A scan, partition after partition.
        let mut streamed = memtable
            .make_reader(PartitionRange::full(), slice.clone())
            .unwrap();
        let want = common::read_all(&mut streamed);
        let mut whole = memtable
            .make_reader(PartitionRange::full(), slice.clone())
            .unwrap();
        let mut got = Vec::new();
        while let Some(m) = whole.next_mutation().unwrap() {
            got.push(m);
        }
        assert_eq!(got, want, "{slice:?}");
    }
}

#[test]
fn an_apply_between_make_reader_opt_and_the_read_is_seen_through_a_fresh_seek() {
    let (_pool, _group, memtable) = common::setup(16 << 20);
    for i in [1, 3] {
        memtable.apply(&wide(i, 5, false)).unwrap();
    }
    let mut reader = memtable
        .make_reader_opt(PartitionRange::single_key(key(3)), ClusteringRange::full())
        .unwrap()
        .unwrap();
    // Partitions before and in the one read: the index splits and the
    // reader's cursor is stale.
    for i in [0, 2] {
        memtable.apply(&wide(i, 200, false)).unwrap();
    }
    let more = Mutation::builder(key(3))
        .cell("ck9999", 0, Cell::live("late", Timestamp::from_micros(7)))
        .build()
        .unwrap();
    memtable.apply(&more).unwrap();
    let got = reader.next_mutation().unwrap().unwrap();
    assert_eq!(got, wide(3, 5, false).merge(more).unwrap());
    assert_eq!(reader.next_mutation().unwrap(), None);
}

#[test]
fn a_flush_reader_streams_its_partitions_even_when_asked_for_them_whole() {
    let (_pool, _group, memtable) = common::setup(16 << 20);
    for i in 0..3 {
        memtable.apply(&wide(i, 100, true)).unwrap();
    }
    let reported = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = reported.clone();
    let mut flush = memtable.make_flush_reader(move |b| {
        counter.fetch_add(b, std::sync::atomic::Ordering::Relaxed);
    });
    let mut got = Vec::new();
    while let Some(m) = flush.next_mutation().unwrap() {
        got.push(m);
    }
    assert_eq!(got, common::scan(&memtable));
    // The flush reader's progress is reported as it streams: all of the
    // region by the end.
    assert_eq!(
        reported.load(std::sync::atomic::Ordering::Relaxed),
        memtable.stats().region.used_bytes
    );
}
