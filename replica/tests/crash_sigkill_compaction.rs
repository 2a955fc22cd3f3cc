//! Crash safety of compaction with a real process: a child writes,
//! overwrites and deletes (commit log in batch mode, gc_grace zero, small
//! size tiers so compactions run all the time) and reports each
//! acknowledged operation; the parent kills it with SIGKILL at random
//! moments (20 times), then once after a job stopped at each step of its
//! replacement (the `set_compaction_stop_after` hook). After each kill,
//! the reopened database reads every acknowledged write, nothing deleted
//! comes back, no compaction file is left once it closes, and every
//! sstable verifies. Twice: with the data directory only, and with a
//! separate flush directory, whose flushed sstables are compaction inputs
//! while the outputs (and transaction files) are in the data directory.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Mutation, Timestamp, Tombstone,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use replica::compaction::{SizeTieredOptions, StrategyConfig};
use replica::{CommitLogMode, Database, DatabaseConfig, Error, TableSchema};

const CHILD_ENV: &str = "REPLICA_COMPACTION_CRASH_DIR";
/// Set (to anything) for the layout with a separate flush directory.
const FLUSH_DIR_ENV: &str = "REPLICA_COMPACTION_CRASH_FLUSH_DIR";
const KILLS: u32 = 20;
const STEPS: usize = 8;
const KEYS: u64 = 40;

/// The table's directories: the data directory's, and the flush
/// directory's when there is one.
fn table_dirs(dir: &Path, flush_dir: bool) -> Vec<std::path::PathBuf> {
    if flush_dir {
        vec![dir.join("data").join("t"), dir.join("flush").join("t")]
    } else {
        vec![dir.join("t")]
    }
}

fn config(dir: &Path, flush_dir: bool) -> DatabaseConfig {
    let mut config = if flush_dir {
        let mut c = DatabaseConfig::new(dir.join("data"));
        c.flush_dirs = vec![dir.join("flush")];
        c
    } else {
        DatabaseConfig::new(dir)
    };
    config.commitlog = CommitLogMode::Batch(Duration::ZERO);
    config.dirty_memory_budget = 4 << 20;
    config.commitlog_segment_size = 1 << 20;
    let mut stcs = SizeTieredOptions::default();
    stcs.min_sstable_size = 1;
    config.compaction.strategy = StrategyConfig::SizeTiered(stcs);
    config.compaction.gc_grace = Duration::ZERO;
    config
}

fn key(op: u64) -> DecoratedKey {
    DecoratedKey::from_bytes(format!("k{:03}", op % KEYS)).unwrap()
}

fn is_delete(op: u64) -> bool {
    op % 5 == 3
}

/// Operation `op` (its timestamp is `op`, increasing across runs).
fn operation(op: u64) -> Mutation {
    let ts = Timestamp::from_micros(op as i64 + 1);
    let b = Mutation::builder(key(op));
    let b = if is_delete(op) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as u32;
        b.row_tombstone("r", Tombstone::new(ts, now))
    } else {
        b.cell("r", 0, Cell::live(op.to_string(), ts))
    };
    b.build().unwrap()
}

/// The child: operations from `first` on until killed, printing each
/// acknowledged one, flushing every 25; with `step`, every job stops after
/// that step, and `X` is printed once the first one did.
fn child(dir: &Path, first: u64, step: Option<usize>, flush_dir: bool) {
    let db = Database::open(config(dir, flush_dir)).unwrap();
    match db.create_table(TableSchema::new("t").unwrap()) {
        Ok(()) | Err(Error::TableExists { .. }) => {}
        Err(e) => panic!("{e}"),
    }
    db.set_compaction_stop_after(step);
    let mut out = std::io::stdout().lock();
    // Single-threaded, libtest has printed `test <name> ... ` without a
    // newline: end that line, so the first acknowledgement is a line of
    // its own.
    writeln!(out).unwrap();
    let mut told = false;
    for op in first.. {
        db.apply("t", &operation(op)).unwrap();
        writeln!(out, "{op}").unwrap();
        out.flush().unwrap();
        if op % 25 == 24 {
            db.flush("t").unwrap();
            if step.is_some() && !told && db.metrics().compaction.jobs_failed > 0 {
                writeln!(out, "X").unwrap();
                out.flush().unwrap();
                told = true;
            }
        }
    }
}

/// The live value of key `k`'s row, if any.
fn live(db: &Database, k: &DecoratedKey) -> Option<String> {
    let m = db.get("t", k, ClusteringRange::full()).unwrap()?;
    let row = m.row(&ClusteringKey::new("r").unwrap())?;
    match row.cells.get(&0)? {
        Cell::Live { value, .. } => Some(String::from_utf8(value.to_vec()).unwrap()),
        _ => None,
    }
}

/// After a kill: each key holds what its last acknowledged operation left
/// (or what the one operation in flight left, if it was that key's). An
/// operation in flight that the database kept is durable from then on:
/// it joins `acknowledged`, so that a later run that does not write its
/// key again expects it (the next run's operations are numbered past it).
fn check_after_kill(dir: &Path, flush_dir: bool, acknowledged: &mut Vec<u64>, what: &str) {
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    for &op in acknowledged.iter() {
        last.insert(op % KEYS, op);
    }
    let in_flight = acknowledged.iter().max().map_or(0, |m| m + 1);
    let db = Database::open(config(dir, flush_dir)).unwrap();
    let mut kept_in_flight = false;
    for (&k, &op) in &last {
        let got = live(&db, &key(op));
        let want = (!is_delete(op)).then(|| op.to_string());
        let alt = (!is_delete(in_flight)).then(|| in_flight.to_string());
        if got != want {
            assert!(
                in_flight % KEYS == k && got == alt,
                "{what}: key {k}: got {got:?}, last acknowledged op {op} left {want:?}"
            );
            kept_in_flight = true;
        }
    }
    if kept_in_flight {
        acknowledged.push(in_flight);
    }
    db.close().unwrap();
    drop(db);
    for table_dir in table_dirs(dir, flush_dir) {
        for entry in std::fs::read_dir(&table_dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            assert!(
                !name.starts_with("compaction-") && !name.contains("tmp"),
                "{what}: {name} left behind in {}",
                table_dir.display()
            );
        }
        let listed = sstable::SstableDirectory::open(&table_dir).unwrap();
        for &g in listed.generations() {
            sstable::Sstable::open(&table_dir, g)
                .unwrap()
                .verify()
                .unwrap();
        }
    }
}

/// Runs one child from `first`, killing it once `kill_when` says so; adds
/// its acknowledged operations.
fn run_child(
    test: &str,
    dir: &Path,
    flush_dir: bool,
    first: u64,
    step: Option<usize>,
    acknowledged: &mut Vec<u64>,
    mut kill_when: impl FnMut(&str, usize) -> bool,
) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        // One test thread, so the harness's line prefix is always there
        // (the child must not lose its first acknowledgement to it).
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .env("REPLICA_CRASH_FIRST", first.to_string())
        .stdout(Stdio::piped());
    if let Some(step) = step {
        command.env("REPLICA_CRASH_STEP", step.to_string());
    }
    if flush_dir {
        command.env(FLUSH_DIR_ENV, "1");
    }
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acked = 0;
    loop {
        match lines.next() {
            Some(Ok(line)) => {
                let line = line.trim().to_owned();
                if let Ok(op) = line.parse::<u64>() {
                    // Acknowledgements come in order from `first`: none
                    // was lost to the harness's output.
                    assert_eq!(op, first + acked as u64, "child from {first}: {line}");
                    acknowledged.push(op);
                    acked += 1;
                }
                if kill_when(&line, acked) {
                    break;
                }
            }
            other => panic!("child from {first} stopped early: {other:?}"),
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    for line in lines.map_while(Result::ok) {
        if let Ok(op) = line.trim().parse::<u64>() {
            acknowledged.push(op);
        }
    }
}

/// The child's part when this process is one; false in the parent.
fn run_as_child() -> bool {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return false;
    };
    let first = std::env::var("REPLICA_CRASH_FIRST")
        .unwrap()
        .parse()
        .unwrap();
    let step = std::env::var("REPLICA_CRASH_STEP")
        .ok()
        .map(|s| s.parse().unwrap());
    let flush_dir = std::env::var_os(FLUSH_DIR_ENV).is_some();
    child(Path::new(&dir), first, step, flush_dir);
    true
}

/// The parent: 20 random kills, then a kill after a job stopped at each
/// step; `test` is the test function's name (the child runs it again).
fn kill_children(test: &str, flush_dir: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SmallRng::seed_from_u64(20);
    let mut acknowledged: Vec<u64> = Vec::new();
    let next = |acknowledged: &Vec<u64>| acknowledged.iter().max().map_or(0, |m| m + 2);
    for run in 0..KILLS {
        let kill_after = rng.gen_range(50..400usize);
        let first = next(&acknowledged);
        run_child(
            test,
            dir.path(),
            flush_dir,
            first,
            None,
            &mut acknowledged,
            |_, acked| acked >= kill_after,
        );
        check_after_kill(
            dir.path(),
            flush_dir,
            &mut acknowledged,
            &format!("kill {run}"),
        );
    }
    let mut cuts = 0;
    for step in 1..=STEPS {
        let first = next(&acknowledged);
        let mut cut = false;
        run_child(
            test,
            dir.path(),
            flush_dir,
            first,
            Some(step),
            &mut acknowledged,
            |line, acked| {
                cut |= line == "X";
                // A step past the last one a job has never cuts it.
                cut || acked >= 2000
            },
        );
        cuts += u32::from(cut);
        check_after_kill(
            dir.path(),
            flush_dir,
            &mut acknowledged,
            &format!("step {step}"),
        );
    }
    assert!(cuts >= 5, "the hook cut jobs at {cuts} steps of {STEPS}");
    assert!(acknowledged.len() >= KILLS as usize * 50);
    if flush_dir {
        // Compactions ran on the data directory: it holds sstables.
        let data = &table_dirs(dir.path(), true)[0];
        let listed = sstable::SstableDirectory::open(data).unwrap();
        assert!(
            !listed.generations().is_empty(),
            "no compaction output in the data directory"
        );
    }
}

#[test]
fn compactions_survive_sigkill() {
    if !run_as_child() {
        kill_children("compactions_survive_sigkill", false);
    }
}

#[test]
fn compactions_with_a_flush_directory_survive_sigkill() {
    if !run_as_child() {
        kill_children("compactions_with_a_flush_directory_survive_sigkill", true);
    }
}
