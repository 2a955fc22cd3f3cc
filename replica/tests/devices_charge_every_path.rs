//! The device model charges every path to the device of the directory it
//! touches: flush writes to the flush directory's device, sstable reads
//! to the device the sstable is on, compaction's reads and writes to its
//! table directory's device, the commit log's writes (and replay's
//! reads) to the log's device, and nothing to the others.

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::compaction::StrategyConfig;
use replica::{CacheSize, CommitLogMode, Database, DatabaseConfig, DeviceStats, TableSchema};

/// Fast enough that nothing here waits: the test checks where bytes are
/// charged; the blocking is the device crate's.
const FAST: u64 = 64 << 30;

fn write(key: u32, round: i64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("k{key:04}")).unwrap())
        .cell(
            format!("r{round}"),
            0,
            Cell::live(vec![round as u8; 500], Timestamp::from_micros(round)),
        )
        .build()
        .unwrap()
}

fn device<'a>(stats: &'a [DeviceStats], name: &str) -> &'a DeviceStats {
    stats.iter().find(|d| d.name == name).unwrap()
}

fn config(base: &std::path::Path, flush_dir: bool) -> DatabaseConfig {
    let mut config = DatabaseConfig::new(base.join("data"));
    if flush_dir {
        config.flush_dirs = vec![base.join("flush")];
    }
    config.commitlog = CommitLogMode::Batch(std::time::Duration::ZERO);
    config.cache_size = CacheSize::Off;
    // The values repeat one byte: uncompressed, the files have a known size.
    config.sstable_writer_options.compression = false;
    config.compaction.strategy = StrategyConfig::None;
    let commitlog_dir = config.commitlog_dir();
    let model = &mut config.devices;
    model
        .add_device("data", FAST)
        .add_device("flush", FAST)
        .add_device("log", FAST)
        .place(base.join("data"), "data")
        .place(commitlog_dir, "log");
    if flush_dir {
        model.place(base.join("flush"), "flush");
    }
    config
}

#[test]
fn flushes_reads_and_the_log_go_to_their_own_devices() {
    let base = tempfile::tempdir().unwrap();
    let db = Database::open(config(base.path(), true)).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    for key in 0..200 {
        db.apply("t", &write(key, 1)).unwrap();
    }
    let m = db.metrics();
    let log_bytes = m.commitlog.unwrap().bytes;
    // Batch mode: every write was written (and synced) before it returned;
    // the log also zero-fills whole segments ahead of need (batch mode
    // preallocates), which are written too.
    let log_written = device(&m.devices, "log").bytes_written;
    let segment = u64::from(db.config().commitlog_segment_size);
    assert!(log_written >= log_bytes, "{log_written} {log_bytes}");
    assert_eq!(
        (log_written - log_bytes) % segment,
        0,
        "{log_written} {log_bytes}"
    );
    assert_eq!(device(&m.devices, "flush").bytes(), 0);

    db.flush("t").unwrap();
    let m = db.metrics();
    let flush = device(&m.devices, "flush").clone();
    assert!(
        flush.bytes_written >= m.sstable_bytes_written && m.sstable_bytes_written > 100_000,
        "{flush:?}, {} sstable bytes",
        m.sstable_bytes_written
    );
    // Opening the flushed sstable read its small components there.
    let opened = flush.bytes_read;
    assert!(opened > 0);
    // The data directory's device saw no sstable I/O, the log no more.
    assert_eq!(device(&m.devices, "data").bytes(), 0, "{:?}", m.devices);
    assert_eq!(device(&m.devices, "log").bytes_written, log_written);

    // A read (no cache) reads the sstable on the flush device.
    let got = db
        .get("t", write(7, 1).key(), ClusteringRange::full())
        .unwrap();
    assert_eq!(got, Some(write(7, 1)));
    let m = db.metrics();
    assert!(device(&m.devices, "flush").bytes_read > opened);
    assert_eq!(device(&m.devices, "data").bytes(), 0);

    // Replay reads the log through its device (a fresh database's devices
    // start at zero): writes not yet flushed when the database crashed
    // keep their segment.
    db.apply("t", &write(1, 2)).unwrap();
    db.crash();
    let db = Database::open(config(base.path(), true)).unwrap();
    let m = db.metrics();
    assert!(device(&m.devices, "log").bytes_read > 0, "{:?}", m.devices);
    db.close().unwrap();
}

#[test]
fn compaction_reads_and_writes_on_its_table_directorys_device() {
    let base = tempfile::tempdir().unwrap();
    // Flushes to the data directories: compaction finds its inputs there.
    let db = Database::open(config(base.path(), false)).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    for round in 1..=4 {
        for key in 0..100 {
            db.apply("t", &write(key, round)).unwrap();
        }
        db.flush("t").unwrap();
    }
    let before = db.metrics();
    assert_eq!(before.sstables(), 4);
    let data_before = device(&before.devices, "data").clone();
    assert!(data_before.bytes_written >= before.sstable_bytes_written);
    let log_before = device(&before.devices, "log").clone();

    // What a merge reads: every Data block of the inputs.
    let data_files: u64 = std::fs::read_dir(base.path().join("data").join("t"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with("-Data.db"))
        .map(|e| e.metadata().unwrap().len() - 8)
        .sum();
    assert!(data_files > 100_000);

    db.compact("t").unwrap();
    let after = db.metrics();
    assert_eq!(after.sstables(), 1);
    let data = device(&after.devices, "data");
    let (read, written) = (
        data.bytes_read - data_before.bytes_read,
        data.bytes_written - data_before.bytes_written,
    );
    assert!(
        read >= data_files,
        "the inputs hold {data_files} bytes of Data blocks, the device was charged {read}"
    );
    assert!(
        written >= after.compaction.bytes_written && after.compaction.bytes_written > 0,
        "compaction wrote {} bytes, the device was charged {written}",
        after.compaction.bytes_written
    );
    // Nothing of it went to the other devices.
    assert_eq!(device(&after.devices, "log"), &log_before);
    assert_eq!(device(&after.devices, "flush").bytes(), 0);
    db.close().unwrap();
}
