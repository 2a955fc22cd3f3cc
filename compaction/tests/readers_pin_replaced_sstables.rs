//! A reader's snapshot keeps replaced inputs readable; their files go when
//! the last snapshot holding them is dropped, and the job's transaction
//! file can then be removed.

mod common;

use common::{assert_clean, flush, live};
use compaction::{JobOptions, JobPlan, NothingOutside, SstableSet, Unthrottled, run_job};
use sstable::Component;

#[test]
fn inputs_outlive_the_swap_until_readers_let_go() {
    let dir = tempfile::tempdir().unwrap();
    let set = SstableSet::open(dir.path()).unwrap();
    let inputs: Vec<u64> = (0..3)
        .map(|round| {
            flush(
                &set,
                (0..20)
                    .map(|k| live(&format!("k{k}"), round, 100))
                    .collect(),
            )
        })
        .collect();
    let reader = set.snapshot();
    let plan = JobPlan {
        inputs: inputs.clone(),
        fragment_size: None,
    };
    let report = run_job(
        &set,
        &plan,
        &JobOptions::default(),
        &NothingOutside,
        &Unthrottled,
    )
    .unwrap();
    // New readers see only the output.
    assert_eq!(set.snapshot().len(), 1);
    // The old reader still reads its inputs; their files are there.
    for h in reader.handles() {
        assert!(h.is_obsolete());
        assert!(sstable::component_path(dir.path(), h.generation(), Component::Toc).exists());
        assert_eq!(h.sstable().scan().count_partitions(), 20);
    }
    assert_eq!(set.deleted_count(), 0);
    let pending = report.pending.expect("inputs still held");
    let pending = pending.try_finish().unwrap().expect("still held");
    drop(reader);
    assert_eq!(set.deleted_count(), 3);
    assert!(pending.try_finish().unwrap().is_none());
    assert_clean(dir.path(), &set);
}

trait CountPartitions {
    fn count_partitions(self) -> usize;
}

impl CountPartitions for sstable::SstableReader {
    fn count_partitions(mut self) -> usize {
        use mutation::{Fragment, FragmentReader};
        let mut n = 0;
        while let Some(f) = self.next().unwrap() {
            n += usize::from(matches!(f, Fragment::PartitionStart { .. }));
        }
        n
    }
}
