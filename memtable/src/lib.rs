//! `memtable`: the in-memory write buffer of a replica. Partitions, rows
//! and tombstones are reconciled by timestamp as they are applied, held
//! entirely in one logalloc region that reports to a region group, and read
//! back as ordered fragment streams (scans, single-partition slices, the
//! flush stream).
//!
//! ```
//! use memtable::logalloc::{PoolConfig, SegmentPool};
//! use memtable::Memtable;
//! use memtable::mutation::{
//!     Bound, Cell, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation,
//!     PartitionRange, Timestamp, Tombstone,
//! };
//! use memtable::region_group::{ReclaimConfig, RegionGroup};
//!
//! let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(16 << 20))?;
//! let group = RegionGroup::new("memtables", ReclaimConfig::default());
//! let memtable = Memtable::new(&group, &pool)?;
//!
//! let key = DecoratedKey::from_bytes("user:1")?;
//! let ts = |t| Timestamp::from_micros(t);
//! let mut rows = Mutation::builder(key.clone());
//! for ck in ["1", "2", "3", "4"] {
//!     rows = rows.cell(ck, 0, Cell::live(vec![7u8; 100], ts(10)));
//! }
//! memtable.apply(&rows.build()?)?;
//! let full = memtable.stats().region.used_bytes;
//! assert_eq!(group.real_usage(), memtable.stats().region.footprint_bytes());
//!
//! // A newer range tombstone over [2, 3] removes rows 2 and 3 at once.
//! let delete = Mutation::builder(key.clone())
//!     .range_tombstone_bounds(Bound::Included("2"), Bound::Included("3"), Tombstone::new(ts(20), 0))
//!     .build()?;
//! memtable.apply(&delete)?;
//! assert!(memtable.stats().region.used_bytes < full);
//!
//! let mut reader = memtable
//!     .make_reader_opt(PartitionRange::single_key(key.clone()), ClusteringRange::full())?
//!     .expect("the partition is there");
//! let mut kinds = Vec::new();
//! while let Some(fragment) = reader.next()? {
//!     kinds.push(fragment.kind());
//! }
//! assert_eq!(kinds, [
//!     "partition start", "clustering row", "range tombstone change",
//!     "range tombstone change", "clustering row", "partition end",
//! ]);
//!
//! // A miss allocates no reader at all.
//! let other = PartitionRange::single_key(DecoratedKey::from_bytes("user:2")?);
//! assert!(memtable.make_reader_opt(other, ClusteringRange::full())?.is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Storage and the index
//!
//! Everything lives in the region: the index nodes, the keys, the values.
//! The heap holds only the memtable's header (a lock, the root handle,
//! counters), which is bounded.
//!
//! **One B+tree over composite keys.** A partition is a header entry (its
//! tombstone, static row and range tombstones) followed by one entry per
//! clustering row, all in one B+tree keyed by an order-preserving byte
//! encoding: the token (big-endian, sign bit flipped), the partition key
//! with `0x00` escaped, a kind byte (header before rows), then the
//! clustering key. Bytewise order is ring order, then clustering order, so
//! one ordered index serves partition lookups, row lookups, range scans and
//! slices, and a reader's position is a single key to re-seek from.
//!
//! **The header entry is optional.** A partition whose header is empty (no
//! partition tombstone, static row or range tombstone: most partitions)
//! and that has rows is stored as its rows alone. A partition exists while
//! it has an entry, so one with neither rows nor a non-empty header (an
//! empty mutation) keeps a header entry. Every partition's entries lie
//! between its header's key and the key just after its last row, so apply
//! and the readers find it by that prefix either way: a reader that meets
//! a row first starts the partition with an empty header, and an apply
//! adds the header entry when a tombstone or a static row makes the header
//! non-empty. Headers never become empty again (tombstones are kept), and
//! rows go only when a tombstone shadows them, so a partition never loses
//! its last entry.
//! ScyllaDB nests a per-partition row B-tree inside a partition B+tree;
//! one tree is less code with the same asymptotics, and a wide partition
//! costs no more than many narrow ones.
//!
//! **Why a B+tree of region objects** (rather than a skip list or a sorted
//! array): its nodes are few and dense (a leaf holds up to 64 entries of
//! 24 bytes: the handle and 32-bit length of the entry's one string, its
//! key then its value, the key's length, and the key's first 8 bytes, its
//! token, so most comparisons in a descent are one integer comparison and
//! never look the key up; the stored key omits them), there are no
//! per-entry pointer towers, and compaction moves nodes like any object
//! because nodes refer to each other by [`logalloc::Handle`], never by
//! address. A node has a fixed size, so it is changed in place on its
//! bytes under the region's write lock ([`logalloc::RegionWriter`]): an
//! insert shifts the entries after it, a new value (a new string of the
//! key and the value) overwrites 12 bytes, a full leaf splits by copying
//! its upper half into a new node, and only a full internal node (once in
//! tens of leaf splits) is decoded to split. A descent takes the region's
//! shared lock once ([`logalloc::RegionReader`]).
//! Deletion does not rebalance: an emptied leaf leaves its parent, which
//! keeps the code small; memtables mostly grow.
//!
//! **Objects per row.** A single-row partition with an empty header costs
//! one region object, the row's key (without its token) and value in one
//! string, and one 24-byte leaf slot: no header entry, and one object's
//! overhead (12 bytes of handle table and slot list in logalloc) per entry
//! rather than two. An overwrite writes the key again with the new value
//! (a few tens of bytes).
//!
//! **Keys and values** are [`logalloc::ManagedBytes`]: one object, or
//! chunks plus an index object above the largest object size, so a 1 MiB
//! value or a 64 KiB key is stored like any other and compared without
//! being copied out. Rows are encoded with the workspace's codec primitives
//! ([`mutation::codec`]; this crate's `codec.rs` picks the layout:
//! fixed-width times, counts, column ids and lengths as varints);
//! the crate needs no `unsafe`, and neither
//! `zerocopy` nor `bytemuck`, because nothing is ever reinterpreted in
//! place: node fields and rows are read with `from_le_bytes`.
//!
//! # Apply
//!
//! [`Memtable::apply`] runs under the memtable's write lock and the
//! region's write lock, and starts with one descent for the partition's
//! header, which leaves a cursor at the header or where it would go; if
//! the header has no entry, the entry at that position tells whether the
//! partition is there (it is its first row) or not.
//!
//! - **A new partition** is the mutation itself (a `Mutation` is
//!   canonical: nothing to reconcile). Its rows, and its header if that is
//!   not empty or there are no rows, are written at that cursor in one step
//!   when the leaf has room; no further descent.
//! - **Rows only** (no partition or range tombstone, no static row) into an
//!   existing partition: the header cannot change, so each row is
//!   reconciled on its own, as `Mutation::apply` does when deletions are
//!   unchanged (stored row plus incoming, compacted with the covering
//!   tombstone). A row is looked for first at or just after the previous
//!   entry in the same leaf, so an overwrite of a single-row partition
//!   needs no second descent.
//! - **Otherwise** it reads the header and the rows the mutation can
//!   change (the rows it writes, plus those its new deletions cover),
//!   reconciles them with the mutation by [`mutation::Mutation`]'s rules,
//!   and writes back the difference (adding the header entry to a
//!   partition that had rows only).
//!
//! Rows the result no longer holds are removed and freed at once (eager
//! compaction), rows whose incoming data is shadowed are never stored,
//! tombstones are kept. An undo log makes it all or nothing: on an
//! allocation failure the nodes it changed are restored from their images
//! and every object it allocated is freed. The undo log and the buffers
//! keys and rows are encoded into are kept between applies (bounded), so
//! an apply allocates on the heap only what reconciling needs.
//!
//! **Limits.** A mutation that passed `mutation`'s builder fits, but
//! merging adds a row's columns up: an apply that would make a stored row
//! larger than one sstable block may hold
//! ([`mutation::limits::MAX_ROW_SIZE`]) is refused whole with
//! [`Error::RowTooLarge`], so the memtable never holds a row its flush
//! cannot write. A stored key or value is also bounded by the pool's
//! chunked strings (about 21 MB with 128 KiB segments; larger segments
//! raise it), refused whole with [`Error::ValueTooLarge`].
//!
//! Each time applies have freed a segment's worth of replaced strings
//! (overwrites, eager compaction), the apply compacts the region's sparse
//! segments, so the region stays dense without waiting for memory
//! pressure; handles survive compaction, so readers need no re-seek.
//!
//! # Readers
//!
//! [`MemtableReader`] holds no lock between `next()` calls. It remembers
//! the last entry it emitted and a cursor; an apply bumps the memtable's
//! version, and a reader whose version is stale re-seeks from its last
//! position. Compaction and reclaim by other regions move objects but not
//! handles, so they need no re-seek. [`Memtable::make_reader_opt`] returns
//! `None`, without allocating, when nothing is in the range.
//!
//! # Flushing
//!
//! [`Memtable::seal`] refuses further writes and grounds the region;
//! [`Memtable::make_flush_reader`] streams everything and reports the
//! region bytes it emitted (for dirty-memory's `Flush::account_written`);
//! [`Memtable::mark_flushed`] hands open readers over to a
//! [`ReplacementSource`] at their next partition;
//! [`Memtable::detach_from_region_group`] takes the region out of the
//! group.
//!
//! [`Memtable::hand_over`] gives a sealed memtable's data to another region
//! of the pool (the row cache's) without copying it: it frees the index,
//! and hands the region (to be merged, [`logalloc::Region::merge`]) and
//! the list of every partition's entry strings ([`handover`]) to the
//! receiver, which reads them where they lie and frees them when it drops
//! them. It runs only when no reader of the memtable is open (readers are
//! counted as they are made, under the memtable's lock, and as they let go:
//! one atomic increment and decrement per reader, nothing per row).
//!
//! # For the `replica` crate
//!
//! The replica composes memtables with dirty-memory and sstables; this is
//! the whole surface it needs:
//!
//! ```text
//! Memtable::new(&group, &pool) -> Result<Arc<Memtable>, Error>   // group = the dirty manager's
//! memtable.region_id() -> RegionId                               // the group's name for it
//! memtable.apply(&Mutation) -> Result<(), Error>                 // inside the group's admission
//! memtable.make_reader_opt(range, slice) -> Result<Option<MemtableReader>, Error>
//! memtable.seal()                                                // when picked for flush
//! memtable.make_flush_reader(|bytes| ...) -> MemtableReader      // or poll progress_bytes()
//! memtable.mark_flushed(Arc<dyn ReplacementSource>)              // the new sstable's source
//! memtable.detach_from_region_group()
//! memtable.stats() -> MemtableStats
//! ```
//!
//! `replica` (its `database::table` and `database::flush` modules) is the
//! composition that uses exactly this surface: writes under the group's
//! admission, the seal after a fresh memtable is installed, the flush
//! stream into an sstable writer, `mark_flushed` with the sstable, then
//! `detach_from_region_group`.
#![forbid(unsafe_code)]

mod codec;
mod error;
pub mod handover;
mod key;
#[cfg(all(test, loom))]
mod loom_tests;
mod memtable;
mod reader;
mod sync;
mod tree;

pub use crate::error::Error;
pub use crate::memtable::{Memtable, MemtableStats, ReplacementSource};
pub use crate::reader::MemtableReader;
/// The allocator a memtable's region lives in ([`Memtable::new`] takes its
/// [`SegmentPool`](logalloc::SegmentPool)). Re-exported, as are the two
/// crates below, so that one dependency line is enough.
pub use logalloc;
/// The data model a memtable takes and returns: mutations, keys, ranges and
/// fragment streams.
pub use mutation;
/// The region group a memtable reports its memory to ([`Memtable::new`]).
pub use region_group;
