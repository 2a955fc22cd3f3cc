//! Bad options give clear errors naming the option and its range, and a
//! job with bad inputs fails before touching anything.

use std::time::Duration;

use compaction::{
    BacklogController, CompactionManager, Error, Incremental, IncrementalOptions, JobOptions,
    JobPlan, ManagerConfig, NothingOutside, SizeTiered, SizeTieredOptions, SstableSet,
    StrategyConfig, Unthrottled, run_job,
};

fn message<T: std::fmt::Debug>(r: Result<T, Error>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn strategy_options() {
    let mut o = SizeTieredOptions::default();
    o.bucket_high = 0.9;
    assert_eq!(
        message(SizeTiered::new(o)),
        "invalid compaction option bucket_high = 0.9: expected a finite ratio of at least 1"
    );
    let mut o = SizeTieredOptions::default();
    o.max_threshold = 1;
    assert!(message(SizeTiered::new(o)).contains("max_threshold = 1: expected 2 to 1024"));
    let mut o = IncrementalOptions::default();
    o.fragment_size = 0;
    assert!(
        message(Incremental::new(o)).contains("fragment_size = 0: expected at least 4096 bytes")
    );
    let mut o = IncrementalOptions::default();
    o.tiering.min_threshold = 0;
    assert!(message(Incremental::new(o)).contains("min_threshold = 0"));
    assert!(message(StrategyConfig::parse("leveled")).contains("one of stcs, ics, none"));
    for name in ["stcs", "ics", "none"] {
        assert_eq!(
            StrategyConfig::parse(name).unwrap().build().unwrap().name(),
            name
        );
    }
    assert_eq!(StrategyConfig::default().build().unwrap().name(), "ics");
}

#[test]
fn manager_options() {
    let mut c = ManagerConfig::default();
    c.workers = 0;
    assert!(message(CompactionManager::new(c)).contains("workers = 0: expected 1 to 64"));
    let mut c = ManagerConfig::default();
    c.bandwidth = Some(0);
    assert!(message(CompactionManager::new(c)).contains("bandwidth = 0"));
    let mut c = ManagerConfig::default();
    let mut b = BacklogController::default();
    b.min_share = 2.0;
    c.backlog = b;
    assert!(message(CompactionManager::new(c)).contains("min_share = 2"));
}

#[test]
fn job_inputs_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let set = SstableSet::open(dir.path()).unwrap();
    let plan = JobPlan {
        inputs: vec![7],
        fragment_size: None,
    };
    let o = JobOptions::default();
    assert!(matches!(
        run_job(&set, &plan, &o, &NothingOutside, &Unthrottled),
        Err(Error::NotInSet { generation: 7 })
    ));
    let empty = JobPlan {
        inputs: vec![],
        fragment_size: None,
    };
    assert!(
        message(run_job(&set, &empty, &o, &NothingOutside, &Unthrottled))
            .contains("at least one input")
    );
    let mut o = JobOptions::default();
    o.gc_grace = Duration::from_secs(u64::from(u32::MAX) + 1);
    assert!(message(run_job(&set, &plan, &o, &NothingOutside, &Unthrottled)).contains("gc_grace"));
    let memory = SstableSet::new(None);
    assert!(
        message(run_job(
            &memory,
            &plan,
            &JobOptions::default(),
            &NothingOutside,
            &Unthrottled
        ))
        .contains("no data directory")
    );
    // Nothing was written.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
