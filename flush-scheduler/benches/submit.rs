//! Submit-and-complete throughput of no-op two-phase flush jobs through
//! `FlushScheduler`, against two bare `std::sync::mpsc` thread pools (the
//! classic shared-receiver pool; the first forwards each job to the second,
//! as the scheduler moves a job from its data workers to its tail workers)
//! with the same numbers of threads, in the same run.
//!
//! Scale: `FLUSH_BENCH_JOBS` jobs per iteration (default 1000),
//! `FLUSH_BENCH_WORKERS` threads of each kind (default 2). After the
//! criterion groups, a short interleaved run prints the ratio of the two
//! (median of rounds).

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use flush_scheduler::{Error, FlushContext, FlushJob, FlushScheduler, SchedulerConfig};

struct NoopJob {
    id: u64,
    done: mpsc::Sender<u64>,
}

impl FlushJob for NoopJob {
    fn write_data(&mut self, _ctx: &FlushContext<'_>) -> Result<(), Error> {
        std::hint::black_box(&mut self.id);
        Ok(())
    }

    fn write_tail(&mut self, _ctx: &FlushContext<'_>) -> Result<(), Error> {
        std::hint::black_box(&mut self.id);
        Ok(())
    }

    fn complete(self: Box<Self>, outcome: Result<(), Error>) {
        outcome.expect("no-op job succeeds");
        self.done.send(self.id).expect("receiver alive");
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Submits `jobs` no-op jobs and waits for all of them.
fn run_scheduler(scheduler: &FlushScheduler, jobs: u64) {
    let (done, completed) = mpsc::channel();
    for id in 0..jobs {
        let job = NoopJob {
            id,
            done: done.clone(),
        };
        scheduler
            .submit(Box::new(job))
            .unwrap_or_else(|r| panic!("{}", r.error));
    }
    drop(done);
    assert_eq!(completed.iter().count() as u64, jobs);
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

    fn send(&self, task: Task) {
        self.sender
            .as_ref()
            .expect("pool running")
            .send(task)
            .expect("pool running");
    }
}

/// The baseline: a data pool whose tasks forward themselves to a tail pool.
struct TwoPools {
    data: MpscPool,
    tails: Arc<MpscPool>,
}

impl TwoPools {
    fn new(workers: usize) -> Self {
        Self {
            data: MpscPool::new(workers),
            tails: Arc::new(MpscPool::new(workers)),
        }
    }

    /// Runs `jobs` no-op jobs through both pools, each reporting completion
    /// on a channel.
    fn run(&self, jobs: u64) {
        let (done_tx, done_rx) = mpsc::channel::<u64>();
        for id in 0..jobs {
            let done = done_tx.clone();
            let tails = Arc::clone(&self.tails);
            self.data.send(Box::new(move || {
                let mut id = id;
                std::hint::black_box(&mut id);
                tails.send(Box::new(move || {
                    std::hint::black_box(&mut id);
                    done.send(id).expect("receiver alive");
                }));
            }));
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
    let config = SchedulerConfig::new([dir.path()])
        .data_workers(workers)
        .tail_workers(workers);
    let scheduler = FlushScheduler::new(config).expect("scheduler");
    let pool = TwoPools::new(workers);

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
    assert_eq!(m.failed, 0);
    drop(scheduler.shutdown());
}
