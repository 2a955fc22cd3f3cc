//! An incremental job over runs releases each input fragment as soon as
//! its data is in committed outputs, so its temporary disk space stays a
//! few fragments, while a size-tiered job of the same inputs needs about
//! its whole input. Its output is a run of fragments with disjoint key
//! ranges.

mod common;

use common::{assert_clean, flush, live, read_all, view, writer_options};
use compaction::{JobOptions, JobPlan, NothingOutside, SstableSet, Unthrottled, run_job};
use mutation::Mutation;

const FRAGMENT: u64 = 8 << 10;

/// Blocks far smaller than a fragment, as 16 KiB blocks are next to the
/// default 1 GiB fragments.
fn options() -> JobOptions {
    let mut o = JobOptions::default();
    o.writer = writer_options();
    o
}

/// Four runs of distinct keys (no overwrites: the worst case for space),
/// each made by an incremental job over four flushes.
fn four_runs(set: &SstableSet) -> (Vec<u64>, Vec<Mutation>) {
    let mut written = Vec::new();
    let mut inputs = Vec::new();
    for run in 0..4 {
        let mut flushes = Vec::new();
        for f in 0..4 {
            let batch: Vec<Mutation> = (0..40)
                .map(|k| live(&format!("r{run}-f{f}-k{k}"), 1 + run, 200))
                .collect();
            written.extend(batch.iter().cloned());
            flushes.push(flush(set, batch));
        }
        let plan = JobPlan {
            inputs: flushes,
            fragment_size: Some(FRAGMENT),
        };
        let report = run_job(set, &plan, &options(), &NothingOutside, &Unthrottled).unwrap();
        assert!(report.outputs.len() >= 3, "a run of several fragments");
        inputs.extend(report.outputs);
    }
    (inputs, written)
}

#[test]
fn peak_temporary_space_is_a_few_fragments() {
    let dir = tempfile::tempdir().unwrap();
    let set = SstableSet::open(dir.path()).unwrap();
    let (inputs, written) = four_runs(&set);
    let plan = JobPlan {
        inputs: inputs.clone(),
        fragment_size: Some(FRAGMENT),
    };
    let ics = run_job(&set, &plan, &options(), &NothingOutside, &Unthrottled).unwrap();
    assert!(ics.checkpoints >= 4);
    // At most one straddling fragment per input run, plus the open output.
    let bound = 6 * FRAGMENT + ics.bytes_read / 10;
    assert!(
        ics.peak_temporary_bytes <= bound,
        "ics peak {} > {bound} (input {})",
        ics.peak_temporary_bytes,
        ics.bytes_read
    );
    // The output is one run, fragments in key order with disjoint ranges.
    let snapshot = set.snapshot();
    let mut run: Vec<_> = snapshot.infos();
    assert!(
        run.iter()
            .all(|i| i.run.is_some_and(|r| r.run_id == run[0].run_id()))
    );
    run.sort_by_key(|i| i.run.map(|r| r.order));
    for pair in run.windows(2) {
        let (_, last) = pair[0].key_range.clone().unwrap();
        let (first, _) = pair[1].key_range.clone().unwrap();
        assert!(last < first, "fragments overlap");
    }
    assert_eq!(
        view(&read_all(&set, &[]), 0),
        view(&Mutation::reconcile_all(written.clone()), 0)
    );
    assert_clean(dir.path(), &set);

    // The same inputs under size-tiered: the whole output coexists with
    // the whole input.
    let dir2 = tempfile::tempdir().unwrap();
    let set2 = SstableSet::open(dir2.path()).unwrap();
    let (inputs2, _) = four_runs(&set2);
    let plan = JobPlan {
        inputs: inputs2,
        fragment_size: None,
    };
    let stcs = run_job(&set2, &plan, &options(), &NothingOutside, &Unthrottled).unwrap();
    assert!(
        stcs.peak_temporary_bytes * 10 >= stcs.bytes_read * 9,
        "stcs peak {} of input {}",
        stcs.peak_temporary_bytes,
        stcs.bytes_read
    );
    assert!(ics.peak_temporary_bytes * 2 < stcs.peak_temporary_bytes);
}
