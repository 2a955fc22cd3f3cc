//! Crash safety with a real process: a child runs a database with the
//! commit log in batch mode and reports each acknowledged write to the
//! parent, which kills it with SIGKILL at random moments, 20 times; after
//! each kill, reopening replays the log: every acknowledged write is
//! readable, and every sstable verifies.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use replica::{CommitLogMode, Database, DatabaseConfig, Error, TableSchema};

const CHILD_ENV: &str = "REPLICA_CRASH_CHILD_DIR";
const KILLS: u32 = 20;

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
    for i in 0.. {
        db.apply("t", &write(run, i)).unwrap();
        writeln!(out, "{i}").unwrap();
        out.flush().unwrap();
        if i % 37 == 36 {
            db.flush("t").unwrap();
        }
    }
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

        let db = Database::open(config(dir.path())).unwrap();
        for &(r, i) in &acknowledged {
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
        let listed = sstable::SstableDirectory::open(dir.path().join("t")).unwrap();
        for &generation in listed.generations() {
            sstable::Sstable::open(dir.path().join("t"), generation)
                .unwrap()
                .verify()
                .unwrap();
        }
    }
    assert!(acknowledged.len() >= KILLS as usize);
}
