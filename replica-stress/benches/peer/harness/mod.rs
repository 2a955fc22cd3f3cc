//! The peer bench's parts: the options and the parent ([`main`]), what a
//! child runs ([`child`]), the two engines behind one trait ([`engine`]),
//! the measurements ([`measure`]), the values and key choosers
//! ([`data`]) and the report with the LRU bound ([`report`]).
//!
//! The bench binary (`benches/peer/main.rs`) and the smoke test
//! (`tests/peer_smoke.rs`) both include this module: the test runs the
//! parent at the smoke size, and the children it starts are the test
//! binary itself, as they are the bench binary in a bench run.

mod child;
pub(crate) mod data;
pub(crate) mod engine;
mod measure;
mod report;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use clap::{Parser, ValueEnum};
use serde_json::{Value, json};

pub(crate) use report::Report;

/// The bench's errors: a message saying what failed.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The bench's results.
pub(crate) type Result<T> = std::result::Result<T, BoxError>;

/// The first argument of a child process, before its spec.
const CHILD_FLAG: &str = "--peer-child";
/// The line a child prints its result on, before the JSON.
const RESULT_PREFIX: &str = "PEER-RESULT ";

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Scenario {
    /// The write shape only.
    Write,
    /// The read cases only.
    Read,
    /// The write shape, then the read cases.
    All,
}

/// Which engine a child runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EngineKind {
    /// The workspace's `replica::Database`.
    Replica,
    /// fjall 3.
    Fjall,
}

impl EngineKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            EngineKind::Replica => "replica",
            EngineKind::Fjall => "fjall",
        }
    }

    fn parse(s: &str) -> Result<Self> {
        match s {
            "replica" => Ok(EngineKind::Replica),
            "fjall" => Ok(EngineKind::Fjall),
            other => Err(format!("unknown engine {other:?}").into()),
        }
    }
}

/// How readers choose partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum KeyChoice {
    /// Every partition equally likely.
    Uniform,
    /// YCSB's zipfian (theta 0.99, scrambled over the key space).
    Zipfian,
}

impl KeyChoice {
    pub(crate) fn name(self) -> &'static str {
        match self {
            KeyChoice::Uniform => "uniform",
            KeyChoice::Zipfian => "zipfian",
        }
    }

    fn parse(s: &str) -> Result<Self> {
        match s {
            "uniform" => Ok(KeyChoice::Uniform),
            "zipfian" => Ok(KeyChoice::Zipfian),
            other => Err(format!("unknown key choice {other:?}").into()),
        }
    }
}

/// A partition's shape: `rows` rows of `row_bytes` bytes each (one cell).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    pub(crate) rows: u16,
    pub(crate) row_bytes: usize,
}

impl Shape {
    /// The write shape's partition: 128 rows of 1 KiB.
    pub(crate) const WRITE: Shape = Shape {
        rows: 128,
        row_bytes: 1024,
    };

    /// Value bytes of one partition.
    pub(crate) fn bytes(self) -> u64 {
        u64::from(self.rows) * self.row_bytes as u64
    }

    /// `<rows>x<size>`, as the options spell it.
    pub(crate) fn name(self) -> String {
        if self.row_bytes.is_multiple_of(1024) {
            format!("{}x{}KiB", self.rows, self.row_bytes / 1024)
        } else {
            format!("{}x{}B", self.rows, self.row_bytes)
        }
    }

    fn parse(s: &str) -> std::result::Result<Shape, String> {
        let (rows, size) = s
            .split_once('x')
            .ok_or_else(|| format!("shape {s:?}: expected <rows>x<row size>, e.g. 1x8KiB"))?;
        let rows: u16 = rows
            .parse()
            .map_err(|_| format!("shape {s:?}: {rows:?} rows is not a count"))?;
        let row_bytes =
            replica_stress::units::parse_size("--shapes", size).map_err(|e| e.to_string())?;
        if rows == 0 || !(16..=(1 << 20)).contains(&row_bytes) {
            return Err(format!(
                "shape {s:?}: needs at least one row of 16 B to 1 MiB"
            ));
        }
        Ok(Shape {
            rows,
            row_bytes: row_bytes as usize,
        })
    }
}

fn parse_size(s: &str) -> std::result::Result<u64, String> {
    replica_stress::units::parse_size("size", s).map_err(|e| e.to_string())
}

fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    replica_stress::units::parse_duration("--duration", s).map_err(|e| e.to_string())
}

fn parse_multiple(s: &str) -> std::result::Result<f64, String> {
    let m: f64 = s
        .trim_end_matches('x')
        .parse()
        .map_err(|_| format!("data multiple {s:?} is not a number"))?;
    if !(m > 0.0 && m <= 1000.0) {
        return Err(format!("data multiple {s:?} outside (0, 1000]"));
    }
    Ok(m)
}

/// The bench's options (`-- --help` prints them).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "peer",
    about = "The replica beside fjall: the same writes and point reads on both, each in its own process"
)]
pub(crate) struct Options {
    /// What to run.
    #[arg(long, value_enum, default_value = "all")]
    pub(crate) scenario: Scenario,
    /// The engines, in the order they run.
    #[arg(long, value_enum, value_delimiter = ',', default_values = ["replica", "fjall"])]
    pub(crate) engines: Vec<EngineKind>,
    /// Dirty-memory budget (fjall: memtables of a quarter of it each, the
    /// active one and up to its three sealed ones before it halts writes).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    pub(crate) budget: u64,
    /// Cache memory: the replica's row cache, fjall's block cache.
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    pub(crate) cache: u64,
    /// Divides the budget, the cache (so the data, which is a multiple of
    /// it) and the write partitions: a smaller copy of the same runs.
    #[arg(long, default_value_t = 1)]
    pub(crate) scale: u64,
    /// How long each measured phase runs.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub(crate) duration: Duration,
    /// Writer threads of the write shape.
    #[arg(long, default_value_t = 100)]
    pub(crate) write_threads: usize,
    /// Reader threads.
    #[arg(long, default_value_t = 16)]
    pub(crate) read_threads: usize,
    /// Threads that load the data before the reads (not measured).
    #[arg(long, default_value_t = 4)]
    pub(crate) load_threads: usize,
    /// Partition shapes of the reads, `<rows>x<row size>`.
    #[arg(long, value_parser = Shape::parse, value_delimiter = ',', default_values = ["1x8KiB", "8x1KiB"])]
    pub(crate) shapes: Vec<Shape>,
    /// The data of the reads, in multiples of the cache.
    #[arg(long, value_parser = parse_multiple, value_delimiter = ',', default_values = ["1", "4", "12"])]
    pub(crate) data: Vec<f64>,
    /// Key choices of the reads.
    #[arg(long, value_enum, value_delimiter = ',', default_values = ["zipfian", "uniform"])]
    pub(crate) keys: Vec<KeyChoice>,
    /// Partitions the write shape's keys are drawn from (uniformly).
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) write_partitions: u64,
    /// Times each case runs.
    #[arg(long, default_value_t = 1)]
    pub(crate) runs: u32,
    /// Where the engines' files go (a temporary directory by default,
    /// removed at the end); each case's files are removed after it.
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    /// One quick pass (`cargo bench -- --test`): the smoke size, the
    /// first shape and the last data multiple, zipfian keys.
    #[arg(long, alias = "quick")]
    pub(crate) test: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    pub(crate) bench: bool,
}

impl Options {
    /// The smoke size: the same cases, 64 times smaller, 2 s each, few
    /// threads.
    pub(crate) fn smoke(mut self) -> Self {
        self.scale = 64;
        self.duration = Duration::from_secs(2);
        self.write_threads = 8;
        self.read_threads = 4;
        self.load_threads = 2;
        self
    }

    fn check(&self) -> Result<()> {
        if self.scale == 0 || self.runs == 0 || self.engines.is_empty() {
            return Err("--scale, --runs and --engines must not be zero or empty".into());
        }
        if self.write_threads == 0 || self.read_threads == 0 || self.load_threads == 0 {
            return Err("every thread count must be at least 1".into());
        }
        if self.write_partitions / self.scale == 0 {
            return Err("--write-partitions / --scale leaves no partition".into());
        }
        if self.duration < Duration::from_millis(100) {
            return Err("--duration must be at least 100ms".into());
        }
        Ok(())
    }

    fn budget(&self) -> u64 {
        self.budget / self.scale
    }

    fn cache(&self) -> u64 {
        self.cache / self.scale
    }
}

/// The bench's entry: a child's work when `args` start with the child
/// flag, else the parent's runs, reported to `out`.
///
/// # Errors
/// Bad options, a child that failed, or a report that cannot be written.
pub(crate) fn main(args: &[String], out: &mut impl Write) -> Result<()> {
    if args.first().map(String::as_str) == Some(CHILD_FLAG) {
        let spec = args.get(1).ok_or("a child needs its spec")?;
        let result = child::run(&serde_json::from_str(spec)?)?;
        println!("{RESULT_PREFIX}{result}");
        return Ok(());
    }
    let parsed =
        Options::try_parse_from(std::iter::once("peer".to_string()).chain(args.iter().cloned()));
    let mut options = match parsed {
        Ok(o) => o,
        // `--help` is not an error.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => {
            write!(out, "{}", e.render())?;
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    if options.test {
        options = options.smoke();
        options.shapes.truncate(1);
        let last = options.data.last().copied().unwrap_or(12.0);
        options.data = vec![last];
        options.keys = vec![KeyChoice::Zipfian];
    }
    let reports = run_parent(&options, out)?;
    let failed: Vec<String> = reports
        .iter()
        .flat_map(|r| {
            r.results.iter().filter_map(|(engine, result, _)| {
                let (errors, bad) = (result["errors"].as_u64(), result["bad"].as_u64());
                (errors != Some(0) || bad != Some(0)).then(|| {
                    format!(
                        "{} in {}: {} errors, {} reads not as written",
                        engine.name(),
                        r.title,
                        result["errors"],
                        result["bad"]
                    )
                })
            })
        })
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; ").into())
    }
}

/// Runs every case `options` asks for, each engine in a child of
/// `current_exe`, and writes the report to `out`; returns the reports.
///
/// # Errors
/// As [`main`].
pub(crate) fn run_parent(options: &Options, out: &mut impl Write) -> Result<Vec<Report>> {
    options.check()?;
    let temporary;
    let root = match &options.dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            temporary = tempfile::Builder::new().prefix("peer-bench").tempdir()?;
            temporary.path().to_path_buf()
        }
    };
    writeln!(
        out,
        "peer bench: {} beside each other; budget {}, cache {}, {} s a phase, {} run(s) a case, files in {}",
        options
            .engines
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(" and "),
        replica_stress::units::format_bytes(options.budget()),
        replica_stress::units::format_bytes(options.cache()),
        options.duration.as_secs_f64(),
        options.runs,
        root.display()
    )?;
    let mut reports = Vec::new();
    for run in 1..=options.runs {
        if matches!(options.scenario, Scenario::Write | Scenario::All) {
            reports.push(write_case(options, &root, run, out)?);
        }
        if matches!(options.scenario, Scenario::Read | Scenario::All) {
            for &shape in &options.shapes {
                for &multiple in &options.data {
                    reports.extend(read_cases(options, &root, run, shape, multiple, out)?);
                }
            }
        }
    }
    Ok(reports)
}

fn base_spec(options: &Options, engine: EngineKind, dir: &Path) -> Value {
    json!({
        "engine": engine.name(),
        "dir": dir.to_string_lossy(),
        "budget": options.budget(),
        "cache": options.cache(),
        "duration_ms": options.duration.as_millis() as u64,
    })
}

fn write_case(options: &Options, root: &Path, run: u32, out: &mut impl Write) -> Result<Report> {
    let partitions = options.write_partitions / options.scale;
    let mut report = Report::new(format!(
        "write {}: {} threads, keys uniform over {partitions} partitions, commit log periodic (fjall: journal synced at the same period), run {run}/{}",
        Shape::WRITE.name(),
        options.write_threads,
        options.runs
    ));
    for &engine in &options.engines {
        let dir = root.join(format!("write-{}", engine.name()));
        let mut spec = base_spec(options, engine, &dir);
        spec["role"] = json!("write");
        spec["rows"] = json!(Shape::WRITE.rows);
        spec["row_bytes"] = json!(Shape::WRITE.row_bytes);
        spec["partitions"] = json!(partitions);
        spec["threads"] = json!(options.write_threads);
        let result = spawn_child(&spec);
        remove_dir(&dir);
        report.add(engine, result?);
    }
    report.write(out)?;
    Ok(report)
}

fn read_cases(
    options: &Options,
    root: &Path,
    run: u32,
    shape: Shape,
    multiple: f64,
    out: &mut impl Write,
) -> Result<Vec<Report>> {
    let partitions = ((multiple * options.cache() as f64) / shape.bytes() as f64).ceil() as u64;
    let partitions = partitions.max(2);
    let mut reports: Vec<Report> = options
        .keys
        .iter()
        .map(|k| {
            Report::new(format!(
                "read {} data {multiple}x the cache ({partitions} partitions, {}), keys {}: {} threads, run {run}/{}",
                shape.name(),
                replica_stress::units::format_bytes(partitions * shape.bytes()),
                k.name(),
                options.read_threads,
                options.runs
            ))
            .with_lru_capacity(options.cache() / shape.bytes(), partitions)
        })
        .collect();
    for &engine in &options.engines {
        let dir = root.join(format!(
            "read-{}-{}-{multiple}",
            engine.name(),
            shape.name()
        ));
        let mut spec = base_spec(options, engine, &dir);
        spec["rows"] = json!(shape.rows);
        spec["row_bytes"] = json!(shape.row_bytes);
        spec["partitions"] = json!(partitions);
        let loaded = (|| {
            let mut load = spec.clone();
            load["role"] = json!("load");
            load["threads"] = json!(options.load_threads);
            spawn_child(&load)?;
            for (report, &keys) in reports.iter_mut().zip(&options.keys) {
                let trace = root.join(format!("trace-{}", engine.name()));
                std::fs::create_dir_all(&trace)?;
                let mut read = spec.clone();
                read["role"] = json!("read");
                read["keys"] = json!(keys.name());
                read["threads"] = json!(options.read_threads);
                read["trace_dir"] = json!(trace.to_string_lossy());
                let result = spawn_child(&read);
                let traced = result.and_then(|r| Ok((r, report::read_trace(&trace)?)));
                remove_dir(&trace);
                let (result, trace) = traced?;
                report.add_with_trace(engine, result, &trace);
            }
            Ok::<(), BoxError>(())
        })();
        remove_dir(&dir);
        loaded?;
    }
    for report in &reports {
        report.write(out)?;
    }
    Ok(reports)
}

fn remove_dir(dir: &Path) {
    if dir.exists()
        && let Err(e) = std::fs::remove_dir_all(dir)
    {
        eprintln!("peer bench: could not remove {}: {e}", dir.display());
    }
}

/// Runs `spec` in a child process (this executable again) and returns the
/// result it printed.
fn spawn_child(spec: &Value) -> Result<Value> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .arg(CHILD_FLAG)
        .arg(spec.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("the child's stdout")?;
    let mut result = None;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        match line.strip_prefix(RESULT_PREFIX) {
            Some(json) => result = Some(serde_json::from_str::<Value>(json)?),
            None => eprintln!("{line}"),
        }
    }
    let status = child.wait()?;
    if !status.success() {
        return Err(format!(
            "the {} child ({}) failed: {status}",
            spec["engine"], spec["role"]
        )
        .into());
    }
    result.ok_or_else(|| format!("the {} child printed no result", spec["engine"]).into())
}

/// A spec's field, or an error naming it.
pub(crate) fn field<'a>(spec: &'a Value, name: &str) -> Result<&'a Value> {
    spec.get(name)
        .ok_or_else(|| format!("the spec has no {name:?}").into())
}

/// A spec's number.
pub(crate) fn number(spec: &Value, name: &str) -> Result<u64> {
    field(spec, name)?
        .as_u64()
        .ok_or_else(|| format!("the spec's {name:?} is not a count").into())
}

/// A spec's string.
pub(crate) fn string<'a>(spec: &'a Value, name: &str) -> Result<&'a str> {
    field(spec, name)?
        .as_str()
        .ok_or_else(|| format!("the spec's {name:?} is not a string").into())
}

/// A spec's engine and key choice, parsed.
pub(crate) fn engine_of(spec: &Value) -> Result<EngineKind> {
    EngineKind::parse(string(spec, "engine")?)
}

/// A read spec's key choice.
pub(crate) fn keys_of(spec: &Value) -> Result<KeyChoice> {
    KeyChoice::parse(string(spec, "keys")?)
}
