//! Where a `replica-stress` run keeps its files, and the database
//! configuration its options describe.
//!
//! Without `--data-dir` a run writes to a fresh temporary directory,
//! removed when the run's [`RunDirs`] is dropped; given directories are
//! kept. With `--compare` each policy gets its own subdirectory (named
//! after the policy), so the two runs never share files.

use std::fs;
use std::path::{Path, PathBuf};

use crate::config::DatabaseConfig;
use crate::error::{Error, io_err};
use crate::stress::options::{FlushPolicyChoice, StressOptions};

/// The directories of one run.
#[derive(Debug)]
pub struct RunDirs {
    temporary: Option<tempfile::TempDir>,
    data_dirs: Vec<PathBuf>,
    flush_dirs: Vec<PathBuf>,
}

impl RunDirs {
    /// Creates the directories of the run of `policy`.
    ///
    /// # Errors
    /// [`Error::Io`] if a directory cannot be created.
    pub fn prepare(options: &StressOptions, policy: FlushPolicyChoice) -> Result<Self, Error> {
        let per_run = |d: &PathBuf| {
            if options.compare {
                d.join(policy.name())
            } else {
                d.clone()
            }
        };
        let (temporary, data_dirs) = if options.data_dir.is_empty() {
            let t = tempfile::Builder::new()
                .prefix("replica-stress-")
                .tempdir()
                .map_err(io_err("create temporary directory", std::env::temp_dir()))?;
            let data = vec![t.path().join(policy.name())];
            (Some(t), data)
        } else {
            (None, options.data_dir.iter().map(per_run).collect())
        };
        let flush_dirs: Vec<PathBuf> = options.flush_dir.iter().map(per_run).collect();
        for d in data_dirs.iter().chain(&flush_dirs) {
            fs::create_dir_all(d).map_err(io_err("create directory", d))?;
        }
        Ok(RunDirs {
            temporary,
            data_dirs,
            flush_dirs,
        })
    }

    /// The data directories.
    pub fn data_dirs(&self) -> &[PathBuf] {
        &self.data_dirs
    }

    /// The flush directories (empty: the data directories).
    pub fn flush_dirs(&self) -> &[PathBuf] {
        &self.flush_dirs
    }

    /// The temporary directory removed with `self`, if the data lives in
    /// one.
    pub fn temporary(&self) -> Option<&Path> {
        self.temporary.as_ref().map(tempfile::TempDir::path)
    }

    /// The database configuration of the run of `policy` in these
    /// directories: `--budget` (or the machine's), `--soft-limit-ratio`,
    /// `--flush-bandwidth`, `--commitlog`, defaults for the rest.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] if the configuration is not valid.
    pub fn database_config(
        &self,
        options: &StressOptions,
        policy: FlushPolicyChoice,
    ) -> Result<DatabaseConfig, Error> {
        let mut config = DatabaseConfig::new(self.data_dirs[0].clone());
        config.data_dirs = self.data_dirs.clone();
        config.flush_dirs = self.flush_dirs.clone();
        let budget = options.budget_or_machine();
        config.dirty_memory_budget = usize::try_from(budget).map_err(|_| Error::InvalidOption {
            name: "--budget",
            value: budget.to_string(),
            expected: format!("at most {} bytes on this machine", usize::MAX),
        })?;
        config.soft_limit_ratio = options.soft_limit_ratio;
        config.flush_policy = policy.policy();
        config.flush_bandwidth_limit = options.flush_bandwidth;
        config.sstable_writer_options.bytes_per_sync = options.sstable_bytes_per_sync;
        config.commitlog = options.commitlog;
        config.commitlog_on_corruption = options.commitlog_on_corruption;
        config.cache_size = options.cache()?;
        config.compaction.strategy = options.compaction.clone();
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn options(args: &[&str]) -> StressOptions {
        StressOptions::try_parse_from(std::iter::once("replica-stress").chain(args.iter().copied()))
            .unwrap()
    }

    #[test]
    fn without_data_dirs_the_run_uses_a_temporary_directory_removed_at_the_end() {
        let o = options(&["--budget=64MiB", "--flush-bandwidth=8MiB"]);
        let dirs = RunDirs::prepare(&o, FlushPolicyChoice::SoftLimit).unwrap();
        let temp = dirs.temporary().unwrap().to_path_buf();
        assert_eq!(dirs.data_dirs(), [temp.join("soft-limit")]);
        assert!(dirs.data_dirs()[0].is_dir());
        let c = dirs
            .database_config(&o, FlushPolicyChoice::SoftLimit)
            .unwrap();
        assert_eq!(c.dirty_memory_budget, 64 << 20);
        assert_eq!(c.flush_bandwidth_limit, Some(8 << 20));
        assert_eq!(c.sstable_writer_options.bytes_per_sync, 1 << 20);
        assert_eq!(c.flush_policy, crate::FlushPolicy::LargestAtSoftLimit);
        assert_eq!(c.effective_flush_dirs(), dirs.data_dirs());
        drop(dirs);
        assert!(!temp.exists());
    }

    #[test]
    fn given_dirs_are_kept_and_split_per_policy_when_comparing() {
        let base = tempfile::tempdir().unwrap();
        let data = base.path().join("data");
        let flush = base.path().join("flush");
        let o = options(&[
            "--compare",
            "--sstable-bytes-per-sync=0",
            &format!("--data-dir={}", data.display()),
            &format!("--flush-dir={}", flush.display()),
        ]);
        for policy in [FlushPolicyChoice::PerMemtable, FlushPolicyChoice::SoftLimit] {
            let dirs = RunDirs::prepare(&o, policy).unwrap();
            assert!(dirs.temporary().is_none());
            assert_eq!(dirs.data_dirs(), [data.join(policy.name())]);
            assert_eq!(dirs.flush_dirs(), [flush.join(policy.name())]);
            let c = dirs.database_config(&o, policy).unwrap();
            assert_eq!(c.flush_policy, policy.policy());
            assert_eq!(c.sstable_writer_options.bytes_per_sync, 0);
            assert_eq!(c.effective_flush_dirs(), dirs.flush_dirs());
            drop(dirs);
            assert!(
                data.join(policy.name()).is_dir(),
                "given directories are kept"
            );
        }
        let single = options(&[&format!("--data-dir={}", data.display())]);
        let dirs = RunDirs::prepare(&single, FlushPolicyChoice::SoftLimit).unwrap();
        assert_eq!(dirs.data_dirs(), std::slice::from_ref(&data));
    }

    #[test]
    fn unusable_directories_and_bad_configs_are_errors() {
        let base = tempfile::tempdir().unwrap();
        let file = base.path().join("file");
        fs::write(&file, b"x").unwrap();
        let o = options(&[&format!("--data-dir={}", file.join("d").display())]);
        let e = RunDirs::prepare(&o, FlushPolicyChoice::SoftLimit)
            .unwrap_err()
            .to_string();
        assert!(e.contains("create directory"), "{e}");
        let o = options(&["--soft-limit-ratio=0.9"]);
        let dirs = RunDirs::prepare(&o, FlushPolicyChoice::SoftLimit).unwrap();
        let e = dirs
            .database_config(&o, FlushPolicyChoice::SoftLimit)
            .unwrap_err()
            .to_string();
        assert!(e.contains("soft-limit ratio"), "{e}");
    }
}
