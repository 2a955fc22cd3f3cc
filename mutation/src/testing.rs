//! Proptest strategies that generate valid keys, cells, rows and
//! mutations, for property tests in this and other crates (enable the
//! `proptest-strategies` feature), and the hex form the encodings' pinned
//! bytes are written in ([`hex`], [`unhex`]).
//!
//! Values are drawn from small domains on purpose: few keys, few columns,
//! timestamps in `0..8`, so that generated mutations collide on partition
//! and clustering keys and tie on timestamps, which is where reconciliation
//! rules matter.
//!
//! ```
//! use mutation::testing::arb_mutations;
//! use mutation::{from_mutations, to_mutations, Mutation};
//! use proptest::prelude::*;
//!
//! proptest!(ProptestConfig::with_cases(16), |(ms in arb_mutations())| {
//!     let back = to_mutations(&mut from_mutations(ms.clone())).unwrap();
//!     prop_assert_eq!(back, Mutation::reconcile_all(ms));
//! });
//! ```

use std::ops::Bound;

use bytes::Bytes;
use proptest::prelude::*;

use crate::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Mutation, PartitionKey, Row, RowMarker,
    Timestamp, Tombstone, Ttl,
};

/// Timestamps in `0..8` (ties are likely).
pub fn arb_timestamp() -> impl Strategy<Value = Timestamp> {
    (0i64..8).prop_map(Timestamp::from_micros)
}

/// A valid TTL with a small TTL and expiry.
pub fn arb_ttl() -> impl Strategy<Value = Ttl> {
    (1u32..4, 0u32..3).prop_map(|(ttl, extra)| {
        Ttl::new(ttl, 100 + extra).expect("1..4 seconds expiring at 100..103 is a valid TTL")
    })
}

/// A tombstone with a small timestamp and local deletion time.
pub fn arb_tombstone() -> impl Strategy<Value = Tombstone> {
    (arb_timestamp(), 0u32..3).prop_map(|(ts, ldt)| Tombstone::new(ts, ldt))
}

/// Value bytes: 0 to 2 bytes over a 3-letter alphabet.
pub fn arb_value() -> impl Strategy<Value = Bytes> {
    prop::collection::vec(0u8..3, 0..3).prop_map(Bytes::from)
}

/// A live, expiring or dead cell.
pub fn arb_cell() -> impl Strategy<Value = Cell> {
    prop_oneof![
        3 => (arb_value(), arb_timestamp()).prop_map(|(v, ts)| Cell::live(v, ts)),
        1 => (arb_value(), arb_timestamp(), arb_ttl())
            .prop_map(|(v, ts, ttl)| Cell::expiring(v, ts, ttl)),
        1 => (arb_timestamp(), 0u32..3).prop_map(|(ts, ldt)| Cell::tombstone(ts, ldt)),
    ]
}

/// A row marker, expiring or not.
pub fn arb_row_marker() -> impl Strategy<Value = RowMarker> {
    (arb_timestamp(), prop::option::weighted(0.3, arb_ttl()))
        .prop_map(|(ts, ttl)| RowMarker { timestamp: ts, ttl })
}

/// A row: maybe a marker, rarely a row tombstone, up to 3 cells among
/// columns 0..4.
pub fn arb_row() -> impl Strategy<Value = Row> {
    (
        prop::option::weighted(0.4, arb_row_marker()),
        prop::option::weighted(0.15, arb_tombstone()),
        prop::collection::btree_map(0u32..4, arb_cell(), 0..4),
    )
        .prop_map(|(marker, tombstone, cells)| Row {
            marker,
            tombstone,
            cells,
        })
}

/// Clustering keys of 0 to 2 bytes over a 4-letter alphabet.
pub fn arb_clustering_key() -> impl Strategy<Value = ClusteringKey> {
    prop::collection::vec(0u8..4, 0..3)
        .prop_map(|v| ClusteringKey::new(v).expect("2-byte clustering keys are within limits"))
}

/// A clustering bound: open, inclusive or exclusive.
pub fn arb_clustering_bound() -> impl Strategy<Value = Bound<ClusteringKey>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        3 => arb_clustering_key().prop_map(Bound::Included),
        3 => arb_clustering_key().prop_map(Bound::Excluded),
    ]
}

/// A valid clustering range (start not after end; possibly empty).
pub fn arb_clustering_range() -> impl Strategy<Value = ClusteringRange> {
    (arb_clustering_bound(), arb_clustering_bound()).prop_map(|(a, b)| {
        ClusteringRange::new(a.clone(), b.clone())
            .or_else(|_| ClusteringRange::new(swap_side(b), swap_side(a)))
            .unwrap_or_else(|_| ClusteringRange::full())
    })
}

/// Reverses the side a bound is used on, keeping the same cut point:
/// an end `k)` becomes a start `[k`, an end `k]` becomes a start `(k`.
fn swap_side(b: Bound<ClusteringKey>) -> Bound<ClusteringKey> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Excluded(k),
        Bound::Excluded(k) => Bound::Included(k),
    }
}

/// Partition keys from a set of 20 (one or two bytes over a 4-letter
/// alphabet), so that mutations often share a partition.
pub fn arb_partition_key() -> impl Strategy<Value = DecoratedKey> {
    prop::collection::vec(0u8..4, 1..=2).prop_map(|v| {
        PartitionKey::new(v)
            .expect("1..=2-byte partition keys are valid")
            .decorate()
    })
}

/// A mutation of the partition `key`: rarely a partition tombstone, maybe a
/// static row, up to 4 rows and up to 2 range tombstones.
pub fn arb_mutation_for(key: DecoratedKey) -> impl Strategy<Value = Mutation> {
    (
        prop::option::weighted(0.1, arb_tombstone()),
        prop::option::weighted(0.3, arb_row()),
        prop::collection::vec((arb_clustering_key(), arb_row()), 0..5),
        prop::collection::vec((arb_clustering_range(), arb_tombstone()), 0..3),
    )
        .prop_map(move |(pt, static_row, rows, rts)| {
            let mut b = Mutation::builder(key.clone());
            if let Some(t) = pt {
                b = b.partition_tombstone(t);
            }
            if let Some(r) = static_row {
                b = b.static_row(r);
            }
            for (k, r) in rows {
                b = b.row(k, r);
            }
            for (range, t) in rts {
                b = b.range_tombstone(range, t);
            }
            b.build()
                .expect("generated parts are valid: keys, TTLs, ranges and timestamps")
        })
}

/// A mutation of a random partition (see [`arb_partition_key`]).
pub fn arb_mutation() -> impl Strategy<Value = Mutation> {
    arb_partition_key().prop_flat_map(arb_mutation_for)
}

/// 0 to 7 mutations in no particular order, often several per partition.
pub fn arb_mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(arb_mutation(), 0..8)
}

/// Every partition of `reader`, taken alternately whole
/// ([`FragmentReader::next_mutation`](crate::FragmentReader::next_mutation))
/// and collected from its fragments ([`crate::collect_partition`]): for
/// tests of a reader that hands partitions over whole, that the two
/// interleave (each leaves the stream where the other expects it).
///
/// # Errors
/// The reader's errors, or an invalid stream.
pub fn read_alternating<R: crate::FragmentReader + ?Sized>(
    reader: &mut R,
) -> Result<Vec<Mutation>, crate::Error> {
    let mut out = Vec::new();
    loop {
        let next = if out.len() % 2 == 0 {
            reader.next_mutation()?
        } else {
            crate::collect_partition(reader)?
        };
        match next {
            Some(m) => out.push(m),
            None => return Ok(out),
        }
    }
}

/// Bytes as lowercase hex, two digits a byte: how tests pin an encoding's
/// bytes.
///
/// ```
/// assert_eq!(mutation::testing::hex(&[0x01, 0xab]), "01ab");
/// ```
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a [`hex`] string.
///
/// # Panics
/// On an odd length or a character that is not a hex digit (a test's
/// constant).
///
/// ```
/// assert_eq!(mutation::testing::unhex("01ab"), [0x01, 0xab]);
/// ```
pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "hex of odd length {}", s.len());
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digits"))
        .collect()
}
