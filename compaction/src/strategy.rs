//! Strategies: given a table's sstable set, pick the next job.
//!
//! * [`SizeTiered`] (STCS, Cassandra's and ScyllaDB's default): buckets of
//!   sstables of similar size; a bucket of at least `min_threshold`
//!   sstables is compacted into one sstable.
//! * [`Incremental`] (ScyllaDB's ICS): the same tiering over *runs*; the
//!   output is a run of fragments of about `fragment_size` bytes, and each
//!   input fragment is released (and its disk space freed: the job reads
//!   each run one fragment at a time) as soon as its data is in committed
//!   outputs, so the job needs a few fragments of temporary space, not the
//!   size of its input: at most about one fragment per input run (the
//!   consumed part of each run's current fragment, whose data is already
//!   in outputs) plus the open output.
//! * [`NoCompaction`]: never compacts (major compactions still run).
//!
//! The default for new tables is [`Incremental`]: it tiers exactly like
//! size-tiered (same write amplification), but its temporary disk
//! overhead is a few fragments instead of up to the whole input, so a
//! table does not need half its disk free; for a flushed sstable (a run of
//! one fragment) it behaves as size-tiered does.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{Error, Result};
use crate::set::SstableInfo;

/// What a strategy asks for: compact these sstables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobPlan {
    /// Generations of the inputs (all fragments of each chosen run).
    pub inputs: Vec<u64>,
    /// Split the output into fragments of about this many bytes at
    /// partition boundaries (`None`: one output sstable).
    pub fragment_size: Option<u64>,
}

/// A compaction strategy.
pub trait Strategy: Send + Sync + fmt::Debug {
    /// The strategy's name (`stcs`, `ics`, `none`).
    fn name(&self) -> &'static str;

    /// The next job for `set` (which excludes sstables already being
    /// compacted), or `None` when nothing needs compacting.
    fn next_job(&self, set: &[SstableInfo]) -> Option<JobPlan>;

    /// A major compaction: every sstable of `set` into one output (a run,
    /// for [`Incremental`]). `None` when there is nothing to do.
    fn major_job(&self, set: &[SstableInfo]) -> Option<JobPlan> {
        (!set.is_empty()).then(|| JobPlan {
            inputs: set.iter().map(|s| s.generation).collect(),
            fragment_size: None,
        })
    }

    /// Bytes still to compact (ScyllaDB's backlog): an sstable (or run)
    /// of size `S` in a table of total size `T` contributes `S *
    /// log4(T / S)`, the rewrites it still faces under tiering.
    fn backlog(&self, set: &[SstableInfo]) -> u64;
}

/// Options of [`SizeTiered`] (and of the tiering of [`Incremental`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SizeTieredOptions {
    /// An sstable joins a bucket when its size is at least this times the
    /// bucket's average (default 0.5; in (0, 1]).
    pub bucket_low: f64,
    /// ... and at most this times the average (default 1.5; at least 1).
    pub bucket_high: f64,
    /// A bucket needs this many sstables to be compacted (default 4; 2 to
    /// `max_threshold`).
    pub min_threshold: usize,
    /// A job takes at most this many (default 32; up to 1024).
    pub max_threshold: usize,
    /// Sstables smaller than this all fall in one bucket (default 50 MiB).
    pub min_sstable_size: u64,
}

impl Default for SizeTieredOptions {
    fn default() -> Self {
        SizeTieredOptions {
            bucket_low: 0.5,
            bucket_high: 1.5,
            min_threshold: 4,
            max_threshold: 32,
            min_sstable_size: 50 << 20,
        }
    }
}

pub(crate) fn invalid(name: &'static str, value: impl ToString, expected: &'static str) -> Error {
    Error::InvalidOption {
        name,
        value: value.to_string(),
        expected,
    }
}

impl SizeTieredOptions {
    /// Checks every option.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the first bad option and its range.
    pub fn validate(&self) -> Result<()> {
        if !(self.bucket_low > 0.0 && self.bucket_low <= 1.0) {
            return Err(invalid("bucket_low", self.bucket_low, "a ratio in (0, 1]"));
        }
        if !(self.bucket_high >= 1.0 && self.bucket_high.is_finite()) {
            return Err(invalid(
                "bucket_high",
                self.bucket_high,
                "a finite ratio of at least 1",
            ));
        }
        if !(2..=1024).contains(&self.max_threshold) {
            return Err(invalid("max_threshold", self.max_threshold, "2 to 1024"));
        }
        if !(2..=self.max_threshold).contains(&self.min_threshold) {
            return Err(invalid(
                "min_threshold",
                self.min_threshold,
                "2 to max_threshold",
            ));
        }
        Ok(())
    }
}

/// A group of sstables tiered as one unit: an sstable, or a run.
#[derive(Debug, Clone)]
struct Unit {
    size: u64,
    generations: Vec<u64>,
}

/// Cassandra's bucketing: units sorted by size; a unit joins the first
/// bucket whose average it is within `[low, high]` times of, or which
/// holds small units when it is small too.
fn buckets(options: &SizeTieredOptions, mut units: Vec<Unit>) -> Vec<Vec<Unit>> {
    units.sort_by_key(|u| (u.size, u.generations.first().copied()));
    let mut buckets: Vec<(f64, Vec<Unit>)> = Vec::new();
    for unit in units {
        let size = unit.size as f64;
        let small = unit.size < options.min_sstable_size;
        let slot = buckets.iter().position(|(avg, _)| {
            (size >= avg * options.bucket_low && size <= avg * options.bucket_high)
                || (small && *avg < options.min_sstable_size as f64)
        });
        match slot {
            Some(i) => {
                let (avg, members) = &mut buckets[i];
                let n = members.len() as f64;
                *avg = (*avg * n + size) / (n + 1.0);
                members.push(unit);
            }
            None => buckets.push((size, vec![unit])),
        }
    }
    buckets.into_iter().map(|(_, b)| b).collect()
}

/// The bucket with the most units (ScyllaDB's choice; ties: the smallest
/// sizes first, which are cheapest), trimmed to `max_threshold`.
fn pick(options: &SizeTieredOptions, units: Vec<Unit>) -> Option<Vec<Unit>> {
    let mut best: Option<Vec<Unit>> = None;
    for mut bucket in buckets(options, units) {
        if bucket.len() < options.min_threshold {
            continue;
        }
        bucket.truncate(options.max_threshold);
        if best.as_ref().is_none_or(|b| bucket.len() > b.len()) {
            best = Some(bucket);
        }
    }
    best
}

fn tiering_backlog(units: &[Unit]) -> u64 {
    let total: u64 = units.iter().map(|u| u.size).sum();
    units
        .iter()
        .filter(|u| u.size > 0)
        .map(|u| {
            let s = u.size as f64;
            (s * ((total as f64) / s).log(4.0)) as u64
        })
        .sum()
}

fn sstable_units(set: &[SstableInfo]) -> Vec<Unit> {
    set.iter()
        .map(|s| Unit {
            size: s.size,
            generations: vec![s.generation],
        })
        .collect()
}

fn run_units(set: &[SstableInfo]) -> Vec<Unit> {
    let mut runs: BTreeMap<u64, Vec<&SstableInfo>> = BTreeMap::new();
    for s in set {
        runs.entry(s.run_id()).or_default().push(s);
    }
    runs.into_values()
        .map(|mut members| {
            members.sort_by_key(|s| s.run.map_or(0, |r| r.order));
            Unit {
                size: members.iter().map(|s| s.size).sum(),
                generations: members.iter().map(|s| s.generation).collect(),
            }
        })
        .collect()
}

/// Size-tiered compaction.
#[derive(Debug, Clone, Default)]
pub struct SizeTiered {
    options: SizeTieredOptions,
}

impl SizeTiered {
    /// A size-tiered strategy with `options`.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for an option out of range.
    pub fn new(options: SizeTieredOptions) -> Result<Self> {
        options.validate()?;
        Ok(SizeTiered { options })
    }
}

impl Strategy for SizeTiered {
    fn name(&self) -> &'static str {
        "stcs"
    }

    fn next_job(&self, set: &[SstableInfo]) -> Option<JobPlan> {
        let bucket = pick(&self.options, sstable_units(set))?;
        Some(JobPlan {
            inputs: bucket.into_iter().flat_map(|u| u.generations).collect(),
            fragment_size: None,
        })
    }

    fn backlog(&self, set: &[SstableInfo]) -> u64 {
        tiering_backlog(&sstable_units(set))
    }
}

/// Options of [`Incremental`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct IncrementalOptions {
    /// Output fragments are cut at the first partition boundary past this
    /// many bytes on disk (default 1 GiB; at least 4 KiB). The writer
    /// counts bytes a Data block at a time, so a fragment overshoots by up
    /// to a block (`WriterOptions::block_size`) and a partition.
    pub fragment_size: u64,
    /// Tiering of runs, as size-tiered tiers sstables.
    pub tiering: SizeTieredOptions,
}

impl Default for IncrementalOptions {
    fn default() -> Self {
        IncrementalOptions {
            fragment_size: 1 << 30,
            tiering: SizeTieredOptions::default(),
        }
    }
}

/// Incremental compaction.
#[derive(Debug, Clone, Default)]
pub struct Incremental {
    options: IncrementalOptions,
}

impl Incremental {
    /// An incremental strategy with `options`.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for an option out of range.
    pub fn new(options: IncrementalOptions) -> Result<Self> {
        if options.fragment_size < 4096 {
            return Err(invalid(
                "fragment_size",
                options.fragment_size,
                "at least 4096 bytes",
            ));
        }
        options.tiering.validate()?;
        Ok(Incremental { options })
    }
}

impl Strategy for Incremental {
    fn name(&self) -> &'static str {
        "ics"
    }

    fn next_job(&self, set: &[SstableInfo]) -> Option<JobPlan> {
        let bucket = pick(&self.options.tiering, run_units(set))?;
        Some(JobPlan {
            inputs: bucket.into_iter().flat_map(|u| u.generations).collect(),
            fragment_size: Some(self.options.fragment_size),
        })
    }

    fn major_job(&self, set: &[SstableInfo]) -> Option<JobPlan> {
        (!set.is_empty()).then(|| JobPlan {
            inputs: set.iter().map(|s| s.generation).collect(),
            fragment_size: Some(self.options.fragment_size),
        })
    }

    fn backlog(&self, set: &[SstableInfo]) -> u64 {
        tiering_backlog(&run_units(set))
    }
}

/// No compaction (only major compactions on demand).
#[derive(Debug, Clone, Default)]
pub struct NoCompaction;

impl Strategy for NoCompaction {
    fn name(&self) -> &'static str {
        "none"
    }

    fn next_job(&self, _set: &[SstableInfo]) -> Option<JobPlan> {
        None
    }

    fn backlog(&self, _set: &[SstableInfo]) -> u64 {
        0
    }
}

/// A strategy by name, as a table's configuration or a command line gives
/// it.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub enum StrategyConfig {
    /// [`SizeTiered`].
    SizeTiered(SizeTieredOptions),
    /// [`Incremental`] (the default; see the module docs).
    #[default]
    Incremental,
    /// [`Incremental`] with options.
    IncrementalWith(IncrementalOptions),
    /// [`NoCompaction`].
    None,
}

impl StrategyConfig {
    /// Parses `stcs`, `ics` or `none` (default options).
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for any other name.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "stcs" | "size-tiered" => Ok(StrategyConfig::SizeTiered(SizeTieredOptions::default())),
            "ics" | "incremental" => Ok(StrategyConfig::Incremental),
            "none" => Ok(StrategyConfig::None),
            other => Err(invalid("strategy", other, "one of stcs, ics, none")),
        }
    }

    /// Builds the strategy.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for an option out of range.
    pub fn build(&self) -> Result<Box<dyn Strategy>> {
        Ok(match self {
            StrategyConfig::SizeTiered(o) => Box::new(SizeTiered::new(o.clone())?),
            StrategyConfig::Incremental => Box::new(Incremental::default()),
            StrategyConfig::IncrementalWith(o) => Box::new(Incremental::new(o.clone())?),
            StrategyConfig::None => Box::new(NoCompaction),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::set::RunMembership;

    fn info(generation: u64, size: u64, run: Option<(u64, u32)>) -> SstableInfo {
        SstableInfo {
            generation,
            size,
            key_range: None,
            min_timestamp: None,
            max_timestamp: None,
            run: run.map(|(run_id, order)| RunMembership { run_id, order }),
        }
    }

    #[test]
    fn size_tiered_waits_for_min_threshold_then_takes_the_biggest_bucket() {
        let stcs = SizeTiered::default();
        let mut set: Vec<_> = (1..=3).map(|g| info(g, 1 << 20, None)).collect();
        assert_eq!(stcs.next_job(&set), None);
        set.push(info(4, 2 << 20, None));
        let job = stcs.next_job(&set).unwrap();
        assert_eq!(job.inputs.len(), 4);
        assert_eq!(job.fragment_size, None);
        // Large sstables of different tiers do not bucket together.
        let set: Vec<_> = [100u64, 400, 1600, 6400]
            .iter()
            .enumerate()
            .map(|(i, mb)| info(i as u64 + 1, mb << 20, None))
            .collect();
        assert_eq!(stcs.next_job(&set), None);
    }

    #[test]
    fn max_threshold_trims_the_job() {
        let stcs = SizeTiered::new(SizeTieredOptions {
            max_threshold: 5,
            ..SizeTieredOptions::default()
        })
        .unwrap();
        let set: Vec<_> = (1..=9).map(|g| info(g, 1000, None)).collect();
        assert_eq!(stcs.next_job(&set).unwrap().inputs.len(), 5);
    }

    #[test]
    fn incremental_tiers_runs_not_fragments() {
        let ics = Incremental::new(IncrementalOptions {
            fragment_size: 4096,
            ..IncrementalOptions::default()
        })
        .unwrap();
        // One run of 4 fragments and 2 flushed sstables: three units.
        let mut set: Vec<_> = (0..4)
            .map(|i| info(10 + i, 100, Some((10, i as u32))))
            .collect();
        set.push(info(20, 400, None));
        set.push(info(21, 400, None));
        assert_eq!(ics.next_job(&set), None);
        set.push(info(22, 400, None));
        let job = ics.next_job(&set).unwrap();
        assert_eq!(job.inputs.len(), 7);
        assert_eq!(job.fragment_size, Some(4096));
    }

    #[test]
    fn bad_options_are_named() {
        let bad = |o: SizeTieredOptions| SizeTiered::new(o).unwrap_err().to_string();
        let e = bad(SizeTieredOptions {
            min_threshold: 1,
            ..SizeTieredOptions::default()
        });
        assert!(e.contains("min_threshold = 1"), "{e}");
        let e = bad(SizeTieredOptions {
            bucket_low: 0.0,
            ..SizeTieredOptions::default()
        });
        assert!(e.contains("bucket_low = 0"), "{e}");
        let e = bad(SizeTieredOptions {
            bucket_high: f64::NAN,
            ..SizeTieredOptions::default()
        });
        assert!(e.contains("bucket_high"), "{e}");
        let e = bad(SizeTieredOptions {
            min_threshold: 40,
            ..SizeTieredOptions::default()
        });
        assert!(e.contains("min_threshold = 40"), "{e}");
        let e = Incremental::new(IncrementalOptions {
            fragment_size: 10,
            ..IncrementalOptions::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("fragment_size = 10"), "{e}");
        assert!(StrategyConfig::parse("lcs").is_err());
    }

    proptest::proptest! {
        /// Whatever the sizes, a job takes min_threshold to max_threshold
        /// distinct sstables of the set whose sizes are within the
        /// bucket's bounds of each other (or all small).
        #[test]
        fn jobs_respect_thresholds_and_bucket_bounds(
            sizes in proptest::collection::vec(1u64..(1 << 24), 0..60),
            min_threshold in 2usize..6,
        ) {
            let o = SizeTieredOptions {
                min_threshold,
                max_threshold: 8,
                min_sstable_size: 1 << 16,
                ..SizeTieredOptions::default()
            };
            let stcs = SizeTiered::new(o.clone()).unwrap();
            let set: Vec<_> = sizes.iter().enumerate().map(|(i, &s)| info(i as u64 + 1, s, None)).collect();
            if let Some(job) = stcs.next_job(&set) {
                let n = job.inputs.len();
                proptest::prop_assert!((min_threshold..=8).contains(&n));
                let unique: std::collections::HashSet<_> = job.inputs.iter().collect();
                proptest::prop_assert_eq!(unique.len(), n);
                let picked: Vec<u64> = job.inputs.iter().map(|g| set[*g as usize - 1].size).collect();
                let (lo, hi) = (*picked.iter().min().unwrap(), *picked.iter().max().unwrap());
                if lo >= o.min_sstable_size {
                    // Each joined within [0.5, 1.5] of a running average.
                    proptest::prop_assert!(hi as f64 <= lo as f64 * 3.0 + 1.0);
                }
            } else {
                // No job: fewer than min_threshold sstables share any size.
                let mut counts = std::collections::HashMap::new();
                for s in &sizes {
                    *counts.entry(*s).or_insert(0usize) += 1;
                }
                let small = sizes.iter().filter(|&&s| s < o.min_sstable_size).count();
                proptest::prop_assert!(counts.values().all(|&c| c < min_threshold));
                proptest::prop_assert!(small < min_threshold);
            }
        }
    }

    #[test]
    fn backlog_shrinks_as_tiers_merge() {
        let stcs = SizeTiered::default();
        let many: Vec<_> = (1..=16).map(|g| info(g, 1 << 20, None)).collect();
        let one = vec![info(1, 16 << 20, None)];
        assert!(stcs.backlog(&many) > stcs.backlog(&one));
        assert_eq!(stcs.backlog(&one), 0);
        assert_eq!(NoCompaction.backlog(&many), 0);
    }
}
