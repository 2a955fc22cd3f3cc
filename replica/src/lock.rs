//! The directory lock: a lock file held for a database's whole life, so a
//! second open of the same directory, from this process or another, is
//! refused with a clear error instead of two databases corrupting each
//! other's files.
//!
//! The lock is an advisory exclusive `flock` (`LockFileEx` on Windows) on
//! `<dir>/replica.lock`, taken through the file layer ([`fs::File::try_lock`],
//! the `fs4` crate on real files: std's `File::try_lock` needs Rust 1.89,
//! above the workspace's rust-version).
//! `flock` locks belong to the open file, not the process, so a second
//! open in the same process conflicts too; the kernel drops the lock when
//! the holder exits, so a crash never leaves a directory locked. The file
//! holds the holder's process id, for the error message only. An open
//! takes its locks tentatively: if it is refused, each lock file gets its
//! previous contents back, so a refused open leaves no trace.

use std::path::{Path, PathBuf};

use fs::{File, FsHandle, OpenOptions};

use crate::error::{Error, io_err};

/// The lock file's name inside a locked directory.
pub const LOCK_FILE_NAME: &str = "replica.lock";

/// An exclusive lock on one directory, released when dropped.
#[derive(Debug)]
pub struct DirectoryLock {
    dir: PathBuf,
    path: PathBuf,
    // Held open for the lock's life: closing it releases the lock.
    file: Box<dyn File>,
    /// Until [`confirm`](Self::confirm)ed: what the lock file held before
    /// (`None`: no file), put back on drop ([`acquire_all_tentatively`](Self::acquire_all_tentatively)).
    before: Option<Option<Vec<u8>>>,
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
        Self::acquire_with(dir, &FsHandle::real())
    }

    /// As [`acquire`](Self::acquire), on the file system `fs`.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn acquire_with(dir: &Path, fs: &FsHandle) -> Result<Self, Error> {
        let mut lock = Self::take(fs, dir)?;
        lock.confirm();
        Ok(lock)
    }

    /// Locks `dir` and writes this process's id into the lock file,
    /// remembering what the file held before (unconfirmed).
    fn take(fs: &FsHandle, dir: &Path) -> Result<Self, Error> {
        let path = dir.join(LOCK_FILE_NAME);
        let existed = fs
            .kind(&path)
            .map_err(io_err("create lock file", &path))?
            .is_some();
        let file = fs
            .open(
                &path,
                &OpenOptions {
                    create: true,
                    ..OpenOptions::write()
                },
            )
            .map_err(io_err("create lock file", &path))?;
        let contents = |file: &dyn File| -> std::io::Result<Vec<u8>> {
            let mut buf = vec![0; usize::try_from(file.len()?).unwrap_or(0)];
            file.read_exact_at(&mut buf, 0)?;
            Ok(buf)
        };
        if !file.try_lock().map_err(io_err("lock", &path))? {
            // Best effort: the holder may be rewriting it right now.
            let holder = contents(&*file).unwrap_or_default();
            let holder = String::from_utf8_lossy(&holder);
            let holder = holder.trim();
            return Err(Error::DirectoryLocked {
                dir: dir.to_path_buf(),
                lock_file: path.clone(),
                holder: (!holder.is_empty()).then(|| holder.to_owned()),
            });
        }
        let mut previous = Vec::new();
        if existed {
            previous = contents(&*file).map_err(io_err("read lock file", &path))?;
        }
        let lock = DirectoryLock {
            dir: dir.to_path_buf(),
            path,
            file,
            before: Some(existed.then_some(previous)),
        };
        // On a failure here the drop puts back what was there.
        lock.write(format!("{}\n", std::process::id()).as_bytes())?;
        Ok(lock)
    }

    /// Locks every directory of `dirs`, as [`acquire_all`](Self::acquire_all)
    /// does, tentatively: until [`confirm`](Self::confirm)ed, dropping a
    /// lock puts its lock file's old contents back (a file it created is
    /// left empty), so that an open refused after the locks were taken
    /// leaves the directories of an existing database byte for byte as it
    /// found them.
    ///
    /// # Errors
    /// As [`acquire_all`](Self::acquire_all).
    pub(crate) fn acquire_all_tentatively<'a>(
        fs: &FsHandle,
        dirs: impl IntoIterator<Item = &'a Path>,
    ) -> Result<Vec<DirectoryLock>, Error> {
        dirs.into_iter()
            .map(|d| DirectoryLock::take(fs, d))
            .collect()
    }

    /// Keeps the lock file as this lock wrote it (the holder's pid) when
    /// the lock is dropped: what it guarded succeeded.
    pub(crate) fn confirm(&mut self) {
        self.before = None;
    }

    /// Replaces the lock file's contents with `bytes`, synced.
    fn write(&self, bytes: &[u8]) -> Result<(), Error> {
        let file = &self.file;
        file.set_len(0)
            .and_then(|()| file.write_all_at(bytes, 0))
            .and_then(|()| file.sync_data())
            .map_err(io_err("write lock file", &self.path))
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

impl Drop for DirectoryLock {
    fn drop(&mut self) {
        // Unconfirmed: the old contents go back (best effort); a created file
        // is left empty, not removed (that would let two openers lock two files).
        match self.before.take() {
            None => {}
            Some(previous) => drop(self.write(previous.as_deref().unwrap_or_default())),
        }
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
    fn an_unconfirmed_lock_puts_the_lock_file_back_and_a_confirmed_one_keeps_the_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE_NAME);
        drop(DirectoryLock::acquire_all_tentatively(&FsHandle::real(), [dir.path()]).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"", "created, left empty");
        std::fs::write(&path, b"4242\n").unwrap();
        drop(DirectoryLock::acquire_all_tentatively(&FsHandle::real(), [dir.path()]).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"4242\n", "put back");
        let mut locks =
            DirectoryLock::acquire_all_tentatively(&FsHandle::real(), [dir.path()]).unwrap();
        locks.iter_mut().for_each(DirectoryLock::confirm);
        drop(locks);
        let pid = format!("{}\n", std::process::id());
        assert_eq!(std::fs::read(&path).unwrap(), pid.as_bytes());
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
