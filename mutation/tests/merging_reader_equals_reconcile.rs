//! Merging any split of a set of mutations across any number of readers
//! yields the same stream as reconciling them first.

use mutation::testing::arb_mutations;
use mutation::{
    Fragment, FragmentReader, FragmentsReader, MergingReader, Mutation, Row, from_mutations,
    to_mutations, validate_stream,
};
use proptest::prelude::*;

/// Splits one mutation's content (partition tombstone, each static cell,
/// each row's marker, tombstone and cells, each range tombstone) across `n`
/// mutations of the same partition, choosing pieces with `pick`.
fn split_content(m: &Mutation, n: usize, pick: &mut impl FnMut() -> usize) -> Vec<Mutation> {
    let mut builders: Vec<_> = (0..n).map(|_| Mutation::builder(m.key().clone())).collect();
    let mut give =
        |builders: &mut Vec<mutation::MutationBuilder>,
         f: &dyn Fn(mutation::MutationBuilder) -> mutation::MutationBuilder| {
            let i = pick() % n;
            let b = std::mem::replace(&mut builders[i], Mutation::builder(m.key().clone()));
            builders[i] = f(b);
        };
    if let Some(t) = m.partition_tombstone() {
        give(&mut builders, &|b| b.partition_tombstone(t));
    }
    if let Some(row) = m.static_row() {
        if let Some(marker) = row.marker {
            give(&mut builders, &|b| {
                b.static_row(Row::new().with_marker(marker))
            });
        }
        if let Some(t) = row.tombstone {
            give(&mut builders, &|b| {
                b.static_row(Row::new().with_tombstone(t))
            });
        }
        for (&col, cell) in &row.cells {
            give(&mut builders, &|b| b.static_cell(col, cell.clone()));
        }
    }
    for (key, row) in m.rows() {
        if let Some(marker) = row.marker {
            give(&mut builders, &|b| b.row_marker(key.clone(), marker));
        }
        if let Some(t) = row.tombstone {
            give(&mut builders, &|b| b.row_tombstone(key.clone(), t));
        }
        for (&col, cell) in &row.cells {
            give(&mut builders, &|b| b.cell(key.clone(), col, cell.clone()));
        }
    }
    for rt in m.range_tombstones().to_range_tombstones() {
        give(&mut builders, &|b| {
            b.range_tombstone(rt.range.clone(), rt.tombstone)
        });
    }
    builders.into_iter().map(|b| b.build().unwrap()).collect()
}

fn drain(r: &mut dyn FragmentReader) -> Vec<Fragment> {
    let mut out = Vec::new();
    while let Some(f) = r.next().unwrap() {
        out.push(f);
    }
    out
}

fn expected(ms: &[Mutation]) -> Vec<Fragment> {
    Mutation::reconcile_all(ms.to_vec())
        .into_iter()
        .flat_map(Mutation::into_fragments)
        .collect()
}

/// Splits `ms` into `n` groups following `assign`.
fn split(ms: &[Mutation], assign: &[usize], n: usize) -> Vec<Vec<Mutation>> {
    let mut groups = vec![Vec::new(); n];
    for (m, a) in ms.iter().zip(assign.iter().cycle()) {
        groups[a % n].push(m.clone());
    }
    groups
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_split_merges_to_the_reconciled_stream(
        ms in arb_mutations(),
        n in 1usize..=6,
        assign in prop::collection::vec(0usize..6, 1..8),
    ) {
        let groups = split(&ms, &assign, n);
        let mut merged = MergingReader::new(groups.into_iter().map(from_mutations));
        let got = drain(&mut merged);
        prop_assert!(validate_stream(&got).is_ok());
        prop_assert_eq!(&got, &expected(&ms));
    }

    #[test]
    fn mixed_and_nested_sources_merge_the_same(
        ms in arb_mutations(),
        assign in prop::collection::vec(0usize..4, 1..8),
    ) {
        let groups = split(&ms, &assign, 4);
        // Two sources replay recorded fragment vectors, two are themselves
        // merging readers over a further split.
        let mut sources: Vec<Box<dyn FragmentReader>> = Vec::new();
        for (i, g) in groups.into_iter().enumerate() {
            if i % 2 == 0 {
                let frags: Vec<Fragment> =
                    g.iter().flat_map(|m| m.fragments()).collect::<Vec<_>>();
                // Each mutation alone is a valid stream only if keys do not
                // repeat; reconcile the group first to replay a valid one.
                let frags = if validate_stream(&frags).is_ok() {
                    frags
                } else {
                    expected(&g)
                };
                sources.push(Box::new(FragmentsReader::new(frags)));
            } else {
                let halves = split(&g, &[0, 1], 2);
                sources.push(Box::new(MergingReader::new(
                    halves.into_iter().map(from_mutations),
                )));
            }
        }
        let mut merged = MergingReader::new(sources);
        prop_assert_eq!(drain(&mut merged), expected(&ms));
    }

    #[test]
    fn collecting_the_merged_stream_gives_the_reconciled_mutations(
        ms in arb_mutations(),
        assign in prop::collection::vec(0usize..3, 1..8),
    ) {
        let groups = split(&ms, &assign, 3);
        let mut merged = MergingReader::new(groups.into_iter().map(from_mutations));
        prop_assert_eq!(to_mutations(&mut merged).unwrap(), Mutation::reconcile_all(ms));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn splitting_inside_partitions_merges_back(
        ms in arb_mutations(),
        n in 1usize..=5,
        seed in any::<u64>(),
    ) {
        let mut state = seed | 1;
        let mut pick = move || {
            // xorshift64: a cheap deterministic choice sequence.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as usize
        };
        let reconciled = Mutation::reconcile_all(ms.clone());
        let mut groups = vec![Vec::new(); n];
        for m in &reconciled {
            for (i, piece) in split_content(m, n, &mut pick).into_iter().enumerate() {
                groups[i].push(piece);
            }
        }
        let mut merged = MergingReader::new(groups.into_iter().map(from_mutations));
        prop_assert_eq!(drain(&mut merged), expected(&ms));
    }
}

#[test]
fn no_sources_is_an_empty_stream() {
    let mut merged = MergingReader::new(Vec::<FragmentsReader>::new());
    assert_eq!(merged.next().unwrap(), None);
}
