//! The descriptors an open sstable reads its blocks through are advised
//! random reads (no kernel read-ahead for point reads), and a scan's own
//! descriptor (direct, or through the page cache when direct scans are
//! off) is not.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fs::{EntryKind, File, FileSystem, FsHandle, OpenOptions, RealFs};
use mutation::{Cell, DecoratedKey, FragmentReader, Mutation, Timestamp};
use sstable::{Component, Sstable, Writer, WriterOptions};

/// Which files were advised, by path, and which were opened again for
/// direct reads.
#[derive(Debug, Default)]
struct Log {
    opened: Vec<PathBuf>,
    advised: Vec<PathBuf>,
    direct: Vec<PathBuf>,
    direct_advised: usize,
}

/// A file system over the real one that records the hints.
#[derive(Debug, Clone, Default)]
struct Recording(Arc<Mutex<Log>>);

#[derive(Debug)]
struct RecFile {
    inner: Box<dyn File>,
    path: PathBuf,
    direct: bool,
    log: Arc<Mutex<Log>>,
}

impl File for RecFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.inner.write_at(buf, offset)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.inner.sync_all()
    }
    fn advise_random(&self) -> io::Result<()> {
        let mut log = self.log.lock().unwrap();
        if self.direct {
            log.direct_advised += 1;
        } else {
            log.advised.push(self.path.clone());
        }
        self.inner.advise_random()
    }
    fn reopen_direct(&self) -> io::Result<Option<Box<dyn File>>> {
        let Some(inner) = self.inner.reopen_direct()? else {
            return Ok(None);
        };
        self.log.lock().unwrap().direct.push(self.path.clone());
        Ok(Some(Box::new(RecFile {
            inner,
            path: self.path.clone(),
            direct: true,
            log: Arc::clone(&self.log),
        })))
    }
    fn identity(&self) -> io::Result<Option<(u64, u64)>> {
        self.inner.identity()
    }
}

impl FileSystem for Recording {
    fn open(&self, path: &Path, options: &OpenOptions) -> io::Result<Box<dyn File>> {
        self.0.lock().unwrap().opened.push(path.to_path_buf());
        Ok(Box::new(RecFile {
            inner: RealFs.open(path, options)?,
            path: path.to_path_buf(),
            direct: false,
            log: Arc::clone(&self.0),
        }))
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        RealFs.create_dir(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        RealFs.create_dir_all(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealFs.rename(from, to)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealFs.hard_link(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        RealFs.remove_file(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        RealFs.remove_dir(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        RealFs.read_dir(path)
    }
    fn kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        RealFs.kind(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        RealFs.sync_dir(path)
    }
    fn free_space(&self, path: &Path) -> io::Result<u64> {
        RealFs.free_space(path)
    }
}

#[test]
fn point_read_descriptors_are_advised_random_and_scan_descriptors_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = WriterOptions::default();
    options.block_size = 4096;
    let mut w = Writer::create(dir.path(), options).unwrap();
    let mut ms: Vec<Mutation> = (0..200u32)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(format!("k{i:04}")).unwrap())
                .cell(
                    "c",
                    0,
                    Cell::live(vec![i as u8; 1000], Timestamp::from_micros(1)),
                )
                .build()
                .unwrap()
        })
        .collect();
    ms.sort_by(|a, b| a.key().cmp(b.key()));
    let mut r = mutation::from_mutations(ms.clone());
    while let Some(f) = r.next().unwrap() {
        w.write(&f).unwrap();
    }
    let generation = w.commit().unwrap().generation;

    let rec = Recording::default();
    let sst = Sstable::open_with(
        dir.path(),
        generation,
        None,
        &FsHandle::new(Arc::new(rec.clone())),
    )
    .unwrap();
    for m in &ms {
        assert!(sst.read_partition(m.key()).unwrap().is_some());
    }
    {
        let log = rec.0.lock().unwrap();
        for c in [Component::Data, Component::Index] {
            let path = sst.component_path(c);
            assert!(
                log.advised.iter().any(|p| p == path),
                "{c} not advised: {log:?}"
            );
        }
    }
    let count = |paths: &[PathBuf]| {
        let data = sst.component_path(Component::Data);
        paths.iter().filter(|p| *p == data).count()
    };
    let scan_all = || {
        let mut scan = sst.scan();
        let mut n = 0;
        while scan.next().unwrap().is_some() {
            n += 1;
        }
        assert!(n >= 3 * ms.len());
    };
    scan_all();
    {
        let log = rec.0.lock().unwrap();
        assert_eq!(log.direct_advised, 0, "{log:?}");
        if log.direct.is_empty() {
            eprintln!("no direct I/O here: the scan read through the page cache");
        }
    }
    // Direct scans off: the scan opens Data again, through the page cache,
    // and does not advise that descriptor.
    let (opened, advised) = {
        let log = rec.0.lock().unwrap();
        (count(&log.opened), count(&log.advised))
    };
    sstable::set_direct_scans(false);
    scan_all();
    sstable::set_direct_scans(true);
    let log = rec.0.lock().unwrap();
    assert_eq!(count(&log.opened), opened + 1, "{log:?}");
    assert_eq!(count(&log.advised), advised, "{log:?}");
}
