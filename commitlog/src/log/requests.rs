//! Flush requests: which tables the owner should flush to free the
//! oldest segments, and calling its handler.

use std::collections::BTreeMap;

use super::{FlushHandler, FlushRequest, Shared, State};
use crate::sync::{Arc, MutexGuard};
use crate::{ReplayPosition, TableId};

impl Shared {
    pub(super) fn handler(&self) -> Option<Arc<FlushHandler>> {
        self.handler.lock().clone()
    }

    /// Sends the owner's handler, with the lock released, the flushes that
    /// would free the oldest segments (see [`Shared::flush_requests`]).
    /// Returns whether it was called.
    pub(super) fn request_flushes<'a>(
        &'a self,
        st: &mut MutexGuard<'a, State>,
        extra: u64,
    ) -> bool {
        let requests = self.flush_requests(st, extra);
        if requests.is_empty() {
            return false;
        }
        let Some(h) = self.handler() else {
            return false;
        };
        MutexGuard::unlocked(st, || h(&requests));
        true
    }

    /// The flushes that would free the oldest segments: when the log
    /// (plus `extra` bytes about to be needed) is above half its limit,
    /// every table dirty in the oldest closed segments whose sizes cover
    /// the excess, with its newest position there.
    pub(super) fn flush_requests(&self, st: &mut State, extra: u64) -> Vec<FlushRequest> {
        let threshold = self.config.total_size_limit / 2;
        let projected = st.disk_bytes + extra;
        if projected <= threshold {
            return Vec::new();
        }
        let excess = projected - threshold;
        let mut covered = 0u64;
        let mut wanted: BTreeMap<TableId, ReplayPosition> = BTreeMap::new();
        for (&id, seg) in &st.segments {
            if covered >= excess || Some(id) == st.active {
                break;
            }
            covered += seg.disk_size;
            for (&table, d) in &seg.dirty {
                let pos = ReplayPosition::new(id, d.newest);
                let e = wanted.entry(table).or_insert(pos);
                *e = (*e).max(pos);
            }
        }
        if !wanted.is_empty() {
            st.stats.flush_requests += 1;
        }
        wanted
            .into_iter()
            .map(|(table, up_to)| FlushRequest { table, up_to })
            .collect()
    }
}
