//! A database whose catalog file is removed does not open as an empty
//! database: open fails naming the catalog and changes nothing on disk;
//! rebuilding the catalog from the table directories brings every table
//! back with its data and generations.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::{CATALOG_FILE_NAME, CommitLogMode, Database, DatabaseConfig, Error, TableSchema};

fn row(key: &str) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(key.to_owned()).unwrap())
        .cell("c", 0, Cell::live("v", Timestamp::from_micros(1)))
        .build()
        .unwrap()
}

/// Every file under `dir` (but the lock files, which an open may create)
/// with its contents.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path.clone());
                files.insert(path, Vec::new());
            } else if path.file_name().unwrap() != replica::LOCK_FILE_NAME {
                let bytes = fs::read(&path).unwrap();
                files.insert(path, bytes);
            }
        }
    }
    files
}

fn has(db: &Database, table: &str, key: &str) -> bool {
    db.get(table, row(key).key(), ClusteringRange::full())
        .unwrap()
        .is_some()
}

#[test]
fn open_without_the_catalog_fails_and_changes_nothing() {
    let data = tempfile::tempdir().unwrap();
    let flush = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(data.path());
    config.flush_dirs = vec![flush.path().to_path_buf()];
    config.commitlog = CommitLogMode::Batch(Duration::ZERO);
    config.commitlog_segment_size = 1 << 20;
    let db = Database::open(config.clone()).unwrap();
    for t in ["events", "users"] {
        db.create_table(TableSchema::new(t).unwrap()).unwrap();
        db.apply(t, &row("flushed")).unwrap();
        db.flush(t).unwrap();
    }
    db.apply("users", &row("logged")).unwrap();
    db.drop_table("events").unwrap();
    db.create_table(TableSchema::new("events").unwrap())
        .unwrap();
    db.apply("events", &row("second")).unwrap();
    let tables = db.tables();
    db.close().unwrap();
    drop(db);

    let catalog = data.path().join(CATALOG_FILE_NAME);
    fs::remove_file(&catalog).unwrap();
    let before = (snapshot(data.path()), snapshot(flush.path()));
    assert!(before.0.keys().any(|p| p.ends_with("users")), "{before:?}");
    for _ in 0..2 {
        let e = Database::open(config.clone()).unwrap_err();
        assert!(
            matches!(&e, Error::CatalogMissing { path, found: Some(_) } if *path == catalog),
            "{e}"
        );
        let message = e.to_string();
        assert!(
            message.contains(&catalog.display().to_string())
                && message.contains("holds table data")
                && message.contains("rebuild_catalog"),
            "{message}"
        );
        assert_eq!((snapshot(data.path()), snapshot(flush.path())), before);
    }

    // The explicit recovery step: the tables come back as they were,
    // generations included.
    let rebuilt = Database::rebuild_catalog(&config).unwrap();
    assert_eq!(rebuilt, tables);
    let e = Database::rebuild_catalog(&config).unwrap_err();
    assert!(matches!(e, Error::CatalogExists { .. }), "{e}");
    let db = Database::open(config).unwrap();
    assert_eq!(db.tables(), tables);
    assert!(has(&db, "users", "flushed") && has(&db, "users", "logged"));
    assert!(has(&db, "events", "second") && !has(&db, "events", "flushed"));
    db.close().unwrap();
}

#[test]
fn a_new_directory_opens_and_gets_a_catalog() {
    let data = tempfile::tempdir().unwrap();
    let config = DatabaseConfig::new(data.path().join("new"));
    let db = Database::open(config.clone()).unwrap();
    assert!(db.tables().is_empty());
    db.close().unwrap();
    drop(db);
    assert!(data.path().join("new").join(CATALOG_FILE_NAME).is_file());
    // Reopening a database that never had a table works too.
    Database::open(config).unwrap().close().unwrap();
}

#[test]
fn an_unreadable_catalog_is_an_error_naming_it() {
    let data = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(data.path());
    config.commitlog = CommitLogMode::Off;
    let db = Database::open(config.clone()).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    db.close().unwrap();
    drop(db);
    let catalog = data.path().join(CATALOG_FILE_NAME);
    fs::write(&catalog, b"replica-catalog 2\n").unwrap();
    let before = snapshot(data.path());
    let e = Database::open(config).unwrap_err();
    assert!(matches!(e, Error::Corrupt { .. }), "{e}");
    assert!(e.to_string().contains(CATALOG_FILE_NAME), "{e}");
    assert_eq!(snapshot(data.path()), before);
}
