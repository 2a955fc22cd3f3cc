//! Bad inputs are errors that name the problem: missing sstables and
//! components, bad file names, unusable directories, and fragments beyond
//! the format's limits. Keys and values at the limits round-trip.

mod common;

use common::*;
use mutation::{Cell, ClusteringKey, DecoratedKey, Fragment, Mutation, Row, Timestamp};
use sstable::{Component, Error, Sstable, Writer, WriterOptions, component_path};

#[test]
fn open_reports_missing_things() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Sstable::open(dir.path(), 7),
        Err(Error::NotFound { generation: 7, .. })
    ));
    let m = Mutation::builder(DecoratedKey::from_bytes(b"k".to_vec()).unwrap())
        .cell(
            b"c".to_vec(),
            0,
            Cell::live(b"v".to_vec(), Timestamp::from_micros(1)),
        )
        .build()
        .unwrap();
    let t = write(dir.path(), &m.fragments(), WriterOptions::default());
    std::fs::remove_file(component_path(
        dir.path(),
        t.generation(),
        Component::Filter,
    ))
    .unwrap();
    let e = Sstable::open(dir.path(), t.generation()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::MissingComponent {
                component: Component::Filter,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("Filter"), "{e}");

    let e = Sstable::open_path(dir.path().join("sst-x-Data.db")).unwrap_err();
    assert!(matches!(e, Error::BadFileName { .. }), "{e}");

    let e = Writer::create(dir.path().join("no/such/dir"), WriterOptions::default()).unwrap_err();
    assert!(
        matches!(e, Error::Io { .. }) && e.to_string().contains("no/such/dir"),
        "{e}"
    );
}

#[test]
fn keys_and_values_at_the_limits_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let key = DecoratedKey::from_bytes(vec![7u8; 65_535]).unwrap();
    let m = Mutation::builder(key.clone())
        .cell(
            vec![9u8; 65_535],
            3,
            Cell::live(vec![1u8; 3 << 20], Timestamp::from_micros(i64::MAX)),
        )
        .cell(
            vec![0u8],
            4,
            Cell::live(Vec::new(), Timestamp::from_micros(i64::MIN + 1)),
        )
        .build()
        .unwrap();
    let t = write(dir.path(), &m.fragments(), WriterOptions::default());
    t.verify().unwrap();
    assert_eq!(t.read_partition(&key).unwrap().unwrap(), m.fragments());
    assert_eq!(t.statistics().min_timestamp, Some(i64::MIN + 1));
    assert_eq!(t.statistics().max_timestamp, Some(i64::MAX));
}

#[test]
fn fragment_larger_than_a_block_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let key = DecoratedKey::from_bytes(b"big".to_vec()).unwrap();
    // The mutation builder refuses a value this large (mutation::limits), so
    // the fragments are made directly: the writer must still refuse them.
    let row = Row::new().with_cell(
        0,
        Cell::live(vec![0u8; (64 << 20) + 1], Timestamp::from_micros(1)),
    );
    let fragments = [
        Fragment::PartitionStart {
            key,
            tombstone: None,
        },
        Fragment::ClusteringRow {
            key: ClusteringKey::new(b"c".to_vec()).unwrap(),
            row,
        },
        Fragment::PartitionEnd,
    ];
    let mut w = Writer::create(dir.path(), WriterOptions::default()).unwrap();
    let mut result = Ok(());
    for f in fragments {
        result = w.write(&f);
        if result.is_err() {
            assert!(matches!(f, Fragment::ClusteringRow { .. }));
            break;
        }
    }
    let e = result.unwrap_err();
    assert!(
        matches!(e, Error::TooLarge { what: "fragment", limit, .. } if limit == 64 << 20),
        "{e}"
    );
    assert!(
        e.to_string().contains("exceeds the 67108864-byte limit"),
        "{e}"
    );
    assert!(w.commit().is_err());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
