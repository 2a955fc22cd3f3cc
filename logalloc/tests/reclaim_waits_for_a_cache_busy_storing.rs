//! An allocation whose own region is packed tight, with the pool dry and
//! the only memory to be had in an evictable region that another thread
//! keeps locked exclusively most of the time (the row cache storing a
//! flushed partition), waits for that region and evicts from it, rather
//! than failing with out of memory after forced compaction of its own
//! region could pack it no tighter.
//!
//! The replica's 50-column write load (issue 22's flush-directory
//! experiment) hit this: each memtable write that found the pool dry while
//! the flush's cache update held the cache region tried its lock once,
//! fell through to forced compaction of the memtable (all live data: no
//! gain three rounds in a row) and failed; 124 to 2,325 writes of 400,000
//! failed per run. Before the fix this test failed in four runs of ten
//! ("nothing more could be compacted or evicted").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use logalloc::Region;

mod common;

use common::{SEGMENT, SEGMENTS, full_cache, small_pool};

#[test]
fn a_packed_writer_waits_for_a_cache_busy_storing_and_evicts_from_it() {
    let pool = small_pool();
    // The writer holds a quarter of the pool already, with a small hole in
    // every segment (overwritten cells): forced compaction of it moves
    // objects but cannot give back a segment's worth.
    let mut writer = Region::new(&pool);
    let mut written = Vec::new();
    for i in 0..SEGMENTS / 4 * SEGMENT / 300 {
        let h = writer.alloc_bytes(&[2; 300]).unwrap();
        if i % 13 == 5 {
            writer.free(h).unwrap();
        } else {
            written.push(h);
        }
    }
    let (mut cache, lru) = full_cache(&pool);
    assert!(lru.lock().unwrap().len() > 500, "the cache fills the pool");

    // The cache's owner holds its lock exclusively about 90% of the time,
    // as an update storing partition after partition does.
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(Barrier::new(2));
    let owner = {
        let (stop, started) = (Arc::clone(&stop), Arc::clone(&started));
        std::thread::spawn(move || {
            let mut holds = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let guard = cache.writer();
                if holds == 0 {
                    // The writer starts with the lock held.
                    started.wait();
                }
                let until = Instant::now() + Duration::from_micros(900);
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
                drop(guard);
                holds += 1;
                std::thread::sleep(Duration::from_micros(100));
            }
            (cache, holds)
        })
    };

    started.wait();
    // A writer of live data only (forced compaction of it gains nothing)
    // needs half the pool, all of which has to come from the cache.
    let target = SEGMENTS / 2 * SEGMENT / 300;
    let mut failure = None;
    let before = written.len();
    for _ in 0..target {
        match writer.alloc_bytes(&[2; 300]) {
            Ok(h) => written.push(h),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let (cache, holds) = owner.join().unwrap();
    assert!(holds > 0, "the owner held the lock");
    assert!(
        failure.is_none(),
        "allocation {} of {target} failed while the cache held {} evictable objects: {}",
        written.len() - before,
        lru.lock().unwrap().len(),
        failure.unwrap()
    );
    assert!(cache.stats().bytes_evicted > 0);
    for &h in &written {
        assert_eq!(&*writer.get(h).unwrap(), &[2; 300][..]);
    }
    writer.check_invariants().unwrap();
    pool.check_invariants().unwrap();
}
