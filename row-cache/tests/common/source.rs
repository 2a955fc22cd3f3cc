//! An in-memory underlying source: partitions held encoded, decoded and
//! sliced on every read, as an sstable read decodes its blocks. Shared by
//! the integration tests and the bench.
#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test binary uses a different subset of the helpers"
)]

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use mutation::{
    ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange, from_mutations,
};
use row_cache::UnderlyingSource;

/// Partitions by key, each `Mutation::encode`d, with a checksum as an
/// sstable block has one.
#[derive(Default)]
pub struct MemorySource {
    data: Mutex<BTreeMap<DecoratedKey, (Vec<u8>, u32)>>,
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
            Some((bytes, _)) => Mutation::decode(bytes).unwrap().merge(m.clone()).unwrap(),
            None => m.clone(),
        };
        let bytes = merged.encode();
        let crc = crc32c::crc32c(&bytes);
        data.insert(m.key().clone(), (bytes, crc));
    }

    pub fn readers(&self) -> usize {
        self.readers.load(Ordering::Relaxed)
    }

    /// The partitions of `range`, restricted to `slice`.
    pub fn read(&self, range: &PartitionRange, slice: &ClusteringRange) -> Vec<Mutation> {
        let data = self.data.lock().unwrap();
        data.iter()
            .filter(|(k, _)| range.contains(k))
            .map(|(_, (bytes, crc))| {
                assert_eq!(crc32c::crc32c(bytes), *crc, "block checksum");
                restrict(&Mutation::decode(bytes).unwrap(), slice)
            })
            .collect()
    }
}

impl UnderlyingSource for MemorySource {
    fn make_reader(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error> {
        self.readers.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(from_mutations(self.read(&range, &slice))))
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
