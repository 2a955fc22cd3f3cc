//! Issue 36, "compaction keeps up": a table's flushes wait for its
//! compactions once its sorted runs pile up, so that the count stays
//! bounded however fast the writes come. Compaction is held at the start
//! of its jobs by a test hook (a gate the test opens), so nothing here
//! depends on how fast the machine is: without the throttle every flush
//! adds a run; with it, a flush over the slowdown count waits for a
//! compaction step, and goes on once compaction does.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use replica::compaction::{SizeTieredOptions, StrategyConfig};
use replica::{
    CommitLogMode, Database, DatabaseConfig, FlushThrottleConfig, HookPoint, TableSchema,
};

const FLUSHES: u64 = 10;
const SLOW: usize = 3;
const STOP: usize = 5;

fn row(i: u64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("k{}", i % 200)).unwrap())
        .cell(
            i.to_be_bytes().to_vec(),
            0,
            Cell::live(vec![b'x'; 100], Timestamp::from_micros(i as i64 + 1)),
        )
        .build()
        .unwrap()
}

/// A gate compaction jobs wait at until the test opens it.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn pass(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

/// A database whose compaction jobs wait at `gate`, and that tells
/// `held` each time a flush waits for compaction.
fn open(
    dir: &std::path::Path,
    throttle: FlushThrottleConfig,
    gate: &Arc<Gate>,
) -> (Database, mpsc::Receiver<()>) {
    let mut config = DatabaseConfig::new(dir);
    config.commitlog = CommitLogMode::Off;
    config.compaction.strategy = StrategyConfig::SizeTiered(SizeTieredOptions::default());
    config.compaction.flush_throttle = throttle;
    let db = Database::open(config).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    let (tx, held) = mpsc::channel();
    let tx = Mutex::new(tx);
    let gate = Arc::clone(gate);
    db.set_test_hook(Some(Arc::new(move |point| match point {
        HookPoint::CompactionJobStarting => gate.pass(),
        HookPoint::FlushHeldForCompaction => {
            let _ = tx.lock().unwrap().send(());
        }
        _ => {}
    })));
    (db, held)
}

/// Writes and flushes `FLUSHES` batches; returns the most runs seen
/// after a flush.
fn flush_batches(db: &Database) -> usize {
    let mut most = 0;
    for f in 0..FLUSHES {
        for i in 0..200 {
            db.apply("t", &row(f * 200 + i)).unwrap();
        }
        db.flush("t").unwrap();
        most = most.max(db.metrics().tables[0].compaction.sorted_runs);
    }
    most
}

#[test]
fn without_the_throttle_every_flush_adds_a_run_while_compaction_is_held() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Gate::default());
    let (db, held) = open(dir.path(), FlushThrottleConfig::OFF, &gate);
    let most = flush_batches(&db);
    assert_eq!(
        most, FLUSHES as usize,
        "compaction was held: nothing merged"
    );
    assert!(held.try_recv().is_err(), "no flush waited");
    gate.open();
    db.close().unwrap();
}

#[test]
fn with_it_flushes_wait_for_compaction_and_go_on_as_it_does() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Gate::default());
    let throttle = FlushThrottleConfig {
        slowdown_runs: SLOW,
        stop_runs: STOP,
    };
    let (db, held) = open(dir.path(), throttle, &gate);
    let db = Arc::new(db);
    let writer = {
        let db = Arc::clone(&db);
        thread::spawn(move || flush_batches(&db))
    };
    // The fourth flush gives size-tiered its first job, which the gate
    // holds; the next flush, over the slowdown count, waits for it.
    held.recv_timeout(Duration::from_secs(60))
        .expect("a flush over the slowdown count waits for the held compaction");
    let m = &db.metrics().tables[0];
    let runs = m.compaction.sorted_runs;
    assert!((SLOW..=STOP).contains(&runs), "held at {runs} runs");
    assert!(m.flushes < FLUSHES, "the writer is held back");
    gate.open();
    let most = writer.join().unwrap();
    // The flush that was writing when the count reached the stop adds one.
    assert!(most <= STOP + 1, "{most} runs");
    let m = &db.metrics().tables[0];
    assert_eq!(m.flushes, FLUSHES);
    assert!(m.compaction.flushes_throttled >= 1);
    println!(
        "at most {most} runs; {} flushes waited, {:?} in all",
        m.compaction.flushes_throttled, m.compaction.flush_throttle_wait
    );
    db.close().unwrap();
}

#[test]
fn a_throttle_that_slows_above_its_stop_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.compaction.flush_throttle = FlushThrottleConfig {
        slowdown_runs: 9,
        stop_runs: 4,
    };
    let e = Database::open(config).unwrap_err().to_string();
    assert!(
        e.contains("flush_throttle") && e.contains("slowdown_runs at most stop_runs"),
        "{e}"
    );
}
