//! The two engines behind one trait: the replica through its public API
//! (`Database::apply`, `Database::get`), fjall through its keyspace API.
//! A partition of the replica is one partition key with its rows; in
//! fjall it is one key (one row) or one key per row under the partition's
//! prefix, read back with a prefix scan (fjall has no rows).

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::{CacheSize, CommitLogMode, Database, DatabaseConfig, TableSchema};
use serde_json::{Value, json};

use super::data::{ValueBook, partition_key, row_key};
use super::{EngineKind, Result, Shape};

/// The table (replica) or keyspace (fjall) of the bench.
const TABLE: &str = "t";

/// What a checked read found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadCheck {
    /// Every row, every byte as written.
    Good,
    /// Something else: what.
    Bad(String),
}

/// One engine, opened in a directory.
pub(crate) trait Engine: Sync {
    /// Writes every row of `partition` (one mutation, or one batch).
    fn write(&self, partition: u64, shape: Shape, values: &ValueBook) -> Result<()>;
    /// Reads `partition` and checks every row's value.
    fn read(&self, partition: u64, shape: Shape, values: &ValueBook) -> Result<ReadCheck>;
    /// Flushes what the memtables hold and compacts everything into one
    /// run (a settled load).
    fn settle(&self) -> Result<()>;
    /// How often the bench makes the log durable itself (fjall's journal,
    /// as the replica's periodic commit log does on its own), if at all.
    fn sync_period(&self) -> Option<Duration>;
    /// Makes the log durable (fjall: the journal's fdatasync).
    fn sync(&self) -> Result<()>;
    /// The engine's own figures (the replica's cache), as JSON.
    fn figures(&self) -> Value;
    /// Closes the engine, everything written durable.
    fn close(self: Box<Self>) -> Result<()>;
}

/// Opens `kind` in `dir` with the dirty `budget` and `cache` bytes; with
/// `log` the replica's commit log is periodic (the default) and fjall's
/// journal is synced at the same period, else neither is synced (the
/// load, whose data is flushed before it ends).
pub(crate) fn open(
    kind: EngineKind,
    dir: &Path,
    budget: u64,
    cache: u64,
    log: bool,
) -> Result<Box<dyn Engine>> {
    std::fs::create_dir_all(dir)?;
    let period = match CommitLogMode::default() {
        CommitLogMode::Periodic(p) => p,
        _ => replica::DEFAULT_COMMITLOG_SYNC_PERIOD,
    };
    Ok(match kind {
        EngineKind::Replica => {
            let mut config = DatabaseConfig::new(dir);
            config.dirty_memory_budget = usize::try_from(budget)?;
            config.cache_size = CacheSize::Bytes(usize::try_from(cache)?);
            config.commitlog = if log {
                CommitLogMode::Periodic(period)
            } else {
                CommitLogMode::Off
            };
            let db = Database::open(config)?;
            match db.create_table(TableSchema::new(TABLE)?) {
                Ok(()) | Err(replica::Error::TableExists { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            Box::new(ReplicaEngine { db })
        }
        EngineKind::Fjall => {
            let db = fjall::Database::builder(dir).cache_size(cache).open()?;
            // fjall bounds each memtable, not their sum: a quarter of the
            // budget each, the active one and up to three sealed ones
            // before it halts writers, is the budget.
            let memtable = (budget / 4).max(1 << 20);
            let keyspace = db.keyspace(TABLE, || {
                fjall::KeyspaceCreateOptions::default().max_memtable_size(memtable)
            })?;
            Box::new(FjallEngine {
                db,
                keyspace,
                period: log.then_some(period),
            })
        }
    })
}

struct ReplicaEngine {
    db: Database,
}

fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_micros() as i64)
}

impl Engine for ReplicaEngine {
    fn write(&self, partition: u64, shape: Shape, values: &ValueBook) -> Result<()> {
        let key = DecoratedKey::from_bytes(Bytes::copy_from_slice(&partition_key(partition)))?;
        let ts = Timestamp::from_micros(now_micros());
        let mut builder = Mutation::builder(key);
        for row in 0..shape.rows {
            builder = builder.cell(
                Bytes::copy_from_slice(&row_key(row)),
                0,
                Cell::live(values.value(partition, row), ts),
            );
        }
        self.db.apply(TABLE, &builder.build()?)?;
        Ok(())
    }

    fn read(&self, partition: u64, shape: Shape, values: &ValueBook) -> Result<ReadCheck> {
        let key = DecoratedKey::from_bytes(Bytes::copy_from_slice(&partition_key(partition)))?;
        let Some(m) = self.db.get(TABLE, &key, ClusteringRange::full())? else {
            return Ok(ReadCheck::Bad(format!("partition {partition} not found")));
        };
        if m.rows().len() != usize::from(shape.rows) {
            return Ok(ReadCheck::Bad(format!(
                "partition {partition}: {} rows, not {}",
                m.rows().len(),
                shape.rows
            )));
        }
        for (i, (ck, row)) in m.rows().iter().enumerate() {
            let r = i as u16;
            let good = ck.as_bytes() == row_key(r)
                && matches!(row.cells.get(&0), Some(Cell::Live { value, .. })
                    if values.matches(partition, r, value));
            if !good {
                return Ok(ReadCheck::Bad(format!(
                    "partition {partition}: row {i} is not the value written"
                )));
            }
        }
        Ok(ReadCheck::Good)
    }

    fn settle(&self) -> Result<()> {
        self.db.flush_all()?;
        self.db.compact(TABLE)?;
        Ok(())
    }

    fn sync_period(&self) -> Option<Duration> {
        None
    }

    fn sync(&self) -> Result<()> {
        Ok(())
    }

    fn figures(&self) -> Value {
        let m = self.db.metrics();
        let share = self
            .db
            .config()
            .cache_size
            .pool_and_cache(
                self.db
                    .config()
                    .dirty_memory_budget
                    .saturating_add(self.db.config().system_dirty_memory_budget),
            )
            .1
            .unwrap_or(0);
        json!({
            "cache": {
                "hits": m.cache.hits,
                "misses": m.cache.misses,
                "populations": m.cache.populations,
                "evictions": m.cache.evictions,
                "partitions": m.cache.partitions,
                "bytes": m.cache.bytes,
                "region_bytes": m.cache.region_bytes,
                "share": share,
            },
            "sstables": m.sstables(),
            // Reads of the sstables and the sstables they consulted.
            "sstable_reads": m.tables.iter().map(|t| t.compaction.reads).sum::<u64>(),
            "sstables_consulted": m
                .tables
                .iter()
                .map(|t| t.compaction.sstables_consulted)
                .sum::<u64>(),
            "pool_limit": m.pool_limit,
        })
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()?;
        Ok(())
    }
}

struct FjallEngine {
    db: fjall::Database,
    keyspace: fjall::Keyspace,
    period: Option<Duration>,
}

/// fjall's key of `row` of `partition`: the partition alone for one-row
/// partitions (a plain get), else the partition then the row.
fn fjall_key(partition: u64, row: u16, shape: Shape) -> Vec<u8> {
    let mut k = partition_key(partition).to_vec();
    if shape.rows > 1 {
        k.extend_from_slice(&row_key(row));
    }
    k
}

impl Engine for FjallEngine {
    fn write(&self, partition: u64, shape: Shape, values: &ValueBook) -> Result<()> {
        if shape.rows == 1 {
            self.keyspace
                .insert(fjall_key(partition, 0, shape), values.value(partition, 0))?;
        } else {
            let mut batch = self.db.batch();
            for row in 0..shape.rows {
                batch.insert(
                    &self.keyspace,
                    fjall_key(partition, row, shape),
                    values.value(partition, row),
                );
            }
            batch.commit()?;
        }
        Ok(())
    }

    fn read(&self, partition: u64, shape: Shape, values: &ValueBook) -> Result<ReadCheck> {
        if shape.rows == 1 {
            return Ok(match self.keyspace.get(fjall_key(partition, 0, shape))? {
                Some(v) if values.matches(partition, 0, &v) => ReadCheck::Good,
                Some(_) => ReadCheck::Bad(format!("partition {partition}: not the value written")),
                None => ReadCheck::Bad(format!("partition {partition} not found")),
            });
        }
        let mut rows = 0u16;
        for guard in self.keyspace.prefix(partition_key(partition)) {
            let (k, v) = guard.into_inner()?;
            if rows >= shape.rows
                || *k != *fjall_key(partition, rows, shape)
                || !values.matches(partition, rows, &v)
            {
                return Ok(ReadCheck::Bad(format!(
                    "partition {partition}: row {rows} is not the value written"
                )));
            }
            rows += 1;
        }
        Ok(if rows == shape.rows {
            ReadCheck::Good
        } else {
            ReadCheck::Bad(format!(
                "partition {partition}: {rows} rows, not {}",
                shape.rows
            ))
        })
    }

    fn settle(&self) -> Result<()> {
        // fjall's own test helpers (public, hidden from its docs): seal the
        // memtable and wait for its flush, then one major compaction.
        self.keyspace.rotate_memtable_and_wait()?;
        while self.db.outstanding_flushes() > 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.keyspace.major_compact()?;
        self.db.persist(fjall::PersistMode::SyncAll)?;
        Ok(())
    }

    fn sync_period(&self) -> Option<Duration> {
        self.period
    }

    fn sync(&self) -> Result<()> {
        self.db.persist(fjall::PersistMode::SyncData)?;
        Ok(())
    }

    fn figures(&self) -> Value {
        let m = self.keyspace.metrics();
        json!({
            // Block loads (data, index and filter blocks) and those the
            // block cache answered; data blocks read from the files.
            "block_cache": {
                "data_loads": m.data_block_load_count(),
                "data_cached": m.data_block_load_cached_count(),
                "loads": m.block_loads(),
                "cached": m.block_load_cached_count(),
                "data_block_io": m.data_block_io(),
            },
            "tables": self.keyspace.table_count(),
            "cache_bytes": self.db.cache_size(),
            "cache_capacity": self.db.cache_capacity(),
        })
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.persist(fjall::PersistMode::SyncAll)?;
        Ok(())
    }
}
