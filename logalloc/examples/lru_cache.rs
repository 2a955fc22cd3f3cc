//! A logalloc-backed LRU cache with an eviction hook.
//!
//! The cache keeps its values in one logalloc region and its index (key to
//! handle, plus recency order) on the heap. The region is made evictable:
//! when the pool runs dry, logalloc's reclaim calls the cache's eviction
//! function, which frees the least recently used entries and tells the
//! cache's hook about each one. So the cache never holds more than the
//! pool's memory limit, and nobody has to count bytes by hand.
//!
//! Run with `cargo run --example lru_cache -p replmem-logalloc`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use logalloc::{Eviction, Handle, PoolConfig, Region, SegmentPool};

/// The heap side of the cache: where each key's value lives and how
/// recently it was used. Shared with the eviction function, which runs
/// inside reclaim.
#[derive(Debug, Default)]
struct Index {
    /// Key to (value handle, recency stamp).
    entries: HashMap<String, (Handle, u64)>,
    /// Recency stamp to key, oldest first.
    order: BTreeMap<u64, String>,
    /// The next recency stamp.
    clock: u64,
    /// Keys the eviction function dropped, oldest first (the "hook": a
    /// real cache would call a user callback here).
    evicted: Vec<String>,
}

impl Index {
    /// Marks `key` as just used.
    fn touch(&mut self, key: &str) {
        let stamp = self.clock;
        self.clock += 1;
        if let Some((_, old)) = self.entries.get_mut(key) {
            self.order.remove(old);
            *old = stamp;
            self.order.insert(stamp, key.to_string());
        }
    }
}

/// An LRU cache of byte strings whose values live in a logalloc region.
struct LruCache {
    region: Region,
    index: Arc<Mutex<Index>>,
}

/// Locks the index; a panic elsewhere cannot leave it half-changed (every
/// change is a few map operations), so a poisoned lock is still usable.
fn lock(index: &Mutex<Index>) -> MutexGuard<'_, Index> {
    index
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl LruCache {
    /// A cache in `pool`, evicting its least recently used entries when
    /// the pool needs memory; `on_evict` is told each evicted key.
    fn new(pool: &Arc<SegmentPool>, on_evict: impl Fn(&str) + Send + Sync + 'static) -> Self {
        let mut region = Region::new(pool);
        let index: Arc<Mutex<Index>> = Arc::default();
        let in_hook = Arc::clone(&index);
        // Reclaim calls this with the region locked: it may only touch the
        // region through the `Evictor`, and must not wait for a lock held
        // around region operations (`put` never holds the index lock while
        // it allocates, so taking it here cannot deadlock).
        region.set_eviction_fn(move |evictor| {
            let mut index = lock(&in_hook);
            // Free a few entries per call; reclaim calls again if that was
            // not enough.
            for _ in 0..8 {
                let Some((_, key)) = index.order.pop_first() else {
                    return Eviction::Nothing;
                };
                if let Some((handle, _)) = index.entries.remove(&key)
                    && evictor.free(handle).is_ok()
                {
                    on_evict(&key);
                    index.evicted.push(key);
                }
            }
            Eviction::Evicted
        });
        LruCache { region, index }
    }

    /// Inserts or replaces `key`. Allocating may evict older entries.
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), logalloc::Error> {
        // Allocate first, without the index lock: reclaim may run the
        // eviction function right here, on this thread.
        let handle = self.region.alloc_bytes(value)?;
        let replaced = {
            let mut index = lock(&self.index);
            let stamp = index.clock;
            index.clock += 1;
            index.order.insert(stamp, key.to_string());
            let old = index.entries.insert(key.to_string(), (handle, stamp));
            if let Some((_, old_stamp)) = old {
                index.order.remove(&old_stamp);
            }
            old.map(|(h, _)| h)
        };
        if let Some(old) = replaced {
            self.region.free(old)?;
        }
        Ok(())
    }

    /// The value of `key`, marking it as recently used; `None` on a miss.
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        let handle = {
            let mut index = lock(&self.index);
            let (handle, _) = *index.entries.get(key)?;
            index.touch(key);
            handle
        };
        // The handle stays valid however often compaction moved the value.
        self.region.get(handle).ok().map(|bytes| bytes.to_vec())
    }

    /// How many entries the cache holds.
    fn len(&self) -> usize {
        lock(&self.index).entries.len()
    }

    /// The keys evicted so far, oldest first.
    fn evicted(&self) -> Vec<String> {
        lock(&self.index).evicted.clone()
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A deliberately small pool: 16 segments of 16 KiB (256 KiB), one kept
    // back for compaction.
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(16 << 10)
            .with_memory_limit(16 * (16 << 10))
            .with_emergency_reserve(1),
    )?;
    let hook_calls = Arc::new(Mutex::new(0usize));
    let counter = Arc::clone(&hook_calls);
    let mut cache = LruCache::new(&pool, move |_key| {
        *counter.lock().unwrap_or_else(|p| p.into_inner()) += 1;
    });

    // 1,000 values of 1 KiB: four times what the pool holds.
    let value = |i: usize| vec![(i % 251) as u8; 1024];
    for i in 0..1000 {
        cache.put(&format!("key-{i:04}"), &value(i))?;
        // Keep key-0000 hot: it is read after every insert, so it is never
        // the least recently used entry.
        if i % 10 == 0 {
            assert_eq!(cache.get("key-0000"), Some(value(0)));
        }
    }

    let evicted = cache.evicted();
    let stats = pool.stats();
    println!(
        "inserted 1000 values of 1 KiB into a {} KiB pool",
        pool.memory_limit() >> 10
    );
    println!(
        "the cache holds {} entries; the eviction hook ran {} times ({} KiB evicted)",
        cache.len(),
        *hook_calls.lock().unwrap_or_else(|p| p.into_inner()),
        stats.bytes_evicted >> 10,
    );
    println!(
        "oldest evicted: {:?}; newest evicted: {:?}",
        evicted.first(),
        evicted.last()
    );

    // What the example shows, checked:
    assert_eq!(
        cache.len() + evicted.len(),
        1000,
        "every key is either cached or evicted"
    );
    assert!(!evicted.is_empty(), "a full pool evicts");
    assert_eq!(
        evicted[0], "key-0001",
        "the least recently used entry goes first"
    );
    assert!(
        !evicted.contains(&"key-0000".to_string()),
        "a hot key survives"
    );
    assert_eq!(
        cache.get("key-0999"),
        Some(value(999)),
        "the newest value is cached"
    );
    assert_eq!(cache.get("key-0001"), None, "an evicted key misses");
    assert_eq!(stats.bytes_evicted, evicted.len() as u64 * 1024);
    cache.region.check_invariants()?;
    println!("key-0000 (hot) and key-0999 (newest) are still cached; key-0001 was evicted first");
    Ok(())
}
