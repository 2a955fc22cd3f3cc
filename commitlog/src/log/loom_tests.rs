//! Loom models of the group-commit handoff, running the real writer
//! and flusher code over the in-memory store.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use super::tests::mutation;
use super::*;
use crate::storage::mem::MemStorage;

fn model(f: impl Fn() + Sync + Send + 'static) {
    model_with_preemptions(2, f);
}

/// A model explored with at least `bound` preemptions (more if
/// `LOOM_MAX_PREEMPTIONS` asks for more).
fn model_with_preemptions(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(b.preemption_bound.map_or(bound, |env| env.max(bound)));
    b.check(f);
}

fn config(sync: SyncMode) -> Config {
    Config {
        segment_size: 4096,
        total_size_limit: 4 * 4096,
        sync,
        preallocate: crate::Preallocate::Never,
        // The periodic writer thread has a model of its own.
        write_interval: Duration::ZERO,
        ..Config::default()
    }
}

/// True if the entry at `pos` is in `image` (the store's written or
/// durable bytes of every segment).
fn entry_in(image: &BTreeMap<u64, Vec<u8>>, pos: ReplayPosition) -> bool {
    image.get(&pos.segment).is_some_and(|d| {
        let at = pos.offset as usize;
        format::parse_entry_header(&d[at..at + format::ENTRY_HEADER_LEN])
            .is_some_and(|h| h.segment == pos.segment)
    })
}

/// True if the entry at `pos` is in the durable image of its segment.
fn durable(storage: &MemStorage, pos: ReplayPosition) -> bool {
    entry_in(&storage.0.lock().durable, pos)
}

/// True if the entry at `pos` is in its segment file, synced or not.
fn written(storage: &MemStorage, pos: ReplayPosition) -> bool {
    entry_in(&storage.0.lock().files, pos)
}

/// A `Batch(0)` log over `storage`.
fn batch_log(storage: &MemStorage) -> Arc<CommitLog> {
    Arc::new(
        CommitLog::with_storage(
            Box::new(storage.clone()),
            config(SyncMode::Batch(Duration::ZERO)),
            BTreeMap::new(),
            0,
        )
        .unwrap(),
    )
}

/// A `Batch(0)` log over a fresh in-memory store, and a thread adding
/// one entry of table 1 to it, which checks that the entry is durable
/// when `add` returns and returns its position.
fn batch_log_and_another_writer() -> (
    Arc<CommitLog>,
    MemStorage,
    loom::thread::JoinHandle<ReplayPosition>,
) {
    let storage = MemStorage::default();
    let log = batch_log(&storage);
    let (l2, s2) = (Arc::clone(&log), storage.clone());
    let other = loom::thread::spawn(move || {
        let pos = l2.add(1, &mutation("a", 10)).unwrap();
        assert!(durable(&s2, pos), "returned before its sync");
        pos
    });
    (log, storage, other)
}

/// Two writers in batch mode: each returns only once a sync covered its
/// entry (whether it ran the cycle itself, the other writer did, or the
/// flusher), the two entries get distinct positions, and at most one
/// sync per entry runs (fewer when they share one).
#[test]
fn loom_batch_writers_return_only_after_a_covering_sync() {
    model(|| {
        let (log, storage, other) = batch_log_and_another_writer();
        let mine = log.add(2, &mutation("b", 10)).unwrap();
        assert!(durable(&storage, mine), "returned before its sync");
        let theirs = other.join().unwrap();
        assert_ne!(mine, theirs);
        let stats = log.stats();
        assert_eq!(stats.synced_entries, 2);
        assert!((1..=2).contains(&stats.syncs), "{stats:?}");
        Arc::try_unwrap(log).unwrap().close().unwrap();
    });
}

/// Two periodic writers with `PeriodicAck::Written` and the flusher: each
/// `add` returns only once its entry is written to the segment file (a
/// process crash cannot lose it), whether it ran the write cycle itself,
/// the other writer's cycle took it, or the flusher's did; nobody waits for
/// a sync (an hour away) and nobody hangs.
#[test]
fn loom_periodic_writers_return_only_once_written() {
    model(|| {
        let storage = MemStorage::default();
        let mut c = config(SyncMode::Periodic(Duration::from_secs(3600)));
        c.periodic_ack = crate::PeriodicAck::Written;
        let log = Arc::new(
            CommitLog::with_storage(Box::new(storage.clone()), c, BTreeMap::new(), 0).unwrap(),
        );
        let (l2, s2) = (Arc::clone(&log), storage.clone());
        let other = loom::thread::spawn(move || {
            let pos = l2.add(1, &mutation("a", 10)).unwrap();
            assert!(written(&s2, pos), "returned before its write");
            pos
        });
        let mine = log.add(2, &mutation("b", 10)).unwrap();
        assert!(written(&storage, mine), "returned before its write");
        let theirs = other.join().unwrap();
        assert_ne!(mine, theirs);
        assert_eq!(log.stats().entries, 2);
        Arc::try_unwrap(log).unwrap().close().unwrap();
        assert!(durable(&storage, mine) && durable(&storage, theirs));
    });
}

/// A write failure in a cycle (run by either writer or the flusher)
/// fails both waiting writers and the close; nobody hangs.
#[test]
fn loom_a_failed_write_fails_every_waiting_writer() {
    model(|| {
        let storage = MemStorage::default();
        storage.0.lock().fail_writes = true;
        let log = batch_log(&storage);
        let l2 = Arc::clone(&log);
        let other = loom::thread::spawn(move || l2.add(1, &mutation("a", 10)));
        let mine = log.add(2, &mutation("b", 10));
        assert!(matches!(mine, Err(Error::Failed(_))), "{mine:?}");
        let theirs = other.join().unwrap();
        assert!(matches!(theirs, Err(Error::Failed(_))), "{theirs:?}");
        assert!(Arc::try_unwrap(log).unwrap().close().is_err());
    });
}

/// Retirement racing appends across a segment switch: one thread adds
/// entries of tables 1 and 2 over three segments while another reports
/// table 1 flushed up to the end of time. Whatever the interleaving,
/// every entry of table 2 is durable in a segment still on record at
/// close, and segments only table 1 held may go.
#[test]
fn loom_discard_racing_a_segment_switch_keeps_other_tables_entries() {
    model(|| {
        let storage = MemStorage::default();
        let log = batch_log(&storage);
        let l2 = Arc::clone(&log);
        let flusher = loom::thread::spawn(move || {
            l2.discard_completed(1, ReplayPosition::new(u64::MAX, u32::MAX));
        });
        // 1,500-byte entries: two per 4 KiB segment.
        let kept: Vec<ReplayPosition> = (0..2)
            .map(|i| {
                log.add(1, &mutation("one", 1500)).unwrap();
                log.add(2, &mutation(&format!("two{i}"), 1500)).unwrap()
            })
            .collect();
        flusher.join().unwrap();
        Arc::try_unwrap(log).unwrap().close().unwrap();
        for pos in kept {
            assert!(durable(&storage, pos), "table 2's entry at {pos} was lost");
        }
    });
}

/// Periodic mode with a buffer budget of one entry: the second writer
/// waits for a cycle to write the first entry out (the flusher's, or its
/// own when none runs), then goes on; close makes both durable.
#[test]
fn loom_buffer_budget_blocks_until_the_flusher_writes() {
    model(|| {
        let storage = MemStorage::default();
        let mut c = config(SyncMode::Periodic(Duration::from_secs(3600)));
        c.buffer_budget = Some(2048);
        let log = Arc::new(
            CommitLog::with_storage(Box::new(storage.clone()), c, BTreeMap::new(), 0).unwrap(),
        );
        let l2 = Arc::clone(&log);
        let other = loom::thread::spawn(move || l2.add(1, &mutation("a", 1200)).unwrap());
        let mine = log.add(2, &mutation("b", 1200)).unwrap();
        let theirs = other.join().unwrap();
        assert_ne!(mine, theirs);
        Arc::try_unwrap(log).unwrap().close().unwrap();
        assert!(durable(&storage, mine) && durable(&storage, theirs));
    });
}

/// Segment switches racing the reserve thread: a writer takes the
/// prefilled reserve and renames it to the next id, or creates a sparse
/// segment itself when none is ready, while the reserve thread makes
/// the next one. Whatever the interleaving, positions keep growing,
/// every entry is durable after close, and close leaves no unused
/// reserve behind. Explored with three preemptions, which finds a
/// reserve started while a switch still renames the previous one (the
/// new file takes over the name under the writer).
#[test]
fn loom_segment_switches_racing_the_reserve_keep_every_entry() {
    model_with_preemptions(3, || {
        let storage = MemStorage::default();
        let mut c = config(SyncMode::Periodic(Duration::from_secs(3600)));
        c.preallocate = crate::Preallocate::Always;
        c.segment_size = 4096;
        c.total_size_limit = 16 * 4096;
        let log =
            CommitLog::with_storage(Box::new(storage.clone()), c, BTreeMap::new(), 0).unwrap();
        let positions: Vec<ReplayPosition> = (0..3)
            .map(|i| log.add(i, &mutation("k", 1975)).unwrap())
            .collect();
        assert!(
            positions.windows(2).all(|w| w[0].segment < w[1].segment),
            "{positions:?}"
        );
        log.close().unwrap();
        for &p in &positions {
            assert!(durable(&storage, p), "{p:?} lost");
        }
        let files: Vec<u64> = storage.0.lock().files.keys().copied().collect();
        let used: Vec<u64> = positions.iter().map(|p| p.segment).collect();
        assert_eq!(files, used, "an unused reserve was left behind");
    });
}

/// A batch of two entries and a single entry, from two threads in
/// `Batch(0)`: each call returns only once all its entries are durable,
/// whoever ran the covering cycle, and every position is distinct.
#[test]
fn loom_a_batch_and_a_single_add_return_only_when_durable() {
    model(|| {
        let (log, storage, other) = batch_log_and_another_writer();
        let (x, y) = (mutation("b", 10), mutation("c", 10));
        let mine = log.add_batch(&[(2, &x), (3, &y)]).unwrap();
        for &p in &mine {
            assert!(durable(&storage, p), "batch returned before its sync");
        }
        let theirs = other.join().unwrap();
        assert!(!mine.contains(&theirs) && mine[0] < mine[1]);
        assert_eq!(log.stats().synced_entries, 3);
        Arc::try_unwrap(log).unwrap().close().unwrap();
    });
}

/// A periodic sync racing a writer at the buffer budget: while the
/// flusher's fdatasync runs with the writing slot free, the writer may
/// write the buffers out itself. Whatever the interleaving, the sync
/// caller returns once everything before its call is durable, nobody
/// hangs, and every entry is durable after close.
#[test]
fn loom_a_periodic_sync_does_not_hold_up_writers_at_the_budget() {
    model(|| {
        let storage = MemStorage::default();
        let mut c = config(SyncMode::Periodic(Duration::from_secs(3600)));
        c.buffer_budget = Some(2048);
        let log = Arc::new(
            CommitLog::with_storage(Box::new(storage.clone()), c, BTreeMap::new(), 0).unwrap(),
        );
        let first = log.add(1, &mutation("a", 1200)).unwrap();
        let (l2, s2) = (Arc::clone(&log), storage.clone());
        let syncer = loom::thread::spawn(move || {
            l2.sync().unwrap();
            assert!(
                durable(&s2, first),
                "sync returned before the entry was durable"
            );
        });
        let second = log.add(2, &mutation("b", 1200)).unwrap();
        let third = log.add(3, &mutation("c", 1200)).unwrap();
        syncer.join().unwrap();
        // What the log counts as synced is durable, no more: entries
        // written during the sync are left to the next one.
        let synced = log.shared.state.lock().synced;
        for p in [first, second, third] {
            if p < synced {
                assert!(durable(&storage, p), "{p:?} counted as synced");
            }
        }
        Arc::try_unwrap(log).unwrap().close().unwrap();
        for p in [first, second, third] {
            assert!(durable(&storage, p), "{p:?} lost");
        }
    });
}

/// A replayed segment `id` holding entries of `table` only, its file in
/// `storage`; with a drop record if `has_drop`.
fn replayed_segment(storage: &MemStorage, id: u64, table: TableId, has_drop: bool) -> Segment {
    storage.0.lock().files.insert(id, vec![0; 4096]);
    Segment {
        file: None,
        dirty: [(table, Dirty::replayed(64))].into_iter().collect(),
        has_drop,
        end: 4096,
        synced_end: 4096,
        closed: true,
        damaged: false,
        retiring: false,
        disk_size: 4096,
    }
}

/// Two retirements racing each other and an append: two threads each
/// release the one table of a replayed segment (the newer one holds a
/// drop record, so it may go only once the older one is gone), while a
/// `Batch(0)` writer appends, creating a segment and running a cycle that
/// retires too. Each retirement removes its files with the state lock
/// released. Whatever the interleaving, the appended entry is durable and
/// its segment kept, each freed file is removed exactly once, and the
/// segment with the drop record never goes before the older one.
#[test]
fn loom_unlocked_retirements_racing_an_append_remove_each_file_once() {
    model(|| {
        let storage = MemStorage::default();
        let segments: BTreeMap<u64, Segment> = [
            (1, replayed_segment(&storage, 1, 1, false)),
            (2, replayed_segment(&storage, 2, 2, true)),
        ]
        .into_iter()
        .collect();
        let log = Arc::new(
            CommitLog::with_storage(
                Box::new(storage.clone()),
                config(SyncMode::Batch(Duration::ZERO)),
                segments,
                2,
            )
            .unwrap(),
        );
        let end = ReplayPosition::new(u64::MAX, u32::MAX);
        let retirers: Vec<_> = [1, 2]
            .into_iter()
            .map(|table| {
                let l = Arc::clone(&log);
                loom::thread::spawn(move || l.discard_completed(table, end))
            })
            .collect();
        let pos = log.add(3, &mutation("c", 10)).unwrap();
        for r in retirers {
            r.join().unwrap();
        }
        assert!(durable(&storage, pos), "the appended entry was lost");
        Arc::try_unwrap(log).unwrap().close().unwrap();
        let s = storage.0.lock();
        assert_eq!(s.removals, vec![1, 2], "each file once, the drop last");
        assert_eq!(
            s.files.keys().copied().collect::<Vec<_>>(),
            vec![pos.segment]
        );
    });
}

/// The periodic writer thread racing a sync and writers: while the
/// flusher's fdatasync runs, the writer thread (or a writer) writes the
/// pending buffers out. Whatever the interleaving, the sync caller returns
/// once its entry is durable, nobody hangs, close stops the writer thread
/// and every entry is durable after it.
#[test]
fn loom_the_periodic_writer_thread_racing_a_sync_keeps_every_entry() {
    model(|| {
        let storage = MemStorage::default();
        let mut c = config(SyncMode::Periodic(Duration::from_secs(3600)));
        c.write_interval = Duration::from_millis(1);
        let log = Arc::new(
            CommitLog::with_storage(Box::new(storage.clone()), c, BTreeMap::new(), 0).unwrap(),
        );
        let first = log.add(1, &mutation("a", 100)).unwrap();
        let (l2, s2) = (Arc::clone(&log), storage.clone());
        let syncer = loom::thread::spawn(move || {
            l2.sync().unwrap();
            assert!(
                durable(&s2, first),
                "sync returned before the entry was durable"
            );
        });
        let second = log.add(2, &mutation("b", 100)).unwrap();
        syncer.join().unwrap();
        Arc::try_unwrap(log).unwrap().close().unwrap();
        for p in [first, second] {
            assert!(durable(&storage, p), "{p:?} lost");
        }
    });
}

/// A task waker for the async models: unparks the polling thread (loom's
/// park token, so a wake before the park is not lost), and fails the
/// model if it is woken after its future was dropped. Its flag is a loom
/// `Arc`, so a waker the log kept after the drop is reported as a leak.
struct TaskWaker {
    thread: loom::thread::Thread,
    dropped: Arc<sync::AtomicBool>,
}

impl std::task::Wake for TaskWaker {
    fn wake(self: PlainArc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &PlainArc<Self>) {
        assert!(
            !self.dropped.load(sync::Ordering::SeqCst),
            "a dropped future's task was woken"
        );
        self.thread.unpark();
    }
}

/// A waker for the current thread, with the flag its future's drop sets.
fn task_waker() -> (std::task::Waker, Arc<sync::AtomicBool>) {
    let dropped = Arc::new(sync::AtomicBool::new(false));
    let waker = std::task::Waker::from(PlainArc::new(TaskWaker {
        thread: loom::thread::current(),
        dropped: Arc::clone(&dropped),
    }));
    (waker, dropped)
}

/// Polls `fut` to completion on this thread, parking between polls: a
/// lost wake-up leaves the thread parked, which loom reports as a
/// deadlock.
fn block_on<F: std::future::Future + Unpin>(mut fut: F) -> F::Output {
    let (waker, _dropped) = task_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    loop {
        if let std::task::Poll::Ready(out) = std::pin::Pin::new(&mut fut).poll(&mut cx) {
            return out;
        }
        loom::thread::park();
    }
}

/// An async append against a blocking writer in `Batch(0)`: whichever
/// runs the cycle (the blocking writer leading it, or the flusher the
/// async append woke), the future is woken (no lost wake-up) and resolves
/// only once its entry is in the store's durable image.
#[test]
fn loom_an_async_append_is_woken_only_after_its_sync() {
    model(|| {
        let (log, storage, other) = batch_log_and_another_writer();
        let fut = log.add_async(2, &mutation("b", 10)).unwrap();
        let want = fut.position();
        let mine = block_on(fut).unwrap();
        assert_eq!(mine, want);
        assert!(durable(&storage, mine), "resolved before its sync");
        let theirs = other.join().unwrap();
        assert_ne!(mine, theirs);
        assert_eq!(log.stats().synced_entries, 2);
        Arc::try_unwrap(log).unwrap().close().unwrap();
    });
}

/// An async append polled once (its waker registered unless the flusher
/// already synced it) and dropped while the flusher syncs it: the drop
/// takes the waker out of the slot (none left behind: loom would report
/// the waker's `Arc` leaked at the model's end, and the slot is checked
/// empty), the task is never woken after the drop, and the entry is still
/// made durable.
#[test]
fn loom_a_dropped_async_append_leaves_no_waker_behind() {
    model(|| {
        let storage = MemStorage::default();
        let log = batch_log(&storage);
        let mut fut = log.add_async(1, &mutation("a", 10)).unwrap();
        let pos = fut.position();
        let (waker, dropped) = task_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        let first = std::pin::Pin::new(&mut fut).poll(&mut cx);
        if first.is_pending() {
            assert!(fut.is_registered());
        }
        drop(fut);
        dropped.store(true, sync::Ordering::SeqCst);
        drop(waker);
        for slot in &log.shared.done {
            assert_eq!(slot.state.lock().wakers.len(), 0, "a waker left behind");
        }
        log.sync().unwrap();
        assert!(durable(&storage, pos));
        Arc::try_unwrap(log).unwrap().close().unwrap();
    });
}
