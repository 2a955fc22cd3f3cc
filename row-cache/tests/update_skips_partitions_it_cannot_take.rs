//! An update at flush reads only the partitions the cache can take: a
//! flushed partition that is neither cached nor in a continuous range is
//! skipped in the stream (`next_partition`), its rows never read. In a
//! write-only load that is every partition, and the update used to read
//! (and copy out) the whole flushed memtable a second time, after its
//! flush, while its memory still counted against the dirty budget.

mod common;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation, PartitionRange,
    Timestamp, from_mutations,
};

/// Counts the clustering rows a reader hands out.
struct CountingRows<R> {
    inner: R,
    rows: usize,
}

impl<R: FragmentReader> FragmentReader for CountingRows<R> {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        let f = self.inner.next()?;
        if matches!(f, Some(Fragment::ClusteringRow { .. })) {
            self.rows += 1;
        }
        Ok(f)
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        self.inner.fast_forward_to(range)
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        self.inner.next_partition()
    }
}

const ROWS: usize = 20;

fn partition(key: &DecoratedKey, value: &str, ts: i64) -> Mutation {
    let mut b = Mutation::builder(key.clone());
    for r in 0..ROWS {
        b = b.cell(
            format!("r{r:02}"),
            0,
            Cell::live(value.as_bytes().to_vec(), Timestamp::from_micros(ts)),
        );
    }
    b.build().unwrap()
}

#[test]
fn partitions_the_cache_cannot_take_are_skipped_unread() {
    let (_pool, source, cache) = common::setup(8 << 20);
    let mut keys: Vec<DecoratedKey> = (0..6)
        .map(|i| DecoratedKey::from_bytes(format!("k{i}")).unwrap())
        .collect();
    keys.sort();
    let old: Vec<Mutation> = keys.iter().map(|k| partition(k, "old", 1)).collect();
    for m in &old {
        source.apply(m);
    }
    // One partition read, so cached; the rest of the ring unknown.
    let cached = PartitionRange::single_key(keys[2].clone());
    assert_eq!(
        common::read(&cache, cached.clone(), ClusteringRange::full()),
        vec![old[2].clone()]
    );
    assert_eq!(cache.stats().partitions, 1);

    // A flush of every key is committed, then updates the cache.
    let new: Vec<Mutation> = keys.iter().map(|k| partition(k, "new", 2)).collect();
    for m in &new {
        source.apply(m);
    }
    let mut stream = CountingRows {
        inner: from_mutations(new.clone()),
        rows: 0,
    };
    let stats = cache.update_from(&mut stream).unwrap();
    assert_eq!(stats.partitions, 6, "{stats:?}");
    assert_eq!(stats.skipped, 5, "{stats:?}");
    assert_eq!(stats.merged, 1, "{stats:?}");
    assert_eq!(
        stream.rows, ROWS,
        "only the cached partition's rows are read"
    );
    cache.check_invariants().unwrap();

    // The cached partition holds the flushed data; the others are read
    // from the source, which has it.
    assert_eq!(
        common::read(&cache, cached, ClusteringRange::full()),
        vec![old[2].clone().merge(new[2].clone()).unwrap()]
    );
    let other = PartitionRange::single_key(keys[4].clone());
    assert_eq!(
        common::read(&cache, other, ClusteringRange::full()),
        vec![old[4].clone().merge(new[4].clone()).unwrap()]
    );
}

#[test]
fn partitions_in_a_continuous_range_are_read_and_inserted() {
    let (_pool, source, cache) = common::setup(8 << 20);
    let mut keys: Vec<DecoratedKey> = (0..4)
        .map(|i| DecoratedKey::from_bytes(format!("c{i}")).unwrap())
        .collect();
    keys.sort();
    // A full scan of an empty source: the whole ring is known empty.
    assert!(common::read(&cache, PartitionRange::full(), ClusteringRange::full()).is_empty());
    let new: Vec<Mutation> = keys.iter().map(|k| partition(k, "new", 2)).collect();
    for m in &new {
        source.apply(m);
    }
    let mut stream = CountingRows {
        inner: from_mutations(new.clone()),
        rows: 0,
    };
    let stats = cache.update_from(&mut stream).unwrap();
    assert_eq!((stats.skipped, stats.inserted), (0, 4), "{stats:?}");
    assert_eq!(stream.rows, 4 * ROWS);
    assert_eq!(
        common::read(&cache, PartitionRange::full(), ClusteringRange::full()),
        new
    );
}
