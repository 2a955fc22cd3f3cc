//! Issue 32's interleaving, deterministically: a reader has passed a
//! partition's header when an apply deletes the partition (or a range of
//! it), which removes the rows the reader has not reached yet (eager
//! compaction) and puts the tombstone in the header behind it. The reader
//! must not come back with neither the rows nor the tombstone: merged
//! with an older source holding an older version of those rows (a sealed
//! memtable, an sstable), that older version would show through, and a
//! read started after the newer write was acknowledged would miss it.
//!
//! Each test reads the memtable's partition, stops the reader right after
//! the partition start (or its first row), applies the deletion, finishes
//! the read, and merges what it read with the older version: the older rows
//! must stay hidden. (The whole-partition read, `next_mutation`, takes its
//! holds inside one call; the loom model `loom_delete_against_whole_read`
//! interleaves the deletion between them.)

use std::sync::Arc;

use logalloc::{PoolConfig, SegmentPool};
use memtable::Memtable;
use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Fragment, FragmentReader, MergingReader,
    Mutation, PartitionRange, Position, Timestamp, Tombstone, from_mutations, to_mutations,
};
use region_group::{ReclaimConfig, RegionGroup};

fn ts(t: i64) -> Timestamp {
    Timestamp::from_micros(t)
}

fn key() -> DecoratedKey {
    DecoratedKey::from_bytes("w1-0187").unwrap()
}

fn memtable() -> Arc<Memtable> {
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(64 << 20)).unwrap();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    Memtable::new(&group, &pool).unwrap()
}

/// Rows `00`..`n` of the partition, each `value` at `t`.
fn rows(n: usize, value: &str, t: i64) -> Mutation {
    let mut b = Mutation::builder(key());
    for i in 0..n {
        b = b.cell(format!("{i:02}"), 0, Cell::live(value.to_owned(), ts(t)));
    }
    b.build().unwrap()
}

fn partition_delete(t: i64) -> Mutation {
    Mutation::builder(key())
        .partition_tombstone(Tombstone::new(ts(t), 0))
        .build()
        .unwrap()
}

fn range_delete(from: &str, t: i64) -> Mutation {
    let from = ClusteringKey::new(from.as_bytes().to_vec()).unwrap();
    Mutation::builder(key())
        .range_tombstone(
            ClusteringRange::new(std::ops::Bound::Included(from), std::ops::Bound::Unbounded)
                .unwrap(),
            Tombstone::new(ts(t), 0),
        )
        .build()
        .unwrap()
}

/// The values `m` shows: live cells no deletion of `m` shadows.
fn live_values(m: &Mutation) -> Vec<String> {
    let mut shown = Vec::new();
    for (ck, row) in m.rows() {
        let deleted = m
            .partition_tombstone()
            .max(m.range_tombstones().tombstone_at(&Position::At(ck.clone())))
            .max(row.tombstone);
        for cell in row.cells.values() {
            if let Cell::Live {
                value, timestamp, ..
            } = cell
                && deleted.is_none_or(|t| t.timestamp < *timestamp)
            {
                shown.push(String::from_utf8(value.to_vec()).unwrap());
            }
        }
    }
    shown
}

/// Merges the fragments a memtable reader produced with the older
/// version and returns the partition.
fn merged_with_older(read: Vec<Fragment>, older: Mutation) -> Mutation {
    let sources: Vec<Box<dyn FragmentReader>> = vec![
        Box::new(mutation::FragmentsReader::new(read)),
        Box::new(from_mutations(vec![older])),
    ];
    let mut merged = MergingReader::new(sources);
    let mut all = to_mutations(&mut merged).unwrap();
    assert_eq!(all.len(), 1);
    all.remove(0)
}

/// The streaming path (what a merging read uses): the partition start,
/// then the deletion, then the rest of the stream.
fn stream_across(deletion: Mutation, stored_with_header: bool) {
    let mt = memtable();
    if stored_with_header {
        // A header entry (an older partition tombstone) before the rows.
        mt.apply(&partition_delete(2)).unwrap();
    }
    mt.apply(&rows(3, "new", 3)).unwrap();
    let mut reader = mt
        .make_reader_opt(PartitionRange::single_key(key()), ClusteringRange::full())
        .unwrap()
        .expect("the memtable holds the partition");
    let start = reader.next().unwrap().unwrap();
    assert!(matches!(start, Fragment::PartitionStart { .. }));
    mt.apply(&deletion).unwrap();
    let mut read = vec![start];
    while let Some(f) = reader.next().unwrap() {
        read.push(f);
    }
    let seen = merged_with_older(read, rows(3, "old", 1));
    assert!(
        !live_values(&seen).iter().any(|v| v == "old"),
        "the older version shows through: {seen:?}"
    );
}

#[test]
fn a_partition_delete_behind_a_streaming_reader_hides_the_older_rows() {
    stream_across(partition_delete(4), false);
    stream_across(partition_delete(4), true);
}

#[test]
fn a_range_delete_behind_a_streaming_reader_hides_the_older_rows() {
    stream_across(range_delete("01", 4), false);
    stream_across(range_delete("00", 4), true);
}

#[test]
fn a_delete_between_rows_hides_the_rest_and_keeps_what_was_read() {
    let mt = memtable();
    mt.apply(&rows(3, "new", 3)).unwrap();
    let mut reader = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    let mut read = Vec::new();
    // The partition start and the first row.
    read.push(reader.next().unwrap().unwrap());
    read.push(reader.next().unwrap().unwrap());
    assert!(matches!(read[1], Fragment::ClusteringRow { .. }));
    mt.apply(&partition_delete(4)).unwrap();
    while let Some(f) = reader.next().unwrap() {
        read.push(f);
    }
    // The stream stays valid (to_mutations checks it) and carries the
    // deletion over what it had not read.
    let seen = merged_with_older(read, rows(3, "old", 1));
    assert!(!live_values(&seen).iter().any(|v| v == "old"), "{seen:?}");
}
