//! The workload generator: a deterministic stream of operations per client
//! thread, derived from the [`WorkloadSpec`] and its seed alone.
//!
//! * Partition `i` (0-based, below `partitions`) has the key
//!   `key0000000042`-style bytes `key{i:010}` and lives in table
//!   `i % tables`, so a read finds what a write to the same index wrote.
//! * A write fills every row of the partition: rows `row{r:08}`, each of
//!   `columns` cells (columns `0..columns`) sharing `row_size` value bytes
//!   (the first column takes the remainder). Values are slices of a
//!   pseudo-random pool built once from the seed, so generating a 128 KiB
//!   row costs no copying and values differ from write to write.
//! * Write timestamps are `1 + n * threads + thread` microseconds for the
//!   thread's `n`-th operation: unique across threads and increasing within
//!   one, whatever the scheduling.
//! * [`Distribution::Sequential`] gives thread `t` of `T` the indices
//!   `t, t + T, t + 2T, ...` modulo the population, so the threads together
//!   walk it in order with no shared counter.

use bytes::Bytes;
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

use crate::error::Error;
use crate::options::{Distribution, Mode, WorkloadSpec};

/// Bytes of the value pool beyond one row, so values start at many offsets.
const POOL_SLACK: usize = 64 << 10;

/// The name of the `index`-th table of a load: `stress_0`, `stress_1`, ...
pub fn table_name(index: u32) -> String {
    format!("stress_{index}")
}

/// The key of the population's `index`-th partition.
///
/// # Errors
/// Never for indices below 2^64 (the key is 13 to 23 bytes); the `Result`
/// carries the mutation crate's key check.
pub fn partition_key(index: u64) -> Result<DecoratedKey, Error> {
    Ok(DecoratedKey::from_bytes(format!("key{index:010}"))?)
}

/// One operation for a target.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Write a whole partition.
    Write {
        /// Index of the table (see [`table_name`]).
        table: u32,
        /// The partition's rows.
        mutation: Mutation,
    },
    /// Read a whole partition.
    Read {
        /// Index of the table (see [`table_name`]).
        table: u32,
        /// The partition.
        key: DecoratedKey,
    },
}

impl Op {
    /// True for writes.
    pub fn is_write(&self) -> bool {
        matches!(self, Op::Write { .. })
    }
}

/// The value bytes every generator of a load slices its values from.
#[derive(Debug, Clone)]
pub struct ValuePool {
    bytes: Bytes,
    row_size: usize,
}

impl ValuePool {
    /// Builds the pool for `spec` from its seed.
    pub fn new(spec: &WorkloadSpec) -> Self {
        let row_size = spec.row_size as usize;
        let mut bytes = vec![0u8; row_size + POOL_SLACK];
        SmallRng::seed_from_u64(spec.seed ^ 0x76a1_u64).fill_bytes(&mut bytes);
        ValuePool {
            bytes: Bytes::from(bytes),
            row_size,
        }
    }

    /// A value of the pool's row size starting at a random offset.
    fn value(&self, rng: &mut SmallRng) -> Bytes {
        let start = rng.gen_range(0..=self.bytes.len() - self.row_size);
        self.bytes.slice(start..start + self.row_size)
    }
}

/// The operations of one client thread.
///
/// ```
/// use clap::Parser;
/// use replica_stress::{OpGenerator, StressOptions, ValuePool};
///
/// let spec = StressOptions::try_parse_from(["replica-stress", "--partition-size=1KiB"])
///     .unwrap()
///     .workload()
///     .unwrap();
/// let pool = ValuePool::new(&spec);
/// let mut a = OpGenerator::new(&spec, pool.clone(), 0, 4);
/// let mut b = OpGenerator::new(&spec, pool, 0, 4);
/// // Same seed, same thread: the same operations.
/// assert_eq!(a.next_op().unwrap(), b.next_op().unwrap());
/// ```
#[derive(Debug)]
pub struct OpGenerator {
    spec: WorkloadSpec,
    pool: ValuePool,
    rng: SmallRng,
    thread: u64,
    threads: u64,
    issued: u64,
}

/// splitmix64's finaliser: spreads a seed and a thread index into
/// independent generator seeds.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl OpGenerator {
    /// The generator of thread `thread` of `threads` (both as the runner
    /// numbers them; `threads` at least 1).
    pub fn new(spec: &WorkloadSpec, pool: ValuePool, thread: usize, threads: usize) -> Self {
        let thread = thread as u64;
        OpGenerator {
            spec: spec.clone(),
            pool,
            rng: SmallRng::seed_from_u64(mix(spec.seed ^ mix(thread))),
            thread,
            threads: (threads as u64).max(1),
            issued: 0,
        }
    }

    /// The population index of the next operation.
    fn next_index(&mut self) -> u64 {
        let n = self.spec.partitions;
        match self.spec.distribution {
            Distribution::Uniform => self.rng.gen_range(0..n),
            Distribution::Sequential => {
                let step = u128::from(self.issued) * u128::from(self.threads);
                ((u128::from(self.thread) + step) % u128::from(n)) as u64
            }
            Distribution::Gaussian => {
                // Box-Muller; mean in the middle, three standard deviations
                // to either end (cassandra-stress's default stdvrng of 3).
                let u1: f64 = 1.0 - self.rng.r#gen::<f64>(); // (0, 1]
                let u2: f64 = self.rng.r#gen::<f64>();
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                let last = (n - 1) as f64;
                let mean = last / 2.0;
                let x = (mean + z * mean / 3.0).round().clamp(0.0, last);
                x as u64
            }
        }
    }

    /// Whether the next operation writes.
    fn next_is_write(&mut self) -> bool {
        match self.spec.mode {
            Mode::Write => true,
            Mode::Read => false,
            Mode::Mixed => {
                let r = self.spec.ratio;
                let total = u64::from(r.writes) + u64::from(r.reads);
                self.rng.gen_range(0..total) < u64::from(r.writes)
            }
        }
    }

    /// The next operation.
    ///
    /// # Errors
    /// [`Error::Mutation`] if the mutation crate refuses a generated key or
    /// row (the options' limits keep them valid).
    pub fn next_op(&mut self) -> Result<Op, Error> {
        let write = self.next_is_write();
        let index = self.next_index();
        let table = (index % u64::from(self.spec.tables)) as u32;
        let key = partition_key(index)?;
        let timestamp = 1 + self.issued * self.threads + self.thread;
        self.issued += 1;
        if !write {
            return Ok(Op::Read { table, key });
        }
        self.write(table, key, Timestamp::new(timestamp as i64)?)
    }

    /// The write of the population's `index`-th partition that the
    /// populate phase issues before the run: every row, at timestamp 0,
    /// below every timestamp of the run's own writes (which start at 1),
    /// so a `mixed` run's writes always supersede it.
    ///
    /// # Errors
    /// As [`next_op`](Self::next_op).
    pub fn population_write(&mut self, index: u64) -> Result<Op, Error> {
        let table = (index % u64::from(self.spec.tables)) as u32;
        let key = partition_key(index)?;
        self.write(table, key, Timestamp::new(0)?)
    }

    fn write(&mut self, table: u32, key: DecoratedKey, ts: Timestamp) -> Result<Op, Error> {
        let mut builder = Mutation::builder(key);
        for row in 0..self.spec.rows_per_partition {
            let value = self.pool.value(&mut self.rng);
            let clustering = Bytes::from(format!("row{row:08}"));
            let columns = self.spec.columns.max(1) as usize;
            let each = value.len() / columns;
            let first = value.len() - each * (columns - 1);
            let mut at = 0;
            for column in 0..columns {
                let len = if column == 0 { first } else { each };
                let cell = Cell::live(value.slice(at..at + len), ts);
                builder = builder.cell(clustering.clone(), column as u32, cell);
                at += len;
            }
        }
        Ok(Op::Write {
            table,
            mutation: builder.build()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Ratio;

    fn spec(distribution: Distribution, mode: Mode) -> WorkloadSpec {
        WorkloadSpec {
            mode,
            ratio: Ratio {
                writes: 3,
                reads: 1,
            },
            partitions: 1000,
            distribution,
            rows_per_partition: 4,
            row_size: 100,
            columns: 1,
            tables: 3,
            seed: 7,
        }
    }

    fn index_of(key: &DecoratedKey) -> u64 {
        std::str::from_utf8(key.key().as_bytes()).unwrap()[3..]
            .parse()
            .unwrap()
    }

    #[test]
    fn writes_have_the_requested_shape() {
        let s = spec(Distribution::Uniform, Mode::Write);
        let mut g = OpGenerator::new(&s, ValuePool::new(&s), 1, 2);
        for _ in 0..50 {
            let Op::Write { table, mutation } = g.next_op().unwrap() else {
                panic!("a write load wrote nothing");
            };
            let index = index_of(mutation.key());
            assert!(index < 1000);
            assert_eq!(u64::from(table), index % 3);
            assert_eq!(mutation.rows().len(), 4);
            for row in mutation.rows().values() {
                let Cell::Live { value, .. } = &row.cells[&0] else {
                    panic!("a written cell is a tombstone");
                };
                assert_eq!(value.len(), 100);
            }
        }
    }

    #[test]
    fn a_row_of_many_columns_splits_its_value_bytes_over_them() {
        let mut s = spec(Distribution::Uniform, Mode::Write);
        s.row_size = 103;
        s.columns = 50;
        let mut g = OpGenerator::new(&s, ValuePool::new(&s), 0, 1);
        let Op::Write { mutation, .. } = g.next_op().unwrap() else {
            panic!("a write load wrote nothing");
        };
        for row in mutation.rows().values() {
            assert_eq!(row.cells.len(), 50);
            let lens: Vec<usize> = (0..50u32)
                .map(|c| match &row.cells[&c] {
                    Cell::Live { value, .. } => value.len(),
                    _ => panic!("a written cell is a tombstone"),
                })
                .collect();
            // 103 = 5 + 49 * 2: the first column takes the remainder.
            assert_eq!(lens[0], 5);
            assert!(lens[1..].iter().all(|&l| l == 2), "{lens:?}");
        }
    }

    #[test]
    fn same_seed_same_operations_other_seed_other_values() {
        let s = spec(Distribution::Gaussian, Mode::Mixed);
        let pool = ValuePool::new(&s);
        let a: Vec<Op> = {
            let mut g = OpGenerator::new(&s, pool.clone(), 0, 4);
            (0..100).map(|_| g.next_op().unwrap()).collect()
        };
        let mut g = OpGenerator::new(&s, pool.clone(), 0, 4);
        let b: Vec<Op> = (0..100).map(|_| g.next_op().unwrap()).collect();
        assert_eq!(a, b);
        let mut other_thread = OpGenerator::new(&s, pool, 1, 4);
        let c: Vec<Op> = (0..100).map(|_| other_thread.next_op().unwrap()).collect();
        assert_ne!(a, c);
        let mut s2 = s.clone();
        s2.seed = 8;
        let mut g2 = OpGenerator::new(&s2, ValuePool::new(&s2), 0, 4);
        let d: Vec<Op> = (0..100).map(|_| g2.next_op().unwrap()).collect();
        assert_ne!(a, d);
    }

    #[test]
    fn sequential_threads_walk_the_population_together() {
        let s = spec(Distribution::Sequential, Mode::Read);
        let pool = ValuePool::new(&s);
        let mut seen = Vec::new();
        for t in 0..4 {
            let mut g = OpGenerator::new(&s, pool.clone(), t, 4);
            for _ in 0..250 {
                let Op::Read { key, table } = g.next_op().unwrap() else {
                    panic!("a read load wrote");
                };
                assert_eq!(u64::from(table), index_of(&key) % 3);
                seen.push(index_of(&key));
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
        // And it wraps around.
        let mut g = OpGenerator::new(&s, pool, 0, 1);
        let first = g.next_op().unwrap();
        for _ in 1..1000 {
            g.next_op().unwrap();
        }
        let Op::Read { key: k1, .. } = first else {
            unreachable!()
        };
        let Op::Read { key: k2, .. } = g.next_op().unwrap() else {
            unreachable!()
        };
        assert_eq!(k1, k2);
    }

    #[test]
    fn gaussian_concentrates_in_the_middle() {
        let s = spec(Distribution::Gaussian, Mode::Read);
        let mut g = OpGenerator::new(&s, ValuePool::new(&s), 0, 1);
        let mut middle = 0;
        for _ in 0..10_000 {
            let Op::Read { key, .. } = g.next_op().unwrap() else {
                unreachable!()
            };
            let i = index_of(&key);
            assert!(i < 1000);
            // One standard deviation (about 166) either side of 499.5.
            if (333..=666).contains(&i) {
                middle += 1;
            }
        }
        // About 68% expected; uniform would give about 33%.
        assert!((6_000..7_600).contains(&middle), "{middle}");
    }

    #[test]
    fn mixed_follows_the_ratio() {
        let s = spec(Distribution::Uniform, Mode::Mixed);
        let mut g = OpGenerator::new(&s, ValuePool::new(&s), 0, 1);
        let writes = (0..4000)
            .filter(|_| g.next_op().unwrap().is_write())
            .count();
        // 3:1 -> about 3000.
        assert!((2_800..3_200).contains(&writes), "{writes}");
    }

    #[test]
    fn timestamps_are_unique_across_threads() {
        let s = spec(Distribution::Uniform, Mode::Write);
        let pool = ValuePool::new(&s);
        let mut stamps = std::collections::BTreeSet::new();
        for t in 0..3 {
            let mut g = OpGenerator::new(&s, pool.clone(), t, 3);
            for _ in 0..20 {
                let Op::Write { mutation, .. } = g.next_op().unwrap() else {
                    unreachable!()
                };
                let row = mutation.rows().values().next().unwrap();
                assert!(stamps.insert(row.cells[&0].timestamp()));
            }
        }
        assert_eq!(stamps.len(), 60);
    }
}
