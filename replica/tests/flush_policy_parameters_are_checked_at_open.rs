//! The flush policy is dirty-memory's own type: a database opens with any
//! policy whose parameters dirty-memory accepts (and that writes at most
//! `MAX_CONCURRENT_FLUSHES` at once), and refuses the rest before it
//! touches the disk, naming the field and the limit.

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::{Database, DatabaseConfig, FlushPolicy, MAX_CONCURRENT_FLUSHES, TableSchema};

#[test]
fn a_per_memtable_policy_opens_and_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.flush_policy = FlushPolicy::PerMemtableLimit {
        max_memtable_fraction: 0.2,
        max_concurrent_flushes: 2,
    };
    let db = Database::open(config).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    let key = DecoratedKey::from_bytes("k").unwrap();
    let m = Mutation::builder(key.clone())
        .cell("r", 0, Cell::live("v", Timestamp::from_micros(1)))
        .build()
        .unwrap();
    db.apply("t", &m).unwrap();
    db.flush("t").unwrap();
    assert_eq!(db.get("t", &key, ClusteringRange::full()).unwrap(), Some(m));
    db.close().unwrap();
}

#[test]
fn bad_policy_parameters_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for (policy, limit) in [
        (
            FlushPolicy::PerMemtableLimit {
                max_memtable_fraction: 0.0,
                max_concurrent_flushes: 2,
            },
            "(0, 1]".to_owned(),
        ),
        (
            FlushPolicy::PerMemtableLimit {
                max_memtable_fraction: 0.2,
                max_concurrent_flushes: MAX_CONCURRENT_FLUSHES + 1,
            },
            format!("at most {MAX_CONCURRENT_FLUSHES} concurrent flushes"),
        ),
    ] {
        let mut config = DatabaseConfig::new(&data);
        config.flush_policy = policy;
        let e = Database::open(config).unwrap_err().to_string();
        assert!(e.contains("flush_policy") && e.contains(&limit), "{e}");
        assert!(!data.exists(), "a refused configuration creates nothing");
    }
}
