//! Dropping a table cannot bring its data back on replay: the drop is
//! logged, replay skips the table's earlier entries (also when a new table
//! takes the same id), and the segment holding the drop record outlives
//! every older segment.

use std::time::Duration;

use commitlog::{CommitLog, Config, ReplayPosition, SyncMode, replay};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

fn m(tag: &str, i: usize) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("{tag}{i}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![2u8; 900], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

#[test]
fn drop_is_logged_and_wins_over_older_entries() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Config::default();
    c.segment_size = 4096;
    c.total_size_limit = 1 << 20;
    c.sync = SyncMode::Periodic(Duration::from_secs(3600));
    let (log, _) = CommitLog::open(dir.path(), c.clone(), |_, _, _| {}).unwrap();
    // Segment A: table 7 (kept unflushed: it pins A), table 5 and table 6.
    let pinned = log.add(7, &m("seven", 0)).unwrap();
    for i in 0..2 {
        log.add(5, &m("old", i)).unwrap();
    }
    let mut six = log.add(6, &m("six", 0)).unwrap();
    // Fill up to a later segment, then drop table 5 there.
    while six.segment == pinned.segment {
        six = log.add(6, &m("six", 1)).unwrap();
    }
    let drop_at = log.drop_table(5).unwrap();
    assert!(drop_at.segment > pinned.segment);
    // Table 6 moves on to yet another segment; a new table 5 writes too.
    while six.segment == drop_at.segment {
        six = log.add(6, &m("six", 2)).unwrap();
    }
    let new5 = log.add(5, &m("new", 0)).unwrap();
    // Table 6 flushed everything: the drop segment is clean, but segment A
    // (older, pinned by table 7) still holds table 5's old data, so the
    // drop record must stay.
    log.discard_completed(6, six);
    let on_disk: Vec<u64> = log.dirty_tables().iter().map(|(id, _)| *id).collect();
    assert!(on_disk.contains(&pinned.segment));
    assert!(
        on_disk.contains(&drop_at.segment),
        "drop record kept while an older segment is: {on_disk:?}"
    );
    log.sync().unwrap();

    let mut got: Vec<(u64, Mutation, ReplayPosition)> = Vec::new();
    let report = replay(dir.path(), |t, m, p| got.push((t, m, p))).unwrap();
    let fives: Vec<_> = got.iter().filter(|e| e.0 == 5).collect();
    assert_eq!(fives.len(), 1, "only the new table 5's entry comes back");
    assert_eq!((fives[0].1.clone(), fives[0].2), (m("new", 0), new5));
    assert_eq!(report.dropped_entries, 2);
    assert!(got.iter().any(|e| e.0 == 7 && e.2 == pinned));

    // Once table 7 is flushed, segment A goes, and then the drop record can.
    log.discard_completed(7, pinned);
    log.discard_completed(5, new5);
    let on_disk: Vec<u64> = log.dirty_tables().iter().map(|(id, _)| *id).collect();
    assert!(
        !on_disk.contains(&pinned.segment) && !on_disk.contains(&drop_at.segment),
        "{on_disk:?}"
    );
    drop(log);
    let report = replay(dir.path(), |_, _, _| {}).unwrap();
    assert_eq!(report.dropped_entries, 0);
}
