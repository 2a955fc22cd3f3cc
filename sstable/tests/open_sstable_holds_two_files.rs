//! An open sstable reads two files, Data and Index: the other components
//! are decoded (or, for the Digest, copied) into memory when it is opened
//! and their files closed. Data and Index are held by the process-wide
//! open-file cache, so while the cache has room (the default capacity,
//! `DEFAULT_MAX_OPEN_FILES`, is far above the 80 files here) each open
//! sstable accounts for exactly two descriptors, all counted by
//! `sstable::open_files`, and dropping the sstables closes them. Reads and
//! the verifier still work. (The bound itself is shown by
//! `bounded_open_files_many_sstables.rs`.)

mod common;

use common::*;
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use sstable::{Sstable, WriterOptions};

/// Descriptors this process has open (Linux: the entries of /proc/self/fd).
fn open_fds() -> Option<usize> {
    std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count())
}

#[test]
fn each_open_sstable_caches_only_data_and_index() {
    let Some(before) = open_fds() else {
        eprintln!("skipped: /proc/self/fd is not available on this system");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    const SSTABLES: usize = 40;
    let mut generations = Vec::new();
    for i in 0..SSTABLES {
        let m = Mutation::builder(DecoratedKey::from_bytes(format!("key{i}")).unwrap())
            .cell(
                "ck",
                0,
                Cell::live(vec![i as u8; 100], Timestamp::from_micros(1)),
            )
            .build()
            .unwrap();
        let sst = write(dir.path(), &m.fragments(), WriterOptions::default());
        generations.push(sst.generation());
    }
    let written = open_fds().unwrap();
    let open: Vec<Sstable> = generations
        .iter()
        .map(|&g| Sstable::open(dir.path(), g).unwrap())
        .collect();
    let after = open_fds().unwrap();
    // Writing left nothing open, and opening took two descriptors each,
    // all held by the cache.
    assert_eq!(written, before, "the writer left descriptors open");
    assert_eq!(after - written, 2 * SSTABLES);
    assert_eq!(sstable::open_files(), 2 * SSTABLES);
    // Reads and the verifier still work on every one of them.
    for (i, sst) in open.iter().enumerate() {
        let key = DecoratedKey::from_bytes(format!("key{i}")).unwrap();
        let fragments = sst
            .read_partition(&key)
            .unwrap()
            .expect("the partition is there");
        assert!(!fragments.is_empty());
        assert!(!drain(&mut sst.scan()).is_empty());
        sst.verify().unwrap();
    }
    drop(open);
    assert_eq!(sstable::open_files(), 0);
    assert_eq!(open_fds().unwrap(), written);
}
