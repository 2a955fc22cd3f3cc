//! The crate's one error type.

use crate::Timestamp;

/// Everything that can go wrong in this crate: bad input to a constructor or a
/// builder, a fragment stream that breaks the ordering rules, or a failure
/// reported by an underlying fragment source (an sstable file, for example).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A partition key must have at least one byte.
    #[error("partition key is empty; a partition key needs at least 1 byte")]
    EmptyPartitionKey,
    /// A partition key longer than [`crate::MAX_KEY_LEN`].
    #[error("partition key of {len} bytes exceeds the 65535-byte limit")]
    PartitionKeyTooLong {
        /// Length of the rejected key.
        len: usize,
    },
    /// A clustering key longer than [`crate::MAX_KEY_LEN`].
    #[error("clustering key of {len} bytes exceeds the 65535-byte limit")]
    ClusteringKeyTooLong {
        /// Length of the rejected key.
        len: usize,
    },
    /// A cell value longer than [`crate::limits::MAX_CELL_VALUE_LEN`].
    #[error("cell value of {len} bytes exceeds the {limit}-byte limit")]
    CellValueTooLarge {
        /// Length of the rejected value.
        len: usize,
        /// The limit ([`crate::limits::MAX_CELL_VALUE_LEN`]).
        limit: usize,
    },
    /// A mutation whose encoded size (the larger of its sstable encoding's
    /// [`crate::limits::size_bound`] and its binary
    /// [`encoded_len`](crate::Mutation::encoded_len)) exceeds
    /// [`crate::limits::MAX_MUTATION_SIZE`].
    #[error("mutation of partition {key} of up to {size} bytes exceeds the {limit}-byte limit")]
    MutationTooLarge {
        /// The partition, rendered.
        key: String,
        /// The mutation's encoded size, the larger of the two measures.
        size: usize,
        /// The limit ([`crate::limits::MAX_MUTATION_SIZE`]).
        limit: usize,
    },
    /// A clustering range whose start lies after its end.
    #[error("clustering range start {start} is after its end {end}")]
    ClusteringRangeReversed {
        /// The start bound, rendered for the message.
        start: String,
        /// The end bound, rendered for the message.
        end: String,
    },
    /// A partition range whose start lies after its end (wrap-around ranges
    /// must be split by the caller).
    #[error("partition range start {start} is after its end {end}")]
    PartitionRangeReversed {
        /// The start bound, rendered for the message.
        start: String,
        /// The end bound, rendered for the message.
        end: String,
    },
    /// A write timestamp outside [`Timestamp::MIN`]..=[`Timestamp::MAX`].
    #[error("{what} timestamp {micros} is out of range (allowed: {min}..={max} microseconds)", min = Timestamp::MIN.micros(), max = Timestamp::MAX.micros())]
    TimestampOutOfRange {
        /// Which timestamp (for example "cell", "row marker", "range tombstone").
        what: &'static str,
        /// The rejected value in microseconds.
        micros: i64,
    },
    /// A TTL that is zero, above [`crate::MAX_TTL_SECONDS`], or inconsistent
    /// with its expiry time.
    #[error("invalid TTL of {ttl} seconds expiring at {expiry}: {reason}")]
    InvalidTtl {
        /// The TTL in seconds.
        ttl: u32,
        /// The expiry time in seconds since the Unix epoch.
        expiry: u32,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two mutations for different partitions cannot be merged.
    #[error("cannot merge mutations of different partitions: {left} and {right}")]
    PartitionKeyMismatch {
        /// The key of the mutation being applied to, rendered.
        left: String,
        /// The key of the mutation being applied, rendered.
        right: String,
    },
    /// A fragment stream broke an ordering invariant. `index` counts the
    /// fragments seen before the offending one (0-based), `partition` names
    /// the partition it happened in, if any.
    #[error("invalid fragment stream at fragment #{index} (partition {partition}): {detail}")]
    InvalidStream {
        /// 0-based index of the offending fragment (or of the end of the stream).
        index: u64,
        /// The partition the violation happened in, rendered, or "none".
        partition: String,
        /// What was wrong.
        detail: String,
    },
    /// An underlying fragment source failed (for example an I/O or
    /// corruption error of an sstable reader).
    #[error("fragment source failed")]
    Source(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// Bytes that are not a valid [`crate::Mutation`] encoding (see
    /// [`crate::Mutation::decode`]).
    #[error("cannot decode mutation at byte {offset}: {detail}")]
    Decode {
        /// Offset in the input where the problem was found.
        offset: usize,
        /// What was wrong.
        detail: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_wrapped_cause_is_the_source_and_is_not_repeated_in_the_message() {
        let cause = std::io::Error::other("disk on fire");
        let err = Error::Source(Box::new(cause));
        assert_eq!(err.to_string(), "fragment source failed");
        assert_eq!(err.source().expect("a source").to_string(), "disk on fire");
    }
}
