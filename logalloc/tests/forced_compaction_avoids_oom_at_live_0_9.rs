//! A pool limited to live/0.9 with the default 15% compaction rule: right
//! after the first fill, random deletes leave every segment about 10% free,
//! so no segment qualifies for ordinary compaction. Allocation must still
//! succeed, by compacting below the threshold (a forced compaction), and
//! every object must stay intact. `compact()` keeps the 15% rule.

use logalloc::{Handle, PoolConfig, Region, SegmentPool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const SEGMENT: usize = 8 << 10;
const SEGMENTS: usize = 256;
const OBJECT: usize = 100;

/// `SEGMENTS` segments of `SEGMENT` bytes, the default 15% rule.
fn full_size_pool() -> std::sync::Arc<SegmentPool> {
    SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(SEGMENT)
            .with_memory_limit(SEGMENTS * SEGMENT)
            .with_bulk_segments(4),
    )
    .unwrap()
}

fn check_all(region: &Region, live: &[(Handle, u8)]) {
    for &(handle, fill) in live {
        let bytes = region.get(handle).expect("a live handle resolves");
        assert_eq!(bytes.len(), OBJECT);
        assert!(
            bytes.iter().all(|&b| b == fill),
            "object {handle:?} corrupted"
        );
    }
}

#[test]
fn allocation_at_live_0_9_compacts_below_the_threshold_instead_of_failing() {
    let pool = full_size_pool();
    assert_eq!(PoolConfig::default().compaction_min_free_percent, 15);
    let mut region = Region::new(&pool);
    let cap = SEGMENTS * SEGMENT * 9 / 10;
    let mut rng = SmallRng::seed_from_u64(7);
    let mut live: Vec<(Handle, u8)> = Vec::new();
    let mut live_bytes = 0;
    let mut checked_after_transient = false;
    for n in 0..5 * cap / OBJECT {
        while live_bytes + OBJECT > cap {
            let (handle, _) = live.swap_remove(rng.gen_range(0..live.len()));
            region.free(handle).unwrap();
            live_bytes -= OBJECT;
        }
        let fill = n as u8;
        let handle = region
            .alloc_bytes(&[fill; OBJECT])
            .unwrap_or_else(|e| panic!("allocation {n} failed at live/0.9: {e}"));
        live.push((handle, fill));
        live_bytes += OBJECT;
        let stats = region.stats();
        if !checked_after_transient && stats.forced_compactions > 0 {
            // The transient: ordinary compaction finds nothing at 15%.
            assert_eq!(region.compact(), 0, "compact() keeps the 15% rule");
            check_all(&region, &live);
            region.check_invariants().unwrap();
            checked_after_transient = true;
        }
        if n % 4096 == 0 {
            region.check_invariants().unwrap();
        }
    }
    let stats = region.stats();
    assert!(checked_after_transient, "no forced compaction: {stats:?}");
    assert_eq!(stats.allocation_failures, 0);
    assert!(stats.forced_compactions <= stats.segments_compacted);
    assert!(
        stats.segments_compacted > stats.forced_compactions,
        "ordinary compaction takes over once segments reach 15% free: {stats:?}"
    );
    let pool_stats = pool.stats();
    assert_eq!(pool_stats.forced_compactions, stats.forced_compactions);
    assert!(pool_stats.segments_in_use <= SEGMENTS);
    check_all(&region, &live);
    region.check_invariants().unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn a_pool_too_full_to_win_a_segment_still_fails_cleanly() {
    // Live data at 99% of the pool: the closed segments' free space does not
    // add up to the two segments a forced compaction needs, so the
    // allocation fails with OutOfMemory and nothing is lost.
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(SEGMENT)
            .with_memory_limit(16 * SEGMENT)
            .with_bulk_segments(1),
    )
    .unwrap();
    let mut region = Region::new(&pool);
    let mut live = Vec::new();
    let mut n = 0u32;
    let error = loop {
        match region.alloc_bytes(&[n as u8; OBJECT]) {
            Ok(handle) => live.push((handle, n as u8)),
            Err(e) => break e,
        }
        n += 1;
    };
    assert!(
        matches!(error, logalloc::Error::OutOfMemory { .. }),
        "{error}"
    );
    // Free one object in a hundred: far less than two segments of free space.
    for (handle, _) in live.iter().step_by(100) {
        region.free(*handle).unwrap();
    }
    live.retain(|(h, _)| region.get(*h).is_ok());
    let before = region.stats();
    let error = region.alloc_bytes(&[0; OBJECT]);
    assert!(error.is_err());
    let after = region.stats();
    assert_eq!(after.forced_compactions, 0);
    assert_eq!(after.objects, before.objects);
    check_all(&region, &live);
    region.check_invariants().unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn mixed_sizes_and_alignments_survive_forced_compaction() {
    // Objects of 0-200 bytes with alignments up to 16, at live/0.9: the
    // placement check of a forced compaction must account for padding and
    // segment tails, and every object must stay intact and aligned.
    let pool = full_size_pool();
    let mut region = Region::new(&pool);
    // Object bytes at 90% of the pool, plus alignment padding (about 2.5%
    // on average).
    let cap = SEGMENTS * SEGMENT * 9 / 10;
    let mut rng = SmallRng::seed_from_u64(11);
    let mut live: Vec<(Handle, usize, usize, u8)> = Vec::new();
    let mut live_bytes = 0;
    let mut allocated = 0;
    let mut n = 0u32;
    while allocated < 4 * cap {
        let size = rng.gen_range(0..=200);
        let align = 1 << rng.gen_range(0..=4);
        while live_bytes + size > cap {
            let (handle, size, _, _) = live.swap_remove(rng.gen_range(0..live.len()));
            region.free(handle).unwrap();
            live_bytes -= size;
        }
        let handle = region
            .alloc(size, align)
            .unwrap_or_else(|e| panic!("allocation {n} failed: {e}"));
        let fill = n as u8;
        region.get_mut(handle).unwrap().fill(fill);
        live.push((handle, size, align, fill));
        live_bytes += size;
        allocated += size;
        n += 1;
        if n.is_multiple_of(2048) {
            region.check_invariants().unwrap();
        }
    }
    for &(handle, size, align, fill) in &live {
        let bytes = region.get(handle).unwrap();
        assert_eq!(bytes.len(), size);
        assert_eq!(bytes.as_ptr() as usize % align, 0);
        assert!(bytes.iter().all(|&b| b == fill));
    }
    let stats = region.stats();
    assert_eq!(stats.allocation_failures, 0);
    assert!(stats.forced_compactions > 0, "{stats:?}");
    region.check_invariants().unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn forced_steps_add_up_when_one_step_frees_less_than_an_object() {
    // 4 KiB segments filled with 200-byte objects (20 a segment, 96 bytes of
    // tail), then one object freed in every segment: each has 296 bytes
    // (7%) free, below the 15% rule. A 400-byte object needs more room than
    // any single forced step leaves, so the steps must add up (the
    // destination stays open between them) instead of failing.
    const SMALL: usize = 4096;
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(SMALL)
            .with_memory_limit(64 * SMALL)
            .with_bulk_segments(8),
    )
    .unwrap();
    let mut region = Region::new(&pool);
    let mut live = Vec::new();
    let mut n = 0u32;
    while let Ok(handle) = region.alloc_bytes(&[n as u8; 200]) {
        live.push((handle, n as u8));
        n += 1;
    }
    for (handle, _) in live.iter().step_by(20) {
        region.free(*handle).unwrap();
    }
    live = live
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % 20 != 0)
        .map(|(_, entry)| entry)
        .collect();
    assert_eq!(region.compact(), 0, "nothing qualifies under the 15% rule");
    let big = region
        .alloc_bytes(&[0xEE; 400])
        .expect("forced steps add up to room for the object");
    assert!(
        region.stats().forced_compactions >= 2,
        "{:?}",
        region.stats()
    );
    assert_eq!(&*region.get(big).unwrap(), &[0xEE; 400][..]);
    for &(handle, fill) in &live {
        assert!(region.get(handle).unwrap().iter().all(|&b| b == fill));
    }
    region.check_invariants().unwrap();
    pool.check_invariants().unwrap();
}

/// A pool full of objects of one size that does not divide the segment size:
/// every segment ends in a tail too small for another object, and the tails
/// add up to several segments of "free" space that no compaction can turn
/// into room. An allocation must then fail after a few futile rounds of
/// forced compaction, not move full segments around for every tail (it used
/// to: 2 x segments rounds of up to `segments` moves each), and the region
/// must stay intact and usable.
#[test]
fn a_pool_full_of_unpackable_tails_fails_fast() {
    let pool = full_size_pool();
    let mut region = Region::new(&pool);
    let mut live = Vec::new();
    let mut fill = 0u8;
    let error = loop {
        match region.alloc_bytes(&[fill; OBJECT]) {
            Ok(handle) => live.push((handle, fill)),
            Err(error) => break error,
        }
        fill = fill.wrapping_add(1);
    };
    assert!(error.is_out_of_memory(), "{error}");
    let stats = region.stats();
    // 81 objects of 100 bytes per 8 KiB segment leave 92-byte tails: more
    // than two segments' worth over the pool, so forced compaction applies.
    assert!(stats.free_bytes >= 2 * SEGMENT, "{stats:?}");
    assert!(
        stats.segments_compacted <= 8,
        "the failing allocation moved {} segments for nothing",
        stats.segments_compacted
    );
    // A second attempt fails as fast.
    assert!(region.alloc_bytes(&[0; OBJECT]).is_err());
    assert!(region.stats().segments_compacted <= 16);
    check_all(&region, &live);
    region.check_invariants().unwrap();
    // Freeing makes room again.
    for &(handle, _) in live.iter().take(200) {
        region.free(handle).unwrap();
    }
    let kept = &live[200..];
    for _ in 0..100 {
        region.alloc_bytes(&[1; OBJECT]).unwrap();
    }
    check_all(&region, kept);
    region.check_invariants().unwrap();
}
