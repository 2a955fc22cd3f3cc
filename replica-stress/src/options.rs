//! Command-line options of `replica-stress`, modelled on cassandra-stress:
//! a command (`write`, `read`, `mixed`), thread count, population
//! (partition count and distribution, as `-pop dist=...`), partition and
//! row sizes, duration or operation count, and the database's dirty-memory
//! and flush settings.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use replica::{CacheSize, CommitLogMode, FlushPolicy, MIN_CACHE_SIZE, check_soft_limit_ratio};

use crate::error::Error;
use crate::units::{parse_count, parse_duration, parse_size};

/// The largest thread count accepted.
pub const MAX_THREADS: usize = 10_000;
/// The most writes `--async` keeps in flight per client thread.
pub const MAX_ASYNC_IN_FLIGHT: usize = 65_536;
/// The largest number of tables a load may be spread over: as many as a
/// catalog holds.
pub const MAX_TABLES: u32 = replica::MAX_TABLES as u32;
/// The largest row (value) size, so one row always fits an sstable block
/// and a memtable segment-sized allocation comfortably.
pub const MAX_ROW_SIZE: u64 = 16 << 20;
/// The largest partition size: the generator builds a whole partition in
/// memory for each write.
pub const MAX_PARTITION_SIZE: u64 = 1 << 30;
/// The most columns (cells) a generated row has.
pub const MAX_COLUMNS: u32 = 1024;
/// How long a run lasts when neither `--duration` nor `--ops` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(30);
/// The population of a `write` load without `--partitions` (the seed
/// experiment's: 1M partitions of 128 KiB, far more than any run of a
/// few minutes writes).
pub const DEFAULT_WRITE_PARTITIONS: u64 = 1_000_000;
/// Bytes of a data directory's file system a run leaves free: a run whose
/// population would not leave this much is refused at start, and a run
/// stops when less than this remains (flushes, compaction's output and
/// the commit log need room beyond the data).
pub const DISK_RESERVE: u64 = 1 << 30;

/// Whether a run first writes every partition of its population once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Populate {
    /// For `read` and `mixed` in a fresh temporary directory (the
    /// default): without it they would read only absent keys.
    Auto,
    /// Always, also into given `--data-dir`s.
    Yes,
    /// Never (given directories already hold the population).
    No,
}

/// The population of a load without `--partitions`: for `write`,
/// [`DEFAULT_WRITE_PARTITIONS`]; for `read` and `mixed`, as many
/// partitions of `partition_size` bytes as half the dirty-memory `budget`
/// holds, and at least one per table.
///
/// Why half the budget: the default row cache takes what the pool holds
/// beyond the dirty budgets, which is at least the budget, so the whole
/// population fits in the cache with room for its encoding and index, and
/// a read load measures the cache rather than a disk; and the data on
/// disk stays bounded (at most 512 MiB with the largest machine budget),
/// so a long `mixed` run overwrites its population instead of filling the
/// disk with new partitions.
pub fn default_partitions(mode: Mode, budget: u64, partition_size: u64, tables: u32) -> u64 {
    match mode {
        Mode::Write => DEFAULT_WRITE_PARTITIONS,
        Mode::Read | Mode::Mixed => {
            (budget / 2 / partition_size.max(1)).max(u64::from(tables.max(1)))
        }
    }
}

/// Checks that a population of `partitions` x `partition_size` bytes fits
/// in `available` bytes of `dir` with [`DISK_RESERVE`] left free.
///
/// # Errors
/// [`Error::NotEnoughDisk`] naming the directory and both figures.
pub fn check_disk_space(
    dir: &std::path::Path,
    partitions: u64,
    partition_size: u64,
    available: u64,
) -> Result<(), Error> {
    let needed = partitions.saturating_mul(partition_size);
    if needed > available.saturating_sub(DISK_RESERVE) {
        return Err(Error::NotEnoughDisk {
            dir: dir.to_path_buf(),
            partitions,
            partition_size,
            needed,
            available,
            reserve: DISK_RESERVE,
        });
    }
    Ok(())
}

/// What the load does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Only writes (cassandra-stress `write`).
    Write,
    /// Only reads of the population's partitions (cassandra-stress `read`).
    Read,
    /// Writes and reads in the proportion of `--ratio`.
    Mixed,
}

impl Mode {
    /// The mode's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Write => "write",
            Mode::Read => "read",
            Mode::Mixed => "mixed",
        }
    }
}

/// How operations pick partitions out of the population (cassandra-stress
/// `-pop dist=...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Distribution {
    /// Every partition equally likely (`UNIFORM(1..N)`).
    Uniform,
    /// Normal around the middle of the population, three standard
    /// deviations to either end, clamped (`GAUSSIAN(1..N)`).
    Gaussian,
    /// Each thread walks the population in order, threads interleaved, and
    /// wraps around (`seq=1..N`).
    Sequential,
}

impl Distribution {
    /// The distribution's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Gaussian => "gaussian",
            Distribution::Sequential => "sequential",
        }
    }
}

/// The flush policy of a run, as `--flush-policy` names it: the command
/// line's two choices, each standing for one library [`FlushPolicy`]
/// ([`policy`](Self::policy)). The command line's own type, so the
/// dirty-memory crate that defines the policies needs no clap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum FlushPolicyChoice {
    /// The default (ScyllaDB since 2016, issue 1817): memtables stay in
    /// memory until the unspooled dirty memory of all of them passes the
    /// soft limit; then the largest is flushed, one data write at a time.
    #[default]
    SoftLimit,
    /// The baseline it replaced, kept for comparison: each memtable is
    /// flushed when it alone reaches a fixed share of the budget, several
    /// flushes at once.
    PerMemtable,
}

impl FlushPolicyChoice {
    /// The policy's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            FlushPolicyChoice::SoftLimit => "soft-limit",
            FlushPolicyChoice::PerMemtable => "per-memtable",
        }
    }

    /// The library policy the choice stands for:
    /// [`FlushPolicy::LargestAtSoftLimit`], or
    /// [`FlushPolicy::per_memtable_default`] (ScyllaDB's pre-2016 numbers:
    /// a memtable flushed at about 11% of the budget, four at once).
    pub fn policy(self) -> FlushPolicy {
        match self {
            FlushPolicyChoice::SoftLimit => FlushPolicy::LargestAtSoftLimit,
            FlushPolicyChoice::PerMemtable => FlushPolicy::per_memtable_default(),
        }
    }
}

/// Writes to reads in a mixed load, `W:R` on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ratio {
    /// Parts of writes.
    pub writes: u32,
    /// Parts of reads.
    pub reads: u32,
}

impl Ratio {
    /// Parses `W:R`, for example `1:1` or `3:1`; at least one side must be
    /// non-zero.
    pub fn parse(value: &str) -> Result<Ratio, Error> {
        let bad = || Error::InvalidOption {
            name: "--ratio",
            value: value.to_owned(),
            expected: "writes:reads as two integers, not both 0, such as 1:1 or 3:1".to_owned(),
        };
        let (w, r) = value.split_once(':').ok_or_else(bad)?;
        let writes: u32 = w.trim().parse().map_err(|_| bad())?;
        let reads: u32 = r.trim().parse().map_err(|_| bad())?;
        if writes == 0 && reads == 0 {
            return Err(bad());
        }
        Ok(Ratio { writes, reads })
    }
}

/// A whole number of `what` for option `name`: a negative or malformed
/// value names the option and its range (the range itself is checked by
/// [`StressOptions::validate`], with the other options).
fn whole<T: std::str::FromStr>(name: &'static str, s: &str, range: String) -> Result<T, Error> {
    s.trim()
        .parse()
        .map_err(|_| invalid(name, s, format!("a whole number, {range}")))
}
fn threads(s: &str) -> Result<usize, Error> {
    whole("--threads", s, format!("1 to {MAX_THREADS} threads"))
}
fn tables(s: &str) -> Result<u32, Error> {
    whole("--tables", s, format!("1 to {MAX_TABLES} tables"))
}
fn columns(s: &str) -> Result<u32, Error> {
    whole("--columns", s, format!("1 to {MAX_COLUMNS} columns"))
}
fn async_in_flight(s: &str) -> Result<usize, Error> {
    whole(
        "--async",
        s,
        format!("0 to {MAX_ASYNC_IN_FLIGHT} writes in flight per thread"),
    )
}
fn seed(s: &str) -> Result<u64, Error> {
    whole("--seed", s, "0 to 18446744073709551615".to_owned())
}

fn partitions(s: &str) -> Result<u64, Error> {
    parse_count("--partitions", s)
}
fn ops(s: &str) -> Result<u64, Error> {
    parse_count("--ops", s)
}
fn partition_size(s: &str) -> Result<u64, Error> {
    parse_size("--partition-size", s)
}
fn row_size(s: &str) -> Result<u64, Error> {
    parse_size("--row-size", s)
}
fn budget(s: &str) -> Result<u64, Error> {
    parse_size("--budget", s)
}
fn flush_bandwidth(s: &str) -> Result<u64, Error> {
    parse_size("--flush-bandwidth", s)
}

/// A modelled device of the command line, `--device NAME=BANDWIDTH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceArg {
    /// The device's name.
    pub name: String,
    /// Its bandwidth in bytes per second.
    pub bandwidth: u64,
}

impl DeviceArg {
    /// Parses `NAME=BANDWIDTH`, the bandwidth a size per second as
    /// [`parse_size`] reads it (`disk=100MiB`).
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming `--device`: no `=`, a name that is
    /// empty or longer than 64 bytes, a bandwidth that does not parse or is
    /// zero.
    pub fn parse(value: &str) -> Result<DeviceArg, Error> {
        let bad = |expected: &str| Error::InvalidOption {
            name: "--device",
            value: value.to_owned(),
            expected: expected.to_owned(),
        };
        let (name, bandwidth) = value
            .split_once('=')
            .ok_or_else(|| bad("NAME=BANDWIDTH, such as disk=100MiB (bytes per second)"))?;
        let name = name.trim();
        if name.is_empty() || name.len() > replica::device::MAX_NAME_LEN {
            return Err(bad("a device name of 1 to 64 bytes before the ="));
        }
        let bandwidth = parse_size("--device", bandwidth.trim())
            .map_err(|_| bad("a bandwidth after the =, such as 100MiB (bytes per second)"))?;
        if bandwidth == 0 {
            return Err(bad("a bandwidth of at least 1 byte per second"));
        }
        Ok(DeviceArg {
            name: name.to_owned(),
            bandwidth,
        })
    }
}
fn sstable_bytes_per_sync(s: &str) -> Result<u64, Error> {
    parse_size("--sstable-bytes-per-sync", s)
}
fn cache_size(s: &str) -> Result<u64, Error> {
    parse_size("--cache-size", s)
}
fn commitlog(s: &str) -> Result<CommitLogMode, Error> {
    CommitLogMode::parse(s).map_err(Error::from)
}
fn on_off(s: &str) -> Result<bool, Error> {
    parse_on_off("--direct-io", s)
}

fn prefault_on_off(s: &str) -> Result<bool, Error> {
    parse_on_off("--prefault", s)
}

/// `on` or `off`, for the option `name`.
fn parse_on_off(name: &'static str, s: &str) -> Result<bool, Error> {
    parse_keyword(name, s, &[("on", true), ("off", false)])
}

/// One of `choices`' keywords, for the option `name`; the error lists them
/// ("a, b or c").
fn parse_keyword<T: Copy>(name: &'static str, s: &str, choices: &[(&str, T)]) -> Result<T, Error> {
    if let Some(&(_, value)) = choices.iter().find(|(word, _)| *word == s) {
        return Ok(value);
    }
    let words: Vec<&str> = choices.iter().map(|(word, _)| *word).collect();
    let expected = match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => words.concat(),
    };
    Err(Error::InvalidOption {
        name,
        value: s.to_owned(),
        expected,
    })
}

fn on_corruption(s: &str) -> Result<replica::CorruptionPolicy, Error> {
    use replica::CorruptionPolicy::{Skip, Stop};
    parse_keyword(
        "--commitlog-on-corruption",
        s,
        &[("stop", Stop), ("skip", Skip)],
    )
}
fn commitlog_direct_io(s: &str) -> Result<replica::DirectIo, Error> {
    use replica::DirectIo::{Always, Auto, Never};
    parse_keyword(
        "--commitlog-direct-io",
        s,
        &[("auto", Auto), ("always", Always), ("never", Never)],
    )
}
fn periodic_ack(s: &str) -> Result<replica::PeriodicAck, Error> {
    use replica::PeriodicAck::{Buffered, Written};
    parse_keyword(
        "--periodic-ack",
        s,
        &[("buffered", Buffered), ("written", Written)],
    )
}
fn duration(s: &str) -> Result<Duration, Error> {
    parse_duration("--duration", s)
}

/// The smallest budget [`machine_budget`] picks.
pub const MIN_MACHINE_BUDGET: u64 = 64 << 20;
/// The largest budget [`machine_budget`] picks.
pub const MAX_MACHINE_BUDGET: u64 = 1 << 30;

/// The dirty-memory budget for a machine with `total_memory` bytes: an
/// eighth of it, between [`MIN_MACHINE_BUDGET`] and [`MAX_MACHINE_BUDGET`];
/// the database's default budget when the size is unknown.
pub fn budget_for_memory(total_memory: Option<u64>) -> u64 {
    total_memory.map_or(replica::DEFAULT_BUDGET as u64, |m| {
        (m / 8).clamp(MIN_MACHINE_BUDGET, MAX_MACHINE_BUDGET)
    })
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut fields = line.split_whitespace().skip(1);
    let kib: u64 = fields.next()?.parse().ok()?;
    (fields.next() == Some("kB"))
        .then_some(kib)?
        .checked_mul(1024)
}

/// The budget `replica-stress` uses without `--budget`: see
/// [`budget_for_memory`]; the machine's memory is read from
/// `/proc/meminfo` where there is one.
pub fn machine_budget() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| mem_total(&t));
    budget_for_memory(total)
}

/// When a run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCondition {
    /// After this much time.
    Duration(Duration),
    /// After this many operations (all threads together).
    Operations(u64),
}

/// The options of `replica-stress`.
///
/// ```
/// use clap::Parser;
/// use replica_stress::{Mode, StressOptions};
///
/// let o = StressOptions::try_parse_from([
///     "replica-stress", "mixed", "--threads", "8", "--partition-size", "4KiB",
///     "--row-size", "1KiB", "--ops", "10k",
/// ]).unwrap();
/// assert_eq!(o.mode, Mode::Mixed);
/// let w = o.workload().unwrap();
/// assert_eq!((w.rows_per_partition, w.row_size), (4, 1024));
/// ```
#[derive(Debug, Clone, Parser)]
#[command(
    name = "replica-stress",
    about = "Load generator for the replica storage engine, reporting like cassandra-stress.",
    long_about = None,
    version,
    // `--threads -3` is a value to refuse by name, not an unknown flag.
    allow_negative_numbers = true,
    args_override_self = true
)]
pub struct StressOptions {
    /// What to run.
    #[arg(value_enum, default_value_t = Mode::Write)]
    pub mode: Mode,
    /// Client threads issuing operations (the seed experiment used 100).
    #[arg(long, default_value_t = 100, value_parser = threads)]
    pub threads: usize,
    /// Writes each client thread keeps in flight, through the database's
    /// asynchronous write path (`Database::apply_async`), polled on a small
    /// executor per thread; 0 (the default): one blocking write at a time.
    #[arg(long = "async", value_name = "N", default_value_t = 0, value_parser = async_in_flight)]
    pub async_in_flight: usize,
    /// Number of distinct partitions (the population), e.g. 1M. Default:
    /// 1M for write; for read and mixed, as many as half the dirty budget
    /// holds (the population fits the row cache, and a long run overwrites
    /// it rather than fill the disk).
    #[arg(long, value_parser = partitions)]
    pub partitions: Option<u64>,
    /// Write every partition of the population once, and flush, before the
    /// measured run (reported as its own phase): auto (the default) does so
    /// for read and mixed in a temporary directory, yes always, no never.
    #[arg(long, value_enum, default_value_t = Populate::Auto)]
    pub populate: Populate,
    /// How operations pick partitions.
    #[arg(long, value_enum, default_value_t = Distribution::Uniform)]
    pub distribution: Distribution,
    /// Bytes of values written per partition, e.g. 128KiB.
    #[arg(long, default_value = "128KiB", value_parser = partition_size)]
    pub partition_size: u64,
    /// Bytes of value per row; a partition holds partition-size / row-size
    /// rows. Default: the partition size (one row per partition).
    #[arg(long, value_parser = row_size)]
    pub row_size: Option<u64>,
    /// Columns (cells) per row, the row's value bytes split evenly over
    /// them (cassandra-stress `-col n=FIXED(N)`; the separate flush
    /// directory experiment used 50). 1 to 1024, at most the row size.
    #[arg(long, default_value_t = 1, value_parser = columns)]
    pub columns: u32,
    /// Number of tables the load is spread over (many tables mean many
    /// memtables).
    #[arg(long, default_value_t = 1, value_parser = tables)]
    pub tables: u32,
    /// How long to run, e.g. 30s or 5m (default 30s).
    #[arg(long, value_parser = duration, conflicts_with = "ops")]
    pub duration: Option<Duration>,
    /// Stop after this many operations instead, e.g. 1M.
    #[arg(long, value_parser = ops)]
    pub ops: Option<u64>,
    /// Writes to reads of a mixed load, as W:R.
    #[arg(long, default_value = "1:1", value_parser = Ratio::parse)]
    pub ratio: Ratio,
    /// Dirty-memory budget, e.g. 512MiB (default: chosen by the database
    /// to suit the machine).
    #[arg(long, value_parser = budget)]
    pub budget: Option<u64>,
    /// The soft limit as a fraction of the budget, in (0, 0.5].
    #[arg(long, default_value_t = 0.25)]
    pub soft_limit_ratio: f64,
    /// Which flush policy the database runs.
    #[arg(long, value_enum, default_value_t = FlushPolicyChoice::SoftLimit)]
    pub flush_policy: FlushPolicyChoice,
    /// Limit on flush write bandwidth in bytes per second, e.g. 64MiB
    /// (default: unlimited): shorthand for `--device flush=BANDWIDTH
    /// --flush-dir-device flush`.
    #[arg(long, value_parser = flush_bandwidth, conflicts_with = "flush_dir_device")]
    pub flush_bandwidth: Option<u64>,
    /// A modelled device, NAME=BANDWIDTH in bytes per second (repeatable),
    /// e.g. `--device disk=100MiB`: every sstable and commit-log byte read
    /// or written in a directory on it is charged to its bandwidth, which
    /// everything on it shares. With one device and no `--*-device`
    /// placement, every directory is on it.
    #[arg(long = "device", value_name = "NAME=BANDWIDTH", value_parser = DeviceArg::parse)]
    pub devices: Vec<DeviceArg>,
    /// The device the data directories are on (and the commit log, unless
    /// `--commitlog-device` says otherwise).
    #[arg(long, value_name = "NAME")]
    pub data_dir_device: Option<String>,
    /// The device the flush directories are on. Without `--flush-dir` the
    /// flushes go to the data directories, so this must name their device;
    /// except in a temporary directory (no `--data-dir`), where the run
    /// gets a flush directory of its own when this names another device.
    #[arg(long, value_name = "NAME")]
    pub flush_dir_device: Option<String>,
    /// The device the commit log's directory is on (default: the first
    /// data directory's device).
    #[arg(long, value_name = "NAME")]
    pub commitlog_device: Option<String>,
    /// Flushes start write-back of the sstable they write every this many
    /// bytes, e.g. 1MiB (the default); 0 turns it off
    /// (`sstable::WriterOptions::bytes_per_sync`).
    #[arg(long, value_name = "SIZE", value_parser = sstable_bytes_per_sync, default_value = "1MiB")]
    pub sstable_bytes_per_sync: u64,
    /// Whether the sstables' Data files and, in batch mode, the commit log
    /// are written with direct I/O (`O_DIRECT`, no copy into the page
    /// cache), and compaction's scans read with it
    /// (`sstable::set_direct_scans`, for the process): on (the default) or
    /// off (through the page cache, with
    /// write-back every `--sstable-bytes-per-sync` bytes for sstables and
    /// every MiB for the log). A periodic log writes through the page cache
    /// either way (`DirectIo::Auto`: each acknowledged write is written
    /// out, and a direct write would wait for the device).
    #[arg(long, value_name = "ON|OFF", value_parser = on_off, default_value = "on", action = clap::ArgAction::Set)]
    pub direct_io: bool,
    /// Whether the memtable pool takes its working memory (the dirty budget
    /// and the cache's share; not its headroom) at open and touches every
    /// page (`DatabaseConfig::prefault_memory`, as ScyllaDB takes its
    /// memory at start): on (the default) or off (pages fault in as writes
    /// first reach them, under their memtable's lock).
    #[arg(long, value_name = "ON|OFF", value_parser = prefault_on_off, default_value = "on", action = clap::ArgAction::Set)]
    pub prefault: bool,
    /// The commit log: off, periodic (synced every 10 s), periodic:INTERVAL,
    /// batch (a write returns once synced; concurrent writes share a sync)
    /// or batch:WINDOW.
    #[arg(long, value_name = "MODE", value_parser = commitlog, default_value = "periodic")]
    pub commitlog: CommitLogMode,
    /// What opening a data directory whose commit log is damaged does:
    /// stop (refuse to open, change nothing) or skip (skip the damaged
    /// entries, report them, keep the damaged segment aside).
    #[arg(long, value_name = "POLICY", value_parser = on_corruption, default_value = "stop")]
    pub commitlog_on_corruption: replica::CorruptionPolicy,
    /// With a periodic commit log, when a write is acknowledged: buffered
    /// (the default: once in the log's buffer, written out at once; a
    /// process crash loses the last few milliseconds) or written (once
    /// written to the segment file; a process crash loses nothing
    /// acknowledged, each write waits for its group's write).
    #[arg(long, value_name = "WHEN", value_parser = periodic_ack, default_value = "buffered")]
    pub periodic_ack: replica::PeriodicAck,
    /// When the commit log writes with direct I/O: auto (the default: in
    /// batch mode only), always (also a periodic log: with `--periodic-ack
    /// written`, the fastest shape for large rows) or never. `--direct-io
    /// off` makes it never.
    #[arg(long, value_name = "WHEN", value_parser = commitlog_direct_io, default_value = "auto")]
    pub commitlog_direct_io: replica::DirectIo,
    /// Row cache memory of all the tables together, e.g. 256MiB (at least
    /// 1MiB; the memory pool grows to hold it beside the dirty budgets).
    /// Default: what the pool holds beyond the dirty budgets.
    #[arg(long, value_name = "SIZE", value_parser = cache_size, conflicts_with = "no_cache")]
    pub cache_size: Option<u64>,
    /// Run without the row cache: reads that miss the memtables go to the
    /// sstables.
    #[arg(long)]
    pub no_cache: bool,
    /// Compaction strategy of every table: ics (incremental, the
    /// default), stcs (size-tiered) or none.
    #[arg(long, value_name = "STRATEGY", value_parser = crate::parse_compaction, default_value = "ics")]
    pub compaction: replica::compaction::StrategyConfig,
    /// When a table's flushes wait for its compactions: SLOW:STOP sorted
    /// runs (from SLOW each flush waits for one compaction step, from STOP
    /// until the count is below it; the writers wait with them at the
    /// dirty-memory limits), or off (the default: a held flush can stall
    /// the writers for seconds; 20:28 bounds the runs).
    #[arg(long, value_name = "SLOW:STOP", value_parser = crate::parse_flush_throttle, default_value = "off")]
    pub flush_throttle: replica::FlushThrottleConfig,
    /// Data directory (repeatable); given directories are kept after the
    /// run. Default: a temporary directory, removed at the end.
    #[arg(long)]
    pub data_dir: Vec<PathBuf>,
    /// Flush directory (repeatable). Default: the data directories.
    #[arg(long)]
    pub flush_dir: Vec<PathBuf>,
    /// Write the per-second latency histograms to FILE in the HdrHistogram
    /// interval log format.
    #[arg(long, value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,
    /// Write the summary to FILE as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw the run in FILE (HTML, self-contained: open it in a browser):
    /// per second the op rate (reads and writes apart in a mixed load),
    /// latency percentiles, dirty memory against its limits, flushes and
    /// compactions; `--compare` draws both policies; a FILE written by an
    /// earlier run gets this one beside its runs (cassandra-stress's
    /// `-graph`).
    #[arg(long, value_name = "FILE")]
    pub graph: Option<PathBuf>,
    /// Keep the run's results in DIR (created if missing): per run
    /// `<policy>.ops.csv` (the per-second table: op rate, latency
    /// percentiles, dirty memory, flushes, each device's share),
    /// `<policy>.hlog` (unless `--hdr-log` is given) and
    /// `<policy>.summary.txt`; `summary.json` (unless `--json` is given).
    #[arg(long, value_name = "DIR")]
    pub results_dir: Option<PathBuf>,
    /// Run the load under both flush policies, back to back, and print the
    /// summaries side by side.
    #[arg(long)]
    pub compare: bool,
    /// Seed of the workload generator: equal seeds give equal operations.
    #[arg(long, default_value_t = 0x5eed, value_parser = seed)]
    pub seed: u64,
    /// What the reports say of the process's memory: not a flag; the
    /// program sets it (`replica-stress` counts its heap allocations).
    #[arg(skip)]
    pub memory: crate::MemoryProbe,
    /// How the program asks a run to stop (its SIGINT and SIGTERM
    /// handler): not a flag.
    #[arg(skip)]
    pub interrupt: crate::Interrupt,
}

/// The validated shape of a load: what the generator produces.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSpec {
    /// What operations to issue.
    pub mode: Mode,
    /// Writes to reads, for [`Mode::Mixed`].
    pub ratio: Ratio,
    /// Number of distinct partitions.
    pub partitions: u64,
    /// How partitions are picked.
    pub distribution: Distribution,
    /// Rows written per partition, at least 1.
    pub rows_per_partition: u32,
    /// Value bytes per row, at least 1.
    pub row_size: u32,
    /// Cells (columns) per row, 1 to [`MAX_COLUMNS`] and at most
    /// `row_size`: the row's value bytes split over them, the first
    /// taking the remainder.
    pub columns: u32,
    /// Number of tables; partition `i` lives in table `i % tables`.
    pub tables: u32,
    /// Seed of every generator.
    pub seed: u64,
}

fn invalid(name: &'static str, value: impl ToString, expected: impl Into<String>) -> Error {
    Error::InvalidOption {
        name,
        value: value.to_string(),
        expected: expected.into(),
    }
}

impl StressOptions {
    /// The row cache the database runs with: off with `--no-cache`, the
    /// given size with `--cache-size`, the database's default otherwise.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming `--cache-size` for a size below
    /// [`MIN_CACHE_SIZE`] or beyond this machine's address space.
    pub fn cache(&self) -> Result<CacheSize, Error> {
        if self.no_cache {
            return Ok(CacheSize::Off);
        }
        let Some(bytes) = self.cache_size else {
            return Ok(CacheSize::Auto);
        };
        match usize::try_from(bytes) {
            Ok(n) if n >= MIN_CACHE_SIZE => Ok(CacheSize::Bytes(n)),
            _ => Err(Error::InvalidOption {
                name: "--cache-size",
                value: bytes.to_string(),
                expected: format!(
                    "at least {MIN_CACHE_SIZE} bytes and at most {} (or --no-cache)",
                    usize::MAX
                ),
            }),
        }
    }

    /// The population: `--partitions`, or [`default_partitions`] for the
    /// mode, `--budget` (or the machine's) and `--partition-size`.
    pub fn partitions(&self) -> u64 {
        self.partitions.unwrap_or_else(|| {
            default_partitions(
                self.mode,
                self.budget_or_machine(),
                self.partition_size,
                self.tables,
            )
        })
    }

    /// Whether the run writes its population first (see [`Populate`]).
    pub fn populates(&self) -> bool {
        match self.populate {
            Populate::Yes => true,
            Populate::No => false,
            Populate::Auto => self.mode != Mode::Write && self.data_dir.is_empty(),
        }
    }

    /// The partitions the run may write to disk, for the check against the
    /// free space: the whole population when it populates or runs `mixed`
    /// (its writes can cover all of it), none for `read` without
    /// populating; for `write`, the population or the operations if fewer
    /// (`None` for a `write` load that stops after a duration: it stops
    /// itself when the disk runs low).
    pub fn partitions_on_disk(&self) -> Option<u64> {
        let population = self.partitions();
        if self.populates() {
            return Some(population);
        }
        match self.mode {
            Mode::Read => None,
            Mode::Mixed => Some(population),
            Mode::Write => match self.stop_condition() {
                Ok(StopCondition::Operations(n)) => Some(n.min(population)),
                _ => None,
            },
        }
    }

    /// Checks the options that shape the load and derives the generator's
    /// [`WorkloadSpec`].
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the first option out of range.
    pub fn workload(&self) -> Result<WorkloadSpec, Error> {
        self.cache()?;
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(invalid(
                "--threads",
                self.threads,
                format!("1 to {MAX_THREADS} threads"),
            ));
        }
        if self.tables == 0 || self.tables > MAX_TABLES {
            return Err(invalid(
                "--tables",
                self.tables,
                format!("1 to {MAX_TABLES} tables"),
            ));
        }
        let partitions = self.partitions();
        if partitions < u64::from(self.tables) {
            return Err(invalid(
                "--partitions",
                partitions,
                format!(
                    "at least one partition per table (--tables is {})",
                    self.tables
                ),
            ));
        }
        if self.partition_size == 0 || self.partition_size > MAX_PARTITION_SIZE {
            return Err(invalid(
                "--partition-size",
                self.partition_size,
                format!("1 to {MAX_PARTITION_SIZE} bytes"),
            ));
        }
        let row_size = self.row_size.unwrap_or(self.partition_size);
        if row_size == 0 || row_size > MAX_ROW_SIZE {
            return Err(invalid(
                "--row-size",
                row_size,
                format!("1 to {MAX_ROW_SIZE} bytes"),
            ));
        }
        if row_size > self.partition_size {
            return Err(invalid(
                "--row-size",
                row_size,
                format!("at most the partition size ({} bytes)", self.partition_size),
            ));
        }
        if self.columns == 0 || self.columns > MAX_COLUMNS {
            return Err(invalid(
                "--columns",
                self.columns,
                format!("1 to {MAX_COLUMNS} columns"),
            ));
        }
        if u64::from(self.columns) > row_size {
            return Err(invalid(
                "--columns",
                self.columns,
                format!("at most the row size ({row_size} bytes): a column holds at least one"),
            ));
        }
        let rows = self.partition_size / row_size;
        Ok(WorkloadSpec {
            mode: self.mode,
            ratio: self.ratio,
            partitions,
            distribution: self.distribution,
            rows_per_partition: u32::try_from(rows).map_err(|_| {
                invalid(
                    "--row-size",
                    row_size,
                    "a row size giving at most 2^32-1 rows per partition",
                )
            })?,
            row_size: u32::try_from(row_size).map_err(|_| {
                invalid(
                    "--row-size",
                    row_size,
                    format!("at most {MAX_ROW_SIZE} bytes"),
                )
            })?,
            columns: self.columns,
            tables: self.tables,
            seed: self.seed,
        })
    }

    /// When the run stops: `--ops`, else `--duration`, else 30 seconds.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for a zero operation count or duration.
    pub fn stop_condition(&self) -> Result<StopCondition, Error> {
        match (self.ops, self.duration) {
            (Some(0), _) => Err(invalid("--ops", 0, "at least 1 operation")),
            (Some(n), _) => Ok(StopCondition::Operations(n)),
            (None, Some(d)) if d.is_zero() => {
                Err(invalid("--duration", "0", "a duration of at least 1ms"))
            }
            (None, Some(d)) => Ok(StopCondition::Duration(d)),
            (None, None) => Ok(StopCondition::Duration(DEFAULT_DURATION)),
        }
    }

    /// `--budget`, or [`machine_budget`] without it.
    pub fn budget_or_machine(&self) -> u64 {
        self.budget.unwrap_or_else(machine_budget)
    }

    /// Checks every option: the load ([`workload`](Self::workload)), the
    /// stop condition, the soft-limit ratio, the budget (its minimum, and
    /// a memory pool that fits the machine), and the bandwidth limit.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the first option out of range.
    pub fn validate(&self) -> Result<(), Error> {
        self.workload()?;
        self.stop_condition()?;
        check_soft_limit_ratio(self.soft_limit_ratio)?;
        if self.async_in_flight > MAX_ASYNC_IN_FLIGHT {
            return Err(invalid(
                "--async",
                self.async_in_flight,
                format!("0 to {MAX_ASYNC_IN_FLIGHT} writes in flight per thread"),
            ));
        }
        if let Some(b) = self.budget
            && b < replica::MIN_DATABASE_BUDGET as u64
        {
            return Err(invalid(
                "--budget",
                b,
                format!("at least {} bytes", replica::MIN_DATABASE_BUDGET),
            ));
        }
        self.check_memory_pool()?;
        if self.sstable_bytes_per_sync > 0 && self.sstable_bytes_per_sync < 4096 {
            return Err(invalid(
                "--sstable-bytes-per-sync",
                self.sstable_bytes_per_sync,
                "0 (off) or at least 4096 bytes",
            ));
        }
        if self.flush_bandwidth == Some(0) {
            return Err(invalid(
                "--flush-bandwidth",
                0,
                "at least 1 byte per second (omit the option for no limit)",
            ));
        }
        self.check_devices()
    }

    /// Refuses a memory pool larger than the machine's memory (or this
    /// process's cgroup limit) before the run starts, naming `--budget`:
    /// the database's own check (`DatabaseConfig::validate`, which names
    /// both figures and the pool's parts) on a configuration with this
    /// run's budget and cache, so the refusal comes before anything runs
    /// rather than at open. Other fields are the defaults, which the
    /// database checks again with the run's directories at open.
    fn check_memory_pool(&self) -> Result<(), Error> {
        let mut config = replica::DatabaseConfig::new("replica-stress");
        config.dirty_memory_budget =
            usize::try_from(self.budget_or_machine()).unwrap_or(usize::MAX);
        config.cache_size = self.cache()?;
        match config.validate() {
            Err(replica::Error::InvalidOption {
                name: "dirty_memory_budget",
                value,
                expected,
            }) => Err(Error::InvalidOption {
                name: "--budget",
                value,
                expected,
            }),
            _ => Ok(()),
        }
    }

    /// Every modelled device: the `--device`s, and the `flush` device of
    /// `--flush-bandwidth`.
    pub fn device_args(&self) -> Vec<DeviceArg> {
        let mut devices = self.devices.clone();
        if let Some(bandwidth) = self.flush_bandwidth {
            devices.push(DeviceArg {
                name: FLUSH_BANDWIDTH_DEVICE.to_owned(),
                bandwidth,
            });
        }
        devices
    }

    /// The devices of the data directories, the flush directories and
    /// the commit log, as the options place them (`None`: not placed):
    /// the `--*-device` options, `--flush-bandwidth`'s `flush` device for
    /// the flush directories, and with a single device and no placement,
    /// that device for every directory.
    pub fn placements(&self) -> (Option<String>, Option<String>, Option<String>) {
        let flush = self.flush_dir_device.clone().or_else(|| {
            self.flush_bandwidth
                .map(|_| FLUSH_BANDWIDTH_DEVICE.to_owned())
        });
        let (data, log) = (self.data_dir_device.clone(), self.commitlog_device.clone());
        let devices = self.device_args();
        if let ([only], None, None, None) = (devices.as_slice(), &data, &flush, &log) {
            let name = Some(only.name.clone());
            return (name.clone(), name.clone(), name);
        }
        (data, flush, log)
    }

    /// Checks the device model of the options: devices named once, and
    /// every placement naming one of them.
    fn check_devices(&self) -> Result<(), Error> {
        let devices = self.device_args();
        let mut names = std::collections::BTreeSet::new();
        for d in &devices {
            if !names.insert(d.name.as_str()) {
                return Err(invalid(
                    "--device",
                    &d.name,
                    "each device defined once (--flush-bandwidth defines `flush`)",
                ));
            }
        }
        let listed = || names.iter().copied().collect::<Vec<_>>().join(", ");
        for (option, name) in [
            ("--data-dir-device", &self.data_dir_device),
            ("--flush-dir-device", &self.flush_dir_device),
            ("--commitlog-device", &self.commitlog_device),
        ] {
            if let Some(name) = name
                && !names.contains(name.as_str())
            {
                return Err(invalid(
                    option,
                    name,
                    if names.is_empty() {
                        "a device defined with --device NAME=BANDWIDTH (there is none)".to_owned()
                    } else {
                        format!("one of the devices defined with --device: {}", listed())
                    },
                ));
            }
        }
        if devices.len() > 1 && self.placements() == (None, None, None) {
            return Err(invalid(
                "--device",
                listed(),
                "--data-dir-device, --flush-dir-device or --commitlog-device to place \
                 directories on them (only a single device needs no placement)",
            ));
        }
        Ok(())
    }
}

/// The device `--flush-bandwidth` defines for the flush directories.
pub const FLUSH_BANDWIDTH_DEVICE: &str = "flush";

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<StressOptions, clap::Error> {
        StressOptions::try_parse_from(std::iter::once("replica-stress").chain(args.iter().copied()))
    }

    #[test]
    fn defaults_follow_the_seed_experiment() {
        let o = parse(&[]).unwrap();
        assert_eq!(o.mode, Mode::Write);
        assert_eq!(o.threads, 100);
        assert_eq!(o.partition_size, 128 << 10);
        assert_eq!(o.tables, 1);
        assert_eq!(o.flush_policy, FlushPolicyChoice::SoftLimit);
        assert_eq!(o.flush_bandwidth, None);
        assert_eq!(o.sstable_bytes_per_sync, 1 << 20);
        assert!(!o.compare);
        let w = o.workload().unwrap();
        assert_eq!((w.rows_per_partition, w.row_size), (1, 128 << 10));
        assert_eq!(
            o.stop_condition().unwrap(),
            StopCondition::Duration(DEFAULT_DURATION)
        );
        o.validate().unwrap();
    }

    #[test]
    fn flush_policy_choices_keep_their_spellings_and_map_to_the_library() {
        for (choice, name, policy) in [
            (
                FlushPolicyChoice::SoftLimit,
                "soft-limit",
                FlushPolicy::LargestAtSoftLimit,
            ),
            (
                FlushPolicyChoice::PerMemtable,
                "per-memtable",
                FlushPolicy::per_memtable_default(),
            ),
        ] {
            assert_eq!(choice.name(), name);
            assert_eq!(choice.policy(), policy);
            let o = parse(&[&format!("--flush-policy={name}")]).unwrap();
            assert_eq!(o.flush_policy, choice);
            let spelled = choice.to_possible_value().expect("no variant is skipped");
            assert_eq!(spelled.get_name(), name, "clap spells it as name() does");
        }
        let e = parse(&["--flush-policy=largest-at-soft-limit"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("soft-limit") && e.contains("per-memtable"),
            "{e}"
        );
    }

    #[test]
    fn read_and_mixed_default_to_a_population_of_half_the_budget() {
        // 1 GiB budget, 128 KiB partitions: 4096 partitions, 512 MiB.
        assert_eq!(default_partitions(Mode::Read, 1 << 30, 128 << 10, 1), 4096);
        assert_eq!(default_partitions(Mode::Mixed, 1 << 30, 128 << 10, 1), 4096);
        assert_eq!(
            default_partitions(Mode::Write, 1 << 30, 128 << 10, 1),
            DEFAULT_WRITE_PARTITIONS
        );
        // At least one partition per table, whatever the sizes.
        assert_eq!(default_partitions(Mode::Read, 64 << 20, 1 << 30, 7), 7);
        let o = parse(&["read", "--budget=256MiB", "--partition-size=1MiB"]).unwrap();
        assert_eq!(o.partitions(), 128);
        assert_eq!(o.workload().unwrap().partitions, 128);
        let o = parse(&["mixed", "--budget=256MiB", "--partitions=5"]).unwrap();
        assert_eq!(o.partitions(), 5);
        let o = parse(&["--budget=256MiB"]).unwrap();
        assert_eq!(o.partitions(), DEFAULT_WRITE_PARTITIONS);
    }

    #[test]
    fn read_and_mixed_populate_a_temporary_directory() {
        assert!(parse(&["read"]).unwrap().populates());
        assert!(parse(&["mixed"]).unwrap().populates());
        assert!(!parse(&["write"]).unwrap().populates());
        // Given directories may hold an earlier run's data.
        assert!(!parse(&["read", "--data-dir=/d"]).unwrap().populates());
        assert!(
            parse(&["read", "--data-dir=/d", "--populate=yes"])
                .unwrap()
                .populates()
        );
        assert!(parse(&["write", "--populate=yes"]).unwrap().populates());
        assert!(!parse(&["mixed", "--populate=no"]).unwrap().populates());
        assert!(parse(&["read", "--populate=sometimes"]).is_err());
    }

    #[test]
    fn the_disk_check_counts_what_the_run_can_write() {
        let on_disk = |args: &[&str]| parse(args).unwrap().partitions_on_disk();
        assert_eq!(on_disk(&["read", "--partitions=10"]), Some(10));
        assert_eq!(
            on_disk(&["mixed", "--partitions=10", "--populate=no"]),
            Some(10)
        );
        // A read of given directories writes nothing.
        assert_eq!(on_disk(&["read", "--partitions=10", "--data-dir=/d"]), None);
        // A write load: its operations, if fewer than the population.
        assert_eq!(on_disk(&["write", "--partitions=10", "--ops=3"]), Some(3));
        assert_eq!(on_disk(&["write", "--partitions=10", "--ops=30"]), Some(10));
        // Bounded by time, it stops itself when the disk runs low.
        assert_eq!(on_disk(&["write", "--duration=1m"]), None);
    }

    #[test]
    fn a_population_beyond_the_free_space_is_refused() {
        let dir = std::path::Path::new("/data");
        check_disk_space(dir, 1000, 1 << 20, (1000 << 20) + DISK_RESERVE).unwrap();
        let e = check_disk_space(dir, 1000, 1 << 20, (999 << 20) + DISK_RESERVE).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("1000 partitions x 1048576 B (1048576000 B)")
                && text.contains(&format!("{} B available", (999u64 << 20) + DISK_RESERVE))
                && text.contains("/data"),
            "{text}"
        );
        // No overflow on absurd sizes.
        assert!(check_disk_space(dir, u64::MAX, u64::MAX, u64::MAX).is_err());
    }

    #[test]
    fn cache_options_choose_the_database_cache() {
        assert_eq!(parse(&[]).unwrap().cache().unwrap(), CacheSize::Auto);
        assert_eq!(
            parse(&["--cache-size=64MiB"]).unwrap().cache().unwrap(),
            CacheSize::Bytes(64 << 20)
        );
        assert_eq!(
            parse(&["--no-cache"]).unwrap().cache().unwrap(),
            CacheSize::Off
        );
        // Both at once is a contradiction clap refuses.
        assert!(parse(&["--no-cache", "--cache-size=64MiB"]).is_err());
        let e = parse(&["--cache-size=4KiB"])
            .unwrap()
            .workload()
            .unwrap_err();
        let e = e.to_string();
        assert!(e.contains("--cache-size") && e.contains("1048576"), "{e}");
        let e = parse(&["--cache-size=lots"]).unwrap_err().to_string();
        assert!(e.contains("--cache-size"), "{e}");
    }

    #[test]
    fn every_option_parses() {
        let o = parse(&[
            "mixed",
            "--threads=7",
            "--partitions=10k",
            "--distribution=gaussian",
            "--partition-size=64KiB",
            "--row-size=1KiB",
            "--tables=3",
            "--duration=2m",
            "--ratio=3:1",
            "--budget=256MiB",
            "--soft-limit-ratio=0.4",
            "--flush-policy=per-memtable",
            "--flush-bandwidth=32MiB",
            "--sstable-bytes-per-sync=0",
            "--data-dir=/a",
            "--data-dir=/b",
            "--flush-dir=/f",
            "--hdr-log=h.hlog",
            "--json=s.json",
            "--compare",
            "--seed=9",
        ])
        .unwrap();
        o.validate().unwrap();
        assert_eq!(o.budget, Some(256 << 20));
        assert_eq!(o.flush_policy, FlushPolicyChoice::PerMemtable);
        assert_eq!(o.flush_bandwidth, Some(32 << 20));
        assert_eq!(o.sstable_bytes_per_sync, 0);
        assert_eq!(o.data_dir.len(), 2);
        assert_eq!(
            o.ratio,
            Ratio {
                writes: 3,
                reads: 1
            }
        );
        let w = o.workload().unwrap();
        assert_eq!(w.partitions, 10_000);
        assert_eq!(w.distribution, Distribution::Gaussian);
        assert_eq!((w.rows_per_partition, w.row_size, w.tables), (64, 1024, 3));
        assert_eq!(
            o.stop_condition().unwrap(),
            StopCondition::Duration(Duration::from_secs(120))
        );
    }

    #[test]
    fn devices_parse_and_place_directories() {
        let o = parse(&[
            "--device=data=100MiB",
            "--device",
            "flash = 50MiB",
            "--device=log=1GiB",
            "--data-dir-device=data",
            "--flush-dir-device=flash",
            "--commitlog-device=log",
            "--columns=50",
        ])
        .unwrap();
        o.validate().unwrap();
        assert_eq!(
            o.device_args(),
            vec![
                DeviceArg {
                    name: "data".to_owned(),
                    bandwidth: 100 << 20
                },
                DeviceArg {
                    name: "flash".to_owned(),
                    bandwidth: 50 << 20
                },
                DeviceArg {
                    name: "log".to_owned(),
                    bandwidth: 1 << 30
                },
            ]
        );
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(o.placements(), (some("data"), some("flash"), some("log")));
        assert_eq!(o.workload().unwrap().columns, 50);
        // One device and no placement: everything is on it.
        let o = parse(&["--device=disk=10MiB"]).unwrap();
        o.validate().unwrap();
        assert_eq!(o.placements(), (some("disk"), some("disk"), some("disk")));
        // --flush-bandwidth is a `flush` device under the flush directories.
        let o = parse(&[
            "--flush-bandwidth=8MiB",
            "--device=disk=1GiB",
            "--data-dir-device=disk",
        ])
        .unwrap();
        o.validate().unwrap();
        assert_eq!(o.placements(), (some("disk"), some("flush"), None));
        assert_eq!(o.device_args()[1].name, FLUSH_BANDWIDTH_DEVICE);
        let o = parse(&["--flush-bandwidth=8MiB"]).unwrap();
        assert_eq!(o.placements(), (None, some("flush"), None));
        assert!(parse(&["--flush-bandwidth=8MiB", "--flush-dir-device=x"]).is_err());
    }

    #[test]
    fn bad_devices_name_the_option_and_what_it_needs() {
        for (value, part) in [
            ("disk", "NAME=BANDWIDTH"),
            ("=10MiB", "1 to 64 bytes"),
            ("disk=fast", "a bandwidth after the ="),
            ("disk=0", "at least 1 byte per second"),
        ] {
            let e = DeviceArg::parse(value).unwrap_err().to_string();
            assert!(e.contains("--device") && e.contains(part), "{e}");
            assert!(parse(&[&format!("--device={value}")]).is_err());
        }
        let cases: &[(&[&str], &str, &str)] = &[
            (
                &["--device=a=1MiB", "--device=a=2MiB"],
                "--device",
                "defined once",
            ),
            (
                &["--device=flush=1MiB", "--flush-bandwidth=2MiB"],
                "--device",
                "defined once",
            ),
            (
                &["--device=a=1MiB", "--data-dir-device=b"],
                "--data-dir-device",
                "one of the devices defined with --device: a",
            ),
            (
                &["--flush-dir-device=b"],
                "--flush-dir-device",
                "there is none",
            ),
            (
                &["--device=a=1MiB", "--device=b=1MiB"],
                "--device",
                "to place",
            ),
            (&["--columns=0"], "--columns", "1 to 1024"),
            (&["--columns=2000"], "--columns", "1 to 1024"),
            (
                &["--partition-size=16", "--columns=20"],
                "--columns",
                "at most the row size (16 bytes)",
            ),
        ];
        for (args, option, part) in cases {
            let e = parse(args).unwrap().validate().unwrap_err().to_string();
            assert!(e.contains(option) && e.contains(part), "{args:?}: {e}");
        }
    }

    #[test]
    fn the_machine_budget_is_an_eighth_of_memory_within_bounds() {
        let meminfo = "MemTotal:       25165824 kB\nMemFree:         1000 kB\n";
        assert_eq!(mem_total(meminfo), Some(24 << 30));
        assert_eq!(mem_total("MemTotal: 12 MB\n"), None);
        assert_eq!(mem_total("nothing"), None);
        assert_eq!(budget_for_memory(Some(24 << 30)), MAX_MACHINE_BUDGET);
        assert_eq!(budget_for_memory(Some(2 << 30)), 256 << 20);
        assert_eq!(budget_for_memory(Some(100 << 20)), MIN_MACHINE_BUDGET);
        assert_eq!(budget_for_memory(None), replica::DEFAULT_BUDGET as u64);
        let m = machine_budget();
        assert!(
            (MIN_MACHINE_BUDGET..=MAX_MACHINE_BUDGET).contains(&m),
            "{m}"
        );
        let o = parse(&["--budget=8MiB"]).unwrap();
        assert_eq!(o.budget_or_machine(), 8 << 20);
    }

    #[test]
    fn names_match_the_command_line() {
        for m in Mode::value_variants() {
            assert_eq!(m.to_possible_value().unwrap().get_name(), m.name());
        }
        for d in Distribution::value_variants() {
            assert_eq!(d.to_possible_value().unwrap().get_name(), d.name());
        }
    }

    #[test]
    fn a_repeated_option_takes_its_last_value() {
        let o = parse(&["--threads=3", "--threads=5"]).unwrap();
        assert_eq!(o.threads, 5);
    }

    #[test]
    fn ops_and_duration_conflict() {
        assert!(parse(&["--ops=10", "--duration=1s"]).is_err());
        let o = parse(&["--ops=1k"]).unwrap();
        assert_eq!(o.stop_condition().unwrap(), StopCondition::Operations(1000));
    }

    #[test]
    fn unparsable_values_are_refused_by_the_parser() {
        let e = parse(&["--partition-size=12 furlongs"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--partition-size"), "{e}");
        assert!(parse(&["--duration=soon"]).is_err());
        assert!(parse(&["--ratio=2"]).is_err());
        assert!(parse(&["--ratio=0:0"]).is_err());
        assert!(parse(&["--distribution=zipf"]).is_err());
        assert!(parse(&["--flush-policy=never"]).is_err());
        assert!(parse(&["delete"]).is_err());
        let e = parse(&["--direct-io=maybe"]).unwrap_err().to_string();
        assert!(e.contains("--direct-io") && e.contains("on or off"), "{e}");
        assert!(!parse(&["--direct-io=off"]).unwrap().direct_io);
        let e = parse(&["--periodic-ack=sometimes"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--periodic-ack") && e.contains("buffered or written"),
            "{e}"
        );
        assert_eq!(
            parse(&["--periodic-ack", "written"]).unwrap().periodic_ack,
            replica::PeriodicAck::Written
        );
        assert_eq!(
            parse(&[]).unwrap().periodic_ack,
            replica::PeriodicAck::Buffered
        );
        let e = parse(&["--commitlog-direct-io=sometimes"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--commitlog-direct-io") && e.contains("auto, always or never"),
            "{e}"
        );
        assert_eq!(
            parse(&["--commitlog-direct-io", "always"])
                .unwrap()
                .commitlog_direct_io,
            replica::DirectIo::Always
        );
        assert_eq!(
            parse(&[]).unwrap().commitlog_direct_io,
            replica::DirectIo::Auto
        );
        assert!(parse(&[]).unwrap().direct_io);
        let e = parse(&["--prefault=later"]).unwrap_err().to_string();
        assert!(e.contains("--prefault") && e.contains("on or off"), "{e}");
        assert!(!parse(&["--prefault=off"]).unwrap().prefault);
        assert!(parse(&[]).unwrap().prefault);
    }

    #[test]
    fn out_of_range_values_name_the_option_and_the_limit() {
        let cases: &[(&[&str], &str)] = &[
            (&["--threads=0"], "--threads"),
            (&["--threads=10001"], "--threads"),
            (&["--tables=0"], "--tables"),
            (&["--tables=5", "--partitions=4"], "--partitions"),
            (&["--partition-size=0"], "--partition-size"),
            (&["--partition-size=2GiB"], "--partition-size"),
            (&["--partition-size=1KiB", "--row-size=2KiB"], "--row-size"),
            (&["--partition-size=1GiB", "--row-size=32MiB"], "--row-size"),
            (&["--row-size=0"], "--row-size"),
            (&["--ops=0"], "--ops"),
            (&["--duration=0s"], "--duration"),
            (&["--soft-limit-ratio=0.6"], "soft-limit ratio"),
            (&["--soft-limit-ratio=0"], "soft-limit ratio"),
            (&["--flush-bandwidth=0"], "--flush-bandwidth"),
            (
                &["--sstable-bytes-per-sync=100"],
                "--sstable-bytes-per-sync",
            ),
            (&["--budget=1000"], "--budget"),
        ];
        for (args, name) in cases {
            let e = parse(args).unwrap().validate().unwrap_err().to_string();
            assert!(e.contains(name), "{args:?}: {e}");
        }
    }
}
