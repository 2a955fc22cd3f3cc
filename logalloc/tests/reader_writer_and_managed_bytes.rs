//! The batch APIs: a `RegionReader` resolves many handles under one shared
//! lock, a `RegionWriter` allocates in place and frees under one exclusive
//! lock, and `ManagedBytes` stores strings above the largest object in
//! chunks, compares them without copying, and allocates all or nothing.
//! Small enough to run under valgrind.

use std::cmp::Ordering;

use logalloc::{Error, ManagedBytes, PoolConfig, Region, SegmentPool};

fn pool() -> std::sync::Arc<SegmentPool> {
    SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(64 << 10)
            .with_memory_limit(8 << 20),
    )
    .expect("pool")
}

#[test]
fn reader_resolves_many_handles_under_one_lock() {
    let pool = pool();
    let mut region = Region::new(&pool);
    let handles: Vec<_> = (0..100u32)
        .map(|i| region.alloc_bytes(&i.to_le_bytes()).unwrap())
        .collect();
    let reader = region.reader();
    for (i, &h) in handles.iter().enumerate() {
        assert_eq!(reader.get(h).unwrap(), &(i as u32).to_le_bytes());
    }
    // Several slices alive at once.
    let a = reader.get(handles[0]).unwrap();
    let b = reader.get(handles[99]).unwrap();
    assert_ne!(a, b);
}

#[test]
fn reader_reports_stale_handles() {
    let pool = pool();
    let mut region = Region::new(&pool);
    let h = region.alloc_bytes(b"x").unwrap();
    region.free(h).unwrap();
    assert!(matches!(
        region.reader().get(h),
        Err(Error::StaleHandle { .. })
    ));
}

#[test]
fn writer_initialises_in_place_and_frees() {
    let pool = pool();
    let mut region = Region::new(&pool);
    let mut writer = region.writer();
    let h = writer
        .alloc_with(16, 8, |bytes| bytes.copy_from_slice(&[3u8; 16]))
        .unwrap();
    writer.get_mut(h).unwrap()[0] = 9;
    assert_eq!(writer.get(h).unwrap()[..2], [9, 3]);
    let g = writer.alloc_bytes(b"gone").unwrap();
    writer.free(g).unwrap();
    assert_eq!(writer.stats().objects, 1);
    drop(writer);
    // Region::alloc_with is the single-object form.
    let k = region
        .alloc_with(4, 4, |b| b.copy_from_slice(b"abcd"))
        .unwrap();
    assert_eq!(&*region.get(k).unwrap(), b"abcd");
    region.check_invariants().unwrap();
}

#[test]
fn writer_refuses_bad_sizes_without_calling_init() {
    let pool = pool();
    let mut region = Region::new(&pool);
    let too_big = pool.max_object_size() + 1;
    let mut called = false;
    let err = region
        .writer()
        .alloc_with(too_big, 1, |_| called = true)
        .unwrap_err();
    assert!(matches!(err, Error::ObjectTooLarge { .. }));
    assert!(!called);
}

#[test]
fn managed_bytes_round_trip_short_and_chunked() {
    let pool = pool();
    let max = pool.max_object_size();
    let mut region = Region::new(&pool);
    for len in [0, 1, max - 1, max, max + 1, 3 * max + 7, 1 << 20] {
        let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        let m = region.writer().alloc_managed(&data).unwrap();
        assert_eq!(m.len(), len);
        assert_eq!(m.is_chunked(max), len > max);
        assert_eq!(ManagedBytes::from_bytes(m.to_bytes()), Some(m));
        {
            let reader = region.reader();
            let r = reader.managed(m).unwrap();
            assert_eq!(r.to_vec(), data);
            assert_eq!(r.cmp_bytes(&data), Ordering::Equal);
            assert_eq!(
                r.chunk_count(),
                if len > max { len.div_ceil(max) } else { 1 }
            );
        }
        region.full_compaction().unwrap(); // chunks move; handles hold
        assert_eq!(region.reader().managed(m).unwrap().to_vec(), data);
        region.writer().free_managed(m).unwrap();
        assert_eq!(region.stats().objects, 0, "len {len}");
    }
    region.check_invariants().unwrap();
}

#[test]
fn managed_comparison_ignores_chunk_boundaries() {
    let pool = pool();
    let max = pool.max_object_size();
    let mut region = Region::new(&pool);
    let long: Vec<u8> = vec![5u8; 2 * max + 3];
    let mut longer = long.clone();
    longer.push(0);
    let mut bigger = long.clone();
    bigger[max + 1] = 6;
    let ms: Vec<_> = [&long[..], &longer[..], &bigger[..], &long[..10]]
        .iter()
        .map(|d| region.writer().alloc_managed(d).unwrap())
        .collect();
    let reader = region.reader();
    let r: Vec<_> = ms.iter().map(|&m| reader.managed(m).unwrap()).collect();
    assert_eq!(r[0].cmp_bytes(&long), Ordering::Equal);
    assert_eq!(r[0].cmp_bytes(&longer), Ordering::Less);
    assert_eq!(r[1].cmp_bytes(&long), Ordering::Greater);
    assert_eq!(r[0].cmp_bytes(&bigger), Ordering::Less);
    assert_eq!(r[0].cmp_managed(&r[1]), Ordering::Less);
    assert_eq!(r[2].cmp_managed(&r[0]), Ordering::Greater);
    assert_eq!(r[3].cmp_managed(&r[0]), Ordering::Less);
    assert_eq!(r[0].cmp_managed(&r[0].clone()), Ordering::Equal);
    assert_eq!(r[3].cmp_bytes(&long[..10]), Ordering::Equal);
}

#[test]
fn managed_allocation_is_all_or_nothing_at_every_step() {
    let pool = pool();
    let max = pool.max_object_size();
    let mut region = Region::new(&pool);
    let keep = region.alloc_bytes(b"keep").unwrap();
    let data = vec![1u8; 3 * max + 1]; // 4 chunks + index = 5 allocations
    for n in 1..=5 {
        let before = region.stats();
        pool.fail_nth_allocation(n);
        let err = region.writer().alloc_managed(&data).unwrap_err();
        assert!(err.is_out_of_memory(), "step {n}: {err}");
        let after = region.stats();
        assert_eq!(after.objects, before.objects, "step {n}");
        assert_eq!(after.object_bytes, before.object_bytes, "step {n}");
    }
    pool.fail_nth_allocation(0);
    let m = region.writer().alloc_managed(&data).unwrap();
    assert_eq!(region.stats().objects, 6);
    assert_eq!(&*region.get(keep).unwrap(), b"keep");
    region.writer().free_managed(m).unwrap();
    region.check_invariants().unwrap();
}

#[test]
fn managed_refuses_strings_over_the_index_limit() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4 << 10)
            .with_memory_limit(4 << 20),
    )
    .unwrap();
    let max = pool.max_object_size();
    let limit = ManagedBytes::max_len(max);
    let mut region = Region::new(&pool);
    let err = region
        .writer()
        .alloc_managed(&vec![0u8; limit + 1])
        .unwrap_err();
    assert!(
        matches!(err, Error::ManagedTooLarge { size, max } if size == limit + 1 && max == limit)
    );
    assert!(err.to_string().contains("exceeds"));
    assert_eq!(region.stats().objects, 0);
}

#[test]
fn freeing_managed_twice_is_refused() {
    let pool = pool();
    let max = pool.max_object_size();
    let mut region = Region::new(&pool);
    let m = region.writer().alloc_managed(&vec![2u8; 2 * max]).unwrap();
    region.writer().free_managed(m).unwrap();
    assert!(region.writer().free_managed(m).is_err());
    assert_eq!(region.stats().objects, 0);
}

#[test]
fn managed_handles_name_every_object_of_a_string_after_a_merge() {
    let pool = pool();
    let max = pool.max_object_size();
    let mut from = Region::new(&pool);
    let small = from.writer().alloc_managed(b"short").unwrap();
    let chunked = from
        .writer()
        .alloc_managed(&vec![3u8; 2 * max + 5])
        .unwrap();
    let mut into = Region::new(&pool);
    into.merge(from).unwrap();
    let w = into.writer();
    assert_eq!(w.managed_handles(small).unwrap(), vec![small.head()]);
    let handles = w.managed_handles(chunked).unwrap();
    assert_eq!(handles.len(), 4, "the index and three chunks");
    assert_eq!(handles[0], chunked.head());
    drop(w);
    assert_eq!(into.stats().objects, 5);
    // Freed one by one by the new owner, they leave nothing behind.
    for h in handles.into_iter().chain([small.head()]) {
        into.free(h).unwrap();
    }
    assert_eq!(into.stats().objects, 0);
    into.check_invariants().unwrap();
}
