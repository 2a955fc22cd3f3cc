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

/// The fragments of a reader, to its end.
fn drain(reader: &mut sstable::SstableReader) -> Vec<mutation::Fragment> {
    std::iter::from_fn(|| reader.next_fragment().unwrap()).collect()
}

/// The sliced stream reader of one partition (what a database read of a
/// slice uses) jumps through the clustering-block index as `read_slice`
/// does and stops at the slice's end, so a slice anywhere in a wide
/// partition reads a few blocks; its fragments are `read_slice`'s. Before,
/// it read the partition from its start to its end whatever the slice.
#[test]
fn a_sliced_reader_of_one_large_partition_reads_few_blocks() {
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
    let (fragments, merged) = canonical(&[b.build().unwrap(), small]);
    let table = write(dir.path(), &fragments, WriterOptions::default());
    let total_blocks = table.statistics().data_blocks;
    assert!(total_blocks > 15, "only {total_blocks} blocks");
    let m = merged
        .iter()
        .find(|m| m.key().key().as_bytes() == b"big")
        .unwrap();
    let key = |i| ClusteringKey::new(ck(i)).unwrap();
    for (slice, most_blocks) in [
        // Inside the range tombstone, in the middle.
        (
            ClusteringRange::new(Bound::Included(key(1000)), Bound::Excluded(key(1010))),
            3,
        ),
        // The head (with the static row), and a slice ending in the head.
        (
            ClusteringRange::new(Bound::Unbounded, Bound::Excluded(key(3))),
            2,
        ),
        // The tail, and past the last row.
        (
            ClusteringRange::new(Bound::Included(key(1995)), Bound::Unbounded),
            3,
        ),
        (
            ClusteringRange::new(Bound::Included(key(5000)), Bound::Unbounded),
            3,
        ),
    ] {
        let slice = slice.unwrap();
        let before = table.data_blocks_read();
        let mut reader = table
            .make_reader_opt(
                &mutation::PartitionRange::single_key(m.key().clone()),
                Some(slice.clone()),
            )
            .unwrap()
            .expect("the partition is there");
        let got = drain(&mut reader);
        let read = table.data_blocks_read() - before;
        assert_eq!(got, expected_slice(m, &slice), "{slice:?}");
        assert_eq!(
            got,
            table.read_slice(m.key(), &slice).unwrap().unwrap(),
            "{slice:?}"
        );
        assert!(
            read <= most_blocks,
            "{slice:?} read {read} of {total_blocks} blocks"
        );
    }
    // A range of both partitions, sliced: each partition restricted, the
    // large one entered by its index entry's jump.
    let slice =
        ClusteringRange::new(Bound::Included(key(1000)), Bound::Excluded(key(1010))).unwrap();
    let mut reader = table
        .make_reader_opt(&mutation::PartitionRange::full(), Some(slice.clone()))
        .unwrap()
        .unwrap();
    let got = drain(&mut reader);
    let expected: Vec<_> = merged
        .iter()
        .flat_map(|m| expected_slice(m, &slice))
        .collect();
    assert_eq!(got, expected);
}
