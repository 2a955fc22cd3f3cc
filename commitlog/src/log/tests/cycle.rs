//! The write-and-sync cycle: periodic and batch modes, failures.

use super::*;

#[test]
fn io_failure_is_sticky_and_named() {
    let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
    log.add(1, &mutation("k", 10)).unwrap();
    storage.0.lock().fail_writes = true;
    let err = log.add(1, &mutation("k", 10)).unwrap_err();
    assert!(matches!(err, Error::Failed(_)), "{err}");
    let cause = std::error::Error::source(&err).expect("the I/O error is the source");
    assert!(
        cause.to_string().contains("injected write failure"),
        "{cause}"
    );
    storage.0.lock().fail_writes = false;
    assert!(matches!(
        log.add(1, &mutation("k", 10)),
        Err(Error::Failed(_))
    ));
}

#[test]
fn periodic_add_returns_before_the_sync_and_sync_makes_it_durable() {
    let (log, storage) = mem_log(small(SyncMode::Periodic(Duration::from_secs(3600))));
    // The first cycle syncs (no sync yet); afterwards an hour must pass.
    log.add(1, &mutation("a", 10)).unwrap();
    log.sync().unwrap();
    let pos = log.add(1, &mutation("b", 10)).unwrap();
    let at = pos.offset as usize;
    let in_durable = |s: &MemStorage| {
        s.0.lock()
            .durable
            .get(&pos.segment)
            .is_some_and(|d| d[at..at + 4] != [0; 4])
    };
    assert!(!in_durable(&storage), "not synced before the interval");
    log.sync().unwrap();
    assert!(in_durable(&storage));
    let stats = log.stats();
    assert_eq!((stats.entries, stats.synced_entries), (2, 2));
}

/// Periodic mode with 1 MiB segments, room for 64 of them and a
/// buffer budget of `budget` bytes.
pub(super) fn roomy_periodic(interval: Duration, budget: usize) -> Config {
    Config {
        segment_size: 1 << 20,
        total_size_limit: 64 << 20,
        buffer_budget: Some(budget),
        ..small(SyncMode::Periodic(interval))
    }
}

#[test]
fn periodic_writers_wait_for_a_sync_that_lags_two_intervals() {
    lagging_sync_holds_the_writer(crate::PeriodicAck::Buffered);
}

/// With `PeriodicAck::Written`, every append returns with its entry in the
/// file, and the lagging-sync hold still applies on top.
#[test]
fn written_acks_return_once_written_until_the_sync_lags() {
    lagging_sync_holds_the_writer(crate::PeriodicAck::Written);
}

/// A writer appends until the oldest unsynced entry is two intervals old
/// and it is held; released, its held append is durable on return. With
/// buffered acknowledgements the disk stops (nothing written, so nothing
/// synced); with written ones only the syncs stop (each append must find
/// its entry in the file on return).
fn lagging_sync_holds_the_writer(ack: crate::PeriodicAck) {
    use crate::sync::plain::{AtomicBool, Ordering as O};
    let written_acks = ack == crate::PeriodicAck::Written;
    let mut config = roomy_periodic(Duration::from_millis(1), 64 << 20);
    config.periodic_ack = ack;
    let (log, storage) = mem_log(config);
    let log = PlainArc::new(log);
    if written_acks {
        storage.0.lock().stall_syncs = true;
    } else {
        storage.0.lock().stall = true;
    }
    let stop = PlainArc::new(AtomicBool::new(false));
    let writer = {
        let (log, storage, stop) = (log.clone(), storage.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut appended = 0u64;
            loop {
                let pos = log.add(1, &mutation("k", 10)).unwrap();
                appended += 1;
                let s = storage.0.lock();
                let at = pos.offset as usize;
                let header = |bytes: &[u8]| {
                    format::parse_entry_header(&bytes[at..at + format::ENTRY_HEADER_LEN])
                        .is_some_and(|h| h.segment == pos.segment)
                };
                if written_acks {
                    assert!(header(&s.files[&pos.segment]), "written on return");
                }
                if stop.load(O::SeqCst) {
                    // The one append in flight when the test stopped
                    // the writer was the held one: durable on return.
                    assert!(header(&s.durable[&pos.segment]), "durable on return");
                    return appended;
                }
            }
        })
    };
    // Appends return (at once, or once written) until the oldest unsynced
    // one is two intervals old; then the writer is held.
    log.wait_sync_lag_waits(1);
    stop.store(true, O::SeqCst);
    storage.unstall();
    let appended = writer.join().unwrap();
    assert!(appended >= 2, "earlier appends returned before any sync");
    let stats = log.stats();
    assert_eq!(stats.sync_lag_waits, 1);
    assert_eq!(stats.entries, appended);
}

#[test]
fn a_periodic_batch_returns_before_the_sync() {
    let (log, _) = mem_log(small(SyncMode::Periodic(Duration::from_secs(3600))));
    log.add(1, &mutation("a", 10)).unwrap();
    log.sync().unwrap();
    let m = mutation("b", 10);
    let positions = log.add_batch(&[(1, &m), (2, &m)]).unwrap();
    assert!(positions[0] < positions[1]);
    assert_eq!(
        log.stats().synced_entries,
        1,
        "not synced before the interval"
    );
    log.sync().unwrap();
    assert_eq!(log.stats().synced_entries, 3);
}

#[test]
fn periodic_writers_write_their_buffers_out_while_a_long_sync_runs() {
    let config = roomy_periodic(Duration::from_secs(3600), 1 << 19);
    let (log, storage) = mem_log(config);
    let log = PlainArc::new(log);
    // The flusher's first periodic sync is due at once: let it end before
    // the stall, so the stalled sync is the one `sync` asks for below.
    log.add(1, &mutation("a", 1000)).unwrap();
    log.sync().unwrap();
    storage.0.lock().stall_syncs = true;
    log.add(1, &mutation("a", 1000)).unwrap();
    let syncer = {
        let log = log.clone();
        std::thread::spawn(move || log.sync())
    };
    storage.wait_for_a_stalled_sync();
    // The fdatasync is stuck; appends of twice the buffer budget still
    // go through: the writers write the buffers out themselves.
    let positions: Vec<ReplayPosition> = (0..1000)
        .map(|_| log.add(1, &mutation("b", 1000)).unwrap())
        .collect();
    // Early ones were written out (the last ones may still wait in the
    // buffer, below the budget).
    let early = positions[100];
    let written = storage.0.lock().files[&early.segment].clone();
    let at = early.offset as usize;
    let h = format::parse_entry_header(&written[at..at + format::ENTRY_HEADER_LEN]);
    assert!(h.is_some_and(|h| h.segment == early.segment), "written");
    assert!(
        log.stats().synced_entries <= 1,
        "the stuck sync covers none of them"
    );
    storage.unstall();
    syncer.join().unwrap().unwrap();
    log.sync().unwrap();
    assert_eq!(log.stats().synced_entries, 1002);
}

/// A periodic log (no periodic sync due for an hour) with a closed segment
/// that no table needs: more than a segment of table 1, all handed back,
/// so the next sync retires it.
fn a_segment_to_retire_at_the_next_sync() -> (std::sync::Arc<CommitLog>, MemStorage) {
    let config = roomy_periodic(Duration::from_secs(3600), 1 << 19);
    let (log, storage) = mem_log(config);
    let log = std::sync::Arc::new(log);
    // The flusher's first periodic sync is due at once: let it end first.
    let mut flushed = ReplayPositionSet::new();
    flushed.insert(log.add(1, &mutation("a", 1000)).unwrap());
    log.sync().unwrap();
    for _ in 0..1500 {
        flushed.insert(log.add(1, &mutation("a", 1000)).unwrap());
    }
    let first = log.stats().segments_created;
    assert!(first >= 2, "{first} segments");
    log.discard_flushed(1, &flushed);
    assert!(storage.0.lock().removals.is_empty(), "not synced yet");
    (log, storage)
}

/// The segments a periodic sync lets go are deleted while the writers go
/// on: with the deletion stuck, appends of twice the buffer budget still
/// go through and reach the files, as during the sync itself. (The
/// flusher used to delete them as an ordinary step, with writers at the
/// buffer budget waiting for it: under load, every writer stopped for as
/// long as an interval's worth of segments took to delete.)
#[test]
fn periodic_writers_write_their_buffers_out_while_retired_segments_are_deleted() {
    let (log, storage) = a_segment_to_retire_at_the_next_sync();
    storage.0.lock().stall_removes = true;
    let syncer = {
        let log = log.clone();
        std::thread::spawn(move || log.sync())
    };
    storage.wait_for_a_stalled_remove();
    // Appends of twice the buffer budget go through while the deletion is
    // stuck (without the fix they timed out at the budget).
    let positions: Vec<ReplayPosition> = (0..1000)
        .map(|_| log.add(2, &mutation("b", 1000)).unwrap())
        .collect();
    let early = positions[100];
    let written = storage.0.lock().files[&early.segment].clone();
    let at = early.offset as usize;
    let h = format::parse_entry_header(&written[at..at + format::ENTRY_HEADER_LEN]);
    assert!(h.is_some_and(|h| h.segment == early.segment), "written");
    storage.unstall();
    syncer.join().unwrap().unwrap();
    // The stalled removal finishes in the thread that retires segments,
    // which may end after the sync returns.
    storage.wait_for_a_removal();
    assert!(
        !storage.0.lock().removals.is_empty(),
        "retired after the sync"
    );
}

/// A retired segment's file is closed with the state lock released:
/// with the close stuck, appends of twice the buffer budget still go
/// through. (The retirement used to drop the file under the lock; closing
/// the last descriptor of a removed file frees its blocks, about 20 ms a
/// segment on ext4, and a sync that retired dozens stopped every writer
/// for up to a second under replica-stress's default load.)
#[test]
fn periodic_writers_go_on_while_retired_segments_are_closed() {
    let (log, storage) = a_segment_to_retire_at_the_next_sync();
    storage.0.lock().stall_closes = true;
    let syncer = {
        let log = log.clone();
        std::thread::spawn(move || log.sync())
    };
    storage.wait_for_a_stalled_close();
    let (done, appended) = std::sync::mpsc::channel();
    let appender = {
        let log = log.clone();
        std::thread::spawn(move || {
            for _ in 0..1000 {
                log.add(2, &mutation("b", 1000)).unwrap();
            }
            done.send(()).unwrap();
        })
    };
    // Without the fix the appender stops at the state lock, which the
    // retirement holds while the close is stuck: fail rather than hang.
    let went_through = appended.recv_timeout(Duration::from_secs(20)).is_ok();
    storage.unstall();
    assert!(
        went_through,
        "appends stopped while a retired file was closed"
    );
    appender.join().unwrap();
    syncer.join().unwrap().unwrap();
    storage.wait_for_a_removal();
}

#[test]
fn batch_with_a_window_groups_writers() {
    let (log, _) = mem_log(small(SyncMode::Batch(Duration::from_millis(5))));
    let log = PlainArc::new(log);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let log = PlainArc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..10 {
                    log.add(t, &mutation(&format!("{t}-{i}"), 20)).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = log.stats();
    assert_eq!(stats.synced_entries, 40);
    assert!(stats.syncs < 40, "{stats:?}");
}

/// While a periodic fdatasync is stuck, an entry far below the buffer
/// budget still reaches the file within about the write interval: the
/// writer thread writes it out, nobody waits for the sync.
#[test]
fn periodic_entries_are_written_out_during_a_long_sync() {
    let (log, storage, syncer) =
        log_with_a_stuck_sync(Duration::from_millis(2), crate::PeriodicAck::Buffered);
    let pos = log.add(1, &mutation("b", 100)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !written(&storage, pos) {
        assert!(Instant::now() < deadline, "not written out during the sync");
        std::thread::sleep(Duration::from_millis(1));
    }
    release_the_stuck_sync(&log, &storage, syncer);
}

/// With the write interval off, the same entry waits in the buffer until
/// the sync ends (what the interval fixes).
#[test]
fn without_a_write_interval_entries_wait_for_the_sync() {
    let (log, storage, syncer) =
        log_with_a_stuck_sync(Duration::ZERO, crate::PeriodicAck::Buffered);
    let pos = log.add(1, &mutation("b", 100)).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(!written(&storage, pos), "nothing wrote it during the sync");
    storage.unstall();
    syncer.join().unwrap().unwrap();
    log.sync().unwrap();
}

/// With `PeriodicAck::Written`, while a periodic fdatasync is stuck, a
/// blocking `add` returns with its entry written (it runs the write
/// itself), and a future's entry, which no writer leads, is written out by
/// the writer thread within about the write interval: nobody waits for the
/// sync.
#[test]
fn written_acks_are_written_during_a_long_sync() {
    let (log, storage, syncer) =
        log_with_a_stuck_sync(Duration::from_millis(2), crate::PeriodicAck::Written);
    let pos = log.add(1, &mutation("b", 100)).unwrap();
    assert!(
        written(&storage, pos),
        "a blocking add returns once written"
    );
    let pos = futures_lite_block_on(log.add_async(1, &mutation("c", 100)).unwrap());
    assert!(written(&storage, pos), "a future resolves once written");
    release_the_stuck_sync(&log, &storage, syncer);
}

/// With `PeriodicAck::Written` and the write interval off there is no
/// writer thread: a future's entry waits in the buffer while the sync is
/// stuck (what the interval fixes), until a blocking writer's own write
/// cycle takes it along.
#[test]
fn without_a_write_interval_written_futures_wait_for_a_blocking_writer() {
    let (log, storage, syncer) = log_with_a_stuck_sync(Duration::ZERO, crate::PeriodicAck::Written);
    let mut fut = log.add_async(1, &mutation("b", 100)).unwrap();
    let waiting = fut.position();
    let noop = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(noop);
    std::thread::sleep(Duration::from_millis(50));
    assert!(std::pin::Pin::new(&mut fut).poll(&mut cx).is_pending());
    assert!(
        !written(&storage, waiting),
        "nothing wrote the future's entry"
    );
    let pos = log.add(1, &mutation("c", 100)).unwrap();
    assert!(written(&storage, pos) && written(&storage, waiting));
    assert!(matches!(
        std::pin::Pin::new(&mut fut).poll(&mut cx),
        std::task::Poll::Ready(Ok(p)) if p == waiting
    ));
    storage.unstall();
    syncer.join().unwrap().unwrap();
    log.sync().unwrap();
}

/// A periodic log (no sync due for an hour) writing out every
/// `write_interval` during syncs, acknowledging per `ack`, with a sync the
/// store holds (see [`stuck_sync`]).
fn log_with_a_stuck_sync(
    write_interval: Duration,
    ack: crate::PeriodicAck,
) -> (
    PlainArc<CommitLog>,
    MemStorage,
    std::thread::JoinHandle<Result<(), Error>>,
) {
    let mut config = roomy_periodic(Duration::from_secs(3600), 1 << 19);
    config.write_interval = write_interval;
    config.periodic_ack = ack;
    let (log, storage) = mem_log(config);
    let log = PlainArc::new(log);
    let syncer = stuck_sync(&log, &storage);
    (log, storage, syncer)
}

/// Checks that the stuck sync is still stuck (only the first entry
/// synced), then lets it finish.
fn release_the_stuck_sync(
    log: &CommitLog,
    storage: &MemStorage,
    syncer: std::thread::JoinHandle<Result<(), Error>>,
) {
    assert_eq!(
        log.stats().synced_entries,
        1,
        "the stuck sync is still stuck"
    );
    storage.unstall();
    syncer.join().unwrap().unwrap();
}

/// Starts a sync that the store holds (after one that went through, so
/// the log has synced once) and returns its thread once it is stuck.
fn stuck_sync(
    log: &PlainArc<CommitLog>,
    storage: &MemStorage,
) -> std::thread::JoinHandle<Result<(), Error>> {
    log.add(1, &mutation("a", 100)).unwrap();
    log.sync().unwrap();
    storage.0.lock().stall_syncs = true;
    log.add(1, &mutation("a", 100)).unwrap();
    let syncer = {
        let log = log.clone();
        std::thread::spawn(move || log.sync())
    };
    storage.wait_for_a_stalled_sync();
    syncer
}

/// Whether the entry at `pos` is in its segment file (written, synced or
/// not).
fn written(storage: &MemStorage, pos: ReplayPosition) -> bool {
    let s = storage.0.lock();
    let at = pos.offset as usize;
    format::parse_entry_header(&s.files[&pos.segment][at..at + format::ENTRY_HEADER_LEN])
        .is_some_and(|h| h.segment == pos.segment)
}

/// Polls `fut` to completion on this thread, parking between polls.
fn futures_lite_block_on(mut fut: Durable) -> ReplayPosition {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: PlainArc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(PlainArc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let std::task::Poll::Ready(r) = std::pin::Pin::new(&mut fut).poll(&mut cx) {
            return r.unwrap();
        }
        assert!(Instant::now() < deadline, "the future never resolved");
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

/// Write-back starts every `bytes_per_sync` bytes written to a segment,
/// over contiguous ranges, and never when the option is 0.
#[test]
fn write_back_starts_every_n_bytes_and_not_at_zero() {
    for per_sync in [0u64, 16 << 10] {
        let mut config = roomy_periodic(Duration::from_secs(3600), 1 << 19);
        config.bytes_per_sync = per_sync;
        let (log, storage) = mem_log(config);
        let positions: Vec<ReplayPosition> = (0..300)
            .map(|_| log.add(1, &mutation("w", 1000)).unwrap())
            .collect();
        log.sync().unwrap();
        let calls = storage.0.lock().writebacks.clone();
        if per_sync == 0 {
            assert!(calls.is_empty(), "{calls:?}");
            continue;
        }
        let segment = positions[0].segment;
        assert!(positions.iter().all(|p| p.segment == segment));
        let written = u64::from(log.stats().bytes as u32);
        // Contiguous from the segment's start, each at least N bytes and
        // less than N plus one buffer's worth.
        let mut at = 0;
        for &(s, offset, len) in &calls {
            assert_eq!((s, offset), (segment, at), "{calls:?}");
            assert!(len >= per_sync, "{calls:?}");
            at += len;
        }
        assert!(
            written - at < per_sync + (1 << 19),
            "{written} written, write-back started up to {at}"
        );
        assert!(calls.len() as u64 >= written / (per_sync + (1 << 19)));
    }
}

/// Batch mode starts no write-back: each cycle's fdatasync writes it all.
#[test]
fn batch_mode_starts_no_write_back() {
    let mut config = small(SyncMode::Batch(Duration::ZERO));
    config.bytes_per_sync = 4096;
    let (log, storage) = mem_log(config);
    for _ in 0..12 {
        log.add(1, &mutation("w", 1000)).unwrap();
    }
    assert!(storage.0.lock().writebacks.is_empty());
}
