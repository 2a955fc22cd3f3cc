//! A full scan reads its Data file with direct I/O through a descriptor of
//! its own, held while the scan lives; `set_direct_scans(false)` makes
//! scans read through the page cache, on a descriptor of their own too
//! (the shared one serves point reads, advised random reads; the scan's
//! keeps the kernel's read-ahead). Both read the same fragments.
//!
//! The setting is process-wide, so this is the only test in this binary.

mod common;

use common::*;
use mutation::{Cell, DecoratedKey, Fragment, FragmentReader, Mutation, Timestamp};
use sstable::{Component, Sstable, WriterOptions};

/// Descriptors of this process open on `path` (Linux: /proc/self/fd).
fn descriptors_on(path: &std::path::Path) -> Option<usize> {
    let want = std::fs::canonicalize(path).ok()?;
    let fds = std::fs::read_dir("/proc/self/fd").ok()?;
    Some(
        fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target == &want)
            .count(),
    )
}

/// Scans `sst`, returning its fragments and the descriptors open on its
/// Data file after the first fragment (the scan's first window is read).
fn scan(sst: &Sstable) -> (Vec<Fragment>, Option<usize>) {
    let data = sst.component_path(Component::Data).to_path_buf();
    let mut reader = sst.scan();
    let mut out = vec![reader.next().unwrap().expect("a fragment")];
    let during = descriptors_on(&data);
    while let Some(f) = reader.next().unwrap() {
        out.push(f);
    }
    (out, during)
}

#[test]
fn scans_read_directly_unless_turned_off_and_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let mutations: Vec<Mutation> = (0..300u32)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(format!("key{i:04}")).unwrap())
                .cell(
                    "ck",
                    0,
                    Cell::live(vec![(i % 251) as u8; 5000], Timestamp::from_micros(1)),
                )
                .build()
                .unwrap()
        })
        .collect();
    let (fragments, _) = canonical(&mutations);
    let sst = write(dir.path(), &fragments, WriterOptions::default());
    let data = sst.component_path(Component::Data).to_path_buf();

    assert!(sstable::direct_scans(), "on by default");
    let (direct, during) = scan(&sst);
    assert_eq!(direct, fragments);
    let supported = std::fs::File::open(&data)
        .ok()
        .and_then(|f| writeback::direct::DirectReader::reopen(&f).ok().flatten())
        .is_some();
    match during {
        None => eprintln!("descriptor counts skipped: no /proc/self/fd here"),
        // The cache's descriptor and the scan's own.
        Some(n) if supported => assert_eq!(n, 2, "a direct scan holds its own descriptor"),
        Some(n) => {
            eprintln!(
                "direct reads skipped: no O_DIRECT on {}",
                dir.path().display()
            );
            assert_eq!(n, 2, "the scan reads through the page cache on its own");
        }
    }
    // The scan's descriptor went with it.
    if let Some(n) = descriptors_on(&data) {
        assert_eq!(n, 1, "only the cache's descriptor is left");
    }

    sstable::set_direct_scans(false);
    assert!(!sstable::direct_scans());
    let (cached, during) = scan(&sst);
    assert_eq!(cached, fragments);
    if let Some(n) = during {
        assert_eq!(
            n, 2,
            "a scan through the page cache reads on a descriptor of its own"
        );
    }
    if let Some(n) = descriptors_on(&data) {
        assert_eq!(n, 1, "only the cache's descriptor is left");
    }
    sstable::set_direct_scans(true);
}
