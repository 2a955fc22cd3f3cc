//! One compaction job: merge the inputs, purge what may be purged, write
//! the outputs, and replace the inputs by the outputs crash-safely.
//!
//! The steps of the replacement, numbered for the crash-test hook
//! ([`JobOptions::stop_after`], `testing` feature), in order:
//!
//! 1. the transaction file is written (inputs, `begin`);
//! 2. an output is recorded in it, before its first byte;
//! 3. the output is committed (sstable's atomic commit);
//! 4. (incremental only) its run file is written and the directory fsynced;
//! 5. a checkpoint is recorded: outputs kept, inputs released;
//! 6. the set is swapped (released inputs out, kept outputs in);
//!
//! incremental jobs repeat steps 2 to 4 per output fragment and steps 5
//! and 6 whenever a checkpoint is safe (see `Job::merge`); then
//!
//! 7. the job drops its handles of the inputs (deleted once no reader
//!    holds them);
//! 8. the transaction file is removed (once the released inputs are gone).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mutation::{DecoratedKey, Fragment, FragmentReader, MergingReader};
use sstable::{Sstable, Writer, WriterOptions};

use crate::error::{Error, Result};
use crate::files::{remove_generation, sync_dir, write_run_file};
use crate::purge::{Clock, MaxPurgeable, PurgeCounts, Purger, SystemClock};
use crate::run_reader::RunReader;
use crate::set::{RunMembership, SstableHandle, SstableSet};
use crate::strategy::{JobPlan, invalid};
use crate::sync::PlainArc;
use crate::txn::{Transaction, try_finish};

/// Options of a job (a table's purge settings and the output format).
#[derive(Clone)]
#[non_exhaustive]
pub struct JobOptions {
    /// Tombstones younger than this are kept (default 10 days, as
    /// Cassandra's `gc_grace_seconds`; at most 68 years).
    pub gc_grace: Duration,
    /// The clock deletion times and TTLs are compared with.
    pub clock: PlainArc<dyn Clock>,
    /// Options of the output sstables.
    pub writer: WriterOptions,
    /// Crash-test hook: stop right after step `n` of the replacement (see
    /// the module docs) and return [`Error::InjectedCrash`], leaving the
    /// files and the set exactly as a crash at that point would.
    #[cfg(feature = "testing")]
    pub stop_after: Option<usize>,
}

impl fmt::Debug for JobOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobOptions")
            .field("gc_grace", &self.gc_grace)
            .field("clock", &self.clock)
            .field("writer", &self.writer)
            .finish_non_exhaustive()
    }
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            gc_grace: Duration::from_secs(10 * 24 * 3600),
            clock: PlainArc::new(SystemClock),
            writer: WriterOptions::default(),
            #[cfg(feature = "testing")]
            stop_after: None,
        }
    }
}

impl JobOptions {
    /// Checks the options.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the bad option.
    pub fn validate(&self) -> Result<()> {
        if self.gc_grace.as_secs() > u64::from(u32::MAX) {
            return Err(invalid(
                "gc_grace",
                format!("{}s", self.gc_grace.as_secs()),
                "at most 4294967295 seconds",
            ));
        }
        Ok(())
    }
}

/// How a running job talks to whoever runs it: stop requests and the
/// bandwidth limit.
pub trait JobControl {
    /// True when the job should stop (the manager is closing).
    fn should_stop(&self) -> bool {
        false
    }

    /// The job wrote `bytes` more; may block to keep within a bandwidth
    /// limit (returning early when a stop is requested).
    fn wrote(&self, bytes: u64) {
        let _ = bytes;
    }
}

/// A control that never stops and never throttles.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unthrottled;

impl JobControl for Unthrottled {}

/// A transaction file whose released inputs were still held by readers
/// when the job ended; [`try_finish`](PendingTransaction::try_finish) it
/// later (the manager does), or [`recover`](crate::recover) does at the
/// next open.
#[derive(Debug)]
pub struct PendingTransaction {
    txn: Transaction,
    /// The released inputs and their directories.
    released: Vec<(u64, PathBuf)>,
}

impl PendingTransaction {
    /// Removes the file if every released input is gone; otherwise hands
    /// it back.
    ///
    /// # Errors
    /// I/O errors removing the file.
    pub fn try_finish(self) -> Result<Option<PendingTransaction>> {
        let released = self.released;
        Ok(try_finish(self.txn, &released)?.map(|txn| PendingTransaction { txn, released }))
    }
}

/// What a job did.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct JobReport {
    /// The inputs' generations.
    pub inputs: Vec<u64>,
    /// The outputs' generations (a run, in key order, for incremental).
    pub outputs: Vec<u64>,
    /// On-disk bytes of the inputs.
    pub bytes_read: u64,
    /// On-disk bytes of the outputs.
    pub bytes_written: u64,
    /// Peak of (inputs not yet released + outputs so far) minus the
    /// inputs' bytes: the disk space the job needed on top of its inputs.
    pub peak_temporary_bytes: u64,
    /// Checkpoints recorded (1 for a size-tiered job).
    pub checkpoints: u64,
    /// What the purge dropped.
    pub purged: PurgeCounts,
    /// Set when readers still held released inputs at the end.
    pub pending: Option<PendingTransaction>,
}

struct Input {
    handle: Option<SstableHandle>,
    generation: u64,
    /// Its directory (any of the set's).
    dir: PathBuf,
    size: u64,
    last: Option<DecoratedKey>,
    first: Option<DecoratedKey>,
}

struct Job<'a> {
    set: &'a SstableSet,
    dir: PathBuf,
    options: &'a JobOptions,
    fragment_size: Option<u64>,
    inputs: Vec<Input>,
    txn: Transaction,
    writer: Option<Writer>,
    outputs: Vec<u64>,
    kept: Vec<u64>,
    /// Committed outputs waiting for a checkpoint.
    pending: Vec<SstableHandle>,
    released: Vec<(u64, PathBuf)>,
    run_id: Option<u64>,
    step: usize,
    report: JobReport,
    unreleased_bytes: u64,
    committed_bytes: u64,
}

/// Why the job left its loop early.
enum Exit {
    Crash(Error),
    Fail(Error),
}

impl From<Error> for Exit {
    fn from(e: Error) -> Self {
        match e {
            Error::InjectedCrash(_) => Exit::Crash(e),
            e => Exit::Fail(e),
        }
    }
}

impl From<sstable::Error> for Exit {
    fn from(e: sstable::Error) -> Self {
        Exit::Fail(e.into())
    }
}

impl From<mutation::Error> for Exit {
    fn from(e: mutation::Error) -> Self {
        Exit::Fail(e.into())
    }
}

impl Job<'_> {
    fn step(&mut self) -> Result<()> {
        self.step += 1;
        #[cfg(feature = "testing")]
        if self.options.stop_after == Some(self.step) {
            return Err(Error::InjectedCrash(self.step));
        }
        Ok(())
    }

    fn note_disk(&mut self) {
        let writing = self.writer.as_ref().map_or(0, Writer::bytes_written);
        let on_disk = self.unreleased_bytes + self.committed_bytes + writing;
        let extra = on_disk.saturating_sub(self.report.bytes_read);
        self.report.peak_temporary_bytes = self.report.peak_temporary_bytes.max(extra);
    }

    fn open_writer(&mut self) -> Result<()> {
        let writer = self
            .set
            .create_writer(&self.dir, self.options.writer.clone())?;
        let generation = writer.generation();
        self.writer = Some(writer);
        self.txn.output(generation)?;
        self.outputs.push(generation);
        self.step()
    }

    /// Commits the open writer (if any): the output is complete on disk,
    /// but not part of the table until a checkpoint keeps it.
    fn commit_output(&mut self) -> Result<()> {
        let Some(writer) = self.writer.take() else {
            return Ok(());
        };
        let committed = writer.commit()?;
        self.step()?;
        // On the device the output was written to: the same directory.
        let table = Sstable::open_with(
            &self.dir,
            committed.generation,
            self.options.writer.device.clone(),
            self.set.fs(),
        )?;
        let run = match self.fragment_size {
            Some(_) => {
                let run_id = *self.run_id.get_or_insert(committed.generation);
                let order = self.kept.len() + self.pending.len();
                let run = RunMembership {
                    run_id,
                    order: u32::try_from(order).unwrap_or(u32::MAX),
                };
                write_run_file(&**self.set.fs(), &self.dir, committed.generation, run)?;
                sync_dir(&**self.set.fs(), &self.dir)?;
                self.step()?;
                Some(run)
            }
            None => None,
        };
        let size = committed.statistics.data_size + committed.statistics.index_size;
        self.committed_bytes += size;
        self.report.bytes_written += size;
        self.pending.push(self.set.make_handle(table, run));
        Ok(())
    }

    /// Records a checkpoint keeping every committed output not kept yet
    /// and releasing the inputs `release` selects, then swaps them in the
    /// set.
    fn checkpoint(&mut self, release: impl Fn(&Input) -> bool) -> Result<()> {
        let added = std::mem::take(&mut self.pending);
        let keep: Vec<u64> = added.iter().map(SstableHandle::generation).collect();
        let release: Vec<u64> = self
            .inputs
            .iter()
            .filter(|i| i.handle.is_some() && release(i))
            .map(|i| i.generation)
            .collect();
        self.txn.checkpoint(&keep, &release)?;
        self.report.checkpoints += 1;
        self.step()?;
        self.set.replace(&release, &added)?;
        self.step()?;
        self.kept.extend(keep);
        for input in &mut self.inputs {
            if release.contains(&input.generation) {
                // Our handle no longer pins it: deleted once readers let go.
                input.handle = None;
                self.unreleased_bytes -= input.size;
                self.released.push((input.generation, input.dir.clone()));
            }
        }
        Ok(())
    }

    /// The largest last key of the inputs that may hold `key`.
    fn covering_last(
        ranges: &[(DecoratedKey, DecoratedKey)],
        key: &DecoratedKey,
    ) -> Option<DecoratedKey> {
        ranges
            .iter()
            .filter(|(first, last)| first <= key && key <= last)
            .map(|(_, last)| last)
            .max()
            .cloned()
    }

    /// Merges, purges and writes. For incremental jobs, an output is
    /// committed at the first partition boundary past the fragment size,
    /// and checkpointed (kept, with the inputs it makes redundant
    /// released) once no input still in the set can hold a key whose
    /// tombstones the kept outputs dropped: were such an input kept after a
    /// crash, or seen by a reader, next to the output, the data the
    /// tombstone shadowed would come back. `min_cut` is the last key of the
    /// input fragments holding purged keys; the checkpoint waits until the
    /// outputs reach it. Once outputs wait for a checkpoint, purging a key
    /// that would push `min_cut` further is skipped (its tombstones stay
    /// for a later job), so checkpoints keep coming.
    fn merge(&mut self, oracle: &dyn MaxPurgeable, control: &dyn JobControl) -> Result<(), Exit> {
        let excluded: HashSet<u64> = self.inputs.iter().map(|i| i.generation).collect();
        let ranges: Vec<(DecoratedKey, DecoratedKey)> = self
            .inputs
            .iter()
            .filter_map(|i| Some((i.first.clone()?, i.last.clone()?)))
            .collect();
        let mut merged = MergingReader::new(run_readers(&self.inputs));
        let set = self.set;
        let incremental = self.fragment_size.is_some();
        let min_cut: RefCell<Option<DecoratedKey>> = RefCell::new(None);
        let waiting = Cell::new(false);
        let covering: RefCell<Option<DecoratedKey>> = RefCell::new(None);
        let mut lookup = |key: &DecoratedKey| {
            if incremental {
                let last = Self::covering_last(&ranges, key);
                let extends = match (&last, &*min_cut.borrow()) {
                    (Some(l), Some(c)) => l > c,
                    (Some(_), None) => true,
                    (None, _) => false,
                };
                if extends && waiting.get() {
                    return mutation::Timestamp::MIN;
                }
                *covering.borrow_mut() = last;
            }
            // Memtables first, then the set's current version: data that
            // moves from one to the other is seen in one of them.
            let outside = oracle.max_purgeable(key);
            outside.min(set.snapshot().max_purgeable(key, &excluded))
        };
        let now = self.options.clock.now_seconds();
        let mut purger = Purger::new(now, self.options.gc_grace, &mut lookup);
        let mut out = Vec::new();
        let mut last_written: Option<DecoratedKey> = None;
        let mut unthrottled: u64 = 0;
        let mut last_bytes: u64 = 0;
        loop {
            if control.should_stop() {
                return Err(Exit::Fail(Error::Stopped));
            }
            let Some(fragment) = merged.next()? else {
                break;
            };
            let end = matches!(fragment, Fragment::PartitionEnd);
            if let (Fragment::PartitionStart { .. }, Some(size)) = (&fragment, self.fragment_size) {
                let full = self
                    .writer
                    .as_ref()
                    .is_some_and(|w| w.bytes_written() >= size);
                waiting.set(full || !self.pending.is_empty());
            }
            purger.push(fragment, &mut out);
            for f in out.drain(..) {
                if let Fragment::PartitionStart { key, .. } = &f {
                    let full = match (&self.writer, self.fragment_size) {
                        (Some(w), Some(size)) => w.bytes_written() >= size,
                        _ => false,
                    };
                    if full {
                        self.commit_output()?;
                        // Only right after a commit: every key up to
                        // `last_written` is then in committed outputs, so
                        // an input ending before `key` is fully replaced.
                        let reached = min_cut
                            .borrow()
                            .as_ref()
                            .is_none_or(|c| Some(c) <= last_written.as_ref());
                        if reached {
                            let next = key.clone();
                            self.checkpoint(|i| i.last.as_ref().is_none_or(|l| *l < next))?;
                            *min_cut.borrow_mut() = None;
                        }
                    }
                    if self.writer.is_none() {
                        self.open_writer()?;
                    }
                    last_written = Some(key.clone());
                }
                if let Some(w) = self.writer.as_mut() {
                    w.write(&f)?;
                }
            }
            if end {
                self.note_disk();
                if incremental && purger.purged_in_partition() {
                    let last = covering.borrow_mut().take();
                    let mut cut = min_cut.borrow_mut();
                    if last.as_ref() > cut.as_ref() {
                        *cut = last;
                    }
                }
            }
            let bytes = self.writer.as_ref().map_or(0, Writer::bytes_written);
            if bytes < last_bytes {
                last_bytes = 0;
            }
            unthrottled += bytes - last_bytes;
            last_bytes = bytes;
            if unthrottled >= 64 << 10 {
                control.wrote(unthrottled);
                unthrottled = 0;
            }
        }
        self.report.purged = purger.counts;
        control.wrote(unthrottled);
        if control.should_stop() {
            return Err(Exit::Fail(Error::Stopped));
        }
        self.note_disk();
        if self.writer.is_none() && self.outputs.is_empty() {
            // Everything was purged. An empty output still takes a new
            // generation, above every input's (the set hands out
            // generations above every one present, and a directory's
            // writer one above its largest), so a released input's
            // generation is not reused while a transaction file may still
            // name it, even across a restart.
            self.open_writer()?;
        }
        self.commit_output()?;
        self.checkpoint(|_| true)?;
        self.note_disk();
        Ok(())
    }

    /// Undoes what is not checkpointed after a failure or a stop: the open
    /// writer's files and every output not kept are removed; unreleased
    /// inputs stay.
    fn clean_up(mut self) -> Result<Option<PendingTransaction>> {
        drop(self.writer.take());
        for &g in &self.outputs {
            if !self.kept.contains(&g) {
                remove_generation(&**self.set.fs(), &self.dir, g)?;
            }
        }
        drop(std::mem::take(&mut self.inputs));
        let released = std::mem::take(&mut self.released);
        let txn = self.txn;
        Ok(try_finish(txn, &released)?.map(|txn| PendingTransaction { txn, released }))
    }
}

/// The readers of a job's inputs: one [`RunReader`] per input run whose
/// fragments have disjoint key ranges (checked, in key order), so at most
/// one fragment per run is open and an exhausted fragment's files are
/// not held open (see `run_reader`); fragments that overlap (a damaged run
/// file) are read each on its own. Empty inputs have nothing to read.
fn run_readers(inputs: &[Input]) -> Vec<RunReader> {
    let mut runs: BTreeMap<u64, Vec<&SstableHandle>> = BTreeMap::new();
    for handle in inputs.iter().filter_map(|i| i.handle.as_ref()) {
        if handle.info().key_range.is_some() {
            runs.entry(handle.info().run_id()).or_default().push(handle);
        }
    }
    let mut readers = Vec::new();
    for (_, mut members) in runs {
        members.sort_by(|a, b| a.info().key_range.cmp(&b.info().key_range));
        let disjoint =
            members
                .windows(2)
                .all(|w| match (&w[0].info().key_range, &w[1].info().key_range) {
                    (Some((_, last)), Some((first, _))) => last < first,
                    _ => false,
                });
        let tables = members.iter().map(|h| h.sstable().clone());
        if disjoint {
            readers.push(RunReader::new(tables.collect()));
        } else {
            readers.extend(tables.map(|t| RunReader::new(vec![t])));
        }
    }
    readers
}

fn dir_of(set: &SstableSet) -> Result<&Path> {
    set.dir().ok_or_else(|| Error::InvalidJob {
        reason: "the sstable set has no data directory".into(),
    })
}

/// Runs one job on `set`: merges the inputs `plan` names, drops what may
/// be purged (asking `oracle` about sources outside the set), writes the
/// outputs into the set's data directory (whichever of the set's
/// directories the inputs are in), and swaps them in.
///
/// On an error or a stop, the outputs not yet checkpointed are removed and
/// the inputs not yet released stay in the set, so nothing is lost; the
/// set stays consistent (an incremental job may have replaced part of its
/// inputs already).
///
/// # Errors
/// [`Error::NotInSet`] for an input missing from the set,
/// [`Error::InvalidJob`] for an empty plan, [`Error::Stopped`] when
/// `control` asks to stop, sstable and I/O errors.
pub fn run_job(
    set: &SstableSet,
    plan: &JobPlan,
    options: &JobOptions,
    oracle: &dyn MaxPurgeable,
    control: &dyn JobControl,
) -> Result<JobReport> {
    options.validate()?;
    if plan.inputs.is_empty() {
        return Err(Error::InvalidJob {
            reason: "a job needs at least one input".into(),
        });
    }
    let dir = dir_of(set)?.to_path_buf();
    let snapshot = set.snapshot();
    let mut inputs = Vec::with_capacity(plan.inputs.len());
    for &generation in &plan.inputs {
        let handle = snapshot
            .handles()
            .iter()
            .find(|h| h.generation() == generation)
            .ok_or(Error::NotInSet { generation })?;
        let (first, last) = match &handle.info().key_range {
            Some((a, b)) => (Some(a.clone()), Some(b.clone())),
            None => (None, None),
        };
        let input_dir = handle.dir().map_or_else(|| dir.clone(), Path::to_path_buf);
        inputs.push(Input {
            handle: Some(handle.clone()),
            generation,
            dir: input_dir,
            size: handle.info().size,
            first,
            last,
        });
    }
    drop(snapshot);
    let txn = Transaction::begin(set.fs(), &dir, &plan.inputs)?;
    let bytes_read: u64 = inputs.iter().map(|i| i.size).sum();
    let mut job = Job {
        set,
        dir,
        options,
        fragment_size: plan.fragment_size,
        inputs,
        txn,
        writer: None,
        outputs: Vec::new(),
        kept: Vec::new(),
        pending: Vec::new(),
        released: Vec::new(),
        run_id: None,
        step: 0,
        report: JobReport {
            inputs: plan.inputs.clone(),
            bytes_read,
            ..JobReport::default()
        },
        unreleased_bytes: bytes_read,
        committed_bytes: 0,
    };
    let started = job.step().map_err(Exit::from);
    match started.and_then(|()| job.merge(oracle, control)) {
        Ok(()) => {}
        Err(Exit::Crash(e)) => {
            // As a crash: no destructor runs, no file is touched.
            std::mem::forget(job);
            return Err(e);
        }
        Err(Exit::Fail(e)) => {
            // The job's own error is what the caller needs; should the
            // clean-up fail too, the transaction file stays and `recover`
            // finishes it at the next open.
            let _leftover = job.clean_up();
            return Err(e);
        }
    }
    // Step 7: let go of the inputs.
    drop(std::mem::take(&mut job.inputs));
    if let Err(e) = job.step() {
        std::mem::forget(job);
        return Err(e);
    }
    let released = std::mem::take(&mut job.released);
    let mut report = std::mem::take(&mut job.report);
    report.outputs = job.kept.clone();
    let pending = try_finish(job.txn, &released)?;
    report.pending = pending.map(|txn| PendingTransaction { txn, released });
    Ok(report)
}
