//! `make_reader_opt` returns `None` (not an empty reader) when the key
//! range or the filter rules every partition out, and a reader otherwise.

mod common;

use std::ops::Bound;

use common::*;
use mutation::{Cell, DecoratedKey, Mutation, PartitionRange, RingPosition, Timestamp, Token};

#[test]
fn none_when_nothing_can_match() {
    let dir = tempfile::tempdir().unwrap();
    let ms: Vec<Mutation> = (0..50u32)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(format!("key-{i}").into_bytes()).unwrap())
                .cell(
                    vec![1u8],
                    0,
                    Cell::live(b"v".to_vec(), Timestamp::from_micros(1)),
                )
                .build()
                .unwrap()
        })
        .collect();
    let (fragments, merged) = canonical(&ms);
    let table = write(dir.path(), &fragments, small_options(true));
    let (first, last) = table.key_range().unwrap();
    assert_eq!(first, merged[0].key());
    assert_eq!(last, merged[49].key());

    // Absent single keys: always None (filter, or no partition in range).
    for i in 0..200 {
        let k = DecoratedKey::from_bytes(format!("absent-{i}").into_bytes()).unwrap();
        assert!(
            table
                .make_reader_opt(&PartitionRange::single_key(k), None)
                .unwrap()
                .is_none()
        );
    }
    // Present single keys: a reader with exactly that partition.
    for m in &merged {
        let mut r = table
            .make_reader_opt(&PartitionRange::single_key(m.key().clone()), None)
            .unwrap()
            .unwrap();
        assert_eq!(drain(&mut r), m.fragments());
    }
    // Ranges before the first key, after the last key, and strictly
    // between two adjacent keys.
    let before = PartitionRange::new(
        Bound::Unbounded,
        Bound::Excluded(RingPosition::Key(first.clone())),
    )
    .unwrap();
    let after = PartitionRange::new(
        Bound::Excluded(RingPosition::Key(last.clone())),
        Bound::Unbounded,
    )
    .unwrap();
    let between = PartitionRange::new(
        Bound::Excluded(RingPosition::Key(merged[10].key().clone())),
        Bound::Excluded(RingPosition::Key(merged[11].key().clone())),
    )
    .unwrap();
    for range in [before, after, between] {
        assert!(
            table.make_reader_opt(&range, None).unwrap().is_none(),
            "{range}"
        );
    }
    // A token range covering everything.
    let all = PartitionRange::new(
        Bound::Included(RingPosition::Token(Token::MIN)),
        Bound::Unbounded,
    )
    .unwrap();
    let mut r = table.make_reader_opt(&all, None).unwrap().unwrap();
    assert_eq!(drain(&mut r), fragments);

    // An empty sstable rules everything out.
    let empty_dir = tempfile::tempdir().unwrap();
    let empty = write(empty_dir.path(), &[], small_options(true));
    assert!(empty.key_range().is_none());
    assert!(
        empty
            .make_reader_opt(&PartitionRange::full(), None)
            .unwrap()
            .is_none()
    );
    assert!(drain(&mut empty.scan()).is_empty());
    empty.verify().unwrap();
}
