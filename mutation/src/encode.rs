//! A versioned binary encoding of [`Mutation`] (like ScyllaDB's frozen
//! mutation), shared by the commit log and any later user.
//!
//! # Format, version 1
//!
//! All integers are little-endian and fixed-width.
//!
//! ```text
//! mutation   = version:u8 (=1) key_len:u16 key flags:u8
//!              [partition tombstone]      if flags & 1
//!              [static row: row]          if flags & 2
//!              row_count:u32 (ck_len:u16 ck row)*    strictly increasing ck
//!              rt_count:u32 (start:bound end:bound tombstone)*
//! bound      = kind:u8 (0 unbounded, 1 inclusive, 2 exclusive) [ck_len:u16 ck]
//! tombstone  = timestamp:i64 local_deletion_time:u32
//! row        = flags:u8 (1 marker, 2 marker has TTL, 4 row tombstone)
//!              [marker timestamp:i64 [ttl:u32 expiry:u32]] [tombstone]
//!              cell_count:u32 (column:u32 cell)*    strictly increasing column
//! cell       = 0 timestamp:i64 value_len:u32 value             live
//!            | 1 timestamp:i64 ttl:u32 expiry:u32 value_len:u32 value   expiring
//!            | 2 timestamp:i64 local_deletion_time:u32        tombstone
//! ```
//!
//! The bound, tombstone, row and cell encodings are [`crate::codec`]'s,
//! with [`Layout::FIXED`](crate::codec::Layout::FIXED).
//!
//! Range tombstones are written as the disjoint ranges of the canonical
//! list ([`crate::RangeTombstoneList::to_range_tombstones`]).
//!
//! Decoding checks everything the builder checks (key lengths, timestamps,
//! TTLs, range bounds), rejects unknown versions, unknown flag bits, keys or
//! columns out of order and trailing bytes, and never trusts a length or
//! count before checking it against the bytes that remain, so any input
//! yields either a valid, canonical mutation or [`Error::Decode`]; it never
//! panics and never allocates more than the input's size.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::codec::{self, DecodeError, Format, Layout, Reader, checked};
use crate::{ClusteringKey, ClusteringRange, Error, Mutation, RangeTombstoneList, Row};

/// The version byte [`Mutation::encode`] writes and the only one
/// [`Mutation::decode`] accepts.
pub const ENCODING_VERSION: u8 = 1;

/// Version 1's choices: every number fixed-width.
struct Version1;

impl Format for Version1 {
    const LAYOUT: Layout = Layout::FIXED;
}

const MUT_PARTITION_TOMBSTONE: u8 = 1;
const MUT_STATIC_ROW: u8 = 2;

impl Mutation {
    /// The mutation in the versioned binary form described in the module
    /// docs of `encode` (see [`ENCODING_VERSION`]).
    ///
    /// ```
    /// use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
    /// let m = Mutation::builder(DecoratedKey::from_bytes("k")?)
    ///     .cell("ck", 1, Cell::live("v", Timestamp::from_micros(5)))
    ///     .build()?;
    /// assert_eq!(Mutation::decode(&m.encode())?, m);
    /// assert!(Mutation::decode(&[9, 9, 9]).is_err());
    /// # Ok::<(), mutation::Error>(())
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_into(&mut out);
        out
    }

    /// Appends the encoding of the mutation to `out` (see [`Mutation::encode`]).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.push(ENCODING_VERSION);
        codec::put_key::<Version1>(out, self.key().key().as_bytes());
        let static_row = self.static_row();
        let mut flags = 0;
        if self.partition_tombstone().is_some() {
            flags |= MUT_PARTITION_TOMBSTONE;
        }
        if static_row.is_some() {
            flags |= MUT_STATIC_ROW;
        }
        out.push(flags);
        if let Some(t) = self.partition_tombstone() {
            codec::put_tombstone::<Version1>(out, t);
        }
        if let Some(row) = static_row {
            codec::put_row::<Version1>(out, row);
        }
        codec::put_count::<Version1>(out, self.rows().len());
        for (key, row) in self.rows() {
            codec::put_key::<Version1>(out, key.as_bytes());
            codec::put_row::<Version1>(out, row);
        }
        let rts = self.range_tombstones().to_range_tombstones();
        codec::put_count::<Version1>(out, rts.len());
        for rt in &rts {
            codec::put_bound::<Version1>(out, rt.range.start());
            codec::put_bound::<Version1>(out, rt.range.end());
            codec::put_tombstone::<Version1>(out, rt.tombstone);
        }
    }

    /// The exact length of [`Mutation::encode`]'s output.
    pub fn encoded_len(&self) -> usize {
        let mut n = 1 + codec::key_len::<Version1>(self.key().key().as_bytes()) + 1;
        n += self
            .partition_tombstone()
            .map_or(0, codec::tombstone_len::<Version1>);
        n += self.static_row().map_or(0, codec::row_len::<Version1>);
        n += codec::count_len::<Version1>(self.rows().len());
        for (key, row) in self.rows() {
            n += codec::key_len::<Version1>(key.as_bytes()) + codec::row_len::<Version1>(row);
        }
        let rts = self.range_tombstones().to_range_tombstones();
        n += codec::count_len::<Version1>(rts.len());
        for rt in &rts {
            n += codec::bound_len::<Version1>(rt.range.start())
                + codec::bound_len::<Version1>(rt.range.end())
                + codec::tombstone_len::<Version1>(rt.tombstone);
        }
        n
    }

    /// Decodes what [`Mutation::encode`] wrote.
    ///
    /// # Errors
    /// [`Error::Decode`], naming the byte offset and the problem, for any
    /// input that is not a complete, valid encoding: another version,
    /// truncated input, bad lengths or flags, keys or columns out of order,
    /// invalid timestamps, TTLs or ranges, trailing bytes.
    pub fn decode(bytes: &[u8]) -> Result<Mutation, Error> {
        decode_all(Reader::new(bytes))
    }

    /// [`Mutation::decode`] without copying: the partition key, the
    /// clustering keys and the cell values of the result are slices of
    /// `bytes` (which they keep alive), so decoding allocates only the
    /// mutation's maps. For a reader that copies an encoded partition out
    /// of a store once and hands it on (the row cache).
    ///
    /// ```
    /// use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
    /// let m = Mutation::builder(DecoratedKey::from_bytes("k")?)
    ///     .cell("ck", 1, Cell::live("v", Timestamp::from_micros(5)))
    ///     .build()?;
    /// let bytes = bytes::Bytes::from(m.encode());
    /// assert_eq!(Mutation::decode_shared(&bytes)?, m);
    /// # Ok::<(), mutation::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Mutation::decode`].
    pub fn decode_shared(bytes: &Bytes) -> Result<Mutation, Error> {
        decode_all(Reader::new_shared(bytes))
    }
}

impl From<DecodeError> for Error {
    /// A [`codec`] error of the mutation encoding: [`Error::Decode`].
    fn from(e: DecodeError) -> Self {
        Error::Decode {
            offset: e.offset,
            detail: e.detail,
        }
    }
}

/// Decodes all of the reader's input.
fn decode_all(mut r: Reader<'_>) -> Result<Mutation, Error> {
    let m = mutation(&mut r)?;
    r.expect_end("the mutation")?;
    Ok(m)
}

fn flags(r: &mut Reader<'_>, what: &str, known: u8) -> Result<u8, DecodeError> {
    let start = r.position();
    let flags = r.u8(what)?;
    if flags & !known != 0 {
        return Err(DecodeError::new(
            start,
            format!("{what} {flags:#04x} has unknown bits (known: {known:#04x})"),
        ));
    }
    Ok(flags)
}

fn mutation(r: &mut Reader<'_>) -> Result<Mutation, DecodeError> {
    let version = r.u8("version")?;
    if version != ENCODING_VERSION {
        return Err(DecodeError::new(
            0,
            format!(
                "unsupported mutation encoding version {version} (this build reads version {ENCODING_VERSION})"
            ),
        ));
    }
    let key = codec::get_partition_key::<Version1>(r)?;
    let flags = flags(
        r,
        "mutation flags",
        MUT_PARTITION_TOMBSTONE | MUT_STATIC_ROW,
    )?;
    let partition_tombstone = if flags & MUT_PARTITION_TOMBSTONE != 0 {
        Some(codec::get_tombstone::<Version1>(r, "partition tombstone")?)
    } else {
        None
    };
    let static_row = if flags & MUT_STATIC_ROW != 0 {
        codec::get_row::<Version1>(r)?
    } else {
        Row::new()
    };
    // A row takes at least 2 (key length) + 1 (flags) + 4 (cell count).
    let row_count = codec::get_count::<Version1>(r, "row count", 7)?;
    let mut rows: BTreeMap<ClusteringKey, Row> = BTreeMap::new();
    for _ in 0..row_count {
        let start = r.position();
        let ck = codec::get_clustering_key::<Version1>(r)?;
        if rows.last_key_value().is_some_and(|(l, _)| ck <= *l) {
            return Err(DecodeError::new(
                start,
                "clustering rows are not in strictly increasing key order",
            ));
        }
        let row = codec::get_row::<Version1>(r)?;
        rows.insert(ck, row);
    }
    // A range tombstone takes at least 1 + 1 + 12 bytes.
    let rt_count = codec::get_count::<Version1>(r, "range tombstone count", 14)?;
    let mut list = RangeTombstoneList::new();
    for _ in 0..rt_count {
        let start = r.position();
        let lo = codec::get_bound::<Version1>(r)?;
        let hi = codec::get_bound::<Version1>(r)?;
        let range = checked(start, ClusteringRange::new(lo, hi))?;
        let t = codec::get_tombstone::<Version1>(r, "range tombstone")?;
        list.apply(&range, t);
    }
    checked(
        r.position(),
        Mutation::from_parts(key, partition_tombstone, static_row, rows, list),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cell, DecoratedKey, RowMarker, Timestamp, Tombstone, Ttl};
    use std::ops::Bound;

    fn sample() -> Mutation {
        let ts = Timestamp::from_micros;
        Mutation::builder(DecoratedKey::from_bytes("pk").unwrap())
            .partition_tombstone(Tombstone::new(ts(1), 7))
            .static_cell(3, Cell::live("s", ts(5)))
            .cell("a", 1, Cell::live("v", ts(5)))
            .cell(
                "a",
                2,
                Cell::expiring("e", ts(6), Ttl::new(10, 100).unwrap()),
            )
            .cell("b", 1, Cell::tombstone(ts(7), 9))
            .row_marker("c", RowMarker::expiring(ts(8), Ttl::new(5, 50).unwrap()))
            .row_tombstone("d", Tombstone::new(ts(3), 2))
            .range_tombstone_bounds(
                Bound::Excluded("e"),
                Bound::Unbounded,
                Tombstone::new(ts(4), 1),
            )
            .build()
            .unwrap()
    }

    #[test]
    fn round_trip_and_exact_length() {
        let m = sample();
        let bytes = m.encode();
        assert_eq!(bytes.len(), m.encoded_len());
        assert_eq!(Mutation::decode(&bytes).unwrap(), m);
    }

    #[test]
    fn decode_shared_equals_decode_and_slices_the_buffer() {
        let m = sample();
        let bytes = Bytes::from(m.encode());
        let shared = Mutation::decode_shared(&bytes).unwrap();
        assert_eq!(shared, m);
        // The values are views of the buffer, not copies.
        let range = bytes.as_ptr_range();
        let value = match shared.rows().values().next().unwrap().cells.get(&1) {
            Some(Cell::Live { value, .. }) => value.clone(),
            other => panic!("expected a live cell, got {other:?}"),
        };
        assert!(range.contains(&value.as_ptr()));
        // Bad input fails the same way.
        for n in 0..bytes.len() {
            let cut = bytes.slice(..n);
            assert_eq!(
                Mutation::decode_shared(&cut).unwrap_err().to_string(),
                Mutation::decode(&cut).unwrap_err().to_string()
            );
        }
        let mut long = bytes.to_vec();
        long.push(0);
        let err = Mutation::decode_shared(&Bytes::from(long)).unwrap_err();
        assert!(err.to_string().contains("trailing bytes"), "{err}");
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = sample().encode();
        for n in 0..bytes.len() {
            let err = Mutation::decode(&bytes[..n]).unwrap_err();
            assert!(matches!(err, Error::Decode { .. }), "{n}: {err}");
        }
    }

    #[test]
    fn every_byte_flip_decodes_or_errors() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            for x in [0x01, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= x;
                if let Ok(m) = Mutation::decode(&b) {
                    // Whatever decodes is canonical: it re-encodes to
                    // something that decodes to itself.
                    assert_eq!(Mutation::decode(&m.encode()).unwrap(), m);
                }
            }
        }
    }

    #[test]
    fn bad_inputs_name_the_problem() {
        let mut bytes = sample().encode();
        bytes[0] = 2;
        assert_eq!(
            Mutation::decode(&bytes).unwrap_err().to_string(),
            "cannot decode mutation at byte 0: unsupported mutation encoding version 2 (this build reads version 1)"
        );
        let mut bytes = sample().encode();
        bytes.push(0);
        assert_eq!(
            Mutation::decode(&bytes).unwrap_err().to_string(),
            format!(
                "cannot decode mutation at byte {}: 1 trailing bytes after the mutation",
                bytes.len() - 1
            )
        );
        // An empty partition key.
        let err = Mutation::decode(&[1, 0, 0, 0]).unwrap_err().to_string();
        assert!(err.contains("partition key is empty"), "{err}");
        // A huge row count fails before allocating anything.
        let err = Mutation::decode(&[1, 1, 0, b'k', 0, 0xff, 0xff, 0xff, 0xff])
            .unwrap_err()
            .to_string();
        assert!(err.contains("row count of 4294967295"), "{err}");
        // A timestamp of i64::MIN is out of range.
        let mut b = vec![1, 1, 0, b'k', MUT_PARTITION_TOMBSTONE];
        b.extend_from_slice(&i64::MIN.to_le_bytes());
        b.extend_from_slice(&[0; 12]);
        let err = Mutation::decode(&b).unwrap_err().to_string();
        assert!(err.contains("partition tombstone timestamp"), "{err}");
    }

    #[test]
    fn rows_out_of_order_are_rejected() {
        let m = Mutation::builder(DecoratedKey::from_bytes("k").unwrap())
            .cell("a", 0, Cell::live("", Timestamp::from_micros(1)))
            .cell("b", 0, Cell::live("", Timestamp::from_micros(1)))
            .build()
            .unwrap();
        let mut bytes = m.encode();
        // Key "a" sits right after the row count; swap it with "b".
        let a = bytes.iter().position(|&b| b == b'a').unwrap();
        let b = bytes.iter().position(|&b| b == b'b').unwrap();
        bytes.swap(a, b);
        let err = Mutation::decode(&bytes).unwrap_err().to_string();
        assert!(err.contains("strictly increasing key order"), "{err}");
    }
}
