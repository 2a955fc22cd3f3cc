//! Stress: many threads append at once in batch mode; every entry gets its
//! own position, all of them replay in position order, and concurrent
//! writers shared fdatasyncs (fewer syncs than entries).

use std::sync::Arc;
use std::time::Duration;

use commitlog::{CommitLog, Config, ReplayPosition, SyncMode, replay};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

/// A `Batch(0)` log in `dir` with 64 KiB segments, so that the writers
/// cross many segment switches.
fn batch_log(dir: &std::path::Path) -> Arc<CommitLog> {
    let mut c = Config::default();
    c.segment_size = 64 << 10;
    c.total_size_limit = 64 << 20;
    c.sync = SyncMode::Batch(Duration::ZERO);
    let (log, _) = CommitLog::open(dir, c, |_, _, _| {}).unwrap();
    Arc::new(log)
}

type Added = (u64, Mutation, ReplayPosition);

/// Every writer's entries, in position order; positions are unique.
fn in_position_order(threads: Vec<std::thread::JoinHandle<Vec<Added>>>) -> Vec<Added> {
    let mut added: Vec<Added> = threads
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    added.sort_by_key(|e| e.2);
    assert!(
        added.windows(2).all(|w| w[0].2 < w[1].2),
        "positions are unique"
    );
    added
}

#[test]
fn eight_threads_in_batch_mode_share_syncs_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = batch_log(dir.path());
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
    let added = in_position_order(threads);
    let stats = log.stats();
    assert_eq!(stats.entries, 1200);
    assert_eq!(stats.synced_entries, 1200);
    assert!(stats.syncs < stats.entries, "group commit: {stats:?}");
    drop(log);
    let mut got = Vec::new();
    replay(dir.path(), |t, m, p| got.push((t, m, p))).unwrap();
    assert_eq!(got, added);
}

#[test]
fn eight_threads_adding_batches_lose_nothing_and_keep_each_batch_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = batch_log(dir.path());
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut added = Vec::new();
                for b in 0..20usize {
                    let ms: Vec<Mutation> = (0..1 + b % 7)
                        .map(|i| {
                            Mutation::builder(
                                DecoratedKey::from_bytes(format!("t{t}-{b}-{i}")).unwrap(),
                            )
                            .cell(
                                "c",
                                0,
                                Cell::live(vec![t as u8; 1 + b * 37], Timestamp::from_micros(1)),
                            )
                            .build()
                            .unwrap()
                        })
                        .collect();
                    let entries: Vec<(u64, &Mutation)> = ms.iter().map(|m| (t, m)).collect();
                    let positions = log.add_batch(&entries).unwrap();
                    assert!(positions.windows(2).all(|w| w[0] < w[1]));
                    added.extend(ms.into_iter().zip(positions).map(|(m, p)| (t, m, p)));
                }
                added
            })
        })
        .collect();
    let added = in_position_order(threads);
    let stats = log.stats();
    assert_eq!(stats.entries, added.len() as u64);
    assert_eq!(stats.synced_entries, stats.entries);
    drop(log);
    let mut got = Vec::new();
    replay(dir.path(), |t, m, p| got.push((t, m, p))).unwrap();
    assert_eq!(got, added);
}
