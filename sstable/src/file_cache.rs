//! The process-wide bounded cache of open component files, as RocksDB's
//! table cache (`max_open_files`) and Cassandra's file-handle cache.
//!
//! An open sstable reads its Data and Index files for as long as it lives.
//! Until compaction exists a replica accumulates thousands of sstables, and
//! holding two descriptors for each would exhaust the process's limit
//! (`ulimit -n`): every later flush would fail with `EMFILE`. So an open
//! sstable remembers each file's path, length and identity (device and
//! inode), and opens it on demand through this cache, which keeps at most
//! [`max_open_files`] files open and closes the least recently used one
//! first when it is full.
//!
//! A read takes the cache's lock once, briefly (a map lookup and a move to
//! the front of the recency order), and leaves with an `Arc<File>` clone:
//! the positional read itself runs with no lock held, so many threads read
//! the same file at once. An evicted file whose read is in flight is closed
//! when that read drops its clone; the descriptors open at any instant are
//! therefore at most the capacity plus one per read in progress, plus one
//! per full scan in progress (its own descriptor, direct or through the
//! page cache, see `storage.rs`).

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::Path;

use fs::{File, FsHandle, OpenOptions};

use crate::error::Error;
use crate::sync::{Arc, AtomicU64, LazyLock, Mutex, MutexGuard, Ordering, PoisonError};

/// How many component files the process keeps open when
/// [`set_max_open_files`] was never called: well below common descriptor
/// limits (1,024 is the smallest usual soft limit, 20,000 or more is usual
/// for servers), so flushes and the commit log always find descriptors.
pub const DEFAULT_MAX_OPEN_FILES: usize = 4096;

/// `EMFILE` (this process is out of descriptors) and `ENFILE` (the system
/// is) on Linux: the open is retried once after closing cached files.
const EMFILE: i32 = 24;
const ENFILE: i32 = 23;

/// The cache's state, behind one lock.
struct State {
    capacity: usize,
    /// Open files by the id of the [`FileSource`] they belong to, with the
    /// tick of their last use.
    files: HashMap<u64, (Arc<dyn File>, u64)>,
    /// Recency order: last-use tick to id, oldest first.
    order: BTreeMap<u64, u64>,
    tick: u64,
}

impl State {
    fn touch(&mut self, id: u64) -> Option<Arc<dyn File>> {
        let tick = self.tick;
        let (file, last) = self.files.get_mut(&id)?;
        self.order.remove(last);
        *last = tick;
        self.order.insert(tick, id);
        self.tick += 1;
        Some(Arc::clone(file))
    }

    /// Closes least recently used files until at most `keep` are open.
    fn shrink_to(&mut self, keep: usize) {
        while self.files.len() > keep {
            let Some((_, id)) = self.order.pop_first() else {
                break;
            };
            self.files.remove(&id);
        }
    }

    fn remove(&mut self, id: u64) {
        if let Some((_, tick)) = self.files.remove(&id) {
            self.order.remove(&tick);
        }
    }
}

// A static cannot hold loom types; the cache's lock is held only for map
// updates, never across I/O that another thread waits on.
static CACHE: LazyLock<Mutex<State>> = LazyLock::new(|| {
    Mutex::new(State {
        capacity: DEFAULT_MAX_OPEN_FILES,
        files: HashMap::new(),
        order: BTreeMap::new(),
        tick: 0,
    })
});

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn cache() -> MutexGuard<'static, State> {
    // A panic while the lock was held cannot leave the maps inconsistent
    // with each other in a way that matters (worst case a file stays open
    // until evicted), so a poisoned lock is entered anyway.
    CACHE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sets how many sstable component files the whole process keeps open at
/// once (default [`DEFAULT_MAX_OPEN_FILES`]), closing the least recently
/// used ones at once if more are open. Reads of a closed file re-open it
/// transparently. Like RocksDB's `max_open_files`, this bounds the
/// descriptors that open sstables hold however many there are; reads in
/// progress may each hold one more until they finish.
///
/// # Errors
///
/// [`Error::InvalidOption`] when `n` is 0: reads need at least one open
/// file.
pub fn set_max_open_files(n: usize) -> Result<(), Error> {
    if n == 0 {
        return Err(Error::InvalidOption {
            name: "max_open_files",
            value: n.to_string(),
            expected: "at least 1",
        });
    }
    let mut state = cache();
    state.capacity = n;
    state.shrink_to(n);
    Ok(())
}

/// The capacity set by [`set_max_open_files`].
pub fn max_open_files() -> usize {
    cache().capacity
}

/// How many component files the cache holds open now (at most
/// [`max_open_files`]), for metrics and tests. Evicted files whose reads
/// are still in progress are not counted: they close when the reads end.
pub fn open_files() -> usize {
    cache().files.len()
}

/// Opens `path` for reading; when the process (or system) is out of
/// descriptors, closes the older half of the cached files and tries once
/// more.
///
/// The descriptor is advised random reads (`posix_fadvise(RANDOM)`): it
/// serves point reads of single blocks, for which the kernel's read-ahead
/// had read three times the bytes asked (and, on files written with direct
/// I/O, fetched them from the device). A scan reads through a descriptor
/// of its own (`Source::open_direct`, or `Source::open_sequential` where
/// direct reads are off), which keeps the kernel's read-ahead.
fn open_file(fs: &FsHandle, path: &Path) -> io::Result<Arc<dyn File>> {
    let open = || {
        let file = fs.open(path, &OpenOptions::read())?;
        // A hint: a file that does not take it is read as before.
        let _ = file.advise_random();
        Ok::<_, io::Error>(Arc::from(file))
    };
    match open() {
        Err(e) if matches!(e.raw_os_error(), Some(EMFILE | ENFILE)) => {
            {
                let mut state = cache();
                let keep = state.files.len() / 2;
                state.shrink_to(keep);
            }
            open()
        }
        other => other,
    }
}

/// A component file read through the cache: its path, length and identity
/// are remembered, and it is opened whenever a read needs it and the cache
/// has closed it. Dropping it closes the file.
#[derive(Debug)]
pub(crate) struct CachedFile {
    id: u64,
    /// The file system the file is on, to open it again.
    fs: FsHandle,
    path: std::path::PathBuf,
    len: u64,
    /// Its device and inode, where the file system has them.
    identity: Option<(u64, u64)>,
}

impl CachedFile {
    /// Opens `path` on `fs`, records its length and identity, and puts it
    /// in the cache. Errors are those of `open` and `fstat`, unchanged (the
    /// caller names the path).
    pub(crate) fn open(fs: &FsHandle, path: &Path) -> io::Result<CachedFile> {
        let file = open_file(fs, path)?;
        let cached = CachedFile {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            fs: fs.clone(),
            path: path.to_path_buf(),
            len: file.len()?,
            identity: file.identity()?,
        };
        cached.insert(file);
        Ok(cached)
    }

    /// The file's length when it was opened.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Inserts `file` as the most recently used entry, or returns the one
    /// another thread inserted first.
    fn insert(&self, file: Arc<dyn File>) -> Arc<dyn File> {
        let mut state = cache();
        if let Some(existing) = state.touch(self.id) {
            return existing;
        }
        let capacity = state.capacity;
        state.shrink_to(capacity - 1);
        let tick = state.tick;
        state.tick += 1;
        state.files.insert(self.id, (Arc::clone(&file), tick));
        state.order.insert(tick, self.id);
        file
    }

    /// The file opened again, outside the cache and without the
    /// random-read advice, for one sequential scan: an error unless it is
    /// still the file that was opened (same identity and length).
    pub(crate) fn open_again(&self) -> io::Result<Box<dyn File>> {
        let file = self.fs.open(&self.path, &OpenOptions::read())?;
        if (file.identity()?, file.len()?) != (self.identity, self.len) {
            return Err(io::Error::other(format!(
                "{} was replaced since the sstable was opened",
                self.path.display()
            )));
        }
        Ok(file)
    }

    /// The open file: from the cache, or opened again (outside the lock).
    /// A file that cannot be re-opened, or that is no longer the file that
    /// was opened (another inode, another length), is an error naming the
    /// path: never stale or foreign bytes.
    pub(crate) fn file(&self) -> io::Result<Arc<dyn File>> {
        if let Some(file) = cache().touch(self.id) {
            return Ok(file);
        }
        let reopen_err = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot re-open {} (closed by the open-file cache): {e}",
                    self.path.display()
                ),
            )
        };
        let file = open_file(&self.fs, &self.path).map_err(reopen_err)?;
        let len = file.len().map_err(reopen_err)?;
        let identity = file.identity().map_err(reopen_err)?;
        if (identity, len) != (self.identity, self.len) {
            let inode =
                |id: Option<(u64, u64)>| id.map_or("none".to_owned(), |(_, i)| i.to_string());
            return Err(io::Error::other(format!(
                "{} was replaced since the sstable was opened (now {} bytes, inode {}; was {} bytes, inode {})",
                self.path.display(),
                len,
                inode(identity),
                self.len,
                inode(self.identity)
            )));
        }
        Ok(self.insert(file))
    }
}

impl Drop for CachedFile {
    fn drop(&mut self) {
        cache().remove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state of its own (not the process-wide static, which other unit
    /// tests use) holding `n` copies of one file under ids 0..n.
    fn state_with(n: u64) -> State {
        let mut s = State {
            capacity: n as usize,
            files: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
        };
        let file: Arc<dyn File> = Arc::from(
            FsHandle::real()
                .open(Path::new("Cargo.toml"), &OpenOptions::read())
                .unwrap(),
        );
        for id in 0..n {
            s.files.insert(id, (Arc::clone(&file), s.tick));
            s.order.insert(s.tick, id);
            s.tick += 1;
        }
        s
    }

    #[test]
    fn the_least_recently_used_file_is_closed_first() {
        let mut s = state_with(4);
        assert!(s.touch(0).is_some());
        assert!(s.touch(2).is_some());
        // Order now (oldest first): 1, 3, 0, 2.
        s.shrink_to(2);
        let mut left: Vec<u64> = s.files.keys().copied().collect();
        left.sort_unstable();
        assert_eq!(left, [0, 2]);
        assert_eq!(s.order.len(), 2);
        assert!(s.touch(1).is_none());
        s.remove(0);
        s.remove(0);
        assert_eq!(s.order.values().copied().collect::<Vec<_>>(), [2]);
    }
}
