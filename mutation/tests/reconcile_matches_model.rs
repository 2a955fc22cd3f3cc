//! Reconciliation against a naive model: for every written cell, the
//! visible result is the greatest version (by Cassandra's rules) unless a
//! partition, range or row tombstone with a timestamp >= its own covers it.

use std::collections::{BTreeMap, BTreeSet};

use mutation::testing::{arb_cell, arb_clustering_key, arb_clustering_range, arb_tombstone};
use mutation::{Cell, ClusteringKey, ClusteringRange, DecoratedKey, Mutation, Tombstone};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Cell(ClusteringKey, u32, Cell),
    RowTombstone(ClusteringKey, Tombstone),
    Range(ClusteringRange, Tombstone),
    Partition(Tombstone),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (arb_clustering_key(), 0u32..3, arb_cell()).prop_map(|(k, c, v)| Op::Cell(k, c, v)),
        1 => (arb_clustering_key(), arb_tombstone()).prop_map(|(k, t)| Op::RowTombstone(k, t)),
        2 => (arb_clustering_range(), arb_tombstone()).prop_map(|(r, t)| Op::Range(r, t)),
        1 => arb_tombstone().prop_map(Op::Partition),
    ]
}

fn build(key: &DecoratedKey, ops: &[Op]) -> Mutation {
    let mut b = Mutation::builder(key.clone());
    for op in ops {
        b = match op.clone() {
            Op::Cell(k, c, v) => b.cell(k, c, v),
            Op::RowTombstone(k, t) => b.row_tombstone(k, t),
            Op::Range(r, t) => b.range_tombstone(r, t),
            Op::Partition(t) => b.partition_tombstone(t),
        };
    }
    b.build().unwrap()
}

/// The model's visible cells: (clustering key, column) -> cell.
fn model(ops: &[Op]) -> BTreeMap<(ClusteringKey, u32), Cell> {
    let pt = ops
        .iter()
        .filter_map(|o| match o {
            Op::Partition(t) => Some(*t),
            _ => None,
        })
        .max();
    let mut winners: BTreeMap<(ClusteringKey, u32), Cell> = BTreeMap::new();
    for op in ops {
        if let Op::Cell(k, c, v) = op {
            let e = winners.entry((k.clone(), *c)).or_insert_with(|| v.clone());
            if v.merge_cmp(e) == std::cmp::Ordering::Greater {
                *e = v.clone();
            }
        }
    }
    winners.retain(|(k, _), cell| {
        let mut covering = pt.map(|t| t.timestamp);
        for op in ops {
            let t = match op {
                Op::RowTombstone(rk, t) if rk == k => Some(t.timestamp),
                Op::Range(r, t) if r.contains(k) => Some(t.timestamp),
                _ => None,
            };
            covering = covering.max(t);
        }
        covering.is_none_or(|c| cell.timestamp() > c)
    });
    winners
}

fn visible(m: &Mutation) -> BTreeMap<(ClusteringKey, u32), Cell> {
    let mut out = BTreeMap::new();
    for (k, row) in m.rows() {
        for (c, cell) in &row.cells {
            out.insert((k.clone(), *c), cell.clone());
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn merged_cells_match_the_model(
        ops in prop::collection::vec(arb_op(), 0..16),
        cuts in prop::collection::btree_set(0usize..16, 0..4),
    ) {
        let key = DecoratedKey::from_bytes("pk").unwrap();
        // Split the operations into consecutive batches, one mutation each,
        // and apply them in reverse order.
        let mut bounds: BTreeSet<usize> = cuts.into_iter().filter(|&c| c <= ops.len()).collect();
        bounds.insert(0);
        bounds.insert(ops.len());
        let bounds: Vec<usize> = bounds.into_iter().collect();
        let mut merged = Mutation::new(key.clone());
        for w in bounds.windows(2).rev() {
            merged.apply(build(&key, &ops[w[0]..w[1]])).unwrap();
        }
        prop_assert_eq!(visible(&merged), model(&ops));
        prop_assert_eq!(&merged, &build(&key, &ops));
    }
}
