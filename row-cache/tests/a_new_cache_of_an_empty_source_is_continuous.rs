//! A cache created over an empty source with `continuous` (a new table,
//! no sstables) answers every read without opening the source: absent
//! keys through `make_reader_opt`'s `None`, flushed partitions as hits
//! (the update inserts them, the ring being continuous). Without the flag
//! the same reads go to the source.

mod common;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp};
use row_cache::CacheConfig;

fn partition(i: usize) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("k{i}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(format!("v{i}"), Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

#[test]
fn an_empty_continuous_cache_never_reads_the_source() {
    let config = CacheConfig::default().with_continuous(true);
    let (_pool, source, cache) = common::setup_with(16 << 20, config);
    for i in 0..20 {
        let one = PartitionRange::single_key(partition(i).key().clone());
        assert!(
            cache
                .make_reader_opt(one, ClusteringRange::full())
                .is_none()
        );
    }
    assert!(common::read(&cache, PartitionRange::full(), ClusteringRange::full()).is_empty());
    assert_eq!(source.readers(), 0);

    // A flush brings its partitions in: they are hits from then on.
    let batch: Vec<Mutation> = (0..10).map(partition).collect();
    common::flush(&cache, &source, &batch);
    for m in &batch {
        let one = PartitionRange::single_key(m.key().clone());
        let mut r = cache
            .make_reader_opt(one, ClusteringRange::full())
            .expect("a cached partition has a reader");
        assert_eq!(common::read_all(&mut r), vec![m.clone()]);
    }
    // Keys never written stay known absent.
    for i in 10..20 {
        let one = PartitionRange::single_key(partition(i).key().clone());
        assert!(
            cache
                .make_reader_opt(one, ClusteringRange::full())
                .is_none()
        );
    }
    let mut all = batch.clone();
    all.sort_by(|a, b| a.key().cmp(b.key()));
    assert_eq!(
        common::read(&cache, PartitionRange::full(), ClusteringRange::full()),
        all
    );
    assert_eq!(source.readers(), 0, "every read was answered by the cache");
    assert_eq!(cache.stats().misses, 0);
    cache.check_invariants().unwrap();
}

#[test]
fn without_the_flag_reads_go_to_the_source() {
    let (_pool, source, cache) = common::setup(16 << 20);
    let one = PartitionRange::single_key(partition(0).key().clone());
    let r = cache.make_reader_opt(one.clone(), ClusteringRange::full());
    assert!(common::read_all(&mut r.expect("unknown: a reader")).is_empty());
    assert_eq!(source.readers(), 1);
    // The miss marked the key absent: the next read is answered at once.
    assert!(
        cache
            .make_reader_opt(one, ClusteringRange::full())
            .is_none()
    );
    assert_eq!(source.readers(), 1);
    // A flush into an unknown ring caches nothing.
    let batch: Vec<Mutation> = (1..5).map(partition).collect();
    common::flush(&cache, &source, &batch);
    assert_eq!(cache.stats().partitions, 0);
}
