//! Opening a database: the directories locked, the catalog loaded and
//! its leftovers cleaned, the memory pool, the flush machinery and the
//! dirty-memory managers started (each shut down again, by drop order, if
//! a later step fails), the tables loaded, and the commit log opened and
//! replayed.

use std::collections::HashMap;

use commitlog::{CommitLog, ReplayPosition, SyncMode, TableId};
use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager};
use flush_scheduler::{FlushScheduler, SchedulerConfig};
use logalloc::{PoolConfig, SegmentPool};

use super::flush::{FlushRouter, Manager};
use super::table::{Table, TableMemtable};
use super::{COMMITLOG_DIR_NAME, memtable_list, sstables, start_error, table};
use super::{Database, gate::Gate, index::TableIndex, read::CacheSource};
use crate::catalog::{Catalog, TableSchema};
use crate::config::{CommitLogMode, DatabaseConfig};
use crate::devices::Devices;
use crate::error::{Error, io_err};
use crate::layout::{
    find_table_data, open_table_dirs_on, orphan_table_dirs_on, remove_orphan_table_dir,
    tables_in_dirs,
};
use crate::lock::DirectoryLock;
use crate::sync::{Arc, Mutex, OnceLock, Weak};

impl Database {
    /// Opens (or creates) the database `config` describes: checks the
    /// configuration, creates and locks its directories, loads the catalog
    /// (or creates it, in directories holding no table data) and every
    /// table's sstables (removing what unfinished flushes and dropped
    /// tables left behind, and only that: see the
    /// [ownership rules](crate#ownership-what-open-removes)), starts the dirty-memory managers (user
    /// and system tables) and the flush scheduler, and replays the commit
    /// log (if configured) into memtables, which it then flushes.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for a bad configuration;
    /// [`Error::DirectoryLocked`] if another open database holds a
    /// directory; [`Error::CatalogMissing`] if the catalog is missing but
    /// the directories hold table data (nothing is changed then: see
    /// [`rebuild_catalog`](Self::rebuild_catalog));
    /// [`Error::ForeignTableDirectory`] if a listed table's directory is
    /// marked as another table's; [`Error::Io`] if a directory cannot be created or is not
    /// writable; [`Error::Corrupt`] or [`Error::Sstable`] for damaged files;
    /// [`Error::Start`] if a background thread cannot start;
    /// [`Error::CommitLog`] if the commit log cannot be opened, or holds
    /// damage and [`DatabaseConfig::commitlog_on_corruption`] is `Stop`
    /// (the default; nothing on disk is changed then). With `Skip`, damage
    /// is skipped and reported in [`replay_report`](Self::replay_report).
    pub fn open(mut config: DatabaseConfig) -> Result<Database, Error> {
        config.validate()?;
        // Every sstable is written on the database's file system.
        config.sstable_writer_options.fs = config.fs.clone();
        let fs = config.fs.clone();
        for dir in config.all_dirs() {
            fs.create_dir_all_durably(dir)
                .map_err(io_err("create directory", dir))?;
        }
        // Tentative: a refused open puts the lock files back as they were.
        let locks = DirectoryLock::acquire_all_tentatively(&fs, config.all_dirs())?;
        // A log the policy refuses refuses the open before anything is
        // removed (leftovers, orphans): read-only, the replay reads it again.
        if config.commitlog != CommitLogMode::Off
            && config.commitlog_on_corruption == crate::CorruptionPolicy::Stop
        {
            commitlog::check_with(&config.commitlog_dir(), &fs).map_err(Error::commit_log)?;
        }
        let catalog = open_catalog(&config)?;
        for orphan in
            orphan_table_dirs_on(&fs, config.all_dirs(), |name| catalog.get(name).is_ok())?
        {
            remove_orphan_table_dir(&fs, &orphan)?;
        }
        // Real dirty memory is held to the budgets by admission; the pool
        // leaves room above them so an admitted write never runs dry. The
        // row caches take that room (their own budget), and give it back
        // through logalloc's eviction when the memtables need more.
        let (pool_limit, cache_bytes) = config.memory_pool();
        // Prefault takes what the user budget and the cache use, not the
        // headroom nor the system tables' few writes
        // (`DatabaseConfig::prefault_memory`).
        let working = config
            .dirty_memory_budget
            .saturating_add(cache_bytes.unwrap_or(0));
        let pool_config = PoolConfig::default()
            .with_memory_limit(pool_limit)
            .with_prefault(config.prefault_memory)
            .with_prefault_bytes(Some(working));
        let pool = SegmentPool::new(pool_config)
            .map_err(|e| start_error("memtable memory pool")(e.to_string()))?;
        // The pool rounds its limit to whole segments.
        let cache_bytes = cache_bytes.map(|b| b.clamp(pool.segment_size(), pool.memory_limit()));
        // One tracker for every table: the share bounds their sum, and
        // eviction takes the least recently used partition of any table.
        let cache_tracker = cache_bytes
            .map(|bytes| row_cache::CacheTracker::new(&pool, Some(bytes)))
            .transpose()
            .map_err(|e| start_error("row cache")(e.to_string()))?;
        // validate() bounds it by MAX_CONCURRENT_FLUSHES.
        let data_writers = config.flush_policy.max_data_writers();
        // Each component with threads is held in a `Started` until the
        // database owns it: an error below drops them, last started
        // first, and each shuts its threads down.
        // One data worker more for the system tables' flushes.
        let scheduler = Started(Some(Arc::new(
            FlushScheduler::new(
                SchedulerConfig::new(config.effective_flush_dirs().iter().cloned())
                    .data_workers(data_writers + 1)
                    .fs(fs.clone()),
            )
            .map_err(|e| start_error("flush scheduler")(e.to_string()))?,
        )));
        let devices = Arc::new(Devices::new(&config.devices)?);
        let router = Arc::new(FlushRouter::new(
            Arc::clone(scheduler.get()),
            config.sstable_writer_options.clone(),
            Arc::clone(&devices),
        ));
        let mut user_config = DirtyMemoryConfig::new("user", config.dirty_memory_budget);
        user_config.soft_limit_ratio = config.soft_limit_ratio;
        user_config.policy = config.flush_policy;
        let mut system_config = DirtyMemoryConfig::system_tables();
        system_config.budget = config.system_dirty_memory_budget;
        let user = Started(Some(
            DirtyMemoryManager::with_subjects(user_config, router.clone())
                .map_err(|e| start_error("user tables' dirty-memory manager")(e.to_string()))?,
        ));
        let system = Started(Some(
            DirtyMemoryManager::with_subjects(system_config, router.clone())
                .map_err(|e| start_error("system tables' dirty-memory manager")(e.to_string()))?,
        ));
        let compaction = Arc::new(sstables::CompactionShared::new(
            &config.compaction,
            config.sstable_writer_options.clone(),
            Arc::clone(&devices),
        )?);
        // The database owns them from here (its drop closes it).
        let (system, user, scheduler) = (
            system.into_inner(),
            user.into_inner(),
            scheduler.into_inner(),
        );
        let schemas: Vec<TableSchema> = catalog.tables().cloned().collect();
        let db = Database {
            config,
            locks: Mutex::new(locks),
            catalog: Mutex::new(catalog),
            tables: Arc::new(TableIndex::default()),
            user: Arc::new(user),
            system: Arc::new(system),
            scheduler,
            router,
            devices,
            pool,
            cache_tracker,
            compaction,
            gate: Gate::new(),
            replay: None,
        };
        // On an error `db` is dropped, which stops its threads.
        for schema in schemas {
            db.load_table(schema)?;
        }
        let mut db = db;
        db.open_commitlog()?;
        for lock in db.locks.lock().iter_mut() {
            lock.confirm();
        }
        Ok(db)
    }

    /// Opens the commit log (if configured), replays it into the tables'
    /// memtables, flushes them, and lets the log retire what was replayed.
    fn open_commitlog(&mut self) -> Result<(), Error> {
        let sync = match self.config.commitlog {
            CommitLogMode::Off => return Ok(()),
            CommitLogMode::Periodic(d) => SyncMode::Periodic(d),
            CommitLogMode::Batch(d) => SyncMode::Batch(d),
        };
        let mut log_config = commitlog::Config::default();
        log_config.sync = sync;
        log_config.write_timeout = self.config.write_timeout;
        log_config.segment_size = self.config.commitlog_segment_size;
        log_config.total_size_limit = self.config.commitlog_size_limit;
        log_config.on_corruption = self.config.commitlog_on_corruption;
        log_config.direct_io = self.config.commitlog_direct_io;
        log_config.periodic_ack = self.config.commitlog_periodic_ack;
        let dir = self.config.commitlog_dir();
        log_config.device = self.devices.for_path(&dir);
        log_config.fs = self.config.fs.clone();
        let tables: HashMap<TableId, Arc<Table>> =
            self.tables.all().into_iter().map(|t| (t.id, t)).collect();
        let mut replayed: HashMap<TableId, ReplayPosition> = HashMap::new();
        let mut failed = None;
        let (log, report) = CommitLog::open(&dir, log_config, |id, m, position| {
            let max = replayed.entry(id).or_default();
            *max = (*max).max(position);
            // Entries of tables no longer in the catalog are dropped data.
            if let (None, Some(table)) = (&failed, tables.get(&id)) {
                let manager = self.manager(table);
                if let Err(e) = table.apply_replayed(manager, &m, self.config.write_timeout) {
                    failed = Some(e);
                }
            }
        })
        .map_err(Error::commit_log)?;
        let log = Arc::new(log);
        self.set_flush_handler(&log);
        if self.router.log.set(Arc::clone(&log)).is_err() {
            unreachable!("the log is opened once, by open");
        }
        if let Some(e) = failed {
            return Err(e);
        }
        if report.entries > 0 {
            let all: Vec<Arc<Table>> = tables.into_values().collect();
            self.flush_tables(&all)?;
            for (id, up_to) in replayed {
                log.discard_completed(id, up_to);
            }
        }
        self.replay = Some(report);
        Ok(())
    }

    /// Serves the log's requests, at its size limit, to flush the tables
    /// that hold its oldest segments: starts the flushes without waiting
    /// (the handler runs on a writer's thread); each flush hands its
    /// memtable's entries back when it commits. A table no longer open
    /// (dropped) needs none of its entries: the log lets them go at once.
    /// An open table's entries are never let go without a flush: one may
    /// be in flight between a writer's append and its apply.
    fn set_flush_handler(&self, log: &CommitLog) {
        // Weakly: the handler lives in the log, which outlives neither.
        let tables = Arc::downgrade(&self.tables);
        let slot = Arc::downgrade(&self.router.log);
        let user = Arc::downgrade(&self.user);
        let system = Arc::downgrade(&self.system);
        log.set_flush_handler(move |requests| {
            for request in requests {
                let Some(index) = tables.upgrade() else {
                    // The database is gone: nothing to flush or let go.
                    return;
                };
                let table = index.by_id(request.table);
                let manager = table.as_ref().and_then(|t| {
                    if t.schema.options().system {
                        system.upgrade()
                    } else {
                        user.upgrade()
                    }
                });
                let open = table.is_some();
                if let (Some(table), Some(manager)) = (table, manager) {
                    // Not waited for: each flush's completion tells the log
                    // what it may retire. A failure to start one is seen
                    // again at the next request.
                    drop(table.request_flushes(&manager));
                }
                if !open {
                    let slot = slot.upgrade();
                    if let Some(log) = slot.as_deref().and_then(OnceLock::get) {
                        log.discard_completed(request.table, request.up_to);
                    }
                }
            }
        });
    }

    /// Rebuilds a lost catalog from the table directories' markers, the
    /// explicit recovery step after [`Error::CatalogMissing`]: each marked
    /// table directory gives its table (name, options and generation, so
    /// its commit-log entries replay), at the highest generation found for
    /// its name; a table-named directory without a marker but with sstable
    /// files (written before markers existed) gives a user table of
    /// generation 0. Nothing is removed. The database must not be open
    /// (the directories are locked while this runs); open it afterwards.
    /// Returns the tables of the new catalog.
    ///
    /// The markers know nothing of drops: a table whose `drop_table` was
    /// cut short by a crash before its files were removed, with no open
    /// since (an open finishes the removal), comes back with its sstables
    /// (its commit-log entries stay refused by the log's drop record).
    ///
    /// ```
    /// use replica::{CommitLogMode, Database, DatabaseConfig, Error, TableSchema};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let mut config = DatabaseConfig::new(dir.path());
    /// config.commitlog = CommitLogMode::Off;
    /// let db = Database::open(config.clone())?;
    /// db.create_table(TableSchema::new("users")?)?;
    /// db.close()?;
    /// drop(db);
    /// std::fs::remove_file(dir.path().join(replica::CATALOG_FILE_NAME))?;
    /// assert!(matches!(Database::open(config.clone()), Err(Error::CatalogMissing { .. })));
    /// let tables = Database::rebuild_catalog(&config)?;
    /// assert_eq!(tables[0].name(), "users");
    /// let db = Database::open(config)?;
    /// assert_eq!(db.tables(), tables);
    /// # db.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for a bad configuration;
    /// [`Error::DirectoryLocked`] if the database is open;
    /// [`Error::CatalogExists`] if there is a catalog (it is left as it
    /// is); [`Error::Corrupt`] for a damaged marker; [`Error::Io`] if a
    /// directory cannot be read or the catalog written.
    pub fn rebuild_catalog(config: &DatabaseConfig) -> Result<Vec<TableSchema>, Error> {
        config.validate()?;
        let fs = &config.fs;
        let mut locks = DirectoryLock::acquire_all_tentatively(fs, config.all_dirs())?;
        let tables = tables_in_dirs(fs, config.all_dirs())?;
        let catalog = Catalog::create_with(fs, &config.data_dirs[0], tables)?;
        locks.iter_mut().for_each(DirectoryLock::confirm);
        Ok(catalog.tables().cloned().collect())
    }

    /// Opens the files of the table `schema` names and adds it.
    pub(super) fn load_table(&self, schema: TableSchema) -> Result<Arc<Table>, Error> {
        let name = schema.name().to_owned();
        let files = open_table_dirs_on(&self.config.fs, &schema, self.config.all_dirs())?;
        // The sets recover half-done compactions and open the sstables.
        let sets = sstables::open_sets(
            &self.config.fs,
            &name,
            files.dirs(),
            self.config.data_dirs.len(),
            &self.devices,
        )?;
        // A table without sstables has nothing the cache could miss: its
        // cache starts continuous (ScyllaDB's `is_continuous::yes` for a
        // new table), so reads of absent keys never open a reader, and
        // every flush from now on goes through `update_cache`.
        let no_sstables = sets.iter().all(|set| set.snapshot().is_empty());
        let group = if schema.options().system {
            Arc::clone(self.system.group())
        } else {
            Arc::clone(self.user.group())
        };
        let memtable =
            memtable::Memtable::new(&group, &self.pool).map_err(|source| Error::Memtable {
                table: name.clone(),
                source,
            })?;
        let memtable = TableMemtable::new(memtable);
        let mut cache_error = None;
        let table = Arc::new_cyclic(|weak: &Weak<Table>| {
            let cache = match &self.cache_tracker {
                Some(tracker) if !schema.options().uncached => {
                    let source = Arc::new(CacheSource {
                        table: weak.clone(),
                    });
                    let config = row_cache::CacheConfig::default().with_continuous(no_sstables);
                    match row_cache::RowCache::with_tracker(tracker, source, config) {
                        Ok(cache) => Some(cache),
                        Err(e) => {
                            cache_error =
                                Some(start_error("row cache")(format!("table {name}: {e}")));
                            None
                        }
                    }
                }
                _ => None,
            };
            Table {
                id: schema.log_id(),
                sstables: sstables::TableSstables::new(
                    &name,
                    sets,
                    weak.clone(),
                    &self.compaction,
                    cache.is_some(),
                ),
                schema,
                list: memtable_list::MemtableList::new(Arc::clone(&memtable)),
                cache,
                group,
                pool: Arc::clone(&self.pool),
                dropped: crate::sync::AtomicBool::new(false),
                counters: table::TableCounters::default(),
                #[cfg(feature = "testing")]
                hooks: self.router.hooks.clone(),
            }
        });
        if let Some(e) = cache_error {
            return Err(e);
        }
        table.attach_flush_subject(&memtable);
        self.tables.insert(Arc::clone(&table));
        table.sstables.submit();
        Ok(table)
    }
}

/// Loads the catalog of `config`'s first data directory, or creates an
/// empty one if it is missing and no directory holds table data.
fn open_catalog(config: &DatabaseConfig) -> Result<Catalog, Error> {
    let dir = &config.data_dirs[0];
    let fs = &config.fs;
    match Catalog::load_on(dir, fs) {
        Err(Error::CatalogMissing { path, .. }) => {
            let commitlog = dir.join(COMMITLOG_DIR_NAME);
            match find_table_data(fs, config.all_dirs(), &commitlog)? {
                Some(found) => Err(Error::CatalogMissing {
                    path,
                    found: Some(found),
                }),
                None => Catalog::create_on(dir, fs),
            }
        }
        other => other,
    }
}

/// A component `open` started, shut down when dropped unless the database
/// took it ([`into_inner`](Started::into_inner)): on an error in `open`,
/// drop order (the last started first) unwinds what was started.
struct Started<T: ShutDown>(Option<T>);

/// What [`Started`] shuts down.
trait ShutDown {
    fn shut_down(&self);
}

impl ShutDown for Arc<FlushScheduler> {
    fn shut_down(&self) {
        // Nothing was submitted yet: no job to hand back.
        drop(self.shutdown());
    }
}

impl ShutDown for Manager {
    fn shut_down(&self) {
        self.shutdown();
    }
}

impl<T: ShutDown> Started<T> {
    fn get(&self) -> &T {
        self.0.as_ref().expect("held until taken")
    }

    /// The component, no longer shut down by this guard.
    fn into_inner(mut self) -> T {
        self.0.take().expect("held until taken")
    }
}

impl<T: ShutDown> Drop for Started<T> {
    fn drop(&mut self) {
        if let Some(component) = &self.0 {
            component.shut_down();
        }
    }
}
