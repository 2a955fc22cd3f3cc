//! Helpers shared by the integration tests: flushing mutations into the
//! set, reading everything back as a "live view", and checking the
//! directory holds nothing but the set's files.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::collections::BTreeMap;
use std::path::Path;

use compaction::{JobOptions, MaxPurgeable, SstableSet};
use mutation::{
    Cell, DecoratedKey, FragmentReader, MergingReader, Mutation, Row, Timestamp, from_mutations,
    to_mutations,
};
use sstable::{Sstable, WriterOptions};

/// Small blocks and buffers, so tiny tables still have several blocks.
pub(crate) fn writer_options() -> WriterOptions {
    let mut o = WriterOptions::default();
    o.block_size = 512;
    o.index_block_size = 256;
    o.io_buffer = 4096;
    o
}

/// Writes `mutations` as one sstable in the set's data directory and adds
/// it to `set`.
pub(crate) fn flush(set: &SstableSet, mutations: Vec<Mutation>) -> u64 {
    let dir = set.dir().expect("a set in a directory").to_path_buf();
    flush_into(set, &dir, mutations)
}

/// Writes `mutations` as one sstable in `dir`, one of the set's
/// directories (a flush directory), and adds it to `set`.
pub(crate) fn flush_into(set: &SstableSet, dir: &Path, mutations: Vec<Mutation>) -> u64 {
    let mut reader = from_mutations(mutations);
    let mut w = set.create_writer(dir, writer_options()).unwrap();
    w.write_all(&mut reader).unwrap();
    let committed = w.commit().unwrap();
    set.add(Sstable::open(dir, committed.generation).unwrap());
    committed.generation
}

/// Everything the set (and `memtable`) holds, reconciled.
pub(crate) fn read_all(set: &SstableSet, memtable: &[Mutation]) -> Vec<Mutation> {
    let snapshot = set.snapshot();
    let mut readers: Vec<Box<dyn FragmentReader>> = snapshot
        .handles()
        .iter()
        .map(|h| Box::new(h.sstable().scan()) as Box<dyn FragmentReader>)
        .collect();
    readers.push(Box::new(from_mutations(memtable.to_vec())));
    to_mutations(&mut MergingReader::new(readers)).unwrap()
}

fn live_value(cell: &Cell, now: u32) -> Option<Vec<u8>> {
    match cell {
        Cell::Live { value, ttl, .. } if ttl.is_none_or(|t| t.expiry() > now) => {
            Some(value.to_vec())
        }
        _ => None,
    }
}

fn row_view(out: &mut BTreeMap<String, Vec<u8>>, prefix: String, row: &Row, now: u32) {
    if let Some(m) = row.marker
        && m.ttl.is_none_or(|t| t.expiry() > now)
    {
        out.insert(format!("{prefix}/marker"), Vec::new());
    }
    for (col, cell) in &row.cells {
        if let Some(v) = live_value(cell, now) {
            out.insert(format!("{prefix}/{col}"), v);
        }
    }
}

/// What a read at `now` returns: every live, unexpired cell and marker.
pub(crate) fn view(mutations: &[Mutation], now: u32) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for m in mutations {
        let pk = String::from_utf8_lossy(m.key().key().as_bytes()).into_owned();
        if let Some(row) = m.static_row() {
            row_view(&mut out, format!("{pk}/static"), row, now);
        }
        for (ck, row) in m.rows() {
            let ck = String::from_utf8_lossy(ck.as_bytes()).into_owned();
            row_view(&mut out, format!("{pk}/{ck}"), row, now);
        }
    }
    out
}

/// The smallest timestamp anywhere in `m`.
pub(crate) fn min_timestamp(m: &Mutation) -> Option<Timestamp> {
    let mut min: Option<Timestamp> = None;
    let mut note = |t: Timestamp| min = Some(min.map_or(t, |m| m.min(t)));
    if let Some(t) = m.partition_tombstone() {
        note(t.timestamp);
    }
    for (_, t) in m.range_tombstones().changes() {
        if let Some(t) = t {
            note(t.timestamp);
        }
    }
    for row in m.static_row().into_iter().chain(m.rows().values()) {
        if let Some(mk) = row.marker {
            note(mk.timestamp);
        }
        if let Some(t) = row.tombstone {
            note(t.timestamp);
        }
        for c in row.cells.values() {
            note(c.timestamp());
        }
    }
    min
}

/// A memtable stand-in: mutations not flushed yet.
#[derive(Debug, Default)]
pub(crate) struct Memtable(pub(crate) Vec<Mutation>);

impl MaxPurgeable for Memtable {
    fn max_purgeable(&self, key: &DecoratedKey) -> Timestamp {
        self.0
            .iter()
            .filter(|m| m.key() == key)
            .filter_map(min_timestamp)
            .min()
            .unwrap_or(Timestamp::MAX)
    }
}

/// Job options for tests: gc_grace 0 and the given clock.
pub(crate) fn job_options(clock: std::sync::Arc<compaction::ManualClock>) -> JobOptions {
    let mut o = JobOptions::default();
    o.gc_grace = std::time::Duration::ZERO;
    o.clock = clock;
    o.writer = writer_options();
    o
}

/// Checks that `dir` holds exactly the set's sstables that are in it (and
/// run files of its run members), no transaction file, no temporary, and
/// that every one of them verifies.
pub(crate) fn assert_clean(dir: &Path, set: &SstableSet) {
    let snapshot = set.snapshot();
    let mut expected = std::collections::BTreeSet::new();
    for h in snapshot.handles().iter().filter(|h| h.dir() == Some(dir)) {
        h.sstable().verify().unwrap();
        for c in sstable::Component::ALL {
            expected.insert(
                sstable::component_path(dir, h.generation(), c)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
        if h.info().run.is_some() {
            expected.insert(format!("run-{}.txt", h.generation()));
        }
    }
    let present: std::collections::BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(present, expected, "files in {}", dir.display());
}

/// Incompressible bytes.
pub(crate) fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect()
}

/// A live cell of `len` incompressible bytes at `ts` for `key`.
pub(crate) fn live(key: &str, ts: i64, len: usize) -> Mutation {
    let seed = u64::try_from(ts).unwrap_or(0) ^ u64::from(crc32c::crc32c(key.as_bytes()));
    Mutation::builder(DecoratedKey::from_bytes(key.to_owned()).unwrap())
        .cell(
            "r",
            0,
            Cell::live(noise(seed, len), Timestamp::from_micros(ts)),
        )
        .build()
        .unwrap()
}

/// A table for manager tests: a set, a strategy, and channels that tell
/// the test when a job first asks about purging and when a swap happened.
pub(crate) struct TestTable {
    pub(crate) set: SstableSet,
    pub(crate) strategy: Box<dyn compaction::Strategy>,
    pub(crate) options: JobOptions,
    pub(crate) started: std::sync::Mutex<Option<std::sync::mpsc::Sender<()>>>,
    pub(crate) swaps: std::sync::Mutex<std::sync::mpsc::Sender<(Vec<u64>, Vec<u64>)>>,
}

impl MaxPurgeable for TestTable {
    fn max_purgeable(&self, _key: &DecoratedKey) -> Timestamp {
        if let Some(tx) = self.started.lock().unwrap().take() {
            let _ = tx.send(());
        }
        Timestamp::MAX
    }
}

impl compaction::CompactionTable for TestTable {
    fn name(&self) -> String {
        "test".into()
    }

    fn sstables(&self) -> &SstableSet {
        &self.set
    }

    fn strategy(&self) -> &dyn compaction::Strategy {
        &*self.strategy
    }

    fn job_options(&self) -> JobOptions {
        self.options.clone()
    }

    fn replaced(&self, removed: &[u64], added: &[u64]) {
        let _ = self
            .swaps
            .lock()
            .unwrap()
            .send((removed.to_vec(), added.to_vec()));
    }
}
