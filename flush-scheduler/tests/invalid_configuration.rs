//! Bad configurations are rejected at construction with an error naming
//! the problem.

use flush_scheduler::{Error, FlushScheduler, SchedulerConfig};

#[test]
fn bad_configurations_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let err = FlushScheduler::new(SchedulerConfig::new([&missing])).unwrap_err();
    assert!(matches!(err, Error::DirectoryInaccessible { .. }));
    assert!(err.to_string().contains("nope"), "{err}");
    assert!(std::error::Error::source(&err).is_some());

    let file = tmp.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let err = FlushScheduler::new(SchedulerConfig::new([&file])).unwrap_err();
    assert!(matches!(err, Error::NotADirectory { .. }), "{err}");

    let err = FlushScheduler::new(SchedulerConfig::new([tmp.path()]).data_workers(0)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "data_workers of 0 is below the minimum of 1"
    );
    let err = FlushScheduler::new(SchedulerConfig::new([tmp.path()]).tail_workers(0)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tail_workers of 0 is below the minimum of 1"
    );

    let err =
        FlushScheduler::new(SchedulerConfig::new(Vec::<std::path::PathBuf>::new())).unwrap_err();
    assert!(matches!(err, Error::NoDirectories));

    let err = FlushScheduler::new(SchedulerConfig::new([tmp.path(), tmp.path()])).unwrap_err();
    assert!(matches!(err, Error::DuplicateDirectory { .. }));
}
