//! An sstable whose files were deleted while it was open keeps reading
//! while the cache holds its files open; once the cache has closed them a
//! read is an I/O error naming the Data file, never stale bytes.
//!
//! The capacity is process-wide, so this is the only test in this binary.

mod common;

use std::error::Error as _;

use common::*;
use mutation::{Cell, DecoratedKey, FragmentReader, Mutation, Timestamp};
use sstable::{Component, Error, Sstable, WriterOptions};

fn one_partition(key: &str) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(key.to_owned()).unwrap())
        .cell("ck", 0, Cell::live("v", Timestamp::from_micros(1)))
        .build()
        .unwrap()
}

#[test]
fn reading_a_deleted_and_evicted_sstable_names_the_file() {
    sstable::set_max_open_files(2).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let m = one_partition("doomed");
    let doomed = write(dir.path(), &m.fragments(), WriterOptions::default());
    let others: Vec<Sstable> = (0..2)
        .map(|i| {
            write(
                dir.path(),
                &one_partition(&format!("other{i}")).fragments(),
                WriterOptions::default(),
            )
        })
        .collect();

    // Reading `doomed` puts its Data and Index files in the cache.
    assert_eq!(doomed.read_partition(m.key()).unwrap(), Some(m.fragments()));
    let data = doomed.component_path(Component::Data).to_path_buf();
    for c in Component::ALL {
        std::fs::remove_file(doomed.component_path(c)).unwrap();
    }
    // Still cached: the open descriptors read the unlinked files.
    assert_eq!(doomed.read_partition(m.key()).unwrap(), Some(m.fragments()));

    // Reads of the other sstables evict both of `doomed`'s files.
    for (i, o) in others.iter().enumerate() {
        let key = DecoratedKey::from_bytes(format!("other{i}")).unwrap();
        assert!(o.read_partition(&key).unwrap().is_some());
    }
    let err = doomed
        .read_partition(m.key())
        .expect_err("the files are gone and closed");
    let Error::Io { path, source, .. } = &err else {
        panic!("expected an I/O error, got {err:?}");
    };
    let index = doomed.component_path(Component::Index);
    assert!(
        path == &data || path == index,
        "error names {}, not a file of the deleted sstable",
        path.display()
    );
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    assert!(
        source.to_string().contains(&path.display().to_string()),
        "the cause names the file: {source}"
    );
    assert!(err.source().is_some());
    // The scan fails the same way, and so does the verifier.
    assert!(doomed.scan().next().is_err());
    assert!(matches!(doomed.verify(), Err(Error::Io { .. })));
}
