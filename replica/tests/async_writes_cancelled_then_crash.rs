//! `Database::apply_async` under load with many futures in flight per
//! thread, each dropped at a random point (before its first poll, or
//! after one to three polls: waiting for the log's sync or for dirty
//! memory), then a simulated crash and a reopen that replays the log.
//!
//! Before the crash, no cancelled write is readable (none reached a
//! memtable). After the reopen, every write whose future completed is
//! readable, and every key's row is whole (all its cells, or nothing): a
//! cancelled write may come back from the log, but never half-applied.
//!
//! The first flush is held (at a test hook) until a write waits for dirty
//! memory, so futures are always cancelled while waiting there too, however
//! fast the machine flushes.
//!
//! The executor is the test's own (a few lines: one waker per future that
//! marks it and unparks the thread) rather than a runtime dev-dependency:
//! it is what the futures' contract needs and nothing more.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use replica::{CommitLogMode, Database, DatabaseConfig, Error, HookPoint, TableSchema};

mod pause;
use pause::Pause;

const CELLS: usize = 4;
const THREADS: u64 = 2;
const WRITES: u64 = 600;
const IN_FLIGHT: usize = 48;

fn config(dir: &Path) -> DatabaseConfig {
    let mut config = DatabaseConfig::new(dir);
    config.commitlog = CommitLogMode::Batch(Duration::ZERO);
    config.commitlog_segment_size = 256 << 10;
    // Small, so that flushes run and writers wait for dirty memory.
    config.dirty_memory_budget = 1 << 20;
    // Flushes slower than the writers (about 2.4 MB written), so writers
    // do wait for dirty memory however loaded the machine is: their
    // directory is on a modelled device of 2 MiB/s.
    config.flush_dirs = vec![dir.join("flush")];
    config
        .devices
        .add_device("slow", 2 << 20)
        .place(dir.join("flush"), "slow");
    config
}

fn key(t: u64, i: u64) -> DecoratedKey {
    DecoratedKey::from_bytes(format!("t{t}-{i:05}")).unwrap()
}

/// A row of `CELLS` cells, each naming its key.
fn write(t: u64, i: u64) -> Mutation {
    let mut b = Mutation::builder(key(t, i));
    for c in 0..CELLS {
        b = b.cell(
            format!("c{c}"),
            0,
            Cell::live(
                format!("t{t}-{i}-{c}-").repeat(40).into_bytes(),
                Timestamp::from_micros(1),
            ),
        );
    }
    b.build().unwrap()
}

fn read(db: &Database, t: u64, i: u64) -> Option<Mutation> {
    db.get("t", &key(t, i), ClusteringRange::full()).unwrap()
}

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

type Write<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'a>>;

struct InFlight<'a> {
    i: u64,
    fut: Write<'a>,
    flag: Arc<Flag>,
    waker: Waker,
    /// Dropped after this many polls (`None`: run to completion).
    cancel_after: Option<u32>,
    polls: u32,
}

/// Runs thread `t`'s writes, `IN_FLIGHT` at a time; returns which
/// completed and which were cancelled.
fn writer(db: &Database, t: u64, seed: u64) -> (Vec<u64>, Vec<u64>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let (mut done, mut cancelled) = (Vec::new(), Vec::new());
    let mut slots: Vec<InFlight<'_>> = Vec::new();
    let mut next = 0;
    while next < WRITES || !slots.is_empty() {
        while slots.len() < IN_FLIGHT && next < WRITES {
            let flag = Arc::new(Flag {
                woken: AtomicBool::new(true),
                thread: std::thread::current(),
            });
            let cancel_after = rng.gen_bool(0.3).then(|| rng.gen_range(0..4));
            slots.push(InFlight {
                i: next,
                fut: Box::pin(db.apply_async("t", write(t, next))),
                waker: Waker::from(Arc::clone(&flag)),
                flag,
                cancel_after,
                polls: 0,
            });
            next += 1;
        }
        let mut progressed = false;
        let mut k = 0;
        while k < slots.len() {
            let s = &mut slots[k];
            if s.cancel_after == Some(s.polls) {
                cancelled.push(s.i);
                slots.swap_remove(k);
                progressed = true;
                continue;
            }
            if !s.flag.woken.swap(false, Ordering::Acquire) {
                k += 1;
                continue;
            }
            progressed = true;
            s.polls += 1;
            match s.fut.as_mut().poll(&mut Context::from_waker(&s.waker)) {
                Poll::Ready(r) => {
                    r.unwrap();
                    done.push(s.i);
                    slots.swap_remove(k);
                }
                Poll::Pending => k += 1,
            }
        }
        if !progressed {
            std::thread::park_timeout(Duration::from_secs(10));
        }
    }
    (done, cancelled)
}

fn assert_whole(m: &Mutation, t: u64, i: u64) {
    assert_eq!(m, &write(t, i), "t{t}-{i} is not whole");
}

#[test]
fn cancelled_async_writes_are_never_half_applied_across_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    // The first flush stops before it seals its memtable; writers fill the
    // fresh one up to the hard limit and wait; then the flush goes on.
    let flush = Pause::armed();
    let hook_flush = Arc::clone(&flush);
    db.set_test_hook(Some(Arc::new(move |point| {
        if point == HookPoint::FlushInstalledFresh {
            hook_flush.stop_here();
        }
    })));
    let writing = AtomicU64::new(THREADS);
    let results: Vec<(Vec<u64>, Vec<u64>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (db, writing) = (&db, &writing);
                s.spawn(move || {
                    let r = writer(db, t, 0x5eed + t);
                    writing.fetch_sub(1, Ordering::SeqCst);
                    r
                })
            })
            .collect();
        flush.wait_reached();
        // A condition wait (the metric has no notification), not a timing
        // assumption: it ends as soon as a write waits, or the writers end.
        while db.metrics().user.writers_blocked == 0 && writing.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        flush.release();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    db.set_test_hook(None);
    let mut cancelled_total = 0;
    for (t, (done, cancelled)) in results.iter().enumerate() {
        let t = t as u64;
        assert_eq!(done.len() + cancelled.len(), WRITES as usize);
        cancelled_total += cancelled.len();
        for &i in done {
            assert_whole(
                &read(&db, t, i).expect("a completed write is readable"),
                t,
                i,
            );
        }
        for &i in cancelled {
            assert!(read(&db, t, i).is_none(), "cancelled t{t}-{i} was applied");
        }
    }
    assert!(cancelled_total > 100, "{cancelled_total} cancelled");
    assert!(
        db.metrics().user.flushes_completed > 0,
        "no flush ran under the load"
    );
    // Futures waited for dirty memory too (so some were cancelled there).
    assert!(db.metrics().user.writers_blocked > 0, "no write waited");

    db.crash();
    let db = Database::open(config(dir.path())).unwrap();
    for (t, (done, cancelled)) in results.iter().enumerate() {
        let t = t as u64;
        for &i in done {
            let m = read(&db, t, i).expect("a completed write survives the crash");
            assert_whole(&m, t, i);
        }
        for &i in cancelled {
            // May come back from the log, but only whole.
            if let Some(m) = read(&db, t, i) {
                assert_whole(&m, t, i);
            }
        }
    }
    db.close().unwrap();
}

/// The future is `Send` (a multi-threaded runtime can move it), and bad
/// input fails from it as from `apply`.
#[test]
fn apply_async_is_send_and_reports_bad_input() {
    fn send<T: Send>(_: &T) {}
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    let fut = db.apply_async("t", write(0, 0));
    send(&fut);
    drop(fut);
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    let mut unknown = Box::pin(db.apply_async("nope", write(0, 1)));
    let Poll::Ready(Err(err)) = unknown.as_mut().poll(&mut cx) else {
        panic!("an unknown table is refused at the first poll");
    };
    assert!(matches!(err, Error::UnknownTable { .. }), "{err}");
    let empty = Mutation::builder(key(0, 2))
        .build()
        .unwrap_or_else(|_| write(0, 2));
    if empty.is_empty() {
        let mut fut = Box::pin(db.apply_async("t", empty));
        let Poll::Ready(Err(err)) = fut.as_mut().poll(&mut cx) else {
            panic!("an empty mutation is refused at the first poll");
        };
        assert!(matches!(err, Error::InvalidMutation { .. }), "{err}");
    }
    db.close().unwrap();
    let mut closed = Box::pin(db.apply_async("t", write(0, 3)));
    let Poll::Ready(Err(err)) = closed.as_mut().poll(&mut cx) else {
        panic!("a closed database refuses at the first poll");
    };
    assert!(matches!(err, Error::Closed { .. }), "{err}");
}
