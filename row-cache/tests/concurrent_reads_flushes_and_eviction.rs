//! Readers, a flusher and an allocator that drains the pool run at once.
//! The allocator's reclaim calls the cache's eviction hook while readers
//! are between (and inside) reads. Every read that starts after an update
//! at flush returned sees that flush or a later one: no population ever
//! brings back data older than a completed flush, an evicted partition
//! reads through, and nothing fails for lack of memory in the cache.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::thread;

use logalloc::Region;
use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp, from_mutations,
};

const KEYS: usize = 24;

fn write(key: &DecoratedKey, version: i64) -> Mutation {
    Mutation::builder(key.clone())
        .cell(
            "r",
            0,
            Cell::live(vec![version as u8; 600], Timestamp::from_micros(version)),
        )
        .build()
        .unwrap()
}

fn version_of(m: &Mutation) -> i64 {
    let row = m.rows().values().next().expect("one row");
    row.cells
        .values()
        .next()
        .expect("one cell")
        .timestamp()
        .micros()
}

#[test]
fn reads_never_go_back_past_a_completed_flush() {
    let (pool, source, cache) = common::setup(2 << 20);
    let cache = Arc::new(cache);
    let keys: Vec<DecoratedKey> = (0..KEYS)
        .map(|i| DecoratedKey::from_bytes(format!("k{i}")).unwrap())
        .collect();
    for k in &keys {
        source.apply(&write(k, 1));
    }
    let flushed = Arc::new(AtomicI64::new(1));
    let stop = Arc::new(AtomicBool::new(false));

    let flusher = {
        let (cache, source, flushed, keys) =
            (cache.clone(), source.clone(), flushed.clone(), keys.clone());
        thread::spawn(move || {
            for version in 2..=60 {
                let batch: Vec<Mutation> = keys.iter().map(|k| write(k, version)).collect();
                for m in &batch {
                    source.apply(m);
                }
                cache.update_from(&mut from_mutations(batch)).unwrap();
                flushed.store(version, Ordering::SeqCst);
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|t| {
            let (cache, flushed, stop, keys) =
                (cache.clone(), flushed.clone(), stop.clone(), keys.clone());
            thread::spawn(move || {
                let mut n = 0usize;
                while !stop.load(Ordering::SeqCst) {
                    n += 1;
                    let floor = flushed.load(Ordering::SeqCst);
                    if (n + t).is_multiple_of(5) {
                        let all =
                            common::read(&cache, PartitionRange::full(), ClusteringRange::full());
                        assert_eq!(all.len(), KEYS);
                        for m in &all {
                            assert!(version_of(m) >= floor, "scan went back past {floor}");
                        }
                    } else {
                        let k = &keys[(n * 7 + t) % KEYS];
                        let got = common::read(
                            &cache,
                            PartitionRange::single_key(k.clone()),
                            ClusteringRange::full(),
                        );
                        assert_eq!(got.len(), 1);
                        assert!(version_of(&got[0]) >= floor, "read went back past {floor}");
                    }
                }
                n
            })
        })
        .collect();
    let drainer = {
        let (pool, stop) = (pool.clone(), stop.clone());
        thread::spawn(move || {
            let mut rounds = 0;
            while !stop.load(Ordering::SeqCst) {
                let mut region = Region::new(&pool);
                let mut held = Vec::new();
                // Until the pool is dry: reclaim evicts the cache on the way.
                while let Ok(h) = region.alloc(4000, 8) {
                    held.push(h);
                }
                rounds += 1;
            }
            rounds
        })
    };
    flusher.join().unwrap();
    stop.store(true, Ordering::SeqCst);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert!(drainer.join().unwrap() > 0);
    let stats = cache.stats();
    assert!(
        stats.evictions > 0,
        "the drainer never made the cache evict: {stats:?}"
    );
    cache.check_invariants().unwrap();
    let want: Vec<Mutation> = {
        let mut v: Vec<Mutation> = keys.iter().map(|k| write(k, 60)).collect();
        v.sort_by(|a, b| a.key().cmp(b.key()));
        v
    };
    let got = common::read(&cache, PartitionRange::full(), ClusteringRange::full());
    assert_eq!(
        got.iter().map(version_of).collect::<Vec<_>>(),
        vec![60; KEYS]
    );
    assert_eq!(got.len(), want.len());
}
