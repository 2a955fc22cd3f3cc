//! The table catalog: which tables exist, persisted in the first data
//! directory so it survives a reopen.
//!
//! The file `replica.catalog` is text, one table per line, closed by a
//! crc32c of everything before it:
//!
//! ```text
//! replica-catalog 2
//! next-generation 4
//! table users system=0 generation=1
//! table peers system=1 generation=3
//! crc32c 5f3a09c1
//! ```
//!
//! Each table incarnation has a generation, unique in the database: a
//! `create_table` takes the catalog's next generation, so a table dropped
//! and created again under the same name is a different table. Its
//! commit-log id ([`TableSchema::log_id`]) hashes name and generation, so
//! replay refuses a dropped incarnation's entries even if the log's drop
//! record were lost. Catalogs of version 1 (no generations, written before
//! this) are read with generation 0 for every table, whose log id is the
//! name's hash alone, as it was then.
//!
//! Every change writes `replica.catalog.tmp`, fsyncs it, renames it over
//! the catalog and fsyncs the directory: a crash leaves either the old
//! catalog or the new one, never a mix. A leftover `.tmp` (a crash before
//! the rename) is removed at load. A change that fails to persist leaves
//! the catalog in memory unchanged.
//!
//! A missing catalog is an error ([`Error::CatalogMissing`]), never an
//! empty database: [`Catalog::create`] makes a new one, which
//! [`Database::open`](crate::Database::open) does only for directories
//! holding no table data, and
//! [`Database::rebuild_catalog`](crate::Database::rebuild_catalog) rebuilds
//! a lost one from the tables' directory markers.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use fs::{FileSystem, FsHandle, OpenOptions};

use commitlog::TableId;

use crate::error::{Error, io_err};

/// The catalog's file name in the first data directory. The dot keeps it
/// apart from table directories, whose names cannot contain one.
pub const CATALOG_FILE_NAME: &str = "replica.catalog";
const TMP_SUFFIX: &str = ".tmp";
const HEADER_V1: &str = "replica-catalog 1";
const HEADER: &str = "replica-catalog 2";

/// The longest table name (Cassandra's limit).
pub const MAX_TABLE_NAME_LEN: usize = 48;

/// The most tables a catalog holds.
pub const MAX_TABLES: usize = 10_000;

/// Checks a table name: 1 to [`MAX_TABLE_NAME_LEN`] characters, a
/// lowercase ASCII letter first, then lowercase letters, digits and `_`
/// (CQL's unquoted identifiers). Such a name is a safe directory name on
/// every file system, case-insensitive ones included.
///
/// # Errors
/// [`Error::InvalidTableName`] saying what is wrong.
pub fn validate_table_name(name: &str) -> Result<(), Error> {
    let bad = |reason| Error::InvalidTableName {
        name: name.to_owned(),
        reason,
    };
    let Some(first) = name.bytes().next() else {
        return Err(bad("a table name needs at least 1 character"));
    };
    if name.len() > MAX_TABLE_NAME_LEN {
        return Err(bad("a table name has at most 48 characters"));
    }
    if !first.is_ascii_lowercase() {
        return Err(bad("a table name starts with a lowercase ASCII letter"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(bad(
            "a table name holds only lowercase ASCII letters, digits and '_'",
        ));
    }
    Ok(())
}

/// Per-table options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableOptions {
    /// A system table: its memtables draw on the small system budget, so
    /// its writes never queue behind user writes.
    pub system: bool,
    /// Reads of the table skip the row cache (memtables and sstables
    /// only), whatever [`DatabaseConfig::cache_size`](crate::DatabaseConfig::cache_size)
    /// says. Persisted in the catalog as `cache=0` (absent: cached).
    pub uncached: bool,
}

/// A table's schema: its name, options and generation. Keys and values
/// are the `mutation` crate's bytes, so there are no columns to declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    name: String,
    options: TableOptions,
    generation: u64,
}

impl TableSchema {
    /// A user table named `name` with default options.
    ///
    /// # Errors
    /// [`Error::InvalidTableName`] (see [`validate_table_name`]).
    pub fn new(name: impl Into<String>) -> Result<Self, Error> {
        Self::with_options(name, TableOptions::default())
    }

    /// A table named `name` with `options`.
    ///
    /// # Errors
    /// [`Error::InvalidTableName`] (see [`validate_table_name`]).
    pub fn with_options(name: impl Into<String>, options: TableOptions) -> Result<Self, Error> {
        let name = name.into();
        validate_table_name(&name)?;
        Ok(TableSchema {
            name,
            options,
            generation: 0,
        })
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table's options.
    pub fn options(&self) -> TableOptions {
        self.options
    }

    /// The table incarnation's generation: the catalog gives each
    /// `create_table` a new one (0 for a schema not yet created, and for
    /// tables of a version-1 catalog).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The table incarnation's commit-log id: a 64-bit FNV-1a hash of the
    /// name and, for generations above 0, a `0xff` byte (no name holds
    /// one) and the generation's little-endian bytes. Generation 0 hashes
    /// the name alone, the id version-1 catalogs' tables were logged under.
    pub fn log_id(&self) -> TableId {
        let fnv = |h: u64, b: u8| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        let h = self.name.bytes().fold(0xcbf2_9ce4_8422_2325, fnv);
        if self.generation == 0 {
            return h;
        }
        std::iter::once(0xff)
            .chain(self.generation.to_le_bytes())
            .fold(h, fnv)
    }

    /// `self` with generation `generation`.
    pub(crate) fn at_generation(mut self, generation: u64) -> Self {
        self.generation = generation;
        self
    }

    /// The schema as a catalog or marker line:
    /// `table <name> system=<0|1> generation=<n>`.
    pub(crate) fn to_line(&self) -> String {
        format!(
            "table {} system={} generation={}{}",
            self.name,
            u8::from(self.options.system),
            self.generation,
            if self.options.uncached {
                " cache=0"
            } else {
                ""
            }
        )
    }

    /// Parses [`to_line`](Self::to_line)'s output; without a generation
    /// field only if `generation_optional` (version-1 catalogs), which
    /// gives generation 0.
    pub(crate) fn from_line(line: &str, generation_optional: bool) -> Result<Self, String> {
        let mut fields = line.split(' ');
        let expected = if generation_optional {
            "expected `table <name> system=<0|1>`"
        } else {
            "expected `table <name> system=<0|1> generation=<n>`"
        };
        let (Some("table"), Some(name), Some(system), generation, cache, None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err(expected.to_owned());
        };
        // Written only for an uncached table, after the generation.
        let uncached = match (cache, generation_optional) {
            (None, _) => false,
            (Some("cache=0"), false) => true,
            (Some("cache=1"), false) => false,
            _ => return Err("expected nothing, cache=0 or cache=1 after the generation".to_owned()),
        };
        let system = match system {
            "system=0" => false,
            "system=1" => true,
            _ => return Err("expected system=0 or system=1".to_owned()),
        };
        let generation = match (generation, generation_optional) {
            (None, true) => 0,
            (Some(g), false) => g
                .strip_prefix("generation=")
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse().ok())
                .ok_or("expected generation=<decimal number>")?,
            _ => return Err(expected.to_owned()),
        };
        let schema = TableSchema::with_options(name, TableOptions { system, uncached })
            .map_err(|e| e.to_string())?;
        Ok(schema.at_generation(generation))
    }
}

/// The tables of a database, persisted atomically.
///
/// ```
/// use replica::{Catalog, TableSchema};
///
/// let dir = tempfile::tempdir()?;
/// let mut catalog = Catalog::create(dir.path())?;
/// let users = catalog.create_table(TableSchema::new("users")?)?;
/// assert_eq!(users.generation(), 1);
/// drop(catalog);
/// let catalog = Catalog::load(dir.path())?;
/// assert_eq!(catalog.names().collect::<Vec<_>>(), ["users"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Catalog {
    /// The file system the catalog is on.
    fs: FsHandle,
    path: PathBuf,
    state: State,
}

/// What the catalog file holds.
#[derive(Debug, Clone)]
struct State {
    tables: BTreeMap<String, TableSchema>,
    /// The generation the next `create_table` takes.
    next_generation: u64,
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(TMP_SUFFIX);
    PathBuf::from(p)
}

/// Removes the leftover temporary file of an interrupted change.
fn remove_tmp(fs: &dyn FileSystem, dir: &Path, path: &Path) -> Result<(), Error> {
    let tmp = tmp_path(path);
    match fs.remove_file(&tmp) {
        Ok(()) => sync_dir(fs, dir),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err("remove", &tmp)(e)),
    }
}

impl Catalog {
    /// Loads the catalog of the data directory `dir`, removing a leftover
    /// temporary file of an interrupted change.
    ///
    /// # Errors
    /// [`Error::CatalogMissing`] if there is none (a missing catalog is
    /// never taken for an empty one); [`Error::Corrupt`] if the file is
    /// damaged (the detail names the line or the checksums);
    /// [`Error::Io`] if it cannot be read.
    pub fn load(dir: &Path) -> Result<Self, Error> {
        Self::load_on(dir, &FsHandle::real())
    }

    /// As [`load`](Self::load), on the file system `fs`.
    ///
    /// # Errors
    /// As [`load`](Self::load).
    pub fn load_on(dir: &Path, fs: &FsHandle) -> Result<Self, Error> {
        let path = dir.join(CATALOG_FILE_NAME);
        remove_tmp(&**fs, dir, &path)?;
        let bytes = match fs.read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(Error::CatalogMissing { path, found: None });
            }
            Err(e) => return Err(io_err("read", &path)(e)),
        };
        let state = decode(&bytes).map_err(|detail| Error::Corrupt {
            path: path.clone(),
            detail,
        })?;
        Ok(Catalog {
            fs: fs.clone(),
            path,
            state,
        })
    }

    /// Creates and persists an empty catalog in the data directory `dir`.
    ///
    /// # Errors
    /// [`Error::CatalogExists`] if `dir` has one already (it is left as it
    /// is); [`Error::Io`] if it cannot be written.
    pub fn create(dir: &Path) -> Result<Self, Error> {
        Self::create_on(dir, &FsHandle::real())
    }

    /// As [`create`](Self::create), on the file system `fs`.
    ///
    /// # Errors
    /// As [`create`](Self::create).
    pub fn create_on(dir: &Path, fs: &FsHandle) -> Result<Self, Error> {
        Self::create_with(fs, dir, Vec::new())
    }

    /// Creates and persists a catalog of `tables` (their generations kept;
    /// the next generation above them all).
    pub(crate) fn create_with(
        fs: &FsHandle,
        dir: &Path,
        tables: Vec<TableSchema>,
    ) -> Result<Self, Error> {
        let path = dir.join(CATALOG_FILE_NAME);
        match fs.kind(&path) {
            Ok(Some(_)) => return Err(Error::CatalogExists { path }),
            Ok(None) => {}
            Err(e) => return Err(io_err("read", &path)(e)),
        }
        remove_tmp(&**fs, dir, &path)?;
        let state = State {
            next_generation: tables.iter().map(|t| t.generation).max().unwrap_or(0) + 1,
            tables: tables.into_iter().map(|t| (t.name.clone(), t)).collect(),
        };
        let catalog = Catalog {
            fs: fs.clone(),
            path,
            state,
        };
        catalog.persist(&catalog.state)?;
        Ok(catalog)
    }

    /// The catalog file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The tables, by name.
    pub fn tables(&self) -> impl Iterator<Item = &TableSchema> {
        self.state.tables.values()
    }

    /// The table names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.state.tables.keys().map(String::as_str)
    }

    /// The number of tables.
    pub fn len(&self) -> usize {
        self.state.tables.len()
    }

    /// True without tables.
    pub fn is_empty(&self) -> bool {
        self.state.tables.is_empty()
    }

    /// The table `name`.
    ///
    /// # Errors
    /// [`Error::UnknownTable`] if there is none.
    pub fn get(&self, name: &str) -> Result<&TableSchema, Error> {
        self.state
            .tables
            .get(name)
            .ok_or_else(|| Error::UnknownTable {
                name: name.to_owned(),
            })
    }

    /// Adds `schema` as a new table incarnation and persists the catalog;
    /// returns the schema with the generation it was given (the catalog's
    /// next one; `schema`'s own is ignored).
    ///
    /// # Errors
    /// [`Error::TableExists`], [`Error::TooManyTables`], or the I/O error
    /// of persisting; the catalog is then unchanged.
    pub fn create_table(&mut self, schema: TableSchema) -> Result<TableSchema, Error> {
        validate_table_name(&schema.name)?;
        if self.state.tables.contains_key(&schema.name) {
            return Err(Error::TableExists { name: schema.name });
        }
        if self.state.tables.len() >= MAX_TABLES {
            return Err(Error::TooManyTables {
                name: schema.name,
                limit: MAX_TABLES,
            });
        }
        let mut next = self.state.clone();
        // Skip the (astronomically unlikely) generations whose log id
        // another live table has: ids must be unique among live tables.
        let mut schema = schema.at_generation(next.next_generation);
        while next.tables.values().any(|t| t.log_id() == schema.log_id()) {
            schema.generation += 1;
        }
        next.next_generation = schema.generation + 1;
        next.tables.insert(schema.name.clone(), schema.clone());
        self.persist(&next)?;
        self.state = next;
        Ok(schema)
    }

    /// Removes the table `name` and persists the catalog; returns its
    /// schema. Removing the table's files is the caller's next step. The
    /// generation counter is kept, so the name's next incarnation gets a
    /// new one.
    ///
    /// # Errors
    /// [`Error::UnknownTable`], or the I/O error of persisting; the catalog
    /// is then unchanged.
    pub fn drop_table(&mut self, name: &str) -> Result<TableSchema, Error> {
        let mut next = self.state.clone();
        let schema = next
            .tables
            .remove(name)
            .ok_or_else(|| Error::UnknownTable {
                name: name.to_owned(),
            })?;
        self.persist(&next)?;
        self.state = next;
        Ok(schema)
    }

    /// Writes `state` to the temporary file, then renames it over the
    /// catalog, with the fsyncs that make the change atomic and durable.
    fn persist(&self, state: &State) -> Result<(), Error> {
        let tmp = tmp_path(&self.path);
        let bytes = encode(state);
        write_durably(&*self.fs, &tmp, &self.path, &bytes)
    }
}

/// Writes `bytes` to `tmp`, fsyncs it, renames it to `path` and fsyncs the
/// directory: `path` then holds either its old contents or `bytes`.
pub(crate) fn write_durably(
    fs: &dyn FileSystem,
    tmp: &Path,
    path: &Path,
    bytes: &[u8],
) -> Result<(), Error> {
    let file = fs
        .open(tmp, &OpenOptions::create_truncate())
        .map_err(io_err("create", tmp))?;
    file.write_all_at(bytes, 0)
        .and_then(|()| file.sync_all())
        .map_err(io_err("write", tmp))?;
    drop(file);
    fs.rename(tmp, path).map_err(io_err("rename", tmp))?;
    match path.parent() {
        Some(dir) => sync_dir(fs, dir),
        None => Ok(()),
    }
}

pub(crate) fn sync_dir(fs: &dyn FileSystem, dir: &Path) -> Result<(), Error> {
    fs.sync_dir(dir).map_err(io_err("fsync directory", dir))
}

/// `body` followed by its crc32c line.
pub(crate) fn seal(mut body: String) -> Vec<u8> {
    let crc = crc32c::crc32c(body.as_bytes());
    body.push_str(&format!("crc32c {crc:08x}\n"));
    body.into_bytes()
}

/// The body of [`seal`]'s output, its checksum verified.
pub(crate) fn unseal(bytes: &[u8]) -> Result<&str, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.valid_up_to()
        )
    })?;
    let body_end = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map(|i| i + 1)
        .ok_or("no checksum line")?;
    let (body, tail) = text.split_at(body_end);
    let stored = tail
        .strip_prefix("crc32c ")
        .map(str::trim_end)
        .filter(|h| h.len() == 8)
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or_else(|| format!("last line {:?} is not a crc32c checksum", tail.trim_end()))?;
    let actual = crc32c::crc32c(body.as_bytes());
    if stored != actual {
        return Err(format!(
            "checksum mismatch: stored crc32c {stored:08x}, contents have {actual:08x}"
        ));
    }
    Ok(body)
}

fn encode(state: &State) -> Vec<u8> {
    let mut text = format!("{HEADER}\nnext-generation {}\n", state.next_generation);
    for t in state.tables.values() {
        text.push_str(&t.to_line());
        text.push('\n');
    }
    seal(text)
}

fn decode(bytes: &[u8]) -> Result<State, String> {
    let body = unseal(bytes)?;
    let mut lines = body.lines().enumerate().peekable();
    let v1 = match lines.next() {
        Some((_, HEADER)) => false,
        Some((_, HEADER_V1)) => true,
        other => {
            return Err(format!(
                "line 1 is {:?}, expected {HEADER:?} or {HEADER_V1:?}",
                other.map_or("", |(_, l)| l)
            ));
        }
    };
    let mut next_generation = 1;
    if !v1 {
        let (i, line) = lines.next().unwrap_or((1, ""));
        next_generation = line
            .strip_prefix("next-generation ")
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("line {}: expected `next-generation <n>`: {line:?}", i + 1))?;
    }
    let mut tables = BTreeMap::new();
    for (i, line) in lines {
        let bad = |what: &str| format!("line {}: {what}: {line:?}", i + 1);
        let schema = TableSchema::from_line(line, v1).map_err(|e| bad(&e))?;
        if !v1 && schema.generation >= next_generation {
            return Err(bad(&format!(
                "generation not below the next generation {next_generation}"
            )));
        }
        if tables.insert(schema.name.clone(), schema).is_some() {
            return Err(bad("table listed twice"));
        }
    }
    Ok(State {
        tables,
        next_generation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uncached_option_survives_a_reload_and_is_written_only_when_set() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::create(dir.path()).unwrap();
        let options = TableOptions {
            uncached: true,
            ..TableOptions::default()
        };
        c.create_table(TableSchema::with_options("cold", options).unwrap())
            .unwrap();
        c.create_table(TableSchema::new("hot").unwrap()).unwrap();
        let text = String::from_utf8_lossy(&std::fs::read(c.path()).unwrap()).into_owned();
        assert!(
            text.contains("table cold system=0 generation=1 cache=0"),
            "{text}"
        );
        assert!(text.contains("table hot system=0 generation=2\n"), "{text}");
        let c = Catalog::load(dir.path()).unwrap();
        assert!(c.get("cold").unwrap().options().uncached);
        assert!(!c.get("hot").unwrap().options().uncached);
        for bad in [
            "table t system=0 generation=1 cache=2",
            "table t system=0 generation=1 cache=0 more",
        ] {
            assert!(TableSchema::from_line(bad, false).is_err(), "{bad}");
        }
        assert!(TableSchema::from_line("table t system=0 cache=0", true).is_err());
    }

    #[test]
    fn the_table_limit_is_enforced() {
        let dir = tempfile::tempdir().unwrap();
        let c = Catalog::create(dir.path()).unwrap();
        // Fill in memory, then persist once, to keep the test fast.
        let mut many = BTreeMap::new();
        for i in 0..MAX_TABLES {
            let s = TableSchema::new(format!("t{i}")).unwrap();
            many.insert(s.name.clone(), s);
        }
        c.persist(&State {
            tables: many,
            next_generation: 1,
        })
        .unwrap();
        let mut c = Catalog::load(dir.path()).unwrap();
        assert_eq!(c.len(), MAX_TABLES);
        let e = c
            .create_table(TableSchema::new("one_more").unwrap())
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot create table \"one_more\": the catalog already holds the maximum of 10000 tables"
        );
    }

    #[test]
    fn a_leftover_temporary_file_is_removed_and_the_old_catalog_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::create(dir.path()).unwrap();
        c.create_table(TableSchema::new("kept").unwrap()).unwrap();
        let tmp = tmp_path(c.path());
        std::fs::write(&tmp, b"half a catalog").unwrap();
        let c = Catalog::load(dir.path()).unwrap();
        assert_eq!(c.names().collect::<Vec<_>>(), ["kept"]);
        assert!(!tmp.exists());
    }

    #[test]
    fn a_failed_persist_leaves_the_catalog_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::create(dir.path()).unwrap();
        c.create_table(TableSchema::new("a").unwrap()).unwrap();
        // A directory where the temporary file goes makes the write fail.
        std::fs::create_dir(tmp_path(c.path())).unwrap();
        let e = c.create_table(TableSchema::new("b").unwrap()).unwrap_err();
        assert!(matches!(e, Error::Io { op: "create", .. }), "{e}");
        let e = c.drop_table("a").unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
        assert_eq!(c.names().collect::<Vec<_>>(), ["a"]);
    }
}
