//! The `replica-stress` program without its database: one run, or two
//! back to back for `--compare`, with the progress lines, the summaries,
//! the comparison, `--json` and `--hdr-log`. The program's `main` will
//! parse the options and call [`execute`] with a factory that opens a
//! `Database` for each flush policy.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::Error;
use crate::graph::GraphRecorder;
use crate::hdr_log::HdrLog;
use crate::options::{FlushPolicyChoice, StopCondition, StressOptions, check_disk_space};
use crate::progress::ProgressPrinter;
use crate::rate_table::RateTable;
use crate::runner::{Observers, PopulateReport, RunConfig, populate, run};
use crate::summary::{Summary, compare, compare_json, write_json};
use crate::target::Target;

/// Opens and closes the targets of a program's runs.
pub trait TargetFactory {
    /// What the runs drive.
    type Target: Target;

    /// Opens a target running `policy`, with the tables
    /// [`table_name`](crate::table_name)`(0..tables)` created, for
    /// the run `config`.
    ///
    /// # Errors
    /// Whatever stops the target from opening; the program stops.
    fn open(
        &mut self,
        policy: FlushPolicyChoice,
        config: &RunConfig,
    ) -> Result<Self::Target, Error>;

    /// What opening a target for `policy` waits for, if that takes long
    /// enough to say (a database taking its memory at start): the program
    /// prints it before [`open`](Self::open), so the start is not a
    /// silent stretch. `None` (the default): nothing to say.
    fn opening(&self, policy: FlushPolicyChoice) -> Option<String> {
        let _ = policy;
        None
    }

    /// Closes `target` after its run (a database flushes and stops here).
    ///
    /// # Errors
    /// Whatever fails while closing; the program stops.
    fn close(&mut self, target: Self::Target) -> Result<(), Error>;
}

/// The flush policies a program runs, in order: the chosen one, or for
/// `--compare` the per-memtable baseline, then the soft-limit policy (so
/// ratios read soft-limit / baseline).
pub fn policies(options: &StressOptions) -> Vec<FlushPolicyChoice> {
    if options.compare {
        vec![FlushPolicyChoice::PerMemtable, FlushPolicyChoice::SoftLimit]
    } else {
        vec![options.flush_policy]
    }
}

/// The `--hdr-log` file of a run: the given path, or with `--compare` the
/// path with the policy before its extension (`run.hlog` becomes
/// `run.soft-limit.hlog`).
pub fn hdr_log_path(path: &Path, policy: FlushPolicyChoice, compare: bool) -> PathBuf {
    if !compare {
        return path.to_path_buf();
    }
    let mut name = OsString::from(path.file_stem().unwrap_or_default());
    name.push(".");
    name.push(policy.name());
    if let Some(ext) = path.extension() {
        name.push(".");
        name.push(ext);
    }
    path.with_file_name(name)
}

fn describe(options: &StressOptions, config: &RunConfig, policy: FlushPolicyChoice) -> String {
    let w = &config.workload;
    let stop = match config.stop {
        StopCondition::Duration(d) => format!("for {d:?}"),
        StopCondition::Operations(n) => format!("for {n} operations"),
    };
    let clients = match config.async_in_flight {
        0 => format!("{} threads", config.threads),
        n => format!("{} threads x {n} async writes in flight", config.threads),
    };
    let columns = match w.columns {
        1 => String::new(),
        n => format!(" ({n} columns)"),
    };
    format!(
        "{} with {clients} {stop}: {} partitions ({}) of {} x {} B rows{columns} over {} \
         table(s){}, flush policy {}, commit log {}{}, compaction {}, direct I/O {}, memory prefaulted {}, {}, seed {}",
        options.mode.name(),
        w.partitions,
        w.distribution.name(),
        w.rows_per_partition,
        w.row_size,
        w.tables,
        if options.populates() {
            ", written first (populate phase)"
        } else {
            ""
        },
        policy.name(),
        options.commitlog.name(),
        match (options.commitlog, options.periodic_ack) {
            (replica::CommitLogMode::Periodic(_), replica::PeriodicAck::Written) => {
                " (acknowledged once written)"
            }
            _ => "",
        },
        crate::strategy_name(&options.compaction),
        match (options.direct_io, options.commitlog_direct_io) {
            (false, _) => "off",
            (true, replica::DirectIo::Always) => "on (commit log always)",
            (true, replica::DirectIo::Never) => "on (commit log never)",
            (true, _) => "on (commit log in batch mode)",
        },
        if options.prefault { "yes" } else { "no" },
        describe_devices(options),
        w.seed,
    )
}

/// The device model of the options in words: each device's bandwidth and
/// which directories are on it.
pub fn describe_devices(options: &StressOptions) -> String {
    let devices = options.device_args();
    if devices.is_empty() {
        return "no device model".to_owned();
    }
    let list: Vec<String> = devices
        .iter()
        .map(|d| format!("{}={}/s", d.name, crate::units::format_bytes(d.bandwidth)))
        .collect();
    let (data, flush, log) = options.placements();
    let on = |d: Option<String>| d.unwrap_or_else(|| "no modelled device".to_owned());
    // Unplaced, the flush directories are the data directories (or a
    // directory of their own), and the commit log is in the first data
    // directory.
    let flush = flush.or_else(|| data.clone());
    let log = log.or_else(|| data.clone());
    format!(
        "devices {} (data dirs on {}, flush dirs on {}, commit log on {})",
        list.join(", "),
        on(data),
        on(flush),
        on(log),
    )
}

/// The device model of the options as JSON, for the summary file.
fn devices_json(options: &StressOptions) -> serde_json::Value {
    let (data, flush, log) = options.placements();
    let flush = flush.or_else(|| data.clone());
    let log = log.or_else(|| data.clone());
    serde_json::json!({
        "devices": options
            .device_args()
            .iter()
            .map(|d| serde_json::json!({ "name": d.name, "bandwidth_bytes_per_s": d.bandwidth }))
            .collect::<Vec<_>>(),
        "data_dirs": data,
        "flush_dirs": flush,
        "commitlog": log,
    })
}

/// Refuses a run whose data cannot fit the target's data directory (see
/// [`StressOptions::partitions_on_disk`] and [`check_disk_space`]).
fn check_space<T: Target>(options: &StressOptions, target: &T) -> Result<(), Error> {
    let Some(partitions) = options.partitions_on_disk() else {
        return Ok(());
    };
    let Some((dir, available)) = target.free_space() else {
        return Ok(());
    };
    check_disk_space(&dir, partitions, options.partition_size, available)
}

/// The populate phase's line of the program's output.
pub(crate) fn describe_populate(p: &PopulateReport) -> String {
    let seconds = p.elapsed.as_secs_f64();
    let rate = if seconds > 0.0 {
        p.partitions as f64 / seconds
    } else {
        0.0
    };
    let s = &p.stats;
    let mut line = format!(
        "Populated {} partitions ({:.1} MiB) in {seconds:.1} s ({rate:.0} partitions/s), \
         flushed: {} flushes ({})",
        p.partitions,
        p.bytes as f64 / f64::from(1 << 20),
        s.flushes,
        crate::units::format_bytes(s.flushed_bytes),
    );
    if s.commitlog_bytes > 0 {
        line.push_str(&format!(
            ", commit log {}",
            crate::units::format_bytes(s.commitlog_bytes)
        ));
    }
    if s.commitlog_room_waits.any() {
        line.push_str(&format!(
            ", {:.1} s waited for log room",
            s.commitlog_room_waits.time.as_secs_f64()
        ));
    }
    line.push_str(&format!(
        ", writers blocked {:.1} s; none of this phase is in the figures below",
        s.writers_blocked.as_secs_f64()
    ));
    line
}

fn output(e: std::io::Error) -> Error {
    Error::Report {
        what: "program output",
        detail: e.to_string(),
    }
}

/// The `--hdr-log` of the run of `policy`: the given file (per policy with
/// `--compare`), or `<policy>.hlog` in `--results-dir`.
fn hdr_file(options: &StressOptions, policy: FlushPolicyChoice) -> Option<PathBuf> {
    match (&options.hdr_log, &options.results_dir) {
        (Some(path), _) => Some(hdr_log_path(path, policy, options.compare)),
        (None, Some(dir)) => Some(dir.join(format!("{}.hlog", policy.name()))),
        (None, None) => None,
    }
}

/// The JSON summary: `--json`, or `summary.json` in `--results-dir`.
fn json_file(options: &StressOptions) -> Option<PathBuf> {
    match (&options.json, &options.results_dir) {
        (Some(path), _) => Some(path.clone()),
        (None, Some(dir)) => Some(dir.join("summary.json")),
        (None, None) => None,
    }
}

/// Every file the program's reports will write.
fn output_files(options: &StressOptions) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = json_file(options).into_iter().collect();
    files.extend(options.graph.clone());
    for policy in policies(options) {
        files.extend(hdr_file(options, policy));
        if let Some(dir) = &options.results_dir {
            files.push(dir.join(format!("{}.ops.csv", policy.name())));
            files.push(dir.join(format!("{}.summary.txt", policy.name())));
        }
    }
    files
}

/// Checks that `path` can be opened for writing, leaving what was there
/// (a file it had to create for the check is removed again).
fn check_writable(path: &Path) -> Result<(), Error> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(crate::error::io_err("open for writing", path))?;
    if !existed {
        std::fs::remove_file(path).map_err(crate::error::io_err("remove", path))?;
    }
    Ok(())
}

/// Runs the program `options` describe against targets from `factory`,
/// printing to `out`; returns the summaries, in run order.
///
/// An interrupt ([`StressOptions::interrupt`]) stops the run under way at
/// its next interval: its summary, marked as stopped early, is printed
/// and written as usual, and no further run starts.
///
/// # Errors
/// [`Error::InvalidOption`] for bad options (before anything runs); the
/// factory's errors; report files that cannot be written (each checked
/// before the first run);
/// [`Error::Interrupted`] if an interrupt came before any run reported.
pub fn execute<F: TargetFactory>(
    options: &StressOptions,
    factory: &mut F,
    out: &mut dyn Write,
) -> Result<Vec<Summary>, Error> {
    options.validate()?;
    // The program owns its process: its scans follow `--direct-io`.
    sstable::set_direct_scans(options.direct_io);
    if let Some(dir) = &options.results_dir {
        std::fs::create_dir_all(dir).map_err(crate::error::io_err("create directory", dir))?;
    }
    // A report that cannot be written fails now, not after the run.
    for path in output_files(options) {
        check_writable(&path)?;
    }
    if let Some(path) = &options.graph {
        // An existing file must be a graph, to add the runs to.
        crate::graph::read_graph(path)?;
    }
    let mut graphs = Vec::new();
    let mut summaries = Vec::new();
    let mut populations: Vec<(String, PopulateReport)> = Vec::new();
    for policy in policies(options) {
        if options.interrupt.is_requested() {
            // A `--compare` interrupted in its first run stops there.
            break;
        }
        let config = RunConfig::from_options(options, policy.name())?;
        // Each run's memory peaks are its own, not an earlier run's.
        options.memory.reset_peaks();
        let description = describe(options, &config, policy);
        writeln!(out, "Running {description}").map_err(output)?;
        if let Some(what) = factory.opening(policy) {
            writeln!(out, "{what}")
                .and_then(|()| out.flush())
                .map_err(output)?;
        }
        let target = factory.open(policy, &config)?;
        let prepared = check_space(options, &target).and_then(|()| {
            if !options.populates() {
                let stats = target.stats();
                if options.mode == crate::options::Mode::Read
                    && stats.compaction.sstables == 0
                    && stats.real_dirty == 0
                {
                    writeln!(
                        out,
                        "Warning: the data directory holds no data (no sstables, empty \
                         memtables): every read will miss; write it first (`replica-stress \
                         write --data-dir DIR`) or add --populate yes"
                    )
                    .map_err(output)?;
                }
                return Ok(None);
            }
            let w = &config.workload;
            writeln!(
                out,
                "Populating {} partitions ({:.1} MiB) with {} threads, then flushing...",
                w.partitions,
                w.partitions as f64 * f64::from(w.rows_per_partition) * f64::from(w.row_size)
                    / f64::from(1 << 20),
                config.threads,
            )
            .and_then(|()| out.flush())
            .map_err(output)?;
            let report = populate(&target, &config)?;
            writeln!(out, "{}", describe_populate(&report)).map_err(output)?;
            Ok(Some(report))
        });
        let populated = match prepared {
            Ok(p) => p,
            Err(e) => {
                // The run does not start; the target still closes cleanly.
                let _ = factory.close(target);
                return Err(e);
            }
        };
        populations.extend(populated.map(|p| (config.label.clone(), p)));
        let hdr_path = hdr_file(options, policy);
        let mut hdr_log = match &hdr_path {
            Some(path) => Some(HdrLog::create(path, SystemTime::now(), &description)?),
            None => None,
        };
        let mut table = match &options.results_dir {
            Some(dir) => Some(RateTable::create(
                &dir.join(format!("{}.ops.csv", policy.name())),
            )?),
            None => None,
        };
        let mut graph = options.graph.as_ref().map(|_| GraphRecorder::new());
        let summary = {
            let mut progress = ProgressPrinter::new(&mut *out);
            let mut observers = Observers::new();
            observers.push(&mut progress);
            if let Some(g) = graph.as_mut() {
                observers.push(g);
            }
            if let Some(log) = hdr_log.as_mut() {
                observers.push(log);
            }
            if let Some(t) = table.as_mut() {
                observers.push(t);
            }
            run(&target, &config, &mut observers)
        };
        let dirty = target.stats().real_dirty;
        if dirty > 0 {
            writeln!(
                out,
                "Closing: flushing {} of memtables to sstables...",
                crate::units::format_bytes(dirty)
            )
            .and_then(|()| out.flush())
            .map_err(output)?;
        }
        let closed = factory.close(target);
        let summary = summary?;
        closed?;
        if let Some(log) = hdr_log {
            log.finish()?;
        }
        if let Some(t) = table {
            t.finish()?;
        }
        if let Some(g) = graph {
            graphs.push(g.finish(
                &format!("{} ({})", options.mode.name(), config.label),
                &description,
                options.soft_limit_ratio,
                &summary,
            ));
        }
        writeln!(out, "\n{summary}").map_err(output)?;
        if let Some(dir) = &options.results_dir {
            let path = dir.join(format!("{}.summary.txt", policy.name()));
            std::fs::write(&path, format!("Running {description}\n\n{summary}"))
                .map_err(crate::error::io_err("write", &path))?;
        }
        summaries.push(summary);
    }
    if summaries.is_empty() && options.interrupt.is_requested() {
        return Err(Error::Interrupted {
            during: "start of the run",
        });
    }
    if let [a, b] = summaries.as_slice() {
        writeln!(out, "{}", compare(a, b)).map_err(output)?;
    }
    if let Some(path) = &options.graph {
        crate::graph::write_graph(path, &graphs)?;
        writeln!(out, "Graph: {}", path.display()).map_err(output)?;
    }
    if let Some(path) = &json_file(options) {
        let mut value = match summaries.as_slice() {
            [a, b] => compare_json(a, b),
            runs => runs
                .first()
                .map_or(serde_json::Value::Null, Summary::to_json),
        };
        if let Some(object) = value.as_object_mut() {
            // How the clients wrote (`--async`): 0 for blocking writes.
            object.insert(
                "async_in_flight".to_owned(),
                serde_json::Value::from(options.async_in_flight),
            );
            // The run's shape, so a results file says what it measured.
            object.insert("device_model".to_owned(), devices_json(options));
            object.insert(
                "direct_io".to_owned(),
                serde_json::Value::from(options.direct_io),
            );
            object.insert(
                "prefault".to_owned(),
                serde_json::Value::from(options.prefault),
            );
            object.insert(
                "commitlog_direct_io".to_owned(),
                serde_json::Value::from(match (options.direct_io, options.commitlog_direct_io) {
                    (false, _) | (true, replica::DirectIo::Never) => "never",
                    (true, replica::DirectIo::Always) => "always",
                    (true, _) => "auto",
                }),
            );
            object.insert(
                "periodic_ack".to_owned(),
                serde_json::Value::from(match options.periodic_ack {
                    replica::PeriodicAck::Written => "written",
                    _ => "buffered",
                }),
            );
            object.insert(
                "columns".to_owned(),
                serde_json::Value::from(options.columns),
            );
            // The populate phase of each run (not in the run's figures).
            let phases: Vec<serde_json::Value> = populations
                .iter()
                .map(|(label, p)| {
                    serde_json::json!({
                        "label": label,
                        "partitions": p.partitions,
                        "bytes": p.bytes,
                        "seconds": p.elapsed.as_secs_f64(),
                    })
                })
                .collect();
            object.insert("populate".to_owned(), serde_json::Value::from(phases));
        }
        write_json(path, &value)?;
    }
    Ok(summaries)
}
