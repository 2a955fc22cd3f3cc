//! Model-based test: random writes, overwrites, every kind of delete and
//! TTLs, random flushes, compactions under every strategy (and of random
//! subsets, so shadowed data often sits in an sstable outside the job),
//! gc_grace 0 with a controllable clock, close and reopen: after every
//! step a read of everything equals the model, so no deleted row comes
//! back.
//!
//! Timestamps are random inside an epoch (out-of-order writes, ties) and
//! grow across epochs; the clock moves one epoch forward at a time, so a
//! tombstone becomes purgeable (older than gc_grace 0) only once later
//! writes all carry larger timestamps, which is the gc_grace contract.

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use common::{Memtable, assert_clean, flush, job_options, read_all, view};
use compaction::{
    Incremental, IncrementalOptions, JobPlan, ManualClock, SizeTiered, SizeTieredOptions,
    SstableSet, Strategy as _, Unthrottled, run_job,
};
use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, RowMarker, Timestamp, Tombstone, Ttl,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Kind {
    Live,
    Expiring(u32),
    CellTombstone,
    RowTombstone,
    RangeTombstone(u8),
    PartitionTombstone,
    Marker,
}

#[derive(Debug, Clone)]
enum Op {
    Write {
        key: u8,
        ck: u8,
        col: u32,
        ts: i64,
        kind: Kind,
    },
    Flush,
    Compact(u8),
    CompactSubset(u16, bool),
    Advance,
    Reopen,
}

fn arb_kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        6 => Just(Kind::Live),
        2 => (1u32..3).prop_map(Kind::Expiring),
        1 => Just(Kind::CellTombstone),
        1 => Just(Kind::RowTombstone),
        1 => (0u8..3).prop_map(Kind::RangeTombstone),
        1 => Just(Kind::PartitionTombstone),
        1 => Just(Kind::Marker),
    ]
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0u8..10, 0u8..6, 0u32..3, 0i64..20, arb_kind())
            .prop_map(|(key, ck, col, ts, kind)| Op::Write { key, ck, col, ts, kind }),
        3 => Just(Op::Flush),
        2 => (0u8..3).prop_map(Op::Compact),
        2 => (any::<u16>(), any::<bool>()).prop_map(|(m, ics)| Op::CompactSubset(m, ics)),
        1 => Just(Op::Advance),
        1 => Just(Op::Reopen),
    ]
}

fn mutation(key: u8, ck: u8, col: u32, ts: Timestamp, now: u32, kind: &Kind) -> Mutation {
    let seed = u64::from(key);
    let key = DecoratedKey::from_bytes(format!("p{key}")).unwrap();
    let ck_bytes = format!("c{ck}");
    // Incompressible, so a few writes fill a 4 KiB incremental fragment.
    let mut x = (ts.micros() as u64) ^ (seed << 32) ^ (u64::from(ck) << 40) ^ u64::from(col);
    let value: Vec<u8> = (0..400)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect();
    let b = Mutation::builder(key);
    let b = match kind {
        Kind::Live => b.cell(ck_bytes, col, Cell::live(value, ts)),
        Kind::Expiring(ttl) => {
            let ttl = Ttl::new(*ttl, now + ttl).unwrap();
            b.cell(ck_bytes, col, Cell::expiring(value, ts, ttl))
        }
        Kind::CellTombstone => b.cell(ck_bytes, col, Cell::tombstone(ts, now)),
        Kind::RowTombstone => b.row_tombstone(ck_bytes, Tombstone::new(ts, now)),
        Kind::RangeTombstone(width) => {
            let end = format!("c{}", ck + width);
            let range = ClusteringRange::new(
                std::ops::Bound::Included(mutation::ClusteringKey::new(ck_bytes).unwrap()),
                std::ops::Bound::Included(mutation::ClusteringKey::new(end).unwrap()),
            )
            .unwrap();
            b.range_tombstone(range, Tombstone::new(ts, now))
        }
        Kind::PartitionTombstone => b.partition_tombstone(Tombstone::new(ts, now)),
        Kind::Marker => b.row_marker(ck_bytes, RowMarker::new(ts)),
    };
    b.build().unwrap()
}

fn strategies() -> (SizeTiered, Incremental) {
    let mut tiering = SizeTieredOptions::default();
    tiering.min_threshold = 2;
    let stcs = SizeTiered::new(tiering.clone()).unwrap();
    let mut ics = IncrementalOptions::default();
    ics.fragment_size = 4096;
    ics.tiering = tiering;
    (stcs, Incremental::new(ics).unwrap())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let options = job_options(clock.clone());
    let (stcs, ics) = strategies();
    let mut set = SstableSet::open(dir.path()).unwrap();
    let mut memtable = Memtable::default();
    let mut written: Vec<Mutation> = Vec::new();
    let mut base: i64 = 1_000;
    for op in ops {
        let now = {
            use compaction::Clock;
            clock.now_seconds()
        };
        match op {
            Op::Write {
                key,
                ck,
                col,
                ts,
                kind,
            } => {
                let m = mutation(key, ck, col, Timestamp::from_micros(base + ts), now, &kind);
                written.push(m.clone());
                memtable.0.push(m);
            }
            Op::Flush => {
                if !memtable.0.is_empty() {
                    flush(&set, std::mem::take(&mut memtable.0));
                }
            }
            Op::Compact(which) => {
                let infos = set.snapshot().infos();
                let plan = match which {
                    0 => stcs.next_job(&infos),
                    1 => ics.next_job(&infos),
                    _ => ics.major_job(&infos),
                };
                if let Some(plan) = plan {
                    let report = run_job(&set, &plan, &options, &memtable, &Unthrottled).unwrap();
                    prop_assert!(report.pending.is_none());
                }
            }
            Op::CompactSubset(mask, incremental) => {
                let infos = set.snapshot().infos();
                let inputs: Vec<u64> = infos
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask & (1 << (i % 16)) != 0)
                    .map(|(_, s)| s.generation)
                    .collect();
                if !inputs.is_empty() {
                    let plan = JobPlan {
                        inputs,
                        fragment_size: incremental.then_some(4096),
                    };
                    run_job(&set, &plan, &options, &memtable, &Unthrottled).unwrap();
                }
            }
            Op::Advance => {
                clock.advance(2);
                base += 1_000;
            }
            Op::Reopen => {
                drop(set);
                set = SstableSet::open(dir.path()).unwrap();
            }
        }
        let now = {
            use compaction::Clock;
            clock.now_seconds()
        };
        let expected = view(&Mutation::reconcile_all(written.clone()), now);
        let actual = view(&read_all(&set, &memtable.0), now);
        prop_assert_eq!(&actual, &expected);
    }
    assert_clean(dir.path(), &set);
    let generations: HashSet<u64> = set
        .snapshot()
        .handles()
        .iter()
        .map(|h| h.generation())
        .collect();
    prop_assert_eq!(generations.len(), set.snapshot().len());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn reads_equal_the_model_under_every_strategy(ops in prop::collection::vec(arb_op(), 1..80)) {
        run(ops)?;
    }
}
