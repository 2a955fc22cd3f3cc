//! Every bad input gets a clear error naming the thing at fault, and
//! applies nothing.

use std::sync::Arc;
use std::time::Duration;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp, limits};
use replica::{Database, DatabaseConfig, Error, TableSchema};

fn key(s: &str) -> DecoratedKey {
    DecoratedKey::from_bytes(s.to_owned()).unwrap()
}

fn small(k: &str) -> Mutation {
    Mutation::builder(key(k))
        .cell("r", 0, Cell::live("v", Timestamp::from_micros(1)))
        .build()
        .unwrap()
}

fn open_with_table(dir: &std::path::Path) -> Database {
    let db = Database::open(DatabaseConfig::new(dir)).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    db
}

#[test]
fn unknown_tables_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with_table(dir.path());
    let errors = [
        db.apply("nope", &small("k")).unwrap_err(),
        db.get("nope", &key("k"), ClusteringRange::full())
            .unwrap_err(),
        db.scan("nope", PartitionRange::full()).unwrap_err(),
        db.flush("nope").unwrap_err(),
        db.drop_table("nope").unwrap_err(),
    ];
    for e in errors {
        assert!(matches!(e, Error::UnknownTable { .. }), "{e}");
        assert_eq!(e.to_string(), "no table named \"nope\"");
    }
    let e = db.create_table(TableSchema::new("t").unwrap()).unwrap_err();
    assert_eq!(e.to_string(), "table \"t\" already exists");
    db.close().unwrap();
}

#[test]
fn oversized_keys_values_and_mutations_are_refused_and_nothing_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with_table(dir.path());
    // A key beyond the format's limit cannot even be made.
    let e = DecoratedKey::from_bytes(vec![b'k'; limits::MAX_KEY_LEN + 1]).unwrap_err();
    assert!(
        e.to_string().contains(&limits::MAX_KEY_LEN.to_string()),
        "{e}"
    );
    // Nor a cell value beyond the value limit.
    let e = Mutation::builder(key("k"))
        .cell(
            "r",
            0,
            Cell::live(
                vec![0u8; limits::MAX_CELL_VALUE_LEN + 1],
                Timestamp::from_micros(1),
            ),
        )
        .build()
        .unwrap_err();
    assert!(
        e.to_string()
            .contains(&limits::MAX_CELL_VALUE_LEN.to_string()),
        "{e}"
    );
    // Merging two valid mutations can exceed the mutation limit: the
    // database refuses the result.
    let half = |ck: &str| {
        Mutation::builder(key("big"))
            .cell(
                ck.to_owned(),
                0,
                Cell::live(vec![1u8; 6 << 20], Timestamp::from_micros(1)),
            )
            .build()
            .unwrap()
    };
    let merged = half("a")
        .merge(half("b"))
        .unwrap()
        .merge(half("c"))
        .unwrap();
    let e = db.apply("t", &merged).unwrap_err();
    assert!(matches!(e, Error::MutationTooLarge { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("table \"t\"") && text.contains(&limits::MAX_MUTATION_SIZE.to_string()),
        "{text}"
    );
    assert_eq!(
        db.get("t", &key("big"), ClusteringRange::full()).unwrap(),
        None
    );
    db.close().unwrap();
}

#[test]
fn an_empty_mutation_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with_table(dir.path());
    let e = db.apply("t", &Mutation::new(key("k"))).unwrap_err();
    assert!(matches!(e, Error::InvalidMutation { .. }), "{e}");
    assert!(e.to_string().contains("holds nothing"), "{e}");
    assert_eq!(
        db.get("t", &key("k"), ClusteringRange::full()).unwrap(),
        None
    );
    db.close().unwrap();
}

#[test]
fn a_closed_database_refuses_everything() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with_table(dir.path());
    db.apply("t", &small("k")).unwrap();
    db.close().unwrap();
    assert!(db.is_closed());
    db.close().unwrap(); // a second close does nothing
    for e in [
        db.apply("t", &small("k")).unwrap_err(),
        db.get("t", &key("k"), ClusteringRange::full()).unwrap_err(),
        db.flush_all().unwrap_err(),
        db.create_table(TableSchema::new("u").unwrap()).unwrap_err(),
    ] {
        assert!(matches!(e, Error::Closed { .. }), "{e}");
        assert!(e.to_string().starts_with("the database is closed"), "{e}");
    }
    // Closing released the directory: it opens again, with the write.
    let db = Database::open(DatabaseConfig::new(dir.path())).unwrap();
    assert!(
        db.get("t", &key("k"), ClusteringRange::full())
            .unwrap()
            .is_some()
    );
    db.close().unwrap();
}

#[test]
fn an_unusable_data_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"not a directory").unwrap();
    let e = Database::open(DatabaseConfig::new(file.join("data"))).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert!(e.to_string().contains("cannot create directory"), "{e}");
    let e = Database::open(DatabaseConfig::new(&file)).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    let mut bad = DatabaseConfig::new(dir.path());
    bad.write_timeout = Duration::ZERO;
    let e = Database::open(bad).unwrap_err();
    assert!(e.to_string().contains("write_timeout"), "{e}");
}

#[test]
fn a_second_open_of_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with_table(dir.path());
    let e = Database::open(DatabaseConfig::new(dir.path())).unwrap_err();
    assert!(matches!(e, Error::DirectoryLocked { .. }), "{e}");
    assert!(
        e.to_string().contains("in use by another open database"),
        "{e}"
    );
    db.close().unwrap();
}

#[test]
fn a_write_held_at_the_hard_limit_times_out_naming_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.dirty_memory_budget = 1 << 20;
    // Flushes write at 2 MiB/s (their directory is on a modelled device
    // of that bandwidth), so memory comes back slowly...
    config.flush_dirs = vec![dir.path().join("flush")];
    config
        .devices
        .add_device("slow", 2 << 20)
        .place(dir.path().join("flush"), "slow");
    // ... and writes give up at once.
    config.write_timeout = Duration::from_millis(1);
    let db = Arc::new(Database::open(config).unwrap());
    db.create_table(TableSchema::new("slow").unwrap()).unwrap();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                for i in 0..2000 {
                    let m = Mutation::builder(key(&format!("w{w}k{i}")))
                        .cell(
                            "r",
                            0,
                            Cell::live(vec![7u8; 16 << 10], Timestamp::from_micros(1)),
                        )
                        .build()
                        .unwrap();
                    if let Err(e) = db.apply("slow", &m) {
                        return Some(e);
                    }
                }
                None
            })
        })
        .collect();
    let errors: Vec<Error> = writers
        .into_iter()
        .filter_map(|w| w.join().unwrap())
        .collect();
    assert!(!errors.is_empty(), "some write timed out");
    for e in errors {
        assert!(matches!(e, Error::WriteTimeout { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("write to table \"slow\" not admitted"),
            "{e}"
        );
    }
    db.close().unwrap();
}
