//! Bad configurations are rejected at construction with an error naming
//! the problem.

use std::time::Duration;

use flush_scheduler::{FlushError, FlushScheduler, RetryPolicy, SchedulerConfig};

#[test]
fn bad_configurations_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let err = FlushScheduler::new(SchedulerConfig::new([&missing])).unwrap_err();
    assert!(matches!(err, FlushError::DirectoryInaccessible { .. }));
    assert!(err.to_string().contains("nope"), "{err}");

    let file = tmp.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let err = FlushScheduler::new(SchedulerConfig::new([&file])).unwrap_err();
    assert!(matches!(err, FlushError::NotADirectory { .. }), "{err}");

    let err = FlushScheduler::new(SchedulerConfig::new([tmp.path()]).workers(0)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "worker count of 0 is below the minimum of 1"
    );

    let err =
        FlushScheduler::new(SchedulerConfig::new(Vec::<std::path::PathBuf>::new())).unwrap_err();
    assert!(matches!(err, FlushError::NoDirectories));

    let err = FlushScheduler::new(SchedulerConfig::new([tmp.path(), tmp.path()])).unwrap_err();
    assert!(matches!(err, FlushError::DuplicateDirectory { .. }));

    let retry = RetryPolicy {
        initial_backoff: Duration::from_secs(20),
        ..RetryPolicy::default()
    };
    let err = FlushScheduler::new(SchedulerConfig::new([tmp.path()]).retry(retry)).unwrap_err();
    assert!(matches!(err, FlushError::InvalidBackoff { .. }), "{err}");
}
