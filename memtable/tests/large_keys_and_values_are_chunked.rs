//! Values and keys larger than logalloc's largest object are stored in
//! chunks and read back whole: a 1 MiB value, and a row whose partition
//! key, clustering key and value come to 64 KiB and more; they survive a
//! full compaction and are freed whole when overwritten or deleted.

mod common;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp, Tombstone,
};

#[test]
fn one_mib_value_round_trips() {
    let (pool, _group, mt) = common::setup(64 << 20);
    assert!(pool.max_object_size() < 1 << 20);
    let key = DecoratedKey::from_bytes("big").unwrap();
    let value: Vec<u8> = (0..1 << 20).map(|i| (i % 253) as u8).collect();
    let m = Mutation::builder(key.clone())
        .cell("c", 0, Cell::live(value.clone(), Timestamp::from_micros(1)))
        .build()
        .unwrap();
    mt.apply(&m).unwrap();
    assert!(mt.stats().region.object_bytes > 1 << 20);
    mt.full_compaction().unwrap();
    assert_eq!(common::scan(&mt), vec![m]);
    let used = mt.stats().region.object_bytes;
    // Overwriting with a small value frees every chunk.
    mt.apply(
        &Mutation::builder(key.clone())
            .cell("c", 0, Cell::live("small", Timestamp::from_micros(2)))
            .build()
            .unwrap(),
    )
    .unwrap();
    assert!(mt.stats().region.object_bytes < used - (1 << 20) + 4096);
    mt.check_invariants().unwrap();
}

#[test]
fn sixty_four_kib_keys_plus_value_round_trip() {
    let (_pool, _group, mt) = common::setup(64 << 20);
    let pk = vec![0u8; 65_535]; // all zero bytes: every one escaped in the index key
    let ck = vec![7u8; 65_535];
    let key = DecoratedKey::from_bytes(pk).unwrap();
    let m = Mutation::builder(key.clone())
        .cell(
            ck.clone(),
            3,
            Cell::live(vec![9u8; 64 << 10], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap();
    mt.apply(&m).unwrap();
    let neighbour = Mutation::builder(DecoratedKey::from_bytes("n").unwrap())
        .cell("x", 0, Cell::live("y", Timestamp::from_micros(1)))
        .build()
        .unwrap();
    mt.apply(&neighbour).unwrap();
    let mut want = vec![m.clone(), neighbour.clone()];
    want.sort_by(|a, b| a.key().cmp(b.key()));
    assert_eq!(common::scan(&mt), want);
    let mut slice = mt
        .make_reader_opt(
            PartitionRange::single_key(key.clone()),
            ClusteringRange::singular(mutation::ClusteringKey::new(ck).unwrap()),
        )
        .unwrap()
        .unwrap();
    assert_eq!(common::read_all(&mut slice), vec![m]);
    let before = mt.stats().region.object_bytes;
    mt.apply(
        &Mutation::builder(key)
            .partition_tombstone(Tombstone::new(Timestamp::from_micros(5), 0))
            .build()
            .unwrap(),
    )
    .unwrap();
    // The row's key and value went; only the header (with its long key) stays.
    assert!(mt.stats().region.object_bytes < before - (128 << 10));
    mt.check_invariants().unwrap();
}
