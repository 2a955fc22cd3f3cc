//! The power-loss sweep (issue 37): the fault sweep's workload runs on an
//! in-memory file system that simulates a machine crash (`PowerLossFs`),
//! with the commit log in batch mode. It runs once to count the sync
//! points (file and directory syncs); then, for every one (in memory, the
//! whole sweep takes about a second), the machine dies at that sync: the sync and every file call after it fail, and everything not
//! yet synced is thrown away (the last unsynced write of each file torn
//! at a sector boundary, renames and creations of unsynced directories
//! undone). After a reopen on what is left: every write acknowledged is
//! there, no deleted row returns, no row of the dropped incarnation
//! returns, and every committed sstable is whole (it verifies).
//!
//! The counts of cases are printed:
//! `cargo test -p replmem-replica --test power_loss_sweep -- --nocapture`.

mod sweep;

use std::path::Path;
use std::sync::Arc;

use fs::{Crash, FaultError, FaultFs, FaultRule, FsHandle, Op, PowerLossFs};
use replica::Database;
use sweep::{Acked, check, config, sample, workload};

/// Runs the workload on a fresh in-memory disk whose machine dies at
/// `rule` (if any), crashes it, and checks what is left; returns the
/// fault layer (for its counts), whether the machine died, and the
/// check's verdict.
fn run(rule: Option<FaultRule>) -> (FaultFs, bool, Result<(), String>) {
    let power = Arc::new(PowerLossFs::new());
    let disk = FaultFs::new(power.clone());
    if let Some(rule) = rule {
        disk.add_rule(rule).unwrap();
    }
    let dir = Path::new("/db");
    let mut acked = Acked::default();
    if let Ok(db) = Database::open(config(dir, FsHandle::new(Arc::new(disk.clone())))) {
        workload(&db, &mut acked);
        // `crash` stops the threads without flushing: the machine is
        // gone.
        db.crash();
    }
    let died = disk.is_dead();
    power.crash(Crash::TearLastWrite);
    disk.clear_rules();
    let verdict = check(&FsHandle::new(power), dir, &acked);
    (disk, died, verdict)
}

#[test]
fn a_machine_crash_at_any_sync_keeps_every_acknowledged_write() {
    let (counting, _, verdict) = run(None);
    verdict.expect("the workload, crashed at its end");
    let mut broken = Vec::new();
    let (mut cases, mut died) = (0, 0);
    for op in [Op::Sync, Op::SyncDir] {
        let calls = counting.calls(op);
        let picked = sample(calls, calls, true);
        for &n in &picked {
            let (_, dead, verdict) = run(Some(FaultRule::dies_at(op, n, FaultError::Io)));
            cases += 1;
            died += usize::from(dead);
            if let Err(e) = verdict {
                broken.push(format!("crash at {op:?} {n} of {calls}: {e}"));
            }
        }
        println!("{op:?}: {calls} sync points, crashed at {}", picked.len());
    }
    println!(
        "{cases} crashes ({died} reached their sync point), {} broken",
        broken.len()
    );
    assert!(
        died * 10 >= cases * 9,
        "only {died} of {cases} crashes happened"
    );
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
