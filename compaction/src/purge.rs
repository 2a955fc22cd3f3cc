//! Tombstone purge: which tombstones (and expired TTL cells) a job may
//! drop, and the filter that drops them from the merged stream.
//!
//! A tombstone is dropped only when both hold:
//! * it is older than `gc_grace`: its local deletion time is before
//!   `now - gc_grace` (an expired TTL cell or marker counts as a tombstone
//!   written at its write time, `expiry - ttl`, as Cassandra converts it);
//! * its timestamp is below the key's *max purgeable timestamp*: the
//!   smallest minimum timestamp of every source outside the job that may
//!   hold the key (sstables outside the job, by key range and bloom
//!   filter; the owner's memtables through [`MaxPurgeable`]). Anything it
//!   could shadow outside the job is then newer, so dropping it revives
//!   nothing; inside the job, the merge has already removed what it
//!   shadows.
//!
//! An expired TTL cell first becomes a tombstone: when it may not be
//! dropped yet, it is rewritten as a cell tombstone with the cell's
//! timestamp and a local deletion time of `expiry - ttl` (its write time),
//! as Cassandra's `AbstractCell::purge` (`BufferCell.tombstone(...,
//! localDeletionTime() - ttl(), ...)`) and ScyllaDB's `compact_and_expire`
//! (`atomic_cell::make_dead(timestamp, deletion_time())`, where a live
//! expiring cell's `deletion_time()` is `expiry - ttl`) do; the value's
//! bytes go. It is then purged by the tombstone rules above. The rewrite
//! happens only when the cell's timestamp is below the key's max purgeable
//! timestamp: no source outside the job can then hold a cell of the same
//! timestamp, the one case where a tombstone (which beats a live cell of
//! equal timestamp) and an expired cell (which loses to an equal-timestamp
//! expiring cell with a later expiry) reconcile differently. Otherwise the
//! expired cell stays as it is; reads treat it as dead either way. An
//! expired row marker has no tombstone form and stays until it may be
//! dropped.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mutation::{Cell, DecoratedKey, Fragment, Row, Timestamp, Tombstone};

use crate::sync::{Ordering, PlainAtomicU64};

/// The owner's part of the max purgeable timestamp: the smallest write
/// timestamp its memtables (and anything else that is not an sstable of
/// the set) may hold for a key. Called for each partition a job would
/// purge something in, *before* the sstables outside the job are checked
/// in the set's current version, so data moving from a memtable into a
/// flushed sstable is seen in one or the other, provided the owner adds a
/// flushed sstable to the set before it stops reporting its memtable.
pub trait MaxPurgeable: Send + Sync {
    /// Tombstones for `key` with a timestamp strictly below the result may
    /// be dropped as far as this source is concerned; `Timestamp::MAX`
    /// when it holds nothing for `key`.
    fn max_purgeable(&self, key: &DecoratedKey) -> Timestamp;
}

/// No source outside the sstable set (a table without memtables).
#[derive(Debug, Clone, Copy, Default)]
pub struct NothingOutside;

impl MaxPurgeable for NothingOutside {
    fn max_purgeable(&self, _key: &DecoratedKey) -> Timestamp {
        Timestamp::MAX
    }
}

/// Wall-clock seconds, injectable for tests.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Seconds since the Unix epoch (the unit of deletion times and TTL
    /// expiries).
    fn now_seconds(&self) -> u32;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_seconds(&self) -> u32 {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs();
        u32::try_from(secs).unwrap_or(u32::MAX)
    }
}

/// A clock that moves only when told to, for tests.
#[derive(Debug, Default)]
pub struct ManualClock {
    seconds: PlainAtomicU64,
}

impl ManualClock {
    /// A clock at `seconds`.
    pub fn new(seconds: u32) -> Self {
        ManualClock {
            seconds: PlainAtomicU64::new(u64::from(seconds)),
        }
    }

    /// Sets the time.
    pub fn set(&self, seconds: u32) {
        self.seconds.store(u64::from(seconds), Ordering::Relaxed);
    }

    /// Moves the time forward.
    pub fn advance(&self, seconds: u32) {
        self.seconds
            .fetch_add(u64::from(seconds), Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now_seconds(&self) -> u32 {
        u32::try_from(self.seconds.load(Ordering::Relaxed)).unwrap_or(u32::MAX)
    }
}

/// What the filter dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PurgeCounts {
    /// Partition tombstones dropped.
    pub partition_tombstones: u64,
    /// Range tombstone changes dropped (or turned into an end).
    pub range_tombstones: u64,
    /// Row tombstones dropped.
    pub row_tombstones: u64,
    /// Cell tombstones dropped.
    pub cell_tombstones: u64,
    /// Expired TTL cells and markers dropped.
    pub expired: u64,
    /// Expired TTL cells rewritten as cell tombstones (not dropped yet).
    pub expired_to_tombstones: u64,
}

/// Drops purgeable tombstones from a reconciled stream, one partition at
/// a time; a partition left empty disappears.
pub(crate) struct Purger<'a> {
    now: u32,
    gc_before: u32,
    /// Max purgeable timestamp of the current key, computed on first need.
    lookup: &'a mut dyn FnMut(&DecoratedKey) -> Timestamp,
    key: Option<DecoratedKey>,
    max_purgeable: Option<Timestamp>,
    pending_start: Option<Fragment>,
    emitted_rt: Option<Tombstone>,
    purged_in_partition: bool,
    pub(crate) counts: PurgeCounts,
}

impl<'a> Purger<'a> {
    pub(crate) fn new(
        now: u32,
        gc_grace: Duration,
        lookup: &'a mut dyn FnMut(&DecoratedKey) -> Timestamp,
    ) -> Self {
        let grace = u32::try_from(gc_grace.as_secs()).unwrap_or(u32::MAX);
        Purger {
            now,
            gc_before: now.saturating_sub(grace),
            lookup,
            key: None,
            max_purgeable: None,
            pending_start: None,
            emitted_rt: None,
            purged_in_partition: false,
            counts: PurgeCounts::default(),
        }
    }

    /// True when the last partition had anything dropped.
    pub(crate) fn purged_in_partition(&self) -> bool {
        self.purged_in_partition
    }

    /// The current key's max purgeable timestamp, looked up on first need.
    fn max_purgeable(&mut self) -> Timestamp {
        match self.max_purgeable {
            Some(mp) => mp,
            None => {
                let mp = match self.key.as_ref() {
                    Some(key) => (self.lookup)(key),
                    // Nothing outside a partition is purged.
                    None => Timestamp::MIN,
                };
                self.max_purgeable = Some(mp);
                mp
            }
        }
    }

    fn can_purge(&mut self, t: Tombstone) -> bool {
        if t.local_deletion_time >= self.gc_before {
            return false;
        }
        if t.timestamp < self.max_purgeable() {
            self.purged_in_partition = true;
            true
        } else {
            false
        }
    }

    fn purge_row(&mut self, row: &mut Row) {
        if let Some(t) = row.tombstone
            && self.can_purge(t)
        {
            row.tombstone = None;
            self.counts.row_tombstones += 1;
        }
        if let Some(m) = row.marker
            && let Some(ttl) = m.ttl
            && ttl.expiry() <= self.now
            && self.can_purge(Tombstone::new(m.timestamp, ttl.expiry() - ttl.ttl()))
        {
            row.marker = None;
            self.counts.expired += 1;
        }
        let now = self.now;
        let mut dropped = Vec::new();
        for (&col, cell) in &row.cells {
            let as_tombstone = match cell {
                Cell::Tombstone {
                    timestamp,
                    local_deletion_time,
                } => Some((Tombstone::new(*timestamp, *local_deletion_time), false)),
                Cell::Live {
                    timestamp,
                    ttl: Some(ttl),
                    ..
                } if ttl.expiry() <= now => {
                    Some((Tombstone::new(*timestamp, ttl.expiry() - ttl.ttl()), true))
                }
                Cell::Live { .. } => None,
            };
            if let Some((t, expired)) = as_tombstone {
                dropped.push((col, t, expired));
            }
        }
        for (col, t, expired) in dropped {
            if self.can_purge(t) {
                row.cells.remove(&col);
                if expired {
                    self.counts.expired += 1;
                } else {
                    self.counts.cell_tombstones += 1;
                }
            } else if expired && t.timestamp < self.max_purgeable() {
                // See the module docs: the expired cell becomes the
                // tombstone it is equivalent to.
                row.cells
                    .insert(col, Cell::tombstone(t.timestamp, t.local_deletion_time));
                self.counts.expired_to_tombstones += 1;
            }
        }
    }

    fn emit_start(&mut self, out: &mut Vec<Fragment>) {
        if let Some(start) = self.pending_start.take() {
            out.push(start);
        }
    }

    /// Feeds one fragment; pushes what remains of it (and a delayed
    /// partition start) to `out`.
    pub(crate) fn push(&mut self, fragment: Fragment, out: &mut Vec<Fragment>) {
        match fragment {
            Fragment::PartitionStart { key, tombstone } => {
                self.key = Some(key.clone());
                self.max_purgeable = None;
                self.emitted_rt = None;
                self.purged_in_partition = false;
                let tombstone = match tombstone {
                    Some(t) if self.can_purge(t) => {
                        self.counts.partition_tombstones += 1;
                        None
                    }
                    t => t,
                };
                self.pending_start = Some(Fragment::PartitionStart { key, tombstone });
                if tombstone.is_some() {
                    self.emit_start(out);
                }
            }
            Fragment::StaticRow(mut row) => {
                self.purge_row(&mut row);
                if !row.is_empty() {
                    self.emit_start(out);
                    out.push(Fragment::StaticRow(row));
                }
            }
            Fragment::ClusteringRow { key, mut row } => {
                self.purge_row(&mut row);
                if !row.is_empty() {
                    self.emit_start(out);
                    out.push(Fragment::ClusteringRow { key, row });
                }
            }
            Fragment::RangeTombstoneChange {
                position,
                tombstone,
            } => {
                let tombstone = match tombstone {
                    Some(t) if self.can_purge(t) => {
                        self.counts.range_tombstones += 1;
                        None
                    }
                    t => t,
                };
                if tombstone != self.emitted_rt {
                    self.emit_start(out);
                    self.emitted_rt = tombstone;
                    out.push(Fragment::RangeTombstoneChange {
                        position,
                        tombstone,
                    });
                }
            }
            Fragment::PartitionEnd => {
                if self.pending_start.take().is_none() {
                    out.push(Fragment::PartitionEnd);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mutation::{Mutation, Ttl};

    fn ts(t: i64) -> Timestamp {
        Timestamp::from_micros(t)
    }

    fn run(m: &Mutation, now: u32, grace: u64, mp: i64) -> Vec<Fragment> {
        let mut lookup = |_: &DecoratedKey| ts(mp);
        let mut p = Purger::new(now, Duration::from_secs(grace), &mut lookup);
        let mut out = Vec::new();
        for f in m.fragments() {
            p.push(f, &mut out);
        }
        out
    }

    #[test]
    fn tombstones_go_only_past_gc_grace_and_below_max_purgeable() {
        let key = DecoratedKey::from_bytes("k").unwrap();
        let m = Mutation::builder(key.clone())
            .partition_tombstone(Tombstone::new(ts(5), 100))
            .cell("r", 1, Cell::tombstone(ts(10), 100))
            .cell("r", 2, Cell::live("v", ts(10)))
            .build()
            .unwrap();
        // Within gc_grace: all kept.
        assert_eq!(run(&m, 150, 100, i64::MAX), m.fragments());
        // Past gc_grace but something older than the tombstones exists outside.
        assert_eq!(run(&m, 300, 100, 3), m.fragments());
        // Past gc_grace, nothing older outside: the tombstones go.
        let kept = Mutation::builder(key)
            .cell("r", 2, Cell::live("v", ts(10)))
            .build()
            .unwrap();
        assert_eq!(run(&m, 300, 100, 11), kept.fragments());
    }

    #[test]
    fn an_expired_cell_is_a_tombstone_and_an_empty_partition_disappears() {
        let key = DecoratedKey::from_bytes("k").unwrap();
        let m = Mutation::builder(key)
            .cell(
                "r",
                1,
                Cell::expiring("v", ts(10), Ttl::new(10, 110).unwrap()),
            )
            .build()
            .unwrap();
        assert_eq!(run(&m, 105, 0, i64::MAX), m.fragments());
        assert_eq!(run(&m, 110, 0, i64::MAX), Vec::new());
    }

    #[test]
    fn an_expired_cell_not_yet_purgeable_becomes_a_tombstone_of_its_write_time() {
        let key = DecoratedKey::from_bytes("k").unwrap();
        let m = Mutation::builder(key.clone())
            .cell(
                "r",
                1,
                Cell::expiring("v", ts(10), Ttl::new(10, 110).unwrap()),
            )
            .build()
            .unwrap();
        let tombstone = Mutation::builder(key)
            .cell("r", 1, Cell::tombstone(ts(10), 100))
            .build()
            .unwrap();
        // Expired, but its write time (100) is within gc_grace (50 at 120).
        assert_eq!(run(&m, 120, 50, i64::MAX), tombstone.fragments());
        // Past gc_grace but data as old may sit outside: the cell stays as
        // it is (an equal-timestamp cell outside must reconcile as before).
        assert_eq!(run(&m, 200, 50, 10), m.fragments());
        // Past gc_grace, nothing outside: dropped.
        assert_eq!(run(&m, 200, 50, 11), Vec::new());
        // A tombstone that is still within gc_grace then goes by the
        // tombstone rules.
        assert_eq!(run(&tombstone, 120, 50, i64::MAX), tombstone.fragments());
        assert_eq!(run(&tombstone, 200, 50, 11), Vec::new());
    }
}
