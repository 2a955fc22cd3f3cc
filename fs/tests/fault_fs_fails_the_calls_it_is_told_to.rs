//! `FaultFs` fails exactly the calls its rules name (the Nth of a kind, or
//! every call on a matching path) with the chosen error, counts every
//! call, and refuses rules that cannot work; over the real file system
//! and over the power-loss one.

use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;

use fs::{
    Crash, Error, FaultError, FaultFs, FaultRule, FileSystem, Op, OpenOptions, PowerLossFs, RealFs,
};

#[test]
fn the_nth_call_of_a_kind_fails_once_with_the_chosen_error() {
    let dir = tempfile::tempdir().unwrap();
    let disk = FaultFs::new(Arc::new(RealFs));
    disk.add_rule(FaultRule::nth(Op::Sync, 2, FaultError::Io))
        .unwrap();
    let path = dir.path().join("f");
    let f = disk.open(&path, &OpenOptions::create_new()).unwrap();
    f.write_all_at(b"abc", 0).unwrap();
    f.sync_data().unwrap();
    let e = f.sync_data().unwrap_err();
    assert!(e.to_string().contains("injected fault on Sync"), "{e}");
    assert_eq!(e.raw_os_error(), None, "wrapped, with the path");
    f.sync_all().unwrap();
    assert_eq!(disk.calls(Op::Sync), 3);
    assert_eq!(disk.calls(Op::Create), 1);
    assert_eq!(disk.injected(), 1);
    disk.reset_counts();
    assert_eq!(disk.calls(Op::Sync), 0);
}

#[test]
fn a_path_rule_fails_every_matching_call_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let disk = FaultFs::new(Arc::new(RealFs));
    disk.add_rule(FaultRule::every(Op::Create, FaultError::NoSpace).on_paths("Data.db"))
        .unwrap();
    for _ in 0..2 {
        let e = disk
            .open(
                &dir.path().join("sst-1-Data.db"),
                &OpenOptions::create_new(),
            )
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::StorageFull);
    }
    disk.open(
        &dir.path().join("sst-1-Index.db"),
        &OpenOptions::create_new(),
    )
    .unwrap();
    assert!(
        !dir.path().join("sst-1-Data.db").exists(),
        "nothing created"
    );
    disk.clear_rules();
    disk.open(
        &dir.path().join("sst-1-Data.db"),
        &OpenOptions::create_new(),
    )
    .unwrap();
    assert_eq!(disk.injected(), 2);
}

#[test]
fn a_short_write_writes_half_then_fails() {
    let power = PowerLossFs::new();
    let disk = FaultFs::new(Arc::new(power.clone()));
    disk.add_rule(FaultRule::nth(Op::Write, 1, FaultError::ShortWrite))
        .unwrap();
    let f = disk
        .open(Path::new("/seg"), &OpenOptions::create_new())
        .unwrap();
    let e = f.write_all_at(&[7; 100], 0).unwrap_err();
    assert!(e.to_string().contains("os error 5"), "EIO: {e}");
    assert_eq!(f.len().unwrap(), 50, "half of it reached the file");
    // Nothing of it was synced: a crash loses it, and the file (its
    // directory was never synced).
    power.crash(Crash::LoseUnsynced);
    assert!(disk.kind(Path::new("/seg")).unwrap().is_none());
}

#[test]
fn every_kind_of_call_is_counted_and_can_fail() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let run = |disk: &FaultFs| -> std::io::Result<()> {
        disk.create_dir(&base.join("d"))?;
        disk.create_dir_all(&base.join("d/e"))?;
        let f = disk.open(&base.join("d/f"), &OpenOptions::create_new())?;
        f.write_all_at(b"x", 0)?;
        f.set_len(4)?;
        f.sync_data()?;
        let mut b = [0; 4];
        f.read_exact_at(&mut b, 0)?;
        drop(f);
        disk.open(&base.join("d/f"), &OpenOptions::read())?;
        disk.sync_dir(&base.join("d"))?;
        disk.read_dir(&base.join("d"))?;
        disk.hard_link(&base.join("d/f"), &base.join("d/h"))?;
        disk.remove_file(&base.join("d/h"))?;
        disk.rename(&base.join("d/f"), &base.join("d/g"))?;
        disk.remove_file(&base.join("d/g"))?;
        disk.remove_dir(&base.join("d/e"))?;
        disk.remove_dir(&base.join("d"))?;
        Ok(())
    };
    let counting = FaultFs::new(Arc::new(RealFs));
    run(&counting).unwrap();
    for op in Op::ALL {
        assert!(counting.calls(op) >= 1, "{op:?} not counted");
        for n in 1..=counting.calls(op) {
            let _ = std::fs::remove_dir_all(base.join("d"));
            let disk = FaultFs::new(Arc::new(RealFs));
            disk.add_rule(FaultRule::nth(op, n, FaultError::Io))
                .unwrap();
            assert!(run(&disk).is_err(), "{op:?} call {n} did not fail");
            assert_eq!(disk.injected(), 1);
        }
    }
    assert!(counting.free_space(base).unwrap() > 0);
}

#[test]
fn rules_that_cannot_work_are_refused() {
    let disk = FaultFs::new(Arc::new(PowerLossFs::new()));
    let e = disk
        .add_rule(FaultRule::nth(Op::Write, 0, FaultError::Io))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidRule { .. }), "{e}");
    assert!(e.to_string().contains("counted from 1"), "{e}");
    let e = disk
        .add_rule(FaultRule::every(Op::Write, FaultError::Io).on_paths(""))
        .unwrap_err();
    assert!(e.to_string().contains("empty path pattern"), "{e}");
    // Nothing was added: writes go through.
    let f = disk
        .open(Path::new("/x"), &OpenOptions::create_new())
        .unwrap();
    f.write_all_at(b"ok", 0).unwrap();
    assert_eq!(disk.injected(), 0);
}

#[test]
fn a_disk_that_dies_fails_every_later_call_until_cleared() {
    let disk = FaultFs::new(Arc::new(PowerLossFs::new()));
    disk.add_rule(FaultRule::dies_at(Op::Sync, 2, FaultError::Io))
        .unwrap();
    let f = disk
        .open(Path::new("/a"), &OpenOptions::create_new())
        .unwrap();
    f.write_all_at(b"one", 0).unwrap();
    f.sync_data().unwrap();
    assert!(!disk.is_dead());
    f.sync_data().unwrap_err();
    assert!(disk.is_dead());
    f.write_all_at(b"two", 3).unwrap_err();
    disk.read_dir(Path::new("/")).unwrap_err();
    disk.clear_rules();
    assert!(!disk.is_dead());
    f.write_all_at(b"two", 3).unwrap();
}
