//! Bad input returns an error that names the problem and the limit; it
//! never panics and never produces a partial mutation.

use std::ops::Bound;

use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Error, MAX_KEY_LEN, MAX_TTL_SECONDS,
    Mutation, PartitionKey, PartitionRange, RingPosition, Timestamp, Token, Tombstone, Ttl,
};

fn key() -> DecoratedKey {
    DecoratedKey::from_bytes("pk").unwrap()
}

#[test]
fn partition_keys() {
    assert_eq!(
        PartitionKey::new("").unwrap_err().to_string(),
        "partition key is empty; a partition key needs at least 1 byte"
    );
    assert_eq!(
        PartitionKey::new(vec![0u8; MAX_KEY_LEN + 1])
            .unwrap_err()
            .to_string(),
        "partition key of 65536 bytes exceeds the 65535-byte limit"
    );
    assert!(DecoratedKey::from_bytes(vec![0u8; 70_000]).is_err());
}

#[test]
fn clustering_keys_and_ranges() {
    assert_eq!(
        ClusteringKey::new(vec![0u8; 70_000])
            .unwrap_err()
            .to_string(),
        "clustering key of 70000 bytes exceeds the 65535-byte limit"
    );
    let k = |s: &str| ClusteringKey::new(s.as_bytes().to_vec()).unwrap();
    let err = ClusteringRange::new(Bound::Excluded(k("m")), Bound::Excluded(k("c"))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "clustering range start (0x6d is after its end 0x63)"
    );
    // [10, 10) is empty but well formed; (10, 10) ends before it starts.
    let t = || RingPosition::Token(Token::from_i64(10));
    assert!(PartitionRange::new(Bound::Included(t()), Bound::Excluded(t())).is_ok());
    let err = PartitionRange::new(Bound::Excluded(t()), Bound::Excluded(t())).unwrap_err();
    assert!(matches!(err, Error::PartitionRangeReversed { .. }), "{err}");
}

#[test]
fn timestamps_and_ttls() {
    let err = Timestamp::new(i64::MIN).unwrap_err().to_string();
    assert!(err.contains("out of range"), "{err}");
    assert!(Ttl::new(0, 100).is_err());
    let err = Ttl::new(MAX_TTL_SECONDS + 1, u32::MAX)
        .unwrap_err()
        .to_string();
    assert!(err.contains("630720000"), "{err}");
    let err = Ttl::new(50, 10).unwrap_err().to_string();
    assert!(err.contains("before the epoch"), "{err}");
}

#[test]
fn builder_reports_the_first_problem() {
    let missing = Timestamp::from_micros(i64::MIN);
    let ok = Timestamp::from_micros(1);
    let cases: Vec<(mutation::MutationBuilder, &str)> = vec![
        (
            Mutation::builder(key()).cell("c", 0, Cell::live("v", missing)),
            "cell timestamp",
        ),
        (
            Mutation::builder(key()).static_cell(0, Cell::tombstone(missing, 0)),
            "cell timestamp",
        ),
        (
            Mutation::builder(key()).row_tombstone("c", Tombstone::new(missing, 0)),
            "row tombstone timestamp",
        ),
        (
            Mutation::builder(key())
                .range_tombstone(ClusteringRange::full(), Tombstone::new(missing, 0)),
            "range tombstone timestamp",
        ),
        (
            Mutation::builder(key()).range_tombstone_bounds(
                Bound::Included("z"),
                Bound::Included("a"),
                Tombstone::new(ok, 0),
            ),
            "clustering range start",
        ),
        (
            Mutation::builder(key())
                .cell(vec![1u8; 65_536], 0, Cell::live("v", ok))
                .cell("c", 0, Cell::live("v", missing)),
            "clustering key of 65536 bytes",
        ),
    ];
    for (builder, expected) in cases {
        let err = builder.build().unwrap_err().to_string();
        assert!(
            err.starts_with(expected),
            "{err:?} should start with {expected:?}"
        );
    }
}

#[test]
fn applying_another_partition_changes_nothing() {
    let mut a = Mutation::builder(key())
        .cell("c", 0, Cell::live("v", Timestamp::from_micros(1)))
        .build()
        .unwrap();
    let before = a.clone();
    let other = Mutation::new(DecoratedKey::from_bytes("other").unwrap());
    let err = a.apply(other).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot merge mutations of different partitions")
    );
    assert_eq!(a, before);
}

/// A bad timestamp is reported even when a valid write to the same cell,
/// marker or tombstone comes after it (the builder merges as it goes, and
/// the out-of-range value, being the smallest, would otherwise lose the
/// merge and vanish without an error).
#[test]
fn builder_reports_a_bad_timestamp_superseded_by_a_valid_write() {
    use mutation::{Row, RowMarker};
    let missing = Timestamp::from_micros(i64::MIN);
    let ok = Timestamp::from_micros(1);
    let cases: Vec<(mutation::MutationBuilder, &str)> = vec![
        (
            Mutation::builder(key())
                .cell("c", 0, Cell::live("v", missing))
                .cell("c", 0, Cell::live("v", ok)),
            "cell timestamp",
        ),
        (
            Mutation::builder(key())
                .static_cell(0, Cell::tombstone(missing, 0))
                .static_cell(0, Cell::live("v", ok)),
            "cell timestamp",
        ),
        (
            Mutation::builder(key())
                .static_row(Row::new().with_marker(RowMarker::new(missing)))
                .static_row(Row::new().with_marker(RowMarker::new(ok))),
            "row marker timestamp",
        ),
        (
            Mutation::builder(key())
                .row_marker("c", RowMarker::new(missing))
                .row_marker("c", RowMarker::new(ok)),
            "row marker timestamp",
        ),
        (
            Mutation::builder(key())
                .row_tombstone("c", Tombstone::new(missing, 0))
                .row("c", Row::new().with_tombstone(Tombstone::new(ok, 0))),
            "row tombstone timestamp",
        ),
        (
            Mutation::builder(key())
                .partition_tombstone(Tombstone::new(missing, 0))
                .partition_tombstone(Tombstone::new(ok, 0)),
            "partition tombstone timestamp",
        ),
    ];
    for (builder, expected) in cases {
        let err = builder.build().unwrap_err().to_string();
        assert!(
            err.starts_with(expected),
            "{err:?} should start with {expected:?}"
        );
    }
}
