//! The data model's small values, each written as its format's
//! [`Layout`](super::Layout) says:
//! timestamps, deletion and expiry times, counts, tombstones, TTLs, keys,
//! cell values, range bounds and clustering positions. For each, `put_*`
//! appends it, `get_*` reads it back (checking it as its constructor
//! would), and `*_len` is the exact length `put_*` writes.

use std::ops::Bound;

use bytes::Bytes;

use super::reader::checked;
use super::{DecodeError, Format, Int, Reader, leb128, put_i64, put_ivarint, put_u16, put_u32};
use crate::{ClusteringKey, DecoratedKey, MAX_KEY_LEN, Position, Timestamp, Tombstone, Ttl};

/// The exact length of an integer written as `int` with the fixed width
/// `width`, whose varint form is `varint` (already zigzagged if signed).
#[inline]
const fn int_len(int: Int, width: usize, varint: u64) -> usize {
    match int {
        Int::Fixed => width,
        Int::Varint => leb128::len(varint),
    }
}

/// Appends a write timestamp.
#[inline]
pub fn put_timestamp<F: Format>(out: &mut Vec<u8>, ts: Timestamp) {
    match F::LAYOUT.timestamp {
        Int::Fixed => put_i64(out, ts.micros()),
        Int::Varint => put_ivarint(out, ts.micros()),
    }
}

/// Reads a write timestamp; `what` names it in errors ("cell", "row
/// marker").
///
/// # Errors
/// Truncated input, a malformed varint, or `i64::MIN` (reserved).
#[inline]
pub fn get_timestamp<F: Format>(
    r: &mut Reader<'_>,
    what: &'static str,
) -> Result<Timestamp, DecodeError> {
    let start = r.position();
    let ts = Timestamp::from_micros(match F::LAYOUT.timestamp {
        Int::Fixed => r.i64(what)?,
        Int::Varint => r.ivarint(what)?,
    });
    if ts.is_valid() {
        Ok(ts)
    } else {
        // Only the error path builds the constructor's message.
        checked(start, ts.check(what)).map(|()| ts)
    }
}

/// The length [`put_timestamp`] writes.
#[inline]
pub fn timestamp_len<F: Format>(ts: Timestamp) -> usize {
    int_len(F::LAYOUT.timestamp, 8, super::zigzag(ts.micros()))
}

/// Appends a time in seconds: a local deletion time, a TTL or an expiry.
#[inline]
pub fn put_time<F: Format>(out: &mut Vec<u8>, seconds: u32) {
    match F::LAYOUT.time {
        Int::Fixed => put_u32(out, seconds),
        Int::Varint => super::put_uvarint(out, u64::from(seconds)),
    }
}

/// Reads a time in seconds.
///
/// # Errors
/// Truncated input or a malformed varint.
#[inline]
pub fn get_time<F: Format>(r: &mut Reader<'_>, what: &str) -> Result<u32, DecodeError> {
    match F::LAYOUT.time {
        Int::Fixed => r.u32(what),
        Int::Varint => r.u32_varint(what),
    }
}

/// The length [`put_time`] writes.
#[inline]
pub fn time_len<F: Format>(seconds: u32) -> usize {
    int_len(F::LAYOUT.time, 4, seconds as u64)
}

/// Appends a count. A fixed count saturates at `u32::MAX`: nothing held
/// in memory has more items than that, and a saturated count could only
/// make decoding fail, never misread.
#[inline]
pub fn put_count<F: Format>(out: &mut Vec<u8>, n: usize) {
    match F::LAYOUT.count {
        Int::Fixed => put_u32(out, u32::try_from(n).unwrap_or(u32::MAX)),
        Int::Varint => super::put_uvarint(out, n as u64),
    }
}

/// Reads a count of items that each take at least `min_item` bytes,
/// checked against what remains after it, so that a corrupt count fails at
/// once rather than driving a long loop or a large allocation.
///
/// # Errors
/// Truncated input, a malformed varint, or more items than can fit.
#[inline]
pub fn get_count<F: Format>(
    r: &mut Reader<'_>,
    what: &str,
    min_item: usize,
) -> Result<usize, DecodeError> {
    let start = r.position();
    let n = match F::LAYOUT.count {
        Int::Fixed => r.u32(what)?,
        Int::Varint => r.u32_varint(what)?,
    };
    let needed = (n as usize).saturating_mul(min_item);
    let remaining = r.remaining();
    if needed > remaining {
        return Err(DecodeError::new(
            start,
            format!("{what} of {n} needs at least {needed} bytes but only {remaining} remain"),
        ));
    }
    Ok(n as usize)
}

/// The length [`put_count`] writes.
#[inline]
pub fn count_len<F: Format>(n: usize) -> usize {
    int_len(F::LAYOUT.count, 4, n as u64)
}

/// Appends a tombstone: its timestamp, then its local deletion time.
#[inline]
pub fn put_tombstone<F: Format>(out: &mut Vec<u8>, t: Tombstone) {
    put_timestamp::<F>(out, t.timestamp);
    put_time::<F>(out, t.local_deletion_time);
}

/// Reads a tombstone; `what` names it ("row tombstone").
///
/// # Errors
/// As [`get_timestamp`] and [`get_time`].
#[inline]
pub fn get_tombstone<F: Format>(
    r: &mut Reader<'_>,
    what: &'static str,
) -> Result<Tombstone, DecodeError> {
    let ts = get_timestamp::<F>(r, what)?;
    let ldt = get_time::<F>(r, "local deletion time")?;
    Ok(Tombstone::new(ts, ldt))
}

/// The length [`put_tombstone`] writes.
#[inline]
pub fn tombstone_len<F: Format>(t: Tombstone) -> usize {
    timestamp_len::<F>(t.timestamp) + time_len::<F>(t.local_deletion_time)
}

/// Appends an optional tombstone: a presence byte (0 or 1), then the
/// tombstone if present.
#[inline]
pub fn put_optional_tombstone<F: Format>(out: &mut Vec<u8>, t: Option<Tombstone>) {
    match t {
        None => out.push(0),
        Some(t) => {
            out.push(1);
            put_tombstone::<F>(out, t);
        }
    }
}

/// Reads an optional tombstone.
///
/// # Errors
/// A presence byte other than 0 or 1, or as [`get_tombstone`].
#[inline]
pub fn get_optional_tombstone<F: Format>(
    r: &mut Reader<'_>,
    what: &'static str,
) -> Result<Option<Tombstone>, DecodeError> {
    let start = r.position();
    match r.u8("tombstone presence flag")? {
        0 => Ok(None),
        1 => get_tombstone::<F>(r, what).map(Some),
        f => Err(DecodeError::new(
            start,
            format!("tombstone presence flag {f} is neither 0 nor 1"),
        )),
    }
}

/// Appends a TTL: its seconds, then its expiry time.
#[inline]
pub fn put_ttl<F: Format>(out: &mut Vec<u8>, ttl: Ttl) {
    put_time::<F>(out, ttl.ttl());
    put_time::<F>(out, ttl.expiry());
}

/// Reads a TTL.
///
/// # Errors
/// As [`get_time`], or a TTL that [`Ttl::new`] refuses.
#[inline]
pub fn get_ttl<F: Format>(r: &mut Reader<'_>) -> Result<Ttl, DecodeError> {
    let start = r.position();
    let ttl = get_time::<F>(r, "TTL")?;
    let expiry = get_time::<F>(r, "expiry time")?;
    checked(start, Ttl::new(ttl, expiry))
}

/// The length [`put_ttl`] writes.
#[inline]
pub fn ttl_len<F: Format>(ttl: Ttl) -> usize {
    time_len::<F>(ttl.ttl()) + time_len::<F>(ttl.expiry())
}

/// Appends a partition or clustering key: its length, then its bytes.
/// Keys are at most [`MAX_KEY_LEN`] bytes by construction, so a fixed
/// (`u16`) length always fits.
#[inline]
pub fn put_key<F: Format>(out: &mut Vec<u8>, key: &[u8]) {
    match F::LAYOUT.key_len {
        Int::Fixed => put_u16(out, u16::try_from(key.len()).unwrap_or(u16::MAX)),
        Int::Varint => super::put_uvarint(out, key.len() as u64),
    }
    out.extend_from_slice(key);
}

/// Reads the bytes of a key of at most [`MAX_KEY_LEN`] bytes; `what` names
/// it ("clustering key").
///
/// # Errors
/// Truncated input, a malformed varint, or a longer key.
#[inline]
pub fn get_key<'a, F: Format>(r: &mut Reader<'a>, what: &str) -> Result<&'a [u8], DecodeError> {
    let n = key_length::<F>(r, "key length", what)?;
    r.take(n, what)
}

/// Reads a key's length (`len_what` names the length, `what` the key).
#[inline]
fn key_length<F: Format>(
    r: &mut Reader<'_>,
    len_what: &str,
    what: &str,
) -> Result<usize, DecodeError> {
    let start = r.position();
    let n = match F::LAYOUT.key_len {
        Int::Fixed => u32::from(r.u16(len_what)?),
        Int::Varint => r.u32_varint(len_what)?,
    } as usize;
    if n > MAX_KEY_LEN {
        return Err(DecodeError::new(
            start,
            format!("{what} of {n} bytes exceeds the {MAX_KEY_LEN}-byte limit"),
        ));
    }
    Ok(n)
}

/// Reads a clustering key (a slice of a shared input, see
/// [`Reader::new_shared`]).
///
/// # Errors
/// As [`get_key`].
#[inline]
pub fn get_clustering_key<F: Format>(r: &mut Reader<'_>) -> Result<ClusteringKey, DecodeError> {
    let n = key_length::<F>(r, "clustering key length", "clustering key")?;
    let start = r.position();
    let bytes = r.take_bytes(n, "clustering key")?;
    checked(start, ClusteringKey::new(bytes))
}

/// Reads a partition key and decorates it with its token.
///
/// # Errors
/// As [`get_key`], or an empty key.
#[inline]
pub fn get_partition_key<F: Format>(r: &mut Reader<'_>) -> Result<DecoratedKey, DecodeError> {
    let n = key_length::<F>(r, "partition key length", "partition key")?;
    let start = r.position();
    let bytes = r.take_bytes(n, "partition key")?;
    checked(start, DecoratedKey::from_bytes(bytes))
}

/// The length [`put_key`] writes.
#[inline]
pub fn key_len<F: Format>(key: &[u8]) -> usize {
    int_len(F::LAYOUT.key_len, 2, key.len() as u64) + key.len()
}

/// Appends a cell value: its length, then its bytes (values are at most
/// [`crate::limits::MAX_CELL_VALUE_LEN`] bytes, so a fixed `u32` length
/// always fits).
#[inline]
pub fn put_value<F: Format>(out: &mut Vec<u8>, value: &[u8]) {
    match F::LAYOUT.value_len {
        Int::Fixed => put_u32(out, u32::try_from(value.len()).unwrap_or(u32::MAX)),
        Int::Varint => super::put_uvarint(out, value.len() as u64),
    }
    out.extend_from_slice(value);
}

/// Reads a cell value (a slice of a shared input, see
/// [`Reader::new_shared`]).
///
/// # Errors
/// Truncated input, a malformed varint, or a value over
/// [`Layout::max_value_len`](super::Layout::max_value_len).
#[inline]
pub fn get_value<F: Format>(r: &mut Reader<'_>) -> Result<Bytes, DecodeError> {
    let start = r.position();
    let n = match F::LAYOUT.value_len {
        Int::Fixed => r.u32("value length")?,
        Int::Varint => r.u32_varint("value length")?,
    };
    if n > F::LAYOUT.max_value_len {
        return Err(DecodeError::new(
            start,
            format!(
                "cell value of {n} bytes exceeds the {}-byte limit",
                F::LAYOUT.max_value_len
            ),
        ));
    }
    r.take_bytes(n as usize, "cell value")
}

/// The length [`put_value`] writes.
#[inline]
pub fn value_len<F: Format>(value: &[u8]) -> usize {
    int_len(F::LAYOUT.value_len, 4, value.len() as u64) + value.len()
}

const BOUND_UNBOUNDED: u8 = 0;
const BOUND_INCLUDED: u8 = 1;
const BOUND_EXCLUDED: u8 = 2;

/// Appends a clustering range bound: its kind (0 unbounded, 1 inclusive,
/// 2 exclusive), then the key of a bounded one.
#[inline]
pub fn put_bound<F: Format>(out: &mut Vec<u8>, b: &Bound<ClusteringKey>) {
    match b {
        Bound::Unbounded => out.push(BOUND_UNBOUNDED),
        Bound::Included(k) => {
            out.push(BOUND_INCLUDED);
            put_key::<F>(out, k.as_bytes());
        }
        Bound::Excluded(k) => {
            out.push(BOUND_EXCLUDED);
            put_key::<F>(out, k.as_bytes());
        }
    }
}

/// Reads a clustering range bound.
///
/// # Errors
/// An unknown kind, or as [`get_clustering_key`].
#[inline]
pub fn get_bound<F: Format>(r: &mut Reader<'_>) -> Result<Bound<ClusteringKey>, DecodeError> {
    let start = r.position();
    match r.u8("range bound kind")? {
        BOUND_UNBOUNDED => Ok(Bound::Unbounded),
        BOUND_INCLUDED => Ok(Bound::Included(get_clustering_key::<F>(r)?)),
        BOUND_EXCLUDED => Ok(Bound::Excluded(get_clustering_key::<F>(r)?)),
        other => Err(DecodeError::new(
            start,
            format!("unknown range bound kind {other} (known: 0, 1, 2)"),
        )),
    }
}

/// The length [`put_bound`] writes.
#[inline]
pub fn bound_len<F: Format>(b: &Bound<ClusteringKey>) -> usize {
    match b {
        Bound::Unbounded => 1,
        Bound::Included(k) | Bound::Excluded(k) => 1 + key_len::<F>(k.as_bytes()),
    }
}

/// Appends a clustering position: its kind (0 before all, 1 before, 2 at,
/// 3 after, 4 after all), then the key of a keyed one.
#[inline]
pub fn put_position<F: Format>(out: &mut Vec<u8>, p: &Position) {
    let (kind, key) = match p {
        Position::BeforeAll => (0, None),
        Position::Before(k) => (1, Some(k)),
        Position::At(k) => (2, Some(k)),
        Position::After(k) => (3, Some(k)),
        Position::AfterAll => (4, None),
    };
    out.push(kind);
    if let Some(k) = key {
        put_key::<F>(out, k.as_bytes());
    }
}

/// Reads a clustering position.
///
/// # Errors
/// An unknown kind, or as [`get_clustering_key`].
#[inline]
pub fn get_position<F: Format>(r: &mut Reader<'_>) -> Result<Position, DecodeError> {
    let start = r.position();
    Ok(match r.u8("position kind")? {
        0 => Position::BeforeAll,
        1 => Position::Before(get_clustering_key::<F>(r)?),
        2 => Position::At(get_clustering_key::<F>(r)?),
        3 => Position::After(get_clustering_key::<F>(r)?),
        4 => Position::AfterAll,
        k => {
            return Err(DecodeError::new(
                start,
                format!("unknown position kind {k} (known: 0 to 4)"),
            ));
        }
    })
}
