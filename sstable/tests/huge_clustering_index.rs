//! A partition whose clustering-block index would exceed the 64 MiB block
//! limit (about a thousand rows with 60 KB clustering keys, one Data block
//! each) still makes a readable, verifiable sstable: the writer samples the
//! clustering blocks instead of writing an Index block the reader refuses.

mod common;

use common::*;
use std::ops::Bound;

use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Mutation, Timestamp, Tombstone,
};

fn ck(i: u32) -> Vec<u8> {
    let mut k = vec![0x5a; 60_000];
    k[..4].copy_from_slice(&i.to_be_bytes());
    k
}

#[test]
fn oversized_clustering_block_index_is_sampled_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let key = DecoratedKey::from_bytes(b"wide".to_vec()).unwrap();
    // A partition this wide (69 MB) is more than one mutation may carry
    // (`mutation::limits::MAX_MUTATION_SIZE`); like a memtable, the test
    // builds it from several mutations of at most 200 rows, merged.
    const ROWS: u32 = 1150;
    const ROWS_PER_MUTATION: u32 = 200;
    let mut m = Mutation::new(key.clone());
    for first in (0..ROWS).step_by(ROWS_PER_MUTATION as usize) {
        let mut b = Mutation::builder(key.clone());
        for i in first..(first + ROWS_PER_MUTATION).min(ROWS) {
            b = b.cell(ck(i), 0, Cell::live(vec![1u8], Timestamp::from_micros(5)));
        }
        m = m.merge(b.build().unwrap()).unwrap();
    }
    // An older range tombstone over a stretch in the middle: slices that
    // start inside it must re-open it, whichever sampled block they start
    // from.
    let tombstone = Mutation::builder(key.clone())
        .range_tombstone_bounds(
            Bound::Included(ck(300)),
            Bound::Excluded(ck(900)),
            Tombstone::new(Timestamp::from_micros(1), 0),
        )
        .build()
        .unwrap();
    let m = m.merge(tombstone).unwrap();
    let (fragments, _) = canonical(std::slice::from_ref(&m));
    let table = write(dir.path(), &fragments, small_options(false));
    // 1150 blocks of 60 KB keys: a full clustering-block index would be
    // about 69 MB, past the 64 MiB block limit.
    assert!(table.statistics().data_blocks > 1150);
    assert!(
        table.statistics().index_size < 9 << 20,
        "{}",
        table.statistics().index_size
    );
    table.verify().unwrap();
    let slice = ClusteringRange::singular(ClusteringKey::new(ck(1000)).unwrap());
    let before = table.data_blocks_read();
    assert_eq!(
        table.read_slice(&key, &slice).unwrap().unwrap(),
        expected_slice(&m, &slice)
    );
    let read = table.data_blocks_read() - before;
    assert!(read < 40, "slice read {read} blocks");
    assert_eq!(table.read_partition(&key).unwrap().unwrap(), m.fragments());
    let k = |i| ClusteringKey::new(ck(i)).unwrap();
    for (start, end) in [
        (Bound::Unbounded, Bound::Excluded(k(3))),
        (Bound::Included(k(301)), Bound::Included(k(305))),
        (Bound::Excluded(k(555)), Bound::Excluded(k(905))),
        (Bound::Included(k(899)), Bound::Included(k(900))),
        (Bound::Included(k(1140)), Bound::Unbounded),
    ] {
        let slice = ClusteringRange::new(start, end).unwrap();
        assert_eq!(
            table.read_slice(&key, &slice).unwrap().unwrap(),
            expected_slice(&m, &slice),
            "slice {slice}"
        );
    }
}

/// About a thousand partitions with 60 KB keys, one per Index block, would
/// need a Summary past the 64 MiB block limit: the writer says so instead
/// of committing an sstable whose Summary no reader accepts.
#[test]
fn oversized_summary_is_refused_by_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = sstable::Writer::create(dir.path(), small_options(false)).unwrap();
    let mut ms: Vec<Mutation> = (0..1150u32)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(ck(i)).unwrap())
                .cell(
                    vec![1u8],
                    0,
                    Cell::live(vec![1u8], Timestamp::from_micros(1)),
                )
                .build()
                .unwrap()
        })
        .collect();
    ms.sort_by(|a, b| a.key().cmp(b.key()));
    let mut result = Ok(());
    'write: for m in &ms {
        for f in m.fragments() {
            result = w.write(&f);
            if result.is_err() {
                break 'write;
            }
        }
    }
    let err = match result {
        Err(e) => e,
        Ok(()) => w.commit().unwrap_err(),
    };
    assert!(
        matches!(err, sstable::Error::TooLarge { what, .. } if what.starts_with("summary")),
        "{err}"
    );
    // Nothing was committed.
    let listed = sstable::SstableDirectory::open(dir.path()).unwrap();
    assert!(listed.generations().is_empty());
}
