//! One open table: its memtable list over its sstables, its counters, and
//! how a write reaches the active memtable. Its read path is `read.rs`,
//! its figures `metrics.rs`, the flush's hand-off to its cache
//! `cache_update.rs`.

use std::fmt;
use std::time::{Duration, Instant};

use commitlog::{CommitLog, ReplayPosition, ReplayPositionSet, TableId};

use dirty_memory::FlushCompletion;
use logalloc::SegmentPool;
use memtable::Memtable;
use mutation::{Mutation, limits};
use row_cache::RowCache;

use crate::catalog::TableSchema;
use crate::database::flush::{FlushSubject, Manager, MemtableGroup};
use crate::database::memtable_list::{Attempt, Logged, MemtableList};
use crate::database::phases::PhaseCounters;
use crate::database::sstables::TableSstables;
use crate::error::Error;
use crate::sync::{Arc, AtomicBool, AtomicU64, Ordering, Weak};

/// A memtable of a table, with the commit-log entries it holds.
pub(crate) type TableMemtable = Logged<Memtable>;

/// A table's counters (statistics only: they order nothing).
#[derive(Debug, Default)]
pub(crate) struct TableCounters {
    pub(crate) writes: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) flushed_memtable_bytes: AtomicU64,
    pub(crate) sstable_bytes_written: AtomicU64,
    pub(crate) blocked_nanos: AtomicU64,
    /// Cache updates at flush that failed (the cache dropped what it
    /// missed; the flush succeeded).
    pub(crate) cache_update_failures: AtomicU64,
    /// Where writes spent their time.
    pub(crate) phases: PhaseCounters,
}

/// One open table.
pub(crate) struct Table {
    pub(crate) schema: TableSchema,
    /// The table's id in the commit log.
    pub(crate) id: TableId,
    /// The memtables.
    pub(crate) list: MemtableList<TableMemtable>,
    /// The table's sstables, one compacted set per directory.
    pub(crate) sstables: TableSstables,
    /// The row cache in front of the sstables (`None`: off for the
    /// database or the table); in the memtables' pool, outside the
    /// dirty-memory group.
    pub(crate) cache: Option<RowCache>,
    /// The region group of the dirty-memory manager its memtables join.
    pub(crate) group: Arc<MemtableGroup>,
    pub(crate) pool: Arc<SegmentPool>,
    pub(crate) dropped: AtomicBool,
    pub(crate) counters: TableCounters,
    #[cfg(feature = "testing")]
    pub(crate) hooks: crate::hooks::Hooks,
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.schema.name())
            .field("memtables", &self.list.count())
            .finish_non_exhaustive()
    }
}

impl Table {
    /// The table's name.
    pub(crate) fn name(&self) -> &str {
        self.schema.name()
    }

    /// A new, empty memtable in the table's group, whose flushes carry it
    /// and the table.
    pub(crate) fn new_memtable(self: &Arc<Self>) -> Result<Arc<TableMemtable>, Error> {
        let memtable =
            Memtable::new(&self.group, &self.pool).map_err(|source| Error::Memtable {
                table: self.name().to_owned(),
                source,
            })?;
        let memtable = Logged::new(memtable);
        self.attach_flush_subject(&memtable);
        Ok(memtable)
    }

    /// Attaches the table and `memtable` to the memtable's region, for its
    /// flushes to carry ([`FlushSubject`]).
    pub(crate) fn attach_flush_subject(self: &Arc<Self>, memtable: &Arc<TableMemtable>) {
        let subject = FlushSubject {
            table: Arc::downgrade(self),
            memtable: Arc::downgrade(memtable),
        };
        // The memtable's region was created in the group: it is there.
        let attached = self
            .group
            .set_region_owner(memtable.region_id(), Arc::new(subject));
        debug_assert!(attached, "a new memtable's region reports to its group");
    }

    /// Appends `m` to the commit log (if there is one), then applies it to
    /// the active memtable once `manager` admits the write (waiting at
    /// most `timeout` at the hard limit). A write that raced a flush's seal
    /// goes to the new active memtable, with the same log entry.
    ///
    /// The log append comes before the admission wait so that writers
    /// share its syncs (group commit) instead of taking turns; a write
    /// that then fails (times out, the database closes) hands its entry
    /// back to the log at once. It is still in the log, and may come back
    /// at replay, as a timed-out write may in Cassandra.
    ///
    /// `m` was checked ([`limits::check`]) by the caller, which measured it
    /// once: the log frames it by the encoded length measured, the
    /// table's counters take the size bound.
    pub(crate) fn apply(
        &self,
        manager: &Manager,
        m: limits::Checked<'_>,
        timeout: Duration,
        log: Option<&CommitLog>,
    ) -> Result<(), Error> {
        let entered = Instant::now();
        let logged = match log {
            Some(log) => {
                let added = log.add(self.id, m);
                self.counters.phases.log_append.record(entered.elapsed());
                Some((log, added.map_err(Error::commit_log)?))
            }
            None => None,
        };
        self.apply_to_memtable(
            manager,
            m.mutation(),
            m.size_bound(),
            logged,
            entered,
            timeout,
        )
    }

    /// Applies `m`, read back from the commit log at open, as
    /// [`apply`](Self::apply) applies a write, without appending it to the
    /// log again (the replayed entry stays where it is until the flush after
    /// replay) and without the size check (it passed one when it was
    /// written).
    pub(crate) fn apply_replayed(
        &self,
        manager: &Manager,
        m: &Mutation,
        timeout: Duration,
    ) -> Result<(), Error> {
        let size_bound = limits::size_bound(m);
        self.apply_to_memtable(manager, m, size_bound, None, Instant::now(), timeout)
    }

    /// The part of a write after its log append (`logged`: the log and the
    /// entry's position, if there is a log): admission, the apply to the
    /// active memtable (again to the new one if a flush sealed it), the
    /// entry handed back if no memtable keeps it, the counters.
    fn apply_to_memtable(
        &self,
        manager: &Manager,
        m: &Mutation,
        size_bound: usize,
        logged: Option<(&CommitLog, ReplayPosition)>,
        entered: Instant,
        timeout: Duration,
    ) -> Result<(), Error> {
        let guard = EntryGuard {
            log: logged.map(|(log, _)| log),
            table: self.id,
            position: logged.map(|(_, p)| p),
        };
        let position = guard.position;
        let mut blocked = Duration::ZERO;
        let result = self.list.with_active(|memtable| {
            // `memtable` is weak: waiting below keeps no flushed memtable
            // alive.
            #[cfg(feature = "testing")]
            self.hooks.fire(crate::hooks::HookPoint::WriterTookActive);
            let asked = Instant::now();
            let admitted = manager.run_when_memory_available(
                || self.apply_admitted(&memtable, position, m, entered, asked),
                Some(timeout),
            );
            self.attempt_outcome(admitted, timeout, &mut blocked)
        });
        self.write_done(result, blocked, guard, size_bound)
    }

    /// The end of a write, for `apply` and `apply_async` alike: the time
    /// it waited for memory counted; its log entry handed back (by the
    /// guard) unless the memtable it reached keeps it (`Ok(false)`: the
    /// memtable's flush hands it back); the write counted if it succeeded.
    fn write_done(
        &self,
        result: Result<bool, Error>,
        blocked: Duration,
        mut guard: EntryGuard<'_>,
        size_bound: usize,
    ) -> Result<(), Error> {
        let nanos = u64::try_from(blocked.as_nanos()).unwrap_or(u64::MAX);
        self.counters
            .blocked_nanos
            .fetch_add(nanos, Ordering::Relaxed);
        if matches!(result, Ok(false)) {
            guard.position = None;
        }
        drop(guard);
        if result.is_ok() {
            self.counters.writes.fetch_add(1, Ordering::Relaxed);
            // The user bytes write amplification divides by.
            self.sstables.note_write(size_bound);
        }
        result.map(drop)
    }

    /// The asynchronous form of [`apply`](Self::apply): the same log
    /// append, admission and apply, waiting for the log's sync and for
    /// dirty memory as futures. The entry is appended at the first poll.
    ///
    /// Cancel-safe: the write reaches a memtable inside one poll, which
    /// then completes the future, so a future dropped unfinished never
    /// applied its write; the entry it appended (if it got that far) is
    /// handed back to the log by the drop (see [`EntryGuard`]).
    pub(crate) async fn apply_async(
        &self,
        manager: &Manager,
        checked: limits::Checked<'_>,
        timeout: Duration,
        log: Option<&CommitLog>,
    ) -> Result<(), Error> {
        let entered = Instant::now();
        let m = checked.mutation();
        let size_bound = checked.size_bound();
        let mut guard = EntryGuard {
            log,
            table: self.id,
            position: None,
        };
        if let Some(log) = log {
            let added = log.add_async(self.id, checked);
            let durable = match added {
                Ok(durable) => durable,
                Err(source) => {
                    self.counters.phases.log_append.record(entered.elapsed());
                    return Err(Error::commit_log(source));
                }
            };
            guard.position = Some(durable.position());
            let synced = durable.await;
            self.counters.phases.log_append.record(entered.elapsed());
            synced.map_err(Error::commit_log)?;
        }
        let position = guard.position;
        let mut blocked = Duration::ZERO;
        let result = loop {
            // `memtable` is weak: waiting below keeps no flushed memtable
            // alive.
            let memtable = Arc::downgrade(&self.list.active());
            #[cfg(feature = "testing")]
            self.hooks.fire(crate::hooks::HookPoint::WriterTookActive);
            let asked = Instant::now();
            let admitted = manager
                .run_when_memory_available_async(
                    || self.apply_admitted(&memtable, position, m, entered, asked),
                    Some(timeout),
                )
                .await;
            // From here to the end no await: a write that reached a
            // memtable completes this poll.
            let attempt = self.attempt_outcome(admitted, timeout, &mut blocked);
            match attempt {
                Ok(already_flushed) => break Ok(already_flushed),
                Err(Attempt::Sealed) => continue,
                Err(Attempt::Failed(e)) => break Err(e),
            }
        };
        self.write_done(result, blocked, guard, size_bound)
    }

    /// The apply of an admitted write to `memtable` (if it is still
    /// there), for `apply` and `apply_async` alike: records the wait for
    /// admission (since `asked`) and the apply's own time, and returns the
    /// time since the write `entered` with the apply's outcome.
    fn apply_admitted(
        &self,
        memtable: &Weak<TableMemtable>,
        position: Option<ReplayPosition>,
        m: &Mutation,
        entered: Instant,
        asked: Instant,
    ) -> (Duration, Option<Result<bool, memtable::Error>>) {
        let admitted = Instant::now();
        self.counters.phases.admission.record(admitted - asked);
        let applied = memtable
            .upgrade()
            .map(|memtable| memtable.apply_recorded(position, |mt| mt.apply(m)));
        self.counters
            .phases
            .memtable_apply
            .record(admitted.elapsed());
        (entered.elapsed(), applied)
    }

    /// What one admitted attempt on a memtable came to, for `apply` and
    /// `apply_async` alike: `Ok(true)` if the write reached a memtable whose
    /// flush had already handed its log entries back; sealed (try the new
    /// active memtable); or the error to report. Records the time waited.
    fn attempt_outcome(
        &self,
        admitted: Result<(Duration, Option<Result<bool, memtable::Error>>), dirty_memory::Error>,
        timeout: Duration,
        blocked: &mut Duration,
    ) -> Result<bool, Attempt<Error>> {
        match admitted {
            Ok((waited, applied)) => {
                *blocked = waited;
                match applied {
                    Some(Ok(already_flushed)) => Ok(already_flushed),
                    // Flushed and freed while this writer waited.
                    None => Err(Attempt::Sealed),
                    Some(Err(memtable::Error::Sealed { .. })) => Err(Attempt::Sealed),
                    Some(Err(source)) => Err(Attempt::Failed(Error::Memtable {
                        table: self.name().to_owned(),
                        source,
                    })),
                }
            }
            Err(dirty_memory::Error::Admission {
                source: region_group::Error::Shutdown { .. },
                ..
            }) => Err(Attempt::Failed(Error::Closed { operation: "apply" })),
            Err(source) => Err(Attempt::Failed(Error::WriteTimeout {
                table: self.name().to_owned(),
                timeout,
                source,
            })),
        }
    }

    /// Asks `manager` to flush each memtable of the table that holds data
    /// (or is sealed, being flushed already), and returns the completions
    /// to wait for: the one place that knows which memtables a flush of the
    /// table covers.
    ///
    /// # Errors
    /// [`Error::Flush`] if the manager refuses a request (it is shutting
    /// down); a memtable flushed and gone since the snapshot is skipped.
    pub(crate) fn request_flushes(&self, manager: &Manager) -> Result<Vec<FlushCompletion>, Error> {
        let mut completions = Vec::new();
        for memtable in self.list.memtables() {
            if memtable.is_empty() && !memtable.is_sealed() {
                continue;
            }
            match manager.request_flush(memtable.region_id()) {
                Ok(completion) => completions.push(completion),
                Err(dirty_memory::Error::UnknownRegion { .. }) => {}
                Err(source) => {
                    return Err(Error::Flush {
                        table: self.name().to_owned(),
                        source,
                    });
                }
            }
        }
        Ok(completions)
    }
}

/// A write's log entry between its append and its apply: handed back to
/// the log ([`CommitLog::discard_flushed`]) when the guard goes, unless the
/// write reached a memtable that keeps it (`position` cleared); both
/// write paths end through [`Table::write_done`]. It is also the async
/// path's cancel-safety: a future dropped between its append and its apply
/// drops the guard too.
struct EntryGuard<'a> {
    log: Option<&'a CommitLog>,
    table: TableId,
    position: Option<commitlog::ReplayPosition>,
}

impl Drop for EntryGuard<'_> {
    fn drop(&mut self) {
        if let (Some(log), Some(p)) = (self.log, self.position.take()) {
            log.discard_flushed(self.table, &ReplayPositionSet::from(p));
        }
    }
}
