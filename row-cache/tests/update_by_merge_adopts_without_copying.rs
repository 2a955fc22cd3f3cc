//! The update at flush by region merge: a flushed memtable's region is
//! merged into the cache's, and its partitions are adopted where they lie
//! (the cache writes nothing for partitions it did not hold), reconciled
//! with the cached entry where the cache holds one, and freed where the
//! ring is not continuous. Adopted partitions read back in place, evict
//! like any other, and a memtable with an open reader falls back to the
//! stream.

mod common;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange, Timestamp,
};
use row_cache::CacheConfig;

fn key(i: usize) -> DecoratedKey {
    DecoratedKey::from_bytes(format!("pk{i:05}")).unwrap()
}

fn partition(i: usize, rows: std::ops::Range<usize>, t: i64) -> Mutation {
    let mut b = Mutation::builder(key(i));
    for r in rows {
        b = b.cell(
            format!("r{r:03}"),
            0,
            Cell::live(vec![r as u8; 100], Timestamp::from_micros(t)),
        );
    }
    b.build().unwrap()
}

#[test]
fn new_partitions_are_adopted_with_no_bytes_written() {
    // A new table: the whole ring is continuous.
    let (pool, source, cache) =
        common::setup_with(64 << 20, CacheConfig::default().with_continuous(true));
    let batch: Vec<Mutation> = (0..2_000).map(|i| partition(i, 0..5, 10)).collect();
    let memtable = common::sealed_memtable(&pool, &batch);
    let live = memtable.stats().region.used_bytes;
    for m in &batch {
        source.apply(m);
    }
    let before = cache.stats().region;
    let mut passed = 0;
    let stats = cache
        .update_by_merge(&memtable, &mut || passed += 1)
        .unwrap()
        .expect("no reader open");
    let after = cache.stats().region;
    assert_eq!(passed, batch.len(), "called once per partition");
    assert_eq!((stats.adopted, stats.inserted), (2_000, 2_000));
    assert_eq!(stats.bytes_copied, 0);
    // Bytes allocated in the cache's region by the update: what it holds
    // beyond the adopted objects (which were the memtable's).
    let allocated = (after.object_bytes - before.object_bytes) - stats.bytes_adopted;
    assert!(
        allocated * 20 < live,
        "{allocated} bytes allocated for {live} live bytes of the memtable"
    );
    assert_eq!(allocated, 0, "nothing at all: only the index changed");
    // The rest of the memtable's bytes were its index (freed).
    assert!(stats.bytes_adopted * 2 > live, "the rows came over");
    assert_eq!(memtable.stats().region.objects, 0);
    cache.check_invariants().unwrap();

    // Reads are hits, equal to what was written, whole and sliced; the
    // source is not read.
    let readers = source.readers();
    for m in batch.iter().step_by(97) {
        let one = PartitionRange::single_key(m.key().clone());
        assert_eq!(
            common::read(&cache, one.clone(), ClusteringRange::full()),
            vec![m.clone()]
        );
        let slice = ClusteringRange::singular(mutation::ClusteringKey::try_from("r002").unwrap());
        assert_eq!(
            common::read(&cache, one, slice.clone()),
            vec![common::restrict(m, &slice)]
        );
    }
    assert_eq!(source.readers(), readers);
    assert!(
        cache
            .make_reader_opt(
                PartitionRange::single_key(key(99_999)),
                ClusteringRange::full()
            )
            .is_none()
    );

    // Adopted entries evict like any other; an evicted one is read from
    // the source.
    assert_eq!(cache.evict(500), 500);
    cache.check_invariants().unwrap();
    assert_eq!(cache.evict(10_000), 1_500);
    cache.check_invariants().unwrap();
    let first = PartitionRange::single_key(key(0));
    assert_eq!(
        common::read(&cache, first, ClusteringRange::full()),
        vec![batch[0].clone()]
    );
    assert!(source.readers() > readers);
    cache.clear();
    cache.check_invariants().unwrap();
    assert_eq!(cache.stats().region.objects, 0);
}

#[test]
fn held_partitions_are_reconciled_and_the_rest_freed() {
    let (pool, source, cache) = common::setup(64 << 20);
    // Cached: partitions 0..10 with rows 0..5 (read through, populated).
    let old: Vec<Mutation> = (0..10).map(|i| partition(i, 0..5, 10)).collect();
    for m in &old {
        source.apply(m);
    }
    for m in &old {
        common::read(
            &cache,
            PartitionRange::single_key(m.key().clone()),
            ClusteringRange::full(),
        );
    }
    // Flushed: rows 3..8 of 0..10, newer (rows 3 and 4 in both), and
    // partitions 10..20 the cache knows nothing about.
    let batch: Vec<Mutation> = (0..20).map(|i| partition(i, 3..8, 20)).collect();
    let memtable = common::sealed_memtable(&pool, &batch);
    for m in &batch {
        source.apply(m);
    }
    let stats = cache
        .update_by_merge(&memtable, &mut || {})
        .unwrap()
        .expect("no reader open");
    assert_eq!(stats.merged, 10);
    assert_eq!(stats.adopted, 0);
    assert_eq!(stats.skipped, 10, "outside a continuous range: freed");
    cache.check_invariants().unwrap();
    let misses = cache.stats().misses;
    for i in 0..10 {
        let want = old[i].clone().merge(batch[i].clone()).unwrap();
        let got = common::read(
            &cache,
            PartitionRange::single_key(key(i)),
            ClusteringRange::full(),
        );
        assert_eq!(got, vec![want]);
    }
    assert_eq!(cache.stats().misses, misses, "all hits");
    // The freed ones are read from the source.
    let got = common::read(
        &cache,
        PartitionRange::single_key(key(15)),
        ClusteringRange::full(),
    );
    assert_eq!(got, vec![batch[15].clone()]);
}

#[test]
fn an_open_memtable_reader_means_the_stream_instead() {
    let (pool, source, cache) =
        common::setup_with(64 << 20, CacheConfig::default().with_continuous(true));
    let batch: Vec<Mutation> = (0..50).map(|i| partition(i, 0..3, 10)).collect();
    let memtable = common::sealed_memtable(&pool, &batch);
    for m in &batch {
        source.apply(m);
    }
    let mut open = memtable
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    assert!(open.next().unwrap().is_some());
    assert!(
        cache
            .update_by_merge(&memtable, &mut || {})
            .unwrap()
            .is_none()
    );
    assert!(!memtable.is_handed_over());
    // The stream still works, and the open reader reads on.
    let mut flushed = memtable
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    let stats = cache.update_from(&mut flushed).unwrap();
    assert_eq!(stats.inserted, 50);
    drop(flushed);
    let mut starts = 1;
    while let Some(f) = open.next().unwrap() {
        starts += usize::from(matches!(f, mutation::Fragment::PartitionStart { .. }));
    }
    assert_eq!(starts, 50);
    drop(open);
    // With every reader gone it can be handed over (and the cache
    // reconciles what it already took: the same data).
    let stats = cache
        .update_by_merge(&memtable, &mut || {})
        .unwrap()
        .expect("no reader open now");
    assert_eq!(stats.merged, 50);
    cache.check_invariants().unwrap();
    let mut in_ring_order = batch;
    in_ring_order.sort_by(|a, b| a.key().cmp(b.key()));
    let got = common::read(&cache, PartitionRange::full(), ClusteringRange::full());
    assert!(got == in_ring_order, "the scan reads back the batch");
}
