//! Any sequence of applies, with full compactions of the memtable's region
//! and reclaim forced by another region of the pool interleaved, reads back
//! equal to a model (a `BTreeMap` of mutations reconciled by the mutation
//! crate) through full scans, single-partition slices, range scans and the
//! flush stream, and whole partitions (`next_mutation`, alone and
//! alternating with streamed ones); every stream passes the validator. Mutations of rows
//! only are generated as often as full ones, so partitions stored without
//! a header entry (their header is empty) sit next to partitions with one,
//! and gain one when a later mutation brings a tombstone or a static row.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use logalloc::Region;
use mutation::testing::{arb_clustering_range, arb_mutation, arb_partition_key};
use mutation::{DecoratedKey, FragmentReader, Mutation, PartitionRange, RingPosition};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Apply(Mutation),
    FullCompaction,
    Reclaim,
}

/// `m` without its partition tombstone, static row and range tombstones.
fn rows_only(m: Mutation) -> Mutation {
    let mut b = Mutation::builder(m.key().clone());
    for (k, r) in m.rows() {
        b = b.row(k.clone(), r.clone());
    }
    b.build().expect("the rows of a valid mutation")
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => arb_mutation().prop_map(Op::Apply),
        4 => arb_mutation().prop_map(|m| Op::Apply(rows_only(m))),
        1 => Just(Op::FullCompaction),
        1 => Just(Op::Reclaim),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn memtable_reads_back_the_model(
        ops in prop::collection::vec(arb_op(), 0..24),
        slices in prop::collection::vec((arb_partition_key(), arb_clustering_range()), 1..6),
        bounds in (arb_partition_key(), arb_partition_key()),
    ) {
        let (pool, _group, memtable) = common::setup(4 << 20);
        let mut model: BTreeMap<DecoratedKey, Mutation> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Apply(m) => {
                    memtable.apply(&m).unwrap();
                    match model.remove(m.key()) {
                        Some(old) => model.insert(m.key().clone(), old.merge(m).unwrap()),
                        None => model.insert(m.key().clone(), m),
                    };
                }
                Op::FullCompaction => memtable.full_compaction().unwrap(),
                Op::Reclaim => {
                    // Fill the pool from another region: allocation reclaims,
                    // compacting the memtable's region if it can.
                    let mut other = Region::new(&pool);
                    let mut held = Vec::new();
                    while let Ok(h) = other.alloc(4000, 8) {
                        held.push(h);
                    }
                    drop(other);
                }
            }
            memtable.check_invariants().unwrap();
        }
        let expected: Vec<Mutation> = model.values().cloned().collect();
        prop_assert_eq!(&common::scan(&memtable), &expected);

        let flushed = Arc::new(AtomicUsize::new(0));
        let counter = flushed.clone();
        let mut flush = memtable.make_flush_reader(move |b| {
            counter.fetch_add(b, Ordering::Relaxed);
        });
        prop_assert_eq!(&common::read_all(&mut flush), &expected);
        let reported = flushed.load(Ordering::Relaxed);
        prop_assert!(reported <= memtable.stats().region.used_bytes);
        prop_assert_eq!(reported > 0, !expected.is_empty());

        for (key, slice) in &slices {
            let got = memtable
                .make_reader_opt(PartitionRange::single_key(key.clone()), slice.clone())
                .unwrap()
                .map(|mut r| common::read_all(&mut r));
            let want = model.get(key).map(|m| vec![common::restrict(m, slice)]);
            prop_assert_eq!(&got, &want);
            // Whole (`next_mutation`): the same partition, then the end.
            let whole = memtable
                .make_reader_opt(PartitionRange::single_key(key.clone()), slice.clone())
                .unwrap()
                .map(|mut r| {
                    let one = r.next_mutation().unwrap();
                    assert_eq!(r.next_mutation().unwrap(), None);
                    one.into_iter().collect::<Vec<_>>()
                });
            prop_assert_eq!(whole, want);
        }

        let (a, b) = if bounds.0 <= bounds.1 { bounds } else { (bounds.1, bounds.0) };
        let slice = slices[0].1.clone();
        // Both kinds of bound at each end (a partition key bound may fall
        // on a partition stored with or without its header entry), and
        // token bounds.
        let key = |k: &DecoratedKey| RingPosition::Key(k.clone());
        let token = |k: &DecoratedKey| RingPosition::Token(k.token());
        for (start, end) in [
            (Bound::Excluded(key(&a)), Bound::Included(key(&b))),
            (Bound::Included(key(&a)), Bound::Excluded(key(&b))),
            (Bound::Included(key(&a)), Bound::Included(key(&b))),
            (Bound::Included(token(&a)), Bound::Included(token(&b))),
            (Bound::Excluded(token(&a)), Bound::Excluded(token(&b))),
        ] {
            let Ok(range) = PartitionRange::new(start, end) else {
                continue; // empty or inverted (the same key excluded)
            };
            let want: Vec<Mutation> = model
                .values()
                .filter(|m| range.contains(m.key()))
                .map(|m| common::restrict(m, &slice))
                .collect();
            let got = memtable.make_reader_opt(range.clone(), slice.clone()).unwrap();
            prop_assert_eq!(got.is_none(), want.is_empty(), "{:?}", range);
            let mut reader = memtable.make_reader(range.clone(), slice.clone()).unwrap();
            prop_assert_eq!(common::read_all(&mut reader), want.clone());
            // Partition after partition whole, and alternating whole and
            // streamed.
            let mut reader = memtable.make_reader(range.clone(), slice.clone()).unwrap();
            let mut whole = Vec::new();
            while let Some(m) = reader.next_mutation().unwrap() {
                whole.push(m);
            }
            prop_assert_eq!(&whole, &want);
            let mut reader = memtable.make_reader(range, slice.clone()).unwrap();
            let mixed = mutation::testing::read_alternating(&mut reader).unwrap();
            prop_assert_eq!(mixed, want);
        }

        let stats = memtable.stats();
        prop_assert_eq!(stats.partitions, model.len());
        prop_assert_eq!(stats.rows, model.values().map(|m| m.rows().len()).sum::<usize>());
    }
}
