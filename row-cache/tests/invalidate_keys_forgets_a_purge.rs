//! What compaction's purge needs of the cache: once a job's outputs have
//! replaced its inputs (the source no longer holds a purged tombstone),
//! `invalidate_keys` drops the cached copies of the keys the job purged in
//! and makes their neighbourhoods discontinuous, so the next read answers
//! what the source holds; other keys stay cached; and a population that
//! read the source before the invalidation (the tombstone still there) is
//! refused, so it cannot bring the tombstone back.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use mutation::{
    Cell, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange, Timestamp,
    Tombstone, from_mutations,
};
use row_cache::{CacheConfig, RowCache, UnderlyingSource};

type Hook = Box<dyn FnOnce() + Send>;

/// Partitions by key; a reader reads the snapshot taken when it opened.
/// `purge` removes a partition, as a compaction's swap drops a partition
/// whose tombstone and data were both purged. A hook runs right after the
/// next reader opens.
#[derive(Default)]
struct Compacted {
    data: Mutex<BTreeMap<DecoratedKey, Mutation>>,
    hook: Mutex<Option<Hook>>,
    readers: AtomicUsize,
}

impl Compacted {
    fn put(&self, m: Mutation) {
        self.data.lock().unwrap().insert(m.key().clone(), m);
    }

    fn purge(&self, key: &DecoratedKey) {
        self.data.lock().unwrap().remove(key);
    }

    fn readers(&self) -> usize {
        self.readers.load(Ordering::Relaxed)
    }
}

impl UnderlyingSource for Compacted {
    fn make_reader(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error> {
        self.readers.fetch_add(1, Ordering::Relaxed);
        let snapshot: Vec<Mutation> = self
            .data
            .lock()
            .unwrap()
            .values()
            .filter(|m| range.contains(m.key()))
            .map(|m| common::restrict(m, &slice))
            .collect();
        let hook = self.hook.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        Ok(Box::new(from_mutations(snapshot)))
    }
}

fn key(s: &str) -> DecoratedKey {
    DecoratedKey::from_bytes(s.to_owned()).unwrap()
}

fn live(k: &str) -> Mutation {
    Mutation::builder(key(k))
        .cell("r", 0, Cell::live("v", Timestamp::from_micros(1)))
        .build()
        .unwrap()
}

/// What is left of a partition whose row was deleted (the shadowed cell
/// reconciled away): its row tombstone, which compaction may purge.
fn deleted(k: &str) -> Mutation {
    Mutation::builder(key(k))
        .row_tombstone("r", Tombstone::new(Timestamp::from_micros(5), 100))
        .build()
        .unwrap()
}

fn read(cache: &RowCache, k: &str) -> Vec<Mutation> {
    common::read(
        cache,
        PartitionRange::single_key(key(k)),
        ClusteringRange::full(),
    )
}

#[test]
fn invalidated_keys_read_the_source_and_the_rest_stays_cached() {
    let pool = common::pool(8 << 20);
    let source = Arc::new(Compacted::default());
    for k in ["a", "b", "c"] {
        source.put(live(k));
    }
    source.put(deleted("victim"));
    let cache = RowCache::new(&pool, source.clone(), CacheConfig::default()).unwrap();
    // A full scan caches everything and makes the ring continuous.
    let all = common::read(&cache, PartitionRange::full(), ClusteringRange::full());
    assert_eq!(all.len(), 4);
    assert_eq!(read(&cache, "victim"), [deleted("victim")]);

    // The compaction's swap, then the invalidation.
    source.purge(&key("victim"));
    cache.invalidate_keys(&[key("victim"), key("absent")]);
    assert_eq!(cache.stats().partitions, 3);
    let readers = source.readers();
    assert!(
        read(&cache, "victim").is_empty(),
        "the purged tombstone came from the cache"
    );
    assert_eq!(
        source.readers(),
        readers + 1,
        "the invalidated key read the source"
    );
    // The read made the key's neighbourhood known again.
    let one = PartitionRange::single_key(key("victim"));
    assert!(
        cache
            .make_reader_opt(one, ClusteringRange::full())
            .is_none()
    );
    // The other keys are still served from the cache.
    for k in ["a", "b", "c"] {
        assert_eq!(read(&cache, k), [live(k)]);
    }
    assert_eq!(source.readers(), readers + 1);
    cache.check_invariants().unwrap();
}

#[test]
fn a_population_that_read_the_inputs_is_refused() {
    let pool = common::pool(8 << 20);
    let source = Arc::new(Compacted::default());
    source.put(deleted("victim"));
    let cache = Arc::new(RowCache::new(&pool, source.clone(), CacheConfig::default()).unwrap());
    // The first read opens the source (the tombstone still there); the
    // compaction swaps and invalidates before the read populates.
    let weak: Weak<RowCache> = Arc::downgrade(&cache);
    let purging = Arc::clone(&source);
    *source.hook.lock().unwrap() = Some(Box::new(move || {
        purging.purge(&key("victim"));
        weak.upgrade().unwrap().invalidate_keys(&[key("victim")]);
    }));
    // The racing read answers from its snapshot (a moment before the
    // purge)...
    assert_eq!(read(&cache, "victim"), [deleted("victim")]);
    let stats = cache.stats();
    assert_eq!(
        (stats.population_refusals, stats.partitions),
        (1, 0),
        "{stats:?}"
    );
    // ...and did not cache it: from now on the tombstone is gone.
    assert!(read(&cache, "victim").is_empty());
    assert!(read(&cache, "victim").is_empty());
    cache.check_invariants().unwrap();
}
