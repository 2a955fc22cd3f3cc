//! Merging any split of a set of mutations across any number of readers
//! yields the same stream as reconciling them first.

use mutation::testing::arb_mutations;
use mutation::{
    Fragment, FragmentReader, FragmentsReader, MergingReader, Mutation, from_mutations,
    to_mutations, validate_stream,
};
use proptest::prelude::*;

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

#[test]
fn no_sources_is_an_empty_stream() {
    let mut merged = MergingReader::new(Vec::<FragmentsReader>::new());
    assert_eq!(merged.next().unwrap(), None);
}
