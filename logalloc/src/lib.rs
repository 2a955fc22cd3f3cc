//! A log-structured allocator in the style of ScyllaDB's LSA and RAMCloud's
//! log-structured memory: the memory layer under the memtables.
//!
//! Objects (byte strings with an alignment) are appended into fixed-size
//! segments owned by a [`Region`]; freeing leaves holes; compaction moves
//! the live objects out of the sparsest segments so whole segments go back
//! to the [`SegmentPool`]. Memory use stays close to live data however
//! object sizes change, and it is known exactly ([`RegionStats`]).
//!
//! ```
//! use logalloc::{PoolConfig, Region, SegmentPool};
//!
//! let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(64 << 20))?;
//! let mut region = Region::new(&pool);
//! let greeting = region.alloc_bytes(b"hello")?;
//! let doomed = region.alloc_bytes(&[0u8; 1000])?;
//! region.free(doomed)?;
//! region.full_compaction()?; // moves every live object
//! assert_eq!(&*region.get(greeting)?, b"hello"); // the handle still works
//! assert!(region.get(doomed).is_err()); // a freed handle is detected
//!
//! let mut other = Region::new(&pool);
//! let moved = other.alloc_bytes(b"merged")?;
//! region.merge(other)?; // moves segments, copies no object
//! assert_eq!(&*region.get(moved)?, b"merged");
//! assert_eq!(region.stats().objects, 2);
//! # Ok::<(), logalloc::Error>(())
//! ```
//!
//! # Design
//!
//! **Segments.** The pool takes memory from the system allocator in bulk
//! (`bulk_segments` segments per `alloc_zeroed`, aligned to the segment
//! size) up to its memory limit, and names segments by index. Released
//! segments return to the pool's free list. The last `emergency_reserve`
//! segments are only handed out as compaction destinations, so compaction,
//! which always frees more than it takes, can run when the pool is dry.
//!
//! **Handles.** [`Handle`]s are 8 bytes: a 31-bit slot number, a
//! generation and the low bits of a table-part epoch. Each region has a
//! handle table of 8-byte entries packing segment index, offset, size,
//! alignment class and generation. Segments
//! hold only object bytes; each segment keeps a list of the slots of the
//! objects appended to it (4 bytes each), which is how compaction finds the
//! live objects without walking the segment, and lets it prefetch their
//! table entries. So an object of `n` bytes costs `n` bytes of segment (plus
//! alignment padding), 8 bytes of table and 4 bytes of slot list.
//! That packing fits pools up to 8 GiB of 128 KiB segments (2^16 segments,
//! 12 generation bits). A larger pool (up to 2^30 segments, 128 TiB, with
//! 128 KiB segments) keeps the entry one word by moving the size out of it:
//! each object is preceded by a 2-byte header holding its size (4 bytes
//! when segments exceed 512 KiB, as objects may then exceed 64 KiB), which
//! `get` reads next to the object and `free` and compaction read too; its
//! entries keep 16 generation bits. Smaller pools have no headers.
//! The table is split in parts of 65,536 entries, each with a pool-unique
//! tag that forms the top of the slot number. Merge adopts the other
//! region's parts whole, so its handles keep resolving with no entry
//! rewritten and no object copied; a handle whose tag is not among a
//! region's parts is reported as foreign; a freed slot bumps its generation
//! so a stale handle is reported as stale. Tags are recycled and every pool
//! numbers its own, so each part also has an epoch (stored once per part,
//! drawn from a per-pool counter with a per-pool seed) whose low bits every
//! handle carries: a handle from a dropped region whose tag was recycled,
//! or from another pool, is reported as foreign too (see [`Handle`] for the
//! residual chances).
//!
//! **Compaction.** Closed segments sit in a 64-bucket histogram by free
//! space, so one of the sparsest is found in O(1). Only segments with at
//! least 15% free (configurable) are compacted by [`Region::compact`] and by
//! ordinary reclaim, and only while the closed segments hold a segment's
//! worth of free space; live objects are re-appended to the region's active
//! segment and their table entries updated. Every
//! compaction or eviction bumps the region's
//! [`reclaim_counter`](Region::reclaim_counter).
//!
//! **Reclaim.** When an allocation finds no segment (beyond the reserve),
//! it compacts the sparsest compactible region, this one or any other that
//! is not borrowed at that moment, then asks evictable regions'
//! callbacks to free objects. If none of that frees anything, it falls back
//! to *forced compaction*: the sparsest closed segment of this region (else
//! of another unborrowed one) is compacted however little of it is free,
//! because the 15% rule is about efficiency, not correctness. With a pool
//! at live/0.9, random deletes right after the first fill leave every
//! segment about 10% free, so without this fallback the allocation would
//! fail although the pool holds many segments' worth of free space. A
//! forced compaction runs only when it cannot make things worse: the
//! closed segments hold at least two segments of free space (one to win,
//! one of slack for the segment tails and padding that moving objects
//! wastes), and moving the segment's objects, placed exactly as compaction
//! will place them, opens at most one fresh destination segment, which
//! the pool (reserve included) still has. The emptied segment goes back,
//! so the segments the pool can hand out never drop, and the reserve is
//! there again for the next step. A step that opens a destination must
//! leave more room in the active segment than there was, or it is refused
//! before anything moves. Steps repeat with the destination kept open, so
//! the room they leave adds up, until the object fits or a step gave a
//! segment back. Such steps are counted in
//! [`RegionStats::forced_compactions`]. The allocation fails with
//! [`Error::OutOfMemory`] when forced compaction cannot run either, or when
//! three rounds of it in a row left no more free segments and room than
//! before. The first case is a pool with fewer than about 40 segments
//! filled to live/0.9 (under two segments of free space beyond the
//! reserve). The second is a pool whose free space is all in tails no
//! object fits in, such as objects of one size that does not divide the
//! segment size. Either is refused rather than compacted over and over to
//! win back a few bytes. A failed allocation stores nothing; compaction
//! never loses an object.
//!
//! **Why `get` returns a guard.** Another region's reclaim may compact this
//! region from another thread, which moves objects. A plain `&[u8]` tied
//! to `&self` would not stop that, because the reclaiming thread does not
//! go through this `Region` value. So a region's state sits behind a
//! reader-writer lock: `&mut self` methods take it exclusively (only
//! waiting, briefly, for a reclaimer that got there first), [`Region::get`]
//! takes it shared and returns an [`ObjectRef`] guard that keeps it shared
//! until dropped, and reclaim only ever calls `try_write`, skipping any
//! region that is borrowed or busy. Several guards can be alive at once
//! (shared mode), no reclaimer ever waits for a region, and no reference
//! can outlive a move: compaction needs the lock exclusively. The lock
//! costs one uncontended atomic operation per access; the ScyllaDB
//! alternative (a reclaim lock the caller must remember to take) moves that
//! proof onto every caller.
//!
//! **Listener.** A region reports its segment footprint to an optional
//! [`RegionListener`] (segment taken, segment released, added, removed,
//! merged), from whichever thread changes it, with the region locked.
//!
//! **Large objects.** Objects above 10% of a segment are refused
//! ([`Error::ObjectTooLarge`]); callers chunk large values (a
//! [`ManagedBytes`] string does it for them) or configure a larger segment
//! size.
//!
//! **Batches.** [`Region::reader`] takes the lock in shared mode once for
//! many `get`s ([`RegionReader`]); [`Region::writer`] takes it exclusively
//! once for many allocations, frees and in-place writes ([`RegionWriter`]),
//! and [`Region::alloc_with`] writes a new object in place. The `get`
//! bench compares both forms of `get` with a plain slice index.
//!
//! **Cost.** With a pool limited to live/0.8, greedy compaction under
//! uniformly random frees moves about 1.3 bytes per byte allocated, at
//! live/0.9 about 3.5 (much of it forced compaction in the transient after
//! the first fill); see `BENCHMARKS.md` for the RAMCloud workloads against
//! glibc.
//!
//! **Testing aids.** [`Region::check_invariants`] and
//! [`SegmentPool::check_invariants`] recount everything;
//! `SegmentPool::fail_nth_allocation`, with the `testing` feature, makes a
//! chosen allocation fail.
//!
//! **Unsafe code** lives in `segment.rs` (raw aligned allocation, byte
//! access and compaction's copy between two segments through `unsafe fn`s
//! with `# Safety` contracts, and a prefetch hint) and its call sites in the
//! `region/` modules, each with a `// SAFETY:` argument resting on two facts:
//! a live table entry points into a segment the region owns, inside its
//! bounds (only allocation and compaction write entries, both checking the
//! segment's end, and a segment goes back to the pool only once no live
//! entry points into it), and the region lock is held for as long as any
//! reference into a segment exists (every such reference borrows a lock
//! guard or an [`Evictor`], so the borrow checker enforces it).

mod config;
mod error;
mod histogram;
mod listener;
#[cfg(all(test, loom))]
mod loom_tests;
mod managed;
mod pool;
mod region;
mod segment;
mod stats;
mod sync;
mod table;

pub use config::{MAX_ALIGN, MAX_SEGMENT_SIZE, MIN_SEGMENT_SIZE, PoolConfig};
pub use error::{Error, OomReason};
pub use listener::{RegionId, RegionListener};
pub use managed::{ManagedBytes, ManagedRef};
pub use pool::SegmentPool;
pub use region::{Eviction, Evictor, ObjectMut, ObjectRef, Region, RegionReader, RegionWriter};
pub use stats::{PoolStats, RegionStats};
pub use table::Handle;

// The README's example runs as a doc test, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
