//! Edge cases of the unsafe core's safety argument, sized to run under
//! valgrind memcheck too (see `valgrind_smoke.rs` for the runner):
//!
//! * bounds: objects ending exactly at a segment's last byte, zero-size
//!   objects right at the tail, the largest object at the largest alignment
//!   a 4 KiB segment allows (512), through compaction and merge;
//! * aliasing: a guard held on one thread while another thread's
//!   allocation reclaims from the pool: the guarded bytes neither move nor
//!   change, and once the guard is gone the same reclaim may compact;
//! * handles that this region never issued (another pool's, or a dropped
//!   region's whose table tag was recycled) are refused as foreign: the
//!   table part's epoch they carry does not match, so they reach neither
//!   this region's objects nor another region's memory;
//! * the pool outliving the caller's `Arc` while regions still use it.

use std::sync::Arc;

use logalloc::{Error, Handle, PoolConfig, Region, SegmentPool};

const SEGMENT: usize = 4096;

fn pool(segments: usize) -> Arc<SegmentPool> {
    SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(SEGMENT)
            .with_memory_limit(segments * SEGMENT)
            .with_bulk_segments(4),
    )
    .unwrap()
}

fn pattern(seed: usize, size: usize) -> Vec<u8> {
    (0..size).map(|j| (seed * 31 + j * 7) as u8).collect()
}

fn verify(region: &Region, live: &[(Handle, usize, Vec<u8>)]) {
    for (h, align, bytes) in live {
        let got = region.get(*h).unwrap();
        assert_eq!(&*got, &bytes[..]);
        assert_eq!(got.as_ptr() as usize % align, 0, "alignment {align}");
    }
    region.check_invariants().unwrap();
}

#[test]
fn objects_at_the_segment_tail_and_at_max_alignment() {
    let pool = pool(24);
    let max = pool.max_object_size();
    assert_eq!(max, 409);
    let mut region = Region::new(&pool);
    let mut live = Vec::new();
    // Ten largest objects (4090 bytes) then one of 6 ends exactly at byte
    // 4096; a zero-size object then needs a fresh segment.
    for i in 0..10 {
        let h = region.alloc_bytes(&pattern(i, max)).unwrap();
        live.push((h, 1, pattern(i, max)));
    }
    let tail = region.alloc_bytes(&pattern(10, 6)).unwrap();
    live.push((tail, 1, pattern(10, 6)));
    assert_eq!(region.stats().segments, 1, "the segment is exactly full");
    assert_eq!(region.stats().used_bytes, SEGMENT);
    let empty = region.alloc(0, 1).unwrap();
    live.push((empty, 1, Vec::new()));
    assert_eq!(
        region.stats().segments,
        2,
        "a zero-size object takes a byte"
    );
    // Largest objects at the largest alignment a 4 KiB segment allows,
    // mixed with zero-size objects at every alignment, until segments fill.
    let max_align = SEGMENT / 8;
    assert!(matches!(
        region.alloc(1, 2 * max_align),
        Err(Error::InvalidAlignment { .. })
    ));
    for i in 0..60 {
        let (size, align) = match i % 4 {
            0 => (max, max_align),
            1 => (0, 1 << (i % 10)),
            2 => (max - i, 8),
            _ => (i, max_align),
        };
        let h = region.alloc(size, align).unwrap();
        let bytes = pattern(100 + i, size);
        region.get_mut(h).unwrap().copy_from_slice(&bytes);
        live.push((h, align, bytes));
    }
    verify(&region, &live);
    // Free every other object, then move everything twice.
    let mut n = 0;
    live.retain(|(h, ..)| {
        n += 1;
        n % 2 == 0 || region.free(*h).map(|()| false).unwrap()
    });
    region.compact();
    verify(&region, &live);
    region.full_compaction().unwrap();
    verify(&region, &live);
    // Merge a region whose active segment is exactly full into this one.
    let mut other = Region::new(&pool);
    for i in 0..10 {
        let h = other.alloc_bytes(&pattern(200 + i, max)).unwrap();
        live.push((h, 1, pattern(200 + i, max)));
    }
    let h = other.alloc_bytes(&pattern(210, 6)).unwrap();
    live.push((h, 1, pattern(210, 6)));
    region.merge(other).unwrap();
    verify(&region, &live);
    region.full_compaction().unwrap();
    verify(&region, &live);
    pool.check_invariants().unwrap();
}

/// Fills `region` with 100-byte objects and frees two of every three, so
/// every closed segment is a compaction candidate. Returns the survivors.
fn fill_and_thin(region: &mut Region, objects: usize) -> Vec<(Handle, usize, Vec<u8>)> {
    let mut live = Vec::new();
    for i in 0..objects {
        let h = region.alloc_bytes(&pattern(i, 100)).unwrap();
        if i % 3 == 0 {
            live.push((h, 1, pattern(i, 100)));
        } else {
            region.free(h).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    live
}

#[test]
fn a_guard_on_one_thread_stops_another_threads_reclaim() {
    let pool = pool(12);
    let mut sparse = Region::new(&pool);
    let live = fill_and_thin(&mut sparse, 270);
    let segments = sparse.stats().segments;
    assert!(segments >= 4, "{segments} segments");
    let counter = sparse.reclaim_counter();
    let (h, _, expected) = live[0].clone();
    std::thread::scope(|scope| {
        let guard = sparse.get(h).unwrap();
        let address = guard.as_ptr();
        let pool = &pool;
        let hungry = scope.spawn(move || {
            let mut hungry = Region::new(pool);
            let mut mine = Vec::new();
            loop {
                match hungry.alloc_bytes(&[0xAB; 100]) {
                    Ok(h) => mine.push(h),
                    Err(Error::OutOfMemory { .. }) => break,
                    Err(e) => panic!("{e}"),
                }
            }
            for h in &mine {
                assert_eq!(&*hungry.get(*h).unwrap(), &[0xAB; 100]);
            }
            hungry
        });
        let hungry = hungry.join().unwrap();
        // Other readers may share the region meanwhile.
        verify_shared(&sparse, &live);
        assert_eq!(guard.as_ptr(), address, "the guarded object did not move");
        assert_eq!(&*guard, &expected[..]);
        drop(guard);
        assert_eq!(
            sparse.reclaim_counter(),
            counter,
            "nothing compacted `sparse`"
        );
        // Without the guard, the hungry region's next allocation (again on
        // another thread) may compact it.
        let mut hungry = hungry;
        let more = scope.spawn(move || hungry.alloc_bytes(&[1; 100]).map(|_| hungry));
        let hungry = more.join().unwrap().unwrap();
        assert!(sparse.reclaim_counter() > counter, "reclaim used `sparse`");
        drop(hungry);
    });
    verify(&sparse, &live);
    pool.check_invariants().unwrap();
}

fn verify_shared(region: &Region, live: &[(Handle, usize, Vec<u8>)]) {
    for (h, _, bytes) in live {
        assert_eq!(&*region.get(*h).unwrap(), &bytes[..]);
    }
}

#[test]
fn handles_of_another_pool_or_a_recycled_tag_are_foreign() {
    // Another pool's handle: tags are unique per pool only, so it names the
    // same tag, slot and generation as a live object here. The parts'
    // epochs differ (pools seed them differently), so it is refused.
    let first = pool(8);
    let second = pool(8);
    let mut a = Region::new(&first);
    let mut b = Region::new(&second);
    let ha = a.alloc_bytes(b"first pool").unwrap();
    let hb = b.alloc_bytes(b"second pool, longer").unwrap();
    assert_eq!(ha.to_raw() >> 32, hb.to_raw() >> 32, "same tag and slot");
    assert_ne!(ha, hb, "different part epochs");
    assert_eq!(b.get(ha).err(), Some(Error::ForeignHandle { handle: ha }));
    assert_eq!(b.free(ha), Err(Error::ForeignHandle { handle: ha }));
    assert_eq!(a.get(hb).err(), Some(Error::ForeignHandle { handle: hb }));
    assert_eq!(
        &*b.get(hb).unwrap(),
        b"second pool, longer",
        "nothing freed"
    );
    assert_eq!(&*a.get(ha).unwrap(), b"first pool");

    // A dropped region's handle on the region that recycled its tag: the
    // new part has the pool's next epoch, so the handle is refused.
    let pool = pool(8);
    let mut gone = Region::new(&pool);
    let stale = gone.alloc_bytes(b"gone").unwrap();
    drop(gone);
    let mut next = Region::new(&pool);
    let fresh = next.alloc(137, 1).unwrap();
    assert_eq!(stale.to_raw() >> 32, fresh.to_raw() >> 32, "tag recycled");
    assert_ne!(stale, fresh);
    assert_eq!(
        next.get(stale).err(),
        Some(Error::ForeignHandle { handle: stale })
    );
    assert_eq!(
        next.free(stale),
        Err(Error::ForeignHandle { handle: stale })
    );
    assert_eq!(next.get(fresh).unwrap().len(), 137, "nothing freed");
    // The right epoch with a wrong generation is stale, not foreign.
    let wrong_generation = Handle::from_raw(fresh.to_raw() + 1).unwrap();
    assert_eq!(
        next.get(wrong_generation).err(),
        Some(Error::StaleHandle {
            handle: wrong_generation
        })
    );

    // Merge adopts parts with their epochs: the absorbed region's handles
    // keep resolving, and the merged region still refuses the stale one.
    let mut other = Region::new(&pool);
    let merged_in = other.alloc_bytes(b"merged").unwrap();
    next.merge(other).unwrap();
    assert_eq!(&*next.get(merged_in).unwrap(), b"merged");
    assert_eq!(next.get(fresh).unwrap().len(), 137);
    assert!(next.get(stale).is_err());
    next.check_invariants().unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn regions_keep_the_pool_alive() {
    let pool = pool(8);
    let mut region = Region::new(&pool);
    let h = region.alloc_bytes(&[5; 300]).unwrap();
    let weak = Arc::downgrade(&pool);
    drop(pool);
    assert!(weak.upgrade().is_some(), "the region holds the pool");
    region.full_compaction().unwrap();
    assert_eq!(&*region.get(h).unwrap(), &[5; 300]);
    drop(region);
    assert!(weak.upgrade().is_none(), "the last region freed the pool");
}
