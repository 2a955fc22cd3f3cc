//! With the open-file cache capped at 8 files, 100 open sstables all read
//! back correctly (point lookups and scans interleaved, then from 4
//! threads at once), and the process's open descriptors never exceed the
//! baseline + the capacity + a small constant: an sstable's files are
//! closed when the cache evicts them and re-opened by the next read.
//!
//! The capacity is process-wide, so this is the only test in this binary.

mod common;

use common::*;
use mutation::{Cell, DecoratedKey, Fragment, Mutation, Timestamp};
use sstable::Sstable;

const CAPACITY: usize = 8;
const SSTABLES: usize = 100;
const PARTITIONS: usize = 4;
const THREADS: usize = 4;
/// Beyond the capacity: one descriptor per read in flight (an evicted file
/// stays open until its read ends) and one per `/proc/self/fd` listing in
/// progress, one of each per thread, plus slack for the test harness.
const SLACK: usize = 2 * THREADS + 4;

/// Descriptors this process has open (Linux: the entries of /proc/self/fd).
fn open_fds() -> Option<usize> {
    std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count())
}

struct Table {
    sst: Sstable,
    /// (key, fragments of its partition), in ring order.
    partitions: Vec<(DecoratedKey, Vec<Fragment>)>,
    all: Vec<Fragment>,
}

/// Reads every partition of `t` and scans it, interleaving a scan between
/// lookups, checking the results; returns the most descriptors seen.
fn read_back(t: &Table, limit: usize) -> usize {
    let mut peak = 0;
    let check = |peak: &mut usize| {
        let n = open_fds().unwrap();
        assert!(
            n <= limit,
            "{n} descriptors open, more than the limit {limit}"
        );
        *peak = (*peak).max(n);
    };
    for (i, (key, expected)) in t.partitions.iter().enumerate() {
        let got = t
            .sst
            .read_partition(key)
            .unwrap()
            .expect("partition present");
        assert_eq!(&got, expected, "sstable {}: {key}", t.sst.generation());
        check(&mut peak);
        if i == PARTITIONS / 2 {
            assert_eq!(drain(&mut t.sst.scan()), t.all);
            check(&mut peak);
        }
    }
    peak
}

#[test]
fn many_sstables_read_back_within_the_descriptor_bound() {
    let Some(_) = open_fds() else {
        eprintln!("skipped: /proc/self/fd is not available on this system");
        return;
    };
    sstable::set_max_open_files(CAPACITY).unwrap();
    assert_eq!(sstable::max_open_files(), CAPACITY);
    let dir = tempfile::tempdir().unwrap();
    let mut written = Vec::new();
    for s in 0..SSTABLES {
        let mutations: Vec<Mutation> = (0..PARTITIONS)
            .map(|p| {
                Mutation::builder(DecoratedKey::from_bytes(format!("s{s}-p{p}")).unwrap())
                    .cell(
                        "ck",
                        0,
                        Cell::live(
                            vec![(s * PARTITIONS + p) as u8; 300],
                            Timestamp::from_micros(1),
                        ),
                    )
                    .build()
                    .unwrap()
            })
            .collect();
        let (all, merged) = canonical(&mutations);
        let generation = write(dir.path(), &all, small_options(s % 2 == 0)).generation();
        let partitions = merged
            .iter()
            .map(|m| (m.key().clone(), m.fragments()))
            .collect();
        written.push((generation, partitions, all));
    }
    // Everything written and its sstables dropped: the baseline.
    let baseline = open_fds().unwrap();
    assert_eq!(
        sstable::open_files(),
        0,
        "dropped sstables left files cached"
    );
    let limit = baseline + CAPACITY + SLACK;

    let tables: Vec<Table> = written
        .into_iter()
        .map(|(generation, partitions, all)| {
            let sst = Sstable::open(dir.path(), generation).unwrap();
            let n = open_fds().unwrap();
            assert!(n <= limit, "{n} descriptors after an open, limit {limit}");
            Table {
                sst,
                partitions,
                all,
            }
        })
        .collect();
    assert!(sstable::open_files() <= CAPACITY);

    // One thread, every sstable in turn, twice (the second pass re-opens
    // what the first evicted).
    for _ in 0..2 {
        for t in &tables {
            read_back(t, limit);
        }
    }
    assert!(sstable::open_files() <= CAPACITY);

    // Four threads at once, each starting at a different sstable.
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|th| {
                let tables = &tables;
                scope.spawn(move || {
                    let mut peak = 0;
                    for i in 0..SSTABLES {
                        let t = &tables[(i * 7 + th * SSTABLES / THREADS) % SSTABLES];
                        peak = peak.max(read_back(t, limit));
                    }
                    peak
                })
            })
            .collect();
        for h in handles {
            assert!(h.join().unwrap() <= limit);
        }
    });
    assert!(sstable::open_files() <= CAPACITY);

    // The verifier reads Data end to end through the cache as well.
    for t in tables.iter().step_by(10) {
        t.sst.verify().unwrap();
    }
    drop(tables);
    assert_eq!(sstable::open_files(), 0);
    assert_eq!(open_fds().unwrap(), baseline);
}
