//! An out-of-order or malformed fragment stream is an error from the
//! writer, not a corrupt file: nothing is committed and nothing is left.

mod common;

use common::*;
use mutation::{ClusteringKey, DecoratedKey, Fragment, Position, Row, Timestamp, Tombstone};
use sstable::{Error, Writer, WriterOptions};

fn start(k: &[u8]) -> Fragment {
    Fragment::PartitionStart {
        key: DecoratedKey::from_bytes(k.to_vec()).unwrap(),
        tombstone: None,
    }
}

fn row(k: &[u8]) -> Fragment {
    Fragment::ClusteringRow {
        key: ClusteringKey::new(k.to_vec()).unwrap(),
        row: Row::new().with_marker(mutation::RowMarker::new(Timestamp::from_micros(1))),
    }
}

fn sorted_keys() -> (Vec<u8>, Vec<u8>) {
    let a = DecoratedKey::from_bytes(b"a".to_vec()).unwrap();
    let b = DecoratedKey::from_bytes(b"b".to_vec()).unwrap();
    if a < b {
        (b"a".to_vec(), b"b".to_vec())
    } else {
        (b"b".to_vec(), b"a".to_vec())
    }
}

fn rejected(stream: Vec<Fragment>) -> Error {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), small_options(false)).unwrap();
    let mut err = None;
    for f in stream {
        if let Err(e) = w.write(&f) {
            err = Some(e);
            break;
        }
    }
    let err = match err {
        Some(e) => {
            // The writer is poisoned: commit fails too.
            assert!(matches!(
                w.write(&Fragment::PartitionEnd),
                Err(Error::InvalidStream { .. })
            ));
            assert!(w.commit().is_err());
            e
        }
        None => w.commit().unwrap_err(),
    };
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "files left behind"
    );
    err
}

#[test]
fn out_of_order_streams_are_rejected() {
    let (lo, hi) = sorted_keys();
    let cases = vec![
        vec![
            start(&hi),
            Fragment::PartitionEnd,
            start(&lo),
            Fragment::PartitionEnd,
        ],
        vec![
            start(&lo),
            Fragment::PartitionEnd,
            start(&lo),
            Fragment::PartitionEnd,
        ],
        vec![start(&lo), row(b"b"), row(b"a"), Fragment::PartitionEnd],
        vec![start(&lo), row(b"a"), row(b"a"), Fragment::PartitionEnd],
        vec![
            start(&lo),
            row(b"a"),
            Fragment::StaticRow(Row::new()),
            Fragment::PartitionEnd,
        ],
        vec![row(b"a")],
        vec![start(&lo), start(&hi)],
        vec![Fragment::PartitionEnd],
        vec![start(&lo), row(b"a")],
        vec![
            start(&lo),
            Fragment::RangeTombstoneChange {
                position: Position::Before(ClusteringKey::new(b"a".to_vec()).unwrap()),
                tombstone: Some(Tombstone::new(Timestamp::from_micros(1), 0)),
            },
            Fragment::PartitionEnd,
        ],
    ];
    for stream in cases {
        let e = rejected(stream.clone());
        assert!(matches!(e, Error::InvalidStream { .. }), "{stream:?}: {e}");
        assert!(e.to_string().contains("fragment"), "{e}");
    }
}

#[test]
fn bad_options_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = WriterOptions::default();
    o.bloom_fp_rate = 0.0;
    let e = Writer::create(dir.path(), o).unwrap_err();
    assert!(e.to_string().contains("bloom_fp_rate"), "{e}");
    let mut o = WriterOptions::default();
    o.block_size = 1;
    assert!(matches!(
        Writer::create(dir.path(), o),
        Err(Error::InvalidOption {
            name: "block_size",
            ..
        })
    ));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
