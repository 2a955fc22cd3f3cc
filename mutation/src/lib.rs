//! `mutation`: the shared vocabulary of the replica's memtables and
//! sstables. It defines keys and tokens, cells, rows and tombstones, the
//! rules that decide which write wins (reconciliation), and the ordered
//! stream of mutation fragments that every reader produces and every writer
//! consumes. It knows nothing of memory regions or files, so memtable and
//! sstable can both depend on it without depending on each other.
//!
//! ```
//! use mutation::{Cell, DecoratedKey, Fragment, Mutation, Timestamp, Tombstone};
//!
//! let key = DecoratedKey::from_bytes("user:42")?;
//! let old = Mutation::builder(key.clone())
//!     .cell("profile", 1, Cell::live("alice", Timestamp::from_micros(10)))
//!     .build()?;
//! let new = Mutation::builder(key.clone())
//!     .cell("profile", 1, Cell::live("alicia", Timestamp::from_micros(20)))
//!     .build()?;
//! // The higher timestamp wins, whatever the order of application.
//! let merged = old.clone().merge(new.clone())?;
//! assert_eq!(merged, new.merge(old)?);
//! let fragments = merged.fragments();
//! assert!(matches!(fragments[0], Fragment::PartitionStart { .. }));
//! assert!(matches!(fragments.last(), Some(Fragment::PartitionEnd)));
//! # Ok::<(), mutation::Error>(())
//! ```
//!
//! # Keys and ring order
//!
//! A [`PartitionKey`] is 1 to 65,535 bytes. Its [`Token`] is the Murmur3
//! token of Cassandra's `Murmur3Partitioner` (the first half of the x64
//! 128-bit hash with seed 0, with Cassandra's signed tail-byte quirk, and
//! `i64::MIN` mapped to `i64::MAX`). A [`DecoratedKey`] orders partitions by
//! token, then by key bytes. A [`ClusteringKey`] orders rows bytewise.
//!
//! # Reconciliation (Cassandra's rules)
//!
//! * Of two versions of a cell the higher write timestamp wins.
//! * On equal timestamps a tombstone beats a live cell (two tombstones: the
//!   later local deletion time wins).
//! * Two live cells with equal timestamps: the expiring one wins; of two
//!   expiring ones the later expiry wins; then the larger value bytewise
//!   (then the longer TTL), so the result never depends on order.
//! * Tombstones compare by timestamp, then local deletion time.
//! * Row markers reconcile like live cells without a value: higher
//!   timestamp, then expiring over non-expiring, then later expiry.
//! * Reconciliation never reads the clock: an expiring cell whose expiry
//!   has passed is still a live cell here (expiry and tombstone garbage
//!   collection belong to reads and compaction), so results are
//!   deterministic.
//! * Data is *shadowed* by a tombstone that covers it (the partition
//!   tombstone, a range tombstone over its row, or its row tombstone) with a
//!   timestamp greater than or equal to its own. A [`Mutation`] removes
//!   shadowed data eagerly, and so does the merging reader, so results are
//!   canonical: [`Mutation::apply`] is commutative, associative and
//!   idempotent.
//!
//! # Fragment streams
//!
//! [`Fragment`] and [`FragmentReader`] describe the ordered stream; see
//! [`Fragment`] for the ordering rules. Range tombstones travel as
//! [`Fragment::RangeTombstoneChange`]s at clustering [`Position`]s.
//!
//! * [`from_mutations`] reads mutations given in any order (sstable tests
//!   need no memtable); [`FragmentsReader`] replays a recorded stream;
//!   [`to_mutations`] collects a stream back into mutations.
//! * [`MergingReader`] merges any number of readers into one reconciled
//!   stream, equal to the stream of the reconciled mutations.
//! * [`StreamValidator`], [`ValidatingReader`] and [`validate_stream`]
//!   check the ordering rules and report the first violation.
//!
//! # Encodings
//!
//! [`codec`] holds the primitives every encoding of the data model is
//! built from (varints, timestamps, tombstones, TTLs, keys, bounds, rows
//! and cells, and a bounds-checked [`codec::Reader`]); each format (the
//! commit log's [`Mutation::encode`], the memtable's region entries, the
//! sstable's blocks) names its own [`codec::Format`] (its
//! [`codec::Layout`]) and keeps its own version.
//!
//! # Size limits
//!
//! [`limits`] defines the largest key, cell value and mutation that every
//! layer accepts (derived from the sstable format's limits); the builder
//! refuses anything larger, so a memtable never holds data its flush cannot
//! write.
//!
//! # Features
//!
//! `proptest-strategies` adds the `testing` module: proptest strategies
//! that generate valid mutations (`testing::arb_mutations()`), for property
//! tests of crates that consume or produce fragment streams.
#![forbid(unsafe_code)]

mod cell;
pub mod codec;
mod encode;
mod error;
mod fragment;
mod key;
pub mod limits;
mod merging;
mod murmur3;
mod mutation;
mod range;
mod range_tombstone;
mod reader;
mod row;
#[cfg(feature = "proptest-strategies")]
pub mod testing;
mod validate;

pub use std::ops::Bound;

pub use crate::cell::{Cell, MAX_TTL_SECONDS, RowMarker, Timestamp, Tombstone, Ttl};
pub use crate::encode::ENCODING_VERSION;
pub use crate::error::Error;
pub use crate::fragment::{Fragment, FragmentReader};
pub use crate::key::{ClusteringKey, DecoratedKey, MAX_KEY_LEN, PartitionKey, Token};
pub use crate::merging::MergingReader;
pub use crate::mutation::{Mutation, MutationBuilder, MutationFragments};
pub use crate::range::{ClusteringRange, PartitionRange, Position, RingPosition};
pub use crate::range_tombstone::{RangeTombstone, RangeTombstoneList};
pub use crate::reader::{
    FragmentsReader, MutationsReader, collect_partition, from_mutations, to_mutations,
};
pub use crate::row::{ColumnId, Row};
pub use crate::validate::{StreamValidator, ValidatingReader, validate_stream};

// The README's example runs as a doc test, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
