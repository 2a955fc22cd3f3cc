//! Incremental write-back: while a file is being written, ask the kernel
//! every so many bytes to start writing out what was written since, so the
//! page cache never holds more than a few MiB of the file's dirty data and
//! the final fdatasync is short (RocksDB's `bytes_per_sync`).
//!
//! On Linux this is `sync_file_range(SYNC_FILE_RANGE_WRITE)`, which starts
//! write-out and returns without waiting for it (it may block only when
//! the device's request queue is full). It makes nothing durable by
//! itself: the writer's fdatasync at commit still does that. Elsewhere
//! [`start_writeback`] does nothing.

use std::fs::File;
use std::io;
use std::path::Path;

use crate::error::{Error, io_err};

/// Starts write-back of `len` bytes of `file` from `offset`, without
/// waiting for it. A no-op where the system has no such call; on Linux, a
/// file system that does not support it counts as done.
///
/// # Errors
/// The system's error (EIO, for example).
#[cfg(target_os = "linux")]
#[allow(
    unsafe_code,
    reason = "sync_file_range has no safe wrapper in rustix or nix; the call \
              takes only an open descriptor and integers"
)]
pub(crate) fn start_writeback(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Ok(());
    };
    // SAFETY: `file` is borrowed, so its descriptor stays open for the
    // call; the call reads no memory of ours, only integers.
    let rc = unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // Not supported here (some file systems, pipes): only a hint lost.
        Some(libc::ENOSYS | libc::EINVAL | libc::ESPIPE | libc::EOPNOTSUPP) => Ok(()),
        _ => Err(e),
    }
}

/// Starts write-back of `len` bytes of `file` from `offset`: a no-op on
/// this system.
///
/// # Errors
/// None here.
#[cfg(not(target_os = "linux"))]
pub(crate) fn start_writeback(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

/// Tracks how much of a file has been written and handed to write-back.
#[derive(Debug, Clone)]
pub(crate) struct WriteBack {
    /// Start write-back once this many bytes were written since the last
    /// request; 0 is off.
    every: u64,
    /// Bytes from the file start already handed to write-back.
    started: u64,
    /// Requests made.
    pub(crate) requests: u64,
}

impl WriteBack {
    pub(crate) fn new(every: u64) -> Self {
        WriteBack {
            every,
            started: 0,
            requests: 0,
        }
    }

    /// Called once the first `written` bytes of `file` (at `path`) are
    /// in it: starts write-back of those not yet handed to it, if they are
    /// at least the threshold.
    ///
    /// # Errors
    /// [`Error::Io`] (op `sync_file_range`) if the system call fails.
    pub(crate) fn after_write(
        &mut self,
        file: &File,
        path: &Path,
        written: u64,
    ) -> Result<(), Error> {
        let pending = written.saturating_sub(self.started);
        if self.every == 0 || pending < self.every {
            return Ok(());
        }
        start_writeback(file, self.started, pending).map_err(io_err("sync_file_range", path))?;
        self.started = written;
        self.requests += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

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
            on.after_write(&file, &path, written).unwrap();
            off.after_write(&file, &path, written).unwrap();
        }
        // 102,400 bytes in steps of 4,096: a request each time at least
        // 10,000 accumulated, that is every third write.
        assert_eq!(on.requests, 8);
        assert_eq!(on.started, 8 * 3 * 4096);
        assert_eq!(off.requests, 0);
        file.sync_data().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), vec![7u8; 102_400]);
    }

    #[test]
    fn the_call_works_on_a_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = File::create(dir.path().join("f")).unwrap();
        file.write_all(&[1u8; 1 << 16]).unwrap();
        start_writeback(&file, 0, 1 << 16).unwrap();
        // Past the end, and zero length: harmless.
        start_writeback(&file, 1 << 20, 4096).unwrap();
        start_writeback(&file, 0, 0).unwrap();
    }
}
