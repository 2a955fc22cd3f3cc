//! A table written once and then idle must not pin the oldest segment
//! forever: the log repeats its flush requests until the segment is freed,
//! and a table with nothing in memory lets go without a flush.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use commitlog::{CommitLog, Config, FlushRequest, SyncMode};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

fn m(i: usize) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("k{i}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![1u8; 700], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

#[test]
fn an_idle_table_is_asked_again_and_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Config::default();
    c.segment_size = 8192;
    c.total_size_limit = 8 * 8192;
    c.sync = SyncMode::Periodic(Duration::from_secs(3600));
    c.write_timeout = Duration::from_secs(30);
    let (log, _) = CommitLog::open(dir.path(), c.clone(), |_, _, _| {}).unwrap();
    let log = Arc::new(log);
    let asked: Arc<Mutex<HashMap<u64, usize>>> = Arc::default();
    {
        let (weak, asked) = (Arc::downgrade(&log), Arc::clone(&asked));
        log.set_flush_handler(move |requests: &[FlushRequest]| {
            let Some(log) = weak.upgrade() else { return };
            for r in requests {
                let n = {
                    let mut a = asked.lock().unwrap();
                    let n = a.entry(r.table).or_default();
                    *n += 1;
                    *n
                };
                // The busy table flushes at once. The idle table misses its
                // first request (its flush was not started), then, its
                // memtable having nothing left in memory, lets go without
                // a flush.
                if r.table == 2 || n >= 2 {
                    log.discard_completed(r.table, r.up_to);
                }
            }
        });
    }
    let first = log.add(1, &m(0)).unwrap();
    // Write the size limit over four times: impossible if the idle table
    // pinned the first segment (the writer would time out).
    let total = 4 * c.total_size_limit as usize / 700;
    for i in 0..total {
        log.add(2, &m(i)).unwrap();
    }
    let asked = asked.lock().unwrap().clone();
    assert!(asked[&1] >= 2, "the idle table was asked again: {asked:?}");
    let segments: Vec<u64> = log.dirty_tables().iter().map(|(id, _)| *id).collect();
    assert!(
        !segments.contains(&first.segment),
        "the idle table's segment is gone: {segments:?}"
    );
    let stats = log.stats();
    assert!(stats.disk_bytes <= c.total_size_limit, "{stats:?}");
    assert!(stats.segments_retired > 0);
}

#[test]
fn writers_wait_at_the_limit_and_resume_when_the_owner_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Config::default();
    c.segment_size = 8192;
    c.total_size_limit = 3 * 8192;
    c.sync = SyncMode::Batch(Duration::ZERO);
    c.write_timeout = Duration::from_secs(30);
    c.flush_request_interval = Duration::from_millis(10);
    let (log, _) = CommitLog::open(dir.path(), c, |_, _, _| {}).unwrap();
    let log = Arc::new(log);
    // The owner flushes on its own thread, later than the request: the
    // writer must wait at the limit meanwhile, then go on.
    let (tx, rx) = std::sync::mpsc::channel::<FlushRequest>();
    log.set_flush_handler(move |requests: &[FlushRequest]| {
        for r in requests {
            let _ = tx.send(*r);
        }
    });
    let owner = {
        let weak = Arc::downgrade(&log);
        std::thread::spawn(move || {
            let mut flushed = 0;
            for r in rx {
                let Some(log) = weak.upgrade() else { break };
                log.discard_completed(r.table, r.up_to);
                flushed += 1;
            }
            flushed
        })
    };
    for i in 0..200 {
        log.add(1, &m(i)).unwrap();
    }
    let stats = log.stats();
    assert!(
        stats.flush_requests > 0 && stats.segments_retired > 0,
        "{stats:?}"
    );
    assert!(stats.disk_bytes <= 3 * 8192);
    log.set_flush_handler(|_| {});
    drop(log);
    assert!(owner.join().unwrap() > 0);
}
