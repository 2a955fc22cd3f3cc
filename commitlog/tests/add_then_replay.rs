//! Property: whatever the segment size and the entry sizes, every entry
//! added comes back from replay, in order, with its table and position, and
//! a reopened log continues after the replayed segments.

use std::time::Duration;

use commitlog::{CommitLog, Config, ReplayPosition, SyncMode, replay};
use mutation::testing::arb_mutation;
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use proptest::prelude::*;

/// A mutation whose encoding is about `size` bytes.
fn sized(key: u32, size: usize) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(key.to_be_bytes().to_vec()).expect("4-byte key"))
        .cell(
            "c",
            0,
            Cell::live(vec![key as u8; size], Timestamp::from_micros(1)),
        )
        .build()
        .expect("valid mutation")
}

fn config(segment_size: u32, sync: SyncMode) -> Config {
    let mut c = Config::default();
    c.segment_size = segment_size;
    c.total_size_limit = 1 << 30;
    c.sync = sync;
    c
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_added_entry_replays_in_order(
        segment_size in 4096u32..=65536,
        batch in any::<bool>(),
        entries in prop::collection::vec((0u64..4, prop_oneof![0usize..=10, 0usize..=100, Just(100)]), 1..60),
        extra in prop::collection::vec(arb_mutation(), 0..8),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let sync = if batch { SyncMode::Batch(Duration::ZERO) } else { SyncMode::Periodic(Duration::from_secs(60)) };
        let cfg = config(segment_size, sync);
        let max = cfg.max_payload();
        let (log, report) = CommitLog::open(dir.path(), cfg.clone(), |_, _, _| {}).unwrap();
        prop_assert_eq!(report.entries, 0);
        let mut added: Vec<(u64, Mutation, ReplayPosition)> = Vec::new();
        for (i, &(table, percent)) in entries.iter().enumerate() {
            // Payloads from the smallest up to exactly the largest the
            // segment takes (payload = 9 bytes + the encoded mutation).
            let overhead = 9 + sized(i as u32, 0).encoded_len();
            let size = (max * percent / 100).saturating_sub(overhead);
            let m = sized(i as u32, size);
            if percent == 100 {
                prop_assert_eq!(m.encoded_len() + 9, max);
                let err = log.add(table, &sized(i as u32, size + 1)).unwrap_err();
                prop_assert!(matches!(err, commitlog::Error::EntryTooLarge { .. }), "{}", err);
            }
            let pos = log.add(table, &m).unwrap();
            if let Some(last) = added.last() {
                prop_assert!(pos > last.2);
            }
            added.push((table, m, pos));
        }
        for m in &extra {
            let pos = log.add(9, m).unwrap();
            added.push((9, m.clone(), pos));
        }
        log.close().unwrap();

        let mut got = Vec::new();
        let report = replay(dir.path(), |t, m, p| got.push((t, m, p))).unwrap();
        prop_assert_eq!(&got, &added);
        prop_assert_eq!(report.entries, added.len() as u64);
        prop_assert_eq!(report.corrupt_segments, 0);
        prop_assert!(report.torn.is_empty(), "{:?}", report.torn);

        // Reopen: the same entries replay, and new ones come after them.
        let mut again = Vec::new();
        let (log, _) = CommitLog::open(dir.path(), cfg, |t, m, p| again.push((t, m, p))).unwrap();
        prop_assert_eq!(&again, &added);
        let pos = log.add(1, &sized(0, 1)).unwrap();
        prop_assert!(pos > added.last().unwrap().2);
    }
}

/// The limits agree across layers: a log with the default segments frames
/// the largest mutation the builder accepts, and that mutation replays.
#[test]
fn the_default_segment_frames_the_largest_mutation_the_builder_accepts() {
    use mutation::limits::{MAX_CELL_VALUE_LEN, MAX_MUTATION_SIZE};
    let config = Config::default();
    assert!(
        config.max_payload() >= MAX_MUTATION_SIZE + 9,
        "default segment frames {} bytes, the builder allows {MAX_MUTATION_SIZE}",
        config.max_payload()
    );
    // One mutation as close to the limit as cells of the largest value make it.
    let ts = Timestamp::from_micros(1);
    let b = Mutation::builder(DecoratedKey::from_bytes(vec![1u8; 16]).expect("16-byte key"))
        .cell("a", 0, Cell::live(vec![7u8; MAX_CELL_VALUE_LEN], ts))
        .cell(
            "b",
            0,
            Cell::live(vec![8u8; MAX_MUTATION_SIZE - MAX_CELL_VALUE_LEN - 4096], ts),
        );
    let m = b.build().expect("under the limit");
    assert!(m.encoded_len() > MAX_MUTATION_SIZE - 8192);
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = CommitLog::open(dir.path(), config.clone(), |_, _, _| {}).unwrap();
    let pos = log.add(3, &m).expect("the log frames it");
    log.close().unwrap();
    let mut seen = Vec::new();
    replay(dir.path(), |t, got, p| seen.push((t, got, p))).unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].0, &seen[0].1, seen[0].2), (3, &m, pos));
}
