//! A write through `apply_async` counts in its table's user bytes (the
//! denominator of write amplification) exactly as the same write through
//! `apply` does. It did not: `apply_async` never recorded them, so a load
//! of async writes reported no user bytes and no write amplification.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use replica::{CommitLogMode, Database, DatabaseConfig, TableSchema};

fn write(i: u64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("k{i:03}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![7u8; 300], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

/// Polls `fut` to its end on this thread. The writes below never wait
/// (no commit log, memory to spare), so a no-op waker will do: a pending
/// poll is simply repeated.
fn run<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
}

#[test]
fn async_writes_count_as_user_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.commitlog = CommitLogMode::Off;
    let db = Database::open(config).unwrap();
    db.create_table(TableSchema::new("blocking").unwrap())
        .unwrap();
    db.create_table(TableSchema::new("async").unwrap()).unwrap();
    for i in 0..10 {
        db.apply("blocking", &write(i)).unwrap();
        run(db.apply_async("async", write(i))).unwrap();
    }
    let metrics = db.metrics();
    let user_bytes = |name: &str| {
        let t = metrics.tables.iter().find(|t| t.name == name).unwrap();
        assert_eq!(t.writes, 10, "{name}");
        t.compaction.user_bytes
    };
    let blocking = user_bytes("blocking");
    assert!(blocking > 3000, "ten writes of 300 B values: {blocking}");
    assert_eq!(user_bytes("async"), blocking);
    db.close().unwrap();
}
