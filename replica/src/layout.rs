//! Where a table's files live, and what opening them finds.
//!
//! Each table has a directory named after it in every data directory and
//! every flush directory: `<dir>/<table>/sst-<generation>-<Component>`.
//! Generations are reserved per directory by the sstable writer, so an
//! sstable is named by its directory and generation together
//! ([`SstableId`]).
//!
//! Opening a table ([`open_table_dirs`]) creates its missing directories,
//! lists the committed sstables in each, and removes the leftovers of
//! flushes that never committed, through [`sstable::SstableDirectory`].
//! It must run before any flush writes to those directories (at open, or
//! at `create_table`): an in-progress write looks exactly like a crashed
//! one.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use sstable::SstableDirectory;

use crate::catalog::validate_table_name;
use crate::error::{Error, io_err};

/// The directory of `table` inside the data or flush directory `base`.
pub fn table_dir(base: &Path, table: &str) -> PathBuf {
    base.join(table)
}

/// One sstable: the table directory it is in and its generation there.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SstableId {
    /// The table directory holding it.
    pub dir: PathBuf,
    /// Its generation in that directory.
    pub generation: u64,
}

/// What opening a table's directories found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableFiles {
    table: String,
    dirs: Vec<PathBuf>,
    sstables: Vec<SstableId>,
    removed_leftovers: Vec<SstableId>,
}

impl TableFiles {
    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The table's directories, one per base directory, in the order given.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Its committed sstables, by directory (in the order given), then
    /// generation.
    pub fn sstables(&self) -> &[SstableId] {
        &self.sstables
    }

    /// The unfinished writes whose files opening removed.
    pub fn removed_leftovers(&self) -> &[SstableId] {
        &self.removed_leftovers
    }
}

/// Opens `table`'s directory in each of `bases` (the data directories,
/// then the flush directories not among them): creates it if missing,
/// removes the files of writes that never committed, and lists the
/// committed sstables.
///
/// # Errors
/// [`Error::InvalidTableName`] for a name that is not a table name;
/// [`Error::Io`] if a directory cannot be created; [`Error::Sstable`] if a
/// directory cannot be listed or cleaned.
pub fn open_table_dirs<'a>(
    table: &str,
    bases: impl IntoIterator<Item = &'a Path>,
) -> Result<TableFiles, Error> {
    validate_table_name(table)?;
    let mut files = TableFiles {
        table: table.to_owned(),
        dirs: Vec::new(),
        sstables: Vec::new(),
        removed_leftovers: Vec::new(),
    };
    for base in bases {
        let dir = table_dir(base, table);
        fs::create_dir_all(&dir).map_err(io_err("create table directory", &dir))?;
        let listed = SstableDirectory::open(&dir).map_err(|source| Error::Sstable {
            table: table.to_owned(),
            dir: dir.clone(),
            source,
        })?;
        let id = |&generation: &u64| SstableId {
            dir: dir.clone(),
            generation,
        };
        files.sstables.extend(listed.generations().iter().map(id));
        files
            .removed_leftovers
            .extend(listed.removed_leftovers().iter().map(id));
        files.dirs.push(dir);
    }
    Ok(files)
}

/// Removes `table`'s directory, with every file in it, from each of
/// `bases`; missing directories are skipped. For `drop_table`, after the
/// catalog has forgotten the table.
///
/// # Errors
/// [`Error::InvalidTableName`] for a name that is not a table name (so a
/// bad name can never reach outside the base directories); [`Error::Io`]
/// if a directory cannot be removed.
pub fn remove_table_dirs<'a>(
    table: &str,
    bases: impl IntoIterator<Item = &'a Path>,
) -> Result<(), Error> {
    validate_table_name(table)?;
    for base in bases {
        let dir = table_dir(base, table);
        match fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("remove table directory", &dir)(e)),
        }
    }
    Ok(())
}

/// Table directories in `bases` whose table `is_known` rejects: what a
/// crash between a `drop_table`'s catalog change and its file removal
/// leaves behind. Entries that are not directories, or whose names are not
/// table names, are not the database's and are left out.
///
/// # Errors
/// [`Error::Io`] if a base directory cannot be listed.
pub fn orphan_table_dirs<'a>(
    bases: impl IntoIterator<Item = &'a Path>,
    is_known: impl Fn(&str) -> bool,
) -> Result<Vec<PathBuf>, Error> {
    let mut orphans = Vec::new();
    for base in bases {
        for entry in fs::read_dir(base).map_err(io_err("read directory", base))? {
            let entry = entry.map_err(io_err("read directory", base))?;
            let is_dir = entry
                .file_type()
                .map_err(io_err("read directory", base))?
                .is_dir();
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if is_dir && validate_table_name(name).is_ok() && !is_known(name) {
                orphans.push(entry.path());
            }
        }
    }
    orphans.sort();
    Ok(orphans)
}

#[cfg(test)]
mod tests {
    use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
    use sstable::{CommitStep, Writer, WriterOptions};

    use super::*;

    /// Writes one sstable into `dir`; with `crash_after`, stops the commit
    /// there as a crash would.
    fn write(dir: &Path, crash_after: Option<CommitStep>) -> Option<u64> {
        let m = Mutation::builder(DecoratedKey::from_bytes("k").unwrap())
            .cell("r", 0, Cell::live("v", Timestamp::from_micros(1)))
            .build()
            .unwrap();
        let mut options = WriterOptions::default();
        options.crash_after = crash_after;
        let mut w = Writer::create(dir, options).unwrap();
        for f in m.fragments() {
            w.write(&f).unwrap();
        }
        match crash_after {
            None => Some(w.commit().unwrap().generation),
            Some(_) => {
                w.commit().unwrap_err();
                None
            }
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn committed_sstables_are_found_and_unfinished_flushes_removed() {
        let data = tempfile::tempdir().unwrap();
        let flush = tempfile::tempdir().unwrap();
        let bases = [data.path(), flush.path()];
        let first = open_table_dirs("events", bases).unwrap();
        assert!(first.sstables().is_empty());
        assert_eq!(first.dirs()[1], flush.path().join("events"));

        let d = table_dir(data.path(), "events");
        let f = table_dir(flush.path(), "events");
        let g1 = write(&d, None).unwrap();
        let g2 = write(&f, None).unwrap();
        // A crash after the components were renamed but before the TOC.
        write(&f, Some(CommitStep::TocWritten));
        write(&d, Some(CommitStep::DataSynced));
        let g3 = write(&d, None).unwrap();

        let found = open_table_dirs("events", bases).unwrap();
        let id = |dir: &Path, generation| SstableId {
            dir: dir.to_path_buf(),
            generation,
        };
        assert_eq!(found.sstables(), [id(&d, g1), id(&d, g3), id(&f, g2)]);
        assert_eq!(found.removed_leftovers().len(), 2);
        assert!(
            !names(&d)
                .iter()
                .chain(&names(&f))
                .any(|n| n.ends_with(".tmp") || n.contains("TemporaryTOC")),
            "leftovers remain: {:?} {:?}",
            names(&d),
            names(&f)
        );
        // A second open finds the same and removes nothing.
        let again = open_table_dirs("events", bases).unwrap();
        assert_eq!(again.sstables(), found.sstables());
        assert!(again.removed_leftovers().is_empty());
        sstable::Sstable::open(&d, g1).unwrap().verify().unwrap();
    }

    #[test]
    fn dropped_tables_lose_their_directories_and_orphans_are_found() {
        let data = tempfile::tempdir().unwrap();
        let bases = [data.path()];
        open_table_dirs("keep", bases).unwrap();
        let gone = open_table_dirs("gone", bases).unwrap();
        write(&gone.dirs()[0], None).unwrap();
        fs::write(data.path().join("replica.catalog"), b"not a dir").unwrap();
        fs::create_dir(data.path().join("Not_A_Table")).unwrap();

        let orphans = orphan_table_dirs(bases, |t| t == "keep").unwrap();
        assert_eq!(orphans, [data.path().join("gone")]);
        remove_table_dirs("gone", bases).unwrap();
        remove_table_dirs("gone", bases).unwrap(); // already gone: fine
        assert!(
            orphan_table_dirs(bases, |t| t == "keep")
                .unwrap()
                .is_empty()
        );
        assert!(data.path().join("keep").is_dir());
    }

    #[test]
    fn bad_names_and_unusable_directories_are_errors() {
        let data = tempfile::tempdir().unwrap();
        for bad in ["..", "a/../../b", ""] {
            let e = open_table_dirs(bad, [data.path()]).unwrap_err();
            assert!(matches!(e, Error::InvalidTableName { .. }), "{e}");
            let e = remove_table_dirs(bad, [data.path()]).unwrap_err();
            assert!(matches!(e, Error::InvalidTableName { .. }), "{e}");
        }
        let file = data.path().join("plain-file");
        fs::write(&file, b"x").unwrap();
        let e = open_table_dirs("t", [file.as_path()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("create table directory") && e.contains("plain-file"),
            "{e}"
        );
        let e = orphan_table_dirs([file.as_path()], |_| true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("read directory"), "{e}");
    }
}
