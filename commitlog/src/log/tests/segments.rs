//! Segments: the reserve, switches, retirement, drops and discards.

use super::*;

/// Adds entries of table 0 until one lands beyond segment `first`;
/// returns that entry's segment.
pub(super) fn add_until_the_segment_switches(log: &CommitLog, first: u64) -> u64 {
    loop {
        let segment = log.add(0, &mutation("k", 500)).unwrap().segment;
        if segment != first {
            return segment;
        }
    }
}

#[test]
fn switches_take_the_prefilled_reserve_and_close_removes_an_unused_one() {
    let config = Config {
        preallocate: crate::Preallocate::Always,
        total_size_limit: 8 * 4096,
        ..small(SyncMode::Batch(Duration::ZERO))
    };
    let (log, storage) = mem_log(config);
    let first = log.add(0, &mutation("k", 500)).unwrap().segment;
    log.wait_reserve_settled();
    // The first segment is made by the writer (sparse); the next one
    // waits, prefilled, under its own name.
    assert_eq!(
        storage.0.lock().created.clone(),
        BTreeMap::from([(first, false)])
    );
    assert!(storage.0.lock().reserve_key.is_some());
    assert_eq!(log.stats().segments_on_disk, 2);
    assert_eq!(log.stats().disk_bytes, 2 * 4096);
    let last = add_until_the_segment_switches(&log, first);
    // The switch renamed the reserve to the next id.
    assert_eq!(last, first + 1);
    assert_eq!(storage.0.lock().created.get(&last), Some(&true));
    log.wait_reserve_settled();
    assert!(storage.0.lock().reserve_key.is_some(), "a new reserve");
    assert_eq!(log.stats().segments_created, 3);
    log.close().unwrap();
    // The unused reserve is gone; the two segments with entries stay.
    let s = storage.0.lock();
    assert_eq!(s.reserve_key, None);
    assert_eq!(
        s.files.keys().copied().collect::<Vec<_>>(),
        vec![first, last]
    );
}

#[test]
fn no_reserve_beyond_the_size_limit_and_writers_outlive_failed_creations() {
    let config = Config {
        preallocate: crate::Preallocate::Always,
        total_size_limit: 2 * 4096,
        ..small(SyncMode::Batch(Duration::ZERO))
    };
    let (log, storage) = mem_log(config);
    let first = log.add(0, &mutation("k", 500)).unwrap().segment;
    log.wait_reserve_settled();
    // Two segments fill the limit: the reserve is the second.
    assert!(storage.0.lock().reserve_key.is_some());
    add_until_the_segment_switches(&log, first);
    log.wait_reserve_settled();
    assert_eq!(storage.0.lock().reserve_key, None, "no third: at the limit");
    drop(log);

    let config = Config {
        preallocate: crate::Preallocate::Always,
        ..small(SyncMode::Batch(Duration::ZERO))
    };
    let (log, storage) = mem_log(config);
    let mut current = log.add(0, &mutation("k", 500)).unwrap().segment;
    storage.0.lock().fail_creates = true;
    // Whether the switch finds a reserve (its rename fails) or makes a
    // segment itself (its creation fails), the writer gets the I/O
    // error, named, and the log is not failed for good.
    loop {
        match log.add(0, &mutation("k", 500)) {
            Ok(p) => current = p.segment,
            Err(e) => {
                assert!(matches!(e, Error::Io { .. }), "{e}");
                break;
            }
        }
    }
    log.wait_reserve_settled();
    storage.0.lock().fail_creates = false;
    let next = log.add(0, &mutation("k", 500)).unwrap();
    assert!(next.segment > current);
    log.close().unwrap();
    assert_eq!(storage.0.lock().reserve_key, None);
}

#[test]
fn a_reserve_left_by_a_crash_is_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        preallocate: crate::Preallocate::Always,
        ..small(SyncMode::Batch(Duration::ZERO))
    };
    let (log, _) = CommitLog::open(dir.path(), config.clone(), |_, _, _| {}).unwrap();
    let pos = log.add(7, &mutation("k", 500)).unwrap();
    log.wait_reserve_settled();
    assert_eq!(log.stats().segments_on_disk, 2);
    // What a crash now leaves: a copy of the directory.
    let image = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), image.path().join(e.file_name())).unwrap();
    }
    drop(log);
    let reserve = image.path().join(format::RESERVE_FILE_NAME);
    assert!(reserve.exists());
    let mut seen = Vec::new();
    let (log, report) = CommitLog::open(image.path(), config, |t, _, p| seen.push((t, p))).unwrap();
    assert_eq!(seen, vec![(7, pos)]);
    assert_eq!(report.segments, 1);
    assert!(
        report.damage.is_empty() && report.torn.is_empty(),
        "{report:?}"
    );
    assert!(!reserve.exists());
    assert_eq!(log.stats().segments_on_disk, 1);
}

#[test]
fn segments_retire_when_every_table_is_flushed() {
    let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
    let mut last = Vec::new();
    for i in 0..18 {
        last.push(log.add(i % 2, &mutation("k", 500)).unwrap());
    }
    assert!(log.stats().segments_created >= 3);
    let first_seg = last[0].segment;
    // Table 0 alone flushed: nothing goes.
    log.discard_completed(0, last[16]);
    assert!(storage.0.lock().files.contains_key(&first_seg));
    log.discard_completed(1, last[17]);
    // Every closed segment is gone; the active one stays.
    let files: Vec<u64> = storage.0.lock().files.keys().copied().collect();
    assert_eq!(files, vec![last[17].segment]);
    assert_eq!(log.stats().segments_on_disk, 1);
}

/// The lost-write race of issue 18, at the log's level: an entry
/// appended before another can land in a newer memtable. The older
/// memtable's flush hands back exactly its own entries, so the segment
/// holding the newer memtable's older entry stays.
#[test]
fn a_flush_releases_exactly_the_entries_its_memtable_holds() {
    let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
    // Writer B's entry p2 and the rest of the first segment go to the
    // newer memtable M2; writer A's later entry p3 to the older M1.
    let p2 = log.add(0, &mutation("k", 500)).unwrap();
    let mut m2 = ReplayPositionSet::from(p2);
    let p3 = loop {
        let p = log.add(0, &mutation("k", 500)).unwrap();
        if p.segment != p2.segment {
            break p;
        }
        m2.insert(p);
    };
    let m1 = ReplayPositionSet::from(p3);
    // The second segment closes too.
    let mut m3 = ReplayPositionSet::new();
    loop {
        let p = log.add(1, &mutation("k", 500)).unwrap();
        m3.insert(p);
        if p.segment != p3.segment {
            break;
        }
    }
    log.discard_flushed(1, &m3);
    // M1 is flushed: it holds the newest entry of table 0 in log order,
    // yet p2 is still needed.
    log.discard_flushed(0, &m1);
    assert!(storage.0.lock().files.contains_key(&p2.segment));
    assert_eq!(log.dirty_tables()[0], (p2.segment, vec![0]));
    // A set handed back twice counts once.
    log.discard_flushed(0, &m1);
    assert!(storage.0.lock().files.contains_key(&p2.segment));
    // M2 flushed: its segment goes.
    log.discard_flushed(0, &m2);
    assert!(!storage.0.lock().files.contains_key(&p2.segment));
}

#[test]
fn a_drop_releases_only_the_entries_before_it() {
    let (log, _) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
    let first = log.add(1, &mutation("a", 10)).unwrap();
    log.add(2, &mutation("b", 10)).unwrap();
    log.drop_table(1).unwrap();
    assert_eq!(log.dirty_tables(), vec![(first.segment, vec![2])]);
    // A new table with the same id: its entries are kept.
    log.add(1, &mutation("c", 10)).unwrap();
    assert_eq!(log.dirty_tables(), vec![(first.segment, vec![1, 2])]);
}

#[test]
fn a_failed_segment_creation_is_reported_and_not_sticky() {
    let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
    storage.0.lock().fail_creates = true;
    let err = log.add(1, &mutation("k", 10)).unwrap_err();
    assert_eq!(err.to_string(), "commit log I/O error on mem:1");
    let cause = std::error::Error::source(&err).expect("the I/O error is the source");
    assert_eq!(cause.to_string(), "injected create failure");
    storage.0.lock().fail_creates = false;
    let pos = log.add(1, &mutation("k", 10)).unwrap();
    assert_eq!(pos.segment, 2);
}

/// A removal that fails leaves the segment on record (and its file in
/// place); the next retirement removes it, once.
#[test]
fn a_failed_removal_is_retried_at_the_next_retirement() {
    let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
    let first = log.add(1, &mutation("k", 100)).unwrap().segment;
    add_until_the_segment_switches(&log, first);
    storage.0.lock().fail_removes = true;
    let end = ReplayPosition::new(u64::MAX, u32::MAX);
    log.discard_completed(0, end);
    log.discard_completed(1, end);
    assert!(log.dirty_tables().iter().any(|(id, _)| *id == first));
    assert!(storage.0.lock().files.contains_key(&first));
    assert_eq!(log.stats().segments_retired, 0);
    storage.0.lock().fail_removes = false;
    // Any later retirement (here: a discard of a table with nothing left).
    log.discard_completed(2, end);
    assert!(!log.dirty_tables().iter().any(|(id, _)| *id == first));
    assert_eq!(storage.0.lock().removals, vec![first]);
    assert_eq!(log.stats().segments_retired, 1);
}
