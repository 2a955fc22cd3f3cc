//! Stress: many threads append at once in batch mode; every entry gets its
//! own position, all of them replay in position order, and concurrent
//! writers shared fdatasyncs (fewer syncs than entries).

use std::sync::Arc;
use std::time::Duration;

use commitlog::{CommitLog, Config, SyncMode, replay};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

#[test]
fn eight_threads_in_batch_mode_share_syncs_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Config::default();
    c.segment_size = 64 << 10;
    c.total_size_limit = 64 << 20;
    c.sync = SyncMode::Batch(Duration::ZERO);
    let (log, _) = CommitLog::open(dir.path(), c, |_, _, _| {}).unwrap();
    let log = Arc::new(log);
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                (0..150)
                    .map(|i| {
                        let m = Mutation::builder(
                            DecoratedKey::from_bytes(format!("t{t}-{i}")).unwrap(),
                        )
                        .cell(
                            "c",
                            0,
                            Cell::live(vec![t as u8; 1 + i * 7], Timestamp::from_micros(1)),
                        )
                        .build()
                        .unwrap();
                        let pos = log.add(t, &m).unwrap();
                        (t, m, pos)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut added: Vec<_> = threads
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    added.sort_by_key(|e| e.2);
    assert!(
        added.windows(2).all(|w| w[0].2 < w[1].2),
        "positions are unique"
    );
    let stats = log.stats();
    assert_eq!(stats.entries, 1200);
    assert_eq!(stats.synced_entries, 1200);
    assert!(stats.syncs < stats.entries, "group commit: {stats:?}");
    drop(log);
    let mut got = Vec::new();
    replay(dir.path(), |t, m, p| got.push((t, m, p))).unwrap();
    assert_eq!(got, added);
}
