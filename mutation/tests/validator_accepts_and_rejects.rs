//! The stream validator accepts every stream the crate produces and rejects
//! shuffled ones, reporting the first violation.

use mutation::testing::arb_mutations;
use mutation::{
    Error, Fragment, FragmentReader, MergingReader, Mutation, ValidatingReader, from_mutations,
    validate_stream,
};
use proptest::prelude::*;

fn reconciled_partitions(ms: &[Mutation]) -> Vec<Vec<Fragment>> {
    Mutation::reconcile_all(ms.to_vec())
        .iter()
        .map(Mutation::fragments)
        .collect()
}

fn violation_index(err: Error) -> u64 {
    match err {
        Error::InvalidStream { index, .. } => index,
        other => panic!("expected an invalid-stream error, got {other}"),
    }
}

/// Mutations with at least one partition, one partition index, and a
/// shuffled copy of that partition's fragments.
fn shuffled_partition() -> impl Strategy<Value = (Vec<Vec<Fragment>>, usize, Vec<Fragment>)> {
    arb_mutations()
        .prop_filter("needs a partition", |ms| !ms.is_empty())
        .prop_flat_map(|ms| {
            let parts = reconciled_partitions(&ms);
            let n = parts.len();
            (Just(parts), 0..n)
        })
        .prop_flat_map(|(parts, i)| {
            let shuffled = Just(parts[i].clone()).prop_shuffle();
            (Just(parts), Just(i), shuffled)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn accepts_everything_the_crate_produces(ms in arb_mutations(), n in 1usize..4) {
        let flat: Vec<Fragment> = reconciled_partitions(&ms).into_iter().flatten().collect();
        prop_assert!(validate_stream(&flat).is_ok());
        for m in &ms {
            prop_assert!(validate_stream(m.fragments()).is_ok());
        }
        let mut groups = vec![Vec::new(); n];
        for (i, m) in ms.iter().enumerate() {
            groups[i % n].push(m.clone());
        }
        let mut merged = ValidatingReader::new(MergingReader::new(
            groups.into_iter().map(|g| ValidatingReader::new(from_mutations(g))),
        ));
        let mut count = 0;
        while merged.next().unwrap().is_some() {
            count += 1;
        }
        prop_assert_eq!(count, flat.len());
    }

    #[test]
    fn rejects_a_shuffled_partition_at_or_after_the_first_change(
        (parts, i, shuffled) in shuffled_partition()
    ) {
        prop_assume!(shuffled != parts[i]);
        let offset: usize = parts[..i].iter().map(Vec::len).sum();
        let first_diff = offset
            + shuffled
                .iter()
                .zip(&parts[i])
                .position(|(a, b)| a != b)
                .unwrap_or(0);
        let mut stream: Vec<Fragment> = Vec::new();
        for (j, p) in parts.iter().enumerate() {
            stream.extend(if j == i { shuffled.clone() } else { p.clone() });
        }
        let err = validate_stream(&stream).expect_err("a reordered partition is invalid");
        let index = violation_index(err);
        prop_assert!(index as usize >= first_diff, "reported {} before the first change {}", index, first_diff);
    }

    #[test]
    fn rejects_swapped_partitions(ms in arb_mutations(), pick in any::<prop::sample::Index>()) {
        let mut parts = reconciled_partitions(&ms);
        prop_assume!(parts.len() >= 2);
        let i = pick.index(parts.len() - 1);
        parts.swap(i, i + 1);
        let offset: usize = parts[..i].iter().map(Vec::len).sum();
        let stream: Vec<Fragment> = parts.into_iter().flatten().collect();
        let err = validate_stream(&stream).expect_err("partitions out of ring order");
        prop_assert!(violation_index(err) as usize >= offset);
    }
}
