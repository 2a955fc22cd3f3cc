//! The database as `replica-stress` drives it: [`Target`] for
//! [`Database`], and the [`TargetFactory`] that opens one per run.

use std::future::Future;
use std::pin::Pin;

use mutation::{ClusteringRange, DecoratedKey, Mutation};

use replica::{Database, DatabaseMetrics, TableCompactionMetrics, TableSchema};

use crate::error::Error;
use crate::{
    CompactionFigures, FlushPolicyChoice, LogRoomWaits, RunConfig, RunDirs, StressOptions, Target,
    TargetFactory, TargetStats, strategy_name, table_name,
};

impl Target for Database {
    type Error = replica::Error;

    fn apply(&self, table: &str, mutation: Mutation) -> Result<(), replica::Error> {
        Database::apply(self, table, &mutation)
    }

    fn apply_async<'a>(
        &'a self,
        table: &'a str,
        mutation: Mutation,
    ) -> Pin<Box<dyn Future<Output = Result<(), replica::Error>> + 'a>> {
        Box::pin(Database::apply_async(self, table, mutation))
    }

    fn read(&self, table: &str, key: &DecoratedKey) -> Result<u64, replica::Error> {
        Ok(self
            .get(table, key, ClusteringRange::full())?
            .map_or(0, |m| m.rows().len() as u64))
    }

    fn flush(&self) -> Result<(), replica::Error> {
        self.flush_all()
    }

    fn free_space(&self) -> Option<(std::path::PathBuf, u64)> {
        self.config()
            .data_dirs
            .iter()
            .filter_map(|d| Some((d.clone(), fs4::available_space(d).ok()?)))
            .min_by_key(|(_, free)| *free)
    }

    fn stats(&self) -> TargetStats {
        let m = self.user_metrics();
        let log = self.commitlog_stats();
        let cache = self.cache_metrics();
        // The whole database's figures (the compaction figures are sums
        // over the tables), the memtable pool's among them.
        let metrics = self.metrics();
        // The pool as the configuration sizes it (`CacheSize::pool_and_cache`).
        let config = self.config();
        let (pool_limit, cache_share) = config.cache_size.pool_and_cache(
            config
                .dirty_memory_budget
                .saturating_add(config.system_dirty_memory_budget),
        );
        TargetStats {
            real_dirty: m.real_dirty as u64,
            unspooled_dirty: m.unspooled_dirty as u64,
            peak_real_dirty: m.peak_real_dirty as u64,
            dirty_budget: m.budget as u64,
            flushes: m.flushes_completed,
            flushed_bytes: m.bytes_flushed,
            writers_blocked: m.time_blocked,
            commitlog_bytes: log.map_or(0, |l| l.bytes),
            commitlog_syncs: log.map_or(0, |l| l.syncs),
            commitlog_synced_entries: log.map_or(0, |l| l.synced_entries),
            commitlog_lag_waits: log.map_or(0, |l| l.sync_lag_waits),
            commitlog_room_waits: log.map_or_else(Default::default, |l| LogRoomWaits {
                budget: l.budget_waits,
                rotation: l.rotation_waits,
                size_limit: l.size_limit_waits,
                time: std::time::Duration::from_micros(l.room_wait_micros),
            }),
            memtable_pool_bytes: metrics.pool_system_bytes as u64,
            memory_pool_limit: pool_limit as u64,
            system_dirty_budget: config.system_dirty_memory_budget as u64,
            cache_share: cache_share.unwrap_or(0) as u64,
            cache_enabled: cache.is_some(),
            cache_hits: cache.as_ref().map_or(0, |c| c.hits),
            cache_misses: cache.as_ref().map_or(0, |c| c.misses),
            compaction: compaction_figures(self, &metrics),
            write_phases: self.write_phases(),
        }
    }

    fn devices(&self) -> Vec<replica::device::DeviceStats> {
        self.device_stats()
    }
}

/// Compaction's figures for the reports, from `db`'s `metrics`.
fn compaction_figures(db: &Database, m: &DatabaseMetrics) -> CompactionFigures {
    let sum = |f: fn(&TableCompactionMetrics) -> u64| -> u64 {
        m.tables.iter().map(|t| f(&t.compaction)).sum()
    };
    CompactionFigures {
        strategy: strategy_name(&db.config().compaction.strategy),
        sstables: m.sstables() as u64,
        live_bytes: sum(|c| c.live_sstable_bytes),
        jobs: m.compaction.jobs_completed,
        pending_jobs: m.compaction.pending_jobs + m.compaction.running_jobs,
        bytes_read: m.compaction.bytes_read,
        bytes_written: m.compaction.bytes_written,
        flush_bytes: m.sstable_bytes_written,
        user_bytes: sum(|c| c.user_bytes),
        peak_temporary_bytes: m.compaction.peak_temporary_bytes,
        reads: sum(|c| c.reads),
        sstables_consulted: sum(|c| c.sstables_consulted),
        sorted_runs: sum(|c| c.sorted_runs as u64),
        flushes_throttled: sum(|c| c.flushes_throttled),
        flush_throttle_wait_ms: sum(|c| {
            u64::try_from(c.flush_throttle_wait.as_millis()).unwrap_or(u64::MAX)
        }),
    }
}

/// Opens a [`Database`] for each run of `replica-stress`, in the
/// directories the options give (a temporary one, removed after the run,
/// by default), with the load's tables created.
#[derive(Debug)]
pub struct DatabaseFactory<'a> {
    options: &'a StressOptions,
    dirs: Option<RunDirs>,
}

impl<'a> DatabaseFactory<'a> {
    /// A factory for the runs `options` describe.
    pub fn new(options: &'a StressOptions) -> Self {
        DatabaseFactory {
            options,
            dirs: None,
        }
    }
}

impl TargetFactory for DatabaseFactory<'_> {
    type Target = Database;

    fn open(&mut self, policy: FlushPolicyChoice, config: &RunConfig) -> Result<Database, Error> {
        let dirs = RunDirs::prepare(self.options, policy)?;
        // A second signal exits without waiting for the close: the
        // handler removes the directory itself.
        let interrupt = &self.options.interrupt;
        if let Some(t) = dirs.temporary() {
            interrupt.add_temporary_dir(t);
        }
        match open_tables(&dirs, self.options, policy, config) {
            Ok(db) => {
                self.dirs = Some(dirs);
                Ok(db)
            }
            Err(e) => {
                forget(interrupt, dirs);
                Err(e)
            }
        }
    }

    fn opening(&self, _: FlushPolicyChoice) -> Option<String> {
        self.options.prefault.then(|| {
            format!(
                "Opening the database: taking and touching the memtable pool's memory \
                 (the {} dirty budget and the row cache's share; --prefault off skips this)...",
                crate::units::format_bytes(self.options.budget_or_machine())
            )
        })
    }

    fn close(&mut self, target: Database) -> Result<(), Error> {
        let closed = target.close();
        drop(target);
        if let Some(dirs) = self.dirs.take() {
            forget(&self.options.interrupt, dirs);
        }
        closed.map_err(Error::from)
    }
}

/// Opens the database of the run of `policy` in `dirs`, with the load's
/// tables.
fn open_tables(
    dirs: &RunDirs,
    options: &StressOptions,
    policy: FlushPolicyChoice,
    config: &RunConfig,
) -> Result<Database, Error> {
    let db = Database::open(dirs.database_config(options, policy)?)?;
    for i in 0..config.workload.tables {
        match db.create_table(TableSchema::new(table_name(i))?) {
            // Given directories may hold the tables of an earlier run.
            Ok(()) | Err(replica::Error::TableExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(db)
}

/// Drops `dirs` (which removes a temporary directory), then takes it off
/// the interrupt's list.
fn forget(interrupt: &crate::Interrupt, dirs: RunDirs) {
    let temporary = dirs.temporary().map(std::path::Path::to_path_buf);
    drop(dirs);
    if let Some(t) = temporary {
        interrupt.forget_temporary_dir(&t);
    }
}
