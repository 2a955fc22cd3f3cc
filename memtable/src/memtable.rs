//! The memtable: apply, statistics, sealing and detaching.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use logalloc::{ManagedBytes, RegionId, RegionStats, RegionWriter, SegmentPool};
use mutation::{
    ClusteringKey, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange,
    Position, Row, Timestamp,
};
use region_group::{RegionGroup, SizeTrackedRegion};

use crate::Error;
use crate::codec::{self, Header};
use crate::key::{self, SearchKey, Suffix};
use crate::sync::atomic::AtomicUsize;
use crate::sync::{Arc, RwLock};
use crate::tree::{Cursor, Entry, Tree, Undo, View};

/// Where a reader of a flushed memtable continues: the owner's source for
/// the same data (in a replica, the sstable the memtable was flushed to).
/// The memtable knows nothing of sstables; it only asks for a reader over
/// the rest of a range.
pub trait ReplacementSource: Send + Sync {
    /// A reader over `range` (the part of a reader's range after the last
    /// partition it produced) with the reader's clustering `slice`.
    ///
    /// # Errors
    /// Whatever the source fails with.
    fn make_reader(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error>;
}

/// A snapshot of a memtable's statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemtableStats {
    /// Partitions held (a partition stays once written, even if a
    /// tombstone emptied it: its tombstone must reach the sstable).
    pub partitions: usize,
    /// Clustering rows held.
    pub rows: usize,
    /// Range tombstones held (disjoint ranges after reconciliation).
    pub range_tombstones: usize,
    /// Lowest write timestamp applied (cells, markers, tombstones).
    pub min_timestamp: Option<Timestamp>,
    /// Highest write timestamp applied.
    pub max_timestamp: Option<Timestamp>,
    /// Rows that tombstones removed when they were applied.
    pub rows_dropped_by_tombstones: u64,
    /// Object bytes that eager compaction freed: rows removed by a
    /// tombstone and the shrinking of rows a tombstone partly shadowed.
    pub bytes_freed_by_tombstones: u64,
    /// Mutations applied.
    pub applies: u64,
    /// The region's statistics: `footprint_bytes()` is what the region
    /// group counts for this memtable.
    pub region: RegionStats,
}

#[derive(Default, Debug, Clone, Copy)]
struct Counters {
    partitions: usize,
    rows: usize,
    range_tombstones: usize,
    min_timestamp: Option<Timestamp>,
    max_timestamp: Option<Timestamp>,
    rows_dropped: u64,
    bytes_freed: u64,
    applies: u64,
}

pub(crate) struct State {
    pub(crate) region: SizeTrackedRegion,
    pub(crate) tree: Tree,
    /// Bumped by every apply: a reader's cursor is valid only at the
    /// version it was positioned at.
    pub(crate) version: u64,
    /// Bumped by every apply that carries a partition or range tombstone:
    /// the only applies that change a partition's deletions and so may
    /// remove rows a reader inside that partition has not reached yet
    /// (see `MemtableReader`'s header check).
    pub(crate) deletions: u64,
    pub(crate) sealed: bool,
    pub(crate) detached: bool,
    /// Set by `hand_over`: the data went to another region.
    pub(crate) handed_over: bool,
    pub(crate) replacement: Option<Arc<dyn ReplacementSource>>,
    counters: Counters,
    /// The undo log, reused by every apply (its buffers stay allocated).
    undo: Undo,
    /// Buffers reused by every apply.
    scratch: Scratch,
    /// String bytes applies freed since the region was last compacted.
    freed_since_compaction: usize,
}

/// Heap buffers an apply reuses rather than allocating each time; bounded
/// by [`Scratch::clear`].
#[derive(Debug, Default)]
struct Scratch {
    /// The partition header's encoded key.
    header_key: Vec<u8>,
    /// Encoded entry keys, one after another.
    keys: Vec<u8>,
    /// The end offset in `keys` of each key.
    ends: Vec<usize>,
    entries: Vec<Entry>,
    /// An entry's string: its stored key, then the encoded row or header.
    encoded: Vec<u8>,
}

impl Scratch {
    /// Bytes of buffer kept between applies.
    const KEEP: usize = 16 << 10;

    fn clear(&mut self) {
        if self.keys.capacity() > Self::KEEP
            || self.encoded.capacity() > Self::KEEP
            || self.header_key.capacity() > Self::KEEP
            || self.ends.len() > Self::KEEP / 8
        {
            *self = Scratch::default();
        }
        self.header_key.clear();
        self.keys.clear();
        self.ends.clear();
        self.entries.clear();
        self.encoded.clear();
    }
}

impl State {
    pub(crate) fn is_detached(&self) -> bool {
        self.detached
    }
}

/// A memtable: the partitions written to a table since its last flush,
/// held entirely in one logalloc region that reports to a region group.
/// See the [crate documentation](crate).
pub struct Memtable {
    pub(crate) state: RwLock<State>,
    id: RegionId,
    /// Readers that still hold the memtable (counted when made, under the
    /// state lock, so a hand-over sees every one).
    pub(crate) open_readers: AtomicUsize,
}

impl fmt::Debug for Memtable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memtable")
            .field("region", &self.id)
            .finish_non_exhaustive()
    }
}

/// Decodes the value of `entry`.
fn decode_value<T>(
    view: &impl View,
    entry: &Entry,
    decode: impl FnOnce(&[u8]) -> Result<T, Error>,
) -> Result<T, Error> {
    entry.value(view)?.with_bytes(decode)
}

/// Stores an entry's string: `encoded`, the stored key (`key_tail`) and
/// then the value `encode` appends. Returns the string and the key's
/// length.
fn alloc_entry(
    w: &mut RegionWriter<'_>,
    undo: &mut Undo,
    encoded: &mut Vec<u8>,
    key_tail: &[u8],
    encode: impl FnOnce(&mut Vec<u8>),
) -> Result<(ManagedBytes, usize), Error> {
    encoded.clear();
    encoded.extend_from_slice(key_tail);
    encode(encoded);
    Ok((undo.alloc_managed(w, encoded)?, key_tail.len()))
}

fn timestamps(m: &Mutation) -> Option<(Timestamp, Timestamp)> {
    let mut range: Option<(Timestamp, Timestamp)> = None;
    let mut see = |t: Timestamp| {
        range = Some(range.map_or((t, t), |(lo, hi)| (lo.min(t), hi.max(t))));
    };
    let row = |r: &Row, see: &mut dyn FnMut(Timestamp)| {
        r.marker.iter().for_each(|m| see(m.timestamp));
        r.tombstone.iter().for_each(|t| see(t.timestamp));
        r.cells.values().for_each(|c| see(c.timestamp()));
    };
    if let Some(s) = m.static_row() {
        row(s, &mut see);
    }
    for r in m.rows().values() {
        row(r, &mut see);
    }
    m.partition_tombstone()
        .iter()
        .for_each(|t| see(t.timestamp));
    for (_, t) in m.range_tombstones().changes() {
        t.iter().for_each(|t| see(t.timestamp));
    }
    range
}

impl Memtable {
    /// Creates an empty memtable whose region is created in `group` (so
    /// the group sees it from its first byte), taking segments from `pool`.
    ///
    /// # Errors
    /// [`Error::SegmentTooSmall`] if the pool's largest object cannot hold
    /// an index node (segments below 4 KiB).
    pub fn new<O: ?Sized + Send + Sync + 'static>(
        group: &Arc<RegionGroup<O>>,
        pool: &Arc<SegmentPool>,
    ) -> Result<Arc<Memtable>, Error> {
        let tree = Tree::new(pool.max_object_size())?;
        let region = SizeTrackedRegion::new(group, pool);
        let id = region.id();
        Ok(Arc::new(Memtable {
            state: RwLock::new(State {
                region,
                tree,
                version: 0,
                deletions: 0,
                sealed: false,
                detached: false,
                handed_over: false,
                replacement: None,
                counters: Counters::default(),
                undo: Undo::default(),
                scratch: Scratch::default(),
                freed_since_compaction: 0,
            }),
            id,
            open_readers: AtomicUsize::new(0),
        }))
    }

    /// The region's id, as the region group reports it (for example from
    /// `largest_flushable_region`).
    pub fn region_id(&self) -> RegionId {
        self.id
    }

    /// Reconciles `m` into the memtable by `mutation`'s rules, compacting
    /// eagerly: data the result's tombstones shadow is removed and its
    /// memory freed at once, incoming shadowed data is not stored, and the
    /// tombstones are kept.
    ///
    /// All or nothing: on error the memtable reads and holds exactly what it
    /// did before (every object allocated is freed, every node rewritten is
    /// restored).
    ///
    /// # Errors
    /// [`Error::Sealed`] after [`seal`](Self::seal);
    /// [`Error::OutOfMemory`] when the region cannot allocate;
    /// [`Error::ValueTooLarge`] for a row or key beyond the pool's chunked
    /// string limit.
    pub fn apply(&self, m: &Mutation) -> Result<(), Error> {
        let mut guard = self.state.write();
        let state = &mut *guard;
        if state.sealed {
            return Err(Error::Sealed {
                partition: m.key().to_string(),
            });
        }
        let mut tree = state.tree;
        let undo = &mut state.undo;
        undo.clear();
        let scratch = &mut state.scratch;
        scratch.clear();
        let mut w = state.region.writer();
        match apply_to(&mut w, &mut tree, undo, scratch, m) {
            Ok(delta) => {
                let freed = undo.commit(&mut w)?;
                drop(w);
                // Keep the region dense as applies free what they replace
                // (overwrites, eager compaction): once a segment's worth
                // was freed, compact the sparse segments (cheap when there
                // are none; handles survive, so readers need no re-seek).
                state.freed_since_compaction += freed;
                if state.freed_since_compaction >= state.region.pool().segment_size() {
                    state.freed_since_compaction = 0;
                    state.region.compact();
                }
                state.tree = tree;
                state.version += 1;
                if m.partition_tombstone().is_some() || !m.range_tombstones().is_empty() {
                    state.deletions += 1;
                }
                let c = &mut state.counters;
                c.partitions += delta.new_partition as usize;
                c.rows = (c.rows + delta.rows_added).saturating_sub(delta.rows_removed);
                c.range_tombstones =
                    (c.range_tombstones + delta.rts_after).saturating_sub(delta.rts_before);
                c.rows_dropped += delta.rows_dropped;
                c.bytes_freed += delta.bytes_freed;
                c.applies += 1;
                if let Some((lo, hi)) = timestamps(m) {
                    c.min_timestamp = Some(c.min_timestamp.map_or(lo, |x| x.min(lo)));
                    c.max_timestamp = Some(c.max_timestamp.map_or(hi, |x| x.max(hi)));
                }
                Ok(())
            }
            Err(e) => {
                undo.rollback(&mut w);
                Err(match e {
                    Error::Region(source) if source.is_out_of_memory() => Error::OutOfMemory {
                        partition: m.key().to_string(),
                        source,
                    },
                    other => other,
                })
            }
        }
    }

    /// Refuses further writes ([`Error::Sealed`]) and grounds the region's
    /// evictable occupancy, so the region group no longer offers it as a
    /// flush candidate. Idempotent.
    pub fn seal(&self) {
        let mut state = self.state.write();
        if !state.sealed {
            state.sealed = true;
            state.region.ground_evictable_occupancy();
        }
    }

    /// Whether [`seal`](Self::seal) was called.
    pub fn is_sealed(&self) -> bool {
        self.state.read().sealed
    }

    /// Hands open readers over to `replacement`: a reader that reaches its
    /// next partition continues the rest of its range there and lets go of
    /// this memtable. Call it once the memtable's data is readable from
    /// `replacement` (the sstable it was flushed to).
    pub fn mark_flushed(&self, replacement: Arc<dyn ReplacementSource>) {
        self.state.write().replacement = Some(replacement);
    }

    /// Whether [`mark_flushed`](Self::mark_flushed) was called.
    pub fn is_flushed(&self) -> bool {
        self.state.read().replacement.is_some()
    }

    /// Detaches the memtable from its region group (ScyllaDB's
    /// `memtable::on_detach_from_region_group`, named here for what it
    /// does, as a command): the group stops
    /// counting it (its region is unlistened) and flush readers stop
    /// reporting progress. Its memory is freed when the last
    /// [`Arc<Memtable>`] goes (open readers let go at their next partition
    /// once [`mark_flushed`](Self::mark_flushed) was called). Idempotent.
    pub fn detach_from_region_group(&self) {
        let mut state = self.state.write();
        if !state.detached {
            state.detached = true;
            state.region.leave_group();
        }
    }

    /// Whether [`detach_from_region_group`](Self::detach_from_region_group) was called.
    pub fn is_detached(&self) -> bool {
        self.state.read().detached
    }

    /// True if no mutation was applied.
    pub fn is_empty(&self) -> bool {
        self.state.read().tree.root.is_none()
    }

    /// A snapshot of the statistics.
    pub fn stats(&self) -> MemtableStats {
        let state = self.state.read();
        let c = state.counters;
        MemtableStats {
            partitions: c.partitions,
            rows: c.rows,
            range_tombstones: c.range_tombstones,
            min_timestamp: c.min_timestamp,
            max_timestamp: c.max_timestamp,
            rows_dropped_by_tombstones: c.rows_dropped,
            bytes_freed_by_tombstones: c.bytes_freed,
            applies: c.applies,
            region: state.region.stats(),
        }
    }

    /// Moves every object of the region (for tests: readers and applies
    /// must not notice).
    ///
    /// # Errors
    /// [`Error::Region`] if no destination segment can be had; every object
    /// is intact either way.
    pub fn full_compaction(&self) -> Result<(), Error> {
        self.state.write().region.full_compaction()?;
        Ok(())
    }

    /// Recounts the region (for tests); see `logalloc::Region::check_invariants`.
    ///
    /// # Errors
    /// A description of the first mismatch.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.state.read().region.check_invariants()
    }
}

#[derive(Default, Debug)]
struct Delta {
    new_partition: bool,
    rows_added: usize,
    rows_removed: usize,
    rts_before: usize,
    rts_after: usize,
    rows_dropped: u64,
    bytes_freed: u64,
}

/// The clustering key of `entry` if it is a row of the partition whose
/// encoded prefix is `prefix`.
fn row_of(view: &impl View, entry: &Entry, prefix: &[u8]) -> Result<Option<ClusteringKey>, Error> {
    if entry.head()[..] != prefix[..key::TOKEN_LEN] {
        return Ok(None);
    }
    let prefix = key::tail(prefix);
    entry.key(view)?.with_bytes(|bytes| {
        if !key::is_row_of(bytes, prefix) {
            return Ok(None);
        }
        ClusteringKey::new(bytes[prefix.len() + 1..].to_vec())
            .map(Some)
            .map_err(Error::from)
    })
}

/// Reads the rows of the partition (`prefix`) from `start` while `keep`
/// says so, into `rows` (skipping keys already there).
fn collect_rows(
    w: &RegionWriter<'_>,
    tree: &Tree,
    prefix: &[u8],
    start: &[u8],
    range: Option<&ClusteringRange>,
    rows: &mut BTreeMap<ClusteringKey, Row>,
) -> Result<(), Error> {
    let mut seek = prefix.to_vec();
    seek.push(key::KIND_ROW);
    seek.extend_from_slice(start);
    let mut cursor = Cursor::new();
    let mut next = tree.seek(w, &SearchKey::raw(&seek), false, &mut cursor)?;
    let end = range.map(|r| r.end_position());
    while let Some(entry) = next {
        let Some(ck) = row_of(w, &entry, prefix)? else {
            break;
        };
        if let Some(end) = &end
            && Position::At(ck.clone()) >= *end
        {
            break;
        }
        if range.is_none_or(|r| r.contains(&ck)) && !rows.contains_key(&ck) {
            let row = decode_value(w, &entry, codec::decode_row)?;
            rows.insert(ck, row);
        }
        next = tree.advance(w, &mut cursor)?;
    }
    Ok(())
}

/// The stored part of a partition (header and the rows read) reconciled
/// with `m`.
fn reconcile(
    dk: &DecoratedKey,
    old_header: &Header,
    old_rows: &BTreeMap<ClusteringKey, Row>,
    m: &Mutation,
) -> Result<Mutation, Error> {
    let mut builder = Mutation::builder(dk.clone());
    if let Some(t) = old_header.tombstone {
        builder = builder.partition_tombstone(t);
    }
    if !old_header.static_row.is_empty() {
        builder = builder.static_row(old_header.static_row.clone());
    }
    for rt in old_header.range_tombstones.to_range_tombstones() {
        builder = builder.range_tombstone(rt.range, rt.tombstone);
    }
    for (ck, row) in old_rows {
        builder = builder.row(ck.clone(), row.clone());
    }
    Ok(builder.build()?.merge(m.clone())?)
}

fn apply_to(
    w: &mut RegionWriter<'_>,
    tree: &mut Tree,
    undo: &mut Undo,
    scratch: &mut Scratch,
    m: &Mutation,
) -> Result<Delta, Error> {
    let dk: &DecoratedKey = m.key();
    // Keys are encoded once and compared with memcmp.
    let mut header_bytes = std::mem::take(&mut scratch.header_key);
    SearchKey::new(dk, Suffix::Header).encode_into(&mut header_bytes);
    let delta = apply_partition(w, tree, undo, scratch, m, &header_bytes);
    scratch.header_key = header_bytes;
    delta
}

/// Refuses a merged row that no sstable block could hold
/// (`mutation::limits`): rows that arrive alone passed the mutation
/// builder's limits, but merging adds their columns up.
fn check_row_size(m: &Mutation, ck: &ClusteringKey, row: &Row) -> Result<(), Error> {
    let size = mutation::limits::row_size_bound(Some(ck), row);
    if size > mutation::limits::MAX_ROW_SIZE {
        return Err(Error::RowTooLarge {
            partition: m.key().to_string(),
            row: format!("{ck:?}"),
            size,
            limit: mutation::limits::MAX_ROW_SIZE,
        });
    }
    Ok(())
}

/// [`apply_to`] with the partition header's key encoded. The partition
/// may be stored with or without a header entry (see the crate docs).
fn apply_partition(
    w: &mut RegionWriter<'_>,
    tree: &mut Tree,
    undo: &mut Undo,
    scratch: &mut Scratch,
    m: &Mutation,
    header_bytes: &[u8],
) -> Result<Delta, Error> {
    let dk: &DecoratedKey = m.key();
    let header_key = SearchKey::raw(header_bytes);
    let prefix = &header_bytes[..header_bytes.len() - 1];
    let row_key = |ck: &ClusteringKey| {
        let mut k = Vec::with_capacity(prefix.len() + 1 + ck.len());
        k.extend_from_slice(prefix);
        k.push(key::KIND_ROW);
        k.extend_from_slice(ck.as_bytes());
        k
    };
    let mut cursor = Cursor::new();
    let (existing, next) = tree.locate_and_next(w, &header_key, &mut cursor)?;
    // A partition whose header is empty may have no header entry: it
    // exists if its first row follows where the header would be (an entry
    // of another token is told apart by the head the node holds).
    let rows_only = existing.is_none()
        && match next {
            Some(e) if e.head() == header_key.head() => e
                .key(w)?
                .with_bytes(|b| key::is_row_of(b, key::tail(prefix))),
            _ => false,
        };
    if existing.is_none() && !rows_only {
        return insert_partition(w, tree, undo, scratch, m, header_bytes, &cursor);
    }
    let old_header = match existing {
        Some(e) => decode_value(w, &e, codec::decode_header)?,
        None => Header::default(),
    };
    if m.partition_tombstone().is_none()
        && m.range_tombstones().is_empty()
        && m.static_row().is_none_or(Row::is_empty)
    {
        let at_header = existing.is_some();
        return update_rows(
            w,
            tree,
            undo,
            scratch,
            m,
            &old_header,
            prefix,
            cursor,
            at_header,
        );
    }
    let mut delta = Delta {
        rts_before: codec::range_tombstone_count(&old_header.range_tombstones),
        ..Delta::default()
    };

    // The stored rows the mutation can change: those it writes, and those
    // its new deletions cover.
    let mut old_rows: BTreeMap<ClusteringKey, Row> = BTreeMap::new();
    for ck in m.rows().keys() {
        let k = row_key(ck);
        if let Some(e) = tree.find(w, &SearchKey::raw(&k), &mut cursor)? {
            old_rows.insert(ck.clone(), decode_value(w, &e, codec::decode_row)?);
        }
    }
    if m.partition_tombstone() > old_header.tombstone {
        collect_rows(w, tree, prefix, &[], None, &mut old_rows)?;
    } else {
        for rt in m.range_tombstones().to_range_tombstones() {
            if Some(rt.tombstone) <= old_header.tombstone {
                continue;
            }
            let start = match rt.range.start() {
                std::ops::Bound::Included(k) | std::ops::Bound::Excluded(k) => k.as_bytes(),
                std::ops::Bound::Unbounded => &[],
            };
            collect_rows(w, tree, prefix, start, Some(&rt.range), &mut old_rows)?;
        }
    }

    // Reconcile by the mutation crate's rules.
    let merged = reconcile(dk, &old_header, &old_rows, m)?;

    // The header: its entry is written when the header changes, and
    // added to a partition that had rows only (its header is no longer
    // empty: a partition or range tombstone or a static row came).
    let new_header = Header {
        tombstone: merged.partition_tombstone(),
        static_row: merged.static_row().cloned().unwrap_or_default(),
        range_tombstones: merged.range_tombstones().clone(),
    };
    delta.rts_after = codec::range_tombstone_count(&new_header.range_tombstones);
    if new_header != old_header {
        let (kv, key_len) = alloc_entry(
            w,
            undo,
            &mut scratch.encoded,
            key::tail(header_bytes),
            |out| codec::encode_header_into(out, &new_header),
        )?;
        match existing {
            Some(_) => {
                let old = tree.set_value(w, undo, &header_key, kv)?;
                undo.free_managed(old);
            }
            None => tree.insert(w, undo, &header_key, kv, key_len)?,
        }
    }
    let merged = &merged;

    // The rows. A partition without a header entry keeps a row: its header
    // stayed empty, so nothing here deletes (rows go only when a tombstone
    // shadows them, and a tombstone makes the header non-empty).
    let deletes = m.partition_tombstone().is_some() || !m.range_tombstones().is_empty();
    let keys: BTreeSet<&ClusteringKey> = old_rows.keys().chain(m.rows().keys()).collect();
    let encoded = &mut scratch.encoded;
    for ck in keys {
        let k_bytes = row_key(ck);
        let k = SearchKey::raw(&k_bytes);
        let shadowing = deletes || m.row(ck).is_some_and(|r| r.tombstone.is_some());
        match (old_rows.get(ck), merged.row(ck)) {
            (Some(_), None) => {
                let e = tree.remove(w, undo, &k)?;
                undo.free_managed(e.kv);
                delta.rows_removed += 1;
                if shadowing {
                    delta.rows_dropped += 1;
                    delta.bytes_freed += e.kv.len() as u64;
                }
            }
            (Some(old), Some(new)) if old != new => {
                check_row_size(m, ck, new)?;
                let (kv, _) = alloc_entry(w, undo, encoded, key::tail(&k_bytes), |out| {
                    codec::encode_row(out, new)
                })?;
                let old_kv = tree.set_value(w, undo, &k, kv)?;
                undo.free_managed(old_kv);
                if shadowing && old_kv.len() > kv.len() {
                    delta.bytes_freed += (old_kv.len() - kv.len()) as u64;
                }
            }
            (None, Some(new)) => {
                let (kv, key_len) = alloc_entry(w, undo, encoded, key::tail(&k_bytes), |out| {
                    codec::encode_row(out, new)
                })?;
                tree.insert(w, undo, &k, kv, key_len)?;
                delta.rows_added += 1;
            }
            _ => {}
        }
    }
    Ok(delta)
}

/// A partition the memtable does not hold: its header and rows are `m`
/// itself (a `Mutation` is canonical, so there is nothing to reconcile),
/// stored as consecutive entries at the leaf position `cursor` came to in
/// the search for the header, in one step when the leaf has room. The
/// header gets an entry only if it is not empty or there are no rows.
#[allow(clippy::too_many_arguments)] // the apply's parts, passed on as they are
fn insert_partition(
    w: &mut RegionWriter<'_>,
    tree: &mut Tree,
    undo: &mut Undo,
    scratch: &mut Scratch,
    m: &Mutation,
    header_bytes: &[u8],
    cursor: &Cursor,
) -> Result<Delta, Error> {
    let Scratch {
        keys,
        ends,
        entries,
        encoded,
        ..
    } = scratch;
    let header = Header {
        tombstone: m.partition_tombstone(),
        static_row: m.static_row().cloned().unwrap_or_default(),
        range_tombstones: m.range_tombstones().clone(),
    };
    let prefix = &header_bytes[..header_bytes.len() - 1];
    // The header has an entry only if it is not empty, or if the partition
    // has no row (it must still be there: a partition exists while it has
    // an entry).
    let with_header = header != Header::default() || m.rows().is_empty();
    // Every key, encoded into one buffer, with the end offset of each.
    if with_header {
        keys.extend_from_slice(header_bytes);
        ends.push(keys.len());
    }
    for ck in m.rows().keys() {
        keys.extend_from_slice(prefix);
        keys.push(key::KIND_ROW);
        keys.extend_from_slice(ck.as_bytes());
        ends.push(keys.len());
    }
    let key_at = |i: usize| &keys[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
    let header_entry = with_header.then_some(None);
    let rows = header_entry.into_iter().chain(m.rows().values().map(Some));
    for (i, row) in rows.enumerate() {
        let k = key_at(i);
        let (kv, key_len) = alloc_entry(w, undo, encoded, key::tail(k), |out| match row {
            None => codec::encode_header_into(out, &header),
            Some(row) => codec::encode_row(out, row),
        })?;
        entries.push(Entry::new(&SearchKey::raw(k), kv, key_len));
    }
    if !tree.insert_at(w, undo, cursor, entries)? {
        for (i, e) in entries.iter().enumerate() {
            tree.insert(w, undo, &SearchKey::raw(key_at(i)), e.kv, e.key_len())?;
        }
    }
    Ok(Delta {
        new_partition: true,
        rows_added: m.rows().len(),
        rts_after: codec::range_tombstone_count(&header.range_tombstones),
        ..Delta::default()
    })
}

/// An existing partition and a mutation of rows only (no partition or
/// range tombstone, no static row): the header cannot change and the
/// partition's deletions stay as stored, so each row is reconciled on its
/// own, as `Mutation::apply` does when deletions are unchanged (the
/// stored row with the incoming one, compacted with the tombstone covering
/// it), with one descent per row and no reconcile of the partition.
/// `header_cursor` is at the header entry if `at_header`, else where the
/// header would be (at the partition's first row).
#[allow(clippy::too_many_arguments)] // the apply's parts, passed on as they are
fn update_rows(
    w: &mut RegionWriter<'_>,
    tree: &mut Tree,
    undo: &mut Undo,
    scratch: &mut Scratch,
    m: &Mutation,
    header: &Header,
    prefix: &[u8],
    header_cursor: Cursor,
    at_header: bool,
) -> Result<Delta, Error> {
    let Scratch {
        keys: key, encoded, ..
    } = scratch;
    let rts = codec::range_tombstone_count(&header.range_tombstones);
    let mut delta = Delta {
        rts_before: rts,
        rts_after: rts,
        ..Delta::default()
    };
    // While the index keeps its structure, the cursor is at the last entry
    // looked at (the header, then each row), or where the header would be
    // in a partition without a header entry (at its first row): a row
    // stored just after it, or at it, is found without a descent.
    let mut cursor = header_cursor;
    let mut positioned = true;
    let mut at_entry = at_header;
    for (ck, row) in m.rows() {
        key.clear();
        key.extend_from_slice(prefix);
        key.push(key::KIND_ROW);
        key.extend_from_slice(ck.as_bytes());
        let k = SearchKey::raw(key);
        let covering = if header.range_tombstones.is_empty() {
            header.tombstone
        } else {
            header.tombstone.max(
                header
                    .range_tombstones
                    .tombstone_at(&Position::At(ck.clone())),
            )
        };
        let shadowing = row.tombstone.is_some();
        let near = match (positioned, at_entry) {
            (false, _) => None,
            (true, true) => tree.next_if(w, &k, &mut cursor)?,
            (true, false) => tree.here_if(w, &k, &cursor)?,
        };
        let found = match near {
            Some(e) => Some(e),
            None => tree.locate(w, &k, &mut cursor)?,
        };
        positioned = true;
        at_entry = true;
        match found {
            None => {
                let mut new = row.clone();
                new.compact(covering);
                if new.is_empty() {
                    at_entry = false; // where `k` would be
                    continue;
                }
                let (kv, key_len) = alloc_entry(w, undo, encoded, key::tail(key), |out| {
                    codec::encode_row(out, &new)
                })?;
                if !tree.insert_at(w, undo, &cursor, &[Entry::new(&k, kv, key_len)])? {
                    tree.insert(w, undo, &k, kv, key_len)?;
                    positioned = false; // the index split
                }
                delta.rows_added += 1;
            }
            Some(e) => {
                let mut new = decode_value(w, &e, codec::decode_row)?;
                new.apply(row.clone());
                new.compact(covering);
                if new.is_empty() {
                    let e = tree.remove(w, undo, &k)?;
                    positioned = false;
                    undo.free_managed(e.kv);
                    delta.rows_removed += 1;
                    if shadowing {
                        delta.rows_dropped += 1;
                        delta.bytes_freed += e.kv.len() as u64;
                    }
                } else {
                    check_row_size(m, ck, &new)?;
                    // The encoding is canonical: the same bytes (key and
                    // row), the same row.
                    encoded.clear();
                    encoded.extend_from_slice(key::tail(key));
                    codec::encode_row(encoded, &new);
                    if w.managed(e.kv)?.cmp_bytes(encoded) == std::cmp::Ordering::Equal {
                        continue;
                    }
                    let kv = undo.alloc_managed(w, encoded)?;
                    let old_kv = tree.set_value_here(w, undo, &cursor, kv)?;
                    undo.free_managed(old_kv);
                    if shadowing && old_kv.len() > kv.len() {
                        delta.bytes_freed += (old_kv.len() - kv.len()) as u64;
                    }
                }
            }
        }
    }
    Ok(delta)
}
