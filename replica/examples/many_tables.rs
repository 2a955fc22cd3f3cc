//! Scale: many tables in one database (ScyllaDB issue 1817's shape). Creates
//! `TABLES` tables (default 100, so that `cargo xtask test`'s run of every
//! example stays short; 10,000 is the catalog's limit), writes a row into
//! each in a round-robin, closes, reopens, and reads every row back,
//! printing the time of each phase and the memory an idle table costs.
//!
//! `cargo run --release -p replmem-replica --example many_tables [TABLES] [DIR]`,
//! for example with `10000`
//! (DIR defaults to a temporary directory, removed afterwards).
//!
//! On the 2-core, 24 GiB development machine (2026-12-04, other builds
//! running, ext4 on a virtual disk), 10,000 tables, default budget, log
//! off: create_table 13.1 ms each (131 s: the catalog and the table's
//! directory marker are synced per table); 5.8 KiB resident per idle table;
//! one 100-byte write into each 24.6 s, with 9,011 flushes: every written
//! memtable holds at least one 128 KiB segment, so 10,000 one-row
//! memtables are 1.25 GiB of dirty memory and the soft limit flushes them
//! one by one (ScyllaDB issue 1817's shape); close 2.9 s; open with 10,000
//! tables 3.1 s; reading every row back 222 ms.

use std::time::Instant;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::{CommitLogMode, Database, DatabaseConfig, TableSchema};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

fn row(i: usize) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("k{i}")).expect("a short key"))
        .cell(
            "v",
            0,
            Cell::live(vec![b'x'; 100], Timestamp::from_micros(1)),
        )
        .build()
        .expect("a valid row")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let tables: usize = args.next().map_or(Ok(100), |a| a.parse())?;
    let tmp = tempfile::tempdir()?;
    let dir = args
        .next()
        .map_or_else(|| tmp.path().to_path_buf(), Into::into);
    let mut config = DatabaseConfig::new(&dir);
    config.commitlog = CommitLogMode::Off;
    config.prefault_memory = false;
    let names: Vec<String> = (0..tables).map(|i| format!("t{i:05}")).collect();

    let rss_before = rss_kib();
    let db = Database::open(config.clone())?;
    let rss_open = rss_kib();
    let started = Instant::now();
    for name in &names {
        db.create_table(TableSchema::new(name)?)?;
    }
    let create = started.elapsed();
    let rss_idle = rss_kib();
    let started = Instant::now();
    for (i, name) in names.iter().enumerate() {
        db.apply(name, &row(i))?;
    }
    let write = started.elapsed();
    let flushes = db.metrics().user.flushes_completed;
    let started = Instant::now();
    db.close()?;
    drop(db);
    let close = started.elapsed();
    let started = Instant::now();
    let db = Database::open(config)?;
    let open = started.elapsed();
    let started = Instant::now();
    for (i, name) in names.iter().enumerate() {
        let key = row(i).key().clone();
        let got = db.get(name, &key, ClusteringRange::full())?;
        assert!(got.is_some(), "{name}: row {i} lost");
    }
    let read = started.elapsed();
    db.close()?;
    println!("tables                   : {tables}");
    println!(
        "create_table, all        : {create:.2?} ({:.2?} each)",
        create / tables as u32
    );
    println!(
        "memory per idle table    : {:.1} KiB resident (open {} MiB, after creating {} MiB)",
        rss_idle.saturating_sub(rss_open) as f64 / tables as f64,
        rss_open.saturating_sub(rss_before) >> 10,
        rss_idle >> 10
    );
    println!("one write into each      : {write:.2?} ({flushes} flushes during it)");
    println!("close (flushes all)      : {close:.2?}");
    println!("open with {tables} tables : {open:.2?}");
    println!("read back every row      : {read:.2?}");
    Ok(())
}
