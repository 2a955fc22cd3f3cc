//! Files the crate keeps next to the sstables of a data directory: run
//! membership (`run-<generation>.txt`) and the removal of a generation's
//! files, TOC first, so a crash halfway leaves an uncommitted generation
//! that `SstableDirectory::open` removes.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use fs::{FileSystem, OpenOptions};

use sstable::Component;

use crate::error::{Error, Result, io_err};
use crate::set::RunMembership;

const RUN_PREFIX: &str = "run-";
const RUN_SUFFIX: &str = ".txt";

pub(crate) fn run_file_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{RUN_PREFIX}{generation}{RUN_SUFFIX}"))
}

/// fsyncs a directory.
pub(crate) fn sync_dir(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    fs.sync_dir(dir).map_err(io_err("fsync directory", dir))
}

/// Writes (durably, through a temporary name) the run membership of
/// `generation`. The caller fsyncs the directory.
pub(crate) fn write_run_file(
    fs: &dyn FileSystem,
    dir: &Path,
    generation: u64,
    run: RunMembership,
) -> Result<()> {
    let path = run_file_path(dir, generation);
    let tmp = path.with_extension("txt.tmp");
    let body = format!("{} {}", run.run_id, run.order);
    let line = format!("{body} {:08x}\n", crc32c::crc32c(body.as_bytes()));
    let f = fs
        .open(&tmp, &OpenOptions::create_truncate())
        .map_err(io_err("create", &tmp))?;
    f.write_all_at(line.as_bytes(), 0)
        .and_then(|()| f.sync_data())
        .map_err(io_err("write", &tmp))?;
    fs.rename(&tmp, &path).map_err(io_err("rename", &tmp))
}

/// Reads the run membership of `generation`, `None` when it has none.
pub(crate) fn read_run_file(
    fs: &dyn FileSystem,
    dir: &Path,
    generation: u64,
) -> Result<Option<RunMembership>> {
    let path = run_file_path(dir, generation);
    let text = match fs.read(&path) {
        Ok(t) => String::from_utf8_lossy(&t).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("read", &path)(e)),
    };
    let bad = |reason: &str| Error::CorruptRunFile {
        path: path.clone(),
        reason: reason.to_owned(),
    };
    let line = text
        .strip_suffix('\n')
        .ok_or_else(|| bad("the line is not terminated (torn write)"))?;
    let (body, crc) = line
        .rsplit_once(' ')
        .ok_or_else(|| bad("expected '<run id> <order> <crc>'"))?;
    if u32::from_str_radix(crc, 16).ok() != Some(crc32c::crc32c(body.as_bytes())) {
        return Err(bad("checksum mismatch"));
    }
    let (run_id, order) = body
        .split_once(' ')
        .ok_or_else(|| bad("expected '<run id> <order> <crc>'"))?;
    let run_id = run_id.parse().map_err(|_| bad("run id is not a number"))?;
    let order = order.parse().map_err(|_| bad("order is not a number"))?;
    Ok(Some(RunMembership { run_id, order }))
}

/// Removes run files (and their temporaries) of generations not in `live`.
pub(crate) fn remove_orphan_run_files(
    fs: &dyn FileSystem,
    dir: &Path,
    live: &HashSet<u64>,
) -> Result<()> {
    let mut changed = false;
    for entry in fs.read_dir(dir).map_err(io_err("read directory", dir))? {
        let Some(name) = entry.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(rest) = name.strip_prefix(RUN_PREFIX) else {
            continue;
        };
        let number = rest
            .strip_suffix(RUN_SUFFIX)
            .or_else(|| rest.strip_suffix(".txt.tmp"));
        let Some(Ok(generation)) = number.map(str::parse::<u64>) else {
            continue;
        };
        if !live.contains(&generation) || name.ends_with(".tmp") {
            fs.remove_file(&entry).map_err(io_err("remove", &entry))?;
            changed = true;
        }
    }
    if changed {
        sync_dir(fs, dir)?;
    }
    Ok(())
}

/// Removes every file of `generation` (committed or not) and its run
/// file: the TOC first, so that a crash halfway leaves an uncommitted
/// generation. Missing files are fine.
pub(crate) fn remove_generation(fs: &dyn FileSystem, dir: &Path, generation: u64) -> Result<()> {
    let toc = sstable::component_path(dir, generation, Component::Toc);
    remove_if_present(fs, &toc)?;
    let prefix = format!("sst-{generation}-");
    for entry in fs.read_dir(dir).map_err(io_err("read directory", dir))? {
        let name = entry.file_name().and_then(|n| n.to_str());
        if name.is_some_and(|n| n.starts_with(&prefix)) {
            remove_if_present(fs, &entry)?;
        }
    }
    remove_if_present(fs, &run_file_path(dir, generation))?;
    sync_dir(fs, dir)
}

/// Gives the committed sstable `from` of `dir` the generation `to` (free
/// in `dir`): hard links of every component but the TOC, its run file,
/// then the TOC's link (the commit of `to`), and only then the removal of
/// `from`. A crash before the TOC's link leaves an uncommitted `to`, which
/// opening removes; after it, both name the same files and the next open
/// renumbers `from` again: the data is never in neither.
pub(crate) fn renumber_generation(
    fs: &dyn FileSystem,
    dir: &Path,
    from: u64,
    to: u64,
) -> Result<()> {
    let link = |c: Component| {
        let a = sstable::component_path(dir, from, c);
        let b = sstable::component_path(dir, to, c);
        fs.hard_link(&a, &b).map_err(io_err("hard-link", &a))
    };
    for c in Component::ALL.into_iter().filter(|c| *c != Component::Toc) {
        link(c)?;
    }
    if let Some(run) = read_run_file(fs, dir, from)? {
        write_run_file(fs, dir, to, run)?;
    }
    sync_dir(fs, dir)?;
    link(Component::Toc)?;
    sync_dir(fs, dir)?;
    remove_generation(fs, dir, from)
}

fn remove_if_present(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    match fs.remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err("remove", path)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renumbered_sstable_reads_as_before_with_its_run() {
        use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
        let dir = tempfile::tempdir().unwrap();
        let key = DecoratedKey::from_bytes("k").unwrap();
        let m = Mutation::builder(key.clone())
            .cell("r", 0, Cell::live("v", Timestamp::from_micros(1)))
            .build()
            .unwrap();
        let mut w = sstable::Writer::create(dir.path(), sstable::WriterOptions::default()).unwrap();
        for f in m.fragments() {
            w.write(&f).unwrap();
        }
        let g = w.commit().unwrap().generation;
        let run = RunMembership {
            run_id: g,
            order: 0,
        };
        write_run_file(&fs::RealFs, dir.path(), g, run).unwrap();
        renumber_generation(&fs::RealFs, dir.path(), g, 40).unwrap();
        let listed = sstable::SstableDirectory::open(dir.path()).unwrap();
        assert_eq!(listed.generations(), [40]);
        let table = sstable::Sstable::open(dir.path(), 40).unwrap();
        table.verify().unwrap();
        assert_eq!(table.read_partition(&key).unwrap(), Some(m.fragments()));
        assert_eq!(
            read_run_file(&fs::RealFs, dir.path(), 40).unwrap(),
            Some(run)
        );
        assert_eq!(read_run_file(&fs::RealFs, dir.path(), g).unwrap(), None);
    }

    #[test]
    fn run_files_round_trip_and_damage_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunMembership {
            run_id: 7,
            order: 3,
        };
        write_run_file(&fs::RealFs, dir.path(), 9, run).unwrap();
        assert_eq!(
            read_run_file(&fs::RealFs, dir.path(), 9).unwrap(),
            Some(run)
        );
        assert_eq!(read_run_file(&fs::RealFs, dir.path(), 10).unwrap(), None);
        std::fs::write(run_file_path(dir.path(), 9), "7 4 00000000\n").unwrap();
        let err = read_run_file(&fs::RealFs, dir.path(), 9).unwrap_err();
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
        remove_orphan_run_files(&fs::RealFs, dir.path(), &HashSet::new()).unwrap();
        assert!(!run_file_path(dir.path(), 9).exists());
    }
}
