//! `Mutation::apply`/`merge` is commutative, associative and idempotent.

use mutation::Mutation;
use mutation::testing::{arb_mutation_for, arb_partition_key};
use proptest::prelude::*;

fn three_of_one_partition() -> impl Strategy<Value = (Mutation, Mutation, Mutation)> {
    arb_partition_key().prop_flat_map(|k| {
        (
            arb_mutation_for(k.clone()),
            arb_mutation_for(k.clone()),
            arb_mutation_for(k),
        )
    })
}

fn merge(a: &Mutation, b: &Mutation) -> Mutation {
    a.clone().merge(b.clone()).expect("same partition")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn merge_is_commutative((a, b, _c) in three_of_one_partition()) {
        prop_assert_eq!(merge(&a, &b), merge(&b, &a));
    }

    #[test]
    fn merge_is_associative((a, b, c) in three_of_one_partition()) {
        prop_assert_eq!(merge(&merge(&a, &b), &c), merge(&a, &merge(&b, &c)));
    }

    #[test]
    fn merge_is_idempotent((a, b, _c) in three_of_one_partition()) {
        prop_assert_eq!(merge(&a, &a), a.clone());
        let ab = merge(&a, &b);
        prop_assert_eq!(merge(&ab, &b), ab.clone());
        prop_assert_eq!(merge(&ab, &a), ab);
    }
}
