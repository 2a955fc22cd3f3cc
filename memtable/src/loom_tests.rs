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
    from_mutations, to_mutations,
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

/// The partition `p` as a read of the memtable shows it, merged with an
/// older version of its row `a` ("old", at 1) as another source (an older
/// memtable or an sstable) holds it: the live value of `a`, if any.
fn merged_value_of_a(read: Vec<mutation::Fragment>) -> Option<String> {
    let older = from_mutations(vec![row("p", "a", "old", 1)]);
    let sources: Vec<Box<dyn FragmentReader>> = vec![
        Box::new(mutation::FragmentsReader::new(read)),
        Box::new(older),
    ];
    let mut merged = mutation::MergingReader::new(sources);
    let all = to_mutations(&mut merged).expect("valid stream");
    let m = all.first()?;
    let (ck, a) = m.rows().iter().next()?;
    let deleted = m
        .partition_tombstone()
        .max(
            m.range_tombstones()
                .tombstone_at(&mutation::Position::At(ck.clone())),
        )
        .max(a.tombstone);
    match a.cells.get(&0) {
        Some(Cell::Live {
            value, timestamp, ..
        }) if deleted.is_none_or(|t| t.timestamp < *timestamp) => {
            Some(String::from_utf8(value.to_vec()).expect("utf-8"))
        }
        _ => None,
    }
}

/// Issue 32's interleaving: a write ("new", at 3) was applied, a read of
/// its partition starts, and a partition delete (at 4) races it. The read
/// merged with the older version must show "new" (read before the delete)
/// or nothing (after it), never "old": the delete removes the row the
/// reader has not reached and puts its tombstone in the header the reader
/// has passed, and the reader looks at the header again.
fn delete_against_read(whole: bool, recheck: bool) {
    loom::model(move || {
        let mt = memtable();
        mt.apply(&row("p", "a", "new", 3)).expect("apply");
        let deleter = {
            let mt = mt.clone();
            thread::spawn(move || {
                let delete = Mutation::builder(DecoratedKey::from_bytes("p").expect("key"))
                    .partition_tombstone(mutation::Tombstone::new(Timestamp::from_micros(4), 0))
                    .build()
                    .expect("mutation");
                mt.apply(&delete).expect("apply");
            })
        };
        let reader = mt
            .make_reader_opt(
                PartitionRange::single_key(DecoratedKey::from_bytes("p").expect("key")),
                ClusteringRange::full(),
            )
            .expect("reader")
            .expect("the partition is there");
        let mut reader = if recheck {
            reader
        } else {
            reader.without_header_recheck()
        };
        let read = if whole {
            reader
                .next_mutation()
                .expect("read")
                .map(|m| m.fragments())
                .unwrap_or_default()
        } else {
            let mut read = Vec::new();
            while let Some(f) = reader.next().expect("read") {
                read.push(f);
            }
            read
        };
        deleter.join().expect("deleter");
        let value = merged_value_of_a(read);
        assert!(
            value.as_deref() != Some("old"),
            "the read shows the partition's previous version"
        );
    });
}

#[test]
fn loom_delete_against_streaming_read() {
    delete_against_read(false, true);
}

#[test]
fn loom_delete_against_whole_read() {
    delete_against_read(true, true);
}

/// The counterparts: without the header check loom finds the stale read.
#[test]
#[should_panic(expected = "the read shows the partition's previous version")]
fn loom_delete_against_streaming_read_without_the_recheck_is_stale() {
    delete_against_read(false, false);
}

#[test]
#[should_panic(expected = "the read shows the partition's previous version")]
fn loom_delete_against_whole_read_without_the_recheck_is_stale() {
    delete_against_read(true, false);
}

/// A hand-over racing a reader being made: either the reader was counted
/// first (the hand-over declines, and the reader reads everything), or the
/// hand-over went first (the reader finds nothing: the receiver has it,
/// and reads it back whole from the region it merged in). Never a reader
/// left on a region that was given away.
#[test]
fn loom_hand_over_against_a_reader_being_made() {
    loom::model(|| {
        let pool = SegmentPool::new(
            PoolConfig::default()
                .with_segment_size(4 << 10)
                .with_memory_limit(64 << 10)
                .with_bulk_segments(1),
        )
        .expect("pool");
        let group = RegionGroup::new("loom", ReclaimConfig::default());
        let mt = Memtable::new(&group, &pool).expect("memtable");
        let m = row("p", "a", "v", 1);
        mt.apply(&m).expect("apply");
        mt.seal();
        let reader = {
            let mt = mt.clone();
            thread::spawn(move || {
                mt.make_reader_opt(PartitionRange::full(), ClusteringRange::full())
                    .expect("reader")
                    .map(|mut r| to_mutations(&mut r).expect("valid stream"))
            })
        };
        let mut into = logalloc::Region::new(&pool);
        let handed = mt
            .hand_over(&pool, |handed| {
                let (region, parts) = handed.into_parts();
                into.merge(region).expect("same pool");
                let view = into.reader();
                parts
                    .iter()
                    .map(|p| p.read(&view, &ClusteringRange::full()).expect("reads"))
                    .collect::<Vec<_>>()
            })
            .expect("hand-over");
        let seen = reader.join().expect("reader");
        match (&handed, &seen) {
            // The reader went first and finished before the hand-over.
            (Some(got), Some(read)) => {
                assert_eq!(got, &[m.clone()]);
                assert_eq!(read, &[m.clone()]);
            }
            (Some(got), None) => assert_eq!(got, &[m.clone()]),
            (None, Some(read)) => {
                assert_eq!(read, &[m.clone()]);
                assert!(!mt.is_handed_over());
            }
            (None, None) => panic!("the data went nowhere"),
        }
    });
}
