//! Any valid fragment stream written and read back through a scan, point
//! lookups, clustering slices and partition-range readers is equal.

mod common;

use common::*;
use mutation::{ClusteringRange, FragmentReader, PartitionRange, RingPosition};
use proptest::prelude::*;
use std::ops::Bound;

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn written_streams_read_back_equal(
        mutations in mutations_strategy(10),
        compression in any::<bool>(),
        slices in prop::collection::vec(clustering_range(), 1..4),
        probe in prop::collection::vec(any::<u8>(), 1..5),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (fragments, merged) = canonical(&mutations);
        let table = write(dir.path(), &fragments, small_options(compression));
        table.verify().unwrap();

        // Full scan.
        prop_assert_eq!(&drain(&mut table.scan()), &fragments);

        // next_partition right after every other partition start skips the
        // rest of that partition.
        let mut r = table.scan();
        let mut got = Vec::new();
        let mut expected = Vec::new();
        for (i, m) in merged.iter().enumerate() {
            let start = r.next().unwrap().unwrap();
            let is_start = matches!(&start, mutation::Fragment::PartitionStart { key, .. } if key == m.key());
            prop_assert!(is_start, "expected the start of {}", m.key());
            got.push(start);
            if i % 2 == 0 {
                r.next_partition().unwrap();
                expected.push(m.fragments()[0].clone());
            } else {
                got.extend(std::iter::from_fn(|| {
                    let f = r.next().unwrap()?;
                    Some(f)
                }).take_while(|f| !matches!(f, mutation::Fragment::PartitionEnd)));
                got.push(mutation::Fragment::PartitionEnd);
                expected.extend(m.fragments());
            }
        }
        prop_assert!(r.next().unwrap().is_none());
        prop_assert_eq!(got, expected);

        // Point lookups and slices of every partition.
        for m in &merged {
            let whole = table.read_partition(m.key()).unwrap().unwrap();
            prop_assert_eq!(&whole, &m.fragments());
            for s in &slices {
                let got = table.read_slice(m.key(), s).unwrap().unwrap();
                prop_assert_eq!(&got, &expected_slice(m, s), "slice {}", s);
            }
            let single = PartitionRange::single_key(m.key().clone());
            let mut r = table.make_reader_opt(&single, Some(slices[0].clone())).unwrap().unwrap();
            prop_assert_eq!(drain(&mut r), expected_slice(m, &slices[0]));
        }

        // A key that is absent reads as None.
        let absent = mutation::DecoratedKey::from_bytes(probe).unwrap();
        if !merged.iter().any(|m| m.key() == &absent) {
            prop_assert!(table.read_partition(&absent).unwrap().is_none());
        }

        // Partition-range readers over every pair of partitions, and
        // fast-forwarding one reader through consecutive ranges.
        for (i, a) in merged.iter().enumerate() {
            for b in &merged[i..] {
                let range = PartitionRange::new(
                    Bound::Included(RingPosition::Key(a.key().clone())),
                    Bound::Excluded(RingPosition::Key(b.key().clone())),
                ).unwrap();
                let expected: Vec<_> = merged.iter()
                    .filter(|m| range.contains(m.key()))
                    .flat_map(|m| m.fragments())
                    .collect();
                let got = table.make_reader_opt(&range, None).unwrap().map(|mut r| drain(&mut r)).unwrap_or_default();
                prop_assert_eq!(got, expected);
            }
        }
        if merged.len() >= 2 {
            let mut r = table.scan();
            let mut got = Vec::new();
            for m in merged.iter().rev().take(2).collect::<Vec<_>>().into_iter().rev() {
                r.fast_forward_to(PartitionRange::single_key(m.key().clone())).unwrap();
                got.extend(drain(&mut r));
            }
            let expected: Vec<_> = merged.iter().rev().take(2).rev().flat_map(|m| m.fragments()).collect();
            prop_assert_eq!(got, expected);
        }
        let _ = ClusteringRange::full();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The same property over the mutation crate's own generators, which
    /// favour colliding keys and tied timestamps.
    #[test]
    fn mutation_crate_streams_read_back_equal(
        mutations in mutation::testing::arb_mutations(),
        compression in any::<bool>(),
        slice in mutation::testing::arb_clustering_range(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (fragments, merged) = canonical(&mutations);
        let table = write(dir.path(), &fragments, small_options(compression));
        table.verify().unwrap();
        prop_assert_eq!(&drain(&mut table.scan()), &fragments);
        for m in &merged {
            prop_assert_eq!(table.read_partition(m.key()).unwrap().unwrap(), m.fragments());
            prop_assert_eq!(table.read_slice(m.key(), &slice).unwrap().unwrap(), expected_slice(m, &slice));
        }
    }
}
