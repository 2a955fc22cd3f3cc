//! The segment pool: hands out segments up to the memory limit, keeps the
//! emergency reserve, knows every region so reclaim can reach them.

use std::fmt;
use std::time::Duration;

use slab::Slab;

use crate::config::Geometry;
use crate::region::RegionShared;
use crate::segment::SegmentMemory;
use crate::stats::{PoolStats, RegionStats};
use crate::sync::{Arc, AtomicU64, Mutex, Ordering, PlainArc};
use crate::table::MAX_TAGS;
use crate::{Error, PoolConfig, RegionId};

/// Who is asking for a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// An ordinary allocation: may not dip into the emergency reserve.
    Allocation,
    /// A compaction destination: may use the reserve.
    Compaction,
}

#[derive(Debug)]
struct PoolState {
    /// Segments returned by regions, ready for reuse.
    free: Vec<u32>,
    /// Segments `0..carved` have been handed out at least once.
    carved: u32,
    /// Segments currently owned by regions.
    in_use: usize,
    /// Bytes taken from the system allocator.
    system_bytes: usize,
    regions: Slab<Arc<RegionShared>>,
    free_tags: Vec<u16>,
    next_tag: usize,
    /// The epoch of the next handle-table part (see `take_part`).
    next_epoch: u32,
}

/// Hands out fixed-size segments to regions, up to a memory limit.
///
/// Shared by all regions through an `Arc`; every method takes `&self` and
/// is thread-safe. Segments are aligned to their size and taken from the
/// system allocator `bulk_segments` at a time (never more than the limit);
/// a segment released by a region goes back to the pool's free list, not to
/// the system. The last `emergency_reserve` segments are kept for
/// compaction destinations, so compaction can always make progress.
///
/// ```
/// use logalloc::{PoolConfig, Region, SegmentPool};
/// let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(8 << 20))?;
/// let mut region = Region::new(&pool);
/// region.alloc_bytes(b"hello")?;
/// assert_eq!(pool.stats().segments_in_use, 1);
/// drop(region);
/// assert_eq!(pool.stats().segments_in_use, 0);
/// # Ok::<(), logalloc::Error>(())
/// ```
pub struct SegmentPool {
    geometry: Geometry,
    memory: SegmentMemory,
    state: Mutex<PoolState>,
    next_region: AtomicU64,
    fail_countdown: AtomicU64,
    bytes_compacted: AtomicU64,
    segments_compacted: AtomicU64,
    forced_compactions: AtomicU64,
    bytes_evicted: AtomicU64,
    allocation_failures: AtomicU64,
    reclaim_nanos: AtomicU64,
}

impl fmt::Debug for SegmentPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SegmentPool")
            .field("geometry", &self.geometry)
            .field("stats", &self.stats())
            .finish()
    }
}

impl SegmentPool {
    /// Creates a pool. Takes no memory until the first segment is needed.
    ///
    /// Fails if the configuration is invalid: segment size not a power of
    /// two in 4 KiB..=64 MiB, a limit that does not hold the reserve plus one
    /// segment, or more segments than handles can address with 12
    /// generation bits (2^30 segments, 128 TiB, with 128 KiB segments). A
    /// pool of more than about 8 GiB of 128 KiB segments keeps each object's
    /// size in a 2-byte header in front of it (see the crate documentation).
    pub fn new(config: PoolConfig) -> Result<PlainArc<SegmentPool>, Error> {
        let geometry = Geometry::new(&config)?;
        let memory = SegmentMemory::new(&geometry);
        let system_bytes = if config.prefault {
            memory
                .prefault(config.prefault_bytes.unwrap_or(usize::MAX))
                .ok_or(Error::OutOfMemory {
                    size: geometry.max_segments * geometry.segment_size,
                    limit: geometry.max_segments * geometry.segment_size,
                    reason: crate::error::OomReason::SystemAllocation,
                })?
        } else {
            0
        };
        Ok(PlainArc::new(SegmentPool {
            memory,
            geometry,
            state: Mutex::new(PoolState {
                free: Vec::new(),
                carved: 0,
                in_use: 0,
                system_bytes,
                regions: Slab::new(),
                free_tags: Vec::new(),
                next_tag: 0,
                // Pools of one process seed their epochs a multiple of an
                // odd constant apart (a Weyl sequence), so their first
                // parts' epochs differ in every low-bit window.
                next_epoch: crate::sync::next_pool_serial().wrapping_mul(0x9E37_79B9),
            }),
            next_region: AtomicU64::new(1),
            fail_countdown: AtomicU64::new(0),
            bytes_compacted: AtomicU64::new(0),
            segments_compacted: AtomicU64::new(0),
            forced_compactions: AtomicU64::new(0),
            bytes_evicted: AtomicU64::new(0),
            allocation_failures: AtomicU64::new(0),
            reclaim_nanos: AtomicU64::new(0),
        }))
    }

    /// The segment size in bytes.
    pub fn segment_size(&self) -> usize {
        self.geometry.segment_size
    }

    /// The largest object a region of this pool accepts (10% of a segment).
    pub fn max_object_size(&self) -> usize {
        self.geometry.max_object_size
    }

    /// The memory limit in bytes (whole segments).
    pub fn memory_limit(&self) -> usize {
        self.geometry.memory_limit()
    }

    /// Makes the `n`th allocation from now (counted over all regions of
    /// this pool, `n >= 1`) fail with [`Error::InjectedFailure`], once.
    /// `n == 0` cancels a pending injection. Only allocations with a valid
    /// size and alignment count. For testing callers' all-or-nothing
    /// behaviour: a memtable test can fail the 1st, 2nd, ... allocation of
    /// an apply in turn and check that each failure leaves it unchanged.
    /// Only with the `testing` feature.
    #[cfg(feature = "testing")]
    pub fn fail_nth_allocation(&self, n: u64) {
        self.fail_countdown.store(n, Ordering::Relaxed);
    }

    /// Consumes one step of the failure countdown; true if this allocation
    /// must fail.
    #[inline]
    pub(crate) fn injected_failure(&self) -> bool {
        let mut current = self.fail_countdown.load(Ordering::Relaxed);
        while current != 0 {
            match self.fail_countdown.compare_exchange_weak(
                current,
                current - 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return current == 1,
                Err(actual) => current = actual,
            }
        }
        false
    }

    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub(crate) fn memory(&self) -> &SegmentMemory {
        &self.memory
    }

    pub(crate) fn next_region_id(&self) -> RegionId {
        RegionId::from_raw(self.next_region.fetch_add(1, Ordering::Relaxed))
    }

    /// Takes a segment, or `None` if the pool is at its limit (keeping the
    /// emergency reserve unless `purpose` is compaction) or the system
    /// allocator failed.
    pub(crate) fn take(&self, purpose: Purpose) -> Option<u32> {
        let mut state = self.state.lock();
        let available = self.geometry.max_segments - state.in_use;
        let keep = match purpose {
            Purpose::Allocation => self.geometry.reserve,
            Purpose::Compaction => 0,
        };
        if available <= keep {
            return None;
        }
        let segment = match state.free.pop() {
            Some(segment) => segment,
            None => {
                let segment = state.carved;
                debug_assert!((segment as usize) < self.geometry.max_segments);
                state.system_bytes += self.memory.ensure_chunk(segment)?;
                state.carved += 1;
                segment
            }
        };
        state.in_use += 1;
        Some(segment)
    }

    /// Returns a segment that holds no live object.
    pub(crate) fn release(&self, segment: u32) {
        let mut state = self.state.lock();
        debug_assert!(
            !state.free.contains(&segment),
            "segment {segment} released twice"
        );
        state.free.push(segment);
        state.in_use -= 1;
    }

    /// A fresh handle-table part: a tag unique among the live parts of the
    /// pool (recycled ones first), and the pool's next epoch. The epoch
    /// steps on every call, so a part that reuses a tag gets an epoch the
    /// tag's previous part did not have (in the low bits that handles
    /// carry, until 2^those-bits parts have been created).
    pub(crate) fn take_part(&self) -> Option<(u16, u32)> {
        let mut state = self.state.lock();
        let tag = match state.free_tags.pop() {
            Some(tag) => tag,
            None if state.next_tag == MAX_TAGS => return None,
            None => {
                state.next_tag += 1;
                (state.next_tag - 1) as u16
            }
        };
        let epoch = state.next_epoch;
        state.next_epoch = epoch.wrapping_add(1);
        Some((tag, epoch))
    }

    pub(crate) fn release_tags(&self, tags: impl Iterator<Item = u16>) {
        self.state.lock().free_tags.extend(tags);
    }

    pub(crate) fn register(&self, region: Arc<RegionShared>) -> usize {
        self.state.lock().regions.insert(region)
    }

    pub(crate) fn unregister(&self, key: usize) {
        let region = self.state.lock().regions.remove(key);
        drop(region);
    }

    /// Every registered region but `except`, for reclaim.
    pub(crate) fn other_regions(&self, except: RegionId) -> Vec<Arc<RegionShared>> {
        let state = self.state.lock();
        state
            .regions
            .iter()
            .map(|(_, region)| region)
            .filter(|region| region.id != except)
            .cloned()
            .collect()
    }

    pub(crate) fn note_compaction(&self, bytes: usize, segments: usize) {
        self.bytes_compacted
            .fetch_add(bytes as u64, Ordering::Relaxed);
        self.segments_compacted
            .fetch_add(segments as u64, Ordering::Relaxed);
    }

    pub(crate) fn note_forced_compaction(&self) {
        self.forced_compactions.fetch_add(1, Ordering::Relaxed);
    }

    /// Segments that a compaction could still take (the reserve included).
    /// A snapshot: other threads may take or release segments right after.
    pub(crate) fn available_for_compaction(&self) -> usize {
        self.geometry.max_segments - self.state.lock().in_use
    }

    pub(crate) fn note_eviction(&self, bytes: usize) {
        self.bytes_evicted
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub(crate) fn note_reclaim_time(&self, time: Duration) {
        let nanos = u64::try_from(time.as_nanos()).unwrap_or(u64::MAX);
        self.reclaim_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    pub(crate) fn note_allocation_failure(&self) {
        self.allocation_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// A snapshot of the pool's statistics.
    pub fn stats(&self) -> PoolStats {
        let state = self.state.lock();
        let segment_size = self.geometry.segment_size;
        PoolStats {
            segment_size,
            memory_limit: self.memory_limit(),
            segments_in_use: state.in_use,
            free_segments: self.geometry.max_segments - state.in_use,
            emergency_reserve: self.geometry.reserve,
            system_bytes: state.system_bytes,
            regions: state.regions.len(),
            bytes_compacted: self.bytes_compacted.load(Ordering::Relaxed),
            segments_compacted: self.segments_compacted.load(Ordering::Relaxed),
            forced_compactions: self.forced_compactions.load(Ordering::Relaxed),
            bytes_evicted: self.bytes_evicted.load(Ordering::Relaxed),
            allocation_failures: self.allocation_failures.load(Ordering::Relaxed),
            reclaim_time: Duration::from_nanos(self.reclaim_nanos.load(Ordering::Relaxed)),
        }
    }

    /// The sum of the statistics of every region of the pool: pool-wide
    /// used, free and object bytes, objects, occupancy and handle-table bytes.
    ///
    /// Exact: takes each region's lock in shared mode in turn, waiting for a
    /// region that is busy. So it must not be called from a
    /// [`RegionListener`](crate::RegionListener) or eviction callback, which
    /// run with a region locked.
    pub fn region_totals(&self) -> RegionStats {
        let regions: Vec<_> = {
            let state = self.state.lock();
            state.regions.iter().map(|(_, r)| r.clone()).collect()
        };
        let mut total = RegionStats::default();
        for region in regions {
            total.add(&region.inner.read().stats());
        }
        total
    }

    /// Checks the pool's bookkeeping and every region's against a recount:
    /// each segment is either free or owned by exactly one region, the limit
    /// holds, and every region passes
    /// [`Region::check_invariants`](crate::Region::check_invariants).
    ///
    /// Takes each region's lock in turn (blocking), so call it only while no
    /// other thread holds a region borrowed; meant for tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        let (free, carved, in_use, regions) = {
            let state = self.state.lock();
            let regions: Vec<_> = state.regions.iter().map(|(_, r)| r.clone()).collect();
            (state.free.clone(), state.carved, state.in_use, regions)
        };
        if in_use > self.geometry.max_segments || carved as usize > self.geometry.max_segments {
            return Err(format!(
                "{in_use} segments in use / {carved} carved exceed the limit of {}",
                self.geometry.max_segments
            ));
        }
        let mut owner = vec![false; carved as usize];
        for &segment in &free {
            if std::mem::replace(&mut owner[segment as usize], true) {
                return Err(format!("segment {segment} is on the free list twice"));
            }
        }
        let mut owned = 0;
        for region in regions {
            let inner = region.inner.read();
            inner.check(&self.memory)?;
            for segment in inner.segment_indices() {
                if std::mem::replace(&mut owner[segment as usize], true) {
                    return Err(format!("segment {segment} is free or owned twice"));
                }
                owned += 1;
            }
        }
        if owned != in_use || free.len() + in_use != carved as usize {
            return Err(format!(
                "pool counts {in_use} in use, {} free, {carved} carved; regions own {owned}",
                free.len()
            ));
        }
        Ok(())
    }
}
