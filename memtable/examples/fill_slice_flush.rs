//! Fill a memtable, read a slice of one partition, then stream the
//! memtable's flush fragments the way a flush feeds an sstable writer.
//!
//! Writes are reconciled as they are applied (a newer cell replaces an
//! older one, a row tombstone removes a row at once), reads are ordered
//! fragment streams, and the flush stream reports its progress in region
//! bytes, which is what lets a dirty-memory manager release writers before
//! the flush ends.
//!
//! Run with `cargo run --example fill_slice_flush -p replmem-memtable`.

use std::ops::Bound;
use std::sync::{Arc, Mutex};

use logalloc::{PoolConfig, SegmentPool};
use memtable::Memtable;
use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation,
    PartitionRange, Timestamp, Tombstone, validate_stream,
};
use region_group::{ReclaimConfig, RegionGroup};

const USERS: usize = 50;
const EVENTS: usize = 20;

/// The value user `user`'s event `event` holds at write `version`.
fn value(user: usize, event: usize, version: u8) -> Vec<u8> {
    format!("user {user} event {event} v{version}").into_bytes()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(16 << 20))?;
    let group = RegionGroup::new("memtables", ReclaimConfig::default());
    let memtable = Memtable::new(&group, &pool)?;
    let ts = Timestamp::from_micros;

    // Fill: 50 partitions ("users") of 20 rows ("events") each.
    for user in 0..USERS {
        let mut m = Mutation::builder(DecoratedKey::from_bytes(format!("user:{user}"))?);
        for event in 0..EVENTS {
            m = m.cell(
                format!("event:{event:02}"),
                0,
                Cell::live(value(user, event, 1), ts(10)),
            );
        }
        memtable.apply(&m.build()?)?;
    }
    // Overwrite one row with a newer timestamp and delete another; an
    // older write of a row loses to what the memtable holds.
    let seven = DecoratedKey::from_bytes("user:7")?;
    memtable.apply(
        &Mutation::builder(seven.clone())
            .cell("event:06", 0, Cell::live(value(7, 6, 2), ts(20)))
            .row_tombstone("event:08", Tombstone::new(ts(20), 0))
            .cell("event:09", 0, Cell::live(value(7, 9, 0), ts(5)))
            .build()?,
    )?;
    let stats = memtable.stats();
    println!(
        "filled: {} partitions, {} rows, {} KiB of region ({} KiB counted by the group)",
        stats.partitions,
        stats.rows,
        stats.region.used_bytes >> 10,
        group.real_usage() >> 10
    );

    // A slice: user:7's events 05 to 10, end excluded.
    let slice = ClusteringRange::new(
        Bound::Included(ClusteringKey::new("event:05")?),
        Bound::Excluded(ClusteringKey::new("event:10")?),
    )?;
    let mut reader = memtable
        .make_reader_opt(PartitionRange::single_key(seven.clone()), slice)?
        .ok_or("user:7 is in the memtable")?;
    let mut rows = Vec::new();
    while let Some(fragment) = reader.next()? {
        if let Fragment::ClusteringRow { key, row } = fragment {
            let key = String::from_utf8_lossy(key.as_bytes()).into_owned();
            let value = match (row.tombstone, row.cells.get(&0)) {
                (Some(t), _) => format!("deleted at {}", t.timestamp.micros()),
                (None, Some(Cell::Live { value, .. })) => {
                    String::from_utf8_lossy(value).into_owned()
                }
                (None, other) => format!("{other:?}"),
            };
            println!("  slice row {key}: {value}");
            rows.push((key, value));
        }
    }
    // 06 holds the newer value; 08 is only its tombstone (kept, so that
    // it shadows older copies of the row in sstables); 09 kept the first
    // write (timestamp 10 beats the late write's 5).
    let expected: Vec<(String, String)> = [
        (5, Some(1)),
        (6, Some(2)),
        (7, Some(1)),
        (8, None),
        (9, Some(1)),
    ]
    .into_iter()
    .map(|(event, version)| {
        let value = match version {
            Some(v) => String::from_utf8_lossy(&value(7, event, v)).into_owned(),
            None => "deleted at 20".to_string(),
        };
        (format!("event:{event:02}"), value)
    })
    .collect();
    assert_eq!(rows, expected);

    // Flush: seal (no more writes), then stream every fragment in ring
    // order, counting the region bytes the stream reports.
    memtable.seal();
    let reported = Arc::new(Mutex::new(0usize));
    let sink = Arc::clone(&reported);
    let mut flush = memtable.make_flush_reader(move |bytes| {
        *sink.lock().unwrap_or_else(|p| p.into_inner()) += bytes;
    });
    let mut fragments = Vec::new();
    while let Some(fragment) = flush.next()? {
        fragments.push(fragment);
    }
    validate_stream(&fragments)?; // ordered, balanced: what an sstable writer accepts
    let partitions = fragments
        .iter()
        .filter(|f| matches!(f, Fragment::PartitionStart { .. }))
        .count();
    let flushed_rows = fragments
        .iter()
        .filter(|f| matches!(f, Fragment::ClusteringRow { .. }))
        .count();
    let row_tombstones = fragments
        .iter()
        .filter(|f| matches!(f, Fragment::ClusteringRow { row, .. } if row.tombstone.is_some()))
        .count();
    let reported = *reported.lock().unwrap_or_else(|p| p.into_inner());
    println!(
        "flush stream: {} fragments, {partitions} partitions, {flushed_rows} rows \
         ({row_tombstones} a tombstone); progress reported {} of {} region bytes",
        fragments.len(),
        reported,
        memtable.stats().region.used_bytes
    );
    assert_eq!(partitions, USERS);
    assert_eq!(flushed_rows, USERS * EVENTS);
    assert_eq!(row_tombstones, 1, "the deletion is flushed as a tombstone");
    assert_eq!(
        reported,
        memtable.stats().region.used_bytes,
        "the whole region is reported"
    );

    // Once the flushed data is safe elsewhere, the memtable leaves the
    // group, and the group no longer counts its memory.
    memtable.detach_from_region_group();
    println!("detached: the group counts {} bytes", group.real_usage());
    assert_eq!(group.real_usage(), 0);
    Ok(())
}
