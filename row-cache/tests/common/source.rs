//! An in-memory underlying source: partitions held encoded, decoded and
//! sliced on every read, as an sstable read decodes its blocks. Shared by
//! the integration tests and the bench.
#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test binary uses a different subset of the helpers"
)]

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mutation::{
    ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation, PartitionRange, RingPosition,
};
use row_cache::UnderlyingSource;

/// A partition as stored: encoded, with a checksum as an sstable block
/// has one.
struct Stored {
    bytes: Vec<u8>,
    crc: u32,
}

type Snapshot = Arc<BTreeMap<DecoratedKey, Arc<Stored>>>;

/// Partitions by key. A reader works on a snapshot (as a reader of an
/// sstable set does) and decodes one partition at a time.
#[derive(Default)]
pub struct MemorySource {
    data: Mutex<Snapshot>,
    /// Readers opened.
    pub readers: AtomicUsize,
}

impl MemorySource {
    pub fn new() -> Self {
        Self::default()
    }

    /// Merges `m` in (what committing a flushed sstable does to reads).
    pub fn apply(&self, m: &Mutation) {
        let mut data = self.data.lock().unwrap();
        let merged = match data.get(m.key()) {
            Some(s) => Mutation::decode(&s.bytes)
                .unwrap()
                .merge(m.clone())
                .unwrap(),
            None => m.clone(),
        };
        let bytes = merged.encode();
        let crc = crc32c::crc32c(&bytes);
        Arc::make_mut(&mut data).insert(m.key().clone(), Arc::new(Stored { bytes, crc }));
    }

    pub fn readers(&self) -> usize {
        self.readers.load(Ordering::Relaxed)
    }
}

impl UnderlyingSource for MemorySource {
    fn make_reader(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error> {
        self.readers.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(SnapshotReader {
            map: Arc::clone(&self.data.lock().unwrap()),
            range,
            slice,
            last: None,
            pending: VecDeque::new(),
        }))
    }
}

/// Reads a snapshot lazily: one partition decoded per partition read.
struct SnapshotReader {
    map: Snapshot,
    range: PartitionRange,
    slice: ClusteringRange,
    last: Option<DecoratedKey>,
    pending: VecDeque<Fragment>,
}

impl SnapshotReader {
    fn next_key(&self) -> Option<DecoratedKey> {
        let from = match (&self.last, self.range.start()) {
            (Some(k), _) => Bound::Excluded(k),
            (None, Bound::Included(RingPosition::Key(k))) => Bound::Included(k),
            (None, Bound::Excluded(RingPosition::Key(k))) => Bound::Excluded(k),
            (None, _) => Bound::Unbounded,
        };
        self.map
            .range::<DecoratedKey, _>((from, Bound::Unbounded))
            .map(|(k, _)| k)
            .skip_while(|k| self.range.is_before(k))
            .take_while(|k| !self.range.is_after(k))
            .next()
            .cloned()
    }
}

impl FragmentReader for SnapshotReader {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        if let Some(f) = self.pending.pop_front() {
            return Ok(Some(f));
        }
        let Some(key) = self.next_key() else {
            return Ok(None);
        };
        let stored = &self.map[&key];
        assert_eq!(crc32c::crc32c(&stored.bytes), stored.crc, "block checksum");
        let m = Mutation::decode(&stored.bytes)?;
        self.pending = restrict(&m, &self.slice).into_fragments().collect();
        self.last = Some(key);
        Ok(self.pending.pop_front())
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        self.pending.clear();
        self.range = range;
        Ok(())
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        self.pending.clear();
        Ok(())
    }
}

/// `m` restricted to the clustering `slice`, as a reader with that slice
/// must return it: partition tombstone and static row kept, rows in the
/// slice, range tombstones clipped to it.
pub fn restrict(m: &Mutation, slice: &ClusteringRange) -> Mutation {
    let mut b = Mutation::builder(m.key().clone());
    if let Some(t) = m.partition_tombstone() {
        b = b.partition_tombstone(t);
    }
    if let Some(s) = m.static_row() {
        b = b.static_row(s.clone());
    }
    for (k, r) in m.rows() {
        if slice.contains(k) {
            b = b.row(k.clone(), r.clone());
        }
    }
    let (s, e) = (slice.start_position(), slice.end_position());
    for rt in m.range_tombstones().to_range_tombstones() {
        let start = rt.range.start_position().max(s.clone());
        let end = rt.range.end_position().min(e.clone());
        if start < end {
            let range = ClusteringRange::from_positions(&start, &end).expect("clipped range");
            b = b.range_tombstone(range, rt.tombstone);
        }
    }
    b.build().expect("a restriction of a valid mutation")
}
