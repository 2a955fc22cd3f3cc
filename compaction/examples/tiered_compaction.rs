//! Size-tiered compaction of a table's flushes: 16 flushes overwrite the
//! same 200 keys and delete some of them; compacting until no bucket is
//! full leaves one sstable holding only the latest value of each live
//! key, with the deleted keys and their tombstones gone (gc_grace of zero,
//! and nothing outside the job can hold older data).
//!
//! ```sh
//! cargo run --example tiered_compaction -p replmem-compaction
//! ```

use std::time::Duration;

use compaction::{
    JobOptions, NothingOutside, SizeTiered, SstableSet, Strategy, Unthrottled, run_job,
};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp, Tombstone};
use sstable::{Sstable, Writer, WriterOptions};

const KEYS: u32 = 200;
const FLUSHES: i64 = 16;

fn key(k: u32) -> DecoratedKey {
    DecoratedKey::from_bytes(format!("user:{k:04}")).expect("a short key")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let set = SstableSet::open(dir.path())?;
    // Each flush: every key overwritten at a newer timestamp; in the last
    // flush, every tenth key deleted.
    for flush in 1..=FLUSHES {
        let mut partitions: Vec<Mutation> = Vec::new();
        for k in 0..KEYS {
            let ts = Timestamp::from_micros(flush);
            let b = Mutation::builder(key(k));
            let m = if flush == FLUSHES && k % 10 == 0 {
                b.partition_tombstone(Tombstone::new(ts, 0)).build()?
            } else {
                b.cell("profile", 0, Cell::live(format!("v{flush}"), ts))
                    .build()?
            };
            partitions.push(m);
        }
        // An sstable holds partitions in ring (token) order.
        partitions.sort_by(|a, b| a.key().cmp(b.key()));
        let mut writer = Writer::create(dir.path(), WriterOptions::default())?;
        for m in &partitions {
            for fragment in m.fragments() {
                writer.write(&fragment)?;
            }
        }
        let committed = writer.commit()?;
        set.add(Sstable::open(dir.path(), committed.generation)?);
    }
    let size = |set: &SstableSet| -> u64 { set.snapshot().infos().iter().map(|i| i.size).sum() };
    println!(
        "after {FLUSHES} flushes: {} sstables, {} bytes",
        set.snapshot().len(),
        size(&set)
    );

    let strategy = SizeTiered::default();
    let mut options = JobOptions::default();
    options.gc_grace = Duration::ZERO;
    let (mut jobs, mut written) = (0, 0);
    while let Some(plan) = strategy.next_job(&set.snapshot().infos()) {
        let report = run_job(&set, &plan, &options, &NothingOutside, &Unthrottled)?;
        jobs += 1;
        written += report.bytes_written;
        println!(
            "job {jobs}: {} sstables into {}, {} bytes read, {} written, purged {:?}",
            report.inputs.len(),
            report.outputs.len(),
            report.bytes_read,
            report.bytes_written,
            report.purged
        );
    }
    let snapshot = set.snapshot();
    println!(
        "after {jobs} jobs: {} sstables, {} bytes ({} bytes written by compaction)",
        snapshot.len(),
        size(&set),
        written
    );
    assert!(jobs >= 1 && snapshot.len() < FLUSHES as usize);

    // Every live key reads its latest value; every deleted key is gone,
    // tombstone and all.
    let sstables: Vec<_> = snapshot.handles().iter().map(|h| h.sstable()).collect();
    for k in 0..KEYS {
        let found: Vec<_> = sstables
            .iter()
            .filter_map(|s| s.read_partition(&key(k)).transpose())
            .collect::<Result<_, _>>()?;
        if k % 10 == 0 {
            assert!(found.is_empty(), "deleted key {k} came back: {found:?}");
        } else {
            let latest = Mutation::builder(key(k))
                .cell(
                    "profile",
                    0,
                    Cell::live(format!("v{FLUSHES}"), Timestamp::from_micros(FLUSHES)),
                )
                .build()?;
            assert_eq!(found, vec![latest.fragments()], "key {k}");
        }
    }
    println!(
        "every live key reads its latest value; the {} deleted keys are gone",
        KEYS / 10
    );
    Ok(())
}
