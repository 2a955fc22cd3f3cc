//! Benchmark: commit log appends against raw file writes of the same bytes,
//! in the same run.
//!
//! ```text
//! cargo bench -p replmem-commitlog --bench append -- [--quick] [--scale F] [--dir PATH] [--only batch|periodic|async] [--threads 1,8,64,100] [--per-call 16] [--bytes-per-sync direct,1048576,0] [--async-threads 1,2] [--in-flight 64,256] [--async-window 0,200]
//! ```
//!
//! * **Batch mode** (`SyncMode::Batch(0)`), 1 KiB mutations, 1, 8, 64 and
//!   100 writer threads: throughput and p50/p99 append latency (from call to
//!   durable return), against two baselines on the same file system:
//!   sequential `write` + `fdatasync` of each entry's bytes (one sync per
//!   write: what a log without group commit costs), and the same total bytes
//!   written sequentially with a single fdatasync at the end (the bandwidth
//!   ceiling). The issue's targets: at 64 threads and more, at least 0.5x the
//!   ceiling's bandwidth, and p99 append latency at most 3x one fdatasync's
//!   p99.
//! * The same writers calling `add_batch` with 16 mutations a call
//!   (`--per-call N`; 1 for none): each waits once per call, so a sync can
//!   cover 16 times the bytes per writer and a writer pays one wakeup per
//!   16 entries. Not the issue's shape, which has one mutation in flight per
//!   writer; it shows what the log does when the load offers more.
//! * **Periodic mode** (`SyncMode::Periodic(10 s)`), 1 KiB mutations, one
//!   thread: appends per second against appending the same encoded bytes to
//!   a `Vec<u8>` (encoding included in both).
//!
//! * **Async** (`--only async`; also part of the default run):
//!   `CommitLog::add_async` in `Batch(0)`, 1 and 2 threads (`--async-threads`)
//!   each keeping 64 and 256 appends in flight (`--in-flight`) on a small
//!   executor of its own (one waker per future, the thread parked while
//!   none is woken); latency from the call to the future's resolution.
//!   Each row is set against its bound row in the same run: one write +
//!   fdatasync of all the entries in flight (threads x in flight) at a
//!   time. The issue's targets (24): at least 0.8x the bound's MB/s, and
//!   p99 at most 3x one fdatasync's p99 at 64 in flight. Each async row
//!   runs once per `--bytes-per-sync` value, like the batch rows, and once
//!   per `--async-window` value in microseconds (default `0`): the log in
//!   `Batch(window)` instead, whose next sync starts no sooner than the
//!   window after the previous one, so a cycle waits for appends re-issued
//!   meanwhile (bigger groups, at the window's latency).
//! * `--bytes-per-sync N,M,...` (default `direct,1048576,0`): every
//!   commit-log row is run once per value: `direct` is `Config::direct_io`
//!   (the default: no page cache), a number is the page cache with
//!   `Config::bytes_per_sync` of it (incremental write-back every N bytes;
//!   0 off), in the same run, so the options' cost or gain is read off
//!   adjacent rows.
//!
//! `--scale 1` (default) appends 65,536 entries per thread count in batch
//! mode (2,048 with one thread) and 262,144 in periodic mode; `--quick` is
//! `--scale 0.015625`, a smoke run. The log and the baseline files go to
//! `--dir` (default: the temp directory), which should be the device under
//! test.

use std::fs::{File, OpenOptions};
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use commitlog::{CommitLog, Config, Durable, SyncMode};
use hdrhistogram::Histogram;
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

struct Args {
    scale: f64,
    dir: PathBuf,
    only: Option<String>,
    threads: Vec<u64>,
    /// Mutations per `add_batch` call in the extra rows (1: none).
    per_call: u64,
    /// `Config::bytes_per_sync` values; each log row runs once per value.
    bytes_per_sync: Vec<u64>,
    /// Thread counts of the async rows.
    async_threads: Vec<u64>,
    /// Appends each async thread keeps in flight.
    in_flight: Vec<u64>,
    /// `Batch` windows of the async rows, in microseconds.
    async_window: Vec<u64>,
}

fn parse_args() -> Args {
    let mut args = Args {
        scale: 1.0,
        dir: std::env::temp_dir(),
        only: None,
        threads: vec![1, 8, 64, 100],
        per_call: 16,
        bytes_per_sync: vec![DIRECT, 1 << 20, 0],
        async_threads: vec![1, 2],
        in_flight: vec![64, 256],
        async_window: vec![0],
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => args.scale = 1.0 / 64.0,
            "--scale" => {
                args.scale = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--scale takes a number")
            }
            "--dir" => args.dir = PathBuf::from(it.next().expect("--dir takes a path")),
            "--only" => args.only = Some(it.next().expect("--only takes batch or periodic")),
            "--threads" => {
                args.threads = it
                    .next()
                    .and_then(|v| v.split(',').map(|t| t.parse().ok()).collect())
                    .expect("--threads takes a comma-separated list of numbers")
            }
            "--per-call" => {
                args.per_call = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n >= 1)
                    .expect("--per-call takes a number of mutations, at least 1")
            }
            "--bytes-per-sync" => {
                args.bytes_per_sync = it
                    .next()
                    .and_then(|v| {
                        v.split(',')
                            .map(|t| {
                                if t == "direct" {
                                    Some(DIRECT)
                                } else {
                                    t.parse().ok()
                                }
                            })
                            .collect()
                    })
                    .expect(
                        "--bytes-per-sync takes a comma-separated list of byte counts or `direct`",
                    )
            }
            "--async-threads" => {
                args.async_threads = it
                    .next()
                    .and_then(|v| v.split(',').map(|t| t.parse().ok()).collect())
                    .expect("--async-threads takes a comma-separated list of numbers")
            }
            "--in-flight" => {
                args.in_flight = it
                    .next()
                    .and_then(|v| v.split(',').map(|t| t.parse().ok()).collect())
                    .filter(|v: &Vec<u64>| v.iter().all(|&n| n >= 1))
                    .expect("--in-flight takes a comma-separated list of numbers, each at least 1")
            }
            "--async-window" => {
                args.async_window = it
                    .next()
                    .and_then(|v| v.split(',').map(|t| t.parse().ok()).collect())
                    .expect("--async-window takes a comma-separated list of microseconds")
            }
            "--bench" => {}
            other => panic!(
                "unknown argument {other}; use --quick, --scale F, --dir PATH, --only batch|periodic|async, --threads N,M,..., --per-call N, --bytes-per-sync N,M,..., --async-threads N,M,..., --in-flight N,M,..., --async-window US,US,..."
            ),
        }
    }
    args
}

/// A mutation of about 1 KiB encoded (key `i`, a 1,000-byte value).
fn mutation(i: u64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(i.to_be_bytes().to_vec()).expect("key"))
        .cell(
            "ck",
            0,
            Cell::live(vec![(i % 251) as u8; 1000], Timestamp::from_micros(1)),
        )
        .build()
        .expect("valid mutation")
}

/// Bytes one entry takes in the log: payload (9 + encoded) plus 20 of
/// framing. The baselines write exactly this many bytes per entry.
fn entry_bytes(m: &Mutation) -> usize {
    9 + m.encoded_len() + 20
}

fn histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits is valid")
}

fn us(nanos: u64) -> f64 {
    nanos as f64 / 1000.0
}

struct Run {
    entries: u64,
    bytes: u64,
    took: Duration,
    latency: Histogram<u64>,
    syncs: u64,
    /// CPU time of the whole process (every thread) during the run.
    cpu: Option<Duration>,
}

/// CPU time used by this process so far (user + system, every thread),
/// from `/proc/self/stat`; `None` where that is not available.
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // Clock ticks are 100 per second on Linux.
    Some(Duration::from_millis((utime + stime) * 10))
}

impl Run {
    fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / self.took.as_secs_f64() / 1e6
    }
    fn per_s(&self) -> f64 {
        self.entries as f64 / self.took.as_secs_f64()
    }
}

/// The `--bytes-per-sync` value that stands for direct I/O
/// (`Config::direct_io`, the log's default).
const DIRECT: u64 = u64::MAX;

/// The log's configuration in `sync` mode: direct I/O for [`DIRECT`],
/// else the page cache with write-back every `bytes_per_sync` bytes.
fn log_config(sync: SyncMode, bytes_per_sync: u64) -> Config {
    let mut c = Config::default();
    c.sync = sync;
    c.direct_io = if bytes_per_sync == DIRECT {
        commitlog::DirectIo::Always
    } else {
        commitlog::DirectIo::Never
    };
    if bytes_per_sync != DIRECT {
        c.bytes_per_sync = bytes_per_sync;
    }
    c
}

/// How a row names a `--bytes-per-sync` value.
fn writeback_label(bytes_per_sync: u64) -> String {
    if bytes_per_sync == DIRECT {
        "direct I/O".to_string()
    } else if bytes_per_sync == 0 {
        "write-back off".to_string()
    } else {
        format!("write-back every {} KiB", bytes_per_sync >> 10)
    }
}

/// `entries` appends from `threads` threads in batch mode, each call
/// `add` (`per_call` = 1) or `add_batch` of `per_call` mutations; latency is
/// per call.
fn run_batch(dir: &Path, threads: u64, entries: u64, per_call: u64, bytes_per_sync: u64) -> Run {
    let dir = tempfile::tempdir_in(dir).expect("bench dir");
    let (log, _) = CommitLog::open(
        dir.path(),
        log_config(SyncMode::Batch(Duration::ZERO), bytes_per_sync),
        |_, _, _| {},
    )
    .expect("open log");
    let log = Arc::new(log);
    let next = Arc::new(AtomicU64::new(0));
    // Built before the clock starts: the run measures the log, not the
    // building of mutations (the baselines write ready-made bytes too).
    let all: Arc<Vec<Mutation>> = Arc::new((0..entries).map(mutation).collect());
    let cpu_before = process_cpu();
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (log, next, all) = (Arc::clone(&log), Arc::clone(&next), Arc::clone(&all));
            std::thread::spawn(move || {
                let mut h = histogram();
                loop {
                    let first = next.fetch_add(per_call, Ordering::Relaxed);
                    if first >= entries {
                        return h;
                    }
                    let last = (first + per_call).min(entries);
                    let t = Instant::now();
                    if per_call == 1 {
                        log.add(first % 4, &all[first as usize]).expect("append");
                    } else {
                        let batch: Vec<(u64, &Mutation)> =
                            (first..last).map(|i| (i % 4, &all[i as usize])).collect();
                        log.add_batch(&batch).expect("append");
                    }
                    h.record(t.elapsed().as_nanos() as u64).expect("in range");
                }
            })
        })
        .collect();
    let mut latency = histogram();
    for h in handles {
        latency.add(h.join().expect("writer")).expect("same bounds");
    }
    let took = start.elapsed();
    let cpu = process_cpu()
        .zip(cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    let stats = log.stats();
    Run {
        entries,
        bytes: stats.bytes,
        took,
        latency,
        syncs: stats.syncs,
        cpu,
    }
}

fn open_file(dir: &Path, name: &str) -> File {
    OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(dir.join(name))
        .expect("baseline file")
}

/// Baseline: each entry's bytes written then fdatasync'd, one at a time.
fn run_sync_per_write(dir: &Path, entries: u64) -> Run {
    let dir = tempfile::tempdir_in(dir).expect("bench dir");
    let mut f = open_file(dir.path(), "sync-per-write");
    let buf = vec![7u8; entry_bytes(&mutation(0))];
    let mut latency = histogram();
    let start = Instant::now();
    for _ in 0..entries {
        let t = Instant::now();
        f.write_all(&buf).expect("write");
        f.sync_data().expect("fdatasync");
        latency
            .record(t.elapsed().as_nanos() as u64)
            .expect("in range");
    }
    Run {
        entries,
        bytes: entries * buf.len() as u64,
        took: start.elapsed(),
        latency,
        syncs: entries,
        cpu: None,
    }
}

/// The closed loop's bound: `threads` writers with one entry each in
/// flight can at best have all their bytes covered by one write and
/// fdatasync at a time. Times `rounds` such writes (`threads` entries'
/// bytes each, sequential, into a zero-filled file, the log's best case)
/// with a sync after each: their throughput is what perfect group commit
/// would reach, with no CPU cost and no waiting between syncs.
fn run_group_bound(dir: &Path, threads: u64, rounds: u64) -> Run {
    let dir = tempfile::tempdir_in(dir).expect("bench dir");
    let mut f = open_file(dir.path(), "group-bound");
    let group = vec![7u8; threads as usize * entry_bytes(&mutation(0))];
    let zeros = vec![0u8; 1 << 20];
    let total = rounds * group.len() as u64;
    let mut left = total;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        f.write_all(&zeros[..n]).expect("zero-fill");
        left -= n as u64;
    }
    f.sync_data().expect("fdatasync");
    let mut f = OpenOptions::new()
        .write(true)
        .open(dir.path().join("group-bound"))
        .expect("reopen");
    let mut latency = histogram();
    let start = Instant::now();
    for _ in 0..rounds {
        let t = Instant::now();
        f.write_all(&group).expect("write");
        f.sync_data().expect("fdatasync");
        latency
            .record(t.elapsed().as_nanos() as u64)
            .expect("in range");
    }
    Run {
        entries: rounds * threads,
        bytes: total,
        took: start.elapsed(),
        latency,
        syncs: rounds,
        cpu: None,
    }
}

/// Ceiling: the same bytes in 1 MiB writes, one fdatasync at the end.
fn run_one_sync(dir: &Path, entries: u64) -> Run {
    let dir = tempfile::tempdir_in(dir).expect("bench dir");
    let mut f = open_file(dir.path(), "one-sync");
    let total = entries * entry_bytes(&mutation(0)) as u64;
    let chunk = vec![7u8; 1 << 20];
    let start = Instant::now();
    let mut left = total;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n]).expect("write");
        left -= n as u64;
    }
    f.sync_data().expect("fdatasync");
    Run {
        entries,
        bytes: total,
        took: start.elapsed(),
        latency: histogram(),
        syncs: 1,
        cpu: None,
    }
}

fn bench_batch(args: &Args) {
    let many = ((65_536.0 * args.scale) as u64).max(64);
    let one = ((2_048.0 * args.scale) as u64).max(16);
    println!("## Batch mode: 1 KiB mutations, durable on return");
    println!();
    println!(
        "Directory: {}. {many} entries per thread count ({one} with one thread); entry = {} bytes on disk.",
        args.dir.display(),
        entry_bytes(&mutation(0))
    );
    println!();
    let per_write = run_sync_per_write(&args.dir, one);
    let ceiling = run_one_sync(&args.dir, many);
    let fsync_p99 = per_write.latency.value_at_quantile(0.99);
    println!(
        "| writer | threads | entries/s | MB/s | p50 (us) | p99 (us) | syncs | entries/sync | MB/s vs one-sync | p99 vs fdatasync p99 | CPU % | CPU us/entry |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let row = |name: &str, threads: String, r: &Run| {
        let (p50, p99) = if r.latency.is_empty() {
            ("-".to_string(), "-".to_string())
        } else {
            (
                format!("{:.0}", us(r.latency.value_at_quantile(0.5))),
                format!("{:.0}", us(r.latency.value_at_quantile(0.99))),
            )
        };
        let p99_ratio = if r.latency.is_empty() || fsync_p99 == 0 {
            "-".to_string()
        } else {
            format!(
                "{:.2}x",
                r.latency.value_at_quantile(0.99) as f64 / fsync_p99 as f64
            )
        };
        let (cpu_pct, cpu_per) = match r.cpu {
            Some(c) => (
                format!("{:.0}", 100.0 * c.as_secs_f64() / r.took.as_secs_f64()),
                format!("{:.1}", c.as_secs_f64() * 1e6 / r.entries as f64),
            ),
            None => ("-".to_string(), "-".to_string()),
        };
        println!(
            "| {name} | {threads} | {:.0} | {:.1} | {p50} | {p99} | {} | {:.1} | {:.2}x | {p99_ratio} | {cpu_pct} | {cpu_per} |",
            r.per_s(),
            r.mb_per_s(),
            r.syncs,
            r.entries as f64 / r.syncs.max(1) as f64,
            r.mb_per_s() / ceiling.mb_per_s(),
        );
    };
    row("write+fdatasync each", "1".to_string(), &per_write);
    row("write all, one fdatasync", "1".to_string(), &ceiling);
    for &threads in &args.threads {
        let entries = if threads == 1 { one } else { many };
        if threads > 1 {
            let rounds = (entries / threads).clamp(16, 1024);
            let bound = run_group_bound(&args.dir, threads, rounds);
            row(
                "bound: one sync per group of all writers",
                threads.to_string(),
                &bound,
            );
        }
        for &wb in &args.bytes_per_sync {
            let r = run_batch(&args.dir, threads, entries, 1, wb);
            row(
                &format!("commitlog batch, {}", writeback_label(wb)),
                threads.to_string(),
                &r,
            );
            if args.per_call > 1 && threads > 1 {
                let r = run_batch(&args.dir, threads, entries, args.per_call, wb);
                row(
                    &format!(
                        "commitlog batch, add_batch of {}, {}",
                        args.per_call,
                        writeback_label(wb)
                    ),
                    threads.to_string(),
                    &r,
                );
            }
        }
    }
    println!();
    println!(
        "Targets (issue 14): at 64 and 100 threads, MB/s vs one-sync >= 0.5x and p99 vs fdatasync p99 <= 3x."
    );
    println!(
        "The 'bound' rows: N writers each waiting for its one entry can at best share one write + fdatasync of N entries at a time; its p50/p99 are per sync."
    );
    println!();
}

fn bench_periodic(args: &Args) {
    let entries = ((262_144.0 * args.scale) as u64).max(256);
    println!("## Periodic mode (10 s): 1 KiB mutations, one thread");
    println!();
    let ms: Vec<Mutation> = (0..1024).map(mutation).collect();
    // Baseline: the same encoded bytes appended to a Vec<u8>.
    let mut vec = Vec::new();
    let start = Instant::now();
    for i in 0..entries {
        ms[(i % 1024) as usize].encode_into(&mut vec);
    }
    let vec_took = start.elapsed();
    std::hint::black_box(&vec);
    let vec_bytes = vec.len();
    drop(vec);

    let per_s = |d: Duration| entries as f64 / d.as_secs_f64();
    println!("| writer | appends | appends/s | MB/s | vs Vec<u8> |");
    println!("|---|---|---|---|---|");
    println!(
        "| Vec<u8> append of the encoded bytes | {entries} | {:.0} | {:.0} | 1.00x |",
        per_s(vec_took),
        vec_bytes as f64 / vec_took.as_secs_f64() / 1e6
    );
    for &wb in &args.bytes_per_sync {
        let dir = tempfile::tempdir_in(&args.dir).expect("bench dir");
        let (log, _) = CommitLog::open(
            dir.path(),
            log_config(SyncMode::Periodic(Duration::from_secs(10)), wb),
            |_, _, _| {},
        )
        .expect("open log");
        let start = Instant::now();
        for i in 0..entries {
            log.add(i % 4, &ms[(i % 1024) as usize]).expect("append");
        }
        let log_took = start.elapsed();
        let stats = log.stats();
        // The final fdatasync is what write-back shortens: timed apart.
        let close_start = Instant::now();
        log.close().expect("close");
        let close_took = close_start.elapsed();
        println!(
            "| commitlog periodic, {} (close with its final sync: {:.1} ms) | {entries} | {:.0} | {:.0} | {:.3}x |",
            writeback_label(wb),
            close_took.as_secs_f64() * 1e3,
            per_s(log_took),
            stats.bytes as f64 / log_took.as_secs_f64() / 1e6,
            vec_took.as_secs_f64() / log_took.as_secs_f64()
        );
    }
    println!();
}

/// Marks one in-flight append woken and unparks its thread.
struct Mark {
    woken: AtomicBool,
    thread: std::thread::Thread,
}

impl Wake for Mark {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

/// `entries` appends with `add_async` in `Batch(window)` from `threads`
/// threads, each keeping `in_flight` futures pending; latency is from the
/// call to the resolution.
fn run_async(
    dir: &Path,
    threads: u64,
    in_flight: u64,
    entries: u64,
    bytes_per_sync: u64,
    window: Duration,
) -> Run {
    let dir = tempfile::tempdir_in(dir).expect("bench dir");
    let (log, _) = CommitLog::open(
        dir.path(),
        log_config(SyncMode::Batch(window), bytes_per_sync),
        |_, _, _| {},
    )
    .expect("open log");
    let log = Arc::new(log);
    let next = Arc::new(AtomicU64::new(0));
    let all: Arc<Vec<Mutation>> = Arc::new((0..entries).map(mutation).collect());
    let cpu_before = process_cpu();
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (log, next, all) = (Arc::clone(&log), Arc::clone(&next), Arc::clone(&all));
            std::thread::spawn(move || {
                let mut h = histogram();
                let mut slots: Vec<(Durable, Arc<Mark>, Waker, Instant)> = Vec::new();
                let mut exhausted = false;
                loop {
                    while !exhausted && (slots.len() as u64) < in_flight {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= entries {
                            exhausted = true;
                            break;
                        }
                        let t = Instant::now();
                        let fut = log.add_async(i % 4, &all[i as usize]).expect("append");
                        let mark = Arc::new(Mark {
                            woken: AtomicBool::new(true),
                            thread: std::thread::current(),
                        });
                        let waker = Waker::from(Arc::clone(&mark));
                        slots.push((fut, mark, waker, t));
                    }
                    if slots.is_empty() {
                        return h;
                    }
                    let mut progressed = false;
                    let mut k = 0;
                    while k < slots.len() {
                        if !slots[k].1.woken.swap(false, Ordering::Acquire) {
                            k += 1;
                            continue;
                        }
                        let (fut, _, waker, _) = &mut slots[k];
                        match Pin::new(fut).poll(&mut Context::from_waker(waker)) {
                            Poll::Ready(r) => {
                                r.expect("durable");
                                let t = slots.swap_remove(k).3;
                                h.record(t.elapsed().as_nanos() as u64).expect("in range");
                                progressed = true;
                            }
                            Poll::Pending => k += 1,
                        }
                    }
                    if !progressed && (exhausted || slots.len() as u64 == in_flight) {
                        std::thread::park();
                    }
                }
            })
        })
        .collect();
    let mut latency = histogram();
    for h in handles {
        latency.add(h.join().expect("writer")).expect("same bounds");
    }
    let took = start.elapsed();
    let cpu = process_cpu()
        .zip(cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    let stats = log.stats();
    Run {
        entries,
        bytes: stats.bytes,
        took,
        latency,
        syncs: stats.syncs,
        cpu,
    }
}

fn bench_async(args: &Args) {
    let entries = ((65_536.0 * args.scale) as u64).max(1024);
    let one = ((2_048.0 * args.scale) as u64).max(16);
    println!("## Async appends (add_async), Batch(0): 1 KiB mutations, many in flight per thread");
    println!();
    println!(
        "Directory: {}. {entries} entries per row; entry = {} bytes on disk. Each commitlog row follows its bound row: one write + fdatasync of all entries in flight at a time.",
        args.dir.display(),
        entry_bytes(&mutation(0))
    );
    println!();
    let per_write = run_sync_per_write(&args.dir, one);
    let fsync_p99 = per_write.latency.value_at_quantile(0.99).max(1);
    println!(
        "| writer | threads | in flight per thread | entries/s | MB/s | p50 (us) | p99 (us) | syncs | entries/sync | MB/s vs bound | p99 vs fdatasync p99 | CPU us/entry |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let row = |name: &str, threads: u64, in_flight: u64, r: &Run, bound: Option<&Run>| {
        let cpu_per = r.cpu.map_or("-".to_string(), |c| {
            format!("{:.1}", c.as_secs_f64() * 1e6 / r.entries as f64)
        });
        let vs_bound = bound.map_or("1.00x".to_string(), |b| {
            format!("{:.2}x", r.mb_per_s() / b.mb_per_s())
        });
        println!(
            "| {name} | {threads} | {in_flight} | {:.0} | {:.1} | {:.0} | {:.0} | {} | {:.1} | {vs_bound} | {:.2}x | {cpu_per} |",
            r.per_s(),
            r.mb_per_s(),
            us(r.latency.value_at_quantile(0.5)),
            us(r.latency.value_at_quantile(0.99)),
            r.syncs,
            r.entries as f64 / r.syncs.max(1) as f64,
            r.latency.value_at_quantile(0.99) as f64 / fsync_p99 as f64,
        );
    };
    row("write+fdatasync each", 1, 1, &per_write, Some(&per_write));
    for &threads in &args.async_threads {
        for &in_flight in &args.in_flight {
            let group = threads * in_flight;
            let rounds = (entries / group).clamp(16, 1024);
            let bound = run_group_bound(&args.dir, group, rounds);
            row(
                "bound: one write + fdatasync of all in flight",
                threads,
                in_flight,
                &bound,
                None,
            );
            for &window in &args.async_window {
                for &wb in &args.bytes_per_sync {
                    let window_us = Duration::from_micros(window);
                    let r = run_async(&args.dir, threads, in_flight, entries, wb, window_us);
                    let name = match window {
                        0 => format!("commitlog add_async, {}", writeback_label(wb)),
                        w => format!(
                            "commitlog add_async, {}, window {w} us",
                            writeback_label(wb)
                        ),
                    };
                    row(&name, threads, in_flight, &r, Some(&bound));
                }
            }
        }
    }
    println!();
    println!(
        "Targets (issue 24): MB/s vs bound >= 0.8x for the same entries in flight; p99 vs fdatasync p99 <= 3x at 64 in flight. The bound rows' p50/p99 are per sync."
    );
    println!();
}

fn main() {
    let args = parse_args();
    println!("# commitlog append benchmark (scale {})", args.scale);
    println!();
    if args.only.as_deref().is_none_or(|o| o == "batch") {
        bench_batch(&args);
    }
    if args.only.as_deref().is_none_or(|o| o == "periodic") {
        bench_periodic(&args);
    }
    if args.only.as_deref().is_none_or(|o| o == "async") {
        bench_async(&args);
    }
}
