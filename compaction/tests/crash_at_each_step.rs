//! A job stopped after each step of the replacement, as a crash would stop
//! it, then recovered at open: nothing lost, nothing resurrected (a
//! tombstone whose shadowed data sits in an sstable outside the job
//! included), no leftover files, every sstable verifies. Also with the
//! flushes in a separate flush directory: the inputs are there, the
//! outputs and the transaction file in the data directory, and recovery
//! finds and finishes or undoes the job across both.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{Memtable, assert_clean, flush_into, job_options, read_all, view};
use compaction::{Clock, Error, JobPlan, ManualClock, SstableSet, Unthrottled, run_job};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp, Tombstone};

fn key(i: u32) -> DecoratedKey {
    DecoratedKey::from_bytes(format!("key-{i:03}")).unwrap()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let mut x = u64::from(i) * 7919 + u64::from(round);
    (0..300)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            (x >> 56) as u8
        })
        .collect()
}

/// Flushes four overwriting sstables (the job's inputs) and one older
/// sstable outside the job whose data a job tombstone shadows. Returns
/// every mutation written and the job's inputs.
fn populate(set: &SstableSet, flush_dir: &Path, now: u32, runs: bool) -> (Vec<Mutation>, Vec<u64>) {
    let mut written = Vec::new();
    // Outside the job: old data for key 0, shadowed by a later partition
    // tombstone inside the job.
    let outside = Mutation::builder(key(0))
        .cell("r", 0, Cell::live(value(0, 99), Timestamp::from_micros(1)))
        .build()
        .unwrap();
    written.push(outside.clone());
    flush_into(set, flush_dir, vec![outside]);
    let mut inputs = Vec::new();
    for round in 0..4u32 {
        let mut batch = Vec::new();
        for i in 0..40u32 {
            let ts = Timestamp::from_micros(i64::from(10 + round));
            let mut b = Mutation::builder(key(i));
            b = if i % 3 == 0 && round == 3 {
                b.partition_tombstone(Tombstone::new(ts, now - 5))
            } else if i % 7 == 0 && round == 2 {
                b.cell("r", 0, Cell::tombstone(ts, now - 5))
            } else {
                b.cell("r", 0, Cell::live(value(i, round), ts))
            };
            batch.push(b.build().unwrap());
        }
        written.extend(batch.iter().cloned());
        let generation = flush_into(set, flush_dir, batch);
        if runs {
            // Rewrite the flush as a run of fragments (its tombstones stay:
            // older data for their keys sits in the other rounds). Runs of
            // different fragment sizes, so fragments of old data straddle
            // the cuts after fragments holding the tombstones are released.
            let plan = JobPlan {
                inputs: vec![generation],
                fragment_size: Some([8192, 6144, 4096, 4096][round as usize]),
            };
            let clock = Arc::new(ManualClock::new(now));
            let report = run_job(
                set,
                &plan,
                &job_options(clock),
                &Memtable::default(),
                &Unthrottled,
            )
            .unwrap();
            assert!(report.outputs.len() >= 2);
            inputs.extend(report.outputs);
        } else {
            inputs.push(generation);
        }
    }
    (written, inputs)
}

/// The set's directories: the data directory, and a separate flush
/// directory or none.
struct Dirs {
    _base: tempfile::TempDir,
    data: PathBuf,
    flush: Option<PathBuf>,
}

impl Dirs {
    fn new(separate_flush_dir: bool) -> Self {
        let base = tempfile::tempdir().unwrap();
        let data = base.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let flush = separate_flush_dir.then(|| {
            let f = base.path().join("flush");
            std::fs::create_dir(&f).unwrap();
            f
        });
        Dirs {
            _base: base,
            data,
            flush,
        }
    }

    fn open(&self) -> SstableSet {
        let others: Vec<PathBuf> = self.flush.iter().cloned().collect();
        SstableSet::open_dirs(&self.data, &others).unwrap()
    }

    fn flush_dir(&self) -> &Path {
        self.flush.as_deref().unwrap_or(&self.data)
    }

    fn assert_clean(&self, set: &SstableSet) {
        assert_clean(&self.data, set);
        if let Some(f) = &self.flush {
            assert_clean(f, set);
        }
    }
}

fn crash_at_every_step(fragment_size: Option<u64>, runs: bool, separate_flush_dir: bool) -> usize {
    for step in 1.. {
        let dirs = Dirs::new(separate_flush_dir);
        let clock = Arc::new(ManualClock::new(1_000_000));
        let now = clock.now_seconds();
        let set = dirs.open();
        let (written, inputs) = populate(&set, dirs.flush_dir(), now, runs);
        let expected = view(&Mutation::reconcile_all(written), now);
        let mut options = job_options(clock);
        options.stop_after = Some(step);
        let plan = JobPlan {
            inputs,
            fragment_size,
        };
        match run_job(&set, &plan, &options, &Memtable::default(), &Unthrottled) {
            Err(Error::InjectedCrash(s)) => {
                assert_eq!(s, step);
                // The process dies: nothing in memory runs any more.
                std::mem::forget(set);
                let reopened = dirs.open();
                assert_eq!(
                    view(&read_all(&reopened, &[]), now),
                    expected,
                    "step {step}"
                );
                dirs.assert_clean(&reopened);
            }
            Ok(report) => {
                assert!(report.pending.is_none());
                assert_eq!(view(&read_all(&set, &[]), now), expected);
                dirs.assert_clean(&set);
                if separate_flush_dir {
                    // Only the sstable outside the job is left there; the
                    // output is in the data directory.
                    let snapshot = set.snapshot();
                    let in_flush = snapshot
                        .handles()
                        .iter()
                        .filter(|h| h.dir() == dirs.flush.as_deref())
                        .count();
                    assert_eq!(in_flush, 1);
                    assert!(
                        snapshot
                            .handles()
                            .iter()
                            .any(|h| h.dir() == Some(dirs.data.as_path()))
                    );
                }
                drop(set);
                let reopened = dirs.open();
                assert_eq!(view(&read_all(&reopened, &[]), now), expected);
                // The tombstone shadowing data outside the job was kept.
                let k0 = reopened
                    .snapshot()
                    .handles()
                    .iter()
                    .filter_map(|h| h.sstable().read_partition(&key(0)).unwrap())
                    .count();
                assert_eq!(k0, 2, "key 0: the old data and the kept tombstone");
                return step;
            }
            Err(e) => panic!("step {step}: {e}"),
        }
    }
    unreachable!()
}

#[test]
fn size_tiered_job_recovers_at_every_step() {
    // begin, output, commit, checkpoint, swap, release: 6 steps + the end.
    assert!(crash_at_every_step(None, false, false) >= 7);
}

#[test]
fn size_tiered_job_over_a_flush_directory_recovers_at_every_step() {
    assert!(crash_at_every_step(None, false, true) >= 7);
}

#[test]
fn incremental_job_over_a_flush_directory_recovers_at_every_step() {
    let steps = crash_at_every_step(Some(4096), false, true);
    assert!(steps >= 12, "only {steps} steps: the output was not split");
}

#[test]
fn incremental_job_recovers_at_every_step() {
    // Several fragments: each adds output, commit, run file, checkpoint, swap.
    let steps = crash_at_every_step(Some(4096), false, false);
    assert!(steps >= 12, "only {steps} steps: the output was not split");
}

#[test]
fn incremental_job_over_runs_recovers_at_every_step() {
    // Input fragments are released at checkpoints while others straddle
    // the cut: a crash in between must not revive what a purged tombstone
    // covered.
    let steps = crash_at_every_step(Some(4096), true, false);
    assert!(steps >= 12, "only {steps} steps: the output was not split");
}
