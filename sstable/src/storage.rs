//! Random-access byte sources for component files: a real file (positional
//! reads) or bytes in memory (tests and the fuzz target).

use std::io;
use std::path::Path;

use fs::FsHandle;

use crate::file_cache::CachedFile;
use crate::sync::{Arc, AtomicBool, Ordering};

/// Something a component can be read from at arbitrary offsets.
pub(crate) trait Source: Send + Sync + std::fmt::Debug {
    /// Length in bytes.
    fn len(&self) -> u64;
    /// Fills `buf` from `offset`; short reads are errors.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// A reader of the same bytes that bypasses the page cache (`O_DIRECT`),
    /// for a sequential scan: `None` where there is none (in memory, or
    /// direct I/O not available here).
    fn open_direct(&self) -> Option<DirectSource> {
        None
    }
    /// A reader of the same bytes through the page cache on a descriptor
    /// of its own, for a sequential scan that does not read directly: the
    /// kernel reads ahead of it, which it does not for the shared
    /// descriptors of point reads. `None` where there is none (in memory,
    /// or the file cannot be opened again as the same file).
    fn open_sequential(&self) -> Option<SequentialSource> {
        None
    }
}

/// A component file opened a second time, through the page cache, for one
/// sequential scan ([`Source::open_sequential`]): each read is charged to
/// the device as the cached file's are.
#[derive(Debug)]
pub(crate) struct SequentialSource {
    file: Box<dyn fs::File>,
    device: Option<Arc<device::Device>>,
}

impl SequentialSource {
    /// Fills `buf` from `offset`; short reads are errors.
    pub(crate) fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        device::charge_read(self.device.as_deref(), buf.len() as u64);
        self.file.read_exact_at(buf, offset)
    }
}

/// Whether full scans read with direct I/O ([`set_direct_scans`]).
static DIRECT_SCANS: AtomicBool = AtomicBool::new(true);

/// Sets whether a full scan ([`Sstable::scan`](crate::Sstable::scan):
/// compaction's inputs, `verify`) reads its Data file with `O_DIRECT`
/// (`true`, the default) or through the page cache, for the whole process,
/// as [`set_max_open_files`](crate::set_max_open_files) sets the file
/// cache's capacity. Direct scans suit files written with direct I/O
/// ([`WriterOptions::direct_io`](crate::WriterOptions::direct_io), the
/// default), which are not in the page cache; a process that writes
/// through the page cache would turn them off. Scans already running keep
/// what they started with.
pub fn set_direct_scans(on: bool) {
    // Relaxed: a setting read at a scan's first window, ordering nothing.
    DIRECT_SCANS.store(on, Ordering::Relaxed);
}

/// The setting of [`set_direct_scans`].
pub fn direct_scans() -> bool {
    DIRECT_SCANS.load(Ordering::Relaxed)
}

/// A component file opened a second time for direct reads
/// ([`Source::open_direct`]), for one sequential scan: each read is charged
/// to the device as the cached file's are.
#[derive(Debug)]
pub(crate) struct DirectSource {
    reader: writeback::direct::DirectReader<Box<dyn fs::File>>,
    device: Option<Arc<device::Device>>,
}

impl DirectSource {
    /// Reads `len` bytes from `offset` (fewer only at the end of the file)
    /// into the reader's aligned buffer, where [`last`](Self::last) finds
    /// them until the next read.
    pub(crate) fn read(&mut self, offset: u64, len: usize) -> io::Result<()> {
        device::charge_read(self.device.as_deref(), len as u64);
        self.reader.read(offset, len).map(drop)
    }

    /// The bytes of the last [`read`](Self::read) (empty after a failed
    /// one).
    pub(crate) fn last(&self) -> &[u8] {
        self.reader.last()
    }
}

/// A component file, read through the process-wide cache of open files
/// (`file_cache`): it is opened when a read needs it and the cache has
/// closed it, so an open sstable holds no descriptor of its own. Every
/// read is charged to the device the file is on, if it has one.
#[derive(Debug)]
pub(crate) struct FileSource {
    file: CachedFile,
    device: Option<Arc<device::Device>>,
}

impl FileSource {
    /// Opens `path` on `fs` (through the cache) and records its length;
    /// reads will be charged to `device`.
    pub(crate) fn open(
        fs: &FsHandle,
        path: &Path,
        device: Option<Arc<device::Device>>,
    ) -> io::Result<Self> {
        CachedFile::open(fs, path).map(|file| FileSource { file, device })
    }
}

impl Source for FileSource {
    fn len(&self) -> u64 {
        self.file.len()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        // Charged before the read, holding no lock (a reader waiting for
        // its device holds up only itself).
        device::charge_read(self.device.as_deref(), buf.len() as u64);
        // The clone keeps the file open for this read even if the cache
        // closes it meanwhile; no lock is held during the read.
        let file = self.file.file()?;
        file.read_exact_at(buf, offset)
    }

    fn open_direct(&self) -> Option<DirectSource> {
        if !direct_scans() {
            return None;
        }
        let file = self.file.file().ok()?;
        let reader = writeback::direct::DirectReader::new(file.reopen_direct().ok()??);
        Some(DirectSource {
            reader,
            device: self.device.clone(),
        })
    }

    fn open_sequential(&self) -> Option<SequentialSource> {
        Some(SequentialSource {
            file: self.file.open_again().ok()?,
            device: self.device.clone(),
        })
    }
}

/// A component held in memory.
#[derive(Debug)]
pub(crate) struct MemSource(pub(crate) Vec<u8>);

impl Source for MemSource {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset)
            .ok()
            .filter(|&s| s <= self.0.len())
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        let end = start
            .checked_add(buf.len())
            .filter(|&e| e <= self.0.len())
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(&self.0[start..end]);
        Ok(())
    }
}

/// A component whose contents were decoded into memory when the sstable was
/// opened, and whose file was closed then: only Data and Index are read
/// afterwards (through the cache of open files). It keeps the
/// component's length; reading it is an error, never stale bytes.
#[derive(Debug)]
pub(crate) struct ReleasedSource {
    pub(crate) len: u64,
}

impl Source for ReleasedSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, _buf: &mut [u8], _offset: u64) -> io::Result<()> {
        Err(io::Error::other(
            "component was decoded when the sstable was opened and its file closed",
        ))
    }
}
