//! How a cached partition sits in the region: *pieces*, each an encoded
//! [`Mutation`] of the partition. The first piece holds the partition's
//! header (tombstone, static row, range tombstones) and its first rows;
//! each further piece holds the next rows, up to about the configured piece
//! size. A read decodes the first piece and only the pieces whose rows meet
//! its slice, so a point read of a wide partition does not decode all of
//! it, and eviction can drop a wide partition's last piece (its tail rows)
//! before dropping the partition.

use bytes::Bytes;
use logalloc::{Error as AllocError, Handle, Region, RegionReader};
use memtable::handover::HandedPartition;
use mutation::{ClusteringKey, ClusteringRange, Mutation, Position, Row};

use crate::sync::PlainArc;

/// Where one piece's encoded bytes are: one object, or chunks of at most
/// the pool's largest object size, in order.
#[derive(Debug, Clone)]
pub(crate) enum Data {
    One(Handle),
    Many(Box<[Handle]>),
    /// A flushed memtable's partition adopted where it lies (its entry
    /// strings, in the memtable's layout, now objects of the cache's
    /// region): the only piece of its entry.
    Adopted(PlainArc<HandedPartition>),
}

impl Data {
    pub(crate) fn handles(&self) -> Vec<Handle> {
        match self {
            Data::One(h) => vec![*h],
            Data::Many(hs) => hs.to_vec(),
            Data::Adopted(p) => p.handles().collect(),
        }
    }

    fn handle_count(&self) -> usize {
        match self {
            Data::One(_) => 1,
            Data::Many(hs) => hs.len(),
            Data::Adopted(p) => p.handles().count(),
        }
    }

    /// Stores `bytes` (all or nothing).
    fn store(region: &mut Region, bytes: &[u8]) -> Result<Data, AllocError> {
        let max = region.pool().max_object_size();
        if bytes.len() <= max {
            return region.alloc_bytes(bytes).map(Data::One);
        }
        let mut w = region.writer();
        let mut handles = Vec::with_capacity(bytes.len().div_ceil(max));
        for chunk in bytes.chunks(max) {
            match w.alloc_bytes(chunk) {
                Ok(h) => handles.push(h),
                Err(e) => {
                    for h in handles {
                        let _ = w.free(h);
                    }
                    return Err(e);
                }
            }
        }
        Ok(Data::Many(handles.into_boxed_slice()))
    }

    /// Copies the bytes out; `None` if an object is gone (or the piece is
    /// adopted: those are read in place, see [`adopted`]).
    fn copy_out(&self, reader: &RegionReader<'_>, len: usize, out: &mut Vec<u8>) -> Option<()> {
        out.reserve(len);
        match self {
            Data::One(h) => out.extend_from_slice(reader.get(*h).ok()?),
            Data::Many(hs) => {
                for h in hs {
                    out.extend_from_slice(reader.get(*h).ok()?);
                }
            }
            Data::Adopted(_) => return None,
        }
        Some(())
    }
}

/// One piece of a partition.
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    /// The clustering key of its first row (`None` for the first piece,
    /// which starts before every row).
    pub(crate) first: Option<ClusteringKey>,
    pub(crate) data: Data,
    /// Encoded length.
    pub(crate) len: usize,
}

/// A partition's pieces, shared with readers that looked it up.
pub(crate) type Pieces = PlainArc<[Piece]>;

/// Every object handle of `pieces`.
pub(crate) fn handles(pieces: &[Piece]) -> Vec<Handle> {
    pieces.iter().flat_map(|p| p.data.handles()).collect()
}

/// How many objects `pieces` hold.
pub(crate) fn handle_count(pieces: &[Piece]) -> usize {
    pieces.iter().map(|p| p.data.handle_count()).sum()
}

/// Pieces of one adopted partition: what it costs the budget is its
/// strings in the region and its description on the heap (see
/// [`HandedPartition::heap_bytes`]).
pub(crate) fn adopt(p: HandedPartition) -> Pieces {
    let len = p.bytes() + p.heap_bytes();
    PlainArc::from([Piece {
        first: None,
        data: Data::Adopted(PlainArc::new(p)),
        len,
    }])
}

/// The adopted partition `pieces` is, if it is one.
pub(crate) fn adopted(pieces: &[Piece]) -> Option<&HandedPartition> {
    match pieces {
        [
            Piece {
                data: Data::Adopted(p),
                ..
            },
        ] => Some(p),
        _ => None,
    }
}

/// Total encoded length.
pub(crate) fn total_len(pieces: &[Piece]) -> usize {
    pieces.iter().map(|p| p.len).sum()
}

/// A rough size of a row when encoded (what splitting counts).
fn row_size(key: &ClusteringKey, row: &Row) -> usize {
    16 + key.len()
        + row
            .cells
            .values()
            .map(|c| {
                24 + match c {
                    mutation::Cell::Live { value, .. } => value.len(),
                    _ => 0,
                }
            })
            .sum::<usize>()
}

/// Splits `m` into pieces of about `piece_bytes` of rows each (encoded).
fn split(m: &Mutation, piece_bytes: usize) -> Vec<(Option<ClusteringKey>, Vec<u8>)> {
    let rows_size: usize = m.rows().iter().map(|(k, r)| row_size(k, r)).sum();
    if rows_size <= piece_bytes {
        return vec![(None, m.encode())];
    }
    let mut out = Vec::new();
    let mut header = Mutation::builder(m.key().clone());
    if let Some(t) = m.partition_tombstone() {
        header = header.partition_tombstone(t);
    }
    if let Some(r) = m.static_row() {
        header = header.static_row(r.clone());
    }
    for rt in m.range_tombstones().to_range_tombstones() {
        header = header.range_tombstone(rt.range, rt.tombstone);
    }
    let mut current = header;
    let mut first: Option<ClusteringKey> = None;
    let mut size = 0;
    for (k, r) in m.rows() {
        if size >= piece_bytes {
            let built = current.build().expect("a piece of a valid mutation");
            out.push((first.take(), built.encode()));
            current = Mutation::builder(m.key().clone());
            first = Some(k.clone());
            size = 0;
        }
        current = current.row(k.clone(), r.clone());
        size += row_size(k, r);
    }
    let built = current.build().expect("a piece of a valid mutation");
    out.push((first, built.encode()));
    out
}

/// Stores `m` as pieces (all or nothing).
pub(crate) fn store(
    region: &mut Region,
    m: &Mutation,
    piece_bytes: usize,
) -> Result<Pieces, AllocError> {
    let mut pieces: Vec<Piece> = Vec::new();
    for (first, bytes) in split(m, piece_bytes) {
        match Data::store(region, &bytes) {
            Ok(data) => pieces.push(Piece {
                first,
                data,
                len: bytes.len(),
            }),
            Err(e) => {
                for h in handles(&pieces) {
                    let _ = region.free(h);
                }
                return Err(e);
            }
        }
    }
    Ok(pieces.into())
}

/// Whether piece `i` of `pieces` holds rows `slice` may want.
fn meets(pieces: &[Piece], i: usize, slice: &ClusteringRange) -> bool {
    if i == 0 {
        return true; // the header
    }
    let start = Position::Before(
        pieces[i]
            .first
            .clone()
            .expect("a later piece has a first row"),
    );
    let end = match pieces.get(i + 1) {
        Some(next) => Position::Before(next.first.clone().expect("a later piece has a first row")),
        None => Position::AfterAll,
    };
    start < slice.end_position() && slice.start_position() < end
}

/// The bytes of the pieces a read needs, copied out of the region into
/// one buffer: the decoded partition's keys and values are slices of it,
/// so a read copies once and allocates the buffer, not a string per value.
#[derive(Debug)]
pub(crate) struct Copied {
    bytes: Bytes,
    /// Where each piece ends in `bytes`, when there are several (empty:
    /// one piece, all of `bytes`).
    ends: Vec<usize>,
}

/// Copies out the bytes of the pieces `slice` needs; `None` if one is
/// gone (evicted since the lookup).
pub(crate) fn copy_out(
    reader: &RegionReader<'_>,
    pieces: &[Piece],
    slice: &ClusteringRange,
) -> Option<Copied> {
    let (mut count, mut total) = (0, 0);
    for (i, p) in pieces.iter().enumerate() {
        if meets(pieces, i, slice) {
            count += 1;
            total += p.len;
        }
    }
    let mut out = Vec::with_capacity(total);
    let mut ends = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        if meets(pieces, i, slice) {
            p.data.copy_out(reader, p.len, &mut out)?;
            if count > 1 {
                ends.push(out.len());
            }
        }
    }
    Some(Copied {
        bytes: Bytes::from(out),
        ends,
    })
}

/// Decodes copied-out pieces into one mutation (without copying the keys
/// and values again: see [`Copied`]).
pub(crate) fn decode(copied: Copied) -> Result<Mutation, mutation::Error> {
    let Copied { bytes, ends } = copied;
    if ends.is_empty() {
        return Mutation::decode_shared(&bytes);
    }
    let mut start = 0;
    let mut m: Option<Mutation> = None;
    for end in ends {
        let piece = Mutation::decode_shared(&bytes.slice(start..end))?;
        start = end;
        m = Some(match m {
            None => piece,
            Some(mut m) => {
                m.apply(piece)?;
                m
            }
        });
    }
    m.ok_or_else(|| mutation::Error::Decode {
        offset: 0,
        detail: "no piece was copied out".to_owned(),
    })
}
