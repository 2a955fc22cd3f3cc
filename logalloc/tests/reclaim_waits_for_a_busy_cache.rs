//! An allocation that finds the pool dry waits for an evictable region whose
//! lock is busy with readers, and evicts from it, rather than failing with
//! out of memory while the cache still holds memory it could give back.
//!
//! This is the replica's mixed load: readers copy out of the row cache
//! (each holding the cache region's lock shared while it copies) while a
//! memtable allocates. Reclaim used to only *try* other regions' locks, and
//! with readers always inside the cache that try always failed: the
//! memtable's write got out of memory with the cache full of evictable
//! data (`replica-stress mixed --partitions 20000`: 281 errors in 60 s).
//! Before the fix this test failed on the first allocation past the free
//! segments.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use logalloc::{Handle, Region};

mod common;

use common::{SEGMENT, SEGMENTS, full_cache, small_pool};

#[test]
fn a_writer_evicts_from_a_cache_that_readers_keep_busy() {
    let pool = small_pool();
    let (cache, lru) = full_cache(&pool);
    let cached: Vec<Handle> = lru.lock().unwrap().iter().copied().collect();
    assert!(cached.len() > 500, "the cache fills the pool");
    let cache = Arc::new(cache);

    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(Barrier::new(5));
    let readers: Vec<_> = (0..4)
        .map(|r| {
            let (cache, stop, handles) = (Arc::clone(&cache), Arc::clone(&stop), cached.clone());
            let started = Arc::clone(&started);
            std::thread::spawn(move || {
                let mut reads = 0u64;
                let mut i = r;
                started.wait();
                loop {
                    // Hold the region shared across a few copies, as a
                    // cache reader copying a partition out does.
                    let reader = cache.reader();
                    for _ in 0..64 {
                        i = (i + 7) % handles.len();
                        if let Ok(bytes) = reader.get(handles[i]) {
                            black_box(bytes.iter().map(|&b| u64::from(b)).sum::<u64>());
                        }
                        reads += 1;
                    }
                    drop(reader);
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
                reads
            })
        })
        .collect();

    started.wait();
    // A writer needs half the pool: all of it has to come from the
    // cache, whose lock the readers hold nearly all the time.
    let mut writer = Region::new(&pool);
    let mut written = Vec::new();
    let target = SEGMENTS / 2 * SEGMENT / 300;
    let mut failure = None;
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
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(reads > 0, "the readers ran");
    assert!(
        failure.is_none(),
        "allocation {} of {target} failed while the cache held {} evictable objects: {}",
        written.len(),
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
