//! Crash safety with a real process: a child runs a database with the
//! commit log in batch mode and reports each acknowledged write to the
//! parent, which kills it with SIGKILL at random moments, 20 times; after
//! each kill, reopening replays the log: every acknowledged write is
//! readable, and every sstable verifies.
//!
//! The second test aims its kills: a child with several writer threads
//! and a flushing thread stops each flush for 2 ms between installing the
//! fresh memtable and sealing the old one (the test hook), tells the
//! parent, and is killed right there, 10 times (issue 18's lost write
//! lived in that window).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use replica::{CommitLogMode, Database, DatabaseConfig, Error, HookPoint, TableSchema};

const CHILD_ENV: &str = "REPLICA_CRASH_CHILD_DIR";
const SEAL_CHILD_ENV: &str = "REPLICA_CRASH_SEAL_CHILD_DIR";
const KILLS: u32 = 20;
const KILLS_AT_SEAL: u32 = 10;
const SEAL_WRITERS: u64 = 4;

fn config(dir: &Path) -> DatabaseConfig {
    let mut config = DatabaseConfig::new(dir);
    config.commitlog = CommitLogMode::Batch(Duration::ZERO);
    config.dirty_memory_budget = 4 << 20;
    // Small segments: kills land around segment switches and while the
    // next segment is being zero-filled ahead of need, and each run does
    // not zero-fill 32 MiB.
    config.commitlog_segment_size = 1 << 20;
    config
}

fn write(run: u32, i: u64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("r{run:02}-{i:06}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![b'v'; 512], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

/// The child: writes until killed, printing each acknowledged write, with
/// an explicit flush now and then so sstables and log retirement are in
/// play when the kill comes.
fn child(dir: &Path, run: u32) {
    let db = Database::open(config(dir)).unwrap();
    match db.create_table(TableSchema::new("t").unwrap()) {
        Ok(()) | Err(Error::TableExists { .. }) => {}
        Err(e) => panic!("{e}"),
    }
    let mut out = std::io::stdout().lock();
    // End libtest's `test <name> ... ` line (printed single-threaded):
    // the first acknowledgement gets a line of its own.
    writeln!(out).unwrap();
    for i in 0.. {
        db.apply("t", &write(run, i)).unwrap();
        writeln!(out, "{i}").unwrap();
        out.flush().unwrap();
        if i % 37 == 36 {
            db.flush("t").unwrap();
        }
    }
}

/// Every acknowledged write readable after reopen, every sstable verifies.
fn check_after_kill(dir: &Path, acknowledged: &[(u32, u64)], run: u32) {
    let db = Database::open(config(dir)).unwrap();
    for &(r, i) in acknowledged {
        let key = write(r, i).key().clone();
        assert!(
            db.get("t", &key, ClusteringRange::full())
                .unwrap()
                .is_some(),
            "acknowledged write {r}/{i} lost after kill {run}"
        );
    }
    db.close().unwrap();
    drop(db);
    let listed = sstable::SstableDirectory::open(dir.join("t")).unwrap();
    for &generation in listed.generations() {
        sstable::Sstable::open(dir.join("t"), generation)
            .unwrap()
            .verify()
            .unwrap();
    }
}

/// The aimed child: `SEAL_WRITERS` writer threads (write `i` of writer `w`
/// is number `i * SEAL_WRITERS + w`) and a thread that flushes now and
/// then; each flush stops 2 ms between installing the fresh memtable and
/// sealing the old one, after printing `F`.
fn seal_child(dir: &Path, run: u32) {
    let db = std::sync::Arc::new(Database::open(config(dir)).unwrap());
    match db.create_table(TableSchema::new("t").unwrap()) {
        Ok(()) | Err(Error::TableExists { .. }) => {}
        Err(e) => panic!("{e}"),
    }
    db.set_test_hook(Some(std::sync::Arc::new(|point| {
        if point == HookPoint::FlushInstalledFresh {
            let mut out = std::io::stdout().lock();
            writeln!(out, "F").unwrap();
            out.flush().unwrap();
            drop(out);
            std::thread::sleep(Duration::from_millis(2));
        }
    })));
    // End libtest's `test <name> ... ` line, as in `child`.
    println!();
    for w in 0..SEAL_WRITERS {
        let db = std::sync::Arc::clone(&db);
        std::thread::spawn(move || {
            for i in 0.. {
                let n = i * SEAL_WRITERS + w;
                db.apply("t", &write(run, n)).unwrap();
                let mut out = std::io::stdout().lock();
                writeln!(out, "{n}").unwrap();
                out.flush().unwrap();
            }
        });
    }
    loop {
        std::thread::sleep(Duration::from_millis(3));
        db.flush("t").unwrap();
    }
}

#[test]
fn kills_between_installing_a_fresh_memtable_and_sealing_lose_nothing() {
    if let Ok(dir) = std::env::var(SEAL_CHILD_ENV) {
        let run = std::env::var("REPLICA_CRASH_RUN").unwrap().parse().unwrap();
        seal_child(Path::new(&dir), run);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SmallRng::seed_from_u64(18);
    let mut acknowledged: Vec<(u32, u64)> = Vec::new();
    let mut windows = 0;
    for run in 0..KILLS_AT_SEAL {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "kills_between_installing_a_fresh_memtable_and_sealing_lose_nothing",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(SEAL_CHILD_ENV, dir.path())
            .env("REPLICA_CRASH_RUN", run.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        // Killed inside the window of the k-th flush.
        let kill_at = rng.gen_range(1..6u32);
        let mut seen = 0;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        while seen < kill_at {
            match lines.next() {
                Some(Ok(line)) if line.trim() == "F" => seen += 1,
                Some(Ok(line)) => {
                    if let Ok(i) = line.trim().parse::<u64>() {
                        acknowledged.push((run, i));
                    }
                }
                other => panic!("child {run} stopped early: {other:?}"),
            }
        }
        child.kill().unwrap(); // SIGKILL, while the flush sleeps in the window
        child.wait().unwrap();
        windows += 1;
        for line in lines.map_while(Result::ok) {
            if let Ok(i) = line.trim().parse::<u64>() {
                acknowledged.push((run, i));
            }
        }
        check_after_kill(dir.path(), &acknowledged, run);
    }
    assert_eq!(windows, KILLS_AT_SEAL);
    assert!(acknowledged.len() >= KILLS_AT_SEAL as usize);
}

#[test]
fn every_acknowledged_write_survives_sigkill() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        let run = std::env::var("REPLICA_CRASH_RUN").unwrap().parse().unwrap();
        child(Path::new(&dir), run);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SmallRng::seed_from_u64(14);
    let mut acknowledged: Vec<(u32, u64)> = Vec::new();
    for run in 0..KILLS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "every_acknowledged_write_survives_sigkill",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir.path())
            .env("REPLICA_CRASH_RUN", run.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let kill_after = rng.gen_range(1..100u64);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut acked = 0;
        while acked < kill_after {
            match lines.next() {
                Some(Ok(line)) => {
                    // The test harness prints its own lines too.
                    if let Ok(i) = line.trim().parse::<u64>() {
                        // In order from 0: none lost to the harness.
                        assert_eq!(i, acked, "child {run}: {line}");
                        acknowledged.push((run, i));
                        acked += 1;
                    }
                }
                other => panic!("child {run} stopped early: {other:?}"),
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Acknowledgements still in the pipe count too.
        for line in lines.map_while(Result::ok) {
            if let Ok(i) = line.trim().parse::<u64>() {
                acknowledged.push((run, i));
            }
        }

        check_after_kill(dir.path(), &acknowledged, run);
    }
    assert!(acknowledged.len() >= KILLS as usize);
}
