//! A clustering slice of a partition larger than 64 KiB reads only the
//! Data blocks it needs, through the clustering-block index, and returns
//! the same fragments as slicing the whole partition (including a range
//! tombstone that is open where the slice starts).

mod common;

use std::ops::Bound;

use common::*;
use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Mutation, Timestamp, Tombstone,
};
use sstable::WriterOptions;

fn ck(i: u32) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

#[test]
fn narrow_slice_of_large_partition_reads_few_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Mutation::builder(DecoratedKey::from_bytes(b"big".to_vec()).unwrap())
        .static_cell(0, Cell::live(b"static".to_vec(), Timestamp::from_micros(1)));
    for i in 0..2000u32 {
        b = b.cell(
            ck(i),
            1,
            Cell::live(vec![(i % 251) as u8; 150], Timestamp::from_micros(10)),
        );
    }
    // A range tombstone older than the rows, spanning the slice start.
    b = b.range_tombstone_bounds(
        Bound::Included(ck(900)),
        Bound::Excluded(ck(1100)),
        Tombstone::new(Timestamp::from_micros(5), 0),
    );
    let small = Mutation::builder(DecoratedKey::from_bytes(b"small".to_vec()).unwrap())
        .cell(
            ck(1),
            1,
            Cell::live(b"x".to_vec(), Timestamp::from_micros(1)),
        )
        .build()
        .unwrap();
    let big = b.build().unwrap();
    let (fragments, merged) = canonical(&[big, small]);
    let table = write(dir.path(), &fragments, WriterOptions::default());
    table.verify().unwrap();
    assert!(table.statistics().largest_partition > 64 << 10);
    let total_blocks = table.statistics().data_blocks;
    assert!(total_blocks > 15, "only {total_blocks} blocks");

    let m = merged
        .iter()
        .find(|m| m.key().key().as_bytes() == b"big")
        .unwrap();
    let slice = ClusteringRange::new(
        Bound::Included(ClusteringKey::new(ck(1000)).unwrap()),
        Bound::Excluded(ClusteringKey::new(ck(1010)).unwrap()),
    )
    .unwrap();
    let before = table.data_blocks_read();
    let got = table.read_slice(m.key(), &slice).unwrap().unwrap();
    let read = table.data_blocks_read() - before;
    assert_eq!(got, expected_slice(m, &slice));
    assert!(read <= 3, "slice read {read} of {total_blocks} blocks");

    // The full partition reads every block it spans and is equal too.
    assert_eq!(
        table.read_partition(m.key()).unwrap().unwrap(),
        m.fragments()
    );
    // Slices at the ends of the partition.
    for slice in [
        ClusteringRange::new(
            Bound::Unbounded,
            Bound::Excluded(ClusteringKey::new(ck(3)).unwrap()),
        )
        .unwrap(),
        ClusteringRange::new(
            Bound::Included(ClusteringKey::new(ck(1995)).unwrap()),
            Bound::Unbounded,
        )
        .unwrap(),
        ClusteringRange::new(
            Bound::Included(ClusteringKey::new(ck(5000)).unwrap()),
            Bound::Unbounded,
        )
        .unwrap(),
    ] {
        assert_eq!(
            table.read_slice(m.key(), &slice).unwrap().unwrap(),
            expected_slice(m, &slice)
        );
    }
}
