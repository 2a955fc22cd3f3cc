//! Where a table's files live, what opening them finds, and which
//! directories the database owns.
//!
//! Each table has a directory named after it in every data directory and
//! every flush directory: `<dir>/<table>/sst-<generation>-<Component>`.
//! Generations are reserved per directory by the sstable writer, so an
//! sstable is named by its directory and generation together
//! ([`SstableId`]).
//!
//! # Ownership: the table marker
//!
//! Creating a table's directory writes a marker file in it,
//! [`TABLE_MARKER_FILE_NAME`], naming the table, its options and its
//! generation (the catalog's incarnation number), checksummed like the
//! catalog. The database removes only what it can identify as its own: a
//! directory whose marker names it, and in it only the marker and the
//! files the sstable writer names ([`sstable::is_sstable_file_name`]).
//! Anything else (a user's `photos/` beside the data, a file dropped in a
//! table directory) is left alone, and a directory left holding such files
//! stays.
//!
//! Directories without a marker were made by an earlier version or by
//! someone else. A table the catalog lists adopts its unmarked directory at
//! open (the catalog is the proof it is the database's; the marker is
//! written then). An unmarked directory of a table the catalog does not
//! list is never removed, and `create_table` refuses to use it
//! ([`Error::ForeignTableDirectory`]): the database cannot tell a dropped
//! table's leftovers from a user's directory, so it leaves the choice to
//! the operator.
//!
//! Opening a table ([`open_table_dirs`]) creates its missing directories,
//! lists the committed sstables in each, and removes the leftovers of
//! flushes that never committed, through [`sstable::SstableDirectory`].
//! It must run before any flush writes to those directories (at open, or
//! at `create_table`): an in-progress write looks exactly like a crashed
//! one.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use fs::{EntryKind, FsHandle};
use sstable::SstableDirectory;

use crate::catalog::{TableSchema, seal, sync_dir, unseal, validate_table_name, write_durably};
use crate::error::{Error, io_err};

/// The marker file in each table directory the database created. The dot
/// keeps it apart from sstable files.
pub const TABLE_MARKER_FILE_NAME: &str = "replica.table";
const MARKER_TMP_FILE_NAME: &str = "replica.table.tmp";
const MARKER_HEADER: &str = "replica-table 1";

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

/// Reads the table marker of the directory `dir`: `None` if it has none.
///
/// # Errors
/// [`Error::Corrupt`] if the marker is damaged; [`Error::Io`] if it cannot
/// be read.
pub fn read_table_marker(dir: &Path) -> Result<Option<TableSchema>, Error> {
    read_table_marker_on(&FsHandle::real(), dir)
}

/// As [`read_table_marker`], on the file system `fs`.
pub(crate) fn read_table_marker_on(
    fs: &FsHandle,
    dir: &Path,
) -> Result<Option<TableSchema>, Error> {
    let path = dir.join(TABLE_MARKER_FILE_NAME);
    let bytes = match fs.read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("read", &path)(e)),
    };
    let corrupt = |detail: String| Error::Corrupt {
        path: path.clone(),
        detail,
    };
    let body = unseal(&bytes).map_err(corrupt)?;
    let mut lines = body.lines();
    if lines.next() != Some(MARKER_HEADER) {
        return Err(corrupt(format!("line 1 is not {MARKER_HEADER:?}")));
    }
    let (Some(line), None) = (lines.next(), lines.next()) else {
        return Err(corrupt("expected exactly one table line".to_owned()));
    };
    let schema =
        TableSchema::from_line(line, false).map_err(|e| corrupt(format!("line 2: {e}")))?;
    Ok(Some(schema))
}

/// Writes `schema`'s marker into `dir`, durably.
fn write_table_marker(fs: &FsHandle, dir: &Path, schema: &TableSchema) -> Result<(), Error> {
    let bytes = seal(format!("{MARKER_HEADER}\n{}\n", schema.to_line()));
    write_durably(
        &**fs,
        &dir.join(MARKER_TMP_FILE_NAME),
        &dir.join(TABLE_MARKER_FILE_NAME),
        &bytes,
    )
}

/// What to do with a table directory that exists without a marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unmarked {
    /// The catalog lists the table: the directory is the database's.
    Adopt,
    /// A new table: the directory is someone else's.
    Refuse,
}

/// Opens the directories of `schema`'s table, a table the catalog lists,
/// in each of `bases` (the data directories, then the flush directories
/// not among them): creates a missing one with its marker, adopts an
/// unmarked one (writing its marker), clears one whose marker names an
/// older incarnation of the table (its sstables are a dropped table's),
/// removes the files of writes that never committed, and lists the
/// committed sstables.
///
/// # Errors
/// [`Error::InvalidTableName`] for a name that is not a table name;
/// [`Error::ForeignTableDirectory`] for a directory that is not a
/// directory, or whose marker names another table or a later incarnation;
/// [`Error::Corrupt`] for a damaged marker; [`Error::Io`] if a directory
/// cannot be created; [`Error::Sstable`] if a directory cannot be listed or
/// cleaned.
pub fn open_table_dirs<'a>(
    schema: &TableSchema,
    bases: impl IntoIterator<Item = &'a Path>,
) -> Result<TableFiles, Error> {
    open_table_dirs_on(&FsHandle::real(), schema, bases)
}

/// As [`open_table_dirs`], on the file system `fs`.
pub(crate) fn open_table_dirs_on<'a>(
    fs: &FsHandle,
    schema: &TableSchema,
    bases: impl IntoIterator<Item = &'a Path>,
) -> Result<TableFiles, Error> {
    open_dirs(fs, schema, bases, Unmarked::Adopt)
}

/// As [`open_table_dirs`], for a table being created: a directory of its
/// name that exists without a marker is refused
/// ([`Error::ForeignTableDirectory`]), not adopted.
///
/// # Errors
/// As [`open_table_dirs`].
pub(crate) fn create_table_dirs<'a>(
    fs: &FsHandle,
    schema: &TableSchema,
    bases: impl IntoIterator<Item = &'a Path>,
) -> Result<TableFiles, Error> {
    open_dirs(fs, schema, bases, Unmarked::Refuse)
}

fn open_dirs<'a>(
    fs: &FsHandle,
    schema: &TableSchema,
    bases: impl IntoIterator<Item = &'a Path>,
    unmarked: Unmarked,
) -> Result<TableFiles, Error> {
    let table = schema.name();
    validate_table_name(table)?;
    let mut files = TableFiles {
        table: table.to_owned(),
        dirs: Vec::new(),
        sstables: Vec::new(),
        removed_leftovers: Vec::new(),
    };
    for base in bases {
        let dir = table_dir(base, table);
        prepare_dir(fs, schema, base, &dir, unmarked)?;
        let listed = SstableDirectory::open_with(&dir, fs).map_err(|source| Error::Sstable {
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

/// Makes `dir` the marked directory of `schema`'s incarnation.
fn prepare_dir(
    fs: &FsHandle,
    schema: &TableSchema,
    base: &Path,
    dir: &Path,
    unmarked: Unmarked,
) -> Result<(), Error> {
    let foreign = |reason| Error::ForeignTableDirectory {
        table: schema.name().to_owned(),
        dir: dir.to_path_buf(),
        reason,
    };
    match fs.kind(dir) {
        Ok(None) => {
            fs.create_dir(dir)
                .map_err(io_err("create table directory", dir))?;
            write_table_marker(fs, dir, schema)?;
            return sync_dir(&**fs, base);
        }
        Err(e) => return Err(io_err("create table directory", dir)(e)),
        Ok(Some(EntryKind::File)) => return Err(foreign("it is not a directory")),
        Ok(Some(EntryKind::Dir)) => {}
    }
    match read_table_marker_on(fs, dir)? {
        Some(m) if m.name() != schema.name() => Err(foreign("its marker names another table")),
        Some(m) if m.generation() == schema.generation() => Ok(()),
        Some(m) if m.generation() < schema.generation() => {
            // A dropped incarnation's directory whose removal was cut
            // short: its sstables must not join the new table.
            remove_owned_files(fs, dir)?;
            write_table_marker(fs, dir, schema)
        }
        Some(_) => Err(foreign(
            "its marker names a later incarnation of the table than the catalog does",
        )),
        None => match unmarked {
            Unmarked::Adopt => write_table_marker(fs, dir, schema),
            Unmarked::Refuse => Err(foreign(
                "it exists without a replica.table marker, so this database did not create it",
            )),
        },
    }
}

/// Removes the sstable files and the temporary marker in `dir` (not the
/// marker itself), leaving every other file alone.
fn remove_owned_files(fs: &FsHandle, dir: &Path) -> Result<(), Error> {
    for path in fs.read_dir(dir).map_err(io_err("read directory", dir))? {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let is_file =
            fs.kind(&path).map_err(io_err("read directory", dir))? == Some(EntryKind::File);
        let owned = sstable::is_sstable_file_name(name)
            || crate::database::sstables::is_compaction_file_name(name)
            || name == MARKER_TMP_FILE_NAME;
        if is_file && owned {
            match fs.remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("remove", &path)(e)),
            }
        }
    }
    sync_dir(&**fs, dir)
}

/// Removes a table directory the database owns: its sstable files, then
/// its marker (last, so an interrupted removal is finished at the next
/// open), then the directory itself if nothing foreign is left in it.
fn remove_owned_dir(fs: &FsHandle, dir: &Path) -> Result<(), Error> {
    remove_owned_files(fs, dir)?;
    let marker = dir.join(TABLE_MARKER_FILE_NAME);
    match fs.remove_file(&marker) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("remove", &marker)(e)),
    }
    match fs.remove_dir(dir) {
        Ok(()) => {}
        // Files that are not the database's stay, and so does their
        // directory.
        Err(e) if e.kind() == ErrorKind::DirectoryNotEmpty => return sync_dir(&**fs, dir),
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("remove table directory", dir)(e)),
    }
    match dir.parent() {
        Some(base) => sync_dir(&**fs, base),
        None => Ok(()),
    }
}

/// Removes the directories of `schema`'s incarnation from each of `bases`
/// (only its marker and sstable files go, then the directory if nothing
/// else is left in it; a directory whose marker is missing or names another
/// incarnation is left alone; missing directories are skipped). For `drop_table`, after
/// the catalog has forgotten the table.
///
/// # Errors
/// [`Error::InvalidTableName`] for a name that is not a table name (so a
/// bad name can never reach outside the base directories); [`Error::Io`]
/// if a file or directory cannot be removed.
pub fn remove_table_dirs<'a>(
    schema: &TableSchema,
    bases: impl IntoIterator<Item = &'a Path>,
) -> Result<(), Error> {
    remove_table_dirs_on(&FsHandle::real(), schema, bases)
}

/// As [`remove_table_dirs`], on the file system `fs`.
pub(crate) fn remove_table_dirs_on<'a>(
    fs: &FsHandle,
    schema: &TableSchema,
    bases: impl IntoIterator<Item = &'a Path>,
) -> Result<(), Error> {
    validate_table_name(schema.name())?;
    for base in bases {
        let dir = table_dir(base, schema.name());
        if !matches!(fs.kind(&dir), Ok(Some(EntryKind::Dir))) {
            continue;
        }
        // A damaged marker is not proof of ownership: left alone.
        let owned = read_table_marker_on(fs, &dir)
            .ok()
            .flatten()
            .is_some_and(|m| m.name() == schema.name() && m.generation() == schema.generation());
        if owned {
            remove_owned_dir(fs, &dir)?;
        }
    }
    Ok(())
}

/// What reading a directory's marker gave.
type MarkerRead = Result<Option<TableSchema>, Error>;

/// The subdirectories of `bases` named like a table, with their markers
/// (`None` for an unmarked one; damaged markers are errors).
fn table_named_dirs<'a>(
    fs: &FsHandle,
    bases: impl IntoIterator<Item = &'a Path>,
) -> Result<Vec<(PathBuf, MarkerRead)>, Error> {
    let mut found = Vec::new();
    for base in bases {
        for path in fs.read_dir(base).map_err(io_err("read directory", base))? {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if validate_table_name(name).is_err() {
                continue;
            }
            let is_dir =
                fs.kind(&path).map_err(io_err("read directory", base))? == Some(EntryKind::Dir);
            if is_dir {
                let marker = read_table_marker_on(fs, &path);
                found.push((path, marker));
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

/// Table directories in `bases` that the database owns (their marker names
/// them) but whose table `is_known` rejects: what a crash between a
/// `drop_table`'s catalog change and its file removal leaves behind.
/// Unmarked directories, damaged markers and markers naming another
/// directory are not provably the database's and are left out.
///
/// # Errors
/// [`Error::Io`] if a base directory cannot be listed.
pub fn orphan_table_dirs<'a>(
    bases: impl IntoIterator<Item = &'a Path>,
    is_known: impl Fn(&str) -> bool,
) -> Result<Vec<PathBuf>, Error> {
    orphan_table_dirs_on(&FsHandle::real(), bases, is_known)
}

/// As [`orphan_table_dirs`], on the file system `fs`.
pub(crate) fn orphan_table_dirs_on<'a>(
    fs: &FsHandle,
    bases: impl IntoIterator<Item = &'a Path>,
    is_known: impl Fn(&str) -> bool,
) -> Result<Vec<PathBuf>, Error> {
    Ok(table_named_dirs(fs, bases)?
        .into_iter()
        .filter_map(|(path, marker)| {
            let schema = marker.ok().flatten()?;
            let named_so = path.file_name().and_then(|n| n.to_str()) == Some(schema.name());
            (named_so && !is_known(schema.name())).then_some(path)
        })
        .collect())
}

/// Removes the orphan table directory `dir` (one [`orphan_table_dirs`]
/// listed): its marker and sstable files, and the directory if nothing
/// else is left in it.
///
/// # Errors
/// [`Error::Io`] if a file or directory cannot be removed.
pub(crate) fn remove_orphan_table_dir(fs: &FsHandle, dir: &Path) -> Result<(), Error> {
    remove_owned_dir(fs, dir)
}

/// The first table data found in `bases` or in the commit-log directory
/// `commitlog_dir`, if any: a table-named directory with a marker or an
/// sstable file, or a commit log holding any file. For a missing catalog:
/// with table data it was lost; without, the directories are new.
///
/// # Errors
/// [`Error::Io`] if a directory cannot be listed.
pub(crate) fn find_table_data<'a>(
    fs: &FsHandle,
    bases: impl IntoIterator<Item = &'a Path>,
    commitlog_dir: &Path,
) -> Result<Option<PathBuf>, Error> {
    for (dir, marker) in table_named_dirs(fs, bases)? {
        if !matches!(marker, Ok(None)) || has_sstable_file(fs, &dir)? {
            return Ok(Some(dir));
        }
    }
    match fs.read_dir(commitlog_dir) {
        Ok(entries) => {
            if !entries.is_empty() {
                return Ok(Some(commitlog_dir.to_path_buf()));
            }
            Ok(None)
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("read directory", commitlog_dir)(e)),
    }
}

fn has_sstable_file(fs: &FsHandle, dir: &Path) -> Result<bool, Error> {
    for entry in fs.read_dir(dir).map_err(io_err("read directory", dir))? {
        if entry
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(sstable::is_sstable_file_name)
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The tables that the directories of `bases` hold, for rebuilding a lost
/// catalog: each marked directory's table at the highest generation found
/// for its name (lower ones are dropped incarnations, cleared at open),
/// and, for a name with no marked directory, an unmarked table-named
/// directory holding sstable files (an earlier version's) as a user table
/// of generation 0, whose commit-log id that version used.
///
/// # Errors
/// [`Error::Corrupt`] for a damaged marker (the operator decides);
/// [`Error::Io`] if a directory cannot be listed.
pub(crate) fn tables_in_dirs<'a>(
    fs: &FsHandle,
    bases: impl IntoIterator<Item = &'a Path>,
) -> Result<Vec<TableSchema>, Error> {
    let mut marked: std::collections::BTreeMap<String, TableSchema> = Default::default();
    let mut unmarked = Vec::new();
    for (dir, marker) in table_named_dirs(fs, bases)? {
        let named = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        match marker? {
            Some(schema) if schema.name() == named => {
                let newer = marked
                    .get(&named)
                    .is_none_or(|m| m.generation() < schema.generation());
                if newer {
                    marked.insert(named, schema);
                }
            }
            Some(_) => {}
            None => {
                if has_sstable_file(fs, &dir)? {
                    unmarked.push(named);
                }
            }
        }
    }
    for name in unmarked {
        if let std::collections::btree_map::Entry::Vacant(slot) = marked.entry(name) {
            let schema = TableSchema::new(slot.key().clone())?;
            slot.insert(schema);
        }
    }
    Ok(marked.into_values().collect())
}

#[cfg(test)]
mod tests {
    use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
    use sstable::{CommitStep, Writer, WriterOptions};

    use std::fs;

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

    fn schema(name: &str, generation: u64) -> TableSchema {
        TableSchema::new(name).unwrap().at_generation(generation)
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
        let first = open_table_dirs(&schema("events", 1), bases).unwrap();
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

        let found = open_table_dirs(&schema("events", 1), bases).unwrap();
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
        let again = open_table_dirs(&schema("events", 1), bases).unwrap();
        assert_eq!(again.sstables(), found.sstables());
        assert!(again.removed_leftovers().is_empty());
        sstable::Sstable::open(&d, g1).unwrap().verify().unwrap();
    }

    #[test]
    fn dropped_tables_lose_only_their_own_files_and_orphans_are_found() {
        let data = tempfile::tempdir().unwrap();
        let bases = [data.path()];
        open_table_dirs(&schema("keep", 1), bases).unwrap();
        let gone = open_table_dirs(&schema("gone", 2), bases).unwrap();
        write(&gone.dirs()[0], None).unwrap();
        assert_eq!(
            read_table_marker(&gone.dirs()[0]).unwrap(),
            Some(schema("gone", 2))
        );
        // Not the database's: a file, a badly named directory, an
        // unmarked table-named directory, and a user's file inside a table
        // directory.
        fs::write(data.path().join("replica.catalog"), b"not a dir").unwrap();
        fs::create_dir(data.path().join("Not_A_Table")).unwrap();
        fs::create_dir(data.path().join("photos")).unwrap();
        fs::write(data.path().join("photos/sst-1-Data.db"), b"mine").unwrap();
        fs::create_dir(data.path().join("mixed")).unwrap();
        let mixed = open_table_dirs(&schema("mixed", 3), bases).unwrap();
        write(&mixed.dirs()[0], None).unwrap();
        fs::write(data.path().join("mixed/notes.txt"), b"mine").unwrap();

        let is_known = |t: &str| t == "keep";
        let orphans = orphan_table_dirs(bases, is_known).unwrap();
        assert_eq!(
            orphans,
            [data.path().join("gone"), data.path().join("mixed")]
        );
        remove_table_dirs(&schema("gone", 1), bases).unwrap(); // another incarnation
        assert!(data.path().join("gone").is_dir());
        remove_table_dirs(&schema("gone", 2), bases).unwrap();
        remove_table_dirs(&schema("gone", 2), bases).unwrap(); // already gone: fine
        assert!(!data.path().join("gone").exists());
        remove_orphan_table_dir(&FsHandle::real(), &data.path().join("mixed")).unwrap();
        assert_eq!(names(&data.path().join("mixed")), ["notes.txt"]);
        assert!(orphan_table_dirs(bases, is_known).unwrap().is_empty());
        assert!(data.path().join("keep").is_dir());
        assert_eq!(names(&data.path().join("photos")), ["sst-1-Data.db"]);
        // Only the table data counts: photos/ has an sstable-like file.
        let log = data.path().join("log");
        let found = find_table_data(&FsHandle::real(), bases, &log).unwrap();
        assert_eq!(found, Some(data.path().join("keep")));
    }

    #[test]
    fn unmarked_directories_are_adopted_at_open_and_refused_at_create() {
        let data = tempfile::tempdir().unwrap();
        let bases = [data.path()];
        let dir = data.path().join("old");
        fs::create_dir(&dir).unwrap();
        let e = create_table_dirs(&FsHandle::real(), &schema("old", 1), bases).unwrap_err();
        assert!(
            matches!(e, Error::ForeignTableDirectory { .. })
                && e.to_string().contains("without a replica.table marker"),
            "{e}"
        );
        assert_eq!(read_table_marker(&dir).unwrap(), None);
        open_table_dirs(&schema("old", 0), bases).unwrap();
        assert_eq!(read_table_marker(&dir).unwrap(), Some(schema("old", 0)));
        // A later incarnation clears the older one's sstables.
        write(&dir, None).unwrap();
        fs::write(dir.join("notes.txt"), b"mine").unwrap();
        let files = open_table_dirs(&schema("old", 4), bases).unwrap();
        assert!(files.sstables().is_empty());
        assert_eq!(names(&dir), ["notes.txt", TABLE_MARKER_FILE_NAME]);
        // An earlier one, or another table's marker, is refused.
        let e = open_table_dirs(&schema("old", 3), bases).unwrap_err();
        assert!(e.to_string().contains("later incarnation"), "{e}");
        fs::rename(&dir, data.path().join("renamed")).unwrap();
        let e = open_table_dirs(&schema("renamed", 4), bases).unwrap_err();
        assert!(e.to_string().contains("another table"), "{e}");
        // A damaged marker is an error naming it.
        let marker = data.path().join("renamed").join(TABLE_MARKER_FILE_NAME);
        fs::write(&marker, b"garbage\n").unwrap();
        let e = open_table_dirs(&schema("renamed", 4), bases).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains(TABLE_MARKER_FILE_NAME), "{e}");
    }

    #[test]
    fn unusable_directories_are_errors() {
        let data = tempfile::tempdir().unwrap();
        let file = data.path().join("plain-file");
        fs::write(&file, b"x").unwrap();
        let e = open_table_dirs(&schema("t", 1), [file.as_path()])
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
        fs::write(data.path().join("t"), b"x").unwrap();
        let e = open_table_dirs(&schema("t", 1), [data.path()]).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
    }
}
