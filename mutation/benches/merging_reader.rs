//! Merging reader throughput (fragments/s) over 1, 2, 4 and 8 sources,
//! against reading the same, already merged stream from one vector (the
//! baseline: "concatenating pre-merged vectors"), in the same run.
//!
//! Data: `200 * scale` partitions of 64 rows (2 cells each) plus two range
//! tombstones per partition. For k sources the rows of every partition are
//! dealt round-robin to the k sources (so every partition is present in
//! every source, the worst case for merging); the merged output is the same
//! stream for every k. Set `MUTATION_BENCH_SCALE` (default 1) to scale the
//! data; `cargo bench -p mutation --bench merging_reader -- --quick` for a
//! fast run.
//!
//! After criterion's report, a table prints each case's mean time per pass,
//! fragments/s, and its cost relative to the baseline.

use std::cell::RefCell;
use std::collections::BTreeMap;
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

thread_local! {
    /// Seconds per pass of every sample criterion took, by case.
    static SAMPLES: RefCell<BTreeMap<String, Vec<f64>>> =
        const { RefCell::new(BTreeMap::new()) };
}

fn record(name: &str, d: Duration, iters: u64) {
    if iters == 0 {
        return;
    }
    SAMPLES.with(|t| {
        t.borrow_mut()
            .entry(name.to_owned())
            .or_default()
            .push(d.as_secs_f64() / iters as f64);
    });
}

/// Median and minimum of the samples (the machine is shared: the median
/// is the honest figure, the minimum shows the least-disturbed pass).
fn median_and_min(samples: &[f64]) -> Option<(f64, f64)> {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    Some((*v.get(v.len() / 2)?, *v.first()?))
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

    let mut group = c.benchmark_group("merging_reader");
    group.throughput(Throughput::Elements(fragments as u64));

    group.bench_function("baseline_premerged_vector", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut r = FragmentsReader::new(merged.clone());
                let t = Instant::now();
                assert_eq!(drain(&mut r), fragments);
                total += t.elapsed();
            }
            record("baseline", total, iters);
            total
        });
    });

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

        let name = format!("merge_{k}_sources");
        group.bench_function(&name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut r =
                        MergingReader::new(sources.iter().cloned().map(FragmentsReader::new));
                    let t = Instant::now();
                    assert_eq!(drain(&mut r), fragments);
                    total += t.elapsed();
                }
                record(&name, total, iters);
                total
            });
        });
    }
    group.finish();
    c.final_summary();

    SAMPLES.with(|t| {
        let t = t.borrow();
        let stats = |name: &str| t.get(name).and_then(|v| median_and_min(v));
        let Some((base, base_min)) = stats("baseline") else {
            return;
        };
        println!();
        println!(
            "merging reader, {partitions} partitions x {ROWS} rows, {fragments} output fragments per pass"
        );
        println!(
            "{:<18} {:>13} {:>15} {:>11} {:>13} {:>11}",
            "case", "median ms", "fragments/s", "x baseline", "min ms", "x base min"
        );
        let mut names: Vec<&String> = t.keys().collect();
        names.sort_by_key(|n| (n.as_str() != "baseline", n.len(), n.to_string()));
        for name in names {
            if let Some((med, min)) = stats(name) {
                println!(
                    "{:<18} {:>13.3} {:>15.0} {:>11.2} {:>13.3} {:>11.2}",
                    name,
                    med * 1e3,
                    fragments as f64 / med,
                    med / base,
                    min * 1e3,
                    min / base_min
                );
            }
        }
    });
}
