//! `sstable`: inspect sstables written by the `sstable` crate, in the
//! manner of Cassandra's `sstabledump`, `sstablemetadata` and
//! `sstableverify`.
//!
//! ```text
//! sstable dump   <COMPONENT-PATH> [--key HEX]   one JSON line per fragment
//! sstable stats  <COMPONENT-PATH>               statistics as one JSON object
//! sstable verify <COMPONENT-PATH>               full check of every component
//! ```
//!
//! `COMPONENT-PATH` is any component file of the sstable, for example
//! `data/sst-3-Data.db` or `data/sst-3-TOC.txt`.
//!
//! Exit status: 0 success (also when the reader of the output, such as
//! `head`, closes the pipe early), 1 an I/O or other error, 2 bad arguments,
//! 3 not found (the directory, the sstable or the `--key` partition), 4 the
//! sstable is corrupt or incomplete.
#![forbid(unsafe_code)]

use std::error::Error as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mutation::{Cell, DecoratedKey, Fragment, Position, Row, RowMarker, Tombstone};
use serde_json::{Value, json};
use sstable::Sstable;

#[derive(Debug, Parser)]
#[command(
    name = "sstable",
    version,
    about = "Dump, describe and verify sstables",
    after_help = EXIT_CODES_HELP
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

/// The exit statuses, as `--help` lists them.
const EXIT_CODES_HELP: &str = "\
Exit status:
  0  success (also when the output's reader, e.g. `head`, closes the pipe early)
  1  an I/O or other error
  2  bad arguments (unknown option, a --key that is not hex, not a component file name)
  3  not found: the directory, the sstable, or the --key partition does not exist
  4  the sstable is corrupt or incomplete";

/// Why the tool failed, which decides its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// An I/O or other error (status 1).
    Other,
    /// Bad arguments (status 2, as clap uses for usage errors).
    BadArguments,
    /// The directory, the sstable or the partition does not exist (status 3).
    NotFound,
    /// The sstable is corrupt or incomplete (status 4).
    Corrupt,
}

impl Failure {
    fn exit_code(self) -> ExitCode {
        ExitCode::from(match self {
            Failure::Other => 1,
            Failure::BadArguments => 2,
            Failure::NotFound => 3,
            Failure::Corrupt => 4,
        })
    }

    /// The class of a library error.
    fn of(error: &sstable::Error) -> Failure {
        match error {
            sstable::Error::Corrupt { .. } | sstable::Error::MissingComponent { .. } => {
                Failure::Corrupt
            }
            sstable::Error::NotFound { .. } => Failure::NotFound,
            sstable::Error::BadFileName { .. } => Failure::BadArguments,
            sstable::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Failure::NotFound
            }
            _ => Failure::Other,
        }
    }
}

/// A failure with the message to print.
#[derive(Debug)]
struct Failed {
    kind: Failure,
    message: String,
}

impl Failed {
    fn new(kind: Failure, message: impl Into<String>) -> Failed {
        Failed {
            kind,
            message: message.into(),
        }
    }
}

impl From<sstable::Error> for Failed {
    /// The error and its chain of causes, `: `-separated.
    fn from(error: sstable::Error) -> Failed {
        let mut message = error.to_string();
        let mut cause = error.source();
        while let Some(c) = cause {
            message.push_str(": ");
            message.push_str(&c.to_string());
            cause = c.source();
        }
        Failed::new(Failure::of(&error), message)
    }
}

/// Where the output went: to its reader, or into a pipe its reader closed.
enum Written {
    All,
    ReaderGone,
}

/// Opens the sstable `path` names, reporting a missing directory as such
/// (rather than as a missing sstable inside it).
fn open(path: &Path) -> Result<Sstable, Failed> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Failed::new(
            Failure::NotFound,
            format!("directory {} does not exist", dir.display()),
        ));
    }
    Ok(Sstable::open_path(path)?)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
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

/// Writes each value as a JSON line; a closed pipe ends the output
/// quietly (the reader, such as `head`, has what it wanted).
struct Emitter<W: Write> {
    out: W,
}

impl<W: Write> Emitter<W> {
    fn emit(&mut self, value: Value) -> Result<Written, Failed> {
        match writeln!(self.out, "{value}") {
            Ok(()) => Ok(Written::All),
            Err(e) => closed_pipe_or_error(e),
        }
    }

    fn finish(mut self) -> Result<Written, Failed> {
        match self.out.flush() {
            Ok(()) => Ok(Written::All),
            Err(e) => closed_pipe_or_error(e),
        }
    }
}

fn closed_pipe_or_error(e: std::io::Error) -> Result<Written, Failed> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Ok(Written::ReaderGone)
    } else {
        Err(Failed::new(
            Failure::Other,
            format!("cannot write to stdout: {e}"),
        ))
    }
}

fn run(cli: Cli) -> Result<(), Failed> {
    let stdout = std::io::stdout();
    let mut out = Emitter {
        out: std::io::BufWriter::new(stdout.lock()),
    };
    match cli.command {
        Command::Dump { path, key } => {
            // Parse the arguments before touching the file system.
            let key = match key {
                Some(k) => {
                    let bytes = unhex(&k).ok_or_else(|| {
                        Failed::new(
                            Failure::BadArguments,
                            format!("--key {k:?} is not hex (two digits per byte)"),
                        )
                    })?;
                    let key = DecoratedKey::from_bytes(bytes).map_err(|e| {
                        Failed::new(Failure::BadArguments, format!("--key {k}: {e}"))
                    })?;
                    Some((k, key))
                }
                None => None,
            };
            let table = open(&path)?;
            match key {
                Some((hex_key, key)) => {
                    let Some(frags) = table.read_partition(&key)? else {
                        return Err(Failed::new(
                            Failure::NotFound,
                            format!(
                                "no partition with key {hex_key} in sstable generation {} ({})",
                                table.generation(),
                                path.display()
                            ),
                        ));
                    };
                    for f in &frags {
                        if let Written::ReaderGone = out.emit(fragment(f))? {
                            return Ok(());
                        }
                    }
                }
                None => {
                    let mut reader = table.scan();
                    while let Some(f) = reader.next_fragment()? {
                        if let Written::ReaderGone = out.emit(fragment(&f))? {
                            return Ok(());
                        }
                    }
                }
            }
        }
        Command::Stats { path } => {
            let table = open(&path)?;
            out.emit(stats(&table))?;
        }
        Command::Verify { path } => {
            let table = open(&path)?;
            let report = table.verify()?;
            out.emit(json!({
                "ok": true,
                "partitions": report.partitions,
                "fragments": report.fragments,
                "data_blocks": report.data_blocks,
                "index_blocks": report.index_blocks,
            }))?;
        }
    }
    out.finish().map(|_| ())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failed) => {
            eprintln!("sstable: {}", failed.message);
            failed.kind.exit_code()
        }
    }
}
