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

fn ts(t: i64) -> Timestamp {
    Timestamp::from_micros(t)
}

#[test]
fn failure_at_every_allocation_point_changes_nothing() {
    // 4 KiB segments: fanout 12 and a 409-byte largest object, so these
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
    // The mutations above exercise many allocation points (keys, values,
    // chunk indexes, node splits, separators, new roots).
    assert!(total_points > 100, "only {total_points} allocation points");
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

/// Partitions with an empty header share one stored header value, which
/// the first apply that needs it allocates. If that apply fails at any
/// point, the memtable forgets the value with everything else; later
/// partitions, and a header that stops being empty, leave the shared value
/// to the others.
#[test]
fn the_shared_empty_header_survives_failures_and_header_changes() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4 << 10)
            .with_memory_limit(16 << 20),
    )
    .unwrap();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mt = Memtable::new(&group, &pool).unwrap();
    let row = |key: &str, t: i64| {
        Mutation::builder(DecoratedKey::from_bytes(key.to_string()).unwrap())
            .cell("c", 0, Cell::live(vec![7u8; 20], ts(t)))
            .build()
            .unwrap()
    };
    // The first apply, failing at each of its allocations in turn.
    let first = row("p0", 1);
    let mut n = 1;
    loop {
        pool.fail_nth_allocation(n);
        let result = mt.apply(&first);
        pool.fail_nth_allocation(0);
        match result {
            Ok(()) => break,
            Err(e) => {
                assert!(matches!(e, Error::OutOfMemory { .. }), "point {n}: {e}");
                assert_eq!(mt.stats().region.objects, 0, "point {n}");
                assert!(scan(&mt).is_empty());
                mt.check_invariants().unwrap();
            }
        }
        n += 1;
        assert!(n < 100, "apply never succeeded");
    }
    assert!(n > 2, "the first apply allocates key, header and row");
    let mut applied = vec![first];
    for i in 1..20 {
        let m = row(&format!("p{i}"), 1);
        mt.apply(&m).unwrap();
        applied.push(m);
    }
    // Three objects per partition (header key, row key, row value) plus
    // the one shared header, and the index nodes.
    let objects = mt.stats().region.objects;
    let shared = 3 * 20 + 1;
    assert!((shared..shared + 10).contains(&objects), "{objects}");
    // A header that stops being empty gets its own value; the shared one
    // stays for the others.
    let delete = Mutation::builder(DecoratedKey::from_bytes("p3").unwrap())
        .partition_tombstone(Tombstone::new(ts(5), 0))
        .build()
        .unwrap();
    mt.apply(&delete).unwrap();
    applied.push(delete);
    mt.full_compaction().unwrap();
    mt.check_invariants().unwrap();
    assert_eq!(scan(&mt), Mutation::reconcile_all(applied.iter().cloned()));
    // New partitions still share it.
    let more = row("p-late", 6);
    mt.apply(&more).unwrap();
    applied.push(more);
    assert_eq!(scan(&mt), Mutation::reconcile_all(applied));
}
