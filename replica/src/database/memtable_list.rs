//! A table's memtables: the active one and the sealed ones being flushed,
//! swapped under one lock, and the order in which a read takes them and the
//! table's sstables so that it sees every row.
//!
//! The list is generic over the memtable `M` and the sstable set so the
//! loom models (`loom_tests.rs`) run this very code with small stand-ins;
//! the `Database` uses it with `memtable::Memtable` and the table's
//! compaction sets (`TableSstables`).
//!
//! The protocol the flush, the writers and the readers follow:
//!
//! 1. A flush first [`replace_active`](MemtableList::replace_active)s the
//!    memtable it flushes with a fresh one, *then* seals the old one. A
//!    writer that still holds the old memtable either applies before the
//!    seal (and the flush stream, which starts after the seal, carries its
//!    write) or is refused as sealed and finds the fresh memtable already
//!    active ([`with_active`](MemtableList::with_active) retries): no write
//!    is lost and no writer spins.
//! 2. Once its sstable is committed, the flush adds it to the table's
//!    sstable set, *then* (with a row cache, after the cache took the
//!    memtable's data) [`retire`](MemtableList::retire)s the memtable.
//! 3. A read takes the list's memtables, *then* pins the set
//!    ([`read_sources`](MemtableList::read_sources)): a memtable missing
//!    from its snapshot was retired, so its sstable was in the set before
//!    the pin. The read sees the memtable, the sstable or both (reconciled
//!    by the merging reader), never neither. Either order reversed loses
//!    the row for a reader between the flush's two steps (the loom models
//!    show both).

use commitlog::{ReplayPosition, ReplayPositionSet};

use crate::sync::{Arc, Mutex, RwLock, Weak};

/// A memtable as the list's flush protocol needs it: something to seal.
pub(crate) trait Seal {
    /// Refuses further writes (they fail as sealed from now on).
    fn seal(&self);
}

impl Seal for memtable::Memtable {
    fn seal(&self) {
        memtable::Memtable::seal(self);
    }
}

/// A memtable with the commit-log entries applied to it.
///
/// Each entry a writer appended pins its log segment until it is handed
/// back: by the flush of the memtable the write was applied to (its whole
/// [`ReplayPositionSet`], once the sstable is committed:
/// [`take_positions`](Self::take_positions)), or by the writer itself if
/// the write reached no memtable, or reached one whose set was already
/// handed back. Nothing is assumed about the order in which entries reach
/// memtables: a writer that took the old memtable before a flush installed
/// the new one may append after writers of the new one (issue 18's lost
/// write came from assuming otherwise).
#[derive(Debug)]
pub(crate) struct Logged<M> {
    memtable: Arc<M>,
    /// The entries applied to the memtable; `None` once a committed flush
    /// handed them to the log.
    positions: Mutex<Option<ReplayPositionSet>>,
}

impl<M> Logged<M> {
    pub(crate) fn new(memtable: Arc<M>) -> Arc<Self> {
        Arc::new(Logged {
            memtable,
            positions: Mutex::new(Some(ReplayPositionSet::new())),
        })
    }

    /// The memtable itself (what its readers and its flush hold).
    pub(crate) fn memtable(&self) -> &Arc<M> {
        &self.memtable
    }

    /// Applies a write through `apply`; once it succeeded (so before any
    /// seal: the memtable's flush carries the write), records its log
    /// entry at `position`. Returns whether the caller must hand the entry
    /// back itself: the memtable's flush already handed its entries back,
    /// and the write, applied before the seal, is in that flush's sstable.
    pub(crate) fn apply_recorded<E>(
        &self,
        position: Option<ReplayPosition>,
        apply: impl FnOnce(&M) -> Result<(), E>,
    ) -> Result<bool, E> {
        apply(&self.memtable)?;
        let Some(position) = position else {
            return Ok(false);
        };
        Ok(match &mut *self.positions.lock() {
            Some(set) => {
                set.insert(position);
                false
            }
            None => true,
        })
    }

    /// The entries the memtable holds, for its committed flush to hand to
    /// the log; from now on [`apply_recorded`](Self::apply_recorded)
    /// leaves entries to their writers.
    pub(crate) fn take_positions(&self) -> ReplayPositionSet {
        self.positions.lock().take().unwrap_or_default()
    }
}

impl<M> std::ops::Deref for Logged<M> {
    type Target = M;

    fn deref(&self) -> &M {
        &self.memtable
    }
}

impl<M: Seal> Seal for Logged<M> {
    fn seal(&self) {
        self.memtable.seal();
    }
}

/// What a writer's attempt on the active memtable came to.
#[derive(Debug)]
pub(crate) enum Attempt<E> {
    /// The memtable was sealed under the writer: try the new active one.
    Sealed,
    /// A failure to report.
    Failed(E),
}

/// A table's sstables as a read pins them (`TableSstables` in the
/// database, a stand-in in the loom models).
pub(crate) trait SstableSet {
    /// What a read holds: the sstables as they were when pinned.
    type Pinned;

    /// The sstables as they are now, pinned for a read.
    fn pin(&self) -> Self::Pinned;
}

/// A read's sources, taken in the order that keeps every row visible (see
/// [`MemtableList::read_sources`]).
#[derive(Debug)]
pub(crate) struct ReadSources<M, P> {
    /// The active memtable first, then the sealed ones, oldest first.
    pub(crate) memtables: Vec<Arc<M>>,
    /// The table's sstables, pinned after the memtables were taken.
    pub(crate) pinned: P,
}

#[derive(Debug)]
struct State<M> {
    active: Arc<M>,
    sealed: Vec<Arc<M>>,
}

/// The active memtable and the sealed ones of one table.
#[derive(Debug)]
pub(crate) struct MemtableList<M> {
    state: RwLock<State<M>>,
}

impl<M> MemtableList<M> {
    /// A list with `active` taking writes.
    pub(crate) fn new(active: Arc<M>) -> Self {
        MemtableList {
            state: RwLock::new(State {
                active,
                sealed: Vec::new(),
            }),
        }
    }

    /// The memtable taking writes.
    pub(crate) fn active(&self) -> Arc<M> {
        Arc::clone(&self.state.read().active)
    }

    /// Whether `memtable` is the active one.
    pub(crate) fn is_active(&self, memtable: &Arc<M>) -> bool {
        Arc::ptr_eq(&self.state.read().active, memtable)
    }

    /// Runs `attempt` on the active memtable until it does not report the
    /// memtable sealed. Each retry finds a newer memtable, since a flush
    /// installs the fresh one before it seals the old one.
    ///
    /// The attempt holds the memtable weakly: a writer that waits (for the
    /// commit log, for dirty memory) never keeps a flushed memtable's
    /// memory alive. A memtable gone by the time the attempt upgrades it
    /// was flushed, and the attempt reports it sealed.
    pub(crate) fn with_active<T, E>(
        &self,
        mut attempt: impl FnMut(Weak<M>) -> Result<T, Attempt<E>>,
    ) -> Result<T, E> {
        loop {
            let memtable = Arc::downgrade(&self.active());
            match attempt(memtable) {
                Ok(value) => return Ok(value),
                Err(Attempt::Sealed) => continue,
                Err(Attempt::Failed(e)) => return Err(e),
            }
        }
    }

    /// Makes `fresh` the active memtable in place of `old`, which joins the
    /// sealed ones (the caller seals it next). Gives `fresh` back if `old`
    /// is not the active memtable.
    pub(crate) fn replace_active(&self, old: &Arc<M>, fresh: Arc<M>) -> Result<(), Arc<M>> {
        let mut state = self.state.write();
        if !Arc::ptr_eq(&state.active, old) {
            return Err(fresh);
        }
        let old = std::mem::replace(&mut state.active, fresh);
        state.sealed.push(old);
        Ok(())
    }

    /// The first step of a flush of `memtable`: if it is the active one,
    /// installs `fresh()` in its place, calls `installed`, then seals it.
    /// Returns a fresh
    /// memtable that `fresh` made but that was not installed (the caller
    /// discards it); an error of `fresh` leaves everything as it was, the
    /// memtable unsealed.
    pub(crate) fn begin_flush<E>(
        &self,
        memtable: &Arc<M>,
        fresh: impl FnOnce() -> Result<Arc<M>, E>,
        installed: impl FnOnce(),
    ) -> Result<Option<Arc<M>>, E>
    where
        M: Seal,
    {
        let mut unused = None;
        if self.is_active(memtable)
            && let Err(fresh) = self.replace_active(memtable, fresh()?)
        {
            unused = Some(fresh);
        }
        installed();
        memtable.seal();
        Ok(unused)
    }

    /// The last step of a flush of the sealed `memtable`: removes it from
    /// the list, once its sstable (if it held anything) is in the table's
    /// set. Returns false, changing nothing, if `memtable` is not a sealed
    /// memtable of this list.
    pub(crate) fn retire(&self, memtable: &Arc<M>) -> bool {
        let mut state = self.state.write();
        let Some(i) = state.sealed.iter().position(|m| Arc::ptr_eq(m, memtable)) else {
            return false;
        };
        state.sealed.remove(i);
        true
    }

    /// Every memtable, as one consistent snapshot: the active one first,
    /// then the sealed ones, oldest first.
    pub(crate) fn memtables(&self) -> Vec<Arc<M>> {
        let state = self.state.read();
        let mut memtables = Vec::with_capacity(1 + state.sealed.len());
        memtables.push(Arc::clone(&state.active));
        memtables.extend(state.sealed.iter().cloned());
        memtables
    }

    /// A read's sources: the memtables, *then* `set` pinned (see the
    /// module docs: the other order misses a row whose memtable was
    /// retired between the pin and the snapshot).
    pub(crate) fn read_sources<T: SstableSet>(&self, set: &T) -> ReadSources<M, T::Pinned> {
        let memtables = self.memtables();
        ReadSources {
            memtables,
            pinned: set.pin(),
        }
    }

    /// How many memtables (active and sealed) the list holds.
    pub(crate) fn count(&self) -> usize {
        1 + self.state.read().sealed.len()
    }
}
