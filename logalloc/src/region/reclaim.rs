//! Reclaim and eviction: what an allocation does when the pool has no
//! segment for it. It compacts the sparsest compactible region (this one or
//! another unborrowed one), then calls eviction callbacks through an
//! [`Evictor`], and as a last resort runs forced compaction.

use std::fmt;
use std::time::{Duration, Instant};

use super::inner::{RegionInner, placement};
use crate::pool::{Purpose, SegmentPool};
use crate::stats::RegionStats;
use crate::sync::Ordering;
use crate::table::Location;
use crate::{Error, Handle, OomReason, RegionId};

/// Rounds of forced compaction in a row that may leave no more room before
/// an allocation gives up (see `find_room_slow`).
const FORCED_STALLS: u32 = 3;

/// An allocation takes at most this many reclaim steps per segment of the
/// pool, plus [`RECLAIM_EXTRA_STEPS`], before it gives up (see
/// `find_room_slow`): a backstop against a pathological loop, not the
/// expected exit.
const RECLAIM_STEPS_PER_SEGMENT: usize = 2;

/// See [`RECLAIM_STEPS_PER_SEGMENT`].
const RECLAIM_EXTRA_STEPS: usize = 16;

/// How long an allocation that found nothing to reclaim waits for the lock
/// of a busy evictable region (readers copying out of a cache hold it
/// shared; reclaim normally only tries it), per attempt.
const BUSY_REGION_WAIT: Duration = Duration::from_millis(200);

/// Waits of [`BUSY_REGION_WAIT`] that end with the region still busy an
/// allocation makes before it reports out of memory.
const BUSY_REGION_ATTEMPTS: u32 = 10;

/// What a wait for busy evictable regions came to (see
/// `reclaim_from_busy_evictable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Busy {
    /// One of them gave memory back.
    Reclaimed,
    /// Every one was locked and had nothing to give (or there are none).
    Nothing,
    /// One stayed locked through the wait, and none gave anything.
    Locked,
}

/// What a round of forced compaction did (see `forced_reclaim_step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Forced {
    /// Compacted segments of the allocating region.
    Own,
    /// Compacted a segment of another region.
    Other,
    /// Found nothing to compact.
    Nothing,
}

/// What an eviction callback reports to reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// Some objects were freed; reclaim may call again.
    Evicted,
    /// Nothing is left to evict; reclaim will not call again this round.
    Nothing,
}

pub(super) type EvictionFn = Box<dyn FnMut(&mut Evictor<'_>) -> Eviction + Send + Sync>;

/// The access an eviction callback has to its region while reclaim runs.
///
/// The region is locked for the duration of the callback (possibly by
/// another thread's reclaim), so the callback frees objects through this
/// value instead of through the [`Region`](super::Region).
///
/// Bytes read with [`get`](Self::get) borrow the `Evictor`, so they cannot
/// be held across a [`free`](Self::free):
///
/// ```compile_fail
/// # use logalloc::{Eviction, PoolConfig, Region, SegmentPool};
/// # let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
/// let mut region = Region::new(&pool);
/// let h = region.alloc_bytes(b"x").unwrap();
/// region.set_eviction_fn(move |evictor| {
///     let bytes = evictor.get(h).unwrap();
///     evictor.free(h).unwrap(); // error: `evictor` is borrowed by `bytes`
///     assert_eq!(bytes, b"x");
///     Eviction::Evicted
/// });
/// ```
pub struct Evictor<'a> {
    inner: &'a mut RegionInner,
    pool: &'a SegmentPool,
}

impl fmt::Debug for Evictor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Evictor")
            .field("region", &self.inner.id)
            .finish()
    }
}

impl Evictor<'_> {
    /// The region being evicted from.
    pub fn region_id(&self) -> RegionId {
        self.inner.id
    }

    /// Frees an object of the region, as [`Region::free`](super::Region::free) does.
    pub fn free(&mut self, handle: Handle) -> Result<(), Error> {
        self.inner.free(self.pool, handle).map(|_| ())
    }

    /// The bytes of an object of the region, as [`Region::get`](super::Region::get) does.
    pub fn get(&self, handle: Handle) -> Result<&[u8], Error> {
        let at = self.inner.table.lookup(handle)?;
        // SAFETY: the region is exclusively locked for the callback's whole
        // run and `&self` prevents `free` while the slice lives; `at` is a
        // live entry, so its bytes are in a segment this region owns, with
        // `offset + size <= segment size` (only `place` and compaction write
        // entries, and both check the segment's end), its header in front.
        Ok(unsafe { self.pool.memory().object(at) })
    }

    /// The region's current statistics.
    pub fn stats(&self) -> RegionStats {
        self.inner.stats()
    }
}

impl RegionInner {
    /// `find_room` once the active segment is full (or absent).
    #[cold]
    pub(super) fn find_room_slow(
        &mut self,
        pool: &SegmentPool,
        size: u32,
        align: u32,
    ) -> Result<(Location, usize), Error> {
        // Every reclaim step compacts a segment with at least the threshold
        // free, evicts something, or (forced) compacts a segment into room
        // the allocation can use, so a segment normally turns up within a
        // few steps; the bound only stops a pathological loop (a tiny
        // threshold with large objects, or forced steps on segments that are
        // almost full, can waste as much in segment tails as a step wins
        // back).
        let mut steps_left =
            RECLAIM_STEPS_PER_SEGMENT * pool.geometry().max_segments + RECLAIM_EXTRA_STEPS;
        // Set when the pool first turns out dry: from then on the allocation
        // is reclaiming, and the time it takes is counted.
        let mut reclaiming: Option<Instant> = None;
        // Forced steps on this region give no segment back until the active
        // segment's room adds up to a victim's worth, but this loop closes
        // the active segment each time round. So each round of them must
        // leave more room plus free segments than the last; a few rounds in
        // a row that do not mean the objects cannot be packed any tighter.
        let (mut last_potential, mut stalls) = (None, 0);
        let all_steps = steps_left;
        let mut busy_waits = 0;
        let out_of_memory = |reason| Error::OutOfMemory {
            size: size as usize,
            limit: pool.memory_limit(),
            reason,
        };
        let result = loop {
            if let Some(at) = self.place(size, align) {
                break Ok(at);
            }
            self.close_active(pool);
            if let Some(segment) = pool.take(Purpose::Allocation) {
                self.open(segment);
                continue;
            }
            reclaiming.get_or_insert_with(Instant::now);
            steps_left -= 1;
            if steps_left == 0 {
                break Err(out_of_memory(OomReason::StepLimit { steps: all_steps }));
            }
            if self.reclaim_step(pool) {
                (last_potential, stalls) = (None, 0);
                continue;
            }
            // Nothing could be had without waiting. An evictable region
            // whose lock was only busy (readers copying out, or its own
            // allocation) still holds memory to give back: wait for it
            // before forced compaction of this region, which can only pack
            // it tighter (a memtable under write load, with the cache busy
            // storing a flushed partition, stalled that way three rounds in
            // a row and failed the write with the cache full of memory).
            match self.reclaim_from_busy_evictable(pool) {
                Busy::Reclaimed => {
                    (last_potential, stalls) = (None, 0);
                    continue;
                }
                Busy::Locked => {
                    busy_waits += 1;
                    if busy_waits == BUSY_REGION_ATTEMPTS {
                        break Err(out_of_memory(OomReason::BusyEvictable {
                            waits: busy_waits,
                            wait_ms: BUSY_REGION_WAIT.as_millis() as u64,
                        }));
                    }
                    continue;
                }
                Busy::Nothing => {}
            }
            match self.forced_reclaim_step(pool, size, align) {
                Forced::Nothing => break Err(out_of_memory(OomReason::NothingToReclaim)),
                Forced::Other => {}
                Forced::Own => {
                    let potential =
                        pool.available_for_compaction() * self.segment_size + self.active_room();
                    if last_potential.is_some_and(|last| potential <= last) {
                        stalls += 1;
                        if stalls == FORCED_STALLS {
                            break Err(out_of_memory(OomReason::Packed));
                        }
                    } else {
                        stalls = 0;
                    }
                    last_potential = Some(potential);
                }
            }
        };
        if let Some(started) = reclaiming {
            let elapsed = started.elapsed();
            self.reclaim_time += elapsed;
            pool.note_reclaim_time(elapsed);
        }
        result
    }

    /// Whether an object of `size` bytes aligned to `align` fits in the
    /// active segment as it stands.
    fn fits(&self, size: u32, align: u32) -> bool {
        self.active.is_some_and(|active| {
            let (_, end) = placement(self.info(active).end, size, align, self.header);
            end <= self.segment_size as u32
        })
    }

    /// Forced compaction for this region's own allocation of `size` bytes
    /// aligned to `align`: forced steps on this region until the active
    /// segment has room for the object or a step gave a segment back to the
    /// pool. The active segment stays open between steps, so the room each
    /// step leaves adds up (a single step may leave less than the object
    /// needs). Then, if nothing here applies, one forced step on another
    /// unborrowed region (whose active segment also stays open, so repeated
    /// steps there end up giving a segment back). Says which of the two
    /// compacted something, or `Forced::Nothing` if none applies.
    fn forced_reclaim_step(&mut self, pool: &SegmentPool, size: u32, align: u32) -> Forced {
        let mut progressed = false;
        for _ in 0..=self.histogram.len() {
            if self.fits(size, align) {
                break;
            }
            match self.forced_compaction(pool) {
                None => break,
                Some(needed) => {
                    progressed = true;
                    if needed == 0 {
                        break;
                    }
                }
            }
        }
        if progressed {
            return Forced::Own;
        }
        let other = pool.other_regions(self.id).iter().any(|region| {
            region
                .inner
                .try_write()
                .is_some_and(|mut inner| inner.forced_compaction(pool).is_some())
        });
        if other {
            Forced::Other
        } else {
            Forced::Nothing
        }
    }

    /// Waits (at most [`BUSY_REGION_WAIT`] each) for the lock of every other
    /// evictable region in turn, and in the first that gives something back
    /// evicts once and compacts its sparsest segment. Says whether one did,
    /// or whether every region it locked had nothing, or whether a region
    /// it could not lock in time may still hold memory.
    ///
    /// Reclaim otherwise only *tries* other regions' locks, and a cache's
    /// lock is held shared by every reader copying out of it: under a read
    /// load, the memory the cache could give back stayed out of reach and a
    /// memtable's write failed with out of memory. The wait is bounded, so
    /// two allocations each holding a region the other waits for both go
    /// on after it (and report out of memory, as before).
    fn reclaim_from_busy_evictable(&mut self, pool: &SegmentPool) -> Busy {
        let mut busy = false;
        for region in pool.other_regions(self.id).iter() {
            if !region.evictable.load(Ordering::Relaxed) {
                continue;
            }
            let Some(mut inner) = region.inner.try_write_for(BUSY_REGION_WAIT) else {
                busy = true;
                continue;
            };
            // Freed objects give a segment back only once it is compacted,
            // and the lock may be busy again on the next step: evict, then
            // compact the sparsest segment (often the one just emptied),
            // while held.
            let evicted = inner.evict_once(pool);
            let compacted = match inner.compaction_candidate() {
                Some((segment, _)) => inner.compact_segment(pool, segment),
                None => false,
            };
            if evicted || compacted {
                return Busy::Reclaimed;
            }
        }
        if busy { Busy::Locked } else { Busy::Nothing }
    }

    /// Calls the eviction callback once. True if it freed something.
    fn evict_once(&mut self, pool: &SegmentPool) -> bool {
        let Some(mut evict) = self.evictor.take() else {
            return false;
        };
        self.reclaim_counter += 1;
        let (objects, bytes) = (self.table.live(), self.object_bytes);
        let verdict = evict(&mut Evictor { inner: self, pool });
        self.evictor = Some(evict);
        let freed = bytes - self.object_bytes;
        self.bytes_evicted += freed as u64;
        pool.note_eviction(freed);
        verdict == Eviction::Evicted && self.table.live() < objects
    }

    /// One step of reclaim after the pool refused a segment: compact the
    /// sparsest compactible region (this one or any other that is not
    /// borrowed), else evict from an evictable region. False if nothing
    /// could be done.
    fn reclaim_step(&mut self, pool: &SegmentPool) -> bool {
        let others = pool.other_regions(self.id);
        let own = self.compaction_candidate().map(|(_, free)| free);
        let mut candidates: Vec<(usize, usize)> = others
            .iter()
            .enumerate()
            .filter_map(|(i, region)| {
                let mut inner = region.inner.try_write()?;
                inner.compaction_candidate().map(|(_, free)| (free, i))
            })
            .collect();
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        for &(free, i) in &candidates {
            if own.is_some_and(|own| own >= free) {
                break;
            }
            if let Some(mut inner) = others[i].inner.try_write()
                && let Some((segment, _)) = inner.compaction_candidate()
                && inner.compact_segment(pool, segment)
            {
                return true;
            }
        }
        if let Some((segment, _)) = self.compaction_candidate()
            && self.compact_segment(pool, segment)
        {
            return true;
        }
        if self.evict_once(pool) {
            return true;
        }
        others.iter().any(|region| {
            region
                .inner
                .try_write()
                .is_some_and(|mut inner| inner.evict_once(pool))
        })
    }
}
