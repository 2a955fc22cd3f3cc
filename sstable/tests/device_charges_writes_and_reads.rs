//! The device model: a writer charges every byte of the sstable's files
//! to its device (`WriterOptions::device`), and an sstable opened on a
//! device (`Sstable::open_on`) charges every byte it reads, at open and
//! by its readers, to that device, and nothing to any other.

use std::sync::Arc;
use std::time::Duration;

use device::{Clock, Device, ManualClock};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use sstable::{Sstable, Writer, WriterOptions};

/// A device that never makes anyone wait (a burst larger than anything
/// written), on a clock that does not move: this checks the counting; the
/// blocking is the device crate's.
fn device(name: &str) -> Arc<Device> {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
    Device::with_clock(name, 1 << 20, 1 << 40, clock).unwrap()
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

#[test]
fn every_byte_written_and_read_is_charged_to_its_device() {
    let dir = tempfile::tempdir().unwrap();
    let (write_dev, read_dev) = (device("flush"), device("data"));
    let mut options = WriterOptions::default();
    options.block_size = 512;
    options.io_buffer = 4096;
    options.device = Some(Arc::clone(&write_dev));
    let mut writer = Writer::create(dir.path(), options).unwrap();
    let mutations = Mutation::reconcile_all((0..300u32).map(|i| {
        Mutation::builder(DecoratedKey::from_bytes(format!("k{i:04}")).unwrap())
            .cell(
                format!("r{i}"),
                0,
                Cell::live(vec![i as u8; 200], Timestamp::from_micros(1)),
            )
            .build()
            .unwrap()
    }));
    for m in &mutations {
        for f in m.fragments() {
            writer.write(&f).unwrap();
        }
    }
    let committed = writer.commit().unwrap();
    // Every file of the committed sstable went through the device, and
    // nothing was read.
    let on_disk = dir_bytes(dir.path());
    let w = write_dev.stats();
    assert_eq!(w.bytes_written, on_disk, "{w:?}");
    assert_eq!(w.bytes_read, 0);
    assert_eq!(w.waited, Duration::ZERO);

    // Opened on the other device: reads are charged there.
    let table = Sstable::open_on(
        dir.path(),
        committed.generation,
        Some(Arc::clone(&read_dev)),
    )
    .unwrap();
    let at_open = read_dev.stats().bytes_read;
    assert!(at_open > 0, "the small components are read at open");
    let mut scan = table.scan();
    let mut fragments = 0;
    while scan.next_fragment().unwrap().is_some() {
        fragments += 1;
    }
    assert!(fragments >= 900);
    let after_scan = read_dev.stats().bytes_read;
    assert!(
        after_scan - at_open >= committed.statistics.data_size - 8,
        "a full scan reads every Data block: {after_scan} - {at_open}"
    );
    let key = mutations[7].key().clone();
    assert!(table.read_partition(&key).unwrap().is_some());
    assert!(read_dev.stats().bytes_read > after_scan, "a lookup reads");
    assert_eq!(read_dev.stats().bytes_written, 0);
    // The writer's device saw none of it.
    assert_eq!(write_dev.stats(), w);

    // Opened without a device, reads are charged nowhere.
    let plain = Sstable::open(dir.path(), committed.generation).unwrap();
    let before = read_dev.stats();
    assert!(plain.read_partition(&key).unwrap().is_some());
    assert_eq!(read_dev.stats(), before);
}
