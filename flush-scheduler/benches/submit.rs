//! Submit-and-complete throughput of no-op flush jobs through
//! `FlushScheduler`, against a bare `std::sync::mpsc` thread pool (the
//! classic shared-receiver pool) with the same number of threads, in the
//! same run.
//!
//! Scale: `FLUSH_BENCH_JOBS` jobs per iteration (default 1000),
//! `FLUSH_BENCH_WORKERS` threads (default 2). After the criterion groups, a
//! short interleaved run prints the ratio of the two (median of rounds).

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use flush_scheduler::{
    FlushContext, FlushError, FlushJob, FlushOutput, FlushScheduler, JobKey, SchedulerConfig,
};

struct NoopJob(u64);

impl FlushJob for NoopJob {
    fn key(&self) -> JobKey {
        JobKey::new(self.0)
    }

    fn run(&mut self, _ctx: &FlushContext<'_>) -> Result<FlushOutput, FlushError> {
        Ok(FlushOutput::default())
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Submits `jobs` no-op jobs (distinct keys) and waits for all of them.
/// Keys repeat across rounds: a completed flush no longer coalesces.
fn run_scheduler(scheduler: &FlushScheduler, jobs: u64) {
    let handles: Vec<_> = (0..jobs)
        .map(|i| {
            scheduler
                .submit(Box::new(NoopJob(i)))
                .unwrap_or_else(|r| panic!("{}", r.error))
        })
        .collect();
    for h in handles {
        h.wait().expect("no-op job succeeds");
    }
}

type Task = Box<dyn FnOnce() + Send>;

/// The baseline: threads sharing one `mpsc::Receiver` behind a mutex.
struct MpscPool {
    sender: Option<mpsc::Sender<Task>>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl MpscPool {
    fn new(workers: usize) -> Self {
        let (sender, receiver) = mpsc::channel::<Task>();
        let receiver = Arc::new(Mutex::new(receiver));
        let threads = (0..workers)
            .map(|_| {
                let receiver = Arc::clone(&receiver);
                thread::spawn(move || {
                    loop {
                        let task = receiver.lock().expect("not poisoned").recv();
                        match task {
                            Ok(task) => task(),
                            Err(_) => return,
                        }
                    }
                })
            })
            .collect();
        Self {
            sender: Some(sender),
            threads,
        }
    }

    /// Runs `jobs` no-op boxed jobs, each reporting completion on a channel.
    fn run(&self, jobs: u64) {
        let (done_tx, done_rx) = mpsc::channel::<u64>();
        let sender = self.sender.as_ref().expect("pool running");
        for i in 0..jobs {
            let done = done_tx.clone();
            let mut job = NoopJob(i);
            sender
                .send(Box::new(move || {
                    let _ = std::hint::black_box(&mut job);
                    done.send(i).expect("receiver alive");
                }))
                .expect("pool running");
        }
        drop(done_tx);
        assert_eq!(done_rx.iter().count() as u64, jobs);
    }
}

impl Drop for MpscPool {
    fn drop(&mut self) {
        self.sender = None;
        for t in self.threads.drain(..) {
            t.join().expect("pool thread");
        }
    }
}

fn main() {
    let jobs = env_usize("FLUSH_BENCH_JOBS", 1000) as u64;
    let workers = env_usize("FLUSH_BENCH_WORKERS", 2);
    let dir = tempfile::tempdir().expect("tempdir");
    let scheduler = FlushScheduler::new(SchedulerConfig::new([dir.path()]).workers(workers))
        .expect("scheduler");
    let pool = MpscPool::new(workers);

    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .configure_from_args();
    {
        let mut group = c.benchmark_group("submit_complete");
        group.throughput(Throughput::Elements(jobs));
        group.bench_function(BenchmarkId::new("flush_scheduler", jobs), |b| {
            b.iter(|| run_scheduler(&scheduler, jobs));
        });
        group.bench_function(BenchmarkId::new("mpsc_pool_baseline", jobs), |b| {
            b.iter(|| pool.run(jobs));
        });
        group.finish();
    }
    c.final_summary();

    // Interleaved rounds, so both sides see the same machine load.
    let rounds = env_usize("FLUSH_BENCH_ROUNDS", 15);
    let mut sched = Vec::with_capacity(rounds);
    let mut base = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t = Instant::now();
        run_scheduler(&scheduler, jobs);
        sched.push(t.elapsed());
        let t = Instant::now();
        pool.run(jobs);
        base.push(t.elapsed());
    }
    sched.sort();
    base.sort();
    let (s, b) = (sched[rounds / 2], base[rounds / 2]);
    let per_sec = |d: Duration| jobs as f64 / d.as_secs_f64();
    println!(
        "interleaved median of {rounds} rounds, {jobs} jobs, {workers} workers: \
         flush_scheduler {s:?} ({:.0} jobs/s), mpsc baseline {b:?} ({:.0} jobs/s), \
         time ratio scheduler/baseline = {:.2}",
        per_sec(s),
        per_sec(b),
        s.as_secs_f64() / b.as_secs_f64()
    );
    let m = scheduler.metrics();
    assert_eq!(m.coalesced, 0, "every job in a round has its own key");
    assert_eq!(m.failed_attempts, 0);
    drop(scheduler.shutdown());
}
