//! Clustering and partition ranges agree with the plain definitions of
//! their bounds.

use std::ops::Bound;

use mutation::testing::{arb_clustering_bound, arb_clustering_key, arb_partition_key};
use mutation::{ClusteringKey, ClusteringRange, DecoratedKey, PartitionRange, RingPosition};
use proptest::prelude::*;

fn start_admits<T: Ord>(b: &Bound<T>, x: &T) -> bool {
    match b {
        Bound::Unbounded => true,
        Bound::Included(s) => x >= s,
        Bound::Excluded(s) => x > s,
    }
}

fn end_admits<T: Ord>(b: &Bound<T>, x: &T) -> bool {
    match b {
        Bound::Unbounded => true,
        Bound::Included(e) => x <= e,
        Bound::Excluded(e) => x < e,
    }
}

/// A ring bound from a key: by the key itself or by its token.
fn arb_ring_bound() -> impl Strategy<Value = Bound<RingPosition>> {
    (arb_partition_key(), 0u8..5).prop_map(|(k, kind)| match kind {
        0 => Bound::Unbounded,
        1 => Bound::Included(RingPosition::Key(k)),
        2 => Bound::Excluded(RingPosition::Key(k)),
        3 => Bound::Included(RingPosition::Token(k.token())),
        _ => Bound::Excluded(RingPosition::Token(k.token())),
    })
}

fn ring_start_admits(b: &Bound<RingPosition>, k: &DecoratedKey) -> bool {
    match b {
        Bound::Unbounded => true,
        Bound::Included(RingPosition::Key(s)) => k >= s,
        Bound::Excluded(RingPosition::Key(s)) => k > s,
        Bound::Included(RingPosition::Token(t)) => k.token() >= *t,
        Bound::Excluded(RingPosition::Token(t)) => k.token() > *t,
    }
}

fn ring_end_admits(b: &Bound<RingPosition>, k: &DecoratedKey) -> bool {
    match b {
        Bound::Unbounded => true,
        Bound::Included(RingPosition::Key(e)) => k <= e,
        Bound::Excluded(RingPosition::Key(e)) => k < e,
        Bound::Included(RingPosition::Token(t)) => k.token() <= *t,
        Bound::Excluded(RingPosition::Token(t)) => k.token() < *t,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn clustering_range_membership(
        start in arb_clustering_bound(),
        end in arb_clustering_bound(),
        keys in prop::collection::vec(arb_clustering_key(), 1..8),
    ) {
        let admitted = |k: &ClusteringKey| start_admits(&start, k) && end_admits(&end, k);
        match ClusteringRange::new(start.clone(), end.clone()) {
            Ok(r) => {
                for k in &keys {
                    prop_assert_eq!(r.contains(k), admitted(k), "key {:?} in {}", k, r);
                }
            }
            // Rejected only if the start lies after the end: then no key at
            // all is admitted, and the range is not merely empty.
            Err(_) => {
                for k in &keys {
                    prop_assert!(!admitted(k));
                }
                let s = mutation::Position::from_start_bound(&start);
                let e = mutation::Position::from_end_bound(&end);
                prop_assert!(s > e);
            }
        }
    }

    #[test]
    fn partition_range_membership(
        start in arb_ring_bound(),
        end in arb_ring_bound(),
        keys in prop::collection::vec(arb_partition_key(), 1..8),
    ) {
        match PartitionRange::new(start.clone(), end.clone()) {
            Ok(r) => {
                for k in &keys {
                    let s = ring_start_admits(&start, k);
                    let e = ring_end_admits(&end, k);
                    prop_assert_eq!(r.contains(k), s && e, "key {} in {}", k, r);
                    prop_assert_eq!(r.is_before(k), !s);
                    prop_assert_eq!(r.is_after(k), !e);
                }
            }
            Err(_) => {
                for k in &keys {
                    prop_assert!(!(ring_start_admits(&start, k) && ring_end_admits(&end, k)));
                }
            }
        }
    }
}
