//! The table catalog: which tables exist, persisted in the first data
//! directory so it survives a reopen.
//!
//! The file `replica.catalog` is text, one table per line, closed by a
//! crc32c of everything before it:
//!
//! ```text
//! replica-catalog 1
//! table users system=0
//! table peers system=1
//! crc32c 5f3a09c1
//! ```
//!
//! Every change writes `replica.catalog.tmp`, fsyncs it, renames it over
//! the catalog and fsyncs the directory: a crash leaves either the old
//! catalog or the new one, never a mix. A leftover `.tmp` (a crash before
//! the rename) is removed at load. A change that fails to persist leaves
//! the catalog in memory unchanged.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, io_err};

/// The catalog's file name in the first data directory. The dot keeps it
/// apart from table directories, whose names cannot contain one.
pub const CATALOG_FILE_NAME: &str = "replica.catalog";
const TMP_SUFFIX: &str = ".tmp";
const HEADER: &str = "replica-catalog 1";

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
}

/// A table's schema: its name and options. Keys and values are the
/// `mutation` crate's bytes, so there are no columns to declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    name: String,
    options: TableOptions,
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
        Ok(TableSchema { name, options })
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table's options.
    pub fn options(&self) -> TableOptions {
        self.options
    }
}

/// The tables of a database, persisted atomically.
///
/// ```
/// use replica::{Catalog, TableSchema};
///
/// let dir = tempfile::tempdir()?;
/// let mut catalog = Catalog::load(dir.path())?;
/// catalog.create_table(TableSchema::new("users")?)?;
/// drop(catalog);
/// let catalog = Catalog::load(dir.path())?;
/// assert_eq!(catalog.names().collect::<Vec<_>>(), ["users"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Catalog {
    path: PathBuf,
    tables: BTreeMap<String, TableSchema>,
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(TMP_SUFFIX);
    PathBuf::from(p)
}

impl Catalog {
    /// Loads the catalog of the data directory `dir` (an empty one if the
    /// directory has none yet), removing a leftover temporary file of an
    /// interrupted change.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the file is damaged (the detail names the
    /// line or the checksums); [`Error::Io`] if it cannot be read.
    pub fn load(dir: &Path) -> Result<Self, Error> {
        let path = dir.join(CATALOG_FILE_NAME);
        let tmp = tmp_path(&path);
        match fs::remove_file(&tmp) {
            Ok(()) => sync_dir(dir)?,
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("remove", &tmp)(e)),
        }
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Ok(Catalog {
                    path,
                    tables: BTreeMap::new(),
                });
            }
            Err(e) => return Err(io_err("read", &path)(e)),
        };
        let tables = decode(&bytes).map_err(|detail| Error::Corrupt {
            path: path.clone(),
            detail,
        })?;
        Ok(Catalog { path, tables })
    }

    /// The catalog file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The tables, by name.
    pub fn tables(&self) -> impl Iterator<Item = &TableSchema> {
        self.tables.values()
    }

    /// The table names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tables.keys().map(String::as_str)
    }

    /// The number of tables.
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    /// True without tables.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// The table `name`.
    ///
    /// # Errors
    /// [`Error::UnknownTable`] if there is none.
    pub fn get(&self, name: &str) -> Result<&TableSchema, Error> {
        self.tables.get(name).ok_or_else(|| Error::UnknownTable {
            name: name.to_owned(),
        })
    }

    /// Adds `schema` and persists the catalog.
    ///
    /// # Errors
    /// [`Error::TableExists`], [`Error::TooManyTables`], or the I/O error
    /// of persisting; the catalog is then unchanged.
    pub fn create_table(&mut self, schema: TableSchema) -> Result<(), Error> {
        validate_table_name(&schema.name)?;
        if self.tables.contains_key(&schema.name) {
            return Err(Error::TableExists { name: schema.name });
        }
        if self.tables.len() >= MAX_TABLES {
            return Err(Error::TooManyTables {
                name: schema.name,
                limit: MAX_TABLES,
            });
        }
        let mut next = self.tables.clone();
        next.insert(schema.name.clone(), schema);
        self.persist(&next)?;
        self.tables = next;
        Ok(())
    }

    /// Removes the table `name` and persists the catalog; returns its
    /// schema. Removing the table's files is the caller's next step.
    ///
    /// # Errors
    /// [`Error::UnknownTable`], or the I/O error of persisting; the catalog
    /// is then unchanged.
    pub fn drop_table(&mut self, name: &str) -> Result<TableSchema, Error> {
        let mut next = self.tables.clone();
        let schema = next.remove(name).ok_or_else(|| Error::UnknownTable {
            name: name.to_owned(),
        })?;
        self.persist(&next)?;
        self.tables = next;
        Ok(schema)
    }

    /// Writes `tables` to the temporary file, then renames it over the
    /// catalog, with the fsyncs that make the change atomic and durable.
    fn persist(&self, tables: &BTreeMap<String, TableSchema>) -> Result<(), Error> {
        let tmp = tmp_path(&self.path);
        let bytes = encode(tables);
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(io_err("create", &tmp))?;
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .map_err(io_err("write", &tmp))?;
        drop(file);
        fs::rename(&tmp, &self.path).map_err(io_err("rename", &tmp))?;
        match self.path.parent() {
            Some(dir) => sync_dir(dir),
            None => Ok(()),
        }
    }
}

fn sync_dir(dir: &Path) -> Result<(), Error> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("fsync directory", dir))
}

fn encode(tables: &BTreeMap<String, TableSchema>) -> Vec<u8> {
    let mut text = format!("{HEADER}\n");
    for t in tables.values() {
        text.push_str(&format!(
            "table {} system={}\n",
            t.name,
            u8::from(t.options.system)
        ));
    }
    let crc = crc32c::crc32c(text.as_bytes());
    text.push_str(&format!("crc32c {crc:08x}\n"));
    text.into_bytes()
}

fn decode(bytes: &[u8]) -> Result<BTreeMap<String, TableSchema>, String> {
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
    let mut lines = body.lines().enumerate();
    match lines.next() {
        Some((_, HEADER)) => {}
        other => {
            return Err(format!(
                "line 1 is {:?}, expected {HEADER:?}",
                other.map_or("", |(_, l)| l)
            ));
        }
    }
    let mut tables = BTreeMap::new();
    for (i, line) in lines {
        let bad = |what: &str| format!("line {}: {what}: {line:?}", i + 1);
        let mut fields = line.split(' ');
        let (Some("table"), Some(name), Some(system), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(bad("expected `table <name> system=<0|1>`"));
        };
        let system = match system {
            "system=0" => false,
            "system=1" => true,
            _ => return Err(bad("expected system=0 or system=1")),
        };
        let schema = TableSchema::with_options(name, TableOptions { system })
            .map_err(|e| bad(&e.to_string()))?;
        if tables.insert(name.to_owned(), schema).is_some() {
            return Err(bad("table listed twice"));
        }
    }
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system(name: &str) -> TableSchema {
        TableSchema::with_options(name, TableOptions { system: true }).unwrap()
    }

    #[test]
    fn tables_survive_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::load(dir.path()).unwrap();
        assert!(c.is_empty());
        c.create_table(TableSchema::new("users").unwrap()).unwrap();
        c.create_table(system("peers")).unwrap();
        c.create_table(TableSchema::new("events_2").unwrap())
            .unwrap();
        c.drop_table("users").unwrap();
        let c = Catalog::load(dir.path()).unwrap();
        assert_eq!(c.names().collect::<Vec<_>>(), ["events_2", "peers"]);
        assert!(c.get("peers").unwrap().options().system);
        assert!(!c.get("events_2").unwrap().options().system);
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn duplicates_and_unknown_tables_are_refused_and_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::load(dir.path()).unwrap();
        c.create_table(TableSchema::new("t").unwrap()).unwrap();
        let before = fs::read(c.path()).unwrap();
        let e = c.create_table(system("t")).unwrap_err();
        assert_eq!(e.to_string(), "table \"t\" already exists");
        let e = c.drop_table("nope").unwrap_err();
        assert_eq!(e.to_string(), "no table named \"nope\"");
        assert!(matches!(c.get("nope"), Err(Error::UnknownTable { .. })));
        assert_eq!(fs::read(c.path()).unwrap(), before);
        assert!(!c.get("t").unwrap().options().system);
    }

    #[test]
    fn bad_names_say_what_is_wrong() {
        let long = "a".repeat(49);
        for (name, reason) in [
            ("", "at least 1 character"),
            (long.as_str(), "at most 48"),
            ("Users", "starts with a lowercase"),
            ("1st", "starts with a lowercase"),
            ("_x", "starts with a lowercase"),
            ("a-b", "only lowercase"),
            ("a.b", "only lowercase"),
            ("a/b", "only lowercase"),
            ("é", "starts with a lowercase"),
        ] {
            let e = TableSchema::new(name).unwrap_err().to_string();
            assert!(e.contains(reason), "{name:?}: {e}");
        }
        assert!(TableSchema::new("a".repeat(48)).is_ok());
    }

    #[test]
    fn the_table_limit_is_enforced() {
        let dir = tempfile::tempdir().unwrap();
        let c = Catalog::load(dir.path()).unwrap();
        // Fill in memory, then persist once, to keep the test fast.
        let mut many = BTreeMap::new();
        for i in 0..MAX_TABLES {
            let s = TableSchema::new(format!("t{i}")).unwrap();
            many.insert(s.name.clone(), s);
        }
        c.persist(&many).unwrap();
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
    fn corruption_is_detected_and_located() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::load(dir.path()).unwrap();
        c.create_table(TableSchema::new("users").unwrap()).unwrap();
        let path = c.path().to_path_buf();
        let good = fs::read(&path).unwrap();
        let corrupt = |bytes: &[u8]| {
            fs::write(&path, bytes).unwrap();
            Catalog::load(dir.path()).unwrap_err().to_string()
        };
        // A flipped byte in a table name.
        let mut flipped = good.clone();
        let at = good.windows(5).position(|w| w == b"users").unwrap();
        flipped[at] = b'x';
        let e = corrupt(&flipped);
        assert!(
            e.contains("checksum mismatch") && e.contains(CATALOG_FILE_NAME),
            "{e}"
        );
        // Truncated before the checksum.
        let e = corrupt(&good[..good.len() - 10]);
        assert!(e.contains("not a crc32c checksum"), "{e}");
        assert!(corrupt(b"").contains("no checksum line"));
        assert!(corrupt(&[0xff, 0xfe, b'\n', b'\n']).contains("not UTF-8"));
        // Well checksummed but malformed bodies.
        for (body, what) in [
            ("replica-catalog 2\n", "line 1"),
            (
                "replica-catalog 1\ntable users\n",
                "line 2: expected `table",
            ),
            (
                "replica-catalog 1\ntable users system=2\n",
                "system=0 or system=1",
            ),
            ("replica-catalog 1\ntable Users system=0\n", "lowercase"),
            (
                "replica-catalog 1\ntable a system=0\ntable a system=1\n",
                "line 3: table listed twice",
            ),
        ] {
            let crc = crc32c::crc32c(body.as_bytes());
            let e = corrupt(format!("{body}crc32c {crc:08x}\n").as_bytes());
            assert!(e.contains(what), "{body:?}: {e}");
        }
    }

    #[test]
    fn a_leftover_temporary_file_is_removed_and_the_old_catalog_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::load(dir.path()).unwrap();
        c.create_table(TableSchema::new("kept").unwrap()).unwrap();
        let tmp = tmp_path(c.path());
        fs::write(&tmp, b"half a catalog").unwrap();
        let c = Catalog::load(dir.path()).unwrap();
        assert_eq!(c.names().collect::<Vec<_>>(), ["kept"]);
        assert!(!tmp.exists());
    }

    #[test]
    fn a_failed_persist_leaves_the_catalog_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::load(dir.path()).unwrap();
        c.create_table(TableSchema::new("a").unwrap()).unwrap();
        // A directory where the temporary file goes makes the write fail.
        fs::create_dir(tmp_path(c.path())).unwrap();
        let e = c.create_table(TableSchema::new("b").unwrap()).unwrap_err();
        assert!(matches!(e, Error::Io { op: "create", .. }), "{e}");
        let e = c.drop_table("a").unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
        assert_eq!(c.names().collect::<Vec<_>>(), ["a"]);
    }
}
