//! Hand-over at flush: a flushed memtable gives its partitions, objects
//! and all, to another region of the same pool (the row cache's) by a
//! region merge, without copying a byte.
//!
//! [`Memtable::hand_over`] frees the index (its nodes and separators),
//! lists every partition's entries (the header entry if it has one, then
//! its rows in clustering order: each one string of the region, the stored
//! key then the encoded value, as `codec.rs` lays them out), and passes the
//! region and the list to the receiver, which merges the region into its
//! own ([`logalloc::Region::merge`]: every handle stays valid) and from
//! then on owns the strings: it reads a partition where it lies
//! ([`HandedPartition::read`]) and frees its objects
//! ([`HandedPartition::handles`]) when it drops it. The memtable is empty
//! afterwards (its readers would find nothing; none is open, see
//! [`Memtable::hand_over`]).
//!
//! What a partition costs on the heap once handed over: its key, 16 bytes
//! per entry and 8 per chunk of a chunked string
//! ([`HandedPartition::heap_bytes`]), which the receiver counts.

use std::fmt;

use bytes::Bytes;
use logalloc::{Handle, ManagedBytes, Region, RegionReader, RegionWriter, SegmentPool};
use mutation::{Bound, ClusteringKey, ClusteringRange, DecoratedKey, Mutation, Token};
use region_group::{ReclaimConfig, RegionGroup, SizeTrackedRegion};

use crate::Error;
use crate::codec;
use crate::key::{self, SearchKey};
use crate::memtable::Memtable;
use crate::sync::Arc;
use crate::sync::atomic::Ordering;
use crate::tree::{Cursor, Entry, Tree};

/// One entry's string and its stored key's length.
#[derive(Clone, Copy, Debug)]
struct Stored {
    kv: ManagedBytes,
    key_len: u32,
}

impl Stored {
    fn of(entry: &Entry) -> Stored {
        Stored {
            kv: entry.kv,
            // An entry's key is shorter than its string, whose length
            // fits a u32 (see `tree.rs`).
            key_len: entry.key_len() as u32,
        }
    }

    /// Appends the string's bytes from `skip` on (its key less the
    /// partition prefix, then its value) to `out`, chunk by chunk: one
    /// copy, whether or not the string is chunked.
    fn append_from(
        &self,
        view: &RegionReader<'_>,
        skip: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        if (self.key_len as usize) < skip {
            return Err(corrupt("row key shorter than its prefix"));
        }
        let whole = view.managed(self.kv)?;
        let mut skip = skip;
        for chunk in whole.chunks() {
            let n = skip.min(chunk.len());
            out.extend_from_slice(&chunk[n..]);
            skip -= n;
        }
        if skip > 0 {
            return Err(corrupt("key longer than its entry"));
        }
        Ok(())
    }

    /// Calls `f` with the string's bytes (copied out only if chunked).
    fn with_bytes<T>(
        &self,
        view: &RegionReader<'_>,
        f: impl FnOnce(&[u8], &[u8]) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let whole = view.managed(self.kv)?;
        let split = self.key_len as usize;
        match whole.as_contiguous() {
            Some(bytes) if split <= bytes.len() => f(&bytes[..split], &bytes[split..]),
            Some(_) => Err(corrupt("key longer than its entry")),
            None => {
                let bytes = whole.to_vec();
                if split > bytes.len() {
                    return Err(corrupt("key longer than its entry"));
                }
                f(&bytes[..split], &bytes[split..])
            }
        }
    }
}

fn corrupt(detail: &str) -> Error {
    Error::Corrupt {
        detail: format!("handed-over partition: {detail}"),
    }
}

/// One partition of a handed-over memtable: where its entries lie in the
/// region they were handed to. See the [module documentation](self).
pub struct HandedPartition {
    key: DecoratedKey,
    /// The length of the stored partition part of its entries' keys
    /// (the encoded prefix without its token).
    prefix_tail: u32,
    header: Option<Stored>,
    rows: Box<[Stored]>,
    /// The chunks of its chunked strings (their heads are the entries').
    chunks: Box<[Handle]>,
    bytes: usize,
}

impl fmt::Debug for HandedPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandedPartition")
            .field("key", &self.key)
            .field("rows", &self.rows.len())
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl HandedPartition {
    /// The partition's key.
    pub fn key(&self) -> &DecoratedKey {
        &self.key
    }

    /// How many clustering rows it holds.
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// The bytes of its strings in the region (stored keys and values).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The heap this description takes: what a receiver that keeps it as
    /// its index of the partition counts against its budget.
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.key.key().len()
            + std::mem::size_of::<Stored>() * self.rows.len()
            + std::mem::size_of::<Handle>() * self.chunks.len()
    }

    /// Every object of the partition in the region (one per entry, plus
    /// the chunks of chunked strings): freeing them all frees the
    /// partition. Needs no access to the region.
    pub fn handles(&self) -> impl Iterator<Item = Handle> + '_ {
        self.header
            .iter()
            .chain(self.rows.iter())
            .map(|s| s.kv.head())
            .chain(self.chunks.iter().copied())
    }

    /// The partition as a mutation, its rows restricted to `slice` (its
    /// header, partition and range tombstones and static row, whole),
    /// read from the region it was handed to: each row is decoded where it
    /// lies (a chunked string is copied out first).
    ///
    /// # Errors
    /// [`Error::Region`] if an object is gone (freed, or a foreign
    /// region's view), [`Error::Corrupt`] if an entry does not decode.
    pub fn read(
        &self,
        view: &RegionReader<'_>,
        slice: &ClusteringRange,
    ) -> Result<Mutation, Error> {
        let mut builder = Mutation::builder(self.key.clone());
        if let Some(header) = &self.header {
            let header = header.with_bytes(view, |_, value| codec::decode_header(value))?;
            if let Some(t) = header.tombstone {
                builder = builder.partition_tombstone(t);
            }
            if !header.static_row.is_empty() {
                builder = builder.static_row(header.static_row);
            }
            for rt in header.range_tombstones.to_range_tombstones() {
                builder = builder.range_tombstone(rt.range, rt.tombstone);
            }
        }
        let skip = self.prefix_tail as usize + 1;
        if matches!(
            (slice.start(), slice.end()),
            (Bound::Unbounded, Bound::Unbounded)
        ) {
            // Every row: their keys and values copied once into one
            // buffer, which the decoded keys and values share (a fragment
            // must own its bytes; one allocation holds them all).
            let mut buf = Vec::with_capacity(self.bytes);
            for row in self.rows.iter() {
                // A chunked value straight from its chunks: copied out
                // whole first, a 128 KiB row cost two copies a hit.
                row.append_from(view, skip, &mut buf)?;
            }
            let shared = Bytes::from(buf);
            let mut start = 0;
            for row in self.rows.iter() {
                // Each row's key (less its partition prefix), then value.
                let mid = start + row.key_len as usize - skip;
                let end = start + row.kv.len() - skip;
                let ck = ClusteringKey::new(shared.slice(start..mid))?;
                let row = codec::decode_row_shared(&shared.slice(mid..end))?;
                builder = builder.row(ck, row);
                start = end;
            }
            return Ok(builder.build()?);
        }
        for row in self.rows.iter() {
            let decoded = row.with_bytes(view, |stored, value| {
                let ck = ClusteringKey::new(
                    stored
                        .get(skip..)
                        .ok_or_else(|| corrupt("row key shorter than its prefix"))?
                        .to_vec(),
                )?;
                if !slice.contains(&ck) {
                    return Ok(None);
                }
                Ok(Some((ck, codec::decode_row(value)?)))
            })?;
            if let Some((ck, row)) = decoded {
                builder = builder.row(ck, row);
            }
        }
        Ok(builder.build()?)
    }
}

/// What [`Memtable::hand_over`] gives its receiver: the memtable's region
/// (its index freed) and its partitions in ring order.
#[derive(Debug)]
pub struct HandedOver {
    region: Region,
    partitions: Vec<HandedPartition>,
    index_bytes: usize,
}

impl HandedOver {
    /// The region (to merge into the receiver's) and the partitions whose
    /// objects it holds.
    pub fn into_parts(self) -> (Region, Vec<HandedPartition>) {
        (self.region, self.partitions)
    }

    /// The partitions, in ring order.
    pub fn partitions(&self) -> &[HandedPartition] {
        &self.partitions
    }

    /// The bytes of index objects (nodes and separators) the hand-over
    /// freed before giving the region away.
    pub fn index_bytes_freed(&self) -> usize {
        self.index_bytes
    }
}

/// A partition being listed: its encoded prefix, and what was found so far.
struct Open {
    prefix: Vec<u8>,
    partition: HandedPartition,
    rows: Vec<Stored>,
    chunks: Vec<Handle>,
}

impl Open {
    fn add(&mut self, stored: Stored, chunks: &[Handle], header: bool) {
        if header {
            self.partition.header = Some(stored);
        } else {
            self.rows.push(stored);
        }
        self.partition.bytes += stored.kv.len();
        self.chunks.extend_from_slice(chunks);
    }

    fn finish(self) -> HandedPartition {
        let mut p = self.partition;
        p.rows = self.rows.into_boxed_slice();
        p.chunks = self.chunks.into_boxed_slice();
        p
    }
}

/// The partitions of `tree`, in ring order, with the chunks of their
/// chunked strings.
fn partitions_of(w: &RegionWriter<'_>, tree: &Tree) -> Result<Vec<HandedPartition>, Error> {
    let mut out: Vec<HandedPartition> = Vec::new();
    let mut current: Option<Open> = None;
    let mut cursor = Cursor::new();
    let mut next = tree.seek(w, &SearchKey::token(Token::MIN), false, &mut cursor)?;
    while let Some(entry) = next {
        let stored = Stored::of(&entry);
        // The head, then the chunks of a chunked string.
        let handles = w.managed_handles(entry.kv)?;
        let chunks = &handles[1..];
        let row_of_current = match &current {
            Some(open) => {
                entry.head()[..] == open.prefix[..key::TOKEN_LEN]
                    && entry
                        .key(w)?
                        .with_bytes(|b| key::is_row_of(b, key::tail(&open.prefix)))
            }
            None => false,
        };
        if row_of_current {
            current
                .as_mut()
                .expect("checked above")
                .add(stored, chunks, false);
        } else {
            out.extend(current.take().map(Open::finish));
            let mut full = Vec::with_capacity(key::TOKEN_LEN + entry.key_len());
            full.extend_from_slice(&entry.head());
            entry.key(w)?.copy_to(&mut full);
            let decoded = key::decode(&full)?;
            let prefix = full[..decoded.prefix_len].to_vec();
            let mut open = Open {
                partition: HandedPartition {
                    key: decoded.partition,
                    prefix_tail: (prefix.len() - key::TOKEN_LEN) as u32,
                    header: None,
                    rows: Box::new([]),
                    chunks: Box::new([]),
                    bytes: 0,
                },
                prefix,
                rows: Vec::new(),
                chunks: Vec::new(),
            };
            open.add(stored, chunks, decoded.row.is_none());
            current = Some(open);
        }
        next = tree.advance(w, &mut cursor)?;
    }
    out.extend(current.take().map(Open::finish));
    Ok(out)
}

impl Memtable {
    /// Hands the memtable's data over to another region of `pool` without
    /// copying it (ScyllaDB's `row_cache::update` merging the memtable's
    /// region into the cache's): frees the index, then calls `receive`
    /// with the region and its partitions (see [`HandedOver`]) and returns
    /// what it returns. The memtable is empty afterwards: its
    /// [`stats`](Self::stats) keep their counts but its region holds
    /// nothing, and a reader made afterwards finds nothing.
    ///
    /// `receive` runs under the memtable's write lock, so a read that
    /// makes its memtable reader while the receiver takes the partitions
    /// in waits, and then finds them in the receiver: no moment shows the
    /// data in neither place.
    ///
    /// Returns `Ok(None)`, changing nothing, when the memtable cannot be
    /// handed over now: it is not [sealed](Self::seal), was handed over
    /// already, lives in another pool than `pool`, or a reader of it is
    /// open (a reader reads the memtable's own region, which would be
    /// gone); the caller then reads the memtable as a stream instead. The
    /// memtable leaves its region group
    /// ([`detach_from_region_group`](Self::detach_from_region_group)) if
    /// it had not.
    ///
    /// # Errors
    /// [`Error::Corrupt`] or [`Error::Region`] if the index does not
    /// decode (a bug); the memtable is left as it was.
    pub fn hand_over<R>(
        &self,
        pool: &Arc<SegmentPool>,
        receive: impl FnOnce(HandedOver) -> R,
    ) -> Result<Option<R>, Error> {
        let mut guard = self.state.write();
        let state = &mut *guard;
        if !state.sealed
            || state.handed_over
            || !Arc::ptr_eq(state.region.pool(), pool)
            || self.open_readers.load(Ordering::SeqCst) != 0
        {
            return Ok(None);
        }
        let tree = state.tree;
        let mut w = state.region.writer();
        let partitions = partitions_of(&w, &tree)?;
        let (nodes, seps) = tree.index_objects(&w)?;
        let before = w.stats().object_bytes;
        for sep in seps {
            w.free_managed(sep)?;
        }
        for node in nodes {
            w.free(node)?;
        }
        let index_bytes = before - w.stats().object_bytes;
        drop(w);
        if !state.detached {
            state.detached = true;
            state.region.leave_group();
        }
        // An empty region in place of the one handed over, in a group of
        // its own that it leaves at once (it reports to no one).
        let group = RegionGroup::new("handed-over memtable", ReclaimConfig::default());
        let mut empty = SizeTrackedRegion::new(&group, pool);
        empty.leave_group();
        let region = std::mem::replace(&mut state.region, empty).into_region();
        state.tree.root = None;
        state.tree.height = 0;
        state.version += 1;
        state.handed_over = true;
        Ok(Some(receive(HandedOver {
            region,
            partitions,
            index_bytes,
        })))
    }

    /// Whether [`hand_over`](Self::hand_over) gave the data away.
    pub fn is_handed_over(&self) -> bool {
        self.state.read().handed_over
    }
}
