//! Many threads submit overlapping keys, some jobs failing once: every
//! handle resolves with its key's result, a key never has two attempts
//! running at once, the pool bound holds, and the counters add up. Bounded
//! by a count of submissions, not by time.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{Watched, fast_retry};
use flush_scheduler::{
    FlushContext, FlushError, FlushJob, FlushOutput, FlushScheduler, JobKey, SchedulerConfig,
};

const THREADS: u64 = 4;
const PER_THREAD: u64 = 150;
const KEYS: u64 = 12;
const WORKERS: usize = 3;

#[derive(Debug, Default)]
struct Observed {
    running_keys: Vec<u64>,
    max_running: usize,
    successes: HashMap<u64, u64>,
}

struct StressJob {
    key: u64,
    fail_first: bool,
    observed: Arc<Watched<Observed>>,
}

impl FlushJob for StressJob {
    fn key(&self) -> JobKey {
        JobKey::new(self.key)
    }

    fn run(&mut self, ctx: &FlushContext<'_>) -> Result<FlushOutput, FlushError> {
        self.observed.update(|o| {
            assert!(
                !o.running_keys.contains(&self.key),
                "key {} ran twice at once",
                self.key
            );
            o.running_keys.push(self.key);
            o.max_running = o.max_running.max(o.running_keys.len());
            assert!(o.running_keys.len() <= WORKERS);
        });
        ctx.report_written(1);
        let fail = self.fail_first && ctx.attempt() == 1;
        self.observed.update(|o| {
            o.running_keys.retain(|k| *k != self.key);
            if !fail {
                *o.successes.entry(self.key).or_default() += 1;
            }
        });
        if fail {
            Err(FlushError::job_failed(ctx.key(), "first attempt fails"))
        } else {
            Ok(FlushOutput {
                bytes_written: 1,
                files: Vec::new(),
            })
        }
    }
}

#[test]
fn many_threads_overlapping_keys() {
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let config = SchedulerConfig::new(dirs.iter().map(|d| d.path()))
        .workers(WORKERS)
        .retry(fast_retry());
    let scheduler = Arc::new(FlushScheduler::new(config).unwrap());
    let observed = Watched::new(Observed::default());

    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let scheduler = Arc::clone(&scheduler);
            let observed = Arc::clone(&observed);
            std::thread::spawn(move || {
                let mut handles = Vec::new();
                for i in 0..PER_THREAD {
                    let key = (i * 7 + t * 3) % KEYS;
                    let job = StressJob {
                        key,
                        fail_first: (i + t) % 5 == 0,
                        observed: Arc::clone(&observed),
                    };
                    handles.push(scheduler.submit(Box::new(job)).unwrap());
                    // Wait for some handles mid-way so flushes complete while
                    // others are being submitted.
                    if i % 10 == 9 {
                        for h in handles.drain(..) {
                            let report = h.wait().unwrap();
                            assert_eq!(report.key, h.key());
                        }
                    }
                }
                for h in handles {
                    assert_eq!(h.wait().unwrap().key, h.key());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }

    let m = scheduler.metrics();
    assert_eq!(m.submitted + m.coalesced, THREADS * PER_THREAD);
    assert_eq!(
        m.completed, m.submitted,
        "every accepted job succeeded once"
    );
    assert_eq!((m.queued, m.running, m.backing_off), (0, 0, 0));
    assert_eq!(m.retries, m.failed_attempts);
    assert_eq!(m.bytes_written, m.completed + m.failed_attempts);
    let dir_total: u64 = m.directories.iter().map(|d| d.completed).sum();
    assert_eq!(dir_total, m.completed);
    observed.get(|o| {
        assert!(o.running_keys.is_empty());
        assert!(o.max_running <= WORKERS);
        assert_eq!(o.successes.values().sum::<u64>(), m.completed);
    });
    assert!(scheduler.shutdown().is_empty());
}
