//! A scan open across a flush (and across evictions) yields each partition
//! exactly once, in ring order, each whole: the old or the new version,
//! never a mix of the two, never partial.

mod common;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation, PartitionRange,
    Timestamp,
};

fn write(key: &DecoratedKey, ts: i64) -> Mutation {
    let mut b = Mutation::builder(key.clone());
    for r in 0..3 {
        b = b.cell(
            format!("r{r}"),
            0,
            Cell::live(vec![ts as u8; 10], Timestamp::from_micros(ts)),
        );
    }
    b.build().unwrap()
}

/// Reads one partition's fragments.
fn next_partition(r: &mut dyn FragmentReader) -> Option<Mutation> {
    let mut frags = Vec::new();
    while let Some(f) = r.next().unwrap() {
        let end = matches!(f, Fragment::PartitionEnd);
        frags.push(f);
        if end {
            break;
        }
    }
    let mut fr = mutation::FragmentsReader::new(frags);
    mutation::to_mutations(&mut fr).unwrap().pop()
}

#[test]
fn an_open_scan_sees_each_partition_once_across_a_flush() {
    let (_pool, source, cache) = common::setup(8 << 20);
    let mut keys: Vec<DecoratedKey> = (0..40)
        .map(|i| DecoratedKey::from_bytes(format!("k{i}")).unwrap())
        .collect();
    keys.sort();
    let old: Vec<Mutation> = keys.iter().map(|k| write(k, 1)).collect();
    for m in &old {
        source.apply(m);
    }
    // Half of the ring cached and continuous, half not.
    let half = PartitionRange::new(
        std::ops::Bound::Unbounded,
        std::ops::Bound::Included(mutation::RingPosition::Key(keys[19].clone())),
    )
    .unwrap();
    common::read(&cache, half, ClusteringRange::full());

    let mut scan = cache.make_reader(PartitionRange::full(), ClusteringRange::full());
    let mut seen = Vec::new();
    for _ in 0..10 {
        seen.push(next_partition(&mut scan).unwrap());
    }
    // A flush rewrites every partition; then some evictions.
    let new: Vec<Mutation> = keys.iter().map(|k| write(k, 2)).collect();
    common::flush(&cache, &source, &new);
    cache.evict(5);
    while let Some(m) = next_partition(&mut scan) {
        seen.push(m);
    }
    let got_keys: Vec<&DecoratedKey> = seen.iter().map(|m| m.key()).collect();
    assert_eq!(
        got_keys,
        keys.iter().collect::<Vec<_>>(),
        "each partition once, in order"
    );
    for (i, m) in seen.iter().enumerate() {
        let merged = old[i].clone().merge(new[i].clone()).unwrap();
        assert!(
            *m == old[i] || *m == merged,
            "partition {i} is neither version: {m:?}"
        );
    }
    // After the scan, reads see the flush.
    let want: Vec<Mutation> = old
        .into_iter()
        .zip(new)
        .map(|(o, n)| o.merge(n).unwrap())
        .collect();
    assert_eq!(
        common::read(&cache, PartitionRange::full(), ClusteringRange::full()),
        want
    );
    cache.check_invariants().unwrap();
}
