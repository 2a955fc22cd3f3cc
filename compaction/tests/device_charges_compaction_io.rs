//! The device model: a set opened on a device reads its sstables through
//! it, so a job's reads of its inputs are charged there, and a job whose
//! writer options name a device charges its outputs' bytes to it (and
//! opens them on it).

mod common;

use std::sync::Arc;

use common::{flush, live, writer_options};
use compaction::{JobOptions, JobPlan, NothingOutside, SstableSet, Unthrottled, run_job};
use device::{Clock, Device, ManualClock};
use sstable::Component;

/// A device that never makes anyone wait, on a clock that does not move:
/// the test checks the counting.
fn device(name: &str) -> Arc<Device> {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
    Device::with_clock(name, 1 << 20, 1 << 40, clock).unwrap()
}

fn files_of(dir: &std::path::Path, generation: u64) -> u64 {
    Component::ALL
        .iter()
        .map(|&c| {
            std::fs::metadata(sstable::component_path(dir, generation, c))
                .unwrap()
                .len()
        })
        .sum()
}

#[test]
fn a_job_reads_and_writes_through_the_sets_device() {
    let dir = tempfile::tempdir().unwrap();
    {
        let set = SstableSet::open(dir.path()).unwrap();
        for round in 0..3 {
            flush(
                &set,
                (0..40)
                    .map(|k| live(&format!("k{k}"), round, 200))
                    .collect(),
            );
        }
    }
    let data = device("data");
    let set = SstableSet::open_on(dir.path(), Some(Arc::clone(&data))).unwrap();
    let inputs: Vec<u64> = set
        .snapshot()
        .handles()
        .iter()
        .map(|h| h.generation())
        .collect();
    assert_eq!(inputs.len(), 3);
    let data_bytes: u64 = set
        .snapshot()
        .handles()
        .iter()
        .map(|h| h.sstable().statistics().data_size - 8)
        .sum();
    let at_open = data.stats();
    assert!(at_open.bytes_read > 0, "opening reads the small components");
    assert_eq!(at_open.bytes_written, 0);

    let mut options = JobOptions::default();
    options.writer = writer_options();
    options.writer.device = Some(Arc::clone(&data));
    let plan = JobPlan {
        inputs,
        fragment_size: None,
    };
    let report = run_job(&set, &plan, &options, &NothingOutside, &Unthrottled).unwrap();
    assert_eq!(report.outputs.len(), 1);
    let s = data.stats();
    assert!(
        s.bytes_read - at_open.bytes_read >= data_bytes,
        "the merge reads every input block: {s:?}, {data_bytes} bytes of Data"
    );
    // Every byte of the output's files was charged as written.
    assert_eq!(s.bytes_written, files_of(dir.path(), report.outputs[0]));
    assert!(s.bytes_written >= report.bytes_written);

    // The output was opened on the device too: reading it is charged.
    let before = data.stats().bytes_read;
    let snapshot = set.snapshot();
    let mut scan = snapshot.handles()[0].sstable().scan();
    while scan.next_fragment().unwrap().is_some() {}
    assert!(data.stats().bytes_read > before);
}
