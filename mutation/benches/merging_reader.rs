//! Merging reader throughput (fragments/s) over 1, 2, 4 and 8 sources,
//! against reading the same, already merged stream from one vector (the
//! baseline: "concatenating pre-merged vectors"), in the same run.
//!
//! Data: `200 * scale` partitions of 64 rows (2 cells each) plus two range
//! tombstones per partition. For k sources the rows of every partition are
//! dealt round-robin to the k sources (so every partition is present in
//! every source, the worst case for merging); the merged output is the same
//! stream for every k. Set `MUTATION_BENCH_SCALE` (default 1) to scale the
//! data; `cargo bench -p replmem-mutation --bench merging_reader -- --quick` for a
//! fast run.
//!
//! After criterion's report, the cases run again in interleaved rounds
//! (each round runs every case once, so the shared machine's load changes
//! hit all cases alike) and a table prints each case's median time per
//! pass, fragments/s, and the median per-round ratio to the baseline.

use std::hint::black_box;
use std::ops::Bound;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use mutation::{
    Cell, DecoratedKey, Fragment, FragmentReader, FragmentsReader, MergingReader, Mutation,
    Timestamp, Tombstone,
};

const ROWS: usize = 64;

fn scale() -> usize {
    std::env::var("MUTATION_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&s| s > 0)
        .unwrap_or(1)
}

/// The writes of the data set, split into `k` groups of mutations.
fn split_data(partitions: usize, k: usize) -> Vec<Vec<Mutation>> {
    let mut groups: Vec<Vec<Mutation>> = vec![Vec::new(); k];
    for p in 0..partitions {
        let key = DecoratedKey::from_bytes(format!("partition-{p:06}")).expect("valid key");
        for (s, group) in groups.iter_mut().enumerate() {
            let mut b = Mutation::builder(key.clone());
            for r in (s..ROWS).step_by(k) {
                let ck = format!("row-{r:04}");
                let ts = Timestamp::from_micros(1_000 + r as i64);
                b = b
                    .cell(ck.clone(), 0, Cell::live(format!("value-{p}-{r}"), ts))
                    .cell(ck, 1, Cell::live(vec![7u8; 24], ts));
            }
            if s == 0 {
                // Two range tombstones, older than the rows, so they shadow
                // nothing but still travel as range tombstone changes.
                let t = Tombstone::new(Timestamp::from_micros(10), 0);
                b = b
                    .range_tombstone_bounds(
                        Bound::Included("row-0010"),
                        Bound::Excluded("row-0020"),
                        t,
                    )
                    .range_tombstone_bounds(Bound::Excluded("row-0040"), Bound::Unbounded, t);
            }
            group.push(b.build().expect("valid mutation"));
        }
    }
    groups
}

fn stream(ms: &[Mutation]) -> Vec<Fragment> {
    Mutation::reconcile_all(ms.to_vec())
        .into_iter()
        .flat_map(Mutation::into_fragments)
        .collect()
}

fn drain(r: &mut impl FragmentReader) -> usize {
    let mut n = 0;
    while let Some(f) = r.next().expect("in-memory sources do not fail") {
        black_box(&f);
        n += 1;
    }
    n
}

/// One benchmarked configuration.
enum Case {
    /// Read the already merged stream from one vector.
    Baseline(Vec<Fragment>),
    /// Merge the streams of these sources.
    Merge(Vec<Vec<Fragment>>),
}

impl Case {
    fn name(&self) -> String {
        match self {
            Case::Baseline(_) => "baseline_premerged_vector".to_owned(),
            Case::Merge(s) => format!("merge_{}_sources", s.len()),
        }
    }

    /// Times one pass over the whole stream (building the readers, which
    /// clones the input vectors, is not timed).
    fn pass(&self, expected: usize) -> Duration {
        let n;
        let elapsed;
        match self {
            Case::Baseline(v) => {
                let mut r = FragmentsReader::new(v.clone());
                let t = Instant::now();
                n = drain(&mut r);
                elapsed = t.elapsed();
            }
            Case::Merge(sources) => {
                let mut r = MergingReader::new(sources.iter().cloned().map(FragmentsReader::new));
                let t = Instant::now();
                n = drain(&mut r);
                elapsed = t.elapsed();
            }
        }
        assert_eq!(n, expected, "{} produced a different stream", self.name());
        elapsed
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Interleaved rounds (every case once per round, so load changes on the
/// shared machine hit all cases alike); prints the ratio table.
fn ratio_table(cases: &[Case], fragments: usize, partitions: usize) {
    const ROUNDS: usize = 41;
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); cases.len()];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); cases.len()];
    for _ in 0..ROUNDS {
        let round: Vec<f64> = cases
            .iter()
            .map(|c| c.pass(fragments).as_secs_f64())
            .collect();
        for (i, t) in round.iter().enumerate() {
            times[i].push(*t);
            ratios[i].push(t / round[0]);
        }
    }
    println!();
    println!(
        "merging reader: {partitions} partitions x {ROWS} rows, {fragments} output fragments per pass, {ROUNDS} interleaved rounds"
    );
    println!(
        "{:<26} {:>10} {:>10} {:>14} {:>11}",
        "case", "median ms", "min ms", "fragments/s", "x baseline"
    );
    for (i, case) in cases.iter().enumerate() {
        let med = median(&mut times[i]);
        let min = times[i][0];
        println!(
            "{:<26} {:>10.3} {:>10.3} {:>14.0} {:>11.2}",
            case.name(),
            med * 1e3,
            min * 1e3,
            fragments as f64 / med,
            median(&mut ratios[i])
        );
    }
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();

    let partitions = 200 * scale();
    let merged: Vec<Fragment> = stream(&split_data(partitions, 1).concat());
    let fragments = merged.len();

    let mut cases = vec![Case::Baseline(merged.clone())];
    for k in [1usize, 2, 4, 8] {
        let sources: Vec<Vec<Fragment>> = split_data(partitions, k)
            .iter()
            .map(|g| stream(g))
            .collect();
        // The merge of the split must be exactly the merged stream.
        let mut check = MergingReader::new(sources.iter().cloned().map(FragmentsReader::new));
        let mut got = Vec::new();
        while let Some(f) = check.next().expect("in-memory") {
            got.push(f);
        }
        assert!(got == merged, "merging {k} sources changed the stream");
        cases.push(Case::Merge(sources));
    }

    let mut group = c.benchmark_group("merging_reader");
    group.throughput(Throughput::Elements(fragments as u64));
    for case in &cases {
        group.bench_function(case.name(), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| case.pass(fragments)).sum());
        });
    }
    group.finish();
    c.final_summary();

    // `cargo bench` passes --bench; `cargo test --benches` does not, and
    // then criterion only smoke-tests each case: skip the table.
    if std::env::args().any(|a| a == "--bench") {
        ratio_table(&cases, fragments, partitions);
    }
}
