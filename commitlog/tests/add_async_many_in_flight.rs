//! `add_async`: two threads, each keeping 64 appends in flight on a small
//! executor of its own (poll every future that was woken, park the thread
//! between rounds), in `Batch(0)` (the flusher runs the cycles): every
//! future resolves with its position, many entries share each fdatasync,
//! futures dropped unresolved leave their entries in the log, and
//! everything appended replays after a reopen. Periodic mode resolves at
//! once; an oversized entry is refused before anything is written.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

use commitlog::{CommitLog, Config, Durable, Error, PeriodicAck, ReplayPosition, SyncMode};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

/// Wakes one future of the executor: marks it and unparks the thread.
struct Flag {
    woken: AtomicBool,
    thread: Thread,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

fn config(sync: SyncMode) -> Config {
    let mut c = Config::default();
    c.segment_size = 256 << 10;
    c.total_size_limit = 64 << 20;
    c.sync = sync;
    c
}

fn log(dir: &std::path::Path, sync: SyncMode) -> CommitLog {
    CommitLog::open(dir, config(sync), |_, _, _| {}).unwrap().0
}

fn mutation(t: u64, i: u64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("t{t}-{i}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(
                vec![t as u8; 1 + (i as usize % 13) * 31],
                Timestamp::from_micros(1),
            ),
        )
        .build()
        .unwrap()
}

/// Appends `total` entries of table `t`, keeping `in_flight` futures
/// pending; every 7th future is dropped after its first poll instead of
/// awaited. Returns (resolved positions, dropped positions).
fn run_writer(
    log: &CommitLog,
    t: u64,
    total: u64,
    in_flight: usize,
) -> (Vec<ReplayPosition>, Vec<ReplayPosition>) {
    struct Slot {
        fut: Durable,
        flag: Arc<Flag>,
        waker: Waker,
        drop_it: bool,
    }
    let mut slots: Vec<Slot> = Vec::new();
    let (mut resolved, mut dropped) = (Vec::new(), Vec::new());
    let mut next = 0;
    while next < total || !slots.is_empty() {
        while slots.len() < in_flight && next < total {
            let fut = log.add_async(t, &mutation(t, next)).unwrap();
            let flag = Arc::new(Flag {
                woken: AtomicBool::new(true),
                thread: std::thread::current(),
            });
            let waker = Waker::from(Arc::clone(&flag));
            slots.push(Slot {
                fut,
                flag,
                waker,
                drop_it: next % 7 == 3,
            });
            next += 1;
        }
        let mut progressed = false;
        let mut i = 0;
        while i < slots.len() {
            if !slots[i].flag.woken.swap(false, Ordering::Acquire) {
                i += 1;
                continue;
            }
            progressed = true;
            let s = &mut slots[i];
            let mut cx = Context::from_waker(&s.waker);
            match Pin::new(&mut s.fut).poll(&mut cx) {
                Poll::Ready(r) => {
                    let s = slots.swap_remove(i);
                    assert_eq!(r.unwrap(), s.fut.position());
                    resolved.push(s.fut.position());
                }
                Poll::Pending if s.drop_it => {
                    let s = slots.swap_remove(i);
                    dropped.push(s.fut.position());
                }
                Poll::Pending => i += 1,
            }
        }
        if !progressed {
            std::thread::park_timeout(Duration::from_secs(10));
        }
    }
    (resolved, dropped)
}

#[test]
fn two_threads_with_64_in_flight_each_resolve_share_syncs_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(log(dir.path(), SyncMode::Batch(Duration::ZERO)));
    let threads: Vec<_> = (1..=2u64)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || run_writer(&log, t, 1500, 64))
        })
        .collect();
    let mut expected = BTreeSet::new();
    let mut resolved = 0;
    for h in threads {
        let (r, d) = h.join().unwrap();
        resolved += r.len();
        expected.extend(r);
        expected.extend(d);
    }
    assert!(resolved > 2000, "{resolved}");
    assert_eq!(expected.len(), 3000, "positions are unique");
    let stats = log.stats();
    assert_eq!(stats.entries, 3000);
    assert!(
        stats.syncs * 4 < stats.entries,
        "many entries share each sync: {stats:?}"
    );
    Arc::try_unwrap(log).unwrap().close().unwrap();
    let mut replayed = BTreeSet::new();
    let (log, _) = CommitLog::open(dir.path(), Config::default(), |t, m, pos| {
        let i: u64 = std::str::from_utf8(m.key().key().as_bytes())
            .unwrap()
            .rsplit('-')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(m, mutation(t, i));
        replayed.insert(pos);
    })
    .unwrap();
    assert_eq!(replayed, expected, "every entry, dropped futures' included");
    log.close().unwrap();
}

#[test]
fn periodic_mode_resolves_at_the_first_poll() {
    let dir = tempfile::tempdir().unwrap();
    let log = log(dir.path(), SyncMode::Periodic(Duration::from_secs(10)));
    let mut fut = log.add_async(1, &mutation(1, 1)).unwrap();
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    let got = Pin::new(&mut fut).poll(&mut cx);
    assert!(
        matches!(got, Poll::Ready(Ok(p)) if p == fut.position()),
        "{got:?}"
    );
    log.close().unwrap();
}

/// With `PeriodicAck::Written` a future resolves once its entry is written
/// to the segment file (what a blocking `add` waits for there), not at
/// once: a reader of the directory then finds it, before any sync.
#[test]
fn written_periodic_mode_resolves_once_the_entry_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(SyncMode::Periodic(Duration::from_secs(3600)));
    c.periodic_ack = PeriodicAck::Written;
    let log = CommitLog::open(dir.path(), c, |_, _, _| {}).unwrap().0;
    // The first sync happens at once; afterwards none for an hour.
    log.add(1, &mutation(1, 0)).unwrap();
    log.sync().unwrap();
    let mut fut = log.add_async(1, &mutation(1, 1)).unwrap();
    let flag = Arc::new(Flag {
        woken: AtomicBool::new(false),
        thread: std::thread::current(),
    });
    let waker = Waker::from(Arc::clone(&flag));
    let mut cx = Context::from_waker(&waker);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let pos = loop {
        match Pin::new(&mut fut).poll(&mut cx) {
            Poll::Ready(r) => break r.unwrap(),
            Poll::Pending => {
                assert!(std::time::Instant::now() < deadline, "never resolved");
                std::thread::park_timeout(Duration::from_millis(100));
            }
        }
    };
    assert_eq!(pos, fut.position());
    let mut found = None;
    commitlog::replay(dir.path(), |t, m, p| {
        if p == pos {
            found = Some((t, m));
        }
    })
    .unwrap();
    assert_eq!(found, Some((1, mutation(1, 1))), "written once resolved");
    assert_eq!(log.stats().synced_entries, 1, "and not synced");
    log.close().unwrap();
}

#[test]
fn an_oversized_entry_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let log = log(dir.path(), SyncMode::Batch(Duration::ZERO));
    let big = Mutation::builder(DecoratedKey::from_bytes("big").unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![0; 200 << 10], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap();
    let err = log.add_async(1, &big).unwrap_err();
    assert!(
        matches!(err, Error::EntryTooLarge { table: 1, .. }),
        "{err}"
    );
    assert_eq!(log.stats().entries, 0);
    log.close().unwrap();
}
