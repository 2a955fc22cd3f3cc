//! The log's files go through the file layer of `Config::fs`: on a
//! simulated machine crash (`PowerLossFs`) every entry acknowledged in
//! batch mode is replayed (the log's directory included, when the log
//! created it), and when the Nth sync fails the log stops
//! (every later add fails, naming the cause) and keeps everything it
//! acknowledged before.

mod common;

use std::path::Path;
use std::sync::Arc;

use commitlog::{CommitLog, CorruptionPolicy, Error};
use common::{config, row};
use fs::{Crash, FaultError, FaultFs, FaultRule, FsHandle, Op, PowerLossFs};

fn replayed(fs: &FsHandle, dir: &Path) -> Vec<String> {
    let mut c = config(CorruptionPolicy::Stop);
    c.fs = fs.clone();
    let mut keys = Vec::new();
    let (log, _) = CommitLog::open(dir, c, |_, m, _| {
        keys.push(String::from_utf8_lossy(m.key().key().as_bytes()).into_owned());
    })
    .unwrap();
    log.close().unwrap();
    keys
}

#[test]
fn every_acknowledged_entry_survives_a_machine_crash() {
    let disk = Arc::new(PowerLossFs::new());
    let fs = FsHandle::new(disk.clone());
    // The log creates its directory itself, and must make that durable
    // too (it did not: the crash took the directory, and every entry).
    let dir = Path::new("/var/log");
    let mut c = config(CorruptionPolicy::Stop);
    c.fs = fs.clone();
    let (log, _) = CommitLog::open(dir, c, |_, _, _| {}).unwrap();
    let mut acked = Vec::new();
    for i in 0..20 {
        log.add(1, &row("k", i, 300)).unwrap();
        acked.push(format!("k{i}"));
    }
    // No close: the machine goes down with the log open.
    disk.crash(Crash::TearLastWrite);
    drop(log);
    let got = replayed(&fs, dir);
    for k in &acked {
        assert!(got.contains(k), "{k} lost: {got:?}");
    }
}

#[test]
fn a_failed_sync_stops_the_log_and_keeps_what_it_acknowledged() {
    let dir = Path::new("/log");
    let mut cases = 0;
    for n in 1..=8 {
        let disk = FaultFs::new(Arc::new(PowerLossFs::new()));
        let fs = FsHandle::new(Arc::new(disk.clone()));
        let mut c = config(CorruptionPolicy::Stop);
        c.fs = fs.clone();
        let (log, _) = CommitLog::open(dir, c, |_, _, _| {}).unwrap();
        disk.reset_counts();
        disk.add_rule(FaultRule::nth(Op::Sync, n, FaultError::Io))
            .unwrap();
        let mut acked = Vec::new();
        let mut failed = None;
        for i in 0..40 {
            match log.add(1, &row("k", i, 300)) {
                Ok(_) => {
                    assert!(
                        failed.is_none(),
                        "sync {n}: an add succeeded after the log failed"
                    );
                    acked.push(format!("k{i}"));
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        let e = failed.expect("the injected sync failure reached a writer");
        assert!(matches!(e, Error::Failed(_)), "sync {n}: {e}");
        let syncs = disk.calls(Op::Sync);
        assert!(log.close().is_err(), "sync {n}: close reports the failure");
        assert_eq!(
            disk.calls(Op::Sync),
            syncs,
            "sync {n}: no fsync is retried after a failed one"
        );
        disk.clear_rules();
        let got = replayed(&fs, dir);
        for k in &acked {
            assert!(got.contains(k), "sync {n}: {k} lost");
        }
        let _ = fs.read_dir(dir).unwrap();
        cases += 1;
    }
    assert_eq!(cases, 8);
}

#[test]
fn a_full_disk_is_disk_full_naming_the_directory_and_keeps_what_it_acknowledged() {
    let dir = Path::new("/log");
    // A full disk on the Nth write, on the Nth sync, and on every segment
    // creation (the log's first segments fill after a few dozen rows).
    let cases = [
        FaultRule::nth(Op::Write, 3, FaultError::NoSpace),
        FaultRule::nth(Op::Sync, 3, FaultError::NoSpace),
        FaultRule::every(Op::Create, FaultError::NoSpace),
    ];
    for rule in cases {
        let disk = FaultFs::new(Arc::new(PowerLossFs::new()));
        let fs = FsHandle::new(Arc::new(disk.clone()));
        let mut c = config(CorruptionPolicy::Stop);
        c.fs = fs.clone();
        let (log, _) = CommitLog::open(dir, c, |_, _, _| {}).unwrap();
        disk.reset_counts();
        disk.add_rule(rule.clone()).unwrap();
        let mut acked = Vec::new();
        let mut failed = None;
        for i in 0..200 {
            match log.add(1, &row("k", i, 300)) {
                Ok(_) if failed.is_none() => acked.push(format!("k{i}")),
                Ok(_) => panic!("{rule:?}: an add succeeded after the disk was full"),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        let e = failed.unwrap_or_else(|| panic!("{rule:?}: the full disk reached a writer"));
        assert!(e.is_disk_full(), "{rule:?}: {e}");
        match &e {
            Error::DiskFull { dir: named, source } => {
                assert_eq!(named, dir, "{rule:?}");
                assert_eq!(source.kind(), std::io::ErrorKind::StorageFull);
            }
            other => panic!("{rule:?}: {other}"),
        }
        let msg = e.to_string();
        assert!(msg.contains("/log") && msg.contains("full"), "{msg}");
        // Every later writer gets the same class, not the generic failure.
        assert!(log.add(1, &row("k", 0, 300)).unwrap_err().is_disk_full());
        let _ = log.close();
        disk.clear_rules();
        let got = replayed(&fs, dir);
        for k in &acked {
            assert!(got.contains(k), "{rule:?}: {k} lost");
        }
    }
}
