//! [`RealFs`]: the operating system's files.

use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::{EntryKind, File, FileSystem, OpenOptions};

/// The operating system's file system, through `std::fs` (positional I/O,
/// `O_DIRECT` where asked on Linux, `fsync` of directories).
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

/// A file of [`RealFs`].
#[derive(Debug)]
struct RealFile(std::fs::File);

impl File for RealFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.0.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.0.write_at(buf, offset)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.0.sync_all()
    }

    fn start_writeback(&self, offset: u64, len: u64) -> io::Result<()> {
        writeback::start_writeback(&self.0, offset, len)
    }

    fn drop_cached(&self, offset: u64, len: u64) -> io::Result<()> {
        writeback::drop_cached(&self.0, offset, len)
    }

    fn advise_random(&self) -> io::Result<()> {
        writeback::advise_random(&self.0)
    }

    fn reopen_direct(&self) -> io::Result<Option<Box<dyn File>>> {
        Ok(writeback::direct::reopen_direct_read(&self.0)?
            .map(|f| Box::new(RealFile(f)) as Box<dyn File>))
    }

    fn try_lock(&self) -> io::Result<bool> {
        // Through fs4's trait: std's inherent `try_lock` is newer than the
        // workspace's rust-version.
        match fs4::FileExt::try_lock(&self.0) {
            Ok(()) => Ok(true),
            Err(fs4::TryLockError::WouldBlock) => Ok(false),
            Err(fs4::TryLockError::Error(e)) => Err(e),
        }
    }

    fn identity(&self) -> io::Result<Option<(u64, u64)>> {
        use std::os::unix::fs::MetadataExt;
        let meta = self.0.metadata()?;
        Ok(Some((meta.dev(), meta.ino())))
    }
}

/// `O_DIRECT` on Linux; nothing elsewhere.
fn direct_flag() -> i32 {
    #[cfg(target_os = "linux")]
    {
        0o40000
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

impl FileSystem for RealFs {
    fn open(&self, path: &Path, options: &OpenOptions) -> io::Result<Box<dyn File>> {
        let mut o = std::fs::OpenOptions::new();
        o.read(true)
            .write(options.write)
            .create(options.create && !options.create_new)
            .create_new(options.create_new)
            .truncate(options.truncate);
        if options.direct {
            o.custom_flags(direct_flag());
        }
        Ok(Box::new(RealFile(o.open(path)?)))
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let mut entries = std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.path()))
            .collect::<io::Result<Vec<_>>>()?;
        entries.sort();
        Ok(entries)
    }

    fn kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Ok(Some(EntryKind::Dir)),
            Ok(_) => Ok(Some(EntryKind::File)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::File::open(path)?.sync_all()
    }

    fn free_space(&self, path: &Path) -> io::Result<u64> {
        fs4::available_space(path)
    }
}
