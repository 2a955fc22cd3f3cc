//! Direct I/O (`O_DIRECT`): writes that go from this process's buffer to
//! the device without a copy into the page cache.
//!
//! Why: on the 2-vCPU machines this project is measured on, a buffered
//! write costs 1-2.6 s of kernel CPU per GB written (the copy into freshly
//! allocated page-cache pages), against 0.15-0.17 s per GB with `O_DIRECT`
//! (`dd bs=1M count=2000`, buffered 395-984 MB/s at 2.1-5.2 s of system
//! time, direct 1.1-1.3 GB/s at 0.3 s). Under replica-stress's default load
//! the kernel's copies took half of both cores (`perf`: 50% of all samples
//! in `copy_folio_from_iter_atomic`, split between the commit log's
//! flusher, flushes and compaction), which starved the writers. ScyllaDB
//! writes its commit log and sstables with `O_DIRECT` for the same reason.
//!
//! `O_DIRECT` wants the file offset, the length and the buffer's address
//! aligned to the device's block size; [`DirectWriter`] takes writes of
//! any size at any offset and turns them into aligned ones (RocksDB's
//! approach for direct writes): it copies them into an aligned staging
//! buffer, pads the last block with zeros and keeps that block's bytes, so
//! the next write that continues it rewrites the block with the same
//! bytes followed by new ones. Bytes already in a block are rewritten with
//! the same values, so a write torn by a crash cannot damage them. A file
//! written this way may end in zero padding past its last byte: the
//! writer of a file whose length matters truncates it (`File::set_len`)
//! when done; the commit log's segments have a fixed size anyway.
//!
//! Durability is unchanged: an `O_DIRECT` write reaches the device but not
//! necessarily its stable storage, and may leave metadata unwritten, so
//! fdatasync is still what durability rests on.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The alignment of direct writes: offsets, lengths and buffer addresses
/// are multiples of it. 4 KiB, the logical block size of current disks and
/// the page size (a multiple of every 512-byte-sector device's).
pub const DIRECT_ALIGN: usize = 4096;

/// Positional reads and writes: what direct I/O needs of a file. The
/// writers and readers here take any file that has them (a
/// [`std::fs::File`], or a file of a file layer above the system's).
pub trait FileAt {
    /// Reads into `buf` from `offset`; returns how many bytes were read (0
    /// at the end of the file).
    ///
    /// # Errors
    /// The file's.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// Writes all of `buf` at `offset`.
    ///
    /// # Errors
    /// The file's.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
}

impl FileAt for File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        FileExt::read_at(self, buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(self, buf, offset)
    }
}

impl<T: FileAt + ?Sized> FileAt for Box<T> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        (**self).read_at(buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        (**self).write_all_at(buf, offset)
    }
}

/// Opens `path` again for writing with `O_DIRECT`, for a file just created
/// (so that a file system refusing direct I/O never leaves a half-made
/// file behind). `Ok(None)` where the file system does not support direct
/// I/O (Linux's `EINVAL`, or `EOPNOTSUPP`: older tmpfs and overlayfs, for
/// two) and on systems other than Linux:
/// the caller keeps writing through its buffered handle.
///
/// # Errors
/// Any other error of the open.
pub fn reopen_direct(path: &Path) -> io::Result<Option<File>> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        match OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
        {
            Ok(f) => Ok(Some(f)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP)) => Ok(None),
            Err(e) => Err(e),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (path, OpenOptions::new());
        Ok(None)
    }
}

/// Turns writes of any size at any offset into the aligned writes
/// `O_DIRECT` requires (see the [module docs](self)).
///
/// Writes that continue the previous one (the common case: a log or a
/// data file written front to back) cost one copy into the staging buffer
/// and one `pwrite`. A write elsewhere at an unaligned offset first reads
/// the block it starts in.
///
/// ```
/// use std::os::unix::fs::FileExt;
/// use writeback::direct::{DirectWriter, reopen_direct};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("data");
/// let buffered = std::fs::File::create(&path)?;
/// // tmpfs and non-Linux systems refuse O_DIRECT: write buffered there.
/// let direct = reopen_direct(&path)?;
/// let file = direct.as_ref().unwrap_or(&buffered);
/// let mut w = DirectWriter::new();
/// w.write_at(file, 0, b"hello, ")?;
/// w.write_at(file, 7, b"world")?;
/// file.sync_data()?;
/// // The file may end in zero padding: trim it to what was written.
/// file.set_len(12)?;
/// assert_eq!(std::fs::read(&path)?, b"hello, world");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct DirectWriter {
    /// Over-allocated by [`DIRECT_ALIGN`]: the aligned window is found in it
    /// at each use (safe code, no aligned allocator).
    staging: Vec<u8>,
    /// The bytes of the last partly written block...
    tail: Vec<u8>,
    /// ...which starts here (aligned).
    tail_at: u64,
    /// Aligned writes issued.
    writes: u64,
}

impl DirectWriter {
    /// A writer with no staging buffer yet (it grows to the largest write).
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes all of `buf` at `offset` of `file`, which may be open with
    /// `O_DIRECT` (or not: the same aligned writes work buffered). What
    /// follows `offset + buf.len()` in its block is overwritten with zeros.
    ///
    /// # Errors
    /// The system's error of the read (see the type's docs) or the write;
    /// after one, the next write re-reads the block it starts in.
    pub fn write_at<F: FileAt + ?Sized>(
        &mut self,
        file: &F,
        offset: u64,
        buf: &[u8],
    ) -> io::Result<()> {
        let mut staging = std::mem::take(&mut self.staging);
        let written = self.write_at_with(&mut staging, file, offset, buf);
        self.staging = staging;
        written
    }

    /// As [`write_at`](Self::write_at), staging the write in `staging`
    /// rather than the writer's own buffer: the writers of files written
    /// one at a time (a log's segments) can share one buffer instead of
    /// each keeping one as large as its largest write.
    ///
    /// # Errors
    /// As [`write_at`](Self::write_at).
    pub fn write_at_with<F: FileAt + ?Sized>(
        &mut self,
        staging: &mut Vec<u8>,
        file: &F,
        offset: u64,
        buf: &[u8],
    ) -> io::Result<()> {
        let align = DIRECT_ALIGN as u64;
        let start = offset - offset % align;
        if offset != self.tail_at + self.tail.len() as u64 || start != self.tail_at {
            // Not a continuation: what precedes `offset` in its block comes
            // from the file (nothing to read at an aligned offset).
            self.tail.clear();
            self.tail_at = start;
            if offset > start {
                self.read_block_head(staging, file, start, (offset - start) as usize)?;
            }
        }
        let head = self.tail.len();
        let total = head + buf.len();
        let padded = total.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        let window = window(staging, padded);
        window[..head].copy_from_slice(&self.tail);
        window[head..total].copy_from_slice(buf);
        window[total..].fill(0);
        let written = file.write_all_at(window, self.tail_at);
        let full = total / DIRECT_ALIGN * DIRECT_ALIGN;
        // The new last partial block, kept for the next write. After a
        // failed write it is not known what the file holds: start over.
        let window = aligned(staging, padded);
        self.tail.clear();
        if written.is_ok() {
            self.tail.extend_from_slice(&window[full..total]);
            self.tail_at += full as u64;
            self.writes += 1;
        } else {
            self.tail_at = u64::MAX / 2;
        }
        written
    }

    /// Aligned writes issued so far.
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// Reads the first `len` bytes of the block at `start` into `tail`;
    /// bytes past the file's end read as zeros.
    fn read_block_head<F: FileAt + ?Sized>(
        &mut self,
        staging: &mut Vec<u8>,
        file: &F,
        start: u64,
        len: usize,
    ) -> io::Result<()> {
        let block = window(staging, DIRECT_ALIGN);
        let got = read_blocks(file, block, start)?;
        block[got..].fill(0);
        let block = aligned(staging, DIRECT_ALIGN);
        self.tail.clear();
        self.tail.extend_from_slice(&block[..len]);
        Ok(())
    }
}

/// A file opened a second time, read-only, with `O_DIRECT`, for reads that
/// should not go through the page cache (a compaction's sequential scan of
/// its inputs: each byte is read once, and the copy out of the page cache
/// took 60% of the compaction thread's CPU on this project's machines),
/// with the aligned buffer its reads land in. The bytes of its last read
/// stay there ([`last`](Self::last)) until the next one.
#[derive(Debug)]
pub struct DirectReader<F = File> {
    file: F,
    staging: Vec<u8>,
    /// Where the last read's bytes are in `staging`.
    last: std::ops::Range<usize>,
}

impl DirectReader {
    /// Opens `file` again with `O_DIRECT`, through `/proc/self/fd`, so it
    /// is the same file even if its name was removed or replaced meanwhile
    /// (checked: same device and inode). `Ok(None)` where direct I/O is not
    /// available: not Linux, no `/proc`, or a file system that refuses
    /// `O_DIRECT`; the caller reads through `file` then.
    ///
    /// # Errors
    /// Failures other than those, from `open` or `fstat`.
    pub fn reopen(file: &File) -> io::Result<Option<DirectReader>> {
        Ok(reopen_direct_read(file)?.map(DirectReader::new))
    }
}

impl<F: FileAt> DirectReader<F> {
    /// A reader of `file`, already open for direct reads (or not: the same
    /// aligned reads work buffered).
    pub fn new(file: F) -> Self {
        DirectReader {
            file,
            staging: Vec::new(),
            last: 0..0,
        }
    }

    /// Reads `len` bytes from `offset`, with the alignment `O_DIRECT` wants:
    /// the read starts at `offset` rounded down to [`DIRECT_ALIGN`] and
    /// covers whole blocks, into an aligned window of its buffer (grown as
    /// needed). Returns the bytes from `offset` on, up to `len` (fewer only
    /// at the end of the file), which [`last`](Self::last) returns again
    /// until the next read.
    ///
    /// # Errors
    /// Those of `pread` (`EINVAL` if the file system refuses the
    /// alignment); [`last`](Self::last) is empty after one.
    pub fn read(&mut self, offset: u64, len: usize) -> io::Result<&[u8]> {
        let align = DIRECT_ALIGN as u64;
        let start = offset - offset % align;
        let skip = (offset - start) as usize;
        let padded = (skip + len).div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        self.last = 0..0;
        let got = read_blocks(&self.file, window(&mut self.staging, padded), start)?;
        let at = self.staging.as_ptr().align_offset(DIRECT_ALIGN);
        let end = got.min(skip + len);
        self.last = at + skip.min(end)..at + end;
        Ok(self.last())
    }

    /// The bytes of the last [`read`](Self::read) (empty before the first
    /// and after a failed one).
    pub fn last(&self) -> &[u8] {
        &self.staging[self.last.clone()]
    }
}

/// Opens `file` again, read-only, with `O_DIRECT`, through
/// `/proc/self/fd`, so it is the same file even if its name was removed or
/// replaced meanwhile (checked: same device and inode). `Ok(None)` where
/// direct I/O is not available: not Linux, no `/proc`, or a file system
/// that refuses `O_DIRECT`.
///
/// # Errors
/// Failures other than those, from `open` or `fstat`.
pub fn reopen_direct_read(file: &File) -> io::Result<Option<File>> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        let direct = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
        {
            Ok(f) => f,
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINVAL | libc::EOPNOTSUPP | libc::ENOENT)
                ) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let (a, b) = (file.metadata()?, direct.metadata()?);
        if (a.dev(), a.ino()) != (b.dev(), b.ino()) {
            return Ok(None);
        }
        Ok(Some(direct))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        Ok(None)
    }
}

/// Whether `e`, from an open with `O_DIRECT`, says the file system does not
/// support direct I/O (Linux's `EINVAL` or `EOPNOTSUPP`): the caller then
/// reads or writes through the page cache instead.
pub fn direct_refused(e: &io::Error) -> bool {
    #[cfg(target_os = "linux")]
    {
        matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = e;
        false
    }
}

/// Fills `buf` (whole blocks, aligned) from `at` of `file` as far as the
/// file goes; returns how many bytes were read. A read that ends off a
/// block boundary is the end of the file (a direct read cannot go on from
/// there).
fn read_blocks<F: FileAt + ?Sized>(file: &F, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        if got % DIRECT_ALIGN != 0 {
            break;
        }
    }
    Ok(got)
}

/// An aligned window of `len` bytes in `staging`, grown as needed. The
/// contents are unspecified.
fn window(staging: &mut Vec<u8>, len: usize) -> &mut [u8] {
    let need = len + DIRECT_ALIGN;
    if staging.len() < need {
        // Grown (and so possibly moved) before the window is found.
        staging.resize(need, 0);
    }
    let at = staging.as_ptr().align_offset(DIRECT_ALIGN);
    &mut staging[at..at + len]
}

/// The window [`window`] handed out last, of `len` bytes.
fn aligned(staging: &[u8], len: usize) -> &[u8] {
    let at = staging.as_ptr().align_offset(DIRECT_ALIGN);
    &staging[at..at + len]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_reads_return_the_bytes_at_any_offset_and_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        // Not a multiple of the block size: the last block is short.
        let data = bytes(7, 5 * DIRECT_ALIGN + 1234);
        std::fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        let Some(mut direct) = DirectReader::reopen(&file).unwrap() else {
            eprintln!("skipped: no O_DIRECT on {}", dir.path().display());
            return;
        };
        for (offset, len) in [
            (0, 10),
            (0, DIRECT_ALIGN),
            (1, DIRECT_ALIGN),
            (4095, 2),
            (3 * DIRECT_ALIGN as u64 + 17, 2 * DIRECT_ALIGN + 3),
            (4 * DIRECT_ALIGN as u64, 1 << 20),
            (data.len() as u64 - 5, 5),
            (data.len() as u64, 10),
        ] {
            let got = direct.read(offset, len).unwrap().to_vec();
            let from = offset as usize;
            let to = (from + len).min(data.len());
            assert_eq!(got, &data[from..to], "{offset} + {len}");
            assert_eq!(direct.last(), &data[from..to], "kept: {offset} + {len}");
        }
        // The same file after its name is gone.
        std::fs::remove_file(&path).unwrap();
        let mut again = DirectReader::reopen(&file).unwrap().unwrap();
        assert!(again.last().is_empty());
        assert_eq!(again.read(100, 50).unwrap(), &data[100..150]);
    }

    /// A file opened for direct writes where the file system allows it.
    fn open(dir: &Path) -> (std::path::PathBuf, File) {
        let path = dir.join("f");
        let buffered = File::create(&path).unwrap();
        let file = reopen_direct(&path).unwrap().unwrap_or(buffered);
        (path, file)
    }

    /// A deterministic byte pattern.
    fn bytes(seed: u32, n: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(2_654_435_761) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    }

    #[test]
    fn appends_of_every_size_read_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let (path, file) = open(dir.path());
        let mut w = DirectWriter::new();
        let mut expect = Vec::new();
        for (i, n) in [1, 7, 4089, 4096, 1, 12_000, 0, 3, 70_000, 4095]
            .into_iter()
            .enumerate()
        {
            let b = bytes(i as u32, n);
            w.write_at(&file, expect.len() as u64, &b).unwrap();
            expect.extend_from_slice(&b);
        }
        file.sync_data().unwrap();
        let got = std::fs::read(&path).unwrap();
        assert_eq!(got.len() % DIRECT_ALIGN, 0, "the file ends in whole blocks");
        assert_eq!(&got[..expect.len()], &expect[..]);
        assert!(got[expect.len()..].iter().all(|&b| b == 0), "zero padding");
        file.set_len(expect.len() as u64).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), expect);
    }

    #[test]
    fn a_write_elsewhere_keeps_what_precedes_it_in_its_block() {
        let dir = tempfile::tempdir().unwrap();
        let (path, file) = open(dir.path());
        let first = bytes(1, 10_000);
        let mut w = DirectWriter::new();
        w.write_at(&file, 0, &first).unwrap();
        // A second writer (no tail) continues at an unaligned offset, and
        // the first one then writes inside an earlier block.
        let second = bytes(2, 500);
        DirectWriter::new()
            .write_at(&file, 10_000, &second)
            .unwrap();
        let patch = bytes(3, 10);
        w.write_at(&file, 5_000, &patch).unwrap();
        let mut expect = first.clone();
        expect.extend_from_slice(&second);
        expect[5_000..5_010].copy_from_slice(&patch);
        // The patch's block is rewritten up to its end, with zeros after
        // the patch: the write contract ("what follows in its block").
        for b in &mut expect[5_010..8_192] {
            *b = 0;
        }
        let got = std::fs::read(&path).unwrap();
        assert_eq!(&got[..expect.len()], &expect[..]);
    }

    #[test]
    fn the_same_writes_work_through_a_buffered_handle() {
        // Where a file system refuses O_DIRECT the callers write through
        // their buffered handle with the same writer.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let buffered = File::create(&path).unwrap();
        let mut w = DirectWriter::new();
        w.write_at(&buffered, 0, b"abc").unwrap();
        w.write_at(&buffered, 3, b"def").unwrap();
        assert_eq!(&std::fs::read(&path).unwrap()[..6], b"abcdef");
        assert_eq!(w.writes(), 2);
    }

    #[test]
    fn a_write_only_handle_cannot_serve_a_block_read() {
        // Continuing another writer's block needs a read: the error comes
        // back, and the writer starts over cleanly on the next write.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let write_only = File::create(&path).unwrap();
        let mut w = DirectWriter::new();
        assert!(w.write_at(&write_only, 10, b"x").is_err());
        w.write_at(&write_only, 0, b"abc").unwrap();
        assert_eq!(&std::fs::read(&path).unwrap()[..3], b"abc");
    }

    #[test]
    fn writers_of_two_files_can_share_one_staging_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let (path_a, a) = open(dir.path());
        let path_b = dir.path().join("g");
        let buffered = File::create(&path_b).unwrap();
        let b = reopen_direct(&path_b).unwrap().unwrap_or(buffered);
        let mut staging = Vec::new();
        let (mut wa, mut wb) = (DirectWriter::new(), DirectWriter::new());
        let (x, y) = (bytes(7, 5000), bytes(8, 6000));
        wa.write_at_with(&mut staging, &a, 0, &x[..3000]).unwrap();
        wb.write_at_with(&mut staging, &b, 0, &y[..100]).unwrap();
        wa.write_at_with(&mut staging, &a, 3000, &x[3000..])
            .unwrap();
        wb.write_at_with(&mut staging, &b, 100, &y[100..]).unwrap();
        assert_eq!(&std::fs::read(&path_a).unwrap()[..5000], &x[..]);
        assert_eq!(&std::fs::read(&path_b).unwrap()[..6000], &y[..]);
    }

    #[test]
    fn opening_a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(reopen_direct(&dir.path().join("missing")).is_err());
    }
}
