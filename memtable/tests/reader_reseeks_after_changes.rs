//! A reader holds no lock between `next()` calls. Applies between its
//! calls (node splits, rows removed by tombstones, new partitions) and
//! compaction of the region do not derail it: it re-seeks from the last
//! fragment it emitted, its stream stays valid, it emits every row that was
//! there all along exactly once, and it sees each row whole.

mod common;

use std::collections::BTreeSet;
use std::ops::Bound;

use logalloc::{PoolConfig, SegmentPool};
use memtable::Memtable;
use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation,
    PartitionRange, StreamValidator, Timestamp, Tombstone,
};
use region_group::{ReclaimConfig, RegionGroup};

fn cell(pk: &str, ck: &str, ts: i64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(pk.to_owned()).unwrap())
        .cell(
            ck.to_owned(),
            0,
            Cell::live(format!("{pk}/{ck}"), Timestamp::from_micros(ts)),
        )
        .build()
        .unwrap()
}

#[test]
fn scan_survives_applies_and_compaction_between_calls() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4 << 10)
            .with_memory_limit(64 << 20),
    )
    .unwrap();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mt = Memtable::new(&group, &pool).unwrap();
    // Stable rows: even clustering keys of 20 partitions.
    let mut stable = BTreeSet::new();
    for p in 0..20 {
        for c in (0..40).step_by(2) {
            let (pk, ck) = (format!("p{p:02}"), format!("{c:03}"));
            mt.apply(&cell(&pk, &ck, 1)).unwrap();
            stable.insert((pk, ck));
        }
    }
    let mut reader = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    let mut validator = StreamValidator::new();
    let mut seen = BTreeSet::new();
    let mut current = String::new();
    let mut step = 0;
    while let Some(f) = reader.next().unwrap() {
        validator.check(&f).unwrap();
        match &f {
            Fragment::PartitionStart { key, .. } => {
                current = String::from_utf8(key.key().as_bytes().to_vec()).unwrap();
            }
            Fragment::ClusteringRow { key, row } => {
                let ck = String::from_utf8(key.as_bytes().to_vec()).unwrap();
                // Each row whole: its one cell holds its own name.
                if let Some(Cell::Live { value, .. }) = row.cells.get(&0) {
                    assert_eq!(&value[..], format!("{current}/{ck}").as_bytes());
                }
                assert!(seen.insert((current.clone(), ck)), "a row emitted twice");
            }
            _ => {}
        }
        // Between calls: odd rows come and go, new partitions appear, the
        // index splits and shrinks, the region is compacted.
        step += 1;
        let p = step % 23;
        mt.apply(&cell(
            &format!("p{p:02}"),
            &format!("{:03}", (step * 7 % 40) | 1),
            2,
        ))
        .unwrap();
        if step % 5 == 0 {
            let key = DecoratedKey::from_bytes(format!("p{:02}", step % 20)).unwrap();
            let range = ClusteringRange::new(
                Bound::Included(ClusteringKey::new(b"001".to_vec()).unwrap()),
                Bound::Included(ClusteringKey::new(b"001".to_vec()).unwrap()),
            )
            .unwrap();
            mt.apply(
                &Mutation::builder(key)
                    .range_tombstone(range, Tombstone::new(Timestamp::from_micros(3), 0))
                    .build()
                    .unwrap(),
            )
            .unwrap();
        }
        if step % 50 == 0 {
            mt.full_compaction().unwrap();
        }
    }
    validator.finish().unwrap();
    let missing: Vec<_> = stable.difference(&seen).collect();
    assert!(missing.is_empty(), "stable rows missed: {missing:?}");
    let _: &Memtable = &mt;
}
