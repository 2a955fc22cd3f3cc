//! Hits, whole and sliced, return what was cached: the partitions a scan
//! read, restricted to the slice (rows outside it skipped on the way, the
//! static row and the partition's bounds kept), without reading the
//! source again.

mod common;

use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation,
    PartitionRange, Timestamp,
};

fn partition(i: usize) -> Mutation {
    let mut b = Mutation::builder(DecoratedKey::from_bytes(format!("pk{i:06}")).unwrap());
    for r in 0..5 {
        b = b.cell(
            format!("ck{r:03}"),
            0,
            Cell::live(vec![r as u8; 100], Timestamp::from_micros(1)),
        );
    }
    b.build().unwrap()
}

#[test]
fn hits_whole_and_sliced_return_what_was_cached() {
    let (_pool, source, cache) = common::setup(16 << 20);
    let batch: Vec<Mutation> = (0..10).map(partition).collect();
    for m in &batch {
        source.apply(m);
    }
    let mut sorted = batch.clone();
    sorted.sort_by(|a, b| a.key().cmp(b.key()));
    for _ in 0..2 {
        assert_eq!(
            common::read(&cache, PartitionRange::full(), ClusteringRange::full()),
            sorted
        );
    }
    let slice = ClusteringRange::new(
        std::ops::Bound::Excluded(ClusteringKey::new("ck001").unwrap()),
        std::ops::Bound::Included(ClusteringKey::new("ck003").unwrap()),
    )
    .unwrap();
    for m in &batch {
        let got = common::read(
            &cache,
            PartitionRange::single_key(m.key().clone()),
            slice.clone(),
        );
        assert_eq!(got, vec![common::restrict(m, &slice)]);
        let mut r = cache.make_reader(PartitionRange::single_key(m.key().clone()), slice.clone());
        let kinds: Vec<&str> = std::iter::from_fn(|| r.next().unwrap())
            .map(|f: Fragment| f.kind())
            .collect();
        assert_eq!(kinds.len(), 4, "{kinds:?}");
    }
    assert_eq!(source.readers(), 1, "only the first scan read the source");
}
