//! Loom models of the memtable's own synchronisation, running the real
//! memtable (its lock, logalloc's region lock and region-group's listener
//! all come from loom under `cfg(loom)`).
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p replmem-memtable
//! --release --target-dir target/loom -- loom_`

use loom::thread;

use logalloc::{PoolConfig, SegmentPool};
use mutation::{
    Cell, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange, Timestamp,
    to_mutations,
};
use region_group::{ReclaimConfig, RegionGroup};

use crate::sync::Arc;
use crate::{Error, Memtable};

fn memtable() -> Arc<Memtable> {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4 << 10)
            .with_memory_limit(64 << 10)
            .with_bulk_segments(1),
    )
    .expect("pool");
    let group = RegionGroup::new("loom", ReclaimConfig::default());
    Memtable::new(&group, &pool).expect("memtable")
}

fn row(pk: &str, ck: &str, value: &str, ts: i64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(pk.to_owned()).expect("key"))
        .cell(
            ck.to_owned(),
            0,
            Cell::live(value.to_owned(), Timestamp::from_micros(ts)),
        )
        .build()
        .expect("mutation")
}

/// A reader running while another thread applies sees each row whole,
/// either before or after the apply, and its stream is valid.
#[test]
fn loom_apply_against_read() {
    loom::model(|| {
        let mt = memtable();
        mt.apply(&row("p", "a", "old", 1)).expect("apply");
        let writer = {
            let mt = mt.clone();
            thread::spawn(move || {
                mt.apply(&row("p", "a", "new", 2)).expect("apply");
                mt.apply(&row("p", "b", "b", 2)).expect("apply");
            })
        };
        let mut reader = mt
            .make_reader(PartitionRange::full(), ClusteringRange::full())
            .expect("reader");
        let seen = to_mutations(&mut reader).expect("valid stream");
        assert_eq!(seen.len(), 1);
        let a = seen[0].rows().values().next().expect("row a");
        let value = match a.cells.get(&0) {
            Some(Cell::Live { value, .. }) => value.clone(),
            other => panic!("unexpected cell {other:?}"),
        };
        assert!(value == "old" || value == "new");
        writer.join().expect("writer");
        let mut after = mt
            .make_reader(PartitionRange::full(), ClusteringRange::full())
            .expect("reader");
        let all = to_mutations(&mut after).expect("valid stream");
        assert_eq!(all[0].rows().len(), 2);
        let _ = reader.next();
    });
}

/// Sealing against an apply: the apply either lands (and is read back) or
/// is refused as sealed; after both, the memtable is sealed and grounded.
#[test]
fn loom_seal_against_apply() {
    loom::model(|| {
        let mt = memtable();
        let sealer = {
            let mt = mt.clone();
            thread::spawn(move || mt.seal())
        };
        let outcome = mt.apply(&row("p", "a", "v", 1));
        sealer.join().expect("sealer");
        assert!(mt.is_sealed());
        let stored = !mt.is_empty();
        match outcome {
            Ok(()) => assert!(stored),
            Err(Error::Sealed { .. }) => assert!(!stored),
            Err(other) => panic!("unexpected error {other}"),
        }
        assert!(matches!(
            mt.apply(&row("p", "b", "v", 1)),
            Err(Error::Sealed { .. })
        ));
    });
}
