//! A table's live sstable set: what the strategies read ([`SstableInfo`]),
//! what readers pin ([`SetSnapshot`]), and the one-step swap of a job's
//! inputs for its outputs ([`SstableSet::replace`]).
//!
//! The set is an immutable version behind a lock; a reader clones the
//! current version (an `Arc`) and reads it without holding the lock, so a
//! reader sees the inputs or the outputs of a job, never both or neither.
//! A replaced sstable is marked obsolete and its files are deleted when the
//! last version holding it is dropped: inputs are deleted once no reader
//! holds them.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use fs::{FileSystem, FsHandle};
use mutation::{DecoratedKey, Timestamp};
use sstable::{Sstable, Writer, WriterOptions};

use crate::error::{Error, Result};
use crate::files::{
    read_run_file, remove_generation, remove_orphan_run_files, renumber_generation,
};
use crate::sync::{Arc, AtomicBool, Ordering, PlainArc, PlainAtomicU64, RwLock};

/// Where an sstable sits in a run: the run's id (the generation of its
/// first fragment) and the fragment's place in key order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunMembership {
    /// The run's id.
    pub run_id: u64,
    /// The fragment's position in the run (0 first, in key order).
    pub order: u32,
}

/// What a strategy knows of one sstable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstableInfo {
    /// The sstable's generation (unique in its directory).
    pub generation: u64,
    /// Bytes on disk (Data and Index, which dominate).
    pub size: u64,
    /// The first and last partition keys, `None` for an empty sstable.
    pub key_range: Option<(DecoratedKey, DecoratedKey)>,
    /// Smallest write timestamp in it.
    pub min_timestamp: Option<i64>,
    /// Largest write timestamp in it.
    pub max_timestamp: Option<i64>,
    /// Run membership, `None` for a flushed sstable (a run of its own).
    pub run: Option<RunMembership>,
}

impl SstableInfo {
    /// Describes an open sstable.
    pub fn of(table: &Sstable, run: Option<RunMembership>) -> Self {
        let s = table.statistics();
        SstableInfo {
            generation: table.generation(),
            size: s.data_size + s.index_size,
            key_range: table.key_range().map(|(a, b)| (a.clone(), b.clone())),
            min_timestamp: s.min_timestamp,
            max_timestamp: s.max_timestamp,
            run,
        }
    }

    /// The run this sstable belongs to: its run id, or its own generation.
    pub fn run_id(&self) -> u64 {
        self.run.map_or(self.generation, |r| r.run_id)
    }

    /// True when `key` lies within the sstable's key range.
    pub fn covers(&self, key: &DecoratedKey) -> bool {
        self.key_range
            .as_ref()
            .is_some_and(|(first, last)| first <= key && key <= last)
    }
}

/// Counters shared by a set and every handle it made.
#[derive(Debug, Default)]
pub(crate) struct SetCounters {
    pub(crate) deleted: PlainAtomicU64,
    pub(crate) delete_failures: PlainAtomicU64,
}

struct HandleInner {
    table: Sstable,
    info: SstableInfo,
    /// The directory to delete files from; `None` for an sstable opened
    /// from memory (loom models).
    dir: Option<PathBuf>,
    /// The file system the files are on.
    fs: FsHandle,
    obsolete: AtomicBool,
    counters: Arc<SetCounters>,
}

impl Drop for HandleInner {
    fn drop(&mut self) {
        if !self.obsolete.load(Ordering::Acquire) {
            return;
        }
        let ok = match &self.dir {
            Some(dir) => remove_generation(&*self.fs, dir, self.info.generation).is_ok(),
            None => true,
        };
        if ok {
            self.counters.deleted.fetch_add(1, Ordering::Relaxed);
        } else {
            // Left for `recover` at the next open (the job's transaction
            // file, still present, names it as released).
            self.counters
                .delete_failures
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One sstable of a set, cheap to clone. Its files are deleted when it has
/// been replaced and the last clone is dropped.
#[derive(Clone)]
pub struct SstableHandle {
    inner: Arc<HandleInner>,
}

impl fmt::Debug for SstableHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SstableHandle")
            .field("generation", &self.inner.info.generation)
            .field("size", &self.inner.info.size)
            .field("run", &self.inner.info.run)
            .finish_non_exhaustive()
    }
}

impl SstableHandle {
    /// The open sstable.
    pub fn sstable(&self) -> &Sstable {
        &self.inner.table
    }

    /// Its description.
    pub fn info(&self) -> &SstableInfo {
        &self.inner.info
    }

    /// Its generation.
    pub fn generation(&self) -> u64 {
        self.inner.info.generation
    }

    /// True once it has been replaced (its files go with the last clone).
    pub fn is_obsolete(&self) -> bool {
        self.inner.obsolete.load(Ordering::Acquire)
    }

    /// The directory its files are in (`None` for an sstable opened from
    /// memory).
    pub fn dir(&self) -> Option<&Path> {
        self.inner.dir.as_deref()
    }
}

struct Version {
    handles: Vec<SstableHandle>,
}

/// A pinned version of the set: the sstables a reader reads. Dropping the
/// last snapshot that holds a replaced sstable deletes its files.
#[derive(Clone)]
pub struct SetSnapshot {
    version: Arc<Version>,
}

impl fmt::Debug for SetSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.version.handles.iter().map(SstableHandle::generation))
            .finish()
    }
}

impl SetSnapshot {
    /// The sstables, in the order they were added.
    pub fn handles(&self) -> &[SstableHandle] {
        &self.version.handles
    }

    /// Their descriptions.
    pub fn infos(&self) -> Vec<SstableInfo> {
        self.version
            .handles
            .iter()
            .map(|h| h.info().clone())
            .collect()
    }

    /// Number of sstables.
    pub fn len(&self) -> usize {
        self.version.handles.len()
    }

    /// True when there is no sstable.
    pub fn is_empty(&self) -> bool {
        self.version.handles.is_empty()
    }

    /// Bytes on disk of all sstables.
    pub fn total_size(&self) -> u64 {
        self.version.handles.iter().map(|h| h.info().size).sum()
    }

    /// The sstables a point read of `key` must consult: key range and
    /// bloom filter admit the key.
    pub fn sstables_for_key(&self, key: &DecoratedKey) -> Vec<&SstableHandle> {
        self.version
            .handles
            .iter()
            .filter(|h| h.info().covers(key) && h.sstable().may_contain(key))
            .collect()
    }

    /// The max purgeable timestamp of `key` over the sstables *not* in
    /// `excluded` (ScyllaDB's `get_max_purgeable`, Cassandra's overlap
    /// check): the smallest minimum timestamp of every such sstable whose
    /// key range and bloom filter may hold `key`. A tombstone for `key`
    /// older than this (strictly) shadows nothing in them. `Timestamp::MAX`
    /// when none may hold it.
    pub fn max_purgeable(&self, key: &DecoratedKey, excluded: &HashSet<u64>) -> Timestamp {
        let mut min = Timestamp::MAX;
        for h in &self.version.handles {
            if excluded.contains(&h.generation()) || !h.info().covers(key) {
                continue;
            }
            if !h.sstable().may_contain(key) {
                continue;
            }
            if let Some(ts) = h.info().min_timestamp {
                min = min.min(Timestamp::from_micros(ts));
            }
        }
        min
    }
}

/// A table's live sstable set.
///
/// It may span several directories: its *data directory*
/// ([`dir`](Self::dir)), where compactions write their outputs (and keep
/// their transaction files), and other directories whose sstables it holds
/// too (a table's separate flush directories, as Cassandra's
/// CASSANDRA-6357): compactions read inputs wherever they are. A
/// generation is unique across all of them (they name the sstables in the
/// set and in transaction files): every writer into the set's directories
/// takes its generation through [`create_writer`](Self::create_writer).
pub struct SstableSet {
    dir: Option<PathBuf>,
    other_dirs: Vec<PathBuf>,
    /// The file system the set's directories are on.
    fs: FsHandle,
    /// The lowest generation no writer of the set's directories has taken.
    next_generation: PlainAtomicU64,
    current: RwLock<Arc<Version>>,
    counters: Arc<SetCounters>,
}

impl fmt::Debug for SstableSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SstableSet")
            .field("dir", &self.dir)
            .field("other_dirs", &self.other_dirs)
            .field("sstables", &self.snapshot())
            .finish_non_exhaustive()
    }
}

impl SstableSet {
    /// An empty set of sstables living in `dir` (`None`: sstables opened
    /// from memory, whose replacement deletes nothing).
    pub fn new(dir: Option<PathBuf>) -> Self {
        SstableSet {
            dir,
            other_dirs: Vec::new(),
            fs: FsHandle::real(),
            next_generation: PlainAtomicU64::new(1),
            current: RwLock::new(Arc::new(Version {
                handles: Vec::new(),
            })),
            counters: Arc::new(SetCounters::default()),
        }
    }

    /// Opens the set of a data directory at startup: first
    /// [`recover`](crate::recover)s half-done compactions, then lists and
    /// opens the committed sstables with their run membership. Call it
    /// before anything writes to `dir`.
    ///
    /// # Errors
    /// A damaged transaction file ([`Error::CorruptTransaction`]), or an
    /// sstable that does not open.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        Self::open_dirs(dir, &[])
    }

    /// [`open`](Self::open), with the sstables opened on `device` (the
    /// device `dir` is on): their reads, compaction's among them, are
    /// charged to it (`sstable::Sstable::open_on`). A job's outputs are
    /// opened on the device of its writer options
    /// (`JobOptions::writer`'s `device`).
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_on(
        dir: impl AsRef<Path>,
        device: Option<PlainArc<device::Device>>,
    ) -> Result<Self> {
        Self::open_dirs_on(dir, &[], |_| device.clone())
    }

    /// Opens a set whose compactions write to the data directory `dir` and
    /// which also holds the sstables of `other_dirs` (a table's separate
    /// flush directories), at startup: first recovers half-done
    /// compactions from the transaction files of every one of them
    /// ([`recover_dirs`](crate::recover_dirs)), then lists and opens the
    /// committed sstables with their run membership. A generation present
    /// in two of the directories (written before the set spanned them,
    /// when each directory numbered its own) is renumbered in the later
    /// one, by hard links and then removal, so a crash halfway leaves
    /// both copies of the same data or the old one, never neither. Call it
    /// before anything writes to the directories.
    ///
    /// # Errors
    /// A damaged transaction file ([`Error::CorruptTransaction`]), an
    /// sstable that does not open, or I/O errors.
    pub fn open_dirs(dir: impl AsRef<Path>, other_dirs: &[PathBuf]) -> Result<Self> {
        Self::open_dirs_on(dir, other_dirs, |_| None)
    }

    /// [`open_dirs`](Self::open_dirs), with each directory's sstables
    /// opened on the device `device_of` names for it (their reads are
    /// charged to it; see [`open_on`](Self::open_on)).
    ///
    /// # Errors
    /// As [`open_dirs`](Self::open_dirs).
    pub fn open_dirs_on(
        dir: impl AsRef<Path>,
        other_dirs: &[PathBuf],
        device_of: impl Fn(&Path) -> Option<PlainArc<device::Device>>,
    ) -> Result<Self> {
        Self::open_dirs_with(dir, other_dirs, device_of, &FsHandle::real())
    }

    /// [`open_dirs_on`](Self::open_dirs_on), on the file system `fs`:
    /// recovery, listing, opening, renumbering, the writers of
    /// [`create_writer`](Self::create_writer), jobs' transaction and run
    /// files and the removal of replaced sstables all go through it.
    ///
    /// # Errors
    /// As [`open_dirs`](Self::open_dirs).
    pub fn open_dirs_with(
        dir: impl AsRef<Path>,
        other_dirs: &[PathBuf],
        device_of: impl Fn(&Path) -> Option<PlainArc<device::Device>>,
        fs: &FsHandle,
    ) -> Result<Self> {
        let handle = fs;
        let fs: &dyn FileSystem = &**fs;
        let dir = dir.as_ref();
        let mut all: Vec<&Path> = vec![dir];
        for d in other_dirs {
            if !all.contains(&d.as_path()) {
                all.push(d.as_path());
            }
        }
        crate::txn::recover_dirs_with(&all, handle)?;
        let mut listed = Vec::with_capacity(all.len());
        for d in &all {
            let found = sstable::SstableDirectory::open_with(d, handle)?;
            let generations: HashSet<u64> = found.generations().iter().copied().collect();
            remove_orphan_run_files(fs, d, &generations)?;
            listed.push((*d, found.generations().to_vec()));
        }
        let mut next = listed
            .iter()
            .flat_map(|(_, gens)| gens.iter().copied())
            .max()
            .map_or(1, |g| g.saturating_add(1));
        let mut seen = HashSet::new();
        for (d, generations) in &mut listed {
            for generation in generations.iter_mut() {
                if !seen.insert(*generation) {
                    renumber_generation(fs, d, *generation, next)?;
                    *generation = next;
                    seen.insert(next);
                    next = next.saturating_add(1);
                }
            }
        }
        let mut set = SstableSet::new(Some(dir.to_path_buf()));
        set.fs = handle.clone();
        set.other_dirs = all[1..].iter().map(|d| d.to_path_buf()).collect();
        set.next_generation = PlainAtomicU64::new(next);
        let mut handles = Vec::new();
        for (d, generations) in &listed {
            let device = device_of(d);
            for &generation in generations {
                let table = Sstable::open_with(d, generation, device.clone(), handle)?;
                let run = read_run_file(fs, d, generation)?;
                handles.push(set.make_handle(table, run));
            }
        }
        *set.current.write() = Arc::new(Version { handles });
        Ok(set)
    }

    /// The data directory, where compactions write, if the set lives in
    /// one.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The other directories whose sstables the set holds (a table's
    /// separate flush directories).
    pub fn other_dirs(&self) -> &[PathBuf] {
        &self.other_dirs
    }

    /// The file system the set's directories are on.
    pub fn fs(&self) -> &FsHandle {
        &self.fs
    }

    /// True when `dir` is one of the set's directories.
    pub fn spans(&self, dir: &Path) -> bool {
        self.dir.as_deref() == Some(dir) || self.other_dirs.iter().any(|d| d == dir)
    }

    /// Starts writing a new sstable into `dir`, one of the set's
    /// directories, with a generation unique across all of them (flushes
    /// into a set's directories must use this, so that a generation names
    /// one sstable of the set). Add the committed sstable with
    /// [`add`](Self::add).
    ///
    /// # Errors
    /// [`Error::ForeignDirectory`] when `dir` is not one of the set's
    /// directories; the writer's errors.
    pub fn create_writer(&self, dir: &Path, mut options: WriterOptions) -> Result<Writer> {
        // The set's sstables are all on its file system.
        options.fs = self.fs.clone();
        if !self.spans(dir) {
            return Err(Error::ForeignDirectory {
                dir: dir.to_path_buf(),
            });
        }
        const ATTEMPTS: usize = 1000;
        for _ in 0..ATTEMPTS {
            let floor = self.next_generation.fetch_add(1, Ordering::Relaxed);
            let writer = Writer::create_from(dir, floor, options.clone())?;
            if writer.generation() == floor {
                // No other writer of the set is given `floor`.
                return Ok(writer);
            }
            // The directory held `floor` or more (another writer of this
            // directory reserved past its own floor, or files were written
            // past the set): the generation it got may have been given to
            // a writer of another directory. Give it up, move the counter
            // past the directory's, and take another.
            self.next_generation
                .fetch_max(writer.generation().saturating_add(1), Ordering::Relaxed);
            writer.abort()?;
        }
        Err(Error::InvalidJob {
            reason: format!(
                "no generation unique across the sstable set's directories could be reserved \
                 in {} after {ATTEMPTS} attempts",
                dir.display()
            ),
        })
    }

    /// The current version, pinned.
    pub fn snapshot(&self) -> SetSnapshot {
        SetSnapshot {
            version: Arc::clone(&self.current.read()),
        }
    }

    /// Wraps an open sstable for this set (not yet added).
    pub fn make_handle(&self, table: Sstable, run: Option<RunMembership>) -> SstableHandle {
        let info = SstableInfo::of(&table, run);
        self.handle_with_info(table, info)
    }

    fn handle_with_info(&self, table: Sstable, info: SstableInfo) -> SstableHandle {
        // Files are deleted from the sstable's own directory (the set may
        // span several); a set without one deletes nothing.
        let dir = self.dir.as_ref().map(|d| {
            table
                .component_path(sstable::Component::Data)
                .parent()
                .map_or_else(|| d.clone(), Path::to_path_buf)
        });
        SstableHandle {
            inner: Arc::new(HandleInner {
                table,
                info,
                dir,
                fs: self.fs.clone(),
                obsolete: AtomicBool::new(false),
                counters: Arc::clone(&self.counters),
            }),
        }
    }

    /// Adds a flushed sstable (a run of its own).
    pub fn add(&self, table: Sstable) -> SstableHandle {
        let handle = self.make_handle(table, None);
        let mut current = self.current.write();
        let mut handles = current.handles.clone();
        handles.push(handle.clone());
        *current = Arc::new(Version { handles });
        handle
    }

    /// Swaps `removed` for `added` in one step: readers that pin the set
    /// afterwards see the outputs and not the inputs. The removed sstables
    /// are deleted once no snapshot holds them.
    ///
    /// # Errors
    /// [`Error::NotInSet`] when a generation of `removed` is not in the set;
    /// the set is then unchanged.
    pub fn replace(&self, removed: &[u64], added: &[SstableHandle]) -> Result<()> {
        let mut current = self.current.write();
        let gone: HashSet<u64> = removed.iter().copied().collect();
        if let Some(&generation) = removed
            .iter()
            .find(|g| !current.handles.iter().any(|h| h.generation() == **g))
        {
            return Err(Error::NotInSet { generation });
        }
        let mut handles = Vec::with_capacity(current.handles.len() + added.len());
        for h in &current.handles {
            if gone.contains(&h.generation()) {
                h.inner.obsolete.store(true, Ordering::Release);
            } else {
                handles.push(h.clone());
            }
        }
        handles.extend(added.iter().cloned());
        *current = Arc::new(Version { handles });
        Ok(())
    }

    /// How many replaced sstables have had their files deleted so far.
    pub fn deleted_count(&self) -> u64 {
        self.counters.deleted.load(Ordering::Relaxed)
    }

    /// How many deletions of replaced sstables failed (left for `recover`).
    pub fn delete_failures(&self) -> u64 {
        self.counters.delete_failures.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::thread;

    /// The bytes of a small committed sstable, written once outside the
    /// models (loom models must not depend on the file system's state).
    fn sstable_bytes() -> [Vec<u8>; 7] {
        use mutation::{Cell, Mutation};
        let dir = std::env::temp_dir().join(format!("compaction-loom-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = DecoratedKey::from_bytes("k").unwrap();
        let m = Mutation::builder(key)
            .cell("r", 0, Cell::live("v", Timestamp::from_micros(1)))
            .build()
            .unwrap();
        let mut w = sstable::Writer::create(&dir, sstable::WriterOptions::default()).unwrap();
        for f in m.fragments() {
            w.write(&f).unwrap();
        }
        let g = w.commit().unwrap().generation;
        let bytes = sstable::Component::ALL
            .map(|c| std::fs::read(sstable::component_path(&dir, g, c)).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
        bytes
    }

    fn handle(set: &SstableSet, bytes: &[Vec<u8>; 7], generation: u64) -> SstableHandle {
        let table = Sstable::from_bytes(bytes.clone()).unwrap();
        let mut info = SstableInfo::of(&table, None);
        info.generation = generation;
        set.handle_with_info(table, info)
    }

    fn generations(s: &SetSnapshot) -> Vec<u64> {
        let mut g: Vec<u64> = s.handles().iter().map(SstableHandle::generation).collect();
        g.sort_unstable();
        g
    }

    #[test]
    fn loom_a_reader_sees_inputs_or_outputs_and_pins_what_it_reads() {
        let bytes = sstable_bytes();
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(2);
        builder.check(move || {
            let set = Arc::new(SstableSet::new(None));
            {
                let mut current = set.current.write();
                *current = Arc::new(Version {
                    handles: vec![handle(&set, &bytes, 1), handle(&set, &bytes, 2)],
                });
            }
            let output = handle(&set, &bytes, 3);
            let reader_set = Arc::clone(&set);
            let reader = thread::spawn(move || {
                let snapshot = reader_set.snapshot();
                let seen = generations(&snapshot);
                if seen == [1, 2] {
                    // Replaced or not, what it reads is not deleted yet.
                    assert_eq!(reader_set.deleted_count(), 0);
                } else {
                    assert_eq!(seen, [3]);
                }
                drop(snapshot);
            });
            set.replace(&[1, 2], &[output]).unwrap();
            reader.join().unwrap();
            assert_eq!(generations(&set.snapshot()), [3]);
            assert_eq!(
                set.deleted_count(),
                2,
                "inputs go once no reader holds them"
            );
            assert!(matches!(
                set.replace(&[1], &[]),
                Err(Error::NotInSet { generation: 1 })
            ));
        });
    }
}
