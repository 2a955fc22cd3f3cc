//! Read-your-writes under flush pressure (issue 32): writers write, delete
//! rows and delete partitions of partitions they own; readers check that
//! every read sees, for the partition it reads, an operation at least as
//! new as the newest one acknowledged before the read began; after a
//! reopen every partition holds exactly its last operation's effect.
//!
//! Sized for CI (a few seconds per commit-log mode); the issue's own shape
//! (20 runs of 20 s in periodic mode) is the same test with
//! `REPLMEM_RYW_SECONDS=20 REPLMEM_RYW_RUNS=20 REPLMEM_RYW_MODES=periodic`;
//! `REPLMEM_RYW_CACHE=off` and `REPLMEM_RYW_COMPACTION=none` take the row
//! cache and compaction out (the stale reads reproduced without either).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange,
    Timestamp, Tombstone,
};
use replica::{CommitLogMode, Database, DatabaseConfig, TableSchema};

const WRITERS: u64 = 4;
const READERS: u64 = 2;
const PARTITIONS: u64 = 300;
const TABLE: &str = "ryw";
const ROW: &[u8] = b"r";

/// What operation `s` of a writer is: a row write (60%), a row delete
/// (20%) or a partition delete (20%), fixed by `(writer, s)` so a checker
/// can tell what any operation was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Write,
    DeleteRow,
    DeletePartition,
}

fn op_of(writer: u64, s: u64) -> Op {
    // A cheap, well-mixed hash (splitmix64's finaliser).
    let mut z = (writer << 40) ^ s ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    match z % 10 {
        0 | 1 => Op::DeleteRow,
        2 | 3 => Op::DeletePartition,
        _ => Op::Write,
    }
}

fn key(writer: u64, partition: u64) -> DecoratedKey {
    DecoratedKey::from_bytes(format!("w{writer}-{partition:04}")).unwrap()
}

fn now_secs() -> u32 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    u32::try_from(secs).unwrap()
}

fn mutation_of(writer: u64, s: u64) -> Mutation {
    let ts = Timestamp::from_micros(i64::try_from(s + 1).unwrap());
    let builder = Mutation::builder(key(writer, s % PARTITIONS));
    let builder = match op_of(writer, s) {
        Op::Write => builder.cell(ROW, 0, Cell::live(format!("s={s}"), ts)),
        Op::DeleteRow => builder.row_tombstone(ROW, Tombstone::new(ts, now_secs())),
        Op::DeletePartition => builder.partition_tombstone(Tombstone::new(ts, now_secs())),
    };
    builder.build().unwrap()
}

/// The operation whose value a read of the row shows, if it shows one.
fn shown(partition: Option<&Mutation>) -> Option<u64> {
    let partition = partition?;
    let row = partition.row(&ClusteringKey::new(ROW.to_vec()).unwrap())?;
    // A value the row's or the partition's tombstone shadows is not shown
    // (a merged read need not have dropped it).
    let deleted = row.tombstone.max(partition.partition_tombstone());
    let value = row.cells.values().find_map(|c| match c {
        Cell::Live {
            value, timestamp, ..
        } if deleted.is_none_or(|t| t.timestamp < *timestamp) => Some(value.clone()),
        _ => None,
    })?;
    let text = String::from_utf8(value.to_vec()).unwrap();
    Some(text.strip_prefix("s=").unwrap().parse().unwrap())
}

/// The newest operation on `partition` at or before `s`, if any.
fn newest_at_or_before(partition: u64, s: u64) -> Option<u64> {
    let back = (s + PARTITIONS - partition) % PARTITIONS;
    s.checked_sub(back)
}

/// Checks one read of `writer`'s `partition`, started after operation
/// `acked` was acknowledged and finished before operation `issued` was
/// started: the row it shows (or its absence) must be the effect of an
/// operation at least as new as the newest one on the partition at or
/// before `acked`.
fn check(
    writer: u64,
    partition: u64,
    acked: Option<u64>,
    issued: u64,
    seen: Option<&Mutation>,
) -> Result<(), String> {
    let Some(newest) = acked.and_then(|a| newest_at_or_before(partition, a)) else {
        return Ok(());
    };
    let ok = match shown(seen) {
        Some(v) => v % PARTITIONS == partition && v >= newest && op_of(writer, v) == Op::Write,
        // Absent: some delete at or after `newest` and before `issued`.
        None => (newest..issued)
            .step_by(PARTITIONS as usize)
            .any(|s| op_of(writer, s) != Op::Write),
    };
    if ok {
        return Ok(());
    }
    Err(format!(
        "stale read of {} (writer {writer}): acknowledged up to s={}, newest on the partition \
         s={newest} ({:?}), the read shows {}",
        key(writer, partition),
        acked.unwrap(),
        op_of(writer, newest),
        match shown(seen) {
            Some(v) => format!("the write of s={v}"),
            None => "no row".to_owned(),
        }
    ))
}

struct Shared {
    /// The last acknowledged operation of each writer, plus one (0: none).
    acked: Vec<AtomicU64>,
    /// The next operation each writer starts.
    issued: Vec<AtomicU64>,
    stop: AtomicBool,
    reads: AtomicU64,
    scans: AtomicU64,
}

fn config(dir: &std::path::Path, mode: CommitLogMode) -> DatabaseConfig {
    let mut config = DatabaseConfig::new(dir);
    config.dirty_memory_budget = 1 << 20;
    config.commitlog = mode;
    config.compaction.gc_grace = Duration::ZERO;
    if std::env::var("REPLMEM_RYW_CACHE").as_deref() == Ok("off") {
        config.cache_size = replica::CacheSize::Off;
    }
    if std::env::var("REPLMEM_RYW_COMPACTION").as_deref() == Ok("none") {
        config.compaction.strategy = replica::compaction::StrategyConfig::None;
    }
    config
}

fn run_once(mode: CommitLogMode, duration: Duration) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::open(config(dir.path(), mode)).unwrap());
    db.create_table(TableSchema::new(TABLE).unwrap()).unwrap();
    let shared = Arc::new(Shared {
        acked: (0..WRITERS).map(|_| AtomicU64::new(0)).collect(),
        issued: (0..WRITERS).map(|_| AtomicU64::new(0)).collect(),
        stop: AtomicBool::new(false),
        reads: AtomicU64::new(0),
        scans: AtomicU64::new(0),
    });
    let deadline = Instant::now() + duration;
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, shared) = (Arc::clone(&db), Arc::clone(&shared));
            std::thread::spawn(move || {
                let mut s = 0;
                while Instant::now() < deadline {
                    shared.issued[w as usize].store(s + 1, Ordering::SeqCst);
                    db.apply(TABLE, &mutation_of(w, s)).unwrap();
                    shared.acked[w as usize].store(s + 1, Ordering::SeqCst);
                    s += 1;
                }
                s
            })
        })
        .collect();
    let readers: Vec<_> = (0..READERS)
        .map(|r| {
            let (db, shared) = (Arc::clone(&db), Arc::clone(&shared));
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                let mut n: u64 = r;
                while !shared.stop.load(Ordering::SeqCst) && failures.len() < 10 {
                    n += 1;
                    let writer = n % WRITERS;
                    if n.is_multiple_of(64) {
                        let acked: Vec<u64> = shared
                            .acked
                            .iter()
                            .map(|a| a.load(Ordering::SeqCst))
                            .collect();
                        let mut scan = db.scan(TABLE, PartitionRange::full()).unwrap();
                        let mut got = Vec::new();
                        while let Some(m) = scan.next_mutation().unwrap() {
                            got.push(m);
                        }
                        let issued: Vec<u64> = shared
                            .issued
                            .iter()
                            .map(|a| a.load(Ordering::SeqCst))
                            .collect();
                        shared.scans.fetch_add(1, Ordering::Relaxed);
                        for w in 0..WRITERS {
                            for p in 0..PARTITIONS {
                                let k = key(w, p);
                                let seen = got.iter().find(|m| *m.key() == k);
                                let acked = acked[w as usize].checked_sub(1);
                                if let Err(e) = check(w, p, acked, issued[w as usize], seen) {
                                    failures.push(format!("scan: {e}"));
                                }
                            }
                        }
                        continue;
                    }
                    let acked = shared.acked[writer as usize]
                        .load(Ordering::SeqCst)
                        .checked_sub(1);
                    let partition = (n.wrapping_mul(2_654_435_761) >> 7) % PARTITIONS;
                    let seen = db
                        .get(TABLE, &key(writer, partition), ClusteringRange::full())
                        .unwrap();
                    let issued = shared.issued[writer as usize].load(Ordering::SeqCst);
                    shared.reads.fetch_add(1, Ordering::Relaxed);
                    if let Err(e) = check(writer, partition, acked, issued, seen.as_ref()) {
                        failures.push(format!("get: {e}"));
                    }
                }
                failures
            })
        })
        .collect();
    let written: Vec<u64> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    shared.stop.store(true, Ordering::SeqCst);
    let mut failures: Vec<String> = readers
        .into_iter()
        .flat_map(|r| r.join().unwrap())
        .collect();
    let ops: u64 = written.iter().sum();
    eprintln!(
        "{}: {ops} operations, {} reads, {} scans, {} flushes, {} stale",
        mode.name(),
        shared.reads.load(Ordering::Relaxed),
        shared.scans.load(Ordering::Relaxed),
        db.metrics().tables[0].flushes,
        failures.len()
    );
    assert!(ops > 0 && shared.reads.load(Ordering::Relaxed) > 0);

    // Every operation was acknowledged: after a reopen (with a log, its
    // replay; without, the flush at close) each partition holds exactly
    // what its last operation left.
    db.close().unwrap();
    drop(db);
    let db = Database::open(config(dir.path(), mode)).unwrap();
    for (w, &n) in (0..WRITERS).zip(&written) {
        for p in 0..PARTITIONS.min(n) {
            let last = newest_at_or_before(p, n - 1).unwrap();
            let seen = db.get(TABLE, &key(w, p), ClusteringRange::full()).unwrap();
            let want = (op_of(w, last) == Op::Write).then_some(last);
            if shown(seen.as_ref()) != want {
                failures.push(format!(
                    "after reopen, {} shows {:?}, its last operation s={last} was {:?}",
                    key(w, p),
                    shown(seen.as_ref()),
                    op_of(w, last)
                ));
            }
        }
    }
    db.close().unwrap();
    failures
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn reads_see_every_acknowledged_operation_in_every_log_mode() {
    let seconds: u64 = env_or("REPLMEM_RYW_SECONDS", 4);
    let runs: u64 = env_or("REPLMEM_RYW_RUNS", 1);
    let modes: String = env_or("REPLMEM_RYW_MODES", "periodic,batch,off".to_owned());
    let mut failures = Vec::new();
    for _ in 0..runs {
        for mode in modes.split(',') {
            let mode = CommitLogMode::parse(mode).unwrap();
            let f = run_once(mode, Duration::from_secs(seconds));
            failures.extend(f.into_iter().map(|f| format!("{}: {f}", mode.name())));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures, the first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(10)]
    );
}
