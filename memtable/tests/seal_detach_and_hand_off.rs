//! Sealing refuses writes with a clear error and grounds the region; a
//! scan open on a memtable marked flushed continues from its next partition
//! in the replacement source the owner provides, and lets go of the
//! memtable; detaching takes the region out of its group.

mod common;

use std::sync::{Arc, Mutex};

use memtable::{Error, Memtable, ReplacementSource};
use mutation::{
    Cell, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation, PartitionRange,
    Timestamp, from_mutations,
};

fn partition(i: usize) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("key{i}")).unwrap())
        .cell(
            "a",
            0,
            Cell::live(format!("v{i}"), Timestamp::from_micros(1)),
        )
        .cell(
            "b",
            0,
            Cell::live(format!("w{i}"), Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

/// The "sstable": the same mutations, read through mutation's reader; it
/// records the ranges it was asked for.
struct Copy {
    data: Vec<Mutation>,
    asked: Mutex<Vec<PartitionRange>>,
}

impl ReplacementSource for Copy {
    fn make_reader(
        &self,
        range: PartitionRange,
        _slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error> {
        self.asked.lock().unwrap().push(range.clone());
        let rest: Vec<Mutation> = self
            .data
            .iter()
            .filter(|m| range.contains(m.key()))
            .cloned()
            .collect();
        Ok(Box::new(from_mutations(rest)))
    }
}

#[test]
fn sealed_memtable_refuses_writes_and_is_no_flush_candidate() {
    let (_pool, group, mt) = common::setup(16 << 20);
    mt.apply(&partition(1)).unwrap();
    assert_eq!(group.largest_flushable_region(), Some(mt.region_id()));
    mt.seal();
    mt.seal(); // idempotent
    assert!(mt.is_sealed());
    assert_eq!(group.largest_flushable_region(), None);
    let err = mt.apply(&partition(2)).unwrap_err();
    assert!(matches!(err, Error::Sealed { .. }));
    assert!(err.to_string().contains("sealed"), "{err}");
    assert!(err.to_string().contains("0x6b657932"), "{err}"); // "key2"
    assert_eq!(common::scan(&mt).len(), 1);
}

#[test]
fn open_scan_continues_in_the_replacement_and_lets_go() {
    let (_pool, group, mt) = common::setup(16 << 20);
    let mut data: Vec<Mutation> = (0..10).map(partition).collect();
    for m in &data {
        mt.apply(m).unwrap();
    }
    data.sort_by(|a, b| a.key().cmp(b.key()));
    let mut reader = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    let mut got = Vec::new();
    // Read the first partition and the start of the second.
    while got
        .iter()
        .filter(|f| matches!(f, Fragment::PartitionStart { .. }))
        .count()
        < 2
    {
        got.push(reader.next().unwrap().unwrap());
    }
    got.push(reader.next().unwrap().unwrap()); // a row of the second

    mt.seal();
    let source = Arc::new(Copy {
        data: data.clone(),
        asked: Mutex::new(Vec::new()),
    });
    mt.mark_flushed(source.clone());
    mt.detach_from_region_group();
    assert!(mt.is_flushed() && mt.is_detached());
    assert_eq!(
        group.real_usage(),
        0,
        "detached: the group no longer counts it"
    );
    let weak = Arc::downgrade(&mt);
    drop(mt); // the owner lets go; the reader still holds it

    assert!(!reader.is_handed_off());
    while let Some(f) = reader.next().unwrap() {
        got.push(f);
    }
    assert!(reader.is_handed_off());
    assert!(
        weak.upgrade().is_none(),
        "the reader let go of the memtable"
    );
    // Exactly one hand-off, for the range after the second partition.
    let asked = source.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(!asked[0].contains(data[1].key()));
    assert!(asked[0].contains(data[2].key()));
    // The stream is whole and valid: the memtable's part, then the copy's.
    mutation::validate_stream(&got).unwrap();
    let mut replay = mutation::FragmentsReader::new(got);
    assert_eq!(common::read_all(&mut replay), data);
}

#[test]
fn flush_reader_reports_progress_until_detached() {
    let (_pool, _group, mt) = common::setup(16 << 20);
    for i in 0..50 {
        mt.apply(&partition(i)).unwrap();
    }
    mt.seal();
    let reported = Arc::new(Mutex::new(Vec::new()));
    let sink = reported.clone();
    let mut flush: memtable::MemtableReader =
        mt.make_flush_reader(move |b| sink.lock().unwrap().push(b));
    let mut n = 0;
    while n < 20 {
        flush.next().unwrap().unwrap();
        n += 1;
    }
    let so_far: usize = reported.lock().unwrap().iter().sum();
    assert!(so_far > 0);
    let held = mt.stats().region.used_bytes;
    assert!(so_far <= held);
    let _ = common::read_all(&mut flush);
    let total: usize = reported.lock().unwrap().iter().sum();
    assert!(total <= held, "{total} reported, {held} held");
    // At the end the whole region has been reported, index nodes included.
    assert_eq!(total, held);

    // After detaching, a flush reader reports nothing (and is a plain scan).
    mt.detach_from_region_group();
    let silent = Arc::new(Mutex::new(0usize));
    let sink = silent.clone();
    let mut flush = mt.make_flush_reader(move |b| *sink.lock().unwrap() += b);
    assert_eq!(common::read_all(&mut flush).len(), 50);
    assert_eq!(*silent.lock().unwrap(), 0);
    let _ = Memtable::is_empty(&mt);
}
