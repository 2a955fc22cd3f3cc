//! Readers: range scans, single-partition slices, the flush stream.

use std::cmp::Ordering;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::ops::Bound;

use mutation::{
    ClusteringKey, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation,
    PartitionRange, Position, RangeTombstoneList, RingPosition, Token, Tombstone,
};

use crate::Error;
use crate::codec;
use crate::key::{self, SearchKey, Suffix};
use crate::memtable::{Memtable, State};
use crate::sync::Arc;
use crate::sync::atomic::Ordering as AtomicOrdering;
use crate::tree::{Cursor, Entry, View};

/// Where the next step continues.
#[derive(Debug, Clone)]
enum Resume {
    /// At the start of the reader's range.
    Start,
    /// At the entry the cursor is at (placed by `make_reader_opt` at the
    /// range's start), if its version is current; else as `Start`.
    Here,
    /// At the first entry after this encoded key.
    After(Vec<u8>),
    /// At the first entry at or after this encoded key (the entry the
    /// cursor is at, if its version is current).
    From(Vec<u8>),
}

/// The partition being read.
///
/// A partition is read across several holds of the memtable's lock, and
/// an apply between two of them may delete rows the reader has not
/// reached yet: a partition or range tombstone removes the rows it
/// shadows at once (eager compaction), and the tombstone goes to the
/// header, which the reader has passed. Read as it is then, the partition
/// would have neither the rows nor the tombstone that removed them, and an
/// older version of those rows in another source (a sealed memtable, an
/// sstable) would show through the merge: a read started after a write
/// was acknowledged returned the partition's previous version (issue 32).
/// So the reader remembers the deletions it read, looks at the header
/// again whenever the memtable's deletions changed, and carries what the
/// header gained into the rest of the stream as range tombstone changes.
#[derive(Debug)]
struct Partition {
    /// Encoded partition part of its keys.
    prefix: Vec<u8>,
    /// Range tombstone changes clipped to the slice, not yet emitted.
    changes: VecDeque<(Position, Option<Tombstone>)>,
    /// The partition tombstone its start carried.
    started_with: Option<Tombstone>,
    /// The header's deletions as last read.
    tombstone: Option<Tombstone>,
    range_tombstones: RangeTombstoneList,
    /// `State::deletions` when the header was last read.
    deletions: u64,
    /// Where the part of the slice not yet streamed starts: the slice's
    /// start, or just after the last row emitted.
    from: Position,
    /// The range tombstone in effect at `from` (the last change emitted).
    active: Option<Tombstone>,
}

/// The encoded key of the header entry of the partition whose encoded
/// prefix is `prefix`.
fn header_key(prefix: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + 1);
    k.extend_from_slice(prefix);
    k.push(key::KIND_HEADER);
    k
}

/// The header of the partition whose header key is `header_key` as the
/// memtable holds it now (empty for a partition stored with rows only).
fn read_header(state: &State, view: &impl View, header_key: &[u8]) -> Result<codec::Header, Error> {
    let mut cursor = Cursor::new();
    match state
        .tree
        .find(view, &SearchKey::raw(header_key), &mut cursor)?
    {
        Some(entry) => entry.value(view)?.with_bytes(codec::decode_header),
        None => Ok(codec::Header::default()),
    }
}

/// The range tombstone changes a stream emits for `list` over
/// `[from, end)`, with `floor` (a partition tombstone the stream's
/// partition start did not carry) folded into every value, given that
/// `current` is in effect at `from`; the last change closes at `end`.
fn clipped_changes(
    list: &RangeTombstoneList,
    floor: Option<Tombstone>,
    from: &Position,
    end: &Position,
    mut current: Option<Tombstone>,
) -> VecDeque<(Position, Option<Tombstone>)> {
    let mut changes = VecDeque::new();
    if from >= end {
        return changes;
    }
    let at_from = list.tombstone_at(from).max(floor);
    if at_from != current {
        changes.push_back((from.clone(), at_from));
        current = at_from;
    }
    for (p, t) in list.changes() {
        if p > from && p < end {
            let t = (*t).max(floor);
            if t != current {
                changes.push_back((p.clone(), t));
                current = t;
            }
        }
    }
    if current.is_some() {
        changes.push_back((end.clone(), None));
    }
    changes
}

/// Rows `next_mutation` reads under one hold of the memtable's lock before
/// letting writers in (a wide partition is not read under one hold).
const WHOLE_ROWS_PER_HOLD: usize = 64;

/// A progress callback of a flush reader.
type Progress = Box<dyn FnMut(usize) + Send>;

/// A [`FragmentReader`] over a memtable: a range scan, a single-partition
/// read with a clustering slice, or the flush stream.
///
/// It holds no lock between calls to `next()`; each call takes the
/// memtable's shared lock once and does one index step (a cursor step, or a
/// seek from the last emitted position if an apply changed the index
/// since). Each row is read whole under the lock, so it is never seen half
/// applied; the partition as a whole is not a snapshot (a row applied
/// behind the reader's position is not seen, one ahead of it is). A
/// deletion applied while the reader is inside a partition (a partition or
/// range tombstone, which removes the rows it shadows and goes to the
/// header the reader has passed) is carried into the rest of the stream
/// as range tombstone changes, so a row it removed is never simply
/// missing: each row the reader emits, or does not, is as some version of
/// the memtable at or after the read's start had it.
///
/// Once the memtable is [marked flushed](Memtable::mark_flushed), a scan
/// continues at its next partition in the replacement source and drops
/// its reference to the memtable.
pub struct MemtableReader {
    memtable: Option<Arc<Memtable>>,
    range: PartitionRange,
    slice: ClusteringRange,
    cursor: Cursor,
    /// The version at which `cursor` sits on the entry `resume` names.
    cursor_version: Option<u64>,
    resume: Resume,
    partition: Option<Partition>,
    queue: VecDeque<Fragment>,
    /// The last partition whose start was queued, and the encoded key just
    /// after it.
    last_partition: Option<(DecoratedKey, Vec<u8>)>,
    /// The last partition whose start was returned.
    produced: Option<(DecoratedKey, Vec<u8>)>,
    replacement: Option<Box<dyn FragmentReader + Send>>,
    hand_off: bool,
    progress: Option<Progress>,
    reported: usize,
    finished: bool,
    /// The loom models' switch to read as the reader did before issue
    /// 32's fix, without looking at a partition's header again; the
    /// counterpart models show the stale read it allowed.
    #[cfg(all(test, loom))]
    without_header_recheck: bool,
}

impl Drop for MemtableReader {
    fn drop(&mut self) {
        self.release();
    }
}

impl fmt::Debug for MemtableReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemtableReader")
            .field("range", &self.range)
            .field("slice", &self.slice)
            .field("handed_off", &self.replacement.is_some())
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

fn is_single_key(range: &PartitionRange) -> Option<&DecoratedKey> {
    match (range.start(), range.end()) {
        (Bound::Included(RingPosition::Key(a)), Bound::Included(RingPosition::Key(b)))
            if a == b =>
        {
            Some(a)
        }
        _ => None,
    }
}

/// Where a range starts in the index: the key and whether it is included;
/// `None` for a range that holds nothing (it starts after token MAX).
fn range_start(range: &PartitionRange) -> Option<(SearchKey<'_>, bool)> {
    Some(match range.start() {
        Bound::Unbounded => (SearchKey::token(Token::MIN), false),
        Bound::Included(RingPosition::Token(t)) => (SearchKey::token(*t), false),
        Bound::Excluded(RingPosition::Token(t)) => {
            let next = t.value().checked_add(1)?;
            (SearchKey::token(Token::from_i64(next)), false)
        }
        Bound::Included(RingPosition::Key(k)) => (SearchKey::new(k, Suffix::Header), false),
        Bound::Excluded(RingPosition::Key(k)) => (SearchKey::new(k, Suffix::After), false),
    })
}

/// Whether the first entry at or after the range's start (a partition's
/// header, or its first row if it has no header entry) lies in the range
/// (the index only: no allocation for short keys).
fn first_in_range(
    state: &State,
    view: &impl View,
    range: &PartitionRange,
    cursor: &mut Cursor,
) -> Result<bool, Error> {
    if let Some(key) = is_single_key(range) {
        // The partition's entries are those from its header's key to
        // just before its `After` key.
        let header = SearchKey::new(key, Suffix::Header);
        let Some(entry) = state.tree.seek(view, &header, false, cursor)? else {
            return Ok(false);
        };
        let after = SearchKey::new(key, Suffix::After);
        return Ok(after.cmp_entry(entry.head(), &entry.key(view)?) == Ordering::Greater);
    }
    let Some((start, strict)) = range_start(range) else {
        return Ok(false);
    };
    let Some(entry) = state.tree.seek(view, &start, strict, cursor)? else {
        return Ok(false);
    };
    // Compare with the range's end without decoding the key (no allocation).
    let token = key::token_of(&entry.head());
    let cmp = |k: &DecoratedKey, suffix| -> Result<Ordering, Error> {
        Ok(SearchKey::new(k, suffix).cmp_entry(entry.head(), &entry.key(view)?))
    };
    Ok(match range.end() {
        Bound::Unbounded => true,
        Bound::Included(RingPosition::Token(t)) => token <= *t,
        Bound::Excluded(RingPosition::Token(t)) => token < *t,
        Bound::Included(RingPosition::Key(k)) => cmp(k, Suffix::After)? == Ordering::Greater,
        Bound::Excluded(RingPosition::Key(k)) => cmp(k, Suffix::Header)? == Ordering::Greater,
    })
}

/// The whole encoded key of `entry`: the head the node holds (the token),
/// then the stored bytes.
fn full_key(view: &impl View, entry: &Entry) -> Result<Vec<u8>, Error> {
    let stored = entry.key(view)?;
    let mut bytes = Vec::with_capacity(key::TOKEN_LEN + stored.len());
    bytes.extend_from_slice(&entry.head());
    stored.copy_to(&mut bytes);
    Ok(bytes)
}

impl Memtable {
    /// A reader of the partitions in `range`, each restricted to the rows
    /// in `slice` (the static row and partition tombstone always come), or
    /// `None` if the memtable holds no partition in `range`. Deciding
    /// `None` allocates nothing (for keys that fit one region object): a
    /// single-partition miss is one index descent, and so is an empty
    /// range scan.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the index does not decode (a bug).
    pub fn make_reader_opt(
        self: &Arc<Self>,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<Option<MemtableReader>, Error> {
        let mut cursor = Cursor::new();
        let state = self.state.read();
        if state.tree.root.is_none() {
            // Nothing applied (a memtable just put in place), or handed
            // over: no index to look at.
            return Ok(None);
        }
        let view = state.region.reader();
        if !first_in_range(&state, &view, &range, &mut cursor)? {
            return Ok(None);
        }
        let version = state.version;
        drop(view);
        // Made (and counted as open) under the lock, so a hand-over sees
        // it (see `Memtable::hand_over`).
        let mut reader = MemtableReader::new(Some(self.clone()), range, slice, true, None);
        drop(state);
        // The descent just made is where the reader starts (unless an
        // apply changes the index first).
        reader.cursor = cursor;
        reader.cursor_version = Some(version);
        reader.resume = Resume::Here;
        Ok(Some(reader))
    }

    /// [`make_reader_opt`](Self::make_reader_opt), with an empty reader in
    /// place of `None`.
    ///
    /// # Errors
    /// As for [`make_reader_opt`](Self::make_reader_opt).
    pub fn make_reader(
        self: &Arc<Self>,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<MemtableReader, Error> {
        Ok(self
            .make_reader_opt(range.clone(), slice.clone())?
            .unwrap_or_else(|| MemtableReader::new(None, range, slice, false, None)))
    }

    /// A reader that always walks the index, even when nothing matches:
    /// the baseline `make_reader_opt` is measured against.
    pub fn make_reader_unchecked(
        self: &Arc<Self>,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> MemtableReader {
        let _counted_under_the_lock = self.state.read();
        MemtableReader::new(Some(self.clone()), range, slice, true, None)
    }

    /// The flush stream: every partition in ring order, written as stored
    /// (the memtable compacted itself on apply, so there is no compaction
    /// pass). As it goes, `on_progress` is called with the region bytes
    /// (keys and values) of each entry it emitted, and at the end with the
    /// rest of what the region holds (index nodes); the sum never exceeds
    /// what the region holds, and reaches it when the stream ends. After
    /// [`detach_from_region_group`](Self::detach_from_region_group)
    /// no progress is reported. A flush stream is never handed off.
    pub fn make_flush_reader(
        self: &Arc<Self>,
        on_progress: impl FnMut(usize) + Send + 'static,
    ) -> MemtableReader {
        let _counted_under_the_lock = self.state.read();
        MemtableReader::new(
            Some(self.clone()),
            PartitionRange::full(),
            ClusteringRange::full(),
            false,
            Some(Box::new(on_progress)),
        )
    }
}

impl MemtableReader {
    fn new(
        memtable: Option<Arc<Memtable>>,
        range: PartitionRange,
        slice: ClusteringRange,
        hand_off: bool,
        progress: Option<Progress>,
    ) -> MemtableReader {
        if let Some(m) = &memtable {
            m.open_readers.fetch_add(1, AtomicOrdering::SeqCst);
        }
        MemtableReader {
            finished: memtable.is_none(),
            memtable,
            range,
            slice,
            cursor: Cursor::new(),
            cursor_version: None,
            resume: Resume::Start,
            partition: None,
            queue: VecDeque::new(),
            last_partition: None,
            produced: None,
            replacement: None,
            hand_off,
            progress,
            reported: 0,
            #[cfg(all(test, loom))]
            without_header_recheck: false,
        }
    }

    /// Lets go of the memtable (no longer counted as open).
    fn release(&mut self) {
        if let Some(m) = self.memtable.take() {
            m.open_readers.fetch_sub(1, AtomicOrdering::SeqCst);
        }
    }

    /// Reads as before issue 32's fix (loom models only; see the field).
    #[cfg(all(test, loom))]
    pub(crate) fn without_header_recheck(mut self) -> Self {
        self.without_header_recheck = true;
        self
    }

    /// Whether a partition's header is looked at again once the
    /// memtable's deletions changed (always, but in the loom models'
    /// counterparts).
    fn rechecks_header(&self) -> bool {
        #[cfg(all(test, loom))]
        if self.without_header_recheck {
            return false;
        }
        true
    }

    /// The region bytes a flush reader has reported so far (0 for other
    /// readers): for a caller that prefers to poll, e.g. to pass the growth
    /// to dirty-memory's `Flush::account_written` between fragments.
    pub fn progress_bytes(&self) -> usize {
        self.reported
    }

    /// True once the reader continues in the memtable's replacement source.
    pub fn is_handed_off(&self) -> bool {
        self.replacement.is_some()
    }

    /// The next entry after the resume point, reusing the cursor when the
    /// index has not changed.
    fn next_entry(&mut self, state: &State, view: &impl View) -> Result<Option<Entry>, Error> {
        if self.cursor_version == Some(state.version) {
            match self.resume {
                Resume::After(_) => return state.tree.advance(view, &mut self.cursor),
                Resume::From(_) | Resume::Here => return state.tree.current(view, &self.cursor),
                Resume::Start => {}
            }
        }
        match &self.resume {
            Resume::Start | Resume::Here => match range_start(&self.range) {
                Some((key, strict)) => state.tree.seek(view, &key, strict, &mut self.cursor),
                None => Ok(None),
            },
            Resume::After(k) => state
                .tree
                .seek(view, &SearchKey::raw(k), true, &mut self.cursor),
            Resume::From(k) => state
                .tree
                .seek(view, &SearchKey::raw(k), false, &mut self.cursor),
        }
    }

    fn report(&mut self, state: &State, view: &logalloc::RegionReader<'_>, entry: &Entry) {
        if state.is_detached() {
            return;
        }
        if let Some(progress) = &mut self.progress {
            let held = view.stats().used_bytes;
            let bytes = entry.kv.len().min(held.saturating_sub(self.reported));
            if bytes > 0 {
                self.reported += bytes;
                progress(bytes);
            }
        }
    }

    /// At the end of a flush stream: the region bytes not reported yet
    /// (index nodes, chunk indexes, padding), so the total reported is what
    /// the region holds.
    fn report_rest(&mut self) {
        let (Some(memtable), Some(progress)) = (&self.memtable, &mut self.progress) else {
            return;
        };
        let state = memtable.state.read();
        if state.is_detached() {
            return;
        }
        let held = state.region.stats().used_bytes;
        let rest = held.saturating_sub(self.reported);
        if rest > 0 {
            self.reported += rest;
            progress(rest);
        }
    }

    /// One step between partitions: start the next one, hand off, or end.
    fn step_between(&mut self) -> Result<(), Error> {
        let memtable = self.memtable.clone().expect("not finished");
        let state = memtable.state.read();
        if self.hand_off
            && let Some(source) = state.replacement.clone()
        {
            drop(state);
            let start = match &self.produced {
                Some((key, _)) => Bound::Excluded(RingPosition::Key(key.clone())),
                None => self.range.start().clone(),
            };
            let rest = PartitionRange::new(start, self.range.end().clone())?;
            self.replacement = Some(source.make_reader(rest, self.slice.clone())?);
            self.release();
            return Ok(());
        }
        let view = state.region.reader();
        let Some(entry) = self.next_entry(&state, &view)? else {
            self.finished = true;
            return Ok(());
        };
        let version = state.version;
        let stored_bytes = full_key(&view, &entry)?;
        let decoded = key::decode(&stored_bytes)?;
        // A partition whose header is empty may have no header entry: its
        // first entry is then its first row.
        let has_header = decoded.row.is_none();
        let dk = decoded.partition;
        let prefix = stored_bytes[..decoded.prefix_len].to_vec();
        let mut after = prefix.clone();
        after.push(key::KIND_AFTER);
        if self.range.is_after(&dk) {
            self.finished = true;
            return Ok(());
        }
        if self.range.is_before(&dk) {
            // Only after a fast-forward: jump to the range's start.
            self.resume = match range_start(&self.range) {
                Some((k, _)) => Resume::From(k.encode()),
                None => {
                    self.finished = true;
                    return Ok(());
                }
            };
            self.cursor_version = None;
            return Ok(());
        }
        let header = if has_header {
            self.report(&state, &view, &entry);
            entry.value(&view)?.with_bytes(codec::decode_header)?
        } else {
            codec::Header::default()
        };
        self.queue.push_back(Fragment::PartitionStart {
            key: dk.clone(),
            tombstone: header.tombstone,
        });
        if !header.static_row.is_empty() {
            self.queue.push_back(Fragment::StaticRow(header.static_row));
        }
        let from = self.slice.start_position();
        let changes = clipped_changes(
            &header.range_tombstones,
            None,
            &from,
            &self.slice.end_position(),
            None,
        );
        match self.slice.start() {
            Bound::Unbounded if has_header => {
                self.resume = Resume::After(stored_bytes);
                self.cursor_version = Some(version);
            }
            Bound::Unbounded => {
                // The cursor is at the first row: it comes next.
                self.resume = Resume::From(stored_bytes);
                self.cursor_version = Some(version);
            }
            Bound::Included(k) | Bound::Excluded(k) => {
                let from = SearchKey::new(&dk, Suffix::Row(k.as_bytes())).encode();
                self.resume = Resume::From(from);
                self.cursor_version = None;
            }
        }
        self.partition = Some(Partition {
            prefix,
            changes,
            started_with: header.tombstone,
            tombstone: header.tombstone,
            range_tombstones: header.range_tombstones,
            deletions: state.deletions,
            from,
            active: None,
        });
        self.last_partition = Some((dk, after));
        Ok(())
    }

    /// Inside a partition, under the lock: if an apply changed the
    /// memtable's deletions since the partition's header was last read,
    /// reads it again, and replaces the range tombstone changes still to
    /// be emitted with those of the header as it is now, its partition
    /// tombstone folded in if it grew (see [`Partition`]).
    fn recheck_header(&mut self, state: &State, view: &impl View) -> Result<(), Error> {
        let recheck = self.rechecks_header();
        let partition = self.partition.as_mut().expect("in a partition");
        if !recheck || partition.deletions == state.deletions {
            return Ok(());
        }
        partition.deletions = state.deletions;
        let header = read_header(state, view, &header_key(&partition.prefix))?;
        if header.tombstone == partition.tombstone
            && header.range_tombstones == partition.range_tombstones
        {
            return Ok(());
        }
        let floor = header
            .tombstone
            .filter(|t| Some(*t) > partition.started_with);
        partition.changes = clipped_changes(
            &header.range_tombstones,
            floor,
            &partition.from,
            &self.slice.end_position(),
            partition.active,
        );
        partition.tombstone = header.tombstone;
        partition.range_tombstones = header.range_tombstones;
        Ok(())
    }

    /// Ends the current partition: the remaining range tombstone changes,
    /// then the partition end.
    fn end_partition(&mut self) {
        if let Some(p) = self.partition.take() {
            for (position, tombstone) in p.changes {
                self.queue.push_back(Fragment::RangeTombstoneChange {
                    position,
                    tombstone,
                });
            }
            self.queue.push_back(Fragment::PartitionEnd);
            let after = self
                .last_partition
                .as_ref()
                .expect("in a partition")
                .1
                .clone();
            self.resume = Resume::After(after);
            self.cursor_version = None;
        }
    }

    /// One step inside a partition: the next row in the slice, or the end.
    fn step_in_partition(&mut self) -> Result<(), Error> {
        if self.slice.is_empty() {
            self.end_partition();
            return Ok(());
        }
        let memtable = self.memtable.clone().expect("not finished");
        let state = memtable.state.read();
        let view = state.region.reader();
        self.recheck_header(&state, &view)?;
        let entry = self.next_entry(&state, &view)?;
        let version = state.version;
        let prefix = &self.partition.as_ref().expect("in a partition").prefix;
        let row_key = match &entry {
            Some(e) => {
                let bytes = full_key(&view, e)?;
                if key::is_row_of(&bytes, prefix) {
                    let ck = mutation::ClusteringKey::new(bytes[prefix.len() + 1..].to_vec())?;
                    Some((ck, bytes))
                } else {
                    None
                }
            }
            None => None,
        };
        let Some((ck, stored)) = row_key else {
            drop(view);
            drop(state);
            self.end_partition();
            return Ok(());
        };
        let entry = entry.expect("a row");
        let at = Position::At(ck.clone());
        if at < self.slice.start_position() {
            // The excluded start key itself.
            self.resume = Resume::After(stored);
            self.cursor_version = Some(version);
            return Ok(());
        }
        if at >= self.slice.end_position() {
            drop(view);
            drop(state);
            self.end_partition();
            return Ok(());
        }
        let row = entry.value(&view)?.with_bytes(codec::decode_row)?;
        self.report(&state, &view, &entry);
        let partition = self.partition.as_mut().expect("in a partition");
        while partition.changes.front().is_some_and(|(p, _)| *p < at) {
            let (position, tombstone) = partition.changes.pop_front().expect("non-empty");
            partition.active = tombstone;
            self.queue.push_back(Fragment::RangeTombstoneChange {
                position,
                tombstone,
            });
        }
        partition.from = Position::After(ck.clone());
        self.queue
            .push_back(Fragment::ClusteringRow { key: ck, row });
        self.resume = Resume::After(stored);
        self.cursor_version = Some(version);
        Ok(())
    }

    /// The next partition whole, for [`FragmentReader::next_mutation`]:
    /// read from the index into one mutation, with no fragment queued,
    /// streamed or collected, and the lock taken once for the header and
    /// once per [`WHOLE_ROWS_PER_HOLD`] rows (each row still read whole
    /// under it, as the streaming path reads them). `Ok(None)` where the
    /// streaming path is to do it: a flush reader, one handed off or about
    /// to be, one inside a partition, after a fast-forward, and a slice of
    /// a partition with range tombstones (which the stream clips).
    fn next_whole(&mut self) -> Result<Option<Option<Mutation>>, Error> {
        if self.progress.is_some()
            || self.replacement.is_some()
            || self.partition.is_some()
            || !self.queue.is_empty()
        {
            return Ok(None);
        }
        let Some(memtable) = self.memtable.clone() else {
            return Ok(Some(None));
        };
        if self.finished {
            return Ok(Some(None));
        }
        let full = matches!(
            (self.slice.start(), self.slice.end()),
            (Bound::Unbounded, Bound::Unbounded)
        );
        let (dk, header, prefix, has_header, stored_bytes, mut deletions) = {
            let state = memtable.state.read();
            if self.hand_off && state.replacement.is_some() {
                return Ok(None);
            }
            let view = state.region.reader();
            let Some(entry) = self.next_entry(&state, &view)? else {
                self.finished = true;
                return Ok(Some(None));
            };
            let stored_bytes = full_key(&view, &entry)?;
            let decoded = key::decode(&stored_bytes)?;
            let has_header = decoded.row.is_none();
            let dk = decoded.partition;
            if self.range.is_after(&dk) {
                self.finished = true;
                return Ok(Some(None));
            }
            let header = if has_header {
                entry.value(&view)?.with_bytes(codec::decode_header)?
            } else {
                codec::Header::default()
            };
            if self.range.is_before(&dk) || (!full && !header.range_tombstones.is_empty()) {
                // The cursor may have moved: the streaming path seeks
                // from `resume` again.
                self.cursor_version = None;
                return Ok(None);
            }
            let prefix = stored_bytes[..decoded.prefix_len].to_vec();
            // Where the rows start, as `step_between` puts it.
            match self.slice.start() {
                Bound::Unbounded => {
                    self.cursor_version = Some(state.version);
                }
                Bound::Included(k) | Bound::Excluded(k) => {
                    let from = SearchKey::new(&dk, Suffix::Row(k.as_bytes())).encode();
                    self.cursor_version = None;
                    self.resume = Resume::From(from);
                }
            }
            (
                dk,
                header,
                prefix,
                has_header,
                stored_bytes,
                state.deletions,
            )
        };
        if matches!(self.slice.start(), Bound::Unbounded) {
            self.resume = if has_header {
                Resume::After(stored_bytes)
            } else {
                // The cursor is at the first row: it comes next.
                Resume::From(stored_bytes)
            };
        }
        let (start, end) = (self.slice.start_position(), self.slice.end_position());
        let mut rows: BTreeMap<ClusteringKey, mutation::Row> = BTreeMap::new();
        'partition: loop {
            let state = memtable.state.read();
            let view = state.region.reader();
            if state.deletions != deletions && self.rechecks_header() {
                // An apply may have deleted rows not read yet (see
                // `Partition`): if this partition's deletions changed,
                // the streaming path reads it again from its start and
                // carries the change.
                let header_key = header_key(&prefix);
                let now = read_header(&state, &view, &header_key)?;
                if now.tombstone != header.tombstone
                    || now.range_tombstones != header.range_tombstones
                {
                    self.resume = Resume::From(header_key);
                    self.cursor_version = None;
                    return Ok(None);
                }
                deletions = state.deletions;
            }
            for _ in 0..WHOLE_ROWS_PER_HOLD {
                let Some(entry) = self.next_entry(&state, &view)? else {
                    break 'partition;
                };
                let bytes = full_key(&view, &entry)?;
                if !key::is_row_of(&bytes, &prefix) {
                    break 'partition;
                }
                let ck = ClusteringKey::new(bytes[prefix.len() + 1..].to_vec())?;
                let version = state.version;
                if !full {
                    let at = Position::At(ck.clone());
                    if at < start {
                        // The excluded start key itself.
                        self.resume = Resume::After(bytes);
                        self.cursor_version = Some(version);
                        continue;
                    }
                    if at >= end {
                        break 'partition;
                    }
                }
                let row = entry.value(&view)?.with_bytes(codec::decode_row)?;
                rows.insert(ck, row);
                self.resume = Resume::After(bytes);
                self.cursor_version = Some(version);
            }
        }
        let mut after = prefix;
        after.push(key::KIND_AFTER);
        self.resume = Resume::After(after.clone());
        self.cursor_version = None;
        self.produced = Some((dk.clone(), after.clone()));
        self.last_partition = Some((dk.clone(), after));
        let range_tombstones = if full {
            header.range_tombstones
        } else {
            RangeTombstoneList::new()
        };
        let m = Mutation::from_parts(
            dk,
            header.tombstone,
            header.static_row,
            rows,
            range_tombstones,
        )?;
        Ok(Some(Some(m)))
    }

    fn next_fragment(&mut self) -> Result<Option<Fragment>, Error> {
        loop {
            if let Some(f) = self.queue.pop_front() {
                if matches!(f, Fragment::PartitionStart { .. }) {
                    self.produced = self.last_partition.clone();
                }
                return Ok(Some(f));
            }
            if let Some(r) = &mut self.replacement {
                return Ok(r.next()?);
            }
            if self.finished {
                self.report_rest();
                return Ok(None);
            }
            if self.partition.is_some() {
                self.step_in_partition()?;
            } else {
                self.step_between()?;
            }
        }
    }
}

impl FragmentReader for MemtableReader {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        Ok(self.next_fragment()?)
    }

    /// A partition read whole from the index (see `next_whole`), where
    /// the streaming path is not needed; else the default's collection.
    fn next_mutation(&mut self) -> Result<Option<Mutation>, mutation::Error> {
        match self.next_whole()? {
            Some(m) => Ok(m),
            None => mutation::collect_partition(self),
        }
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        if let Some(r) = &mut self.replacement {
            return r.fast_forward_to(range);
        }
        self.queue.clear();
        self.partition = None;
        self.resume = match &self.produced {
            Some((_, after)) => Resume::After(after.clone()),
            None => Resume::Start,
        };
        self.cursor_version = None;
        let was_start = matches!(self.resume, Resume::Start);
        self.range = range;
        if was_start {
            // Nothing produced yet: start at the new range's start.
            self.resume = Resume::Start;
        }
        self.finished = self.memtable.is_none();
        Ok(())
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        if let Some(r) = &mut self.replacement {
            return r.next_partition();
        }
        if matches!(self.queue.front(), Some(Fragment::PartitionStart { .. })) {
            return Ok(()); // between partitions: its start was not returned
        }
        if self.partition.is_some() || !self.queue.is_empty() {
            self.queue.clear();
            self.partition = None;
            if let Some((_, after)) = &self.last_partition {
                self.resume = Resume::After(after.clone());
            }
            self.cursor_version = None;
        }
        Ok(())
    }
}
