//! A log shared through an `Arc` closes in place (`close(&self)`): what was
//! appended is synced and replays, a second close returns at once, and an
//! append after the close is refused as closed, in both sync modes.

use std::sync::Arc;
use std::time::Duration;

use commitlog::{CommitLog, Config, Error, SyncMode};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

fn write(i: u32) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("k{i}")).unwrap())
        .cell(
            "r",
            0,
            Cell::live(vec![7u8; 100], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

#[test]
fn a_shared_log_closes_in_place_and_refuses_appends_after() {
    for sync in [
        SyncMode::Batch(Duration::ZERO),
        SyncMode::Periodic(Duration::from_secs(10)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.sync = sync;
        let (log, _) = CommitLog::open(dir.path(), config.clone(), |_, _, _| {}).unwrap();
        let log = Arc::new(log);
        let other = Arc::clone(&log);
        for i in 0..10 {
            other.add(7, &write(i)).unwrap();
        }
        log.close().unwrap();
        log.close().unwrap();
        assert!(matches!(other.add(7, &write(99)), Err(Error::Closed)));
        drop((log, other));
        let mut replayed = 0;
        let (log, _) = CommitLog::open(dir.path(), config, |_, _, _| replayed += 1).unwrap();
        assert_eq!(
            replayed, 10,
            "{sync:?}: every append before the close replays"
        );
        log.close().unwrap();
    }
}
