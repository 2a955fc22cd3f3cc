//! Where a `replica-stress` run keeps its files, and the database
//! configuration its options describe.
//!
//! Without `--data-dir` a run writes to a fresh temporary directory,
//! removed when the run's [`RunDirs`] is dropped; given directories are
//! kept. With `--compare` each policy gets its own subdirectory (named
//! after the policy), so the two runs never share files. A run in a
//! temporary directory whose `--flush-dir-device` names another device
//! than its data directories' gets a flush directory of its own there
//! (`<policy>-flush`), since one directory cannot be on two devices.

use std::fs;
use std::path::{Path, PathBuf};

use replica::{CommitLogMode, DatabaseConfig, DeviceModel, DirectIo};

use crate::error::{Error, io_err};
use crate::options::{FlushPolicyChoice, StressOptions};

/// The directories of one run.
#[derive(Debug)]
pub struct RunDirs {
    temporary: Option<tempfile::TempDir>,
    data_dirs: Vec<PathBuf>,
    flush_dirs: Vec<PathBuf>,
}

/// A given directory is created if missing, but only in a directory that
/// exists: a mistyped parent is an error, not a tree of new directories.
fn check_parent(name: &'static str, dir: &Path) -> Result<(), Error> {
    if dir.exists() {
        return Ok(());
    }
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() && !parent.exists() => {
            Err(Error::InvalidOption {
                name,
                value: dir.display().to_string(),
                expected: format!(
                    "an existing directory, or a new one in an existing directory \
                     ({} does not exist)",
                    parent.display()
                ),
            })
        }
        _ => Ok(()),
    }
}

impl RunDirs {
    /// Creates the directories of the run of `policy`.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for a `--data-dir` or `--flush-dir` that
    /// does not exist in a directory that does not either; [`Error::Io`]
    /// if a directory cannot be created.
    pub fn prepare(options: &StressOptions, policy: FlushPolicyChoice) -> Result<Self, Error> {
        let per_run = |d: &PathBuf| {
            if options.compare {
                d.join(policy.name())
            } else {
                d.clone()
            }
        };
        for (name, given) in [
            ("--data-dir", &options.data_dir),
            ("--flush-dir", &options.flush_dir),
        ] {
            for d in given {
                check_parent(name, d)?;
            }
        }
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
        let mut flush_dirs: Vec<PathBuf> = options.flush_dir.iter().map(per_run).collect();
        let (data_device, flush_device, _) = options.placements();
        if let Some(t) = &temporary
            && flush_dirs.is_empty()
            && flush_device.is_some()
            && flush_device != data_device
        {
            flush_dirs.push(t.path().join(format!("{}-flush", policy.name())));
        }
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

    /// The device model of the options for these directories: each
    /// `--device`, the data directories on `--data-dir-device`, the flush
    /// directories (when they are not the data directories) on
    /// `--flush-dir-device`, the commit log on `--commitlog-device`.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming `--flush-dir-device` when it names
    /// another device than the data directories' while the flushes go to
    /// the data directories (no `--flush-dir`).
    pub fn device_model(
        &self,
        options: &StressOptions,
        config: &DatabaseConfig,
    ) -> Result<DeviceModel, Error> {
        let mut model = DeviceModel::default();
        for d in options.device_args() {
            model.add_device(d.name, d.bandwidth);
        }
        let (data, flush, log) = options.placements();
        let shared = self.flush_dirs.is_empty();
        let data = match (shared, data, &flush) {
            // Flushes go to the data directories: they are on one device.
            (true, None, Some(f)) => Some(f.clone()),
            (true, Some(d), Some(f)) if d != *f => {
                return Err(Error::InvalidOption {
                    name: "--flush-dir-device",
                    value: f.clone(),
                    expected: format!(
                        "the data directories' device ({d}): without --flush-dir the \
                         flushes go to the data directories"
                    ),
                });
            }
            (_, data, _) => data,
        };
        if let Some(d) = &data {
            for dir in &self.data_dirs {
                model.place(dir.clone(), d.clone());
            }
        }
        if let Some(f) = &flush {
            for dir in self
                .flush_dirs
                .iter()
                .filter(|f| !self.data_dirs.contains(f))
            {
                model.place(dir.clone(), f.clone());
            }
        }
        if let Some(l) = log
            && options.commitlog != CommitLogMode::Off
        {
            model.place(config.commitlog_dir(), l);
        }
        Ok(model)
    }

    /// The database configuration of the run of `policy` in these
    /// directories: `--budget` (or the machine's), `--soft-limit-ratio`,
    /// the device model, `--commitlog`, defaults for the rest.
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
        config.devices = self.device_model(options, &config)?;
        config.sstable_writer_options.bytes_per_sync = options.sstable_bytes_per_sync;
        config.sstable_writer_options.direct_io = options.direct_io;
        config.commitlog_direct_io = if options.direct_io {
            options.commitlog_direct_io
        } else {
            DirectIo::Never
        };
        config.prefault_memory = options.prefault;
        config.commitlog = options.commitlog;
        config.commitlog_on_corruption = options.commitlog_on_corruption;
        config.commitlog_periodic_ack = options.periodic_ack;
        config.cache_size = options.cache()?;
        config.compaction.strategy = options.compaction.clone();
        config.compaction.flush_throttle = options.flush_throttle;
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
        let o = options(&["--budget=64MiB"]);
        let dirs = RunDirs::prepare(&o, FlushPolicyChoice::SoftLimit).unwrap();
        let temp = dirs.temporary().unwrap().to_path_buf();
        assert_eq!(dirs.data_dirs(), [temp.join("soft-limit")]);
        assert!(dirs.data_dirs()[0].is_dir());
        let c = dirs
            .database_config(&o, FlushPolicyChoice::SoftLimit)
            .unwrap();
        assert_eq!(c.dirty_memory_budget, 64 << 20);
        assert!(c.devices.is_empty());
        assert_eq!(c.sstable_writer_options.bytes_per_sync, 1 << 20);
        assert!(c.sstable_writer_options.direct_io && c.commitlog_direct_io == DirectIo::Auto);
        assert!(c.prefault_memory);
        assert_eq!(c.flush_policy, replica::FlushPolicy::LargestAtSoftLimit);
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
            "--direct-io=off",
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
            assert!(
                !c.sstable_writer_options.direct_io && c.commitlog_direct_io == DirectIo::Never
            );
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
    fn devices_place_the_run_directories() {
        // A flush device apart from the data device, in a temporary
        // directory: the run gets a flush directory of its own.
        let o = options(&[
            "--device=data=100MiB",
            "--device=flash=100MiB",
            "--device=log=100MiB",
            "--data-dir-device=data",
            "--flush-dir-device=flash",
            "--commitlog-device=log",
        ]);
        let dirs = RunDirs::prepare(&o, FlushPolicyChoice::SoftLimit).unwrap();
        let temp = dirs.temporary().unwrap().to_path_buf();
        assert_eq!(dirs.flush_dirs(), [temp.join("soft-limit-flush")]);
        let c = dirs
            .database_config(&o, FlushPolicyChoice::SoftLimit)
            .unwrap();
        let m = &c.devices;
        assert_eq!(m.devices.len(), 3);
        assert_eq!(m.device_of(&dirs.data_dirs()[0]), Some("data"));
        assert_eq!(m.device_of(&dirs.flush_dirs()[0]), Some("flash"));
        assert_eq!(m.device_of(&c.commitlog_dir()), Some("log"));

        // Data and flushes on one device, the log on another.
        let o = options(&[
            "--device=data=100MiB",
            "--device=log=100MiB",
            "--data-dir-device=data",
            "--commitlog-device=log",
        ]);
        let dirs = RunDirs::prepare(&o, FlushPolicyChoice::SoftLimit).unwrap();
        assert!(dirs.flush_dirs().is_empty());
        let c = dirs
            .database_config(&o, FlushPolicyChoice::SoftLimit)
            .unwrap();
        assert_eq!(c.devices.placements.len(), 2);
        assert_eq!(c.devices.device_of(&c.commitlog_dir()), Some("log"));

        // --flush-bandwidth alone, in a temporary directory: the flushes
        // get a directory of their own on the `flush` device; the data
        // directory (and the log in it) is on no modelled device.
        let o = options(&["--flush-bandwidth=8MiB"]);
        let dirs = RunDirs::prepare(&o, FlushPolicyChoice::SoftLimit).unwrap();
        let c = dirs
            .database_config(&o, FlushPolicyChoice::SoftLimit)
            .unwrap();
        assert_eq!(c.devices.devices[0].bandwidth, 8 << 20);
        assert_eq!(c.devices.device_of(&dirs.flush_dirs()[0]), Some("flush"));
        assert_eq!(c.devices.device_of(&dirs.data_dirs()[0]), None);
        // With given data directories and no --flush-dir, the flushes go
        // to the data directories: those are on the `flush` device.
        let base = tempfile::tempdir().unwrap();
        let d = base.path().join("d");
        let o = options(&[
            &format!("--data-dir={}", d.display()),
            "--flush-bandwidth=8MiB",
        ]);
        let dirs = RunDirs::prepare(&o, FlushPolicyChoice::SoftLimit).unwrap();
        let c = dirs
            .database_config(&o, FlushPolicyChoice::SoftLimit)
            .unwrap();
        assert_eq!(c.devices.device_of(&d), Some("flush"));

        // Given data directories without --flush-dir: the flushes cannot
        // be on another device than the data.
        let base = tempfile::tempdir().unwrap();
        let o = options(&[
            &format!("--data-dir={}", base.path().join("d").display()),
            "--device=data=100MiB",
            "--device=flash=100MiB",
            "--data-dir-device=data",
            "--flush-dir-device=flash",
        ]);
        let dirs = RunDirs::prepare(&o, FlushPolicyChoice::SoftLimit).unwrap();
        let e = dirs
            .database_config(&o, FlushPolicyChoice::SoftLimit)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--flush-dir-device") && e.contains("--flush-dir"),
            "{e}"
        );
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
        // A missing parent is refused, and nothing is created.
        let deep = base.path().join("no").join("such").join("dd");
        let o = options(&[&format!("--data-dir={}", deep.display())]);
        let e = RunDirs::prepare(&o, FlushPolicyChoice::SoftLimit)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--data-dir") && e.contains("does not exist"),
            "{e}"
        );
        assert!(!base.path().join("no").exists());
        // A new directory in an existing one is created.
        let fresh = base.path().join("fresh");
        let o = options(&[&format!("--flush-dir={}", fresh.display())]);
        drop(RunDirs::prepare(&o, FlushPolicyChoice::SoftLimit).unwrap());
        assert!(fresh.is_dir());
        let o = options(&["--soft-limit-ratio=0.9"]);
        let dirs = RunDirs::prepare(&o, FlushPolicyChoice::SoftLimit).unwrap();
        let e = dirs
            .database_config(&o, FlushPolicyChoice::SoftLimit)
            .unwrap_err()
            .to_string();
        assert!(e.contains("soft-limit ratio"), "{e}");
    }
}
