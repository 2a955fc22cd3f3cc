//! An apply that fails at any of its allocations leaves the memtable
//! exactly as it was: same stream, same objects and object bytes, a sound
//! region; and the error says out of memory. Each mutation is tried with a
//! failure at its 1st, 2nd, ... allocation until it succeeds.

use std::ops::Bound;
use std::sync::Arc;

use logalloc::{PoolConfig, SegmentPool};
use memtable::{Error, Memtable};
use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp, Tombstone,
    to_mutations,
};
use region_group::{ReclaimConfig, RegionGroup};

fn scan(mt: &Arc<Memtable>) -> Vec<Mutation> {
    let mut r = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    to_mutations(&mut r).unwrap()
}

/// A partition tombstone at timestamp 5 for partition `key`.
fn partition_delete(key: &str) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(key.to_string()).unwrap())
        .partition_tombstone(Tombstone::new(ts(5), 0))
        .build()
        .unwrap()
}

fn ts(t: i64) -> Timestamp {
    Timestamp::from_micros(t)
}

#[test]
fn failure_at_every_allocation_point_changes_nothing() {
    // 4 KiB segments: fanout 14 and a 409-byte largest object, so these
    // mutations split nodes and chunk values.
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4 << 10)
            .with_memory_limit(64 << 20),
    )
    .unwrap();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mt = Memtable::new(&group, &pool).unwrap();
    let wide = DecoratedKey::from_bytes("wide").unwrap();
    let mut base = Mutation::builder(wide.clone());
    for i in 0..40 {
        base = base.cell(format!("{i:03}"), 0, Cell::live(vec![1u8; 50], ts(1)));
    }
    mt.apply(&base.build().unwrap()).unwrap();

    let mut many_rows = Mutation::builder(DecoratedKey::from_bytes("new").unwrap());
    for i in 0..30 {
        many_rows = many_rows.cell(format!("{i:03}"), 0, Cell::live(vec![2u8; 30], ts(2)));
    }
    let mut overwrite = Mutation::builder(wide.clone());
    for i in (0..40).step_by(3) {
        overwrite = overwrite.cell(format!("{i:03}"), 0, Cell::live(vec![3u8; 80], ts(3)));
    }
    let mutations = vec![
        many_rows.build().unwrap(),
        overwrite.build().unwrap(),
        Mutation::builder(wide.clone())
            .cell("big", 1, Cell::live(vec![4u8; 5000], ts(4)))
            .static_cell(2, Cell::live(vec![5u8; 700], ts(4)))
            .build()
            .unwrap(),
        Mutation::builder(wide.clone())
            .range_tombstone_bounds(
                Bound::Included("005"),
                Bound::Excluded("030"),
                Tombstone::new(ts(10), 0),
            )
            .build()
            .unwrap(),
        Mutation::builder(DecoratedKey::from_bytes(vec![b'k'; 1000]).unwrap())
            .cell(vec![b'c'; 900], 0, Cell::live("v", ts(5)))
            .build()
            .unwrap(),
        Mutation::builder(wide.clone())
            .partition_tombstone(Tombstone::new(ts(20), 0))
            .build()
            .unwrap(),
    ];

    let mut total_points = 0;
    for m in &mutations {
        let mut n = 1;
        loop {
            let before_scan = scan(&mt);
            let before = mt.stats();
            pool.fail_nth_allocation(n);
            match mt.apply(m) {
                Ok(()) => {
                    pool.fail_nth_allocation(0);
                    break;
                }
                Err(e) => {
                    assert!(matches!(e, Error::OutOfMemory { .. }), "point {n}: {e}");
                    assert!(e.to_string().contains("out of memory"));
                    let after = mt.stats();
                    assert_eq!(scan(&mt), before_scan, "point {n}");
                    assert_eq!(after.region.objects, before.region.objects, "point {n}");
                    assert_eq!(after.region.object_bytes, before.region.object_bytes);
                    assert_eq!(after.rows, before.rows);
                    assert_eq!(after.partitions, before.partitions);
                    mt.check_invariants().unwrap();
                }
            }
            n += 1;
            assert!(n < 10_000, "apply never succeeded");
        }
        total_points += n - 1;
        mt.check_invariants().unwrap();
    }
    // The mutations above exercise many allocation points (entries' key
    // and value strings, chunk indexes, node splits, separators, new roots).
    assert!(total_points > 60, "only {total_points} allocation points");
    let want = Mutation::reconcile_all(
        std::iter::once({
            let mut b = Mutation::builder(wide.clone());
            for i in 0..40 {
                b = b.cell(format!("{i:03}"), 0, Cell::live(vec![1u8; 50], ts(1)));
            }
            b.build().unwrap()
        })
        .chain(mutations.iter().cloned()),
    );
    assert_eq!(scan(&mt), want);
}

/// A partition whose header is empty (no tombstone, static row or range
/// tombstone) and that has rows stores no header entry: a single-row
/// partition is one object (its key and value in one string). A partition
/// with nothing at all (an empty mutation) keeps a header entry, so that it
/// is still there. Whatever allocation of these applies fails, the memtable
/// forgets everything the apply allocated; a header that becomes non-empty
/// is stored as its partition's first entry.
#[test]
fn headers_are_stored_only_when_needed() {
    // 64 KiB segments: a fanout of 64, so the 30 entries below stay in one
    // leaf and the object counts are exact.
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(64 << 10)
            .with_memory_limit(16 << 20),
    )
    .unwrap();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mt = Memtable::new(&group, &pool).unwrap();
    let dk = |key: &str| DecoratedKey::from_bytes(key.to_string()).unwrap();
    let row = |key: &str, t: i64| {
        Mutation::builder(DecoratedKey::from_bytes(key.to_string()).unwrap())
            .cell("c", 0, Cell::live(vec![7u8; 20], ts(t)))
            .build()
            .unwrap()
    };
    let empty = |key: &str| Mutation::builder(dk(key)).build().unwrap();
    // Applies `m` with a failure at each of its allocations in turn, then
    // without; returns how many allocation points failed.
    let apply_through_failures = |m: &Mutation| {
        let mut n = 1;
        loop {
            let before_scan = scan(&mt);
            let before = mt.stats();
            pool.fail_nth_allocation(n);
            let result = mt.apply(m);
            pool.fail_nth_allocation(0);
            match result {
                Ok(()) => return n - 1,
                Err(e) => {
                    assert!(matches!(e, Error::OutOfMemory { .. }), "point {n}: {e}");
                    let after = mt.stats();
                    assert_eq!(after.region.objects, before.region.objects, "point {n}");
                    assert_eq!(after.region.object_bytes, before.region.object_bytes);
                    assert_eq!(after.partitions, before.partitions, "point {n}");
                    assert_eq!(scan(&mt), before_scan, "point {n}");
                    mt.check_invariants().unwrap();
                }
            }
            n += 1;
            assert!(n < 100, "apply never succeeded");
        }
    };
    // The first apply allocates the row's entry and the first leaf.
    let first = row("p0", 1);
    assert_eq!(apply_through_failures(&first), 2);
    let mut applied = vec![first];
    for i in 1..20 {
        let m = row(&format!("p{i}"), 1);
        mt.apply(&m).unwrap();
        applied.push(m);
    }
    // One leaf, and one object per partition: no header entries.
    assert_eq!(mt.stats().region.objects, 1 + 20);
    assert_eq!(mt.stats().partitions, 20);

    // Empty partitions: a header entry each.
    for i in 0..5 {
        let m = empty(&format!("e{i}"));
        assert_eq!(apply_through_failures(&m), 1);
        applied.push(m);
    }
    assert_eq!(mt.stats().region.objects, 1 + 20 + 5);
    assert_eq!(mt.stats().partitions, 25);
    // An empty mutation of a partition that is there changes nothing.
    mt.apply(&empty("p1")).unwrap();
    mt.apply(&empty("e1")).unwrap();
    assert_eq!(mt.stats().region.objects, 1 + 20 + 5);

    // A partition tombstone over a rows-only partition: its row goes, its
    // header comes.
    let delete = partition_delete("p3");
    assert_eq!(apply_through_failures(&delete), 1);
    applied.push(delete);
    assert_eq!(mt.stats().region.objects, 1 + 20 + 5);
    // An empty header that stops being empty is replaced.
    let delete = partition_delete("e2");
    assert_eq!(apply_through_failures(&delete), 1);
    applied.push(delete);
    assert_eq!(mt.stats().region.objects, 1 + 20 + 5);
    // A static row added to a rows-only partition.
    let stat = Mutation::builder(dk("p4"))
        .static_cell(3, Cell::live("s", ts(6)))
        .build()
        .unwrap();
    assert_eq!(apply_through_failures(&stat), 1);
    applied.push(stat);
    assert_eq!(mt.stats().region.objects, 1 + 20 + 5 + 1);
    mt.full_compaction().unwrap();
    mt.check_invariants().unwrap();
    assert_eq!(scan(&mt), Mutation::reconcile_all(applied.iter().cloned()));
    assert_eq!(mt.stats().partitions, 25);
    assert_eq!(mt.stats().rows, 19);
}
