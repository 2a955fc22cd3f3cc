//! The directory lock: a lock file held for a database's whole life, so a
//! second open of the same directory, from this process or another, is
//! refused with a clear error instead of two databases corrupting each
//! other's files.
//!
//! The lock is an advisory exclusive `flock` (`LockFileEx` on Windows) on
//! `<dir>/replica.lock`, taken through the `fs4` crate: std's
//! `File::try_lock` needs Rust 1.89, above the workspace's rust-version.
//! `flock` locks belong to the open file, not the process, so a second
//! open in the same process conflicts too; the kernel drops the lock when
//! the holder exits, so a crash never leaves a directory locked. The file
//! holds the holder's process id, for the error message only.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use fs4::{FileExt, TryLockError};

use crate::error::{Error, io_err};

/// The lock file's name inside a locked directory.
pub const LOCK_FILE_NAME: &str = "replica.lock";

/// An exclusive lock on one directory, released when dropped.
#[derive(Debug)]
pub struct DirectoryLock {
    dir: PathBuf,
    path: PathBuf,
    // Held open for the lock's life: closing it releases the lock.
    _file: File,
}

impl DirectoryLock {
    /// Locks `dir`, which must exist, creating its lock file if needed.
    ///
    /// # Errors
    /// [`Error::DirectoryLocked`] if another open database holds it (the
    /// message names the holder's process id when known); [`Error::Io`] if
    /// the lock file cannot be created or written (for example a directory
    /// that is missing or not writable).
    pub fn acquire(dir: &Path) -> Result<Self, Error> {
        let path = dir.join(LOCK_FILE_NAME);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_err("create lock file", &path))?;
        // Called through the trait: std's inherent `try_lock` is newer
        // than the workspace's rust-version.
        match FileExt::try_lock(&file) {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                // Best effort: the holder may be rewriting it right now.
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Error::DirectoryLocked {
                    dir: dir.to_path_buf(),
                    lock_file: path.clone(),
                    holder: (!holder.is_empty()).then(|| holder.to_owned()),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io_err("lock", &path)(e)),
        }
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| writeln!(file, "{}", std::process::id()))
            .and_then(|()| file.sync_data())
            .map_err(io_err("write lock file", &path))?;
        Ok(DirectoryLock {
            dir: dir.to_path_buf(),
            path,
            _file: file,
        })
    }

    /// Locks every directory of `dirs` (in the order given, which callers
    /// keep fixed so two openers cannot each hold part of the set). On an
    /// error the locks already taken are released.
    ///
    /// # Errors
    /// The first directory's error, as [`acquire`](Self::acquire).
    pub fn acquire_all<'a>(
        dirs: impl IntoIterator<Item = &'a Path>,
    ) -> Result<Vec<DirectoryLock>, Error> {
        dirs.into_iter().map(DirectoryLock::acquire).collect()
    }

    /// The locked directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_in_this_process_is_refused_until_the_first_drops() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirectoryLock::acquire(dir.path()).unwrap();
        assert_eq!(first.dir(), dir.path());
        let e = DirectoryLock::acquire(dir.path()).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::DirectoryLocked { .. }), "{text}");
        assert!(text.contains(LOCK_FILE_NAME), "{text}");
        assert!(
            text.contains(&format!("process {}", std::process::id())),
            "{text}"
        );
        drop(first);
        let again = DirectoryLock::acquire(dir.path()).unwrap();
        assert!(again.path().exists());
    }

    #[test]
    fn acquire_all_releases_what_it_took_when_one_directory_is_held() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let held = DirectoryLock::acquire(b.path()).unwrap();
        let e = DirectoryLock::acquire_all([a.path(), b.path()]).unwrap_err();
        assert!(matches!(e, Error::DirectoryLocked { ref dir, .. } if dir == b.path()));
        // `a` was released when the set failed.
        drop(DirectoryLock::acquire(a.path()).unwrap());
        drop(held);
        assert_eq!(
            DirectoryLock::acquire_all([a.path(), b.path()])
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn a_missing_or_unusable_directory_is_an_io_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let e = DirectoryLock::acquire(&missing).unwrap_err().to_string();
        assert!(
            e.contains("create lock file") && e.contains("missing"),
            "{e}"
        );
        // A regular file where the directory should be.
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let e = DirectoryLock::acquire(&file).unwrap_err().to_string();
        assert!(e.contains("create lock file"), "{e}");
    }
}
