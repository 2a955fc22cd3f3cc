//! What the census tests share.

use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

/// Row `i` (clustering key `i`, 100 bytes) of partition `i % partitions`.
pub(crate) fn row(i: u64, partitions: u64) -> Mutation {
    let key = DecoratedKey::from_bytes(format!("key-{}", i % partitions)).unwrap();
    Mutation::builder(key)
        .cell(
            i.to_be_bytes().to_vec(),
            0,
            Cell::live(vec![7u8; 100], Timestamp::from_micros(i as i64 + 1)),
        )
        .build()
        .unwrap()
}
