//! A pool with a 1 TiB limit and the default 128 KiB segments (2^23
//! segments: sizes live in object headers) is made without taking memory,
//! takes only the chunks its objects need, and keeps every guarantee of
//! its handles: round trips of the smallest and largest objects, across
//! compaction and merge, and stale handles detected after free.

use logalloc::{Error, PoolConfig, Region, SegmentPool};

const TIB: usize = 1 << 40;
/// The most memory this test may take from the system.
const BUDGET: usize = 64 << 20;

/// Resident memory of this process in bytes (Linux), if known.
fn resident() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

#[test]
fn a_tebibyte_pool_is_lazy_and_keeps_handles() {
    let before = resident();
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(TIB)).unwrap();
    assert_eq!(pool.memory_limit(), TIB);
    assert_eq!(pool.stats().system_bytes, 0, "nothing taken at start");
    let max = pool.max_object_size();
    assert_eq!(max, 13107);

    let mut region = Region::new(&pool);
    let mut objects = Vec::new();
    // Objects of every size class up to the largest, aligned and not.
    for i in 0..2000usize {
        let size = match i % 5 {
            0 => 0,
            1 => 1,
            2 => 100,
            3 => 1000 + i,
            _ => max,
        };
        let byte = (i % 251) as u8;
        let h = if i % 7 == 0 {
            let h = region.alloc(size, 64).unwrap();
            region.get_mut(h).unwrap().fill(byte);
            h
        } else {
            region.alloc_bytes(&vec![byte; size]).unwrap()
        };
        objects.push((h, size, byte));
    }
    let check = |region: &Region, objects: &[(logalloc::Handle, usize, u8)]| {
        for &(h, size, byte) in objects {
            let bytes = region.get(h).unwrap();
            assert_eq!(bytes.len(), size);
            assert!(bytes.iter().all(|&b| b == byte));
        }
    };
    check(&region, &objects);
    region.check_invariants().unwrap();

    // Free every other object: the freed handles are stale, the rest move
    // in a full compaction and still resolve.
    let (freed, kept): (Vec<_>, Vec<_>) = objects.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let freed: Vec<_> = freed.into_iter().map(|(_, o)| *o).collect();
    let kept: Vec<_> = kept.into_iter().map(|(_, o)| *o).collect();
    for &(h, _, _) in &freed {
        region.free(h).unwrap();
    }
    for &(h, _, _) in &freed {
        assert_eq!(region.get(h).err(), Some(Error::StaleHandle { handle: h }));
    }
    let counter = region.reclaim_counter();
    region.full_compaction().unwrap();
    assert_ne!(region.reclaim_counter(), counter, "objects moved");
    check(&region, &kept);

    // Merge: the other region's handles keep resolving here.
    let mut other = Region::new(&pool);
    let theirs = other.alloc_bytes(&[7; 13107]).unwrap();
    region.merge(other).unwrap();
    assert_eq!(&*region.get(theirs).unwrap(), &[7; 13107][..]);
    check(&region, &kept);
    region.check_invariants().unwrap();
    pool.check_invariants().unwrap();

    let taken = pool.stats().system_bytes;
    assert!(taken > 0 && taken <= BUDGET, "took {taken} bytes");
    if let (Some(before), Some(after)) = (before, resident()) {
        assert!(
            after.saturating_sub(before) <= BUDGET + (16 << 20),
            "resident memory grew by {} bytes",
            after - before
        );
    }
}

#[test]
fn a_tebibyte_pool_prefaults_only_what_it_is_asked_to() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_memory_limit(TIB)
            .with_prefault(true)
            .with_prefault_bytes(Some(8 << 20)),
    )
    .unwrap();
    // Two bulk chunks of 32 segments of 128 KiB: 8 MiB, not 1 TiB.
    assert_eq!(pool.stats().system_bytes, 8 << 20);
    let mut region = Region::new(&pool);
    let h = region.alloc_bytes(b"lazy beyond the prefault").unwrap();
    assert_eq!(&*region.get(h).unwrap(), b"lazy beyond the prefault");
    assert_eq!(
        pool.stats().system_bytes,
        8 << 20,
        "the first segments were prefaulted"
    );
}
