//! Write entries to a commit log, "crash" in the middle of a write, and
//! replay.
//!
//! In batch mode `add` returns only once an fdatasync covered the entry,
//! so every acknowledged write survives a crash. The crash here is made by
//! hand: the log is dropped (the process "stops"), and the entry that was
//! being written when the power went is torn, as a real crash mid-write
//! leaves it (its header on disk, the rest of its bytes still zeros).
//! Replay hands back every complete entry, in order, and reports the torn
//! tail instead of treating it as damage.
//!
//! Run with `cargo run --example write_crash_replay -p replmem-commitlog`.

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};
use std::time::Duration;

use commitlog::{CommitLog, Config, SyncMode};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

const TABLE: u64 = 1;
const ENTRIES: usize = 100;

/// The `i`th write of the example.
fn write(i: usize) -> Result<Mutation, mutation::Error> {
    Mutation::builder(DecoratedKey::from_bytes(format!("account:{}", i % 10))?)
        .cell(
            format!("txn:{i:04}"),
            0,
            Cell::live(
                format!("amount {}", i * 7),
                Timestamp::from_micros(i as i64 + 1),
            ),
        )
        .build()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Removed when `dir` is dropped, also if anything below fails.
    let dir = tempfile::tempdir()?;
    let mut config = Config::default();
    config.segment_size = 1 << 20;
    config.total_size_limit = 16 << 20;
    config.sync = SyncMode::Batch(Duration::ZERO);

    // A fresh log: nothing to replay.
    let (log, report) = CommitLog::open(dir.path(), config.clone(), |_, _, _| {})?;
    assert_eq!(report.entries, 0);

    // Every `add` is durable when it returns (batch mode).
    let mut positions = Vec::new();
    for i in 0..ENTRIES {
        positions.push(log.add(TABLE, &write(i)?)?);
    }
    // The last write: the one in flight when the power goes.
    let in_flight = log.add(TABLE, &write(ENTRIES)?)?;
    println!(
        "wrote {} entries to table {TABLE}, the last at segment {} offset {}",
        ENTRIES + 1,
        in_flight.segment,
        in_flight.offset
    );

    // The crash: the process stops (no flush, no discard) ...
    drop(log);
    // ... and the last entry only half reached the disk: its 16-byte
    // header did, the payload and checksum did not (still zeros, as the
    // preallocated segment was).
    let segment = dir
        .path()
        .join(format!("CommitLog-1-{}.log", in_flight.segment));
    let mut file = OpenOptions::new().write(true).open(&segment)?;
    let tear_at = u64::from(in_flight.offset) + 16;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(tear_at))?;
    file.write_all(&vec![0; (len - tear_at) as usize])?;
    file.sync_all()?;
    drop(file);
    println!("crash: tore the entry at offset {}", in_flight.offset);

    // Restart: open replays the log before taking new writes.
    let mut replayed = Vec::new();
    let (log, report) = CommitLog::open(dir.path(), config, |table, m, position| {
        replayed.push((table, m, position));
    })?;
    println!(
        "replay: {} entries from {} segment(s); torn tails {:?}; damaged segments {}",
        report.entries, report.segments, report.torn, report.corrupt_segments
    );

    // What the example shows, checked: every acknowledged entry came back,
    // in order, intact; the torn one is reported as torn, not as damage.
    assert_eq!(replayed.len(), ENTRIES);
    for (i, (table, m, position)) in replayed.iter().enumerate() {
        assert_eq!(*table, TABLE);
        assert_eq!(*m, write(i)?);
        assert_eq!(*position, positions[i]);
    }
    assert_eq!(report.torn.len(), 1);
    assert_eq!(report.torn[0].offset, in_flight.offset);
    assert_eq!(report.corrupt_segments, 0);

    // The owner would now apply the replayed mutations to memtables and
    // flush them; then the replayed segments can go.
    let last = positions[ENTRIES - 1];
    log.discard_completed(TABLE, last);
    println!(
        "the {} replayed entries are intact and in order; the torn write was dropped cleanly",
        replayed.len()
    );
    drop(log);
    dir.close()?;
    Ok(())
}
