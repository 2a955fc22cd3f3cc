//! The device model: a log whose `Config::device` is set charges every
//! byte it writes to its segments to that device (and a preallocated
//! reserve's zeros), and replay charges what it reads.

use std::sync::Arc;

use commitlog::{CommitLog, Config, Preallocate, SyncMode};
use device::{Clock, Device, ManualClock};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

/// A device that never makes anyone wait (its burst exceeds everything
/// written), on a clock that does not move: the test checks the counting.
fn device(name: &str) -> Arc<Device> {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
    Device::with_clock(name, 1 << 20, 1 << 40, clock).unwrap()
}

fn write(i: usize) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("k{i}")).unwrap())
        .cell(
            "r",
            0,
            Cell::live(vec![7u8; 300], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

fn segment_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

#[test]
fn appended_bytes_are_charged_as_written_and_replay_as_read() {
    let dir = tempfile::tempdir().unwrap();
    let log_dev = device("log");
    let mut config = Config::default();
    config.segment_size = 64 << 10;
    config.sync = SyncMode::Periodic(std::time::Duration::from_millis(5));
    config.device = Some(Arc::clone(&log_dev));
    let (log, _) = CommitLog::open(dir.path(), config, |_, _, _| {}).unwrap();
    for i in 0..500 {
        log.add(1, &write(i)).unwrap();
    }
    log.sync().unwrap();
    let stats = log.stats();
    log.close().unwrap();
    let s = log_dev.stats();
    // Everything appended (entries and segment headers) reached the
    // files through the device, once; nothing was read.
    assert!(stats.segments_created > 1, "{stats:?}");
    assert_eq!(s.bytes_written, stats.bytes, "{s:?} {stats:?}");
    assert_eq!(s.bytes_read, 0);

    // Replay reads every segment twice, whole, and charges it.
    let on_disk = segment_bytes(dir.path());
    let replay_dev = device("replay");
    let mut config = Config::default();
    config.device = Some(Arc::clone(&replay_dev));
    let mut replayed = 0;
    let (log, _) = CommitLog::open(dir.path(), config, |_, _, _| replayed += 1).unwrap();
    assert_eq!(replayed, 500);
    assert_eq!(replay_dev.stats().bytes_read, 2 * on_disk);
    log.close().unwrap();
    assert_eq!(log_dev.stats(), s, "the first device saw nothing more");
}

#[test]
fn a_preallocated_reserve_is_charged_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device("log");
    let mut config = Config::default();
    config.segment_size = 64 << 10;
    config.sync = SyncMode::Batch(std::time::Duration::ZERO);
    config.preallocate = Preallocate::Always;
    config.device = Some(Arc::clone(&dev));
    let (log, _) = CommitLog::open(dir.path(), config, |_, _, _| {}).unwrap();
    for i in 0..400 {
        log.add(1, &write(i)).unwrap();
    }
    let stats = log.stats();
    log.close().unwrap();
    let written = dev.stats().bytes_written;
    // The entries, plus at least one reserve of zeros (64 KiB each).
    assert!(written >= stats.bytes + (64 << 10), "{written} {stats:?}");
    assert_eq!(
        (written - stats.bytes) % (64 << 10),
        0,
        "{written} {stats:?}"
    );
}
