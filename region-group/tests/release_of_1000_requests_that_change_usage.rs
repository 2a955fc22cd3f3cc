//! Releasing 1,000 queued requests, each of which allocates and frees memory
//! while it runs (the Scylla #2021 regression), neither crashes, reorders
//! nor loses a request; a request that leaves memory over the limit holds
//! back the rest until memory is freed.
mod common;

use std::sync::{Arc, Mutex};
use std::task::Poll;

use common::{Flag, id, poll_once, wait_until};
use logalloc::{PoolConfig, RegionListener, SegmentPool};
use region_group::{ReclaimConfig, RegionGroup, SizeTrackedRegion};

const REQUESTS: usize = 1000;
const SEGMENT: usize = 128 << 10;

#[test]
fn thousand_blocked_threads_released_in_order() {
    let g = RegionGroup::new(
        "release",
        ReclaimConfig {
            unspooled_hard_limit: 4 * SEGMENT,
            ..Default::default()
        },
    );
    let (hog, writes) = (id(1), id(2));
    g.add(hog, 5 * SEGMENT);
    g.add(writes, 0);
    let order = Arc::new(Mutex::new(Vec::with_capacity(REQUESTS)));
    let threads: Vec<_> = (0..REQUESTS)
        .map(|i| {
            let (g2, order) = (g.clone(), order.clone());
            let t = std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn(move || {
                    g2.run_when_memory_available(
                        || {
                            // Allocate and free during release: the group's
                            // size changes under the releaser's feet.
                            g2.increase_usage(writes, 2 * SEGMENT);
                            order.lock().unwrap().push(i);
                            g2.decrease_usage(writes, 2 * SEGMENT);
                        },
                        None,
                    )
                })
                .unwrap();
            wait_until("the request is queued", || g.queued_requests() == i + 1);
            t
        })
        .collect();
    g.decrease_usage(hog, SEGMENT); // exactly at the limit: release starts
    for t in threads {
        t.join().unwrap().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..REQUESTS).collect::<Vec<_>>());
    let m = g.metrics();
    assert_eq!(
        (m.queued_requests, m.blocked_requests_total, m.real_usage),
        (0, REQUESTS as u64, 4 * SEGMENT)
    );
    assert_eq!(m.peak_real_usage, 6 * SEGMENT);
}

#[test]
fn thousand_queued_futures_released_in_order_and_growth_holds_back_the_rest() {
    let g = RegionGroup::new(
        "release",
        ReclaimConfig {
            unspooled_hard_limit: 4 * SEGMENT,
            ..Default::default()
        },
    );
    let (hog, writes) = (id(1), id(2));
    g.add(hog, 5 * SEGMENT);
    g.add(writes, 0);
    let order = Arc::new(Mutex::new(Vec::new()));
    let flags: Vec<Arc<Flag>> = (0..REQUESTS).map(|_| Arc::new(Flag::default())).collect();
    let mut futures: Vec<_> = (0..REQUESTS)
        .map(|i| {
            let (g2, order) = (g.clone(), order.clone());
            g.run_when_memory_available_async(
                move || {
                    g2.increase_usage(writes, SEGMENT);
                    order.lock().unwrap().push(i);
                    // Every 100th request keeps its segment: memory is over
                    // the limit again and the rest must wait.
                    if i % 100 != 99 {
                        g2.decrease_usage(writes, SEGMENT);
                    }
                },
                None,
            )
        })
        .collect();
    for (fut, flag) in futures.iter_mut().zip(&flags) {
        assert!(poll_once(fut, flag).is_pending());
    }
    let mut done = vec![false; REQUESTS];
    g.decrease_usage(hog, SEGMENT);
    let mut released = 0;
    while released < REQUESTS {
        // A tiny executor: poll every woken future.
        let mut progressed = false;
        for i in 0..REQUESTS {
            if !done[i] && flags[i].take() {
                progressed = true;
                match poll_once(&mut futures[i], &flags[i]) {
                    Poll::Ready(result) => {
                        result.unwrap();
                        done[i] = true;
                        released += 1;
                    }
                    Poll::Pending => {}
                }
            }
        }
        if !progressed {
            // Held back by a request that kept memory: exactly 100 per batch.
            assert_eq!(released % 100, 0, "stalled after {released} requests");
            assert_eq!(g.queued_requests(), REQUESTS - released);
            g.decrease_usage(writes, SEGMENT);
        }
    }
    assert_eq!(*order.lock().unwrap(), (0..REQUESTS).collect::<Vec<_>>());
    assert_eq!(g.queued_requests(), 0);
}

/// The same with real logalloc allocations: each request appends a kept and
/// a freed object (about 6 segments for all 1,000, within the 8-segment limit).
#[test]
fn thousand_queued_futures_allocating_in_a_real_region() {
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(64 * SEGMENT)).unwrap();
    let g = RegionGroup::new(
        "release",
        ReclaimConfig {
            unspooled_hard_limit: 8 * SEGMENT,
            ..Default::default()
        },
    );
    let mut hog = SizeTrackedRegion::new(&g, &pool);
    while hog.stats().total_bytes <= 8 * SEGMENT {
        hog.alloc(4096, 8).unwrap();
    }
    let writes = Arc::new(Mutex::new(SizeTrackedRegion::new(&g, &pool)));
    let order = Arc::new(Mutex::new(Vec::new()));
    let flags: Vec<Arc<Flag>> = (0..REQUESTS).map(|_| Arc::new(Flag::default())).collect();
    let mut futures: Vec<_> = (0..REQUESTS)
        .map(|i| {
            let (writes, order) = (writes.clone(), order.clone());
            g.run_when_memory_available_async(
                move || {
                    let mut region = writes.lock().unwrap();
                    let kept = region.alloc(256, 8).unwrap();
                    let freed = region.alloc(512, 8).unwrap();
                    region.free(freed).unwrap();
                    order.lock().unwrap().push(i);
                    kept
                },
                None,
            )
        })
        .collect();
    for (fut, flag) in futures.iter_mut().zip(&flags) {
        assert!(poll_once(fut, flag).is_pending());
    }
    drop(hog); // a flushed memtable goes away: release starts
    let mut remaining: Vec<usize> = (0..REQUESTS).collect();
    while !remaining.is_empty() {
        let before = remaining.len();
        remaining.retain(|&i| {
            if !flags[i].take() {
                return true;
            }
            match poll_once(&mut futures[i], &flags[i]) {
                Poll::Ready(result) => {
                    result.unwrap();
                    false
                }
                Poll::Pending => true,
            }
        });
        assert!(
            remaining.len() < before,
            "release stalled with {} requests left",
            remaining.len()
        );
    }
    assert_eq!(*order.lock().unwrap(), (0..REQUESTS).collect::<Vec<_>>());
    let region = writes.lock().unwrap();
    assert_eq!(region.stats().objects, REQUESTS);
    assert_eq!(g.real_usage(), region.stats().footprint_bytes());
}
