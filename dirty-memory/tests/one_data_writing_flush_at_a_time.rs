//! Under the default policy at most one flush writes data at any moment,
//! while tails of earlier flushes may still be in flight.

mod common;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use common::{PATIENCE, wait_until};
use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, Flush, FlushTarget};
use logalloc::{RegionId, RegionListener};
use region_group::RegionGroup;

const WRITERS: u64 = 3;
const WRITES_PER_WRITER: usize = 300;
const WRITE: usize = 100;

/// Simulated tables: one active memtable per writer; sealing switches it.
#[derive(Default)]
struct Tables {
    active: Mutex<HashMap<u64, RegionId>>,
    next_id: AtomicUsize,
}

impl Tables {
    fn fresh(&self, group: &RegionGroup) -> RegionId {
        let id = RegionId::from_raw(self.next_id.fetch_add(1, Ordering::Relaxed) as u64 + 1);
        group.add(id, 0);
        id
    }

    fn write(&self, group: &RegionGroup, writer: u64) {
        let mut active = self.active.lock().unwrap();
        let id = match active.get(&writer) {
            Some(&id) => id,
            None => {
                let id = self.fresh(group);
                active.insert(writer, id);
                id
            }
        };
        group.increase_usage(id, WRITE);
    }

    fn seal(&self, group: &RegionGroup, region: RegionId) {
        let mut active = self.active.lock().unwrap();
        active.retain(|_, id| *id != region);
        group.ground_evictable(region);
    }
}

/// Checks the invariant on every transition it sees.
struct CheckingTarget {
    tables: Arc<Tables>,
    writing: AtomicUsize,
    max_writing: AtomicUsize,
    queue: Mutex<VecDeque<Flush>>,
    arrived: Condvar,
}

impl CheckingTarget {
    fn enter_data_phase(&self) {
        let now = self.writing.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_writing.fetch_max(now, Ordering::SeqCst);
        assert_eq!(now, 1, "two flushes writing data at once");
    }

    fn check(&self) {
        assert!(self.writing.load(Ordering::SeqCst) <= 1);
    }
}

impl FlushTarget for CheckingTarget {
    fn start_flush(&self, flush: Flush) {
        self.enter_data_phase();
        self.tables.seal(flush.group(), flush.region());
        self.queue.lock().unwrap().push_back(flush);
        self.arrived.notify_all();
    }

    fn flush_failed_permanently(&self, region: logalloc::RegionId, error: &dirty_memory::Error) {
        panic!("no flush of this test fails permanently, yet {region} did: {error}");
    }
}

#[test]
fn never_two_data_writers_and_tails_overlap() {
    let tables = Arc::new(Tables::default());
    let target = Arc::new(CheckingTarget {
        tables: Arc::clone(&tables),
        writing: AtomicUsize::new(0),
        max_writing: AtomicUsize::new(0),
        queue: Mutex::new(VecDeque::new()),
        arrived: Condvar::new(),
    });
    // Budget 8000: soft 2000, hard 4000.
    let m = Arc::new(
        DirtyMemoryManager::new(DirtyMemoryConfig::new("one", 8000), target.clone()).unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let saw_overlap = Arc::new(AtomicBool::new(false));

    let disk = {
        let (target, m, stop, saw_overlap) = (
            target.clone(),
            Arc::clone(&m),
            stop.clone(),
            saw_overlap.clone(),
        );
        std::thread::spawn(move || {
            let mut tail: Option<Flush> = None;
            loop {
                let next = {
                    let mut q = target.queue.lock().unwrap();
                    loop {
                        if let Some(f) = q.pop_front() {
                            break Some(f);
                        }
                        if stop.load(Ordering::SeqCst) {
                            break None;
                        }
                        q = target.arrived.wait(q).unwrap();
                    }
                };
                let Some(mut flush) = next else { break };
                if tail.is_some() && m.metrics().flushes_in_flight == 2 {
                    saw_overlap.store(true, Ordering::SeqCst);
                }
                let size = flush
                    .group()
                    .region_size(flush.region())
                    .map_or(0, |(s, _)| s);
                for _ in 0..4 {
                    flush.account_written(size / 4 + 1);
                    target.check();
                    assert!(m.metrics().writing.len() <= 1);
                }
                // The previous flush's tail ends while this one writes.
                if let Some(t) = tail.take() {
                    let (group, region) = (Arc::clone(t.group()), t.region());
                    let size = group.region_size(region).map_or(0, |(s, _)| s);
                    t.finish_releasing(|| group.del(region, size));
                    target.check();
                }
                target.writing.fetch_sub(1, Ordering::SeqCst);
                flush.data_written();
                target.check();
                tail = Some(flush);
            }
            if let Some(t) = tail.take() {
                let (group, region) = (Arc::clone(t.group()), t.region());
                let size = group.region_size(region).map_or(0, |(s, _)| s);
                t.finish_releasing(|| group.del(region, size));
            }
        })
    };

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (m, tables) = (Arc::clone(&m), Arc::clone(&tables));
            std::thread::spawn(move || {
                for _ in 0..WRITES_PER_WRITER {
                    m.run_when_memory_available(|| tables.write(m.group(), w), Some(PATIENCE))
                        .expect("writes are admitted as flushes progress");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    wait_until(
        "usage is back under the soft limit with the last flush in its tail",
        || {
            let mt = m.metrics();
            mt.unspooled_dirty <= mt.soft_limit && mt.writing.is_empty()
        },
    );
    {
        // Set under the queue's lock, so the disk thread cannot miss it.
        let _q = target.queue.lock().unwrap();
        stop.store(true, Ordering::SeqCst);
    }
    target.arrived.notify_all();
    disk.join().unwrap();
    m.shutdown();

    let mt = m.metrics();
    assert_eq!(target.max_writing.load(Ordering::SeqCst), 1);
    assert_eq!(mt.max_concurrent_data_writers, 1);
    assert!(mt.flushes_completed >= 10, "{mt:?}");
    assert_eq!(mt.flushes_started, mt.flushes_completed);
    assert!(
        saw_overlap.load(Ordering::SeqCst),
        "a flush never started during another's tail"
    );
    assert!(mt.real_dirty <= mt.budget);
}
