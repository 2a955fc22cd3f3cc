//! Regions used from several threads at once, sharing a small pool: each
//! thread's allocations reclaim from the others' regions (which may be busy
//! or borrowed at that moment), and nothing is ever lost or corrupted.

use std::sync::Arc;
use std::thread;

use logalloc::{Error, PoolConfig, Region, SegmentPool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[test]
fn threads_reclaim_from_each_other_without_losing_data() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4096)
            .with_memory_limit(48 * 4096)
            .with_emergency_reserve(2),
    )
    .unwrap();
    let workers: Vec<_> = (0..3u64)
        .map(|t| {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(t);
                let mut region = Region::new(&pool);
                let mut live = Vec::new();
                let mut failures = 0;
                for i in 0..6000u32 {
                    if live.len() > 200 || (rng.gen_bool(0.4) && !live.is_empty()) {
                        let (h, _) = live.swap_remove(rng.gen_range(0..live.len()));
                        region.free(h).unwrap();
                    }
                    let size = rng.gen_range(1..=400);
                    let fill = (i as u8) ^ (t as u8);
                    match region.alloc_bytes(&vec![fill; size]) {
                        Ok(h) => live.push((h, vec![fill; size])),
                        Err(Error::OutOfMemory { .. }) => failures += 1,
                        Err(e) => panic!("{e}"),
                    }
                    if i % 64 == 0 {
                        // Hold a borrow for a moment: others must skip us.
                        if let Some((h, bytes)) = live.first() {
                            let guard = region.get(*h).unwrap();
                            thread::yield_now();
                            assert_eq!(&*guard, &bytes[..]);
                        }
                    }
                }
                for (h, bytes) in &live {
                    assert_eq!(&*region.get(*h).unwrap(), &bytes[..]);
                }
                region.check_invariants().unwrap();
                (region, failures)
            })
        })
        .collect();
    let results: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let stats = pool.stats();
    assert!(stats.segments_in_use <= 48);
    pool.check_invariants().unwrap();
    let compacted: u64 = results
        .iter()
        .map(|(r, _)| r.stats().segments_compacted)
        .sum();
    assert_eq!(compacted, stats.segments_compacted);
    assert!(compacted > 0, "the pool was small enough to need reclaim");
    drop(results);
    assert_eq!(pool.stats().segments_in_use, 0);
}
