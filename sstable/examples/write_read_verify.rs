//! Write an sstable, read it back with a point lookup and a clustering
//! slice, and verify it.
//!
//! The writer takes an ordered fragment stream (here built from
//! mutations; in a replica it is a memtable's flush stream), commits the
//! components atomically, and reports statistics. The reader answers a
//! point lookup through the Summary, Index and bloom filter, and a slice
//! by reading only the blocks it needs. `verify` rechecks every checksum
//! and invariant.
//!
//! Run with `cargo run --example write_read_verify -p replmem-sstable`.

use std::ops::Bound;

use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Fragment, Mutation, Timestamp,
    from_mutations,
};
use sstable::{Sstable, SstableDirectory, Writer, WriterOptions};

const SENSORS: usize = 200;
const READINGS: usize = 50;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Removed when `dir` is dropped, also if anything below fails.
    let dir = tempfile::tempdir()?;

    // 200 partitions ("sensors") of 50 rows ("readings") each.
    let mut mutations = Vec::new();
    for sensor in 0..SENSORS {
        let mut m = Mutation::builder(DecoratedKey::from_bytes(format!("sensor:{sensor}"))?);
        for reading in 0..READINGS {
            let value = format!("{}.{} C", 20 + sensor % 10, reading % 10);
            m = m.cell(
                format!("t{reading:03}"),
                0,
                Cell::live(value, Timestamp::from_micros(1_000 + reading as i64)),
            );
        }
        mutations.push(m.build()?);
    }

    // Write: `from_mutations` turns the mutations into one fragment stream
    // in ring (token) order, the order a writer takes; the writer validates
    // it as it goes and commits atomically.
    let mut writer = Writer::create(dir.path(), WriterOptions::default())?;
    writer.write_all(&mut from_mutations(mutations.clone()))?;
    let committed = writer.commit()?;
    let stats = &committed.statistics;
    println!(
        "wrote generation {} in {}: {} partitions, {} rows, {} bytes of Data ({} raw)",
        committed.generation,
        dir.path().display(),
        stats.partitions,
        stats.clustering_rows,
        stats.data_size,
        stats.data_raw_bytes
    );

    // Open: list the directory's committed sstables, then open ours.
    let listed = SstableDirectory::open(dir.path())?;
    assert_eq!(listed.generations(), &[committed.generation]);
    let table = Sstable::open(dir.path(), committed.generation)?;

    // A point lookup: the whole partition, exactly as written.
    let wanted = DecoratedKey::from_bytes("sensor:42")?;
    let partition = table
        .read_partition(&wanted)?
        .ok_or("sensor:42 is in the sstable")?;
    let original = mutations
        .iter()
        .find(|m| m.key() == &wanted)
        .ok_or("sensor:42 was written")?;
    assert_eq!(partition, original.fragments());
    println!(
        "point lookup sensor:42: {} fragments, equal to what was written",
        partition.len()
    );

    // A miss: the bloom filter usually answers without reading Data.
    let absent = DecoratedKey::from_bytes("sensor:9999")?;
    assert_eq!(table.read_partition(&absent)?, None);
    println!(
        "point lookup sensor:9999: absent (bloom filter says {})",
        if table.may_contain(&absent) {
            "maybe"
        } else {
            "no"
        }
    );

    // A slice: sensor:42's readings t010 to t014.
    let slice = ClusteringRange::new(
        Bound::Included(ClusteringKey::new("t010")?),
        Bound::Included(ClusteringKey::new("t014")?),
    )?;
    let sliced = table
        .read_slice(&wanted, &slice)?
        .ok_or("sensor:42 is in the sstable")?;
    let keys: Vec<String> = sliced
        .iter()
        .filter_map(|f| match f {
            Fragment::ClusteringRow { key, .. } => {
                Some(String::from_utf8_lossy(key.as_bytes()).into_owned())
            }
            _ => None,
        })
        .collect();
    println!("slice sensor:42 [t010, t014]: rows {keys:?}");
    assert_eq!(keys, ["t010", "t011", "t012", "t013", "t014"]);

    // Verify: every checksum, ordering invariant and cross-component fact.
    let report = table.verify()?;
    println!(
        "verify: ok ({} partitions, {} fragments, {} data blocks, {} index blocks)",
        report.partitions, report.fragments, report.data_blocks, report.index_blocks
    );
    assert_eq!(report.partitions, SENSORS as u64);

    drop(table);
    let path = dir.path().to_path_buf();
    dir.close()?;
    println!("removed {}", path.display());
    Ok(())
}
