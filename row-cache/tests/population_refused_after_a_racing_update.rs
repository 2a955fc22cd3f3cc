//! The population-phase race, made deterministic: a read opens the source
//! (an old snapshot), then a flush commits newer data and updates the
//! cache, then the read finishes. Its population is refused, so the next
//! read sees the flushed data instead of the stale snapshot.

mod common;

use std::sync::{Arc, Mutex, Weak};

use mutation::{
    Cell, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange, Timestamp,
    from_mutations,
};
use row_cache::{CacheConfig, RowCache, UnderlyingSource};

type Hook = Box<dyn FnOnce() + Send>;

/// A source that runs a hook right after opening its first reader.
struct Racing {
    inner: common::MemorySource,
    hook: Mutex<Option<Hook>>,
}

impl UnderlyingSource for Racing {
    fn make_reader(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error> {
        let reader = self.inner.make_reader(range, slice)?;
        let hook = self.hook.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        Ok(reader)
    }
}

fn write(value: &str, ts: i64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes("k").unwrap())
        .cell(
            "r",
            0,
            Cell::live(value.as_bytes().to_vec(), Timestamp::from_micros(ts)),
        )
        .build()
        .unwrap()
}

#[test]
fn a_population_older_than_an_update_is_refused() {
    let pool = common::pool(8 << 20);
    let source = Arc::new(Racing {
        inner: common::MemorySource::new(),
        hook: Mutex::new(None),
    });
    let old = write("old", 1);
    let new = write("new", 2);
    source.inner.apply(&old);
    let cache = Arc::new(RowCache::new(&pool, source.clone(), CacheConfig::default()).unwrap());
    // The hook is the flush that races the first read.
    let weak: Weak<RowCache> = Arc::downgrade(&cache);
    let (flush_source, flushed) = (source.clone(), new.clone());
    *source.hook.lock().unwrap() = Some(Box::new(move || {
        let cache = weak.upgrade().unwrap();
        flush_source.inner.apply(&flushed);
        cache.update_from(&mut from_mutations([flushed])).unwrap();
    }));
    let key = PartitionRange::single_key(old.key().clone());
    // The racing read returns its snapshot (the replica merges the
    // memtable it raced with)...
    assert_eq!(
        common::read(&cache, key.clone(), ClusteringRange::full()),
        std::slice::from_ref(&old)
    );
    let stats = cache.stats();
    assert_eq!(stats.population_refusals, 1, "{stats:?}");
    assert_eq!(stats.partitions, 0);
    // ...but did not cache it: the next read reads (and caches) the new data.
    let merged = old.merge(new).unwrap();
    assert_eq!(
        common::read(&cache, key.clone(), ClusteringRange::full()),
        std::slice::from_ref(&merged)
    );
    assert_eq!(common::read(&cache, key, ClusteringRange::full()), [merged]);
    assert_eq!(cache.stats().hits, 1);
    cache.check_invariants().unwrap();
}
