//! A sealed memtable hands its partitions over to another region of its
//! pool by a region merge: the index is freed, every entry's string keeps
//! its handle, and the receiver reads each partition where it lies and
//! frees it object by object. Not while a reader is open, not before the
//! seal; afterwards the memtable is empty.

mod common;

use logalloc::Region;
use memtable::handover::HandedPartition;
use mutation::{
    Bound, Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Row, Timestamp, Tombstone,
};

fn ts(t: i64) -> Timestamp {
    Timestamp::from_micros(t)
}

/// Partitions of every shape: rows only, a header (partition tombstone,
/// static row, range tombstone) with rows, a header alone, and one row
/// whose value is chunked (above the largest object of 64 KiB segments).
fn partitions() -> Vec<Mutation> {
    let mut out = Vec::new();
    for i in 0..200 {
        let key = DecoratedKey::from_bytes(format!("pk{i:04}")).unwrap();
        let mut b = Mutation::builder(key);
        match i % 4 {
            0 => {
                for r in 0..5 {
                    b = b.cell(format!("r{r}"), 0, Cell::live(vec![i as u8; 40], ts(10)));
                }
            }
            1 => {
                b = b
                    .partition_tombstone(Tombstone::new(ts(1), 7))
                    .static_row(Row::new().with_cell(3, Cell::live("s", ts(10))))
                    .range_tombstone_bounds(
                        Bound::Included("r7"),
                        Bound::Excluded("r9"),
                        Tombstone::new(ts(5), 8),
                    );
                for r in 0..3 {
                    b = b.cell(format!("r{r}"), 1, Cell::live(vec![1u8; 10], ts(10)));
                }
            }
            2 => b = b.partition_tombstone(Tombstone::new(ts(3), 9)),
            _ => {
                b = b.cell("big", 0, Cell::live(vec![9u8; 100 << 10], ts(10)));
            }
        }
        out.push(b.build().unwrap());
    }
    out
}

#[test]
fn partitions_change_hands_without_a_copy() {
    let (pool, _group, memtable) = common::setup(64 << 20);
    let written = partitions();
    for m in &written {
        memtable.apply(m).unwrap();
    }
    let expected = common::scan(&memtable);
    assert_eq!(expected.len(), written.len());
    let held = memtable.stats().region;

    // Not before the seal.
    assert!(memtable.hand_over(&pool, |_| ()).unwrap().is_none());
    memtable.seal();
    // Not while a reader is open: it reads the memtable's own region.
    let reader = memtable
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    assert!(memtable.hand_over(&pool, |_| ()).unwrap().is_none());
    drop(reader);

    let mut cache = Region::new(&pool);
    let keep = cache.alloc_bytes(b"the receiver's own").unwrap();
    let before = cache.stats();
    let (parts, index_bytes) = memtable
        .hand_over(&pool, |handed| {
            let index_bytes = handed.index_bytes_freed();
            let (region, parts) = handed.into_parts();
            cache.merge(region).unwrap();
            (parts, index_bytes)
        })
        .unwrap()
        .expect("sealed, no reader open");
    assert!(index_bytes > 0, "the index was freed");
    let strings: usize = parts.iter().map(HandedPartition::bytes).sum();
    let after = cache.stats();
    // Nothing was allocated: the receiver holds its own object and the
    // entries' strings (chunks carry a small index object each).
    assert_eq!(
        after.object_bytes - before.object_bytes + index_bytes,
        held.object_bytes
    );
    assert!(after.object_bytes - before.object_bytes >= strings);
    assert!(memtable.is_handed_over());
    assert_eq!(memtable.stats().region.objects, 0);
    assert!(
        memtable
            .make_reader_opt(PartitionRange::full(), ClusteringRange::full())
            .unwrap()
            .is_none()
    );

    // Each partition reads back where it lies, whole or sliced.
    let r1 = ClusteringRange::singular(mutation::ClusteringKey::try_from("r1").unwrap());
    {
        let view = cache.reader();
        assert_eq!(parts.len(), expected.len());
        for (p, m) in parts.iter().zip(&expected) {
            assert_eq!(p.key(), m.key());
            assert_eq!(&p.read(&view, &ClusteringRange::full()).unwrap(), m);
            let sliced = p.read(&view, &r1).unwrap();
            assert_eq!(sliced.rows().len(), usize::from(m.rows().len() > 1));
            assert!(p.heap_bytes() > 0);
        }
    }
    // Freed object by object, they leave only the receiver's own object.
    for p in &parts {
        for h in p.handles() {
            cache.free(h).unwrap();
        }
    }
    assert_eq!(cache.stats().objects, 1);
    assert_eq!(&*cache.get(keep).unwrap(), b"the receiver's own");
    cache.check_invariants().unwrap();
    // Once only.
    assert!(memtable.hand_over(&pool, |_| ()).unwrap().is_none());
}
