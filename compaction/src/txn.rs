//! The transaction file of a job (Cassandra's lifecycle log, in small):
//! `compaction-<first input>-<n>.txn` in the data directory, one record
//! per line, each with a crc32c, appended and fdatasynced in order:
//!
//! ```text
//! compaction-transaction 1 <crc>
//! input <generation> <crc>          one per input, then
//! begin <crc>
//! output <generation> <crc>         before an output's first byte is written
//! checkpoint keep <g,..|-> release <g,..|-> <crc>
//! ```
//!
//! A checkpoint says: these outputs are committed and part of the table;
//! these inputs are replaced (their data is in kept outputs). Size-tiered
//! jobs write one checkpoint at the end; incremental jobs one per sealed
//! output fragment. The file is removed once every released input is gone.
//!
//! The file lives in the set's data directory, next to the outputs; the
//! inputs may be in any directory of the set (a table's flush
//! directories too). Version 2 (the header's number) says so: its
//! generations are unique across the set's directories, and an input is
//! looked for in the file's directory first, then in the set's others.
//! Version 1 files (written when every set had one directory) name only
//! sstables of their own directory; they still read, and recover as
//! before.
//!
//! [`recover_dirs`] applies what the files say, at open: outputs not kept
//! are removed (roll back), released inputs are removed (roll forward),
//! then the file. A torn last record (a crash during its append) is
//! ignored; any other damage is an error and nothing is touched.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use fs::{File, FileSystem, FsHandle, OpenOptions};

use crate::error::{Error, Result, io_err};
use crate::files::{remove_generation, sync_dir};

const PREFIX: &str = "compaction-";
const SUFFIX: &str = ".txn";
const HEADER: &str = "compaction-transaction 2";
/// The header of version 1 files, which name sstables of their own
/// directory only.
const HEADER_V1: &str = "compaction-transaction 1";

fn line(body: &str) -> String {
    format!("{body} {:08x}\n", crc32c::crc32c(body.as_bytes()))
}

fn list(gens: &[u64]) -> String {
    if gens.is_empty() {
        "-".to_owned()
    } else {
        gens.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// An open transaction file, appended to as the job goes.
#[derive(Debug)]
pub(crate) struct Transaction {
    fs: FsHandle,
    dir: PathBuf,
    path: PathBuf,
    file: Box<dyn File>,
    /// The file's length: where the next record goes.
    len: u64,
}

impl Transaction {
    /// Creates the file durably (temporary name, fdatasync, rename,
    /// directory fsync) with the inputs and `begin`.
    pub(crate) fn begin(fs: &FsHandle, dir: &Path, inputs: &[u64]) -> Result<Self> {
        let first = inputs.iter().min().copied().unwrap_or(0);
        let mut text = line(HEADER);
        for g in inputs {
            text.push_str(&line(&format!("input {g}")));
        }
        text.push_str(&line("begin"));
        for n in 0u32.. {
            let path = dir.join(format!("{PREFIX}{first}-{n}{SUFFIX}"));
            if fs.kind(&path).map_err(io_err("stat", &path))?.is_some() {
                continue;
            }
            let tmp = path.with_extension("txn.tmp");
            let f = fs
                .open(&tmp, &OpenOptions::create_truncate())
                .map_err(io_err("create", &tmp))?;
            f.write_all_at(text.as_bytes(), 0)
                .and_then(|()| f.sync_data())
                .map_err(io_err("write", &tmp))?;
            drop(f);
            fs.rename(&tmp, &path).map_err(io_err("rename", &tmp))?;
            sync_dir(&**fs, dir)?;
            let file = fs
                .open(&path, &OpenOptions::write())
                .map_err(io_err("open", &path))?;
            return Ok(Transaction {
                fs: fs.clone(),
                dir: dir.to_path_buf(),
                path,
                file,
                len: text.len() as u64,
            });
        }
        unreachable!("u32 names run out only after four billion leftover files")
    }

    fn append(&mut self, body: &str) -> Result<()> {
        let record = line(body);
        self.file
            .write_all_at(record.as_bytes(), self.len)
            .and_then(|()| self.file.sync_data())
            .map_err(io_err("append to", &self.path))?;
        self.len += record.len() as u64;
        Ok(())
    }

    /// Records an output generation before anything is written to it.
    pub(crate) fn output(&mut self, generation: u64) -> Result<()> {
        self.append(&format!("output {generation}"))
    }

    /// Records that `keep` are committed and `release` replaced.
    pub(crate) fn checkpoint(&mut self, keep: &[u64], release: &[u64]) -> Result<()> {
        self.append(&format!(
            "checkpoint keep {} release {}",
            list(keep),
            list(release)
        ))
    }

    /// The file's path.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file (the job is over and its released inputs are gone).
    pub(crate) fn remove(self) -> Result<()> {
        self.fs
            .remove_file(&self.path)
            .map_err(io_err("remove", &self.path))?;
        sync_dir(&*self.fs, &self.dir)
    }
}

/// What one transaction file says.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct TransactionRecord {
    /// A version 1 file: every generation is in the file's directory.
    pub(crate) own_dir_only: bool,
    pub(crate) inputs: BTreeSet<u64>,
    pub(crate) outputs: BTreeSet<u64>,
    pub(crate) kept: BTreeSet<u64>,
    pub(crate) released: BTreeSet<u64>,
}

fn parse_list(s: &str) -> Option<Vec<u64>> {
    if s == "-" {
        return Some(Vec::new());
    }
    s.split(',').map(|g| g.parse().ok()).collect()
}

pub(crate) fn parse(path: &Path, text: &str) -> Result<TransactionRecord> {
    let corrupt = |line: usize, reason: String| Error::CorruptTransaction {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut record = TransactionRecord::default();
    let mut begun = false;
    for (i, raw) in lines.iter().enumerate() {
        let n = i + 1;
        let last = i + 1 == lines.len();
        let checked = raw.strip_suffix('\n').and_then(|l| {
            let (body, crc) = l.rsplit_once(' ')?;
            (u32::from_str_radix(crc, 16).ok()? == crc32c::crc32c(body.as_bytes())).then_some(body)
        });
        let Some(body) = checked else {
            if last && i > 0 {
                // A torn append: the record was never acknowledged.
                break;
            }
            return Err(corrupt(n, "checksum mismatch or missing line end".into()));
        };
        if i == 0 {
            if body == HEADER_V1 {
                record.own_dir_only = true;
            } else if body != HEADER {
                return Err(corrupt(
                    n,
                    format!("expected the header '{HEADER}' (or '{HEADER_V1}')"),
                ));
            }
            continue;
        }
        let words: Vec<&str> = body.split(' ').collect();
        let bad = |what: &str| corrupt(n, format!("malformed {what} record '{body}'"));
        match words.as_slice() {
            ["input", g] if !begun => {
                record.inputs.insert(g.parse().map_err(|_| bad("input"))?);
            }
            ["begin"] if !begun => begun = true,
            ["output", g] if begun => {
                record.outputs.insert(g.parse().map_err(|_| bad("output"))?);
            }
            ["checkpoint", "keep", keep, "release", release] if begun => {
                let keep = parse_list(keep).ok_or_else(|| bad("checkpoint"))?;
                let release = parse_list(release).ok_or_else(|| bad("checkpoint"))?;
                for g in &keep {
                    if !record.outputs.contains(g) {
                        return Err(corrupt(n, format!("keeps {g}, which is not an output")));
                    }
                }
                for g in &release {
                    if !record.inputs.contains(g) {
                        return Err(corrupt(n, format!("releases {g}, which is not an input")));
                    }
                }
                record.kept.extend(keep);
                record.released.extend(release);
            }
            _ => return Err(corrupt(n, format!("unexpected record '{body}'"))),
        }
    }
    if lines.is_empty() {
        return Err(corrupt(1, "the file is empty".into()));
    }
    Ok(record)
}

/// What [`recover`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveryReport {
    /// Transaction files applied.
    pub transactions: usize,
    /// Output generations removed (the job had not kept them).
    pub removed_outputs: Vec<u64>,
    /// Input generations removed (the job had replaced them).
    pub removed_inputs: Vec<u64>,
}

/// Removes generation `g` from `own` or, unless `own_dir_only`, from the
/// first of `others` that holds it (generations are unique across a
/// set's directories).
fn remove_input(
    fs: &dyn FileSystem,
    own: &Path,
    others: &[&Path],
    own_dir_only: bool,
    g: u64,
) -> Result<()> {
    let dir = if own_dir_only || present(fs, own, g) {
        own
    } else {
        others
            .iter()
            .copied()
            .find(|d| present(fs, d, g))
            .unwrap_or(own)
    };
    remove_generation(fs, dir, g)
}

/// True when any file of generation `g` (committed or not) is in `dir`.
fn present(fs: &dyn FileSystem, dir: &Path, g: u64) -> bool {
    let prefix = format!("sst-{g}-");
    fs.read_dir(dir).is_ok_and(|entries| {
        entries.iter().any(|e| {
            e.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix))
        })
    })
}

fn transaction_files(fs: &dyn FileSystem, dir: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut logs = Vec::new();
    let mut temporaries = Vec::new();
    for entry in fs.read_dir(dir).map_err(io_err("read directory", dir))? {
        let Some(name) = entry.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.starts_with(PREFIX) {
            continue;
        }
        if name.ends_with(SUFFIX) {
            logs.push(entry);
        } else if name.ends_with(".txn.tmp") {
            temporaries.push(entry);
        }
    }
    logs.sort();
    Ok((logs, temporaries))
}

/// Finishes or undoes every half-done compaction of `dir` from its
/// transaction files: outputs a job had not kept are removed, inputs it
/// had replaced are removed, then the file. Call it at open, before
/// listing the sstables and before anything writes to `dir`
/// ([`SstableSet::open`](crate::SstableSet::open) does).
///
/// # Errors
/// [`Error::CorruptTransaction`] when a file is damaged (beyond a torn
/// last record); every file is parsed before anything is removed, so an
/// error leaves the directory untouched.
pub fn recover(dir: impl AsRef<Path>) -> Result<RecoveryReport> {
    recover_dirs(&[dir.as_ref()])
}

/// As [`recover`], for a set spanning `dirs` (its data directory first,
/// then the others, as [`SstableSet::open_dirs`](crate::SstableSet::open_dirs)
/// takes them): the transaction files of every directory are parsed
/// first, then applied; a job's inputs are removed from whichever of the
/// directories holds them (its outputs are in the file's directory).
///
/// # Errors
/// As [`recover`]; a damaged file in any directory leaves all untouched.
pub fn recover_dirs(dirs: &[&Path]) -> Result<RecoveryReport> {
    recover_dirs_with(dirs, &FsHandle::real())
}

/// As [`recover_dirs`], on the file system `fs`.
///
/// # Errors
/// As [`recover_dirs`].
pub fn recover_dirs_with(dirs: &[&Path], fs: &FsHandle) -> Result<RecoveryReport> {
    let fs: &dyn FileSystem = &**fs;
    let mut parsed = Vec::new();
    let mut temporaries = Vec::new();
    for &dir in dirs {
        let (logs, tmps) = transaction_files(fs, dir)?;
        for path in logs {
            let bytes = fs.read(&path).map_err(io_err("read", &path))?;
            let text = String::from_utf8_lossy(&bytes);
            let record = parse(&path, &text)?;
            parsed.push((dir, path, record));
        }
        temporaries.extend(tmps);
    }
    let mut report = RecoveryReport::default();
    for path in temporaries {
        // The job never started writing outputs.
        fs.remove_file(&path).map_err(io_err("remove", &path))?;
    }
    for (dir, path, record) in parsed {
        let others: Vec<&Path> = dirs.iter().copied().filter(|d| *d != dir).collect();
        for &g in record.outputs.difference(&record.kept) {
            remove_generation(fs, dir, g)?;
            report.removed_outputs.push(g);
        }
        for &g in &record.released {
            remove_input(fs, dir, &others, record.own_dir_only, g)?;
            report.removed_inputs.push(g);
        }
        fs.remove_file(&path).map_err(io_err("remove", &path))?;
        report.transactions += 1;
    }
    for &dir in dirs {
        sync_dir(fs, dir)?;
    }
    Ok(report)
}

/// Removes the transaction files whose jobs are over (`done`), once their
/// released inputs (generation and directory) are gone (no reader held
/// them any more).
pub(crate) fn try_finish(
    txn: Transaction,
    released: &[(u64, PathBuf)],
) -> Result<Option<Transaction>> {
    let gone = released.iter().all(|(g, dir)| {
        let toc = sstable::component_path(dir, *g, sstable::Component::Toc);
        matches!(txn.fs.kind(&toc), Ok(None))
    });
    if gone {
        txn.remove()?;
        Ok(None)
    } else {
        Ok(Some(txn))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_a_torn_tail_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Transaction::begin(&FsHandle::real(), dir.path(), &[3, 4]).unwrap();
        t.output(5).unwrap();
        t.checkpoint(&[5], &[3]).unwrap();
        let path = t.path().to_path_buf();
        drop(t);
        let mut text = std::fs::read_to_string(&path).unwrap();
        let r = parse(&path, &text).unwrap();
        assert_eq!(r.inputs, BTreeSet::from([3, 4]));
        assert_eq!(r.kept, BTreeSet::from([5]));
        assert_eq!(r.released, BTreeSet::from([3]));
        text.push_str("checkpoint keep - rel");
        assert_eq!(parse(&path, &text).unwrap(), r);
    }

    #[test]
    fn version_1_files_name_their_own_directory_and_version_2_any() {
        let p = Path::new("/d/compaction-1-0.txn");
        let mut text = line(HEADER_V1);
        text.push_str(&line("input 1"));
        text.push_str(&line("begin"));
        assert!(parse(p, &text).unwrap().own_dir_only);
        let mut text = line(HEADER);
        text.push_str(&line("input 1"));
        text.push_str(&line("begin"));
        assert!(!parse(p, &text).unwrap().own_dir_only);
    }

    /// Writes an empty committed generation's TOC and Data files.
    fn fake_sstable(dir: &Path, g: u64) {
        for c in [sstable::Component::Data, sstable::Component::Toc] {
            std::fs::write(sstable::component_path(dir, g, c), b"x").unwrap();
        }
    }

    #[test]
    fn recovery_removes_released_inputs_in_the_directory_holding_them() {
        let data = tempfile::tempdir().unwrap();
        let flush = tempfile::tempdir().unwrap();
        // Inputs 3 (in the flush directory) and 4 (in the data directory);
        // output 5; all released and kept, then a crash.
        fake_sstable(flush.path(), 3);
        fake_sstable(data.path(), 4);
        fake_sstable(data.path(), 5);
        let mut t = Transaction::begin(&FsHandle::real(), data.path(), &[3, 4]).unwrap();
        t.output(5).unwrap();
        t.checkpoint(&[5], &[3, 4]).unwrap();
        drop(t);
        let report = recover_dirs(&[data.path(), flush.path()]).unwrap();
        assert_eq!(report.removed_inputs, vec![3, 4]);
        assert!(!present(&fs::RealFs, flush.path(), 3));
        assert!(!present(&fs::RealFs, data.path(), 4));
        assert!(present(&fs::RealFs, data.path(), 5));
        assert_eq!(
            transaction_files(&fs::RealFs, data.path()).unwrap().0.len(),
            0
        );

        // A version 1 file in the flush directory (an in-place compaction
        // of before) names generations of that directory only, even when
        // the data directory has one of the same number.
        fake_sstable(flush.path(), 7);
        fake_sstable(data.path(), 7);
        let mut text = line(HEADER_V1);
        text.push_str(&line("input 7"));
        text.push_str(&line("begin"));
        text.push_str(&line("checkpoint keep - release 7"));
        std::fs::write(flush.path().join("compaction-7-0.txn"), text).unwrap();
        recover_dirs(&[data.path(), flush.path()]).unwrap();
        assert!(!present(&fs::RealFs, flush.path(), 7));
        assert!(
            present(&fs::RealFs, data.path(), 7),
            "another directory's 7 is kept"
        );
    }

    #[test]
    fn damage_is_reported_with_the_line() {
        let p = Path::new("/d/compaction-1-0.txn");
        let mut text = line(HEADER);
        text.push_str("input 1 00000000\n");
        text.push_str(&line("begin"));
        let e = parse(p, &text).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("checksum"), "{e}");
        let mut text = line(HEADER);
        text.push_str(&line("input 1"));
        text.push_str(&line("begin"));
        text.push_str(&line("checkpoint keep 9 release -"));
        let e = parse(p, &text).unwrap_err().to_string();
        assert!(e.contains("keeps 9, which is not an output"), "{e}");
        let e = parse(p, "").unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
        let e = parse(p, &line("something else")).unwrap_err().to_string();
        assert!(e.contains("header"), "{e}");
    }
}
