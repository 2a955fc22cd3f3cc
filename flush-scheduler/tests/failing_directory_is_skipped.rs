//! A job whose directory fails is completed with that error once (the
//! scheduler does not retry: the owner does), and the directory is skipped
//! for its cool-down by the jobs that follow.

mod common;

use std::time::Duration;

use common::{SimJob, Step, journal};
use flush_scheduler::{Error, FlushContext, FlushJob, FlushScheduler, Phase, SchedulerConfig};

#[test]
fn a_failed_directory_fails_its_job_once_and_is_skipped() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let paths: Vec<_> = dirs.iter().map(|d| d.path().to_path_buf()).collect();
    let config = SchedulerConfig::new(paths.clone()).directory_cooldown(Duration::from_secs(3600));
    let scheduler = FlushScheduler::new(config).unwrap();
    let journal = journal();

    // Job 0 goes to directory 0, whose device "fails" in the tail.
    let mut first = SimJob::new(0, &journal);
    first.tail = Step::FailDirectory;
    scheduler.submit(first.boxed()).unwrap();
    journal.wait_for(|j| j.outcome(0).is_some());
    journal.get(|j| {
        let outcome = j.outcome(0).unwrap();
        assert!(
            matches!(outcome, Err(Error::DirectoryFailed { path, .. }) if *path == paths[0]),
            "{outcome:?}"
        );
        assert_eq!(j.count(Phase::Data), 1, "not retried by the scheduler");
    });

    for id in 1..=4 {
        scheduler.submit(SimJob::new(id, &journal).boxed()).unwrap();
        journal.wait_for(|j| j.outcome(id).is_some());
    }
    journal.get(|j| {
        for (id, _, dir) in &j.started[2..] {
            assert_ne!(*dir, paths[0], "job {id} used the cooling directory");
        }
    });
    let m = scheduler.metrics();
    assert_eq!(m.directories[0].failures, 1);
    assert!(m.directories[0].cooling_down);
    assert_eq!(m.directories[0].jobs, 1);
    assert_eq!((m.completed, m.failed), (4, 1));
    assert!(scheduler.shutdown().is_empty());
}

/// Writes a real file, blaming the directory for I/O errors.
struct FileJob {
    id: u64,
    done: std::sync::mpsc::Sender<(u64, Result<(), Error>)>,
}

impl FlushJob for FileJob {
    fn write_data(&mut self, ctx: &FlushContext<'_>) -> Result<(), Error> {
        std::fs::write(ctx.dir().join(format!("{}.db", self.id)), b"data")
            .map_err(|e| Error::directory_failed(ctx.dir(), e))
    }

    fn complete(self: Box<Self>, outcome: Result<(), Error>) {
        self.done.send((self.id, outcome)).unwrap();
    }
}

#[test]
fn a_directory_removed_after_startup_fails_and_is_skipped() {
    let root = tempfile::tempdir().unwrap();
    let doomed = root.path().join("doomed");
    let healthy = root.path().join("healthy");
    std::fs::create_dir(&doomed).unwrap();
    std::fs::create_dir(&healthy).unwrap();
    let config =
        SchedulerConfig::new([&doomed, &healthy]).directory_cooldown(Duration::from_secs(3600));
    let scheduler = FlushScheduler::new(config).unwrap();
    std::fs::remove_dir(&doomed).unwrap();

    let (done, outcomes) = std::sync::mpsc::channel();
    for id in 0..4 {
        let job = FileJob {
            id,
            done: done.clone(),
        };
        scheduler.submit(Box::new(job)).unwrap();
        let (got, outcome) = outcomes.recv_timeout(common::PATIENCE).unwrap();
        assert_eq!(got, id);
        // Only the first job meets the removed directory.
        assert_eq!(outcome.is_err(), id == 0, "{outcome:?}");
    }
    for id in 1..4 {
        assert!(healthy.join(format!("{id}.db")).exists());
    }
    let m = scheduler.metrics();
    assert_eq!((m.failed, m.completed), (1, 3));
    assert_eq!(m.directories[0].failures, 1);
    assert!(scheduler.shutdown().is_empty());
}
