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
