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
use std::ops::Bound;

use bytes::Bytes;

use crate::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Error, Mutation, RangeTombstoneList, Row,
    RowMarker, Timestamp, Tombstone, Ttl,
};

/// The version byte [`Mutation::encode`] writes and the only one
/// [`Mutation::decode`] accepts.
pub const ENCODING_VERSION: u8 = 1;

const MUT_PARTITION_TOMBSTONE: u8 = 1;
const MUT_STATIC_ROW: u8 = 2;
const ROW_MARKER: u8 = 1;
const ROW_MARKER_TTL: u8 = 2;
const ROW_TOMBSTONE: u8 = 4;
const CELL_LIVE: u8 = 0;
const CELL_EXPIRING: u8 = 1;
const CELL_TOMBSTONE: u8 = 2;
const BOUND_UNBOUNDED: u8 = 0;
const BOUND_INCLUDED: u8 = 1;
const BOUND_EXCLUDED: u8 = 2;

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
        put_key16(out, self.key().key().as_bytes());
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
            put_tombstone(out, t);
        }
        if let Some(row) = static_row {
            put_row(out, row);
        }
        put_count(out, self.rows().len());
        for (key, row) in self.rows() {
            put_key16(out, key.as_bytes());
            put_row(out, row);
        }
        let rts = self.range_tombstones().to_range_tombstones();
        put_count(out, rts.len());
        for rt in &rts {
            put_bound(out, rt.range.start());
            put_bound(out, rt.range.end());
            put_tombstone(out, rt.tombstone);
        }
    }

    /// The exact length of [`Mutation::encode`]'s output.
    pub fn encoded_len(&self) -> usize {
        let tomb = 12;
        let mut n = 1 + 2 + self.key().key().len() + 1;
        if self.partition_tombstone().is_some() {
            n += tomb;
        }
        if let Some(row) = self.static_row() {
            n += row_len(row);
        }
        n += 4;
        for (key, row) in self.rows() {
            n += 2 + key.len() + row_len(row);
        }
        n += 4;
        for rt in self.range_tombstones().to_range_tombstones() {
            n += bound_len(rt.range.start()) + bound_len(rt.range.end()) + tomb;
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
        decode_from(bytes, None)
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
        decode_from(bytes, Some(bytes))
    }
}

/// Decodes all of `bytes`; byte strings are slices of `shared` (which is
/// `bytes`) when given, copies otherwise.
fn decode_from(bytes: &[u8], shared: Option<&Bytes>) -> Result<Mutation, Error> {
    let mut r = Reader {
        bytes,
        shared,
        at: 0,
    };
    let m = r.mutation()?;
    if r.at != bytes.len() {
        return Err(r.error(format!(
            "{} trailing bytes after the mutation",
            bytes.len() - r.at
        )));
    }
    Ok(m)
}

fn row_len(row: &Row) -> usize {
    let mut n = 1;
    if let Some(m) = row.marker {
        n += 8 + if m.ttl.is_some() { 8 } else { 0 };
    }
    if row.tombstone.is_some() {
        n += 12;
    }
    n += 4;
    for cell in row.cells.values() {
        n += 4 + match cell {
            Cell::Live {
                value, ttl: None, ..
            } => 1 + 8 + 4 + value.len(),
            Cell::Live {
                value,
                ttl: Some(_),
                ..
            } => 1 + 8 + 8 + 4 + value.len(),
            Cell::Tombstone { .. } => 1 + 8 + 4,
        };
    }
    n
}

fn bound_len(b: &Bound<ClusteringKey>) -> usize {
    match b {
        Bound::Unbounded => 1,
        Bound::Included(k) | Bound::Excluded(k) => 1 + 2 + k.len(),
    }
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Counts and value lengths: a mutation held in memory never has more than
/// `u32::MAX` of anything the format counts (it would need more than 4 GiB
/// of memory per count), so saturating here is unreachable in practice and
/// a saturated count could only make decoding fail, never misread.
fn put_count(out: &mut Vec<u8>, n: usize) {
    put_u32(out, u32::try_from(n).unwrap_or(u32::MAX));
}

/// Keys are at most [`crate::MAX_KEY_LEN`] (65,535) bytes by construction.
fn put_key16(out: &mut Vec<u8>, key: &[u8]) {
    let len = u16::try_from(key.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(key);
}

fn put_tombstone(out: &mut Vec<u8>, t: Tombstone) {
    put_i64(out, t.timestamp.micros());
    put_u32(out, t.local_deletion_time);
}

fn put_ttl(out: &mut Vec<u8>, ttl: Ttl) {
    put_u32(out, ttl.ttl());
    put_u32(out, ttl.expiry());
}

fn put_bound(out: &mut Vec<u8>, b: &Bound<ClusteringKey>) {
    match b {
        Bound::Unbounded => out.push(BOUND_UNBOUNDED),
        Bound::Included(k) => {
            out.push(BOUND_INCLUDED);
            put_key16(out, k.as_bytes());
        }
        Bound::Excluded(k) => {
            out.push(BOUND_EXCLUDED);
            put_key16(out, k.as_bytes());
        }
    }
}

fn put_row(out: &mut Vec<u8>, row: &Row) {
    let mut flags = 0;
    if let Some(m) = row.marker {
        flags |= ROW_MARKER;
        if m.ttl.is_some() {
            flags |= ROW_MARKER_TTL;
        }
    }
    if row.tombstone.is_some() {
        flags |= ROW_TOMBSTONE;
    }
    out.push(flags);
    if let Some(m) = row.marker {
        put_i64(out, m.timestamp.micros());
        if let Some(ttl) = m.ttl {
            put_ttl(out, ttl);
        }
    }
    if let Some(t) = row.tombstone {
        put_tombstone(out, t);
    }
    put_count(out, row.cells.len());
    for (column, cell) in &row.cells {
        put_u32(out, *column);
        match cell {
            Cell::Live {
                value,
                timestamp,
                ttl,
            } => {
                out.push(if ttl.is_some() {
                    CELL_EXPIRING
                } else {
                    CELL_LIVE
                });
                put_i64(out, timestamp.micros());
                if let Some(ttl) = ttl {
                    put_ttl(out, *ttl);
                }
                put_count(out, value.len());
                out.extend_from_slice(value);
            }
            Cell::Tombstone {
                timestamp,
                local_deletion_time,
            } => {
                out.push(CELL_TOMBSTONE);
                put_i64(out, timestamp.micros());
                put_u32(out, *local_deletion_time);
            }
        }
    }
}

/// A bounds-checked cursor over the input.
struct Reader<'a> {
    bytes: &'a [u8],
    /// `bytes` as a shared buffer: taken byte strings are slices of it,
    /// not copies (`Mutation::decode_shared`).
    shared: Option<&'a Bytes>,
    at: usize,
}

impl Reader<'_> {
    fn error(&self, detail: impl Into<String>) -> Error {
        Error::Decode {
            offset: self.at,
            detail: detail.into(),
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], Error> {
        let remaining = self.bytes.len() - self.at;
        if n > remaining {
            return Err(self.error(format!(
                "{what} needs {n} bytes but only {remaining} remain"
            )));
        }
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    /// `n` bytes as a `Bytes`: a slice of the shared buffer, or a copy.
    fn take_bytes(&mut self, n: usize, what: &str) -> Result<Bytes, Error> {
        let (start, shared) = (self.at, self.shared);
        let s = self.take(n, what)?;
        Ok(match shared {
            Some(shared) => shared.slice(start..start + n),
            None => Bytes::copy_from_slice(s),
        })
    }

    fn u8(&mut self, what: &str) -> Result<u8, Error> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, Error> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, Error> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i64(&mut self, what: &str) -> Result<i64, Error> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_le_bytes(a))
    }

    /// A count of items that each take at least `min_item` bytes, checked
    /// against what remains so that a corrupt count fails at once.
    fn count(&mut self, what: &str, min_item: usize) -> Result<u32, Error> {
        let start = self.at;
        let n = self.u32(what)?;
        let remaining = self.bytes.len() - self.at;
        if (n as usize).saturating_mul(min_item) > remaining {
            return Err(Error::Decode {
                offset: start,
                detail: format!(
                    "{what} of {n} needs at least {} bytes but only {remaining} remain",
                    (n as usize).saturating_mul(min_item)
                ),
            });
        }
        Ok(n)
    }

    /// Checks a value produced by a constructor, turning its error into a
    /// decode error at `offset`.
    fn checked<T>(&self, offset: usize, r: Result<T, Error>) -> Result<T, Error> {
        r.map_err(|e| Error::Decode {
            offset,
            detail: e.to_string(),
        })
    }

    fn timestamp(&mut self, what: &'static str) -> Result<Timestamp, Error> {
        let start = self.at;
        let ts = Timestamp::from_micros(self.i64(what)?);
        self.checked(start, ts.check(what))?;
        Ok(ts)
    }

    fn tombstone(&mut self, what: &'static str) -> Result<Tombstone, Error> {
        let ts = self.timestamp(what)?;
        let ldt = self.u32("local deletion time")?;
        Ok(Tombstone::new(ts, ldt))
    }

    fn ttl(&mut self) -> Result<Ttl, Error> {
        let start = self.at;
        let ttl = self.u32("TTL")?;
        let expiry = self.u32("expiry time")?;
        self.checked(start, Ttl::new(ttl, expiry))
    }

    fn clustering_key(&mut self) -> Result<ClusteringKey, Error> {
        let len = self.u16("clustering key length")?;
        let b = self.take_bytes(usize::from(len), "clustering key")?;
        let start = self.at;
        self.checked(start, ClusteringKey::new(b))
    }

    fn bound(&mut self) -> Result<Bound<ClusteringKey>, Error> {
        let start = self.at;
        match self.u8("range bound kind")? {
            BOUND_UNBOUNDED => Ok(Bound::Unbounded),
            BOUND_INCLUDED => Ok(Bound::Included(self.clustering_key()?)),
            BOUND_EXCLUDED => Ok(Bound::Excluded(self.clustering_key()?)),
            other => Err(Error::Decode {
                offset: start,
                detail: format!("unknown range bound kind {other} (known: 0, 1, 2)"),
            }),
        }
    }

    fn flags(&mut self, what: &str, known: u8) -> Result<u8, Error> {
        let start = self.at;
        let flags = self.u8(what)?;
        if flags & !known != 0 {
            return Err(Error::Decode {
                offset: start,
                detail: format!("{what} {flags:#04x} has unknown bits (known: {known:#04x})"),
            });
        }
        Ok(flags)
    }

    fn row(&mut self) -> Result<Row, Error> {
        let flags = self.flags("row flags", ROW_MARKER | ROW_MARKER_TTL | ROW_TOMBSTONE)?;
        let mut row = Row::new();
        if flags & ROW_MARKER != 0 {
            let ts = self.timestamp("row marker")?;
            let ttl = if flags & ROW_MARKER_TTL != 0 {
                Some(self.ttl()?)
            } else {
                None
            };
            row.marker = Some(RowMarker { timestamp: ts, ttl });
        } else if flags & ROW_MARKER_TTL != 0 {
            return Err(Error::Decode {
                offset: self.at - 1,
                detail: "row flags give a marker TTL without a marker".to_string(),
            });
        }
        if flags & ROW_TOMBSTONE != 0 {
            row.tombstone = Some(self.tombstone("row tombstone")?);
        }
        // A cell takes at least 4 (column) + 1 + 8 + 4 bytes.
        let cells = self.count("cell count", 17)?;
        let mut previous = None;
        for _ in 0..cells {
            let start = self.at;
            let column = self.u32("column id")?;
            if previous.is_some_and(|p| column <= p) {
                return Err(Error::Decode {
                    offset: start,
                    detail: format!("column {column} is not after the previous column"),
                });
            }
            previous = Some(column);
            let kind_at = self.at;
            let cell = match self.u8("cell kind")? {
                CELL_LIVE => {
                    let ts = self.timestamp("cell")?;
                    let value = self.value()?;
                    Cell::live(value, ts)
                }
                CELL_EXPIRING => {
                    let ts = self.timestamp("cell")?;
                    let ttl = self.ttl()?;
                    let value = self.value()?;
                    Cell::expiring(value, ts, ttl)
                }
                CELL_TOMBSTONE => {
                    let ts = self.timestamp("cell")?;
                    let ldt = self.u32("local deletion time")?;
                    Cell::tombstone(ts, ldt)
                }
                other => {
                    return Err(Error::Decode {
                        offset: kind_at,
                        detail: format!("unknown cell kind {other} (known: 0, 1, 2)"),
                    });
                }
            };
            row.cells.insert(column, cell);
        }
        Ok(row)
    }

    fn value(&mut self) -> Result<Bytes, Error> {
        let len = self.u32("value length")?;
        self.take_bytes(len as usize, "cell value")
    }

    fn mutation(&mut self) -> Result<Mutation, Error> {
        let version = self.u8("version")?;
        if version != ENCODING_VERSION {
            return Err(Error::Decode {
                offset: 0,
                detail: format!(
                    "unsupported mutation encoding version {version} (this build reads version {ENCODING_VERSION})"
                ),
            });
        }
        let key_len = self.u16("partition key length")?;
        let key_at = self.at;
        let key = self.take_bytes(usize::from(key_len), "partition key")?;
        let key = self.checked(key_at, DecoratedKey::from_bytes(key))?;
        let flags = self.flags("mutation flags", MUT_PARTITION_TOMBSTONE | MUT_STATIC_ROW)?;
        let partition_tombstone = if flags & MUT_PARTITION_TOMBSTONE != 0 {
            Some(self.tombstone("partition tombstone")?)
        } else {
            None
        };
        let static_row = if flags & MUT_STATIC_ROW != 0 {
            self.row()?
        } else {
            Row::new()
        };
        // A row takes at least 2 (key length) + 1 (flags) + 4 (cell count).
        let row_count = self.count("row count", 7)?;
        let mut rows: BTreeMap<ClusteringKey, Row> = BTreeMap::new();
        for _ in 0..row_count {
            let start = self.at;
            let ck = self.clustering_key()?;
            if rows.last_key_value().is_some_and(|(l, _)| ck <= *l) {
                return Err(Error::Decode {
                    offset: start,
                    detail: "clustering rows are not in strictly increasing key order".to_string(),
                });
            }
            let row = self.row()?;
            rows.insert(ck, row);
        }
        // A range tombstone takes at least 1 + 1 + 12 bytes.
        let rt_count = self.count("range tombstone count", 14)?;
        let mut list = RangeTombstoneList::new();
        for _ in 0..rt_count {
            let start = self.at;
            let lo = self.bound()?;
            let hi = self.bound()?;
            let range = self.checked(start, ClusteringRange::new(lo, hi))?;
            let t = self.tombstone("range tombstone")?;
            list.apply(&range, t);
        }
        let end = self.at;
        self.checked(
            end,
            Mutation::from_parts(key, partition_tombstone, static_row, rows, list),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
