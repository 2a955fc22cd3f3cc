//! Random-access byte sources for component files: a real file (positional
//! reads) or bytes in memory (tests and the fuzz target).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Something a component can be read from at arbitrary offsets.
pub(crate) trait Source: Send + Sync + std::fmt::Debug {
    /// Length in bytes.
    fn len(&self) -> u64;
    /// Fills `buf` from `offset`; short reads are errors.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
}

/// A component file opened for reading.
#[derive(Debug)]
pub(crate) struct FileSource {
    file: File,
    len: u64,
}

impl FileSource {
    /// Wraps an open file whose length is `len`.
    pub(crate) fn new(file: File, len: u64) -> Self {
        FileSource { file, len }
    }
}

impl Source for FileSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(&self.file, buf, offset)
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
/// opened, and whose file was closed then, so that an open sstable holds
/// only the file descriptors its reads need (Data and Index): a table with
/// thousands of sstables must not run out of descriptors. It keeps the
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
