//! Files and directories the database did not create are left alone:
//! beside the data, inside a dropped table's directory, and where a new
//! table would go (that table is refused instead).

use std::fs;
use std::path::Path;

use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use replica::{CommitLogMode, Database, DatabaseConfig, Error, TableSchema};

fn row(key: &str) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(key.to_owned()).unwrap())
        .cell("c", 0, Cell::live("v", Timestamp::from_micros(1)))
        .build()
        .unwrap()
}

fn put(path: &Path, contents: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, contents).unwrap();
}

#[test]
fn foreign_files_and_directories_survive_open_and_drop() {
    for mode in [CommitLogMode::Off, CommitLogMode::default()] {
        let data = tempfile::tempdir().unwrap();
        let d = data.path();
        // A user's things in the data directory before the first open:
        // directories named like tables (one holding sstable-like files),
        // files, a directory no table could be named.
        let foreign = [
            d.join("photos/cat.jpg"),
            d.join("backup/users/sst-3-TOC.txt"),
            d.join("notes.txt"),
            d.join("Old.Stuff/readme"),
        ];
        fs::create_dir(d.join("empty")).unwrap();
        for f in &foreign {
            put(f, "mine");
        }
        let mut config = DatabaseConfig::new(d);
        config.commitlog = mode;
        config.commitlog_segment_size = 1 << 20;
        for round in 0..2 {
            let db = Database::open(config.clone()).unwrap();
            if round == 0 {
                db.create_table(TableSchema::new("gone").unwrap()).unwrap();
                db.apply("gone", &row("k")).unwrap();
                db.flush("gone").unwrap();
                put(&d.join("gone/keep-me.txt"), "mine");
                db.drop_table("gone").unwrap();
                // The foreign file stays, and so does its directory.
                assert!(d.join("gone/keep-me.txt").is_file());
                let e = db
                    .create_table(TableSchema::new("photos").unwrap())
                    .unwrap_err();
                assert!(
                    matches!(&e, Error::ForeignTableDirectory { table, .. } if table == "photos"),
                    "{e}"
                );
                assert!(e.to_string().contains("photos"), "{e}");
                assert!(db.tables().is_empty());
            }
            db.close().unwrap();
            drop(db);
            for f in &foreign {
                assert_eq!(fs::read_to_string(f).unwrap(), "mine", "{}", f.display());
            }
            assert!(d.join("empty").is_dir());
            let left: Vec<_> = fs::read_dir(d.join("gone"))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(left, ["keep-me.txt"], "round {round}");
        }
    }
}

#[test]
fn unmarked_sstables_without_a_catalog_refuse_the_open() {
    // A table-named directory holding sstable files but no marker, and no
    // catalog: an earlier version's database that lost its catalog, or a
    // copy. Neither an empty database nor a removal: the open is refused.
    let data = tempfile::tempdir().unwrap();
    let file = data.path().join("users/sst-1-Data.db");
    put(&file, "mine");
    let e = Database::open(DatabaseConfig::new(data.path())).unwrap_err();
    assert!(
        matches!(&e, Error::CatalogMissing { found: Some(f), .. } if f.ends_with("users")),
        "{e}"
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), "mine");
    assert!(!data.path().join(replica::CATALOG_FILE_NAME).exists());
}
