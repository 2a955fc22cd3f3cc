//! `sstable`: inspect sstables written by the `sstable` crate, in the
//! manner of Cassandra's `sstabledump`, `sstablemetadata` and
//! `sstableverify`.
//!
//! ```text
//! sstable dump   <COMPONENT-PATH> [--key HEX]   one JSON line per fragment
//! sstable stats  <COMPONENT-PATH>               statistics as one JSON object
//! sstable verify <COMPONENT-PATH>               full check; exit status 1 on corruption
//! ```
//!
//! `COMPONENT-PATH` is any component file of the sstable, for example
//! `data/sst-3-Data.db` or `data/sst-3-TOC.txt`.
#![forbid(unsafe_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mutation::{Cell, DecoratedKey, Fragment, Position, Row, RowMarker, Tombstone};
use serde_json::{Value, json};
use sstable::Sstable;

#[derive(Debug, Parser)]
#[command(
    name = "sstable",
    version,
    about = "Dump, describe and verify sstables"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the fragments as JSON lines, one fragment per line.
    Dump {
        /// Any component file of the sstable (e.g. sst-3-Data.db).
        path: PathBuf,
        /// Only the partition with this key (hex), through a point lookup.
        #[arg(long)]
        key: Option<String>,
    },
    /// Print the statistics as a JSON object.
    Stats {
        /// Any component file of the sstable.
        path: PathBuf,
    },
    /// Check every checksum, ordering invariant and cross-component fact.
    Verify {
        /// Any component file of the sstable.
        path: PathBuf,
    },
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn tombstone(t: Option<Tombstone>) -> Value {
    t.map_or(
        Value::Null,
        |t| json!({"timestamp": t.timestamp.micros(), "deletion_time": t.local_deletion_time}),
    )
}

fn marker(m: &Option<RowMarker>) -> Value {
    m.map_or(Value::Null, |m| {
        json!({
            "timestamp": m.timestamp.micros(),
            "ttl": m.ttl.map(|t| t.ttl()),
            "expiry": m.ttl.map(|t| t.expiry()),
        })
    })
}

fn row(r: &Row) -> Value {
    let cells: Vec<Value> = r
        .cells
        .iter()
        .map(|(column, cell)| match cell {
            Cell::Live {
                value,
                timestamp,
                ttl,
            } => json!({
                "column": column,
                "live": true,
                "timestamp": timestamp.micros(),
                "value": hex(value),
                "ttl": ttl.map(|t| t.ttl()),
                "expiry": ttl.map(|t| t.expiry()),
            }),
            Cell::Tombstone {
                timestamp,
                local_deletion_time,
            } => json!({
                "column": column,
                "live": false,
                "timestamp": timestamp.micros(),
                "deletion_time": local_deletion_time,
            }),
        })
        .collect();
    json!({"marker": marker(&r.marker), "tombstone": tombstone(r.tombstone), "cells": cells})
}

fn position(p: &Position) -> Value {
    match p {
        Position::BeforeAll => json!({"kind": "before_all"}),
        Position::Before(k) => json!({"kind": "before", "key": hex(k.as_bytes())}),
        Position::At(k) => json!({"kind": "at", "key": hex(k.as_bytes())}),
        Position::After(k) => json!({"kind": "after", "key": hex(k.as_bytes())}),
        Position::AfterAll => json!({"kind": "after_all"}),
    }
}

fn fragment(f: &Fragment) -> Value {
    match f {
        Fragment::PartitionStart { key, tombstone: t } => json!({
            "type": "partition_start",
            "key": hex(key.key().as_bytes()),
            "token": key.token().value(),
            "tombstone": tombstone(*t),
        }),
        Fragment::StaticRow(r) => json!({"type": "static_row", "row": row(r)}),
        Fragment::ClusteringRow { key, row: r } => json!({
            "type": "clustering_row",
            "key": hex(key.as_bytes()),
            "row": row(r),
        }),
        Fragment::RangeTombstoneChange {
            position: p,
            tombstone: t,
        } => json!({
            "type": "range_tombstone_change",
            "position": position(p),
            "tombstone": tombstone(*t),
        }),
        Fragment::PartitionEnd => json!({"type": "partition_end"}),
    }
}

fn stats(table: &Sstable) -> Value {
    let s = table.statistics();
    let (probes, bits) = table.filter_parameters();
    json!({
        "generation": table.generation(),
        "format_version": sstable::FORMAT_VERSION,
        "partitions": s.partitions,
        "static_rows": s.static_rows,
        "clustering_rows": s.clustering_rows,
        "range_tombstone_changes": s.range_tombstone_changes,
        "partition_tombstones": s.partition_tombstones,
        "row_tombstones": s.row_tombstones,
        "cell_tombstones": s.cell_tombstones,
        "live_cells": s.live_cells,
        "expiring_cells": s.expiring_cells,
        "min_timestamp": s.min_timestamp,
        "max_timestamp": s.max_timestamp,
        "first_key": hex(&s.first_key),
        "last_key": hex(&s.last_key),
        "data_size": s.data_size,
        "data_raw_bytes": s.data_raw_bytes,
        "data_blocks": s.data_blocks,
        "index_size": s.index_size,
        "index_blocks": s.index_blocks,
        "largest_partition": s.largest_partition,
        "compression": s.compression,
        "large_partition_threshold": s.large_partition_threshold,
        "filter_probes": probes,
        "filter_bits": bits,
    })
}

fn run(cli: Cli) -> Result<(), String> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut emit =
        |v: Value| writeln!(out, "{v}").map_err(|e| format!("cannot write to stdout: {e}"));
    match cli.command {
        Command::Dump { path, key } => {
            let table = Sstable::open_path(&path).map_err(|e| e.to_string())?;
            match key {
                Some(k) => {
                    let bytes = unhex(&k).ok_or_else(|| format!("--key {k:?} is not hex"))?;
                    let key = DecoratedKey::from_bytes(bytes).map_err(|e| e.to_string())?;
                    if let Some(frags) = table.read_partition(&key).map_err(|e| e.to_string())? {
                        for f in &frags {
                            emit(fragment(f))?;
                        }
                    }
                }
                None => {
                    let mut reader = table.scan();
                    while let Some(f) = reader.next_fragment().map_err(|e| e.to_string())? {
                        emit(fragment(&f))?;
                    }
                }
            }
        }
        Command::Stats { path } => {
            let table = Sstable::open_path(&path).map_err(|e| e.to_string())?;
            emit(stats(&table))?;
        }
        Command::Verify { path } => {
            let table = Sstable::open_path(&path).map_err(|e| e.to_string())?;
            let report = table.verify().map_err(|e| e.to_string())?;
            emit(json!({
                "ok": true,
                "partitions": report.partitions,
                "fragments": report.fragments,
                "data_blocks": report.data_blocks,
                "index_blocks": report.index_blocks,
            }))?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sstable: {e}");
            ExitCode::FAILURE
        }
    }
}
