//! Test doubles shared by the stress tests.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mutation::{DecoratedKey, Mutation};
use replica_stress::{Target, TargetStats};

/// A test double: tables of reconciled mutations in a map.
#[derive(Default)]
pub(crate) struct MemTarget {
    pub(crate) tables: Mutex<HashMap<String, BTreeMap<DecoratedKey, Mutation>>>,
    pub(crate) applies: AtomicU64,
    /// Every n-th apply fails, when set.
    pub(crate) fail_every: Option<u64>,
    /// What `free_space` reports: bytes available in a data directory
    /// `/mem`, less 1 MiB per apply so far; `None`: no files.
    pub(crate) free_space: Option<u64>,
    /// Flushes asked for.
    pub(crate) flushes: AtomicU64,
}

#[derive(Debug, thiserror::Error)]
#[error("injected failure of apply #{0}")]
pub(crate) struct Injected(pub(crate) u64);

impl Target for MemTarget {
    type Error = Injected;

    fn apply(&self, table: &str, mutation: Mutation) -> Result<(), Injected> {
        let n = self.applies.fetch_add(1, Ordering::Relaxed) + 1;
        if self.fail_every.is_some_and(|k| n.is_multiple_of(k)) {
            return Err(Injected(n));
        }
        let mut tables = self.tables.lock().unwrap();
        let t = tables.entry(table.to_owned()).or_default();
        match t.get_mut(mutation.key()) {
            Some(m) => m.apply(mutation).unwrap(),
            None => {
                t.insert(mutation.key().clone(), mutation);
            }
        }
        Ok(())
    }

    fn read(&self, table: &str, key: &DecoratedKey) -> Result<u64, Injected> {
        let tables = self.tables.lock().unwrap();
        Ok(tables
            .get(table)
            .and_then(|t| t.get(key))
            .map_or(0, |m| m.rows().len() as u64))
    }

    fn flush(&self) -> Result<(), Injected> {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn free_space(&self) -> Option<(std::path::PathBuf, u64)> {
        let used = self.applies.load(Ordering::Relaxed) << 20;
        self.free_space
            .map(|f| (std::path::PathBuf::from("/mem"), f.saturating_sub(used)))
    }

    fn stats(&self) -> TargetStats {
        // Pretend every apply holds 1 KiB of dirty memory.
        let n = self.applies.load(Ordering::Relaxed);
        TargetStats {
            real_dirty: n * 1024,
            peak_real_dirty: 0,
            unspooled_dirty: n * 512,
            dirty_budget: 1 << 30,
            flushes: n / 100,
            flushed_bytes: (n / 100) * 4096,
            writers_blocked: Duration::from_millis(n),
            commitlog_bytes: n * 100,
            commitlog_syncs: n / 10,
            commitlog_synced_entries: n,
            commitlog_lag_waits: 0,
            commitlog_room_waits: Default::default(),
            memtable_pool_bytes: 0,
            memory_pool_limit: 0,
            system_dirty_budget: 0,
            cache_share: 0,
            cache_enabled: true,
            cache_hits: n / 2,
            cache_misses: n / 4,
            compaction: Default::default(),
            write_phases: Default::default(),
        }
    }
}
