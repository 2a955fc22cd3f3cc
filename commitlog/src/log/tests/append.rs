//! Appending: durability on return, size checks, batches, the buffer budget and the size limit.

use super::*;

#[test]
fn batch_add_is_durable_on_return() {
    let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
    let pos = log.add(1, &mutation("k", 10)).unwrap();
    let s = storage.0.lock();
    let durable = &s.durable[&pos.segment];
    assert_ne!(
        durable[pos.offset as usize..pos.offset as usize + 4],
        [0; 4]
    );
}

#[test]
fn oversized_entry_is_refused_before_writing() {
    let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
    let err = log.add(3, &mutation("k", 3000)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("commit log entry of ")
            && msg.contains(
                "exceeds the 2028-byte limit (half the 4096-byte segment less 20 bytes of framing)"
            ),
        "{msg}"
    );
    assert!(storage.0.lock().files.is_empty());
    assert_eq!(log.stats().entries, 0);
    // The largest accepted entry fits.
    let m = mutation("k", 2028 - 9 - (mutation("k", 0).encoded_len()));
    assert_eq!(m.encoded_len() + 9, 2028);
    log.add(3, &m).unwrap();
}

#[test]
fn a_checked_mutation_is_logged_as_the_plain_one_and_refused_the_same() {
    let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
    let m = mutation("k", 100);
    let checked = mutation::limits::check(&m).unwrap();
    let plain = log.add(1, &m).unwrap();
    let from_checked = log.add(1, checked).unwrap();
    let s = storage.0.lock();
    let entry = |p: ReplayPosition| {
        let d = &s.durable[&p.segment];
        let at = p.offset as usize;
        let h = format::parse_entry_header(&d[at..at + format::ENTRY_HEADER_LEN]).unwrap();
        let body = at + format::ENTRY_HEADER_LEN;
        d[body..body + h.len as usize].to_vec()
    };
    assert_eq!(entry(plain), entry(from_checked), "the same payload");
    drop(s);
    // The log's own limit still applies to a mutation `mutation` accepts.
    let big = mutation("k", 3000);
    let err = log
        .add(3, mutation::limits::check(&big).unwrap())
        .unwrap_err();
    assert!(
        err.to_string().contains("exceeds the 2028-byte limit"),
        "{err}"
    );
    let err = log
        .add_async(3, mutation::limits::check(&big).unwrap())
        .unwrap_err();
    assert!(
        err.to_string().contains("exceeds the 2028-byte limit"),
        "{err}"
    );
}

#[test]
fn a_batch_is_durable_on_return_with_one_sync() {
    let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
    assert_eq!(log.add_batch(&[]).unwrap(), vec![]);
    let ms: Vec<Mutation> = (0..5).map(|i| mutation(&format!("k{i}"), 100)).collect();
    let entries: Vec<(TableId, &Mutation)> = ms
        .iter()
        .enumerate()
        .map(|(i, m)| (i as TableId, m))
        .collect();
    let positions = log.add_batch(&entries).unwrap();
    assert_eq!(positions.len(), 5);
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
    let s = storage.0.lock();
    for p in &positions {
        let d = &s.durable[&p.segment];
        let at = p.offset as usize;
        let h = format::parse_entry_header(&d[at..at + format::ENTRY_HEADER_LEN]);
        assert!(
            h.is_some_and(|h| h.segment == p.segment),
            "{p:?} not durable"
        );
    }
    drop(s);
    let stats = log.stats();
    assert_eq!(
        (stats.entries, stats.synced_entries, stats.syncs),
        (5, 5, 1)
    );
}

#[test]
fn a_batch_with_an_oversized_entry_writes_nothing() {
    let (log, _) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
    let (ok, big) = (mutation("a", 10), mutation("b", 3000));
    let e = log.add_batch(&[(1, &ok), (2, &ok), (3, &big)]).unwrap_err();
    assert!(matches!(e, Error::EntryTooLarge { table: 3, .. }), "{e}");
    assert_eq!(log.stats().entries, 0);
}

#[test]
fn a_batch_stopped_by_a_full_log_says_how_many_entries_went_in() {
    let config = Config {
        write_timeout: Duration::from_millis(20),
        ..small(SyncMode::Batch(Duration::ZERO))
    };
    let (log, _) = mem_log(config);
    let m = mutation("k", 500);
    let entries = vec![(1, &m); 40];
    match log.add_batch(&entries) {
        Err(Error::BatchIncomplete {
            appended,
            total,
            source,
        }) => {
            assert_eq!(total, 40);
            assert!(appended > 0 && appended < 40, "{appended}");
            assert!(matches!(*source, Error::LogFull { .. }), "{source}");
            assert_eq!(log.stats().entries, appended as u64);
            // What went in stands: a sync makes it durable.
            log.sync().unwrap();
            assert_eq!(log.stats().synced_entries, appended as u64);
        }
        other => panic!("{other:?}"),
    }
    // Nothing appended at all: the cause itself.
    let e = log.add_batch(&entries).unwrap_err();
    assert!(matches!(e, Error::LogFull { .. }), "{e}");
}

#[test]
fn a_slow_disk_makes_writers_wait_at_the_buffer_budget() {
    let mut c = small(SyncMode::Periodic(Duration::from_secs(3600)));
    c.buffer_budget = Some(2048);
    c.write_timeout = Duration::from_millis(100);
    let (log, storage) = mem_log(c);
    storage.0.lock().stall = true;
    // The first entry is accepted at once (periodic mode); the flusher
    // takes it and hangs in the write, so its bytes stay unwritten. Wait
    // for that: a writer at the budget with no cycle running writes the
    // buffers out itself and would hang in the stalled write instead (CI
    // on a loaded machine: the flusher had not been scheduled yet).
    log.add(1, &mutation("a", 1200)).unwrap();
    storage.wait_for_a_stalled_write();
    assert_eq!(log.stats().budget_waits, 0);
    let err = log.add(1, &mutation("b", 1200)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "commit log write buffers stayed at their 2048-byte budget for 100ms: the disk is not keeping up"
    );
    // The wait is counted, with its time, failed or not.
    let stats = log.stats();
    assert_eq!(
        (
            stats.budget_waits,
            stats.rotation_waits,
            stats.size_limit_waits
        ),
        (1, 0, 0)
    );
    assert!(stats.room_wait_micros >= 100_000, "{stats:?}");
    storage.unstall();
    log.add(1, &mutation("b", 1200)).unwrap();
    log.close().unwrap();
}

#[test]
fn full_log_times_out_and_asks_for_flushes() {
    let mut c = small(SyncMode::Batch(Duration::ZERO));
    c.write_timeout = Duration::from_millis(200);
    c.flush_request_interval = Duration::from_millis(20);
    let (log, _storage) = mem_log(c);
    let asked = PlainArc::new(Mutex::new(Vec::new()));
    let a = PlainArc::clone(&asked);
    log.set_flush_handler(move |r| a.lock().extend_from_slice(r));
    let err = loop {
        match log.add(5, &mutation("k", 900)) {
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    assert!(matches!(err, Error::LogFull { .. }), "{err}");
    assert!(err.to_string().contains("16384-byte limit"), "{err}");
    let stats = log.stats();
    assert_eq!(stats.size_limit_waits, 1, "{stats:?}");
    assert!(stats.room_wait_micros >= 200_000, "{stats:?}");
    let asked = asked.lock();
    // Asked repeatedly while waiting, always for table 5.
    assert!(asked.len() >= 2, "{:?}", *asked);
    assert!(asked.iter().all(|r| r.table == 5));
}

/// Entries are copied into fixed-capacity chunks that never grow (issue
/// 19's heap: a doubling buffer was reallocated on writer threads), and a
/// segment written through many chunks replays every entry in order.
#[test]
fn chunks_never_grow_and_a_segment_of_many_chunks_replays_whole() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        segment_size: 8 << 20,
        total_size_limit: 64 << 20,
        sync: SyncMode::Periodic(Duration::from_secs(3600)),
        buffer_budget: Some(6 << 20),
        preallocate: crate::Preallocate::Never,
        ..Config::default()
    };
    let (log, _) = CommitLog::open(dir.path(), config.clone(), |_, _, _| {}).unwrap();
    let mut positions = Vec::new();
    for i in 0..3000 {
        positions.push(log.add(1, &mutation(&format!("k{i}"), 1000)).unwrap());
        let st = log.shared.state.lock();
        for c in &st.pending {
            assert!(
                c.bytes.capacity() <= super::super::append::CHUNK_CAPACITY,
                "a chunk grew to {} bytes",
                c.bytes.capacity()
            );
        }
        assert!(st.pool.len() <= 6 + 2);
    }
    // About 3 MiB in one segment: several chunks.
    assert_eq!(positions[0].segment, positions[2999].segment);
    log.close().unwrap();
    let mut replayed = Vec::new();
    let (log, report) = CommitLog::open(dir.path(), config, |_, m, p| {
        replayed.push((m.key().clone(), p));
    })
    .unwrap();
    assert_eq!(report.entries, 3000);
    for (i, (key, p)) in replayed.iter().enumerate() {
        assert_eq!(*p, positions[i]);
        assert_eq!(key, mutation(&format!("k{i}"), 0).key());
    }
    drop(log);
}
