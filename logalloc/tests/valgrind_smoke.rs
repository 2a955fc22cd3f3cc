//! A small end-to-end run of the unsafe core, sized to run under valgrind
//! memcheck in a few seconds: alloc (with alignment), get/get_mut, free,
//! compact, full compaction, merge, cross-region reclaim, eviction, drop.
//!
//! ```text
//! CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="valgrind --error-exitcode=1 \
//!     --leak-check=full --errors-for-leak-kinds=definite" \
//!     cargo test -p replmem-logalloc --test valgrind_smoke
//! ```
//!
//! (`definite`: the test harness's own thread keeps a 48-byte "possibly
//! lost" block that is not ours.) The unit tests and the model proptest run
//! clean under the same runner too; with `PROPTEST_CASES=8` and
//! `--lib --test valgrind_smoke --test model_alloc_free_compact_merge` the
//! whole valgrind pass takes under 10 seconds.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use logalloc::{Eviction, Handle, PoolConfig, Region, SegmentPool};

fn check(region: &Region, live: &[(Handle, Vec<u8>)]) {
    for (h, bytes) in live {
        assert_eq!(&*region.get(*h).unwrap(), &bytes[..]);
    }
    region.check_invariants().unwrap();
}

#[test]
fn unsafe_core_end_to_end() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4096)
            .with_memory_limit(40 * 4096)
            .with_emergency_reserve(2)
            .with_bulk_segments(4),
    )
    .unwrap();

    // Alloc with varied sizes and alignments, overwrite, free half.
    let mut a = Region::new(&pool);
    let mut live = Vec::new();
    for i in 0..600usize {
        let size = (i * 37) % 400;
        let align = 1 << (i % 6);
        let h = a.alloc(size, align).unwrap();
        let bytes: Vec<u8> = (0..size).map(|j| (i + j) as u8).collect();
        a.get_mut(h).unwrap().copy_from_slice(&bytes);
        live.push((h, bytes));
    }
    let mut n = 0;
    live.retain(|(h, _)| {
        n += 1;
        if n % 2 == 0 {
            a.free(*h).unwrap();
            false
        } else {
            true
        }
    });
    check(&a, &live);
    assert!(a.compact() > 0);
    check(&a, &live);
    a.full_compaction().unwrap();
    check(&a, &live);

    // Merge another region in; its handles keep working.
    let mut b = Region::new(&pool);
    for i in 0..50u8 {
        let h = b.alloc_bytes(&[i; 150]).unwrap();
        live.push((h, vec![i; 150]));
    }
    a.merge(b).unwrap();
    check(&a, &live);

    // Thin `a`, then let a new region reclaim from it when the pool is dry.
    let mut n = 0;
    live.retain(|(h, _)| {
        n += 1;
        if n % 3 == 0 {
            a.free(*h).unwrap();
            false
        } else {
            true
        }
    });
    let mut c = Region::new(&pool);
    let mut c_live = Vec::new();
    loop {
        match c.alloc_bytes(&[0xC; 200]) {
            Ok(h) => c_live.push((h, vec![0xC; 200])),
            Err(e) => {
                assert!(e.is_out_of_memory(), "{e}");
                break;
            }
        }
    }
    assert!(a.stats().segments_compacted > 0);
    check(&a, &live);
    check(&c, &c_live);

    // Make `c` evictable and allocate again: eviction frees its oldest.
    let lru: Arc<Mutex<VecDeque<Handle>>> =
        Arc::new(Mutex::new(c_live.iter().map(|(h, _)| *h).collect()));
    let lru_in_fn = lru.clone();
    c.set_eviction_fn(move |evictor| match lru_in_fn.lock().unwrap().pop_front() {
        Some(h) => {
            evictor.free(h).unwrap();
            Eviction::Evicted
        }
        None => Eviction::Nothing,
    });
    let mut d = Region::new(&pool);
    for i in 0..20u8 {
        d.alloc_bytes(&[i; 300]).unwrap();
    }
    assert!(c.stats().bytes_evicted > 0);
    let remaining: Vec<_> = lru.lock().unwrap().iter().copied().collect();
    for h in remaining {
        assert_eq!(&*c.get(h).unwrap(), &[0xC; 200][..]);
    }
    pool.check_invariants().unwrap();
    drop((a, c, d));
    assert_eq!(pool.stats().segments_in_use, 0);
}
