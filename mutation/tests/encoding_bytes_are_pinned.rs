//! `Mutation::encode` writes exactly the bytes of version 1, and those bytes
//! decode to the mutation: a commit log written by an earlier build stays
//! readable. A change to the encoding must bump [`ENCODING_VERSION`] and
//! keep reading these bytes.

use mutation::testing::{hex, unhex};
use mutation::{
    Bound, Cell, DecoratedKey, ENCODING_VERSION, Mutation, RowMarker, Timestamp, Tombstone, Ttl,
};

/// Every field of the format: a partition tombstone, a static row, live,
/// expiring and dead cells, a marker with and without a TTL, a row
/// tombstone, range tombstones with inclusive, exclusive and open bounds.
fn sample() -> Mutation {
    let ts = Timestamp::from_micros;
    let ttl = Ttl::new(10, 100).unwrap();
    Mutation::builder(DecoratedKey::from_bytes("pk").unwrap())
        .partition_tombstone(Tombstone::new(ts(1), 7))
        .static_cell(3, Cell::live("s", ts(5)))
        .cell("a", 1, Cell::live("v", ts(5)))
        .cell("a", 300, Cell::expiring("e", ts(6), ttl))
        .cell("b", 1, Cell::tombstone(ts(7), 9))
        .row_marker("c", RowMarker::expiring(ts(8), ttl))
        .row_marker("d", RowMarker::new(ts(9)))
        .row_tombstone("d", Tombstone::new(ts(3), 2))
        .range_tombstone_bounds(
            Bound::Included("f"),
            Bound::Excluded("g"),
            Tombstone::new(ts(4), 1),
        )
        .range_tombstone_bounds(
            Bound::Excluded("h"),
            Bound::Unbounded,
            Tombstone::new(ts(2), 1),
        )
        .build()
        .unwrap()
}

const PINNED: &str = concat!(
    "010200706b030100000000000000070000000001000000030000000005000000",
    "0000000001000000730400000001006100020000000100000000050000000000",
    "000001000000762c0100000106000000000000000a0000006400000001000000",
    "6501006200010000000100000002070000000000000009000000010063030800",
    "0000000000000a00000064000000000000000100640509000000000000000300",
    "0000000000000200000000000000020000000101006602010067040000000000",
    "0000010000000201006800020000000000000001000000",
);

#[test]
fn version_1_bytes_are_pinned() {
    assert_eq!(ENCODING_VERSION, 1);
    let m = sample();
    assert_eq!(hex(&m.encode()), PINNED);
}

#[test]
fn pinned_bytes_decode_to_the_mutation() {
    let bytes = unhex(PINNED);
    assert_eq!(Mutation::decode(&bytes).unwrap(), sample());
    assert_eq!(
        Mutation::decode_shared(&bytes::Bytes::from(bytes)).unwrap(),
        sample()
    );
}
