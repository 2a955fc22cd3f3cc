//! A wide partition is stored in pieces: a slice reads only the pieces it
//! meets, and eviction takes the partition's last piece first, so its head
//! rows stay cached (hits) while reads of the evicted tail go to the source.

mod common;

use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp,
};
use row_cache::CacheConfig;

fn ck(i: usize) -> ClusteringKey {
    ClusteringKey::new(format!("r{i:04}").into_bytes()).unwrap()
}

#[test]
fn eviction_trims_a_wide_partition_from_its_tail() {
    let config = CacheConfig::default().with_piece_bytes(4 << 10);
    let (_pool, source, cache) = common::setup_with(8 << 20, config);
    let key = DecoratedKey::from_bytes("wide").unwrap();
    let mut b = Mutation::builder(key.clone());
    for i in 0..200 {
        b = b.cell(
            ck(i).as_bytes().to_vec(),
            0,
            Cell::live(vec![i as u8; 200], Timestamp::from_micros(1)),
        );
    }
    let wide = b.build().unwrap();
    source.apply(&wide);
    let one = PartitionRange::single_key(key);
    assert_eq!(
        common::read(&cache, one.clone(), ClusteringRange::full()),
        std::slice::from_ref(&wide)
    );
    let full = cache.stats();
    assert_eq!(full.partitions, 1);
    assert!(full.region.objects > 5, "not split into pieces: {full:?}");

    cache.evict(2);
    let trimmed = cache.stats();
    assert_eq!(trimmed.partitions, 1, "the partition itself stays");
    assert!(trimmed.stored_bytes < full.stored_bytes);
    cache.check_invariants().unwrap();

    // The head is still a hit; the tail reads through, and both are right.
    let readers = source.readers();
    let head = ClusteringRange::singular(ck(0));
    assert_eq!(
        common::read(&cache, one.clone(), head.clone()),
        [common::restrict(&wide, &head)]
    );
    assert_eq!(source.readers(), readers, "the head was evicted");
    let tail = ClusteringRange::singular(ck(199));
    assert_eq!(
        common::read(&cache, one.clone(), tail.clone()),
        [common::restrict(&wide, &tail)]
    );
    assert_eq!(
        source.readers(),
        readers + 1,
        "the tail did not read through"
    );
    // Evicting everything leaves nothing behind.
    while cache.evict(1) == 1 {}
    assert_eq!(cache.stats().partitions, 0);
    assert_eq!(cache.stats().region.objects, 0);
    cache.check_invariants().unwrap();
}
