//! `fast_forward_to` and `next_partition` on the merging reader behave like
//! filtering the reconciled stream, even though its sources read ahead.

use std::ops::Bound;

use mutation::testing::{arb_mutations, arb_partition_key};
use mutation::{
    DecoratedKey, Fragment, FragmentReader, MergingReader, Mutation, PartitionRange, RingPosition,
    ValidatingReader, from_mutations,
};
use proptest::prelude::*;

fn arb_range() -> impl Strategy<Value = PartitionRange> {
    (
        arb_partition_key(),
        arb_partition_key(),
        any::<bool>(),
        any::<bool>(),
        0u8..4,
    )
        .prop_map(|(a, b, incl_start, incl_end, open)| {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let start = match (open & 1 == 1, incl_start) {
                (true, _) => Bound::Unbounded,
                (false, true) => Bound::Included(RingPosition::Key(lo)),
                (false, false) => Bound::Excluded(RingPosition::Token(lo.token())),
            };
            let end = match (open & 2 == 2, incl_end) {
                (true, _) => Bound::Unbounded,
                (false, true) => Bound::Included(RingPosition::Token(hi.token())),
                (false, false) => Bound::Excluded(RingPosition::Key(hi)),
            };
            PartitionRange::new(start, end).unwrap_or_else(|_| PartitionRange::full())
        })
}

fn split_readers(ms: &[Mutation], n: usize) -> MergingReader<mutation::MutationsReader> {
    let mut groups = vec![Vec::new(); n];
    for (i, m) in ms.iter().enumerate() {
        groups[i % n].push(m.clone());
    }
    MergingReader::new(groups.into_iter().map(from_mutations))
}

fn last_started(frags: &[Fragment]) -> Option<DecoratedKey> {
    frags.iter().rev().find_map(|f| match f {
        Fragment::PartitionStart { key, .. } => Some(key.clone()),
        _ => None,
    })
}

fn drain(r: &mut dyn FragmentReader, out: &mut Vec<Fragment>) {
    while let Some(f) = r.next().unwrap() {
        out.push(f);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn fast_forward_mid_stream_filters_the_reconciled_partitions(
        ms in arb_mutations(),
        n in 1usize..4,
        read_first in 0usize..12,
        range in arb_range(),
    ) {
        let reconciled = Mutation::reconcile_all(ms.clone());
        let mut reader = ValidatingReader::new(split_readers(&ms, n));
        let mut got = Vec::new();
        for _ in 0..read_first {
            match reader.next().unwrap() {
                Some(f) => got.push(f),
                None => break,
            }
        }
        let mut expected = got.clone();
        let after = last_started(&got);
        reader.fast_forward_to(range.clone()).unwrap();
        drain(&mut reader, &mut got);
        for m in &reconciled {
            if range.contains(m.key()) && after.as_ref().is_none_or(|a| m.key() > a) {
                expected.extend(m.fragments());
            }
        }
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn next_partition_skips_the_rest_of_the_current_partition(
        ms in arb_mutations(),
        n in 1usize..4,
        read_first in 0usize..12,
    ) {
        let reconciled = Mutation::reconcile_all(ms.clone());
        let mut reader = ValidatingReader::new(split_readers(&ms, n));
        let mut got = Vec::new();
        for _ in 0..read_first {
            match reader.next().unwrap() {
                Some(f) => got.push(f),
                None => break,
            }
        }
        let mut expected = got.clone();
        let after = last_started(&got);
        reader.next_partition().unwrap();
        drain(&mut reader, &mut got);
        for m in &reconciled {
            if after.as_ref().is_none_or(|a| m.key() > a) {
                expected.extend(m.fragments());
            }
        }
        prop_assert_eq!(got, expected);
    }
}
