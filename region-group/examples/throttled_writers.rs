//! Writers throttled at a hard limit, let in again as a "flush" frees
//! memory.
//!
//! Three writer threads append 1 KiB records to the active "memtable", a
//! logalloc region that reports its footprint to a [`RegionGroup`]. Each
//! write goes through [`RegionGroup::run_when_memory_available`], so a
//! writer waits (in FIFO order) while the group is above its hard limit.
//! Crossing the soft limit calls `start_reclaiming`, which wakes a flusher
//! thread: it swaps in a fresh memtable, "writes the old one out" in
//! chunks, declaring each chunk spooled (the group's unspooled usage
//! falls as it goes, which is what lets waiting writers in before the
//! flush ends), then drops the region, which gives its memory back.
//!
//! Run with `cargo run --example throttled_writers -p replmem-region-group`.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use logalloc::{PoolConfig, SegmentPool};
use region_group::{ReclaimConfig, RegionGroup, SizeTrackedRegion};

const WRITERS: usize = 3;
const RECORDS_PER_WRITER: usize = 400;
const RECORD: usize = 1024;
const HARD_LIMIT: usize = 256 << 10;
const SOFT_LIMIT: usize = 128 << 10;
/// How much of a sealed memtable one step of the flush writes out.
const FLUSH_CHUNK: usize = 32 << 10;

/// What the flusher thread is asked to do.
enum Request {
    /// Usage crossed the soft limit: flush the active memtable.
    Flush,
    /// The writers are done.
    Stop,
}

/// Locks a mutex; nothing here leaves its value half-changed on a panic.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(16 << 10)
            .with_memory_limit(16 << 20),
    )?;
    let (tx, rx) = mpsc::channel::<Request>();
    let signal = Mutex::new(tx.clone());
    let group = RegionGroup::new(
        "memtables",
        ReclaimConfig {
            unspooled_hard_limit: HARD_LIMIT,
            unspooled_soft_limit: SOFT_LIMIT,
            // Runs on whichever thread crossed the limit, possibly inside a
            // region operation: it only signals the flusher.
            start_reclaiming: Some(Arc::new(move || {
                let _ = lock(&signal).send(Request::Flush);
            })),
            ..Default::default()
        },
    );
    let active = Arc::new(Mutex::new(SizeTrackedRegion::new(&group, &pool)));

    // The flusher: one flush per request, and again while the group is
    // still above the soft limit (writers may have filled the fresh
    // memtable past it during the flush, which is no new crossing).
    let flusher = {
        let (group, pool, active) = (group.clone(), pool.clone(), active.clone());
        thread::spawn(move || -> Result<usize, region_group::Error> {
            let mut flushes = 0;
            for request in rx {
                if let Request::Stop = request {
                    break;
                }
                loop {
                    // Seal: writers go on into a fresh memtable at once.
                    let sealed = std::mem::replace(
                        &mut *lock(&active),
                        SizeTrackedRegion::new(&group, &pool),
                    );
                    sealed.ground_evictable_occupancy();
                    let size = sealed.stats().footprint_bytes();
                    let mut written = 0;
                    while written < size {
                        let step = FLUSH_CHUNK.min(size - written);
                        // "Write" the chunk out (a pretend disk of 32 MiB/s),
                        // then declare it spooled.
                        thread::sleep(Duration::from_millis(1));
                        group.account_region_spooled(sealed.id(), step)?;
                        written += step;
                    }
                    // The flush is done: the region's memory goes back.
                    drop(sealed);
                    flushes += 1;
                    if group.unspooled_usage() <= SOFT_LIMIT {
                        break;
                    }
                }
            }
            Ok(flushes)
        })
    };

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (group, active) = (group.clone(), active.clone());
            thread::spawn(
                move || -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
                    for i in 0..RECORDS_PER_WRITER {
                        let record = vec![(w * 31 + i) as u8; RECORD];
                        // Waits while the group is above its hard limit.
                        group.run_when_memory_available(
                            || lock(&active).alloc_bytes(&record).map(|_| ()),
                            None,
                        )??;
                    }
                    Ok(())
                },
            )
        })
        .collect();
    for writer in writers {
        writer
            .join()
            .map_err(|_| "a writer panicked")?
            .map_err(|e| e.to_string())?;
    }
    tx.send(Request::Stop)?;
    let flushes = flusher.join().map_err(|_| "the flusher panicked")??;

    let metrics = group.metrics();
    let written = WRITERS * RECORDS_PER_WRITER * RECORD;
    println!(
        "{WRITERS} writers wrote {} KiB through a group with a {} KiB hard limit",
        written >> 10,
        HARD_LIMIT >> 10
    );
    println!(
        "{flushes} flushes; {} writes had to wait ({:?} in all); peak unspooled usage {} KiB",
        metrics.blocked_requests_total,
        metrics.blocked_time_total,
        metrics.peak_unspooled_usage >> 10
    );
    println!(
        "now: {} KiB in the active memtable, {} region(s) in the group",
        metrics.real_usage >> 10,
        metrics.regions
    );

    // What the example shows, checked:
    assert!(flushes >= 1, "crossing the soft limit started flushes");
    assert!(
        metrics.peak_unspooled_usage < written,
        "the group never held everything that was written"
    );
    assert_eq!(metrics.queued_requests, 0, "every writer got through");
    assert_eq!(metrics.regions, 1, "flushed memtables left the group");
    Ok(())
}
