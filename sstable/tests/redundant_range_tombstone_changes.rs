//! A valid stream may carry range tombstone changes that change nothing
//! (closing when nothing is open, or re-opening the tombstone already in
//! force): the validator accepts them, so the writer stores them, and every
//! read path (scan, point lookup, full slice) gives the same stream back.

mod common;

use common::*;
use mutation::{
    ClusteringKey, ClusteringRange, DecoratedKey, Fragment, PartitionRange, Position, Row,
    RowMarker, Timestamp, Tombstone, validate_stream,
};

#[test]
fn no_op_range_tombstone_changes_read_back_on_every_path() {
    let ck = |s: &str| ClusteringKey::new(s.as_bytes().to_vec()).unwrap();
    let t = Some(Tombstone::new(Timestamp::from_micros(1), 0));
    let key = DecoratedKey::from_bytes(b"p".to_vec()).unwrap();
    let rtc = |p, t| Fragment::RangeTombstoneChange {
        position: p,
        tombstone: t,
    };
    let fragments = vec![
        Fragment::PartitionStart {
            key: key.clone(),
            tombstone: None,
        },
        rtc(Position::Before(ck("a")), None),
        Fragment::ClusteringRow {
            key: ck("b"),
            row: Row::new().with_marker(RowMarker::new(Timestamp::from_micros(5))),
        },
        rtc(Position::Before(ck("c")), t),
        rtc(Position::After(ck("c")), t),
        rtc(Position::Before(ck("d")), None),
        Fragment::PartitionEnd,
    ];
    validate_stream(&fragments).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let table = write(dir.path(), &fragments, small_options(false));
    table.verify().unwrap();
    assert_eq!(drain(&mut table.scan()), fragments);
    assert_eq!(table.read_partition(&key).unwrap().unwrap(), fragments);
    assert_eq!(
        table
            .read_slice(&key, &ClusteringRange::full())
            .unwrap()
            .unwrap(),
        fragments
    );
    let mut r = table
        .make_reader_opt(
            &PartitionRange::single_key(key.clone()),
            Some(ClusteringRange::full()),
        )
        .unwrap()
        .unwrap();
    assert_eq!(drain(&mut r), fragments);
}
