//! A table's read sources: the active memtable, the sealed memtables being
//! flushed, and the sstables, swapped under one lock so that a reader's
//! snapshot holds every row exactly once.
//!
//! The list is generic over the memtable `M` and sstable `S` types so the
//! loom models (`loom_tests.rs`) run this very code with small stand-ins;
//! the `Database` uses it with `memtable::Memtable` and its open sstables.
//!
//! The protocol the flush and the writers follow:
//!
//! 1. A flush first [`replace_active`](MemtableList::replace_active)s the
//!    memtable it flushes with a fresh one, *then* seals the old one. A
//!    writer that still holds the old memtable either applies before the
//!    seal (and the flush stream, which starts after the seal, carries its
//!    write) or is refused as sealed and finds the fresh memtable already
//!    active ([`with_active`](MemtableList::with_active) retries): no write
//!    is lost and no writer spins.
//! 2. When the sstable is committed, [`commit`](MemtableList::commit) adds
//!    it and removes the memtable in one step under the write lock; a
//!    reader's [`sources`](MemtableList::sources) snapshot, taken under the
//!    read lock, holds either the memtable or the sstable, never both and
//!    never neither. With compaction wired in, a table's sstables live in
//!    its compaction sets instead: a flush adds its sstable to the set, then
//!    (with a row cache, after the cache took the memtable's data)
//!    `commit(memtable, None)` removes the memtable; a reader takes the
//!    list's sources, then pins the sets, so it sees the memtable, the
//!    sstable or both (reconciled by the merging reader), never neither.

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

/// A snapshot of a table's sources.
#[derive(Debug)]
pub(crate) struct Sources<M, S> {
    /// The active memtable first, then the sealed ones, oldest first.
    pub(crate) memtables: Vec<Arc<M>>,
    /// The sstables, oldest first.
    #[allow(
        dead_code,
        reason = "the database keeps its sstables in compaction sets; only the loom models' tests read these"
    )]
    pub(crate) sstables: Vec<Arc<S>>,
}

#[derive(Debug)]
struct State<M, S> {
    active: Arc<M>,
    sealed: Vec<Arc<M>>,
    sstables: Vec<Arc<S>>,
}

/// The active memtable, the sealed ones and the sstables of one table.
#[derive(Debug)]
pub(crate) struct MemtableList<M, S> {
    state: RwLock<State<M, S>>,
}

impl<M, S> MemtableList<M, S> {
    /// A list with `active` taking writes, over `sstables`.
    pub(crate) fn new(active: Arc<M>, sstables: Vec<Arc<S>>) -> Self {
        MemtableList {
            state: RwLock::new(State {
                active,
                sealed: Vec::new(),
                sstables,
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

    /// Removes the sealed `memtable` and adds `sstable` (the memtable's
    /// data; `None` for a memtable that held nothing) in one step. Returns
    /// false, changing nothing, if `memtable` is not a sealed memtable of
    /// this list.
    pub(crate) fn commit(&self, memtable: &Arc<M>, sstable: Option<Arc<S>>) -> bool {
        let mut state = self.state.write();
        let Some(i) = state.sealed.iter().position(|m| Arc::ptr_eq(m, memtable)) else {
            return false;
        };
        state.sealed.remove(i);
        state.sstables.extend(sstable);
        true
    }

    /// Every source, as one consistent snapshot.
    pub(crate) fn sources(&self) -> Sources<M, S> {
        let state = self.state.read();
        let mut memtables = Vec::with_capacity(1 + state.sealed.len());
        memtables.push(Arc::clone(&state.active));
        memtables.extend(state.sealed.iter().cloned());
        Sources {
            memtables,
            sstables: state.sstables.clone(),
        }
    }

    /// How many memtables (active and sealed) and sstables the list holds.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let state = self.state.read();
        (1 + state.sealed.len(), state.sstables.len())
    }
}
