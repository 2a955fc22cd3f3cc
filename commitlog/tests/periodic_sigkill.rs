//! A process crash in periodic mode loses only the last few milliseconds,
//! and with `PeriodicAck::Written` nothing acknowledged: a child appends in
//! periodic mode from four threads under load (syncs every 100 ms) and
//! reports each acknowledged position with the wall-clock time of its
//! acknowledgement; the parent SIGKILLs it after a random time, replays,
//! and checks the entries, each with its exact content. Rounds alternate:
//!
//! * the defaults (`PeriodicAck::Buffered`, through the page cache):
//!   every entry acknowledged more than 20 ms before the kill is there
//!   (entries are handed to the OS within `Config::write_interval`, 2 ms
//!   by default, also while an fdatasync runs);
//! * `PeriodicAck::Written` with direct I/O: every acknowledged entry is
//!   there, whatever the disk's latency. (Buffered acknowledgements with
//!   direct I/O, the default until 2026-12-03, failed the 20 ms bound on a
//!   loaded CI machine: a direct write took up to 77 ms, and the entries
//!   appended meanwhile waited in the process.)
//!
//! This file has its own `main` (`harness = false`): run with
//! `COMMITLOG_PERIODIC_CHILD=<dir>` it is the child.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use commitlog::{CommitLog, Config, DirectIo, PeriodicAck, ReplayPosition, SyncMode, replay};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use rand::{Rng, SeedableRng};

const CHILD_ENV: &str = "COMMITLOG_PERIODIC_CHILD";
/// Set (to anything) for a child that acknowledges once written, with
/// direct I/O.
const WRITTEN_ENV: &str = "COMMITLOG_PERIODIC_WRITTEN";
const ROUNDS: u32 = 4;
const THREADS: u64 = 4;
/// With buffered acknowledgements, entries acknowledged longer than this
/// before the kill must survive it.
const BOUND: Duration = Duration::from_millis(20);

fn config(written: bool) -> Config {
    let mut c = Config::default();
    if written {
        c.periodic_ack = PeriodicAck::Written;
        c.direct_io = DirectIo::Always;
    }
    c.segment_size = 1 << 20;
    c.total_size_limit = 1 << 30;
    // Syncs every 100 ms, so that kills land during syncs too.
    c.sync = SyncMode::Periodic(Duration::from_millis(100));
    c
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_micros() as u64
}

/// Mutation number `i`: its content derives from `i`, so the parent can
/// check it byte for byte.
fn entry(i: u64) -> (u64, Mutation) {
    let size = 200 + ((i.wrapping_mul(2_654_435_761) >> 7) % 2000) as usize;
    let m = Mutation::builder(DecoratedKey::from_bytes(format!("p{i}")).expect("key"))
        .cell(
            "c",
            0,
            Cell::live(vec![i as u8; size], Timestamp::from_micros(i as i64)),
        )
        .build()
        .expect("valid mutation");
    (i % 3, m)
}

fn child(dir: &Path) {
    let (log, _) = CommitLog::open(
        dir,
        config(std::env::var_os(WRITTEN_ENV).is_some()),
        |_, _, _| {},
    )
    .expect("open");
    let log = Arc::new(log);
    let next = Arc::new(AtomicU64::new(0));
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let _writers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (log, next, out) = (Arc::clone(&log), Arc::clone(&next), Arc::clone(&out));
            std::thread::spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let (table, m) = entry(i);
                    let pos = log.add(table, &m).expect("add");
                    let t = now_us();
                    let mut o = out.lock().expect("stdout lock");
                    writeln!(o, "{i} {} {} {t}", pos.segment, pos.offset).expect("pipe");
                    o.flush().expect("pipe");
                }
            })
        })
        .collect();
    // The writers never stop: the parent kills the process.
    loop {
        std::thread::park();
    }
}

fn parent() {
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().r#gen());
    println!("periodic_sigkill: seed {seed} (set CRASH_SEED to repeat)");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let exe = std::env::current_exe().expect("test binary path");
    let (mut checked, mut recent) = (0usize, 0usize);
    for round in 0..ROUNDS {
        // On the target directory's file system (a real disk, where
        // fdatasync takes time), not a tmpfs.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
        let run_for = Duration::from_millis(rng.gen_range(300..900));
        let written = round % 2 == 1;
        let mut command = Command::new(&exe);
        if written {
            command.env(WRITTEN_ENV, "1");
        }
        let mut child = command
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let parse = |l: String| -> (u64, ReplayPosition, u64) {
            let f: Vec<u64> = l.split(' ').map(|x| x.parse().expect("number")).collect();
            (f[0], ReplayPosition::new(f[1], f[2] as u32), f[3])
        };
        let mut acked = Vec::new();
        let mut started: Option<Instant> = None;
        while started.is_none_or(|s| s.elapsed() < run_for) {
            match lines.next() {
                Some(l) => {
                    acked.push(parse(l.expect("read pipe")));
                    started.get_or_insert_with(Instant::now);
                }
                None => panic!("round {round}: child exited before being killed"),
            }
        }
        let kill_us = now_us();
        child.kill().expect("SIGKILL");
        let status = child.wait().expect("wait");
        assert!(!status.success(), "round {round}: the child was killed");
        // Acknowledgements already in the pipe were made before the kill.
        for l in lines {
            acked.push(parse(l.expect("read pipe")));
        }

        let mut got: BTreeMap<ReplayPosition, (u64, Mutation)> = BTreeMap::new();
        let report = replay(dir.path(), |t, m, p| {
            got.insert(p, (t, m));
        })
        .expect("replay");
        assert!(report.damage.is_empty(), "round {round}: {report:?}");
        let bound_us = BOUND.as_micros() as u64;
        for (i, pos, t) in &acked {
            if !written && *t + bound_us > kill_us {
                recent += 1;
                continue;
            }
            checked += 1;
            let Some((table, m)) = got.get(pos) else {
                panic!(
                    "round {round}: entry {i} at {pos}, acknowledged {} ms before the kill, is missing",
                    (kill_us - t) / 1000
                );
            };
            assert_eq!(
                (*table, m),
                (entry(*i).0, &entry(*i).1),
                "round {round}: entry {i} differs"
            );
        }
    }
    println!(
        "periodic_sigkill: {ROUNDS} kills, {checked} entries replayed: with buffered acknowledgements every one acknowledged over {} ms before a kill ({recent} later ones not checked), with written ones every one acknowledged",
        BOUND.as_millis()
    );
}

fn main() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        child(Path::new(&dir));
        return;
    }
    test_support::single_test_main("periodic_sigkill", parent);
}
