//! Starting write-back of a written byte range without waiting for it, so
//! the page cache never piles up unsynced log data and the next fdatasync
//! is short (RocksDB's `wal_bytes_per_sync`).
//!
//! On Linux this is `sync_file_range(SYNC_FILE_RANGE_WRITE)`: it queues
//! the range's dirty pages for writing and returns; it makes nothing
//! durable (no metadata, no device cache flush), so the log's fdatasyncs
//! stay what durability rests on. Elsewhere it does nothing.
//!
//! Neither rustix (1.1.6) nor nix (0.32) wraps `sync_file_range`, so the
//! call goes through `libc`, in the crate's one unsafe block.

use std::fs::File;
use std::io;

/// Starts write-back of `len` bytes at `offset` of `file`.
#[cfg(target_os = "linux")]
#[allow(
    unsafe_code,
    reason = "sync_file_range has no safe wrapper in rustix or nix; the call only reads its integer arguments"
)]
pub(crate) fn start_writeback(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("write-back range {offset}+{len} is beyond i64"),
        ));
    };
    // SAFETY: sync_file_range takes a file descriptor and three integers and
    // touches no memory of this process; the descriptor is borrowed from
    // `file`, open for the whole call; the kernel checks the range.
    let r = unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Starts write-back of a range: nothing to do off Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) fn start_writeback(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;

    #[test]
    fn starting_write_back_of_written_bytes_succeeds_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = std::fs::File::create(&path).unwrap();
        file.write_all_at(&[7u8; 8192], 0).unwrap();
        super::start_writeback(&file, 0, 8192).unwrap();
        super::start_writeback(&file, 4096, 0).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), vec![7u8; 8192]);
    }
}
