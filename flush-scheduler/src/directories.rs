//! Flush directories: validation, round-robin choice, skipping failed ones.
//!
//! Policy: directories are used round-robin. A directory whose job
//! failed with [`Error::DirectoryFailed`] is skipped until its
//! cooldown ends; then it is tried again, a success clears the failure and
//! another failure starts a new cooldown. If every directory is cooling
//! down, the one whose cooldown ends first is used anyway, so flushing
//! never stops for want of a directory (the owner's retry back-off paces it).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs::{EntryKind, FileSystem, OpenOptions};

use crate::error::Error;
use crate::metrics::DirectoryMetrics;
use crate::sync::PlainArc;

/// Checks that every directory exists, is a directory and accepts a new
/// file (a probe file created with `create_new` and removed at once).
pub(crate) fn validate(fs: &dyn FileSystem, dirs: &[PathBuf]) -> Result<(), Error> {
    for path in dirs {
        let kind = fs.kind(path).and_then(|k| {
            k.ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{}: no such directory", path.display()),
                )
            })
        });
        let kind = kind.map_err(|e| Error::DirectoryInaccessible {
            path: path.clone(),
            source: PlainArc::new(e),
        })?;
        if kind != EntryKind::Dir {
            return Err(Error::NotADirectory { path: path.clone() });
        }
        probe_writable(fs, path).map_err(|e| Error::DirectoryNotWritable {
            path: path.clone(),
            source: PlainArc::new(e),
        })?;
    }
    Ok(())
}

/// How many probe names are tried before giving up on a directory that
/// already holds files of those names.
const PROBE_ATTEMPTS: u32 = 16;

/// Creates a fresh file in `dir` (never opening an existing one) and
/// removes it: the directory accepts new files.
fn probe_writable(fs: &dyn FileSystem, dir: &Path) -> std::io::Result<()> {
    static NEXT: crate::sync::plain::AtomicU64 = crate::sync::plain::AtomicU64::new(0);
    let mut last = None;
    for _ in 0..PROBE_ATTEMPTS {
        let n = NEXT.fetch_add(1, crate::sync::plain::Ordering::Relaxed);
        let probe = dir.join(format!(".flush-scheduler-probe-{}-{n}", std::process::id()));
        match fs.open(&probe, &OpenOptions::create_new()) {
            Ok(file) => {
                drop(file);
                return fs.remove_file(&probe);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no probe file name was free")))
}

#[derive(Debug)]
struct Directory {
    path: PathBuf,
    /// When its last failure happened, if no success followed. It is
    /// skipped while less than the cool-down has passed since: comparing
    /// the elapsed time, rather than adding the cool-down to an instant,
    /// works for any cool-down, `Duration::MAX` included.
    failed_at: Option<Instant>,
    jobs: u64,
    completed: u64,
    failures: u64,
}

/// The configured flush directories and their health.
#[derive(Debug)]
pub(crate) struct Directories {
    dirs: Vec<Directory>,
    next: usize,
    cooldown: Duration,
}

impl Directories {
    /// `paths` must be non-empty (checked by the configuration).
    pub(crate) fn new(paths: Vec<PathBuf>, cooldown: Duration) -> Self {
        let dirs = paths
            .into_iter()
            .map(|path| Directory {
                path,
                failed_at: None,
                jobs: 0,
                completed: 0,
                failures: 0,
            })
            .collect();
        Self {
            dirs,
            next: 0,
            cooldown,
        }
    }

    /// Whether directory `index` is in its cool-down at `now`.
    fn cooling(&self, index: usize, now: Instant) -> bool {
        self.dirs[index]
            .failed_at
            .is_some_and(|t| now.saturating_duration_since(t) < self.cooldown)
    }

    /// Chooses the directory for a job starting at `now`.
    pub(crate) fn pick(&mut self, now: Instant) -> usize {
        let n = self.dirs.len();
        let healthy = (0..n)
            .map(|i| (self.next + i) % n)
            .find(|&i| !self.cooling(i, now));
        // Every directory cools down for the same time, so the one that
        // failed first recovers first.
        let chosen =
            healthy.unwrap_or_else(|| (0..n).min_by_key(|&i| self.dirs[i].failed_at).unwrap_or(0));
        self.next = (chosen + 1) % n;
        self.dirs[chosen].jobs += 1;
        chosen
    }

    /// The path of directory `index`.
    pub(crate) fn path(&self, index: usize) -> &Path {
        &self.dirs[index].path
    }

    /// A job in directory `index` succeeded: the directory is healthy.
    pub(crate) fn succeeded(&mut self, index: usize) {
        let d = &mut self.dirs[index];
        d.completed += 1;
        d.failed_at = None;
    }

    /// A job in directory `index` failed because of the directory.
    pub(crate) fn failed(&mut self, index: usize, now: Instant) {
        let d = &mut self.dirs[index];
        d.failures += 1;
        d.failed_at = Some(now);
    }

    /// Per-directory metrics as of `now`.
    pub(crate) fn metrics(&self, now: Instant) -> Vec<DirectoryMetrics> {
        self.dirs
            .iter()
            .enumerate()
            .map(|(i, d)| DirectoryMetrics {
                path: d.path.clone(),
                jobs: d.jobs,
                completed: d.completed,
                failures: d.failures,
                cooling_down: self.cooling(i, now),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn dirs(n: usize) -> Directories {
        Directories::new(
            (0..n).map(|i| PathBuf::from(format!("/d{i}"))).collect(),
            Duration::from_secs(30),
        )
    }

    #[test]
    fn round_robin_skips_cooling_directories_until_the_cooldown_ends() {
        let mut d = dirs(3);
        let t0 = Instant::now();
        let picks: Vec<_> = (0..4).map(|_| d.pick(t0)).collect();
        assert_eq!(picks, [0, 1, 2, 0]);
        d.failed(1, t0);
        let picks: Vec<_> = (0..4).map(|_| d.pick(t0)).collect();
        assert_eq!(picks, [2, 0, 2, 0]);
        let later = t0 + Duration::from_secs(31);
        assert_eq!(d.pick(later), 1);
        let m = d.metrics(t0);
        assert!(m[1].cooling_down && !m[0].cooling_down);
        assert_eq!(m[1].failures, 1);
        assert!(!d.metrics(later)[1].cooling_down);
    }

    #[test]
    fn success_clears_a_failure_and_all_failed_picks_the_earliest_recovery() {
        let mut d = dirs(2);
        let t0 = Instant::now();
        d.failed(0, t0 + Duration::from_secs(5));
        d.failed(1, t0);
        assert_eq!(d.pick(t0), 1, "directory 1 recovers first");
        d.succeeded(1);
        assert_eq!(d.pick(t0), 1, "directory 1 is healthy again; 0 is skipped");
        assert_eq!(d.metrics(t0)[1].completed, 1);
    }

    #[test]
    fn validation_names_the_bad_directory() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let missing = tmp.path().join("missing");
        let err = validate(&fs::RealFs, &[tmp.path().to_path_buf(), missing.clone()]).unwrap_err();
        assert!(matches!(&err, Error::DirectoryInaccessible { path, .. } if *path == missing));
        assert!(err.to_string().contains("missing"));
        let file = tmp.path().join("file");
        std::fs::write(&file, b"x").expect("write");
        assert!(matches!(
            validate(&fs::RealFs, std::slice::from_ref(&file)),
            Err(Error::NotADirectory { .. })
        ));
        assert!(validate(&fs::RealFs, &[tmp.path().to_path_buf()]).is_ok());
    }

    #[test]
    fn the_writability_probe_leaves_nothing_behind() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(tmp.path().join("keep"), b"x").expect("write");
        for _ in 0..3 {
            validate(&fs::RealFs, &[tmp.path().to_path_buf()]).expect("writable");
        }
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .expect("readable")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["keep"]);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Pick,
        Fail(usize),
        Succeed(usize),
        Advance(u64),
    }

    fn op(n: usize) -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => Just(Op::Pick),
            2 => (0..n).prop_map(Op::Fail),
            1 => (0..n).prop_map(Op::Succeed),
            1 => (0u64..40).prop_map(Op::Advance),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Against a model that states the policy directly: a pick takes
        /// the first healthy directory at or after the one following the
        /// previous pick; if none is healthy, the one recovering first.
        #[test]
        fn picks_follow_the_round_robin_and_cooldown_policy(
            (n, ops) in (1usize..5).prop_flat_map(|n| (Just(n), prop::collection::vec(op(n), 1..60)))
        ) {
            let cooldown = Duration::from_secs(30);
            let mut d = Directories::new((0..n).map(|i| PathBuf::from(format!("/d{i}"))).collect(), cooldown);
            let t0 = Instant::now();
            let mut now = t0;
            let mut failed_until: Vec<Option<Instant>> = vec![None; n];
            let mut last: Option<usize> = None;
            for op in ops {
                match op {
                    Op::Advance(s) => now += Duration::from_secs(s),
                    Op::Fail(i) => {
                        d.failed(i, now);
                        failed_until[i] = Some(now + cooldown);
                    }
                    Op::Succeed(i) => {
                        d.succeeded(i);
                        failed_until[i] = None;
                    }
                    Op::Pick => {
                        let start = last.map_or(0, |l| (l + 1) % n);
                        let healthy = |i: usize| failed_until[i].is_none_or(|t| t <= now);
                        let expected = (0..n)
                            .map(|k| (start + k) % n)
                            .find(|&i| healthy(i))
                            .unwrap_or_else(|| (0..n).min_by_key(|&i| failed_until[i]).unwrap());
                        let got = d.pick(now);
                        prop_assert_eq!(got, expected);
                        last = Some(got);
                    }
                }
            }
            let m = d.metrics(now);
            for (i, dm) in m.iter().enumerate() {
                prop_assert_eq!(dm.cooling_down, failed_until[i].is_some_and(|t| t > now));
            }
        }
    }
}
