//! dirty-memory composed with flush-scheduler, as `replica` wires them: the
//! flush holding the data-write permit starts writing at once even though
//! every tail worker is busy with earlier flushes' tails and more tails
//! wait. Deterministic: the tails block on a gate that opens only after the
//! new flush was seen writing its data.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, Error, Flush, FlushTarget};
use flush_scheduler::{FlushContext, FlushJob, FlushScheduler, Phase, SchedulerConfig};
use logalloc::{RegionId, RegionListener};

const PATIENCE: Duration = Duration::from_secs(20);

/// One thing a flush did: region, phase, what.
type Event = (u64, Phase, &'static str);

/// What the flushes did, and whether the tails may proceed.
#[derive(Default)]
struct Journal {
    events: Mutex<(Vec<Event>, bool)>,
    changed: Condvar,
}

impl Journal {
    fn record(&self, region: RegionId, phase: Phase, what: &'static str) {
        self.events
            .lock()
            .unwrap()
            .0
            .push((region.as_u64(), phase, what));
        self.changed.notify_all();
    }

    fn saw(&self, region: u64, phase: Phase, what: &'static str) -> bool {
        self.events
            .lock()
            .unwrap()
            .0
            .contains(&(region, phase, what))
    }

    fn wait_until(&self, mut cond: impl FnMut(&[Event]) -> bool) {
        let guard = self.events.lock().unwrap();
        let (_guard, timeout) = self
            .changed
            .wait_timeout_while(guard, PATIENCE, |(events, _)| !cond(events))
            .unwrap();
        assert!(!timeout.timed_out(), "not reached within {PATIENCE:?}");
    }

    fn open_tails(&self) {
        self.events.lock().unwrap().1 = true;
        self.changed.notify_all();
    }

    fn wait_for_open_tails(&self) {
        let guard = self.events.lock().unwrap();
        let (_guard, timeout) = self
            .changed
            .wait_timeout_while(guard, PATIENCE, |(_, open)| !*open)
            .unwrap();
        assert!(!timeout.timed_out(), "tails never opened");
    }
}

/// replica's side of the wiring.
struct Table {
    scheduler: Arc<FlushScheduler>,
    journal: Arc<Journal>,
}

impl FlushTarget for Table {
    fn start_flush(&self, flush: Flush) {
        flush.group().ground_evictable(flush.region());
        let job = FlushMemtable {
            flush,
            journal: Arc::clone(&self.journal),
        };
        if self.scheduler.submit(Box::new(job)).is_err() {
            panic!("the scheduler outlives the manager in this test");
        }
    }

    fn flush_failed_permanently(&self, region: RegionId, error: &Error) {
        panic!("no flush fails here, yet {region} did: {error}");
    }
}

struct FlushMemtable {
    flush: Flush,
    journal: Arc<Journal>,
}

impl FlushJob for FlushMemtable {
    fn write_data(&mut self, _ctx: &FlushContext<'_>) -> Result<(), flush_scheduler::Error> {
        let region = self.flush.region();
        self.journal.record(region, Phase::Data, "started");
        assert!(self.flush.holds_data_permit());
        self.flush.account_written(usize::MAX);
        self.flush.data_written();
        self.journal.record(region, Phase::Data, "done");
        Ok(())
    }

    fn write_tail(&mut self, _ctx: &FlushContext<'_>) -> Result<(), flush_scheduler::Error> {
        self.journal
            .record(self.flush.region(), Phase::Tail, "started");
        self.journal.wait_for_open_tails();
        Ok(())
    }

    fn complete(self: Box<Self>, outcome: Result<(), flush_scheduler::Error>) {
        let FlushMemtable { flush, journal } = *self;
        let region = flush.region();
        match outcome {
            Ok(()) => {
                let group = Arc::clone(flush.group());
                let size = group.region_size(region).map_or(0, |s| s.0);
                flush.finish_releasing(|| group.del(region, size));
                journal.record(region, Phase::Tail, "finished");
            }
            Err(e) => flush.fail(e),
        }
    }
}

#[test]
fn the_permit_holder_writes_while_every_tail_worker_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig::new([dir.path()])
        .data_workers(1)
        .tail_workers(1);
    let scheduler = Arc::new(FlushScheduler::new(config).unwrap());
    let journal = Arc::new(Journal::default());
    let table = Arc::new(Table {
        scheduler: Arc::clone(&scheduler),
        journal: Arc::clone(&journal),
    });
    let m = DirtyMemoryManager::new(DirtyMemoryConfig::new("table", 1 << 20), table).unwrap();
    for r in 1..=3 {
        let region = RegionId::from_raw(r);
        m.group().add(region, 0);
        m.group().increase_usage(region, 1000); // far below the soft limit
    }

    // Memtable 1: its tail holds the only tail worker.
    let first = m.request_flush(RegionId::from_raw(1)).unwrap();
    journal.wait_until(|e| e.contains(&(1, Phase::Tail, "started")));
    // Memtable 2: its data is written, its tail waits in the queue.
    let second = m.request_flush(RegionId::from_raw(2)).unwrap();
    journal.wait_until(|e| e.contains(&(2, Phase::Data, "done")));
    // The tail of memtable 1 holds the only tail worker. Memtable 2's tail is
    // queued by its data worker just after `write_data` returns, which may not
    // have happened yet: either way it has not started.
    let s = scheduler.metrics();
    assert_eq!(s.running_tails, 1);
    assert!(s.queued_tails <= 1);

    // Memtable 3 gets the permit and writes at once.
    let third = m.request_flush(RegionId::from_raw(3)).unwrap();
    journal.wait_until(|e| e.contains(&(3, Phase::Data, "done")));
    assert!(!journal.saw(1, Phase::Tail, "finished"));
    assert!(!journal.saw(2, Phase::Tail, "started"));
    let dm = m.metrics();
    assert_eq!(dm.flushes_in_flight, 3);
    assert_eq!(dm.max_concurrent_data_writers, 1);
    // Its memory is spooled: writers would be let in at once.
    assert_eq!(dm.unspooled_dirty, 0);

    journal.open_tails();
    for c in [first, second, third] {
        assert!(matches!(c.wait_timeout(PATIENCE), Some(Ok(()))));
    }
    assert_eq!(m.metrics().real_dirty, 0);
    m.shutdown();
    assert!(scheduler.shutdown().is_empty());
}
