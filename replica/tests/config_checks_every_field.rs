//! `DatabaseConfig`'s checks: defaults are valid, every bad field is
//! refused naming the field and what would be accepted, device models are
//! checked against the directories, commit-log modes parse, cache sizes
//! leave the dirty budgets in the pool.

use std::path::{Path, PathBuf};
use std::time::Duration;

use replica::*;

#[test]
fn defaults_are_valid_and_flush_to_the_data_dirs() {
    let c = DatabaseConfig::new("/d");
    c.validate().unwrap();
    assert_eq!(c.effective_flush_dirs(), &[PathBuf::from("/d")]);
    assert_eq!(c.flush_policy, FlushPolicy::LargestAtSoftLimit);
    assert!(c.devices.is_empty());
    assert_eq!(c.all_dirs(), vec![Path::new("/d")]);
}

#[test]
fn flush_dirs_replace_the_data_dirs_for_flushes() {
    let mut c = DatabaseConfig::new("/d");
    c.flush_dirs = vec!["/f1".into(), "/d".into()];
    c.validate().unwrap();
    assert_eq!(c.effective_flush_dirs().len(), 2);
    assert_eq!(
        c.all_dirs(),
        vec![Path::new("/d"), Path::new("/f1")],
        "a flush dir that is also a data dir is listed once"
    );
}

#[test]
fn bad_fields_name_the_field_and_the_limit() {
    let base = DatabaseConfig::new("/d");
    type Change = Box<dyn Fn(&mut DatabaseConfig)>;
    let cases: Vec<(Change, &str, &str)> = vec![
        (
            Box::new(|c| c.data_dirs.clear()),
            "data_dirs",
            "at least one",
        ),
        (
            Box::new(|c| c.data_dirs.push("/d".into())),
            "data_dirs",
            "once",
        ),
        (
            Box::new(|c| c.data_dirs.push("".into())),
            "data_dirs",
            "non-empty",
        ),
        (
            Box::new(|c| c.flush_dirs = vec!["/f".into(), "/f".into()]),
            "flush_dirs",
            "once",
        ),
        (
            Box::new(|c| c.dirty_memory_budget = 1000),
            "dirty_memory_budget",
            "1048576",
        ),
        (
            Box::new(|c| c.system_dirty_memory_budget = 0),
            "system_dirty_memory_budget",
            "1048576",
        ),
        (
            Box::new(|c| c.soft_limit_ratio = 0.75),
            "soft-limit ratio",
            "0.5",
        ),
        (
            Box::new(|c| c.soft_limit_ratio = f64::NAN),
            "soft-limit ratio",
            "0.5",
        ),
        (
            Box::new(|c| c.cache_size = CacheSize::Bytes(4096)),
            "cache_size",
            "1048576",
        ),
    ];
    for (change, name, limit) in cases {
        let mut c = base.clone();
        change(&mut c);
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains(name) && e.contains(limit), "{e}");
    }
}

#[test]
fn device_models_are_checked_against_the_directories() {
    let mut base = DatabaseConfig::new("/d");
    base.flush_dirs = vec!["/f".into()];
    let mut good = DeviceModel::default();
    good.add_device("disk", 100 << 20)
        .add_device("flash", 1)
        .place("/d", "disk")
        .place("/f", "flash")
        .place(base.commitlog_dir(), "flash");
    let mut c = base.clone();
    c.devices = good.clone();
    c.validate().unwrap();
    assert_eq!(c.devices.device_of(Path::new("/f")), Some("flash"));
    assert_eq!(c.devices.device_of(Path::new("/x")), None);
    assert_eq!(c.commitlog_dir(), Path::new("/d/replica.commitlog"));

    type Change = Box<dyn Fn(&mut DeviceModel)>;
    let cases: Vec<(Change, &[&str])> = vec![
        (
            Box::new(|m| {
                m.place("/d", "tape");
            }),
            &["/d on unknown device tape", "disk, flash"],
        ),
        (
            Box::new(|m| {
                m.add_device("zero", 0);
            }),
            &["device zero=0", "at least 1 byte per second"],
        ),
        (
            Box::new(|m| {
                m.add_device("disk", 5);
            }),
            &["device disk defined twice", "each device named once"],
        ),
        (
            Box::new(|m| {
                m.add_device("", 5);
            }),
            &["device name []", "1 to 64 bytes"],
        ),
        (
            Box::new(|m| {
                m.place("/f", "disk");
            }),
            &[
                "/f on devices flash and disk",
                "each directory on one device",
            ],
        ),
        (
            Box::new(|m| {
                m.place("/elsewhere", "disk");
            }),
            &["/elsewhere on device", "/d, /f, /d/replica.commitlog"],
        ),
    ];
    for (change, expected) in cases {
        let mut c = base.clone();
        c.devices = good.clone();
        change(&mut c.devices);
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("devices"), "{e}");
        for part in expected {
            assert!(e.contains(part), "{e} lacks {part}");
        }
    }
    // Without a commit log its directory is no directory of the
    // database; a model with no devices cannot place anything.
    let mut c = base.clone();
    c.commitlog = CommitLogMode::Off;
    c.devices = good;
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .contains("replica.commitlog")
    );
    let mut c = base;
    c.devices.place("/d", "disk");
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("there is none"), "{e}");
}

#[test]
fn commitlog_modes_parse_and_bad_ones_are_named() {
    assert_eq!(CommitLogMode::parse("off").unwrap(), CommitLogMode::Off);
    assert_eq!(
        CommitLogMode::parse("periodic").unwrap(),
        CommitLogMode::Periodic(DEFAULT_COMMITLOG_SYNC_PERIOD)
    );
    assert_eq!(
        CommitLogMode::parse("batch").unwrap(),
        CommitLogMode::Batch(Duration::ZERO)
    );
    assert_eq!(
        CommitLogMode::parse("batch:2ms").unwrap(),
        CommitLogMode::Batch(Duration::from_millis(2))
    );
    for bad in ["", "on", "off:1s", "batch:soon"] {
        let e = CommitLogMode::parse(bad).unwrap_err().to_string();
        assert!(e.contains("--commitlog") && e.contains("periodic"), "{e}");
    }
    let mut c = DatabaseConfig::new("/d");
    c.commitlog = CommitLogMode::Periodic(Duration::ZERO);
    assert!(c.validate().unwrap_err().to_string().contains("commitlog"));
}

#[test]
fn cache_sizes_leave_the_dirty_budgets_in_the_pool() {
    let budgets = 266 << 20;
    assert_eq!(
        CacheSize::Off.pool_and_cache(budgets),
        (budgets * 2, None),
        "no cache: the pool as before"
    );
    assert_eq!(
        CacheSize::Auto.pool_and_cache(budgets),
        (budgets * 2, Some(budgets))
    );
    // Small budgets: the 64 MiB floor, the rest for the cache.
    assert_eq!(
        CacheSize::Auto.pool_and_cache(12 << 20),
        (64 << 20, Some(52 << 20))
    );
    // An explicit size grows the pool to hold it beside the budgets.
    assert_eq!(
        CacheSize::Bytes(1 << 30).pool_and_cache(budgets),
        (budgets + (1 << 30), Some(1 << 30))
    );
    assert_eq!(
        CacheSize::Bytes(8 << 20).pool_and_cache(budgets),
        (budgets * 2, Some(8 << 20))
    );
}

#[test]
fn bad_flush_policies_name_the_field_and_the_limit() {
    let per_memtable = |max_memtable_fraction, max_concurrent_flushes| {
        let mut c = DatabaseConfig::new("/d");
        c.flush_policy = FlushPolicy::PerMemtableLimit {
            max_memtable_fraction,
            max_concurrent_flushes,
        };
        c.validate().map_err(|e| e.to_string())
    };
    per_memtable(0.11, 4).unwrap();
    per_memtable(1.0, MAX_CONCURRENT_FLUSHES).unwrap();
    for (fraction, flushes, limit) in [
        (0.0, 4, "(0, 1]"),
        (1.5, 4, "(0, 1]"),
        (f64::NAN, 4, "(0, 1]"),
        (0.11, 0, "at least 1"),
        (
            0.11,
            MAX_CONCURRENT_FLUSHES + 1,
            "at most 64 concurrent flushes",
        ),
        (0.11, usize::MAX, "at most 64 concurrent flushes"),
    ] {
        let e = per_memtable(fraction, flushes).unwrap_err();
        assert!(e.contains("flush_policy") && e.contains(limit), "{e}");
    }
}
