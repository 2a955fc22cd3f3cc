//! The figures of a table and of its row cache.

use std::time::Duration;

use row_cache::CacheStats;

use crate::database::phases::WritePhases;
use crate::database::sstables::TableCompactionMetrics;
use crate::database::table::Table;
use crate::sync::Ordering;

/// A row cache's figures (of one table, or summed over the tables).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheMetrics {
    /// Partitions (and known-empty answers) served from the cache.
    pub hits: u64,
    /// Partitions or gaps read through to the sstables.
    pub misses: u64,
    /// Reads whose result entered the cache.
    pub populations: u64,
    /// Partitions evicted (by the pool's reclaim or the cache share, which
    /// take the least recently used partitions of every table's cache).
    pub evictions: u64,
    /// Flushed partitions merged into cached ones or inserted.
    pub updated_partitions: u64,
    /// Of those, partitions inserted by adopting the flushed memtable's
    /// objects where they lay (the update by region merge): nothing copied.
    pub adopted_partitions: u64,
    /// Cache updates at flush that failed (the cache dropped what it
    /// missed; the flush itself succeeded).
    pub update_failures: u64,
    /// Bytes of encoded partitions cached now.
    pub bytes: u64,
    /// Memory the caches' region holds now (segment bytes). Every table's
    /// cache is in the one region of the database's cache tracker, so a
    /// table's figure is the region's, the same for every table; the
    /// database's total counts it once.
    pub region_bytes: u64,
    /// Partitions cached now.
    pub partitions: u64,
}

impl CacheMetrics {
    fn from_stats(s: &CacheStats, update_failures: u64) -> Self {
        CacheMetrics {
            hits: s.hits,
            misses: s.misses,
            populations: s.populations,
            evictions: s.evictions,
            updated_partitions: s.update_merged + s.update_inserted,
            adopted_partitions: s.update_adopted,
            update_failures,
            bytes: s.stored_bytes as u64,
            region_bytes: s.region.footprint_bytes() as u64,
            partitions: s.partitions as u64,
        }
    }

    /// `hits / (hits + misses)`, or 0 before any read.
    pub fn hit_ratio(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }

    /// `self` plus `other`, field by field (`region_bytes` too: for the
    /// caches of one database, which share one region, take the region's
    /// figure once instead, as
    /// [`Database::cache_metrics`](crate::Database::cache_metrics) does).
    pub fn sum(&self, other: &CacheMetrics) -> CacheMetrics {
        CacheMetrics {
            hits: self.hits + other.hits,
            misses: self.misses + other.misses,
            populations: self.populations + other.populations,
            evictions: self.evictions + other.evictions,
            updated_partitions: self.updated_partitions + other.updated_partitions,
            adopted_partitions: self.adopted_partitions + other.adopted_partitions,
            update_failures: self.update_failures + other.update_failures,
            bytes: self.bytes + other.bytes,
            region_bytes: self.region_bytes + other.region_bytes,
            partitions: self.partitions + other.partitions,
        }
    }
}

/// Figures of one table, from [`Database::metrics`](crate::Database::metrics).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableMetrics {
    /// The table's name.
    pub name: String,
    /// Memtables: the active one and the sealed ones being flushed.
    pub memtables: usize,
    /// Sstables.
    pub sstables: usize,
    /// Real dirty memory: what the table's memtables hold (segment bytes).
    pub real_dirty: usize,
    /// Unspooled dirty memory: real dirty minus what flushes in progress
    /// have written out.
    pub unspooled_dirty: usize,
    /// Writes applied.
    pub writes: u64,
    /// Flushes completed.
    pub flushes: u64,
    /// Memtable memory those flushes wrote out (their sizes, summed).
    pub flushed_memtable_bytes: u64,
    /// Sstable bytes those flushes wrote (Data and Index, after compression).
    pub sstable_bytes_written: u64,
    /// Time writes to this table spent waiting for dirty memory, summed
    /// over writers.
    pub writers_blocked: Duration,
    /// Where the table's writes spent their time, phase by phase.
    pub write_phases: WritePhases,
    /// The table's row cache, `None` if it has none.
    pub cache: Option<CacheMetrics>,
    /// Compaction: live bytes, jobs, sstables replaced and written, user
    /// bytes, sstables consulted per read.
    pub compaction: TableCompactionMetrics,
}

impl Table {
    /// The table's cache figures, `None` without a cache.
    pub(crate) fn cache_metrics(&self) -> Option<CacheMetrics> {
        self.cache.as_ref().map(|cache| {
            CacheMetrics::from_stats(
                &cache.stats(),
                self.counters.cache_update_failures.load(Ordering::Relaxed),
            )
        })
    }

    /// The table's figures.
    pub(crate) fn metrics(&self) -> TableMetrics {
        let memtables = self.list.memtables();
        let mut real = 0;
        let mut spooled = 0;
        for m in &memtables {
            let id = m.region_id();
            real += self.group.region_size(id).map_or(0, |(size, _)| size);
            spooled += self.group.region_spooled(id).unwrap_or(0);
        }
        let c = &self.counters;
        TableMetrics {
            name: self.name().to_owned(),
            memtables: memtables.len(),
            sstables: self.sstables.count(),
            real_dirty: real,
            unspooled_dirty: real.saturating_sub(spooled),
            writes: c.writes.load(Ordering::Relaxed),
            flushes: c.flushes.load(Ordering::Relaxed),
            flushed_memtable_bytes: c.flushed_memtable_bytes.load(Ordering::Relaxed),
            sstable_bytes_written: c.sstable_bytes_written.load(Ordering::Relaxed),
            writers_blocked: Duration::from_nanos(c.blocked_nanos.load(Ordering::Relaxed)),
            write_phases: c.phases.get(),
            cache: self.cache_metrics(),
            compaction: self.sstables.metrics(),
        }
    }
}
