//! A directory whose attempt fails is skipped for its cooldown; the job is
//! retried in the next directory and later jobs avoid the failed one.

mod common;

use std::time::Duration;

use common::{SimJob, Step, fast_retry, log};
use flush_scheduler::{
    FlushContext, FlushError, FlushJob, FlushOutput, FlushScheduler, JobKey, SchedulerConfig,
};

#[test]
fn a_failed_directory_is_skipped_and_the_job_moves_on() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let paths: Vec<_> = dirs.iter().map(|d| d.path().to_path_buf()).collect();
    let config = SchedulerConfig::new(paths.clone())
        .workers(1)
        .retry(fast_retry())
        .directory_cooldown(Duration::from_secs(3600));
    let scheduler = FlushScheduler::new(config).unwrap();
    let log = log();

    // Job 0 goes to directory 0, whose device "fails" once.
    let first = scheduler
        .submit(Box::new(SimJob::new(0, &log).script([Step::FailDirectory])))
        .unwrap();
    let report = first.wait().unwrap();
    assert_eq!(report.attempts, 2);
    assert_eq!(report.dir, paths[1], "retried in the next directory");

    for id in 1..=4 {
        let dir = scheduler
            .submit(Box::new(SimJob::new(id, &log)))
            .unwrap()
            .wait()
            .unwrap()
            .dir;
        assert_ne!(
            dir, paths[0],
            "the failed directory is skipped during its cooldown"
        );
    }
    let m = scheduler.metrics();
    assert_eq!(m.directories[0].failures, 1);
    assert!(m.directories[0].cooling_down);
    assert_eq!(m.directories[0].attempts, 1);
    assert!(
        matches!(m.last_error, Some(FlushError::DirectoryFailed { ref path, .. }) if *path == paths[0])
    );
    scheduler.shutdown();
}

/// Writes a real file, blaming the directory for I/O errors.
struct FileJob(u64);

impl FlushJob for FileJob {
    fn key(&self) -> JobKey {
        JobKey::new(self.0)
    }

    fn run(&mut self, ctx: &FlushContext<'_>) -> Result<FlushOutput, FlushError> {
        let path = ctx.dir().join(format!("{}.db", self.0));
        std::fs::write(&path, b"data").map_err(|e| FlushError::directory_failed(ctx.dir(), e))?;
        ctx.report_written(4);
        Ok(FlushOutput {
            bytes_written: 4,
            files: vec![path],
        })
    }
}

#[test]
fn a_directory_removed_after_startup_fails_and_is_skipped() {
    let root = tempfile::tempdir().unwrap();
    let doomed = root.path().join("doomed");
    let healthy = root.path().join("healthy");
    std::fs::create_dir(&doomed).unwrap();
    std::fs::create_dir(&healthy).unwrap();
    let config = SchedulerConfig::new([&doomed, &healthy])
        .workers(1)
        .retry(fast_retry())
        .directory_cooldown(Duration::from_secs(3600));
    let scheduler = FlushScheduler::new(config).unwrap();
    std::fs::remove_dir(&doomed).unwrap();

    for id in 0..3 {
        let report = scheduler
            .submit(Box::new(FileJob(id)))
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(report.dir, healthy);
        assert!(report.output.files[0].exists());
    }
    let m = scheduler.metrics();
    assert_eq!((m.failed_attempts, m.retries, m.completed), (1, 1, 3));
    assert_eq!(m.directories[0].failures, 1);
    scheduler.shutdown();
}
