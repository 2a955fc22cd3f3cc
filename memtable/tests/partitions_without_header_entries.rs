//! A partition whose header is empty (no partition tombstone, static row or
//! range tombstone) and that has rows is stored as its rows alone, without
//! a header entry. A tombstone or a static row applied to it later adds
//! the header; readers (scans, slices, range scans on either kind of bound,
//! the flush stream, a reader re-seeking after applies) start such a
//! partition at its first row, next to partitions that have a header entry;
//! the partition count stays exact.

mod common;

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation,
    PartitionRange, RingPosition, StreamValidator, Timestamp, Tombstone,
};

fn ts(t: i64) -> Timestamp {
    Timestamp::from_micros(t)
}

fn dk(key: &str) -> DecoratedKey {
    DecoratedKey::from_bytes(key.to_string()).unwrap()
}

/// Rows `cks` of partition `pk`, written at `t`.
fn rows(pk: &str, cks: &[&str], t: i64) -> Mutation {
    let mut b = Mutation::builder(dk(pk));
    for ck in cks {
        b = b.cell(
            ck.to_string(),
            0,
            Cell::live(format!("{pk}/{ck}@{t}"), ts(t)),
        );
    }
    b.build().unwrap()
}

fn kinds(reader: &mut impl FragmentReader) -> Vec<&'static str> {
    let mut validator = StreamValidator::new();
    let mut out = Vec::new();
    while let Some(f) = reader.next().unwrap() {
        validator.check(&f).unwrap();
        out.push(f.kind());
    }
    out
}

fn full_read(mt: &Arc<memtable::Memtable>, key: &str) -> Vec<&'static str> {
    let mut r = mt
        .make_reader_opt(PartitionRange::single_key(dk(key)), ClusteringRange::full())
        .unwrap()
        .expect("the partition is there");
    kinds(&mut r)
}

#[test]
fn a_partition_tombstone_over_a_rows_only_partition_adds_its_header() {
    let (_pool, _group, mt) = common::setup(16 << 20);
    mt.apply(&rows("p", &["1", "2", "3", "4"], 10)).unwrap();
    // One leaf and an entry (key and value in one string) per row: no
    // header entry.
    assert_eq!(mt.stats().region.objects, 1 + 4);
    assert_eq!(mt.stats().partitions, 1);
    let full = mt.stats().region.used_bytes;
    assert_eq!(
        full_read(&mt, "p"),
        [
            "partition start",
            "clustering row",
            "clustering row",
            "clustering row",
            "clustering row",
            "partition end"
        ]
    );

    let delete = Mutation::builder(dk("p"))
        .partition_tombstone(Tombstone::new(ts(20), 0))
        .build()
        .unwrap();
    mt.apply(&delete).unwrap();
    let stats = mt.stats();
    assert_eq!((stats.partitions, stats.rows), (1, 0));
    assert_eq!(stats.rows_dropped_by_tombstones, 4);
    // The rows are freed; the header is stored.
    assert_eq!(stats.region.objects, 1 + 1);
    assert!(stats.region.used_bytes < full);
    assert_eq!(common::scan(&mt), std::slice::from_ref(&delete));

    // A newer row is kept, an older one is not stored.
    mt.apply(&rows("p", &["5"], 30)).unwrap();
    mt.apply(&rows("p", &["6"], 15)).unwrap();
    assert_eq!(mt.stats().rows, 1);
    let all = [
        rows("p", &["1", "2", "3", "4"], 10),
        delete,
        rows("p", &["5"], 30),
        rows("p", &["6"], 15),
    ];
    assert_eq!(common::scan(&mt), Mutation::reconcile_all(all));
    mt.check_invariants().unwrap();
}

#[test]
fn a_static_row_added_to_a_rows_only_partition() {
    let (_pool, _group, mt) = common::setup(16 << 20);
    let first = rows("p", &["a", "b"], 1);
    mt.apply(&first).unwrap();
    let objects = mt.stats().region.objects;
    let stat = Mutation::builder(dk("p"))
        .static_cell(7, Cell::live("s", ts(2)))
        .build()
        .unwrap();
    mt.apply(&stat).unwrap();
    // The header came.
    assert_eq!(mt.stats().region.objects, objects + 1);
    assert_eq!((mt.stats().partitions, mt.stats().rows), (1, 2));
    assert_eq!(
        full_read(&mt, "p"),
        [
            "partition start",
            "static row",
            "clustering row",
            "clustering row",
            "partition end"
        ]
    );
    // Rows written after the header came go beside it, and a newer static
    // cell replaces the header's value.
    let more = rows("p", &["0", "b", "c"], 3);
    let newer = Mutation::builder(dk("p"))
        .static_cell(7, Cell::live("t", ts(4)))
        .build()
        .unwrap();
    mt.apply(&more).unwrap();
    mt.apply(&newer).unwrap();
    assert_eq!(mt.stats().region.objects, objects + 1 + 2);
    assert_eq!(mt.stats().rows, 4);
    let want = Mutation::reconcile_all([first, stat, more, newer]);
    assert_eq!(common::scan(&mt), want);
    mt.check_invariants().unwrap();
}

#[test]
fn a_range_tombstone_over_a_rows_only_partition_and_what_readers_see() {
    let (_pool, _group, mt) = common::setup(16 << 20);
    let first = rows("p", &["1", "2", "3", "4"], 10);
    mt.apply(&first).unwrap();
    let delete = Mutation::builder(dk("p"))
        .range_tombstone_bounds(
            Bound::Included("2"),
            Bound::Included("3"),
            Tombstone::new(ts(20), 0),
        )
        .build()
        .unwrap();
    mt.apply(&delete).unwrap();
    let stats = mt.stats();
    assert_eq!(
        (stats.partitions, stats.rows, stats.range_tombstones),
        (1, 2, 1)
    );
    assert_eq!(
        full_read(&mt, "p"),
        [
            "partition start",
            "clustering row",
            "range tombstone change",
            "range tombstone change",
            "clustering row",
            "partition end"
        ]
    );
    let model = Mutation::reconcile_all([first, delete]).remove(0);
    let ck = |s: &str| ClusteringKey::new(s.to_string()).unwrap();
    for slice in [
        ClusteringRange::full(),
        ClusteringRange::new(Bound::Included(ck("2")), Bound::Unbounded).unwrap(),
        ClusteringRange::new(Bound::Excluded(ck("1")), Bound::Excluded(ck("3"))).unwrap(),
        ClusteringRange::new(Bound::Excluded(ck("3")), Bound::Unbounded).unwrap(),
    ] {
        let mut r = mt
            .make_reader_opt(PartitionRange::single_key(dk("p")), slice.clone())
            .unwrap()
            .unwrap();
        assert_eq!(
            common::read_all(&mut r),
            [common::restrict(&model, &slice)],
            "{slice:?}"
        );
    }
}

/// Partitions of three kinds, interleaved in ring order: rows only (no
/// header entry), rows with a header (tombstone, static row or range
/// tombstone), and empty (a header entry alone).
fn mixed() -> Vec<Mutation> {
    (0..60)
        .map(|i| {
            let pk = format!("k{i:02}");
            match i % 4 {
                0 | 1 => rows(&pk, &["a", "b", "c"], 1),
                2 => Mutation::builder(dk(&pk))
                    .partition_tombstone(Tombstone::new(ts(1), 0))
                    .static_cell(1, Cell::live("s", ts(2)))
                    .range_tombstone_bounds(
                        Bound::Included("b"),
                        Bound::Excluded("d"),
                        Tombstone::new(ts(3), 0),
                    )
                    .cell("a", 0, Cell::live("x", ts(2)))
                    .cell("z", 0, Cell::live("y", ts(4)))
                    .build()
                    .unwrap(),
                _ => Mutation::builder(dk(&pk)).build().unwrap(),
            }
        })
        .collect()
}

#[test]
fn readers_over_partitions_with_and_without_header_entries() {
    // 4 KiB segments: fanout 14, so partitions straddle leaves.
    let pool = logalloc::SegmentPool::new(
        logalloc::PoolConfig::default()
            .with_segment_size(4 << 10)
            .with_memory_limit(64 << 20),
    )
    .unwrap();
    let group = region_group::RegionGroup::new("g", region_group::ReclaimConfig::default());
    let mt = memtable::Memtable::new(&group, &pool).unwrap();
    let applied = mixed();
    for m in &applied {
        mt.apply(m).unwrap();
    }
    let want = Mutation::reconcile_all(applied.iter().cloned());
    assert_eq!(mt.stats().partitions, 60);
    assert_eq!(mt.stats().rows, 30 * 3 + 15 * 2);
    assert_eq!(common::scan(&mt), want);

    // The flush stream: the same, and progress adds up to the region.
    let reported = Arc::new(AtomicUsize::new(0));
    let counter = reported.clone();
    let mut flush = mt.make_flush_reader(move |b| {
        counter.fetch_add(b, Ordering::Relaxed);
    });
    assert_eq!(common::read_all(&mut flush), want);
    assert_eq!(
        reported.load(Ordering::Relaxed),
        mt.stats().region.used_bytes
    );

    let ck = |s: &str| ClusteringKey::new(s.to_string()).unwrap();
    let slices = [
        ClusteringRange::full(),
        ClusteringRange::new(Bound::Included(ck("b")), Bound::Unbounded).unwrap(),
        ClusteringRange::new(Bound::Unbounded, Bound::Excluded(ck("b"))).unwrap(),
        ClusteringRange::new(Bound::Excluded(ck("c")), Bound::Excluded(ck("y"))).unwrap(),
    ];
    // Every partition alone, with each slice; absent keys are misses.
    for m in &want {
        for slice in &slices {
            let mut r = mt
                .make_reader_opt(PartitionRange::single_key(m.key().clone()), slice.clone())
                .unwrap()
                .expect("present");
            assert_eq!(
                common::read_all(&mut r),
                [common::restrict(m, slice)],
                "{}",
                m.key()
            );
        }
    }
    for absent in ["k60", "k", "k0", "k000", ""] {
        let Ok(key) = DecoratedKey::from_bytes(absent.to_string()) else {
            continue;
        };
        let range = PartitionRange::single_key(key);
        assert!(
            mt.make_reader_opt(range, ClusteringRange::full())
                .unwrap()
                .is_none()
        );
    }

    // Range scans whose bounds fall on each partition, on either side.
    let key = |m: &Mutation| RingPosition::Key(m.key().clone());
    for (i, m) in want.iter().enumerate() {
        let next = &want[(i + 1) % want.len()];
        let prev = &want[(i + want.len() - 1) % want.len()];
        let slice = &slices[i % slices.len()];
        for (start, end) in [
            (Bound::Included(key(m)), Bound::Unbounded),
            (Bound::Excluded(key(m)), Bound::Unbounded),
            (Bound::Unbounded, Bound::Included(key(m))),
            (Bound::Unbounded, Bound::Excluded(key(m))),
            (Bound::Included(key(m)), Bound::Included(key(next))),
            (Bound::Excluded(key(m)), Bound::Excluded(key(next))),
            (Bound::Excluded(key(prev)), Bound::Included(key(m))),
            (
                Bound::Included(RingPosition::Token(m.key().token())),
                Bound::Included(RingPosition::Token(m.key().token())),
            ),
        ] {
            let Ok(range) = PartitionRange::new(start, end) else {
                continue; // `next` or `prev` wrapped around the ring
            };
            let expected: Vec<Mutation> = want
                .iter()
                .filter(|m| range.contains(m.key()))
                .map(|m| common::restrict(m, slice))
                .collect();
            let opt = mt.make_reader_opt(range.clone(), slice.clone()).unwrap();
            assert_eq!(opt.is_none(), expected.is_empty(), "{range}");
            let mut r = mt.make_reader(range.clone(), slice.clone()).unwrap();
            assert_eq!(common::read_all(&mut r), expected, "{range}");
        }
    }
}

/// A scan reading one fragment at a time while applies give headers to
/// rows-only partitions (the one being read and the ones ahead) and add
/// rows-only partitions: it re-seeks, its stream stays valid, and it ends
/// with the partitions and rows that were there all along.
#[test]
fn a_scan_stays_valid_while_headers_come_and_go_around_it() {
    let (_pool, _group, mt) = common::setup(16 << 20);
    let applied = mixed();
    for m in &applied {
        mt.apply(m).unwrap();
    }
    let mut reader = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    let mut validator = StreamValidator::new();
    let mut partitions = Vec::new();
    let mut rows_seen = 0;
    let mut step = 0;
    let mut added = 0;
    while let Some(f) = reader.next().unwrap() {
        validator.check(&f).unwrap();
        match &f {
            Fragment::PartitionStart { key, .. } => {
                partitions.push(key.clone());
                // A static row for the partition being read (behind the
                // reader), and an old tombstone for the next one.
                mt.apply(
                    &Mutation::builder(key.clone())
                        .static_cell(9, Cell::live("late", ts(1)))
                        .build()
                        .unwrap(),
                )
                .unwrap();
            }
            Fragment::ClusteringRow { .. } => rows_seen += 1,
            _ => {}
        }
        step += 1;
        if step % 3 == 0 {
            // Old partition tombstones (they shadow nothing) on every
            // partition, and new rows-only partitions.
            for m in &applied {
                mt.apply(
                    &Mutation::builder(m.key().clone())
                        .partition_tombstone(Tombstone::new(ts(0), 0))
                        .build()
                        .unwrap(),
                )
                .unwrap();
            }
            mt.apply(&rows(&format!("new{step}"), &["q"], 1)).unwrap();
            added += 1;
        }
    }
    validator.finish().unwrap();
    for m in &applied {
        assert!(partitions.contains(m.key()), "{} missing", m.key());
    }
    assert!(rows_seen >= 30 * 3 + 15 * 2);
    let mut sorted = partitions.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, partitions, "each partition once, in ring order");
    assert_eq!(mt.stats().partitions, 60 + added);
    assert_eq!(mt.stats().rows, 30 * 3 + 15 * 2 + added);
}
