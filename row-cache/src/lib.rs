//! `row-cache`: partitions cached in a logalloc region beside the
//! memtables, in front of the replica's sstables. A read that misses goes
//! to the underlying source and fills the cache; a flushed memtable's data
//! enters it once its sstable is committed; when the pool runs dry
//! (a memtable allocation, a region group's reclaim), logalloc calls the
//! cache's eviction hook and the cache gives back its least recently used
//! partitions. The cache knows which key ranges it holds completely, so a
//! miss inside one is an authoritative "absent": [`RowCache::make_reader_opt`]
//! returns `None` there without allocating or touching the source.
//!
//! ```
//! use std::sync::Arc;
//! use row_cache::logalloc::{PoolConfig, SegmentPool};
//! use row_cache::mutation::{
//!     Cell, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange, Timestamp,
//!     from_mutations, to_mutations,
//! };
//! use row_cache::{CacheConfig, RowCache, UnderlyingSource};
//!
//! /// A source of fixed data (the replica's is its sstables).
//! struct Fixed(Vec<Mutation>);
//! impl UnderlyingSource for Fixed {
//!     fn make_reader(
//!         &self,
//!         range: PartitionRange,
//!         _slice: ClusteringRange,
//!     ) -> Result<Box<dyn FragmentReader + Send>, row_cache::mutation::Error> {
//!         let m = self.0.iter().filter(|m| range.contains(m.key())).cloned();
//!         Ok(Box::new(from_mutations(m.collect::<Vec<_>>())))
//!     }
//! }
//!
//! let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(16 << 20))?;
//! let key = DecoratedKey::from_bytes("user:1")?;
//! let m = Mutation::builder(key.clone())
//!     .cell("row", 0, Cell::live("v", Timestamp::from_micros(1)))
//!     .build()?;
//! let cache = RowCache::new(&pool, Arc::new(Fixed(vec![m.clone()])), CacheConfig::default())?;
//!
//! // The first read misses and populates; the second is a hit.
//! let one = PartitionRange::single_key(key.clone());
//! for _ in 0..2 {
//!     let mut r = cache.make_reader(one.clone(), ClusteringRange::full());
//!     assert_eq!(to_mutations(&mut r)?, vec![m.clone()]);
//! }
//! assert_eq!((cache.stats().misses, cache.stats().hits), (1, 1));
//!
//! // A full scan makes the whole ring continuous: a key that is not there
//! // is then answered without a reader.
//! let mut scan = cache.make_reader(PartitionRange::full(), ClusteringRange::full());
//! assert_eq!(to_mutations(&mut scan)?.len(), 1);
//! let absent = PartitionRange::single_key(DecoratedKey::from_bytes("user:2")?);
//! assert!(cache.make_reader_opt(absent, ClusteringRange::full()).is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Storage
//!
//! Each cached partition is stored as *pieces*, each an encoded
//! [`Mutation`](mutation::Mutation) (`Mutation::encode`) in the cache's
//! region: the first holds the partition's header (tombstone, static row,
//! range tombstones) and its first rows, each further piece the next rows,
//! about [`CacheConfig::piece_bytes`] of them (a small partition is one
//! piece). A read copies the first piece and only the pieces its slice
//! meets out of the region, once, into one shared buffer, and decodes it
//! without copying again (`Mutation::decode_shared`: the keys and values
//! are slices of that buffer); the fragments stream from the decoded
//! partition, with no queue built ahead unless range tombstones must be
//! clipped to the slice. An entry caches the rows of one
//! clustering range completely (its *covered* slice: the whole partition
//! for a read without a slice or an update at flush, the read's slice
//! otherwise); a read whose slice the entry covers is a hit, another one
//! re-reads the partition over the hull of the two ranges.
//! The index (a `BTreeMap` by ring position per cache, one LRU list in a
//! slab, each cache's continuity set) is on the heap, one small entry per
//! partition; it takes one lock, which is a *leaf*: nothing else is locked
//! while it is held, which is what lets the eviction callback (running
//! with the region locked) wait for it.
//!
//! # One tracker for every table's cache
//!
//! A [`CacheTracker`] is what ScyllaDB's per-shard `cache_tracker` is: one
//! region for the partitions of every cache in it, one LRU list over all
//! of them, one index lock, and one budget ([`CacheTracker::new`]'s
//! `max_bytes`) that bounds their sum. Each table's [`RowCache`] is made in
//! the database's tracker ([`RowCache::with_tracker`]) and keeps its own
//! key map, continuity, population phase, source and counters; eviction,
//! by the budget or by logalloc's reclaim, takes the least recently used
//! partition of whichever cache holds it, so a cold table gives memory to
//! a hot one, and N tables never hold N budgets. [`RowCache::new`] makes
//! a cache with a tracker of its own.
//!
//! **Continuity** is a set of closed intervals of ring points (before or
//! after a token, just before, at or just after a key, the ring's ends).
//! Every partition of the source inside an interval has an entry. A cache
//! created over an empty source ([`CacheConfig::continuous`], a new table)
//! starts with the whole ring continuous, so nothing is ever read from the
//! source until data arrives by updates at flush. A scan
//! that read a stretch from the source marks it continuous partition by
//! partition; a single-partition read marks the key's neighbourhood; an
//! eviction or invalidation cuts the interval around the key.
//!
//! # Population and the phase rule
//!
//! A read that opens the underlying source records the cache's *phase*;
//! every [`RowCache::update_from`] (and every invalidation) advances it
//! before touching any partition. A population whose phase is no longer
//! current is refused: its read may predate the sstable the update is
//! bringing in, and inserting it after the update would hide that data for
//! good (ScyllaDB's population-phase race). A population that lost the race
//! costs only the copy; the update brings the new data itself.
//!
//! # Update at flush: merged, or copied
//!
//! [`RowCache::update_by_merge`] is ScyllaDB's `row_cache::update`: the
//! flushed memtable hands its region over (`memtable::Memtable::hand_over`,
//! which frees the memtable's index first), the cache's region absorbs it
//! ([`logalloc::Region::merge`]: segments change owner, no object moves),
//! and each flushed partition is *adopted* where it lies when the cache
//! does not hold it and its key is in a continuous range: its entry
//! strings, in the memtable's layout (`memtable::handover`), become the
//! cache entry, read in place on a hit and freed object by object on
//! eviction; nothing is written to the region. A partition the cache holds
//! is reconciled with the cached entry (read where it lies, merged, the
//! merged entry written as `update_from` writes it; the flushed objects
//! freed); a partition outside a continuous range is freed. It falls back
//! to nothing (`Ok(None)`) while a reader of the memtable is open, and the
//! caller then copies with [`RowCache::update_from`], which reads the
//! memtable's stream partition by partition and encodes each one into the
//! cache's region (merged with the cached entry where there is one). The
//! `row_cache` bench measures the copy against the flush's own cost on the
//! same batch (`update_from` against `flush_sstable`, which writes and
//! commits it as an sstable, and against `flush_encode`, the encoding
//! alone).
//!
//! **The index of an adopted partition** stays on the heap, as every
//! entry's does: its key, 16 bytes per row and 8 per chunk of a chunked
//! string (`HandedPartition::heap_bytes`), counted in the entry's length,
//! so the tracker's budget bounds it with the region bytes.
//!
//! **Dirty memory (ScyllaDB #1942).** While `update_from` runs, the
//! memtable's memory must stay held against the dirty-memory limit: the
//! replica takes the memtable out of the dirty-memory group with its bytes
//! pinned in the group's real usage (`region_group::RegionGroup::pin_on_leave`)
//! and releases the pin in proportion to the partitions `update_from` has
//! passed, as ScyllaDB unpins each partition it moves. The copy allocates
//! in the cache's region, which evicts older cache entries when the pool is
//! dry; a partition that cannot be stored is invalidated, never
//! half-stored. So a cache update that falls behind the flushes holds the
//! flush (and, through the real limit, the writers) instead of letting
//! memory overflow, and lets writers in as it goes rather than at its end.
//! (The memtable's own bytes are freed only when it is dropped after the
//! update: what was released early is memory the pool's headroom and the
//! cache's eviction cover.)
//!
//! # Compaction's purge
//!
//! The cache is a copy of what its source returned. Compaction changes the
//! sstables under it without a flush, and everything it does but one is
//! invisible to reads: merging sstables reconciles data that reconciles
//! the same in the cache. The exception is the purge: a tombstone past
//! `gc_grace` (or an expired cell) that nothing outside the job can need
//! is dropped from the sstables, but a cached copy of its partition still
//! holds it. Its shadowed data is gone in both, so no live cell differs
//! at that moment; but the two answer differently from then on: the
//! cache returns the tombstone where the sstables return nothing, and a
//! late write older than the tombstone, flushed after the purge, is
//! hidden by the cached tombstone (the flush merges it into the cached
//! entry) and live in the sstables, then live in the cache too once the
//! entry is evicted: an answer that depends on the cache's state. So the
//! cache must learn of the purge: the owner calls
//! [`RowCache::invalidate_keys`] with every key the job purged in (or
//! [`RowCache::invalidate`] with their span), *after* the job's outputs
//! replace its inputs in the source. The phase rule makes that enough:
//! the invalidation advances the phase, so a population that read the
//! inputs before the swap (and so still carries the tombstone) is refused,
//! and one that reads after the invalidation reads the outputs. Between
//! the swap and the invalidation the cache answers as if the purge had not
//! happened yet, which is an answer the database could have given a
//! moment earlier. The replica records the keys its jobs ask the purge
//! oracle about (every key a job may purge in) and invalidates them when
//! the manager reports the job's replacement.
//!
//! # Eviction
//!
//! The region is evictable ([`logalloc::Region::set_eviction_fn`]): when
//! an allocation anywhere in the pool finds no segment and compaction is
//! not enough, logalloc calls the tracker, which evicts from the least
//! recently used partition of any of its caches: the last piece of a wide one (the entry then
//! covers only the rows before that piece, so a read of those rows goes to
//! the source), the whole entry otherwise, and frees the objects. An optional budget
//! (the tracker's) evicts beyond a size of its own. A reader
//! copies an entry's handles under the index lock and reads the objects
//! afterwards; if the entry was evicted in between, the handles are stale
//! (logalloc detects that) and the reader reads the partition from the
//! underlying source instead.
//!
//! # For the `replica` crate
//!
//! ```text
//! // One tracker per database, in the database's pool (the memtables'
//! // pool), not in the dirty-memory region group; one cache per table in it.
//! let tracker = CacheTracker::new(&pool, Some(pool_limit - dirty_budget))?; // the share
//! impl UnderlyingSource for TableSstables { .. }   // a MergingReader over make_reader_opt
//!                                                 // of the table's current sstable set
//! let cache = RowCache::with_tracker(&tracker, Arc::new(sstables), CacheConfig::default()
//!     .with_continuous(no_sstables_yet));          // a new table: nothing to miss
//! tracker.listen(cache_group_listener);            // optional: count it in a "cache" group
//!
//! // Reads: every memtable's make_reader_opt, plus the cache's (instead of
//! // the sstables'), merged.
//! cache.make_reader_opt(range, slice)
//!
//! // Flush, after the sstable is written and committed:
//! //  1. add the sstable to the set the cache's source reads (the memtable
//! //     stays in the read list: reads see its rows twice, and reconcile);
//! //  2. cache.update_from(&mut memtable.make_reader(full, full)?)?;
//! //  3. remove the memtable from the list, mark_flushed, and only then
//! //     detach_from_region_group (dirty memory stays accounted until
//! //     the cache holds the data).
//! // An update error leaves the cache consistent (what it missed is
//! // invalidated); the flush itself has succeeded.
//!
//! // Compaction, after a job's outputs replaced its inputs:
//! cache.invalidate_keys(&keys_the_job_may_have_purged_in)
//!
//! cache.clear()                 // truncate / drop of the table's data
//! cache.stats()                 // hits, misses, populations, evictions, bytes, partitions
//! tracker.stats()               // the totals of every table's cache
//! // Close: drop the caches and the tracker (the region goes back to the pool).
//! ```

#![forbid(unsafe_code)]

mod cache;
mod error;
mod index;
#[cfg(all(test, loom))]
mod loom_tests;
mod point;
mod reader;
mod slice;
mod source;
mod stats;
mod stored;
mod sync;

pub use crate::cache::{CacheConfig, CacheTracker, DEFAULT_PIECE_BYTES, RowCache};
pub use crate::error::Error;
pub use crate::reader::CacheReader;
pub use crate::source::UnderlyingSource;
pub use crate::stats::{CacheStats, TrackerStats, UpdateStats};
/// The allocator the cache's region lives in ([`RowCache::new`] takes its
/// [`SegmentPool`](logalloc::SegmentPool)). Re-exported, as is `mutation`,
/// so that one dependency line is enough.
pub use logalloc;
/// The data model the cache holds and an [`UnderlyingSource`] returns.
pub use mutation;

// The README's example runs as a doc test, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
