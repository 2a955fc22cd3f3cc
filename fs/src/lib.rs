//! One file layer for the workspace: every file operation a storage engine
//! makes (create and open, positional reads and writes, sync of data and
//! of directories, rename, remove, list, free space) goes through a
//! [`FileSystem`], so that a test can put a faulty or crashing disk under
//! the whole database, as RocksDB's `Env`/`FileSystem` and its
//! `FaultInjectionTestFS` do.
//!
//! Three implementations:
//!
//! * [`RealFs`]: the operating system's files, with direct I/O where asked.
//! * [`FaultFs`]: wraps another file system and fails chosen calls: the
//!   Nth call of a kind (read, write, sync, rename, create, remove...), or
//!   every call on a path containing a pattern, with a chosen error (EIO,
//!   ENOSPC, a short write that wrote half and then failed). It counts the
//!   calls of each kind, so a sweep can run a workload once to count them
//!   and then fail each in turn.
//! * [`PowerLossFs`]: an in-memory file system that keeps, per file, what
//!   was there at its last sync and, per directory, its entries at its last
//!   sync; [`PowerLossFs::crash`] throws away everything else, as a machine
//!   crash does (LazyFS's model): unsynced writes, and creations, renames
//!   and removals whose directory was not synced. It can tear the last
//!   unsynced write of each file at a sector boundary instead.
//!
//! ```
//! use std::path::Path;
//!
//! use fs::{Crash, FileSystem, OpenOptions, PowerLossFs};
//!
//! let disk = PowerLossFs::new();
//! disk.create_dir_all(Path::new("/db"))?;
//! disk.sync_dir(Path::new("/"))?;
//! let file = disk.open(Path::new("/db/log"), &OpenOptions::create_new())?;
//! file.write_all_at(b"acknowledged", 0)?;
//! file.sync_data()?;
//! disk.sync_dir(Path::new("/db"))?;
//! file.write_all_at(b" and not", 12)?; // never synced
//! drop(file);
//!
//! disk.crash(Crash::LoseUnsynced);
//! let file = disk.open(Path::new("/db/log"), &OpenOptions::read())?;
//! let mut buf = vec![0; file.len()? as usize];
//! file.read_exact_at(&mut buf, 0)?;
//! assert_eq!(buf, b"acknowledged");
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Errors are [`std::io::Error`]s, as the operating system's are: the
//! layer stands in for it, and callers already classify those (a full
//! disk is [`std::io::ErrorKind::StorageFull`], say). The crate's own
//! [`Error`] is for a fault rule that cannot be honoured.

mod error;
mod fault;
mod handle;
mod power;
mod real;
mod sync;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

pub use error::Error;
pub use fault::{FaultError, FaultFs, FaultRule, Op};
pub use handle::FsHandle;
pub use power::{Crash, PowerLossFs, SECTOR};
pub use real::RealFs;

/// How to open a file: what [`std::fs::OpenOptions`] says, plus direct I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenOptions {
    /// Writable (positional writes, `set_len`, syncs).
    pub write: bool,
    /// Create the file if it is missing.
    pub create: bool,
    /// Create the file, failing if it exists (implies `create`).
    pub create_new: bool,
    /// Cut the file to 0 bytes when opening it (with `write`).
    pub truncate: bool,
    /// Bypass the page cache (`O_DIRECT` on Linux; ignored where the file
    /// system has no such thing). Buffers and offsets must then be aligned
    /// as the device requires.
    pub direct: bool,
}

impl OpenOptions {
    /// Read only.
    pub fn read() -> Self {
        OpenOptions::default()
    }

    /// Read and write an existing file.
    pub fn write() -> Self {
        OpenOptions {
            write: true,
            ..OpenOptions::default()
        }
    }

    /// Create a new file for writing; fails if it exists.
    pub fn create_new() -> Self {
        OpenOptions {
            write: true,
            create: true,
            create_new: true,
            ..OpenOptions::default()
        }
    }

    /// Create or truncate a file for writing.
    pub fn create_truncate() -> Self {
        OpenOptions {
            write: true,
            create: true,
            truncate: true,
            ..OpenOptions::default()
        }
    }

    /// The same, with direct I/O on or off.
    pub fn with_direct(mut self, direct: bool) -> Self {
        self.direct = direct;
        self
    }
}

/// An open file: positional reads and writes, its length, syncs.
///
/// Positional, so a file can be shared between threads without a cursor.
pub trait File: Send + Sync + fmt::Debug {
    /// Reads into `buf` from `offset`; returns how many bytes were read (0
    /// at the end of the file).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// Writes `buf` at `offset`; returns how many bytes were written.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize>;

    /// The file's length in bytes.
    fn len(&self) -> io::Result<u64>;

    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Sets the file's length: cut, or extended with zeros.
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Makes the file's data durable (`fdatasync`): what was written
    /// before survives a machine crash. After a failed sync, what was not
    /// yet durable must be taken as lost (the kernel may have dropped it):
    /// never retry a sync and believe it.
    fn sync_data(&self) -> io::Result<()>;

    /// [`sync_data`](Self::sync_data), and the file's metadata too.
    fn sync_all(&self) -> io::Result<()>;

    /// Starts write-back of `len` bytes from `offset` without waiting for
    /// it (`sync_file_range`): a hint that makes nothing durable. A file
    /// system with no page cache does nothing.
    fn start_writeback(&self, offset: u64, len: u64) -> io::Result<()> {
        let _ = (offset, len);
        Ok(())
    }

    /// Drops the clean cached pages of `len` bytes from `offset`
    /// (`posix_fadvise(DONTNEED)`): a hint for data not read again soon.
    fn drop_cached(&self, offset: u64, len: u64) -> io::Result<()> {
        let _ = (offset, len);
        Ok(())
    }

    /// Tells the file system that this open file is read at random
    /// offsets (`posix_fadvise(POSIX_FADV_RANDOM)` on real files): no
    /// read-ahead for its reads. For a descriptor that serves point reads;
    /// a scan reads through another one. A file system with no page cache
    /// does nothing.
    fn advise_random(&self) -> io::Result<()> {
        Ok(())
    }

    /// The same file opened again, read-only, bypassing the page cache,
    /// for one sequential scan; `Ok(None)` where there is no such thing
    /// (the caller reads through this file).
    fn reopen_direct(&self) -> io::Result<Option<Box<dyn File>>> {
        Ok(None)
    }

    /// Takes an exclusive advisory lock on the file (`flock`), held until
    /// the file is closed: `Ok(false)` if another open file holds it, in
    /// this process or another. A file system that lives in one process
    /// has no other process to exclude and takes it at once.
    fn try_lock(&self) -> io::Result<bool> {
        Ok(true)
    }

    /// What identifies the file on its file system (device and inode),
    /// where it has such a thing: a reader that opens a path again checks
    /// that it is still the same file.
    fn identity(&self) -> io::Result<Option<(u64, u64)>> {
        Ok(None)
    }

    /// Fills `buf` from `offset`; a file that ends first is an
    /// [`io::ErrorKind::UnexpectedEof`] error.
    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, offset) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("file ends before the {} bytes asked at {offset}", buf.len()),
                    ));
                }
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Writes all of `buf` at `offset`.
    fn write_all_at(&self, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write_at(buf, offset) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("wrote nothing of {} bytes at {offset}", buf.len()),
                    ));
                }
                Ok(n) => {
                    buf = &buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// A file system: the one place the engine's files are reached through.
///
/// Paths are as the caller gives them; an implementation does not make
/// them relative to anything.
///
/// Every file operation of the engine is one call here or on a [`File`],
/// so this is also where an I/O scheduler can see each call (and which
/// class of work it serves) before it reaches the device.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Opens (or creates) the file at `path`.
    fn open(&self, path: &Path, options: &OpenOptions) -> io::Result<Box<dyn File>>;

    /// Creates the directory `path`; its parent must exist.
    fn create_dir(&self, path: &Path) -> io::Result<()>;

    /// Creates `path` and every missing parent.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;

    /// Renames `from` to `to`, replacing a file at `to`. Durable once both
    /// directories are synced.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Gives the file at `from` a second name, `to` (which must not
    /// exist). Durable once `to`'s directory is synced.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes the file at `path`.
    fn remove_file(&self, path: &Path) -> io::Result<()>;

    /// Removes the empty directory at `path`.
    fn remove_dir(&self, path: &Path) -> io::Result<()>;

    /// The entries of the directory `path`, as full paths, in name order.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>>;

    /// Whether something is at `path`, and whether it is a directory.
    fn kind(&self, path: &Path) -> io::Result<Option<EntryKind>>;

    /// Makes the directory's entries durable (creations, renames and
    /// removals in it survive a machine crash).
    fn sync_dir(&self, path: &Path) -> io::Result<()>;

    /// Bytes free for this process on the file system `path` is on.
    fn free_space(&self, path: &Path) -> io::Result<u64>;

    /// Creates `path` and every missing parent, durably: the parent of
    /// each directory created is synced, so the new directories survive a
    /// machine crash. Nothing is synced when `path` exists.
    fn create_dir_all_durably(&self, path: &Path) -> io::Result<()> {
        let mut missing = Vec::new();
        let mut at = Some(path);
        while let Some(p) = at {
            if p.as_os_str().is_empty() || self.kind(p)?.is_some() {
                break;
            }
            missing.push(p);
            at = p.parent();
        }
        if missing.is_empty() {
            return Ok(());
        }
        self.create_dir_all(path)?;
        for created in missing.into_iter().rev() {
            if let Some(parent) = created.parent().filter(|p| !p.as_os_str().is_empty()) {
                self.sync_dir(parent)?;
            }
        }
        Ok(())
    }

    /// The whole contents of the file at `path` (an open and its reads).
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let file = self.open(path, &OpenOptions::read())?;
        let len = usize::try_from(file.len()?).map_err(|_| {
            io::Error::other(format!("{} is too large to read whole", path.display()))
        })?;
        let mut buf = vec![0; len];
        file.read_exact_at(&mut buf, 0)?;
        Ok(buf)
    }
}

/// Whether `e`, from an open with [`OpenOptions::direct`], says that the
/// file system does not support direct I/O: the caller then goes through
/// the page cache instead.
pub fn direct_refused(e: &io::Error) -> bool {
    writeback::direct::direct_refused(e)
}

impl writeback::direct::FileAt for dyn File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        File::read_at(self, buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        File::write_all_at(self, buf, offset)
    }
}

/// What a directory entry is ([`FileSystem::kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

// The README's example runs as a doc test, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
