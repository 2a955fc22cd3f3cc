//! Where segment bytes go: the directory of segment files in production, an
//! in-memory store in unit tests and loom models (so the models run the
//! real group-commit code without file I/O).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::format;

/// One segment's bytes.
pub(crate) trait SegmentFile: Send + Sync + std::fmt::Debug {
    /// Writes all of `buf` at `offset`.
    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()>;
    /// Makes everything written so far durable (fdatasync).
    fn sync_data(&self) -> io::Result<()>;
}

/// Creates and removes segments.
pub(crate) trait Storage: Send + Sync + std::fmt::Debug {
    /// Creates segment `id` at its full size, reading as zeros. With
    /// `prefill`, the zeros are written and made durable, so that later
    /// writes only overwrite allocated blocks; otherwise the file is sparse.
    fn create(&self, id: u64, size: u32, prefill: bool) -> io::Result<Box<dyn SegmentFile>>;
    /// Removes segment `id`.
    fn remove(&self, id: u64) -> io::Result<()>;
    /// Moves segment `id`, which replay found damaged, out of the way
    /// instead of deleting it (kept as evidence, never replayed again).
    fn quarantine(&self, id: u64) -> io::Result<()>;
    /// Makes creations and removals durable (fsync of the directory).
    fn sync_dir(&self) -> io::Result<()>;
    /// The path of segment `id`, for messages.
    fn path(&self, id: u64) -> PathBuf;
}

/// Segment files in a directory.
#[derive(Debug)]
pub(crate) struct DirStorage {
    dir: PathBuf,
}

impl DirStorage {
    pub(crate) fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
        }
    }
}

#[derive(Debug)]
struct DiskSegment(File);

impl SegmentFile for DiskSegment {
    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
}

impl Storage for DirStorage {
    fn create(&self, id: u64, size: u32, prefill: bool) -> io::Result<Box<dyn SegmentFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.path(id))?;
        // Sized up front: later writes never change the file size, and the
        // unwritten rest reads as zeros, which replay takes as "never
        // written" (a crash part-way through the prefill leaves a shorter
        // file of zeros without a header, which replay takes as empty).
        if prefill {
            const CHUNK: usize = 1 << 20;
            let zeros = vec![0u8; CHUNK.min(size as usize)];
            let mut at = 0u64;
            while at < u64::from(size) {
                let n = zeros.len().min((u64::from(size) - at) as usize);
                file.write_all_at(&zeros[..n], at)?;
                at += n as u64;
            }
            // The header too, so that a reserve left unused by a crash
            // replays as an intact empty segment, not as a torn one.
            file.write_all_at(&format::header(id, size), 0)?;
            file.sync_data()?;
        } else {
            file.set_len(u64::from(size))?;
        }
        Ok(Box::new(DiskSegment(file)))
    }

    fn remove(&self, id: u64) -> io::Result<()> {
        std::fs::remove_file(self.path(id))
    }

    fn quarantine(&self, id: u64) -> io::Result<()> {
        let from = self.path(id);
        let mut to = from.clone().into_os_string();
        to.push(".damaged");
        std::fs::rename(from, to)
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }

    fn path(&self, id: u64) -> PathBuf {
        self.dir.join(format::file_name(id))
    }
}

#[cfg(test)]
pub(crate) mod mem {
    //! An in-memory store that counts syncs and can be told to fail.

    use std::collections::BTreeMap;
    use std::io;
    use std::path::PathBuf;

    use super::{SegmentFile, Storage};
    use crate::sync::{Arc, Condvar, Mutex};

    #[derive(Debug, Default)]
    pub(crate) struct MemState {
        pub(crate) files: BTreeMap<u64, Vec<u8>>,
        /// Bytes known durable per segment (what a power cut keeps).
        pub(crate) durable: BTreeMap<u64, Vec<u8>>,
        pub(crate) syncs: u64,
        pub(crate) fail_writes: bool,
        pub(crate) fail_creates: bool,
        /// Writes block while set: a disk that does not keep up.
        pub(crate) stall: bool,
        /// Segments created, with whether each was prefilled.
        pub(crate) created: BTreeMap<u64, bool>,
    }

    #[derive(Debug, Clone)]
    pub(crate) struct MemStorage(pub(crate) Arc<Mutex<MemState>>, pub(crate) Arc<Condvar>);

    impl Default for MemStorage {
        fn default() -> Self {
            Self(
                Arc::new(Mutex::new(MemState::default())),
                Arc::new(Condvar::new()),
            )
        }
    }

    impl MemStorage {
        /// Lets stalled writes go on.
        pub(crate) fn unstall(&self) {
            self.0.lock().stall = false;
            self.1.notify_all();
        }
    }

    #[derive(Debug)]
    struct MemFile {
        id: u64,
        state: Arc<Mutex<MemState>>,
        unstalled: Arc<Condvar>,
    }

    impl SegmentFile for MemFile {
        fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
            let mut s = self.state.lock();
            while s.stall {
                self.unstalled.wait(&mut s);
            }
            if s.fail_writes {
                return Err(io::Error::other("injected write failure"));
            }
            let f = s
                .files
                .get_mut(&self.id)
                .ok_or_else(|| io::Error::other("removed"))?;
            let at = offset as usize;
            f[at..at + buf.len()].copy_from_slice(buf);
            Ok(())
        }

        fn sync_data(&self) -> io::Result<()> {
            let mut s = self.state.lock();
            s.syncs += 1;
            if let Some(f) = s.files.get(&self.id).cloned() {
                s.durable.insert(self.id, f);
            }
            Ok(())
        }
    }

    impl Storage for MemStorage {
        fn create(&self, id: u64, size: u32, prefill: bool) -> io::Result<Box<dyn SegmentFile>> {
            let mut s = self.0.lock();
            if s.fail_creates {
                return Err(io::Error::other("injected create failure"));
            }
            s.files.insert(id, vec![0; size as usize]);
            s.created.insert(id, prefill);
            drop(s);
            Ok(Box::new(MemFile {
                id,
                state: self.0.clone(),
                unstalled: self.1.clone(),
            }))
        }

        fn remove(&self, id: u64) -> io::Result<()> {
            let mut s = self.0.lock();
            s.files.remove(&id);
            s.durable.remove(&id);
            Ok(())
        }

        fn quarantine(&self, id: u64) -> io::Result<()> {
            self.remove(id)
        }

        fn sync_dir(&self) -> io::Result<()> {
            Ok(())
        }

        fn path(&self, id: u64) -> PathBuf {
            PathBuf::from(format!("mem:{id}"))
        }
    }
}

#[cfg(test)]
mod dir_tests {
    use std::os::unix::fs::MetadataExt;

    use super::{DirStorage, Storage};

    #[test]
    fn a_prefilled_segment_is_allocated_and_a_plain_one_sparse() {
        let dir = tempfile::tempdir().unwrap();
        let storage = DirStorage::new(dir.path());
        let size = 3 << 20;
        storage.create(1, size, true).unwrap();
        storage.create(2, size, false).unwrap();
        let full = std::fs::metadata(storage.path(1)).unwrap();
        let sparse = std::fs::metadata(storage.path(2)).unwrap();
        assert_eq!(full.len(), u64::from(size));
        assert_eq!(sparse.len(), u64::from(size));
        // st_blocks counts 512-byte units actually allocated.
        assert!(full.blocks() * 512 >= u64::from(size), "{}", full.blocks());
        assert!(
            sparse.blocks() * 512 < u64::from(size),
            "{}",
            sparse.blocks()
        );
        let bytes = std::fs::read(storage.path(1)).unwrap();
        assert_eq!(
            bytes[..crate::format::HEADER_LEN],
            crate::format::header(1, size)
        );
        assert!(bytes[crate::format::HEADER_LEN..].iter().all(|&b| b == 0));
        // Creation never replaces an existing segment.
        assert!(storage.create(1, size, true).is_err());
    }
}
