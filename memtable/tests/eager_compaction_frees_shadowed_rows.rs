//! ScyllaDB's self-compacting memtable: a tombstone removes the data it
//! shadows at once and frees its memory, shadowed incoming data is never
//! stored, and the tombstones themselves stay for the flush.

mod common;

use std::ops::Bound;

use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation,
    PartitionRange, Position, Timestamp, Tombstone,
};

fn ts(t: i64) -> Timestamp {
    Timestamp::from_micros(t)
}

fn ck(s: &str) -> ClusteringKey {
    ClusteringKey::new(s.as_bytes().to_vec()).unwrap()
}

fn fragments(reader: &mut impl FragmentReader) -> Vec<Fragment> {
    let mut out = Vec::new();
    while let Some(f) = reader.next().unwrap() {
        out.push(f);
    }
    mutation::validate_stream(&out).unwrap();
    out
}

#[test]
fn range_tombstone_over_rows_2_and_3_frees_them() {
    let (_pool, group, mt) = common::setup(16 << 20);
    let key = DecoratedKey::from_bytes("pk").unwrap();
    let mut rows = Mutation::builder(key.clone());
    for c in ["1", "2", "3", "4"] {
        rows = rows.cell(c, 0, Cell::live(vec![b'x'; 1000], ts(10)));
    }
    mt.apply(&rows.build().unwrap()).unwrap();
    let before = mt.stats();
    assert_eq!(before.rows, 4);

    let tomb = Tombstone::new(ts(20), 5);
    let delete = Mutation::builder(key.clone())
        .range_tombstone_bounds(Bound::Included("2"), Bound::Included("3"), tomb)
        .build()
        .unwrap();
    mt.apply(&delete).unwrap();
    let after = mt.stats();

    // Rows 2 and 3 are gone from the region: each held a 1000-byte value.
    assert_eq!(after.rows, 2);
    assert_eq!(after.range_tombstones, 1);
    assert_eq!(after.rows_dropped_by_tombstones, 2);
    assert!(after.bytes_freed_by_tombstones >= 2000, "{after:?}");
    assert!(
        before.region.object_bytes - after.region.object_bytes >= 2000 - 200,
        "object bytes {} -> {}",
        before.region.object_bytes,
        after.region.object_bytes
    );
    assert!(after.region.used_bytes < before.region.used_bytes);
    assert_eq!(group.real_usage(), after.region.footprint_bytes());

    let mut reader = mt
        .make_reader_opt(
            PartitionRange::single_key(key.clone()),
            ClusteringRange::full(),
        )
        .unwrap()
        .unwrap();
    let got = fragments(&mut reader);
    let row = |c: &str| match &got
        .iter()
        .find(|f| matches!(f, Fragment::ClusteringRow { key, .. } if key == &ck(c)))
    {
        Some(f) => (*f).clone(),
        None => panic!("row {c} missing"),
    };
    assert_eq!(
        got,
        vec![
            Fragment::PartitionStart {
                key: key.clone(),
                tombstone: None
            },
            row("1"),
            Fragment::RangeTombstoneChange {
                position: Position::Before(ck("2")),
                tombstone: Some(tomb)
            },
            Fragment::RangeTombstoneChange {
                position: Position::After(ck("3")),
                tombstone: None
            },
            row("4"),
            Fragment::PartitionEnd,
        ]
    );
}

#[test]
fn older_partition_tombstone_changes_only_the_header_newer_one_removes_all_rows() {
    let (_pool, _group, mt) = common::setup(16 << 20);
    let key = DecoratedKey::from_bytes("pk").unwrap();
    let rows = Mutation::builder(key.clone())
        .cell("1", 0, Cell::live("a", ts(10)))
        .cell("2", 0, Cell::live("b", ts(10)))
        .range_tombstone_bounds(
            Bound::Included("5"),
            Bound::Included("6"),
            Tombstone::new(ts(30), 0),
        )
        .build()
        .unwrap();
    mt.apply(&rows).unwrap();
    mt.apply(
        &Mutation::builder(key.clone())
            .partition_tombstone(Tombstone::new(ts(5), 0))
            .build()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(mt.stats().rows, 2);
    mt.apply(
        &Mutation::builder(key.clone())
            .partition_tombstone(Tombstone::new(ts(15), 0))
            .build()
            .unwrap(),
    )
    .unwrap();
    let stats = mt.stats();
    assert_eq!(stats.rows, 0);
    // The range tombstone is newer than the partition tombstone: it stays.
    assert_eq!(stats.range_tombstones, 1);
    // Write timestamps seen: 10 (cells), 30 (range), 5 and 15 (partition).
    assert_eq!(stats.min_timestamp, Some(ts(5)));
    assert_eq!(stats.max_timestamp, Some(ts(30)));
    assert_eq!(stats.partitions, 1);
    assert_eq!(stats.applies, 3);
    let scanned = common::scan(&mt);
    assert_eq!(scanned.len(), 1);
    assert!(scanned[0].rows().is_empty());
    assert_eq!(
        scanned[0].partition_tombstone(),
        Some(Tombstone::new(ts(15), 0))
    );
    assert!(!scanned[0].range_tombstones().is_empty());
}

#[test]
fn shadowed_incoming_data_is_not_stored() {
    let (_pool, _group, mt) = common::setup(16 << 20);
    let key = DecoratedKey::from_bytes("pk").unwrap();
    mt.apply(
        &Mutation::builder(key.clone())
            .range_tombstone(ClusteringRange::full(), Tombstone::new(ts(50), 0))
            .build()
            .unwrap(),
    )
    .unwrap();
    let before = mt.stats().region;
    mt.apply(
        &Mutation::builder(key.clone())
            .cell("1", 0, Cell::live(vec![1u8; 5000], ts(40)))
            .build()
            .unwrap(),
    )
    .unwrap();
    let after = mt.stats();
    assert_eq!(after.rows, 0);
    assert_eq!(after.region.object_bytes, before.object_bytes);
    assert_eq!(after.region.objects, before.objects);
}

#[test]
fn flush_of_insert_then_delete_holds_only_the_row_tombstone() {
    let (_pool, _group, mt) = common::setup(16 << 20);
    let key = DecoratedKey::from_bytes("pk").unwrap();
    mt.apply(
        &Mutation::builder(key.clone())
            .cell("r", 0, Cell::live(vec![9u8; 500], ts(1)))
            .build()
            .unwrap(),
    )
    .unwrap();
    let tomb = Tombstone::new(ts(2), 7);
    mt.apply(
        &Mutation::builder(key.clone())
            .row_tombstone("r", tomb)
            .build()
            .unwrap(),
    )
    .unwrap();
    mt.seal();
    let mut flush = mt.make_flush_reader(|_| {});
    let got = fragments(&mut flush);
    assert_eq!(got.len(), 3);
    match &got[1] {
        Fragment::ClusteringRow { key, row } => {
            assert_eq!(key, &ck("r"));
            assert_eq!(row.tombstone, Some(tomb));
            assert!(row.cells.is_empty() && row.marker.is_none());
        }
        other => panic!("expected the row tombstone, got {other:?}"),
    }
}
