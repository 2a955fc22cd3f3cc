//! `Database::table`'s handle writes, reads, scans and flushes its table
//! as the by-name methods do; once the table is dropped every operation is
//! refused as an unknown table (also when a table of the same name was
//! created again: the handle reaches the old incarnation only), and after
//! close as closed.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp};
use replica::{CommitLogMode, Database, DatabaseConfig, Error, TableSchema};

fn write(key: &str, value: &str) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(key.to_owned()).unwrap())
        .cell(
            "r",
            0,
            Cell::live(value.to_owned(), Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

/// Polls a future that needs no wake-up to finish (a write with the log
/// off and memory free completes at its first poll).
fn ready<T>(f: impl Future<Output = T>) -> T {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the write did not complete at its first poll"),
    }
}

#[test]
fn a_handle_serves_its_table_until_it_is_dropped_or_closed() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.commitlog = CommitLogMode::Off;
    let db = Database::open(config).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    assert!(matches!(db.table("nope"), Err(Error::UnknownTable { .. })));
    let t = db.table("t").unwrap();
    assert_eq!(t.name(), "t");
    t.apply(&write("a", "1")).unwrap();
    ready(t.apply_async(write("b", "2"))).unwrap();
    let a = DecoratedKey::from_bytes("a").unwrap();
    assert_eq!(
        t.get(&a, ClusteringRange::full()).unwrap(),
        Some(write("a", "1"))
    );
    // The by-name methods see the handle's writes and the other way round.
    db.apply("t", &write("c", "3")).unwrap();
    t.flush().unwrap();
    let mut scan = t.scan(PartitionRange::full()).unwrap();
    let mut n = 0;
    while mutation::FragmentReader::next_mutation(&mut scan)
        .unwrap()
        .is_some()
    {
        n += 1;
    }
    assert_eq!(n, 3);
    assert_eq!(db.metrics().tables[0].sstables, 1);

    db.drop_table("t").unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    let unknown = |r: Result<(), Error>| matches!(r, Err(Error::UnknownTable { .. }));
    assert!(unknown(t.apply(&write("a", "9"))));
    assert!(unknown(ready(t.apply_async(write("a", "9")))));
    assert!(unknown(t.get(&a, ClusteringRange::full()).map(drop)));
    assert!(unknown(t.scan(PartitionRange::full()).map(drop)));
    assert!(unknown(t.flush()));
    // The new incarnation is empty and reached by a new handle.
    let again = db.table("t").unwrap();
    assert_eq!(again.get(&a, ClusteringRange::full()).unwrap(), None);
    again.apply(&write("a", "new")).unwrap();

    db.close().unwrap();
    assert!(matches!(
        again.apply(&write("a", "x")),
        Err(Error::Closed { .. })
    ));
    assert!(matches!(db.table("t"), Err(Error::Closed { .. })));
}
