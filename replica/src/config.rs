//! [`DatabaseConfig`]: where a database keeps its files, how much dirty
//! memory its memtables may hold, how it flushes, and how fast.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use commitlog::{CorruptionPolicy, DirectIo, PeriodicAck};

use crate::error::Error;

/// The smallest dirty-memory budget a database accepts, for user and
/// system tables alike: the hard limit (half the budget) must leave room
/// for a memtable to hold a few segments while another one flushes. (The
/// dirty-memory manager alone accepts far less, `dirty_memory::MIN_BUDGET`:
/// enough for its limits to be non-zero.)
pub const MIN_DATABASE_BUDGET: usize = 1 << 20;

/// The default dirty-memory budget of user tables.
pub const DEFAULT_BUDGET: usize = 256 << 20;

/// The default budget of system tables: ScyllaDB's 10 MiB, separate from
/// the user budget so system writes never queue behind user writes.
pub const DEFAULT_SYSTEM_BUDGET: usize = 10 << 20;

/// The default soft limit as a fraction of the budget (ScyllaDB's "flush
/// when a quarter of the budget is dirty"): the dirty-memory manager's.
pub use dirty_memory::DEFAULT_SOFT_LIMIT_RATIO;

/// The default [`DatabaseConfig::write_timeout`]: how long a write may wait
/// for dirty memory before it fails.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// The default commit log interval: Cassandra's and ScyllaDB's periodic
/// sync of every 10 seconds.
pub const DEFAULT_COMMITLOG_SYNC_PERIOD: Duration = Duration::from_secs(10);

/// The smallest explicit [`CacheSize::Bytes`]: a cache of less would
/// hold a handful of partitions and evict on nearly every population.
pub const MIN_CACHE_SIZE: usize = 1 << 20;

/// How much memory the tables' row caches may hold together (one share
/// for every table's cache: the caches are in one tracker, with one LRU
/// list, and give memory back to the memtables whenever the pool runs
/// dry).
///
/// The caches live in the memtables' memory pool, outside the dirty-memory
/// budgets. The pool is sized `max(2 * budgets, 64 MiB)` without a cache
/// of a given size, and at least `budgets + size` with one, so the caches'
/// own budget leaves the dirty budgets free and logalloc's eviction is the
/// backstop, not the normal path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CacheSize {
    /// No row cache: reads that miss the memtables go to the sstables.
    Off,
    /// The default: what the pool holds beyond the dirty budgets (the
    /// pool's limit minus the user and system budgets).
    #[default]
    Auto,
    /// This many bytes, at least [`MIN_CACHE_SIZE`]; the pool grows to
    /// hold it beside the dirty budgets.
    Bytes(usize),
}

impl CacheSize {
    /// The pool limit and the cache share of all the tables' caches
    /// together (`None`: no cache) for dirty-memory budgets summing to
    /// `budgets`.
    pub fn pool_and_cache(self, budgets: usize) -> (usize, Option<usize>) {
        let base = budgets.saturating_mul(2).max(64 << 20);
        match self {
            CacheSize::Off => (base, None),
            CacheSize::Auto => (base, Some(base - budgets)),
            CacheSize::Bytes(n) => (base.max(budgets.saturating_add(n)), Some(n)),
        }
    }
}

/// Whether writes go through a commit log, and when it makes them durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommitLogMode {
    /// No commit log: writes not yet flushed are lost if the process
    /// crashes.
    Off,
    /// A write is acknowledged once it is in the log's buffer (or, with
    /// [`DatabaseConfig::commitlog_periodic_ack`] `Written`, once the log
    /// wrote it to its segment file); the log writes buffers out at once
    /// and fdatasyncs at most once per interval (a machine crash loses
    /// about an interval of writes, a process crash the last few
    /// milliseconds', or with `Written` no acknowledged write).
    Periodic(Duration),
    /// A write is acknowledged once an fdatasync covered it; concurrent
    /// writes share one (group commit), started no sooner than the window
    /// after the previous one.
    Batch(Duration),
}

impl Default for CommitLogMode {
    fn default() -> Self {
        CommitLogMode::Periodic(DEFAULT_COMMITLOG_SYNC_PERIOD)
    }
}

impl CommitLogMode {
    /// Parses the command line's spelling: `off`, `periodic` (10 s),
    /// `periodic:<duration>`, `batch` (no window) or `batch:<duration>`,
    /// durations as [`units::parse_duration`](crate::units::parse_duration)
    /// reads them.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming `--commitlog`.
    pub fn parse(value: &str) -> Result<Self, Error> {
        let invalid = || Error::InvalidOption {
            name: "--commitlog",
            value: value.to_owned(),
            expected: "off, periodic, periodic:<duration>, batch or batch:<duration>".to_owned(),
        };
        let (mode, arg) = match value.split_once(':') {
            Some((m, a)) => (m, Some(a)),
            None => (value, None),
        };
        let duration = |default| match arg {
            None => Ok(default),
            Some(a) => crate::units::parse_duration("--commitlog", a).map_err(|_| invalid()),
        };
        match mode {
            "off" if arg.is_none() => Ok(CommitLogMode::Off),
            "periodic" => Ok(CommitLogMode::Periodic(duration(
                DEFAULT_COMMITLOG_SYNC_PERIOD,
            )?)),
            "batch" => Ok(CommitLogMode::Batch(duration(Duration::ZERO)?)),
            _ => Err(invalid()),
        }
    }

    /// The name the command line spells it with (without the duration).
    pub fn name(self) -> &'static str {
        match self {
            CommitLogMode::Off => "off",
            CommitLogMode::Periodic(_) => "periodic",
            CommitLogMode::Batch(_) => "batch",
        }
    }
}

/// Which memtables are flushed, and when: the dirty-memory manager's own
/// policy type ([`FlushPolicy::LargestAtSoftLimit`], the default, or
/// [`FlushPolicy::PerMemtableLimit`] with its fraction and concurrency;
/// [`FlushPolicy::per_memtable_default`] gives ScyllaDB's pre-2016
/// numbers). [`DatabaseConfig::validate`] checks its parameters.
pub use dirty_memory::FlushPolicy;

/// The most flushes [`FlushPolicy::PerMemtableLimit`] may let write data at
/// once: each is a flush scheduler data worker, a thread of its own.
pub const MAX_CONCURRENT_FLUSHES: usize = 64;

/// A modelled device of a [`DeviceModel`]: a name and a bandwidth.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceSpec {
    /// The device's name (1 to [`device::MAX_NAME_LEN`] bytes, unique in
    /// the model).
    pub name: String,
    /// Bytes per second, reads and writes together; at least 1.
    pub bandwidth: u64,
}

/// Which directory of a [`DeviceModel`] is on which device.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Placement {
    /// A data directory, a flush directory, or the commit log's
    /// directory ([`DatabaseConfig::commitlog_dir`]).
    pub dir: PathBuf,
    /// The name of the device it is on.
    pub device: String,
}

/// The database's model of devices ([`DatabaseConfig::devices`]): named
/// bandwidths, and which of the database's directories is on which.
///
/// Every byte the database writes or reads in a directory (flushes'
/// sstable writes, compactions' reads and writes, sstable reads, the
/// commit log's writes and replay) is charged to the device of the
/// closest placed directory that holds it, and waits for that device's
/// bandwidth (a token bucket shared by everything on the device; see the
/// `device` crate). The commit log lives inside the first data directory,
/// so it is on that directory's device unless placed itself. A directory
/// not placed, and not inside a placed one, is a real device: nothing
/// charged. The empty model (the default) throttles nothing.
///
/// ```
/// use replica::{DatabaseConfig, DeviceModel};
///
/// let mut config = DatabaseConfig::new("/d");
/// config.flush_dirs = vec!["/f".into()];
/// let mut model = DeviceModel::default();
/// model
///     .add_device("data", 100 << 20)
///     .add_device("flash", 100 << 20)
///     .add_device("log", 50 << 20)
///     .place("/d", "data")
///     .place("/f", "flash")
///     .place(config.commitlog_dir(), "log");
/// config.devices = model;
/// config.validate()?;
/// # Ok::<(), replica::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DeviceModel {
    /// The devices.
    pub devices: Vec<DeviceSpec>,
    /// Which directory is on which device.
    pub placements: Vec<Placement>,
}

impl DeviceModel {
    /// Adds a device of `bandwidth` bytes per second.
    pub fn add_device(&mut self, name: impl Into<String>, bandwidth: u64) -> &mut Self {
        self.devices.push(DeviceSpec {
            name: name.into(),
            bandwidth,
        });
        self
    }

    /// Puts `dir` on the device named `device`.
    pub fn place(&mut self, dir: impl Into<PathBuf>, device: impl Into<String>) -> &mut Self {
        self.placements.push(Placement {
            dir: dir.into(),
            device: device.into(),
        });
        self
    }

    /// True when there is no device: nothing is throttled.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty() && self.placements.is_empty()
    }

    /// The device `dir` is placed on, by name, if it is placed.
    pub fn device_of(&self, dir: &Path) -> Option<&str> {
        self.placements
            .iter()
            .find(|p| p.dir == dir)
            .map(|p| p.device.as_str())
    }

    /// Checks the model against the directories of the database.
    fn validate(&self, dirs: &[&Path]) -> Result<(), Error> {
        let invalid = |value: String, expected: String| Error::InvalidOption {
            name: "devices",
            value,
            expected,
        };
        let mut names = BTreeSet::new();
        for d in &self.devices {
            if d.name.is_empty() || d.name.len() > device::MAX_NAME_LEN {
                return Err(invalid(
                    format!("device name [{}]", d.name),
                    format!("a name of 1 to {} bytes", device::MAX_NAME_LEN),
                ));
            }
            if d.bandwidth == 0 {
                return Err(invalid(
                    format!("device {}=0", d.name),
                    "a bandwidth of at least 1 byte per second".to_owned(),
                ));
            }
            if !names.insert(d.name.as_str()) {
                return Err(invalid(
                    format!("device {} defined twice", d.name),
                    "each device named once".to_owned(),
                ));
            }
        }
        let mut placed: Vec<(&Path, &str)> = Vec::new();
        for p in &self.placements {
            if !names.contains(p.device.as_str()) {
                let known: Vec<&str> = names.iter().copied().collect();
                return Err(invalid(
                    format!("{} on unknown device {}", p.dir.display(), p.device),
                    if known.is_empty() {
                        "a device defined in the model (there is none)".to_owned()
                    } else {
                        format!("one of the devices defined: {}", known.join(", "))
                    },
                ));
            }
            if !dirs.contains(&p.dir.as_path()) {
                let listed: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
                return Err(invalid(
                    format!("{} on device {}", p.dir.display(), p.device),
                    format!(
                        "a data, flush or commit-log directory of the database: {}",
                        listed.join(", ")
                    ),
                ));
            }
            if let Some(&(_, other)) = placed.iter().find(|(d, _)| *d == p.dir.as_path()) {
                return Err(invalid(
                    format!("{} on devices {other} and {}", p.dir.display(), p.device),
                    "each directory on one device".to_owned(),
                ));
            }
            placed.push((p.dir.as_path(), p.device.as_str()));
        }
        Ok(())
    }
}

/// Checks a soft-limit ratio as the dirty-memory manager does
/// (`dirty_memory::limits_for_budget`): a fraction of the budget in
/// `(0, dirty_memory::MAX_SOFT_LIMIT_RATIO]`, since the soft limit must lie
/// below the hard limit (half the budget); the error names the option.
///
/// # Errors
/// [`Error::InvalidOption`] for a ratio outside `(0, 0.5]` (or NaN).
pub fn check_soft_limit_ratio(ratio: f64) -> Result<(), Error> {
    if dirty_memory::limits_for_budget(MIN_DATABASE_BUDGET, ratio).is_ok() {
        Ok(())
    } else {
        Err(Error::InvalidOption {
            name: "soft-limit ratio",
            value: ratio.to_string(),
            expected: "a fraction of the budget in (0, 0.5]: the soft limit must be below \
                       the hard limit, half the budget"
                .to_owned(),
        })
    }
}

/// How a database is opened.
///
/// Build one with [`DatabaseConfig::new`] and change the fields that
/// matter; [`validate`](Self::validate) checks them all.
///
/// ```
/// use replica::{DatabaseConfig, FlushPolicy};
///
/// let mut config = DatabaseConfig::new("/var/lib/replica");
/// config.dirty_memory_budget = 64 << 20;
/// config.flush_policy = FlushPolicy::per_memtable_default();
/// config.validate()?;
/// // Flushes go to the data directories unless told otherwise.
/// assert_eq!(config.effective_flush_dirs(), config.data_dirs.as_slice());
/// # Ok::<(), replica::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DatabaseConfig {
    /// Directories holding the tables' sstables and the catalog (the first
    /// one); at least one. Each table has a subdirectory in each.
    pub data_dirs: Vec<PathBuf>,
    /// Directories flushes write to (their own devices, so flushes are
    /// isolated from other I/O). Empty means the data directories.
    pub flush_dirs: Vec<PathBuf>,
    /// Bytes of dirty memory user tables' memtables may hold: the real hard
    /// limit; writers wait when unspooled memory reaches half of it.
    pub dirty_memory_budget: usize,
    /// The soft limit as a fraction of the budget, in `(0, 0.5]`.
    pub soft_limit_ratio: f64,
    /// Which memtables are flushed, and when (default
    /// [`FlushPolicy::LargestAtSoftLimit`]); a per-memtable policy flushes
    /// at most [`MAX_CONCURRENT_FLUSHES`] at once.
    pub flush_policy: FlushPolicy,
    /// The separate, small dirty-memory budget of system tables.
    pub system_dirty_memory_budget: usize,
    /// Options of every sstable a flush or compaction writes. The sstable
    /// crate checks them when a writer is created. Their `device` is set
    /// by the database from [`devices`](Self::devices), per directory, and
    /// their `fs` from [`fs`](Self::fs).
    pub sstable_writer_options: sstable::WriterOptions,
    /// The file system every directory of the database is on (default the
    /// real one, [`fs::RealFs`]): the catalog, the table markers, the lock
    /// files, the sstables, compaction's transaction and run files and
    /// the commit log are all created, written, synced, renamed, listed
    /// and removed through it. Tests put a [`fs::FaultFs`] (fail chosen
    /// calls) or a [`fs::PowerLossFs`] (a machine crash) here.
    pub fs: fs::FsHandle,
    /// The model of devices: which directory is on which modelled device,
    /// and each device's bandwidth, which every read and write there is
    /// charged to. Empty (the default): nothing is throttled. (It replaces
    /// the flush bandwidth limit: a flush limit is a device holding the
    /// flush directories.)
    pub devices: DeviceModel,
    /// How long a write may wait for dirty memory (at the hard limit)
    /// before it fails with an error naming its table; default
    /// [`DEFAULT_WRITE_TIMEOUT`]. Must not be zero.
    pub write_timeout: Duration,
    /// The commit log: off, periodic (the default, every 10 s) or batch.
    /// It lives in the first data directory.
    pub commitlog: CommitLogMode,
    /// Size of each commit log segment file (default 32 MiB: a mutation
    /// of `mutation::limits::MAX_MUTATION_SIZE` needs at least that).
    pub commitlog_segment_size: u32,
    /// The most bytes of segments the commit log keeps (default 8 GiB).
    /// At the limit it asks the database to flush the tables holding the
    /// oldest segment, and writers wait until segments are retired.
    pub commitlog_size_limit: u64,
    /// What [`Database::open`](crate::Database::open) does when replaying
    /// the commit log meets damage other than a torn tail where one can
    /// legitimately be: [`CorruptionPolicy::Stop`] (the default: open fails
    /// with an error naming the segment, offset and what was wrong, and
    /// nothing on disk changes, so an operator can copy the files away) or
    /// [`CorruptionPolicy::Skip`] (damaged entries are skipped, reported in
    /// [`Database::replay_report`](crate::Database::replay_report), and the
    /// damaged segment is kept aside; a dropped table's rows never return).
    pub commitlog_on_corruption: CorruptionPolicy,
    /// When the commit log writes its segments with direct I/O
    /// (`commitlog::Config::direct_io`, default [`DirectIo::Auto`]: in batch
    /// mode only, where the file system allows it; in periodic mode each
    /// acknowledged write would wait for the device instead of a copy into
    /// the page cache). The sstables' Data files have their own switch,
    /// [`sstable_writer_options`](Self::sstable_writer_options)`.direct_io`.
    pub commitlog_direct_io: DirectIo,
    /// With a periodic commit log: when a write is acknowledged
    /// (`commitlog::Config::periodic_ack`). [`PeriodicAck::Buffered`] (the
    /// default): once in the log's buffer, which the log writes out at
    /// once, so a process crash loses the last few milliseconds of
    /// writes; [`PeriodicAck::Written`]: once written to the segment file,
    /// so a process crash loses no acknowledged write, at the price of a
    /// wait per write (0.53-0.60x the op rate for 64 writers of 1 KiB rows
    /// on 2 vCPUs; BENCHMARKS.md).
    pub commitlog_periodic_ack: PeriodicAck,
    /// Take the memtable pool's working memory (the user tables' dirty
    /// budget plus the cache's share) from the system at open and touch
    /// every page
    /// (`logalloc::PoolConfig::prefault`; default `false`), as ScyllaDB
    /// takes its memory at start: otherwise the first writes to each page
    /// fault it in while holding their memtable's lock, which under a write
    /// storm on a virtual machine made the first pass over the pool the
    /// slowest part of a run. Open then takes the time to touch it, and that
    /// memory is resident from the start. The rest of the pool (its
    /// headroom: without a cache the pool is twice the budgets) is taken
    /// only as writes reach it, the system tables' first: prefaulting the whole pool made a 256 MiB
    /// budget without a cache hold 512 MiB from the start.
    pub prefault_memory: bool,
    /// The row caches' memory, one share for every table's cache together
    /// (default [`CacheSize::Auto`]); a table can
    /// opt out with [`TableOptions::uncached`](crate::TableOptions::uncached).
    pub cache_size: CacheSize,
    /// Compaction of the tables' sstables: strategy (incremental by
    /// default), gc_grace, bandwidth limit, workers.
    pub compaction: crate::CompactionConfig,
}

impl DatabaseConfig {
    /// A configuration with one data directory and every default.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        DatabaseConfig {
            data_dirs: vec![data_dir.into()],
            flush_dirs: Vec::new(),
            dirty_memory_budget: DEFAULT_BUDGET,
            soft_limit_ratio: DEFAULT_SOFT_LIMIT_RATIO,
            flush_policy: FlushPolicy::default(),
            system_dirty_memory_budget: DEFAULT_SYSTEM_BUDGET,
            sstable_writer_options: sstable::WriterOptions::default(),
            fs: fs::FsHandle::real(),
            devices: DeviceModel::default(),
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            commitlog: CommitLogMode::default(),
            commitlog_segment_size: 32 << 20,
            commitlog_size_limit: 8 << 30,
            commitlog_on_corruption: CorruptionPolicy::Stop,
            commitlog_direct_io: DirectIo::Auto,
            commitlog_periodic_ack: PeriodicAck::Buffered,
            prefault_memory: false,
            cache_size: CacheSize::default(),
            compaction: crate::CompactionConfig::default(),
        }
    }

    /// The directories flushes write to: [`flush_dirs`](Self::flush_dirs),
    /// or the data directories when it is empty.
    pub fn effective_flush_dirs(&self) -> &[PathBuf] {
        if self.flush_dirs.is_empty() {
            &self.data_dirs
        } else {
            &self.flush_dirs
        }
    }

    /// The commit log's directory: [`COMMITLOG_DIR_NAME`] in the first
    /// data directory.
    ///
    /// [`COMMITLOG_DIR_NAME`]: crate::COMMITLOG_DIR_NAME
    pub fn commitlog_dir(&self) -> PathBuf {
        self.data_dirs
            .first()
            .map(|d| d.join(crate::database::COMMITLOG_DIR_NAME))
            .unwrap_or_default()
    }

    /// Every directory that holds sstables of the database: the data
    /// directories, then the flush directories not among them.
    pub fn all_dirs(&self) -> Vec<&Path> {
        let mut seen = BTreeSet::new();
        self.data_dirs
            .iter()
            .chain(&self.flush_dirs)
            .map(PathBuf::as_path)
            .filter(|d| seen.insert(*d))
            .collect()
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the first field out of range: no
    /// data directory, an empty or repeated directory, a budget below
    /// [`MIN_DATABASE_BUDGET`], a soft-limit ratio outside `(0, 0.5]`, a
    /// flush policy whose parameters dirty-memory refuses or that writes
    /// more than [`MAX_CONCURRENT_FLUSHES`] at once, a zero write timeout, a
    /// cache size below [`MIN_CACHE_SIZE`], or a bad device model (named
    /// `devices`: a device with a bad name, a zero bandwidth or defined
    /// twice, a directory placed on an unknown device, on two devices, or
    /// not one of the database's).
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |name, value: String, expected: String| Error::InvalidOption {
            name,
            value,
            expected,
        };
        if self.data_dirs.is_empty() {
            return Err(invalid(
                "data_dirs",
                "[]".to_owned(),
                "at least one data directory".to_owned(),
            ));
        }
        for (name, dirs) in [
            ("data_dirs", &self.data_dirs),
            ("flush_dirs", &self.flush_dirs),
        ] {
            let mut seen = BTreeSet::new();
            for d in dirs {
                if d.as_os_str().is_empty() {
                    return Err(invalid(name, String::new(), "non-empty paths".to_owned()));
                }
                if !seen.insert(d) {
                    return Err(invalid(
                        name,
                        d.display().to_string(),
                        "each directory listed once".to_owned(),
                    ));
                }
            }
        }
        for (name, budget) in [
            ("dirty_memory_budget", self.dirty_memory_budget),
            (
                "system_dirty_memory_budget",
                self.system_dirty_memory_budget,
            ),
        ] {
            if budget < MIN_DATABASE_BUDGET {
                return Err(invalid(
                    name,
                    budget.to_string(),
                    format!("at least {MIN_DATABASE_BUDGET} bytes"),
                ));
            }
        }
        check_soft_limit_ratio(self.soft_limit_ratio)?;
        let policy = |expected: String| {
            invalid("flush_policy", format!("{:?}", self.flush_policy), expected)
        };
        self.flush_policy
            .validate()
            .map_err(|e| policy(format!("parameters dirty-memory accepts ({e})")))?;
        if self.flush_policy.max_data_writers() > MAX_CONCURRENT_FLUSHES {
            return Err(policy(format!(
                "at most {MAX_CONCURRENT_FLUSHES} concurrent flushes"
            )));
        }
        let commitlog_dir = self.commitlog_dir();
        let mut dirs = self.all_dirs();
        if self.commitlog != CommitLogMode::Off {
            dirs.push(&commitlog_dir);
        }
        self.devices.validate(&dirs)?;
        if let CommitLogMode::Periodic(d) = self.commitlog
            && d.is_zero()
        {
            return Err(invalid(
                "commitlog",
                "periodic:0s".to_owned(),
                "a positive sync period".to_owned(),
            ));
        }
        if let CacheSize::Bytes(n) = self.cache_size
            && n < MIN_CACHE_SIZE
        {
            return Err(invalid(
                "cache_size",
                n.to_string(),
                format!("at least {MIN_CACHE_SIZE} bytes, or CacheSize::Off for no cache"),
            ));
        }
        if self.write_timeout.is_zero() {
            return Err(invalid(
                "write_timeout",
                "0s".to_owned(),
                "a positive duration".to_owned(),
            ));
        }
        self.check_pool_fits(machine_memory())?;
        self.compaction.validate()
    }

    /// The memory pool's size (what [`Database::open`](crate::Database::open)
    /// asks logalloc for) and its cache share.
    pub fn memory_pool(&self) -> (usize, Option<usize>) {
        let budgets = self
            .dirty_memory_budget
            .saturating_add(self.system_dirty_memory_budget);
        self.cache_size.pool_and_cache(budgets)
    }

    /// Refuses a pool larger than `machine` (bytes, and where the figure
    /// comes from): it would be an out-of-memory kill, not an error.
    fn check_pool_fits(&self, machine: Option<(u64, &'static str)>) -> Result<(), Error> {
        let (pool, cache) = self.memory_pool();
        let Some((limit, source)) = machine.filter(|&(m, _)| pool as u64 > m) else {
            return Ok(());
        };
        let mib = |b: usize| b >> 20;
        let (dirty, system) = (self.dirty_memory_budget, self.system_dirty_memory_budget);
        let cache = cache.unwrap_or(0);
        let headroom = pool.saturating_sub(dirty + system + cache);
        Err(Error::InvalidOption {
            name: "dirty_memory_budget",
            value: dirty.to_string(),
            expected: format!(
                "a memory pool within the {} MiB of {source}: this one is {} MiB = dirty \
                 budget {} MiB + system tables {} MiB + row cache share {} MiB + headroom {} \
                 MiB; lower the budget or the cache size",
                limit >> 20,
                mib(pool),
                mib(dirty),
                mib(system),
                mib(cache),
                mib(headroom)
            ),
        })
    }
}

/// The memory this process may use: the machine's (`MemTotal`), or its
/// cgroup's limit (v2 `memory.max`, v1 `memory.limit_in_bytes`) if lower,
/// with where the figure comes from; `None` where neither can be read.
pub(crate) fn machine_memory() -> Option<(u64, &'static str)> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let total = read("/proc/meminfo").and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some((kib.saturating_mul(1024), "the machine's memory"))
    });
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .into_iter()
    .find_map(|p| read(p)?.trim().parse::<u64>().ok())
    .map(|b| (b, "this process's cgroup limit"));
    match (total, cgroup) {
        (Some(t), Some(c)) if c.0 < t.0 => Some(c),
        (t, c) => t.or(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_larger_than_the_machine_is_refused_naming_its_parts() {
        let mut c = DatabaseConfig::new("/d");
        c.dirty_memory_budget = 64 << 30;
        let machine = Some((24u64 << 30, "the machine's memory"));
        let e = c.check_pool_fits(machine).unwrap_err().to_string();
        for part in [
            "dirty_memory_budget",
            "within the 24576 MiB of the machine's memory",
            "this one is 131092 MiB = dirty budget 65536 MiB + system tables 10 MiB",
            "row cache share 65546 MiB",
        ] {
            assert!(e.contains(part), "{part:?} missing from: {e}");
        }
        c.dirty_memory_budget = 8 << 30;
        c.check_pool_fits(machine).unwrap();
        c.check_pool_fits(None).unwrap();
    }

    #[test]
    fn this_machine_has_a_figure() {
        let (bytes, _) = machine_memory().expect("Linux gives MemTotal");
        assert!(bytes >= 1 << 30, "{bytes}");
        DatabaseConfig::new("/d").validate().unwrap();
    }
}
