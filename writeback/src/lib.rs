//! `writeback`: incremental write-back for files written sequentially.
//! While a file is being written, ask the kernel every so many bytes to
//! start writing out what was written since, so the page cache never holds
//! more than a few MiB of the file's dirty data and the final (or
//! periodic) fdatasync is short: RocksDB's `bytes_per_sync` and
//! `wal_bytes_per_sync`. The commit log and the sstable writer use it
//! where they write through the page cache; by default they write with
//! direct I/O instead ([`direct`]: no page cache, no write-back needed).
//!
//! On Linux, [`start_writeback`] is `sync_file_range(SYNC_FILE_RANGE_WRITE)`:
//! it queues the range's dirty pages for writing and returns without
//! waiting (it may block only while the device's request queue is full).
//! It makes nothing durable (no metadata, no device cache flush): an
//! fdatasync is still what durability rests on. Elsewhere it does nothing.
//!
//! Neither rustix (1.1.6) nor nix (0.32) wraps `sync_file_range`, so the
//! call goes through `libc`, in one of this crate's three unsafe blocks; the
//! others are the `posix_fadvise` calls of [`drop_cached`] and
//! [`advise_random`] (the same shape). With
//! logalloc's, they are the workspace's only unsafe code outside the
//! counting allocators of its tests and benchmarks.
//!
//! ```
//! use std::io::Write;
//! use writeback::WriteBack;
//!
//! let dir = tempfile::tempdir()?;
//! let mut file = std::fs::File::create(dir.path().join("data"))?;
//! let mut writeback = WriteBack::new(64 << 10); // every 64 KiB
//! let mut written = 0;
//! for _ in 0..40 {
//!     file.write_all(&[7u8; 4096])?;
//!     written += 4096;
//!     writeback.after_write(&file, written)?;
//! }
//! assert_eq!(writeback.requests(), 2); // at 64 KiB and at 128 KiB
//! file.sync_data()?; // durability, as always
//! # Ok::<(), std::io::Error>(())
//! ```
#![deny(unsafe_code)]

pub mod direct;

use std::fs::File;
use std::io;

/// `offset` and `len` as the `off_t`s the system calls take, or
/// `InvalidInput` naming the `what` range beyond `i64`.
#[cfg(target_os = "linux")]
fn range_i64(what: &str, offset: u64, len: u64) -> io::Result<(i64, i64)> {
    match (i64::try_from(offset), i64::try_from(len)) {
        (Ok(off), Ok(n)) => Ok((off, n)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} range {offset}+{len} is beyond i64"),
        )),
    }
}

/// Starts write-back of `len` bytes of `file` from `offset`, without
/// waiting for it. On Linux a file that does not support it (a pipe, some
/// file systems) counts as done: only a hint is lost. Elsewhere a no-op.
///
/// # Errors
/// The system's error (EIO, for example), or `InvalidInput` for a range
/// beyond `i64`.
#[cfg(target_os = "linux")]
#[allow(
    unsafe_code,
    reason = "sync_file_range has no safe wrapper in rustix or nix; the call \
              takes an open descriptor and integers and touches no memory of ours"
)]
pub fn start_writeback(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (off, n) = range_i64("write-back", offset, len)?;
    // SAFETY: sync_file_range takes a file descriptor and three integers and
    // reads or writes no memory of this process; the descriptor is borrowed
    // from `file`, so it stays open for the whole call; the kernel checks
    // the range and the flags are a valid constant.
    let rc =
        unsafe { libc::sync_file_range(file.as_raw_fd(), off, n, libc::SYNC_FILE_RANGE_WRITE) };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSYS | libc::EINVAL | libc::ESPIPE | libc::EOPNOTSUPP) => Ok(()),
        _ => Err(e),
    }
}

/// Starts write-back of a range: a no-op on this system.
///
/// # Errors
/// None here.
#[cfg(not(target_os = "linux"))]
pub fn start_writeback(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

/// Tells the kernel that `len` bytes of `file` from `offset` will not be
/// read again: the range's clean pages leave the page cache (dirty pages,
/// and pages still being written back, stay). For files written once and
/// never read while running, as a commit log's segments, after their
/// write-back: they stop crowding the page cache, and the next writes
/// reuse the pages just freed. On a virtual machine whose host takes back
/// the memory a guest frees, writing into pages never touched before cost
/// 3-4x the copy (page-cache writes of a new file at 416-467 MiB/s against
/// 1,363-1,500 MiB/s when the pages written 8 MiB before were dropped; see
/// the commit log's `DROP_LAG`). A hint: a file that does not take it (a
/// pipe) counts as done. Elsewhere a no-op.
///
/// # Errors
/// The system's error, or `InvalidInput` for a range beyond `i64`.
#[cfg(target_os = "linux")]
#[allow(
    unsafe_code,
    reason = "posix_fadvise through libc, as sync_file_range: the call takes \
              an open descriptor and integers and touches no memory of ours"
)]
pub fn drop_cached(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (off, n) = range_i64("page-cache", offset, len)?;
    // SAFETY: posix_fadvise takes a file descriptor, two integers and a
    // valid advice constant and reads or writes no memory of this process;
    // the descriptor is borrowed from `file`, so it stays open for the call.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), off, n, libc::POSIX_FADV_DONTNEED) };
    match rc {
        0 | libc::ESPIPE | libc::EINVAL => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Drops a range from the page cache: a no-op on this system.
///
/// # Errors
/// None here.
#[cfg(not(target_os = "linux"))]
pub fn drop_cached(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

/// Tells the kernel that `file` (this open descriptor) is read at random
/// offsets (`posix_fadvise(POSIX_FADV_RANDOM)`): its reads bring in the
/// pages they ask for and no read-ahead. For descriptors that serve point
/// reads of a few KiB, where read-ahead would read (and, on files written
/// with direct I/O, fetch from the device) pages nobody asked for. A hint:
/// a file that does not take it counts as done. Elsewhere a no-op.
///
/// # Errors
/// The system's error.
#[cfg(target_os = "linux")]
#[allow(
    unsafe_code,
    reason = "posix_fadvise through libc, as drop_cached: the call takes an \
              open descriptor and integers and touches no memory of ours"
)]
pub fn advise_random(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: posix_fadvise takes a file descriptor, two integers and a
    // valid advice constant and reads or writes no memory of this process;
    // the descriptor is borrowed from `file`, so it stays open for the call.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    match rc {
        0 | libc::ESPIPE | libc::EINVAL => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Advises random reads: a no-op on this system.
///
/// # Errors
/// None here.
#[cfg(not(target_os = "linux"))]
pub fn advise_random(_file: &File) -> io::Result<()> {
    Ok(())
}

/// Tracks how much of a sequentially written file was handed to
/// write-back, and starts write-back every `every` bytes.
#[derive(Debug, Clone)]
pub struct WriteBack {
    /// Start write-back once this many bytes were written since the last
    /// request; 0 is off.
    every: u64,
    /// Bytes from the file start already handed to write-back.
    started: u64,
    requests: u64,
}

impl WriteBack {
    /// Write-back every `every` bytes (0: never).
    pub fn new(every: u64) -> Self {
        WriteBack {
            every,
            started: 0,
            requests: 0,
        }
    }

    /// Called once the first `written` bytes of `file` are in it: starts
    /// write-back of those not yet handed to it, if they are at least the
    /// threshold.
    ///
    /// # Errors
    /// [`start_writeback`]'s.
    pub fn after_write(&mut self, file: &File, written: u64) -> io::Result<()> {
        self.after_write_with(written, |offset, len| start_writeback(file, offset, len))
    }

    /// As [`after_write`](Self::after_write), for a file that is not a
    /// [`std::fs::File`]: `start(offset, len)` starts the write-back of
    /// that range.
    ///
    /// # Errors
    /// `start`'s.
    pub fn after_write_with(
        &mut self,
        written: u64,
        start: impl FnOnce(u64, u64) -> io::Result<()>,
    ) -> io::Result<()> {
        let pending = written.saturating_sub(self.started);
        if self.every == 0 || pending < self.every {
            return Ok(());
        }
        start(self.started, pending)?;
        self.started = written;
        self.requests += 1;
        Ok(())
    }

    /// Bytes from the file start handed to write-back so far.
    pub fn started(&self) -> u64 {
        self.started
    }

    /// Write-back requests made so far.
    pub fn requests(&self) -> u64 {
        self.requests
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::fs::FileExt;

    use super::*;

    #[test]
    fn dropping_cached_pages_keeps_the_data_and_takes_any_range() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut file = File::create(&path).unwrap();
        file.write_all(&[5u8; 64 << 10]).unwrap();
        // Dirty pages stay: nothing is lost before the sync.
        drop_cached(&file, 0, 64 << 10).unwrap();
        file.sync_data().unwrap();
        drop_cached(&file, 0, 64 << 10).unwrap();
        // Past the end, and the whole file (length 0).
        drop_cached(&file, 1 << 30, 4096).unwrap();
        drop_cached(&file, 0, 0).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), vec![5u8; 64 << 10]);
        let e = drop_cached(&file, u64::MAX, 1).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn requests_come_every_threshold_bytes_and_never_when_off() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut file = File::create(&path).unwrap();
        let mut on = WriteBack::new(10_000);
        let mut off = WriteBack::new(0);
        let mut written = 0u64;
        for _ in 0..25 {
            file.write_all(&[7u8; 4096]).unwrap();
            written += 4096;
            on.after_write(&file, written).unwrap();
            off.after_write(&file, written).unwrap();
        }
        // 102,400 bytes in steps of 4,096: a request each time at least
        // 10,000 accumulated, that is every third write.
        assert_eq!(on.requests(), 8);
        assert_eq!(on.started(), 8 * 3 * 4096);
        assert_eq!(off.requests(), 0);
        file.sync_data().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), vec![7u8; 102_400]);
    }

    #[test]
    fn the_call_works_on_a_real_file_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = File::create(&path).unwrap();
        file.write_all_at(&[1u8; 1 << 16], 0).unwrap();
        start_writeback(&file, 0, 1 << 16).unwrap();
        // Past the end, and zero length: harmless.
        start_writeback(&file, 1 << 20, 4096).unwrap();
        start_writeback(&file, 0, 0).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), vec![1u8; 1 << 16]);
    }

    #[test]
    fn a_range_beyond_i64_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join("f")).unwrap();
        let e = start_writeback(&file, u64::MAX, 1).unwrap_err();
        if cfg!(target_os = "linux") {
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        }
    }
}
