//! Crash safety with a real process: a child appends in batch mode from
//! four threads and reports each acknowledged position over a pipe; the
//! parent kills it with SIGKILL after a random number of acknowledgements
//! (zero included: a kill during open and replay), 24 times on the same
//! directory. After each kill, replay yields every acknowledged entry, at
//! its acknowledged position, with its exact content, in position order,
//! and reports no damage (a torn tail is allowed: it is what a kill leaves).
//!
//! Each child first reopens the log, replaying what the previous one left,
//! and discards it as if the replayed memtables had been flushed, so the
//! directory keeps turning over segments.
//!
//! This file has its own `main` (`harness = false`): run with
//! `COMMITLOG_CRASH_CHILD=<dir>` it is the child.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use commitlog::{CommitLog, Config, ReplayPosition, SyncMode, replay};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use rand::{Rng, SeedableRng};

const CHILD_ENV: &str = "COMMITLOG_CRASH_CHILD";
const ROUNDS: u32 = 24;
const THREADS: u64 = 4;

fn config() -> Config {
    let mut c = Config::default();
    c.segment_size = 64 << 10;
    c.total_size_limit = 256 << 20;
    c.sync = SyncMode::Batch(Duration::ZERO);
    c
}

/// The mutation number `i` of round `round`: its content is derived from
/// the two, so the parent can check it byte for byte.
fn entry(round: u32, i: u64) -> (u64, Mutation) {
    let size = ((i.wrapping_mul(2_654_435_761) >> 7) % 3000) as usize;
    let m = Mutation::builder(DecoratedKey::from_bytes(format!("r{round}-{i}")).expect("key"))
        .cell(
            "c",
            0,
            Cell::live(vec![i as u8; size], Timestamp::from_micros(i as i64)),
        )
        .build()
        .expect("valid mutation");
    (i % 3, m)
}

fn child(dir: &Path, round: u32) {
    let mut newest: HashMap<u64, ReplayPosition> = HashMap::new();
    let (log, _) = CommitLog::open(dir, config(), |table, _, pos| {
        let e = newest.entry(table).or_insert(pos);
        *e = (*e).max(pos);
    })
    .expect("open");
    // As if the replayed memtables had been flushed.
    for (table, pos) in newest {
        log.discard_completed(table, pos);
    }
    let log = Arc::new(log);
    let next = Arc::new(AtomicU64::new(0));
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (log, next, out) = (Arc::clone(&log), Arc::clone(&next), Arc::clone(&out));
            std::thread::spawn(move || {
                // Far more than the parent waits for: it kills the child
                // long before.
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= 10_000_000 {
                        return;
                    }
                    let (table, m) = entry(round, i);
                    let pos = log.add(table, &m).expect("add");
                    let mut o = out.lock().expect("stdout lock");
                    writeln!(o, "{i} {} {}", pos.segment, pos.offset).expect("pipe");
                    o.flush().expect("pipe");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("writer thread");
    }
}

fn parent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().r#gen());
    println!("crash_safety: seed {seed} (set CRASH_SEED to repeat)");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let exe = std::env::current_exe().expect("test binary path");
    let mut total_acked = 0usize;
    let mut torn = 0usize;
    for round in 0..ROUNDS {
        let kill_after: usize = if round % 6 == 0 {
            0
        } else {
            rng.gen_range(1..300)
        };
        let mut child = Command::new(&exe)
            .env(CHILD_ENV, dir.path())
            .env("CRASH_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let mut acked: Vec<(u64, ReplayPosition)> = Vec::new();
        let parse = |l: String| -> (u64, ReplayPosition) {
            let f: Vec<u64> = l.split(' ').map(|x| x.parse().expect("number")).collect();
            (f[0], ReplayPosition::new(f[1], f[2] as u32))
        };
        while acked.len() < kill_after {
            match lines.next() {
                Some(l) => acked.push(parse(l.expect("read pipe"))),
                None => panic!("round {round}: child exited before being killed"),
            }
        }
        child.kill().expect("SIGKILL");
        let status = child.wait().expect("wait");
        assert!(!status.success(), "round {round}: the child was killed");
        // Acknowledgements already in the pipe were made before the kill.
        for l in lines {
            acked.push(parse(l.expect("read pipe")));
        }
        total_acked += acked.len();

        let mut got: Vec<(u64, Mutation, ReplayPosition)> = Vec::new();
        let report = replay(dir.path(), |t, m, p| got.push((t, m, p))).expect("replay");
        assert_eq!(report.corrupt_segments, 0, "round {round}: {report:?}");
        assert!(report.damage.is_empty(), "round {round}: {report:?}");
        torn += report.torn.len();
        assert!(
            got.windows(2).all(|w| w[0].2 < w[1].2),
            "round {round}: replay out of position order"
        );
        let by_pos: BTreeMap<ReplayPosition, (u64, &Mutation)> =
            got.iter().map(|(t, m, p)| (*p, (*t, m))).collect();
        for (i, pos) in &acked {
            let (table, m) = entry(round, *i);
            let Some(&(t, found)) = by_pos.get(pos) else {
                panic!(
                    "round {round}: acknowledged entry {i} at {pos} is missing after the kill ({report:?})"
                );
            };
            assert_eq!(
                (t, found),
                (table, &m),
                "round {round}: entry {i} at {pos} differs"
            );
        }
    }
    println!(
        "crash_safety: {ROUNDS} kills, {total_acked} acknowledged entries all replayed, {torn} torn tails, no damage"
    );
}

fn main() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        let round = std::env::var("CRASH_ROUND")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(0);
        child(Path::new(&dir), round);
        return;
    }
    test_support::single_test_main("crash_safety", parent);
}
