//! What the file-layer sweeps share (issue 37): a fixed small workload
//! (writes, deletes, flushes, a compaction, a table dropped and created
//! again) that records what was acknowledged, and the check of a reopened
//! database against it.
#![allow(dead_code, unreachable_pub, reason = "each sweep uses a subset")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use fs::FsHandle;
use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Mutation, Timestamp, Tombstone,
};
use replica::{CommitLogMode, Database, DatabaseConfig, TableSchema};

/// Rows by (partition, row).
pub type Row = (String, String);

/// What the workload saw acknowledged before it stopped.
#[derive(Debug, Default)]
pub struct Acked {
    /// Live rows of `t` and their values.
    pub live: BTreeMap<Row, Vec<u8>>,
    /// Rows of `t` whose delete was acknowledged.
    pub deleted: BTreeSet<Row>,
    /// Rows of `d` written before it was dropped (dropped acknowledged).
    pub dropped: BTreeSet<Row>,
    /// Rows of `d`'s new incarnation.
    pub recreated: BTreeMap<Row, Vec<u8>>,
}

pub fn config(dir: &Path, fs: FsHandle) -> DatabaseConfig {
    let mut c = DatabaseConfig::new(dir);
    c.commitlog = CommitLogMode::Batch(Duration::ZERO);
    c.commitlog_segment_size = 64 << 10;
    c.fs = fs;
    c
}

fn key(k: &str) -> DecoratedKey {
    DecoratedKey::from_bytes(k.to_owned()).unwrap()
}

fn cell(row: &Row, value: &[u8], ts: i64) -> Mutation {
    Mutation::builder(key(&row.0))
        .cell(
            row.1.clone(),
            0,
            Cell::live(value.to_vec(), Timestamp::from_micros(ts)),
        )
        .build()
        .unwrap()
}

fn delete(row: &Row, ts: i64) -> Mutation {
    Mutation::builder(key(&row.0))
        .row_tombstone(row.1.clone(), Tombstone::new(Timestamp::from_micros(ts), 1))
        .build()
        .unwrap()
}

fn row(p: usize, r: usize) -> Row {
    (format!("k{p}"), format!("r{r:03}"))
}

/// The workload. It goes on past errors (a failed flush or compaction
/// leaves the table readable and writable; a stopped commit log fails
/// every later write), recording in `acked` only what was acknowledged;
/// a row whose delete failed may or may not be deleted, and is checked
/// neither way. Returns the errors it met.
pub fn workload(db: &Database, acked: &mut Acked) -> Vec<String> {
    let mut errors = Vec::new();
    let mut note = |r: Result<(), replica::Error>| match r {
        Ok(()) => true,
        Err(e) => {
            errors.push(e.to_string());
            false
        }
    };
    let t = note(db.create_table(TableSchema::new("t").unwrap()));
    let d = note(db.create_table(TableSchema::new("d").unwrap()));
    let mut ts = 1;
    let mut write = |db: &Database, acked: &mut Acked, r: Row| {
        ts += 1;
        let value = format!("{}-{}-{ts}", r.0, r.1).into_bytes();
        let done = db.apply("t", &cell(&r, &value, ts));
        if done.is_ok() {
            acked.live.insert(r, value);
        }
        done
    };
    if t {
        for i in 0..12 {
            note(write(db, acked, row(i % 4, i)));
        }
        note(db.flush("t"));
        for i in 0..4 {
            let r = row(i % 4, i);
            let done = db.apply("t", &delete(&r, 1_000));
            acked.live.remove(&r);
            if note(done) {
                acked.deleted.insert(r);
            }
        }
        for i in 12..24 {
            note(write(db, acked, row(i % 4, i)));
        }
        note(db.flush("t"));
        for i in 24..30 {
            note(write(db, acked, row(i % 4, i)));
        }
        note(db.flush("t"));
        note(db.compact("t"));
        // Still writable after whatever failed above.
        for i in 30..34 {
            note(write(db, acked, row(i % 4, i)));
        }
    }
    if d {
        let mut old = BTreeSet::new();
        for i in 0..6 {
            let r = row(i % 2, i);
            note(db.apply("d", &cell(&r, b"old incarnation", 1)));
            old.insert(r);
        }
        note(db.flush("d"));
        if note(db.drop_table("d")) {
            acked.dropped = old;
            if note(db.create_table(TableSchema::new("d").unwrap())) {
                for i in 10..14 {
                    let r = row(i % 2, i);
                    if note(db.apply("d", &cell(&r, b"new incarnation", 2))) {
                        acked.recreated.insert(r, b"new incarnation".to_vec());
                    }
                }
                note(db.flush("d"));
            }
        }
    }
    note(db.close());
    errors
}

/// The live value of `r` in `table`, if any.
fn live(db: &Database, table: &str, r: &Row) -> Option<Vec<u8>> {
    let m = db
        .get(table, &key(&r.0), ClusteringRange::full())
        .unwrap()?;
    let row = m.row(&ClusteringKey::new(r.1.clone()).unwrap())?;
    row.cells.get(&0).and_then(|c| match c {
        Cell::Live { value, .. } => Some(value.to_vec()),
        _ => None,
    })
}

/// Every committed sstable under `dir` (on `fs`) opens and verifies.
fn verify_sstables(fs: &FsHandle, dir: &Path) -> Result<usize, String> {
    let mut n = 0;
    for table_dir in fs.read_dir(dir).map_err(|e| e.to_string())? {
        if fs.kind(&table_dir).map_err(|e| e.to_string())? != Some(fs::EntryKind::Dir) {
            continue;
        }
        for p in fs.read_dir(&table_dir).map_err(|e| e.to_string())? {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let Ok((generation, sstable::Component::Toc)) = sstable::parse_component_path(&p)
            else {
                continue;
            };
            let s = sstable::Sstable::open_with(&table_dir, generation, None, fs)
                .map_err(|e| format!("{name}: {e}"))?;
            s.verify().map_err(|e| format!("{name}: {e}"))?;
            n += 1;
        }
    }
    Ok(n)
}

/// Reopens `dir` on `fs` and checks everything `acked` says: the first
/// broken promise.
pub fn check(fs: &FsHandle, dir: &Path, acked: &Acked) -> Result<(), String> {
    let db = Database::open(config(dir, fs.clone())).map_err(|e| format!("reopen: {e}"))?;
    let tables: BTreeSet<String> = db.tables().iter().map(|t| t.name().to_owned()).collect();
    for (r, v) in &acked.live {
        match live(&db, "t", r) {
            Some(got) if &got == v => {}
            got => return Err(format!("acknowledged write {r:?} lost (read {got:?})")),
        }
    }
    for r in &acked.deleted {
        if live(&db, "t", r).is_some() {
            return Err(format!("deleted row {r:?} returned"));
        }
    }
    if tables.contains("d") {
        for r in &acked.dropped {
            if live(&db, "d", r).is_some_and(|v| v == b"old incarnation") {
                return Err(format!("row {r:?} of the dropped table returned"));
            }
        }
        for (r, v) in &acked.recreated {
            if live(&db, "d", r).as_ref() != Some(v) {
                return Err(format!("acknowledged write {r:?} of the new `d` lost"));
            }
        }
    } else if !acked.recreated.is_empty() {
        return Err("the re-created table `d` is missing".to_owned());
    }
    db.close().map_err(|e| format!("close after reopen: {e}"))?;
    verify_sstables(fs, dir)?;
    Ok(())
}

/// Up to `budget` call numbers of `1..=calls`, spread evenly (every one
/// when `full`).
pub fn sample(calls: u64, budget: u64, full: bool) -> Vec<u64> {
    if full || calls <= budget {
        return (1..=calls).collect();
    }
    (0..budget).map(|i| 1 + i * calls / budget).collect()
}
