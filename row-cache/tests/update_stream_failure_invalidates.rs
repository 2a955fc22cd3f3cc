//! A flushed stream that fails in the middle of `update_from` leaves no
//! partial state: the partitions it had not delivered are invalidated
//! (evicted, their range made discontinuous), so reads of them go to the
//! source, which already has them (the sstable was committed).

mod common;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation, PartitionRange,
    Timestamp,
};
use row_cache::Error;

/// Yields the fragments of `first`, then fails.
struct FailsAfterFirst(std::collections::VecDeque<Fragment>);

impl FragmentReader for FailsAfterFirst {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        match self.0.pop_front() {
            Some(f) => Ok(Some(f)),
            None => Err(mutation::Error::Source("disk on fire".into())),
        }
    }
    fn fast_forward_to(&mut self, _range: PartitionRange) -> Result<(), mutation::Error> {
        Ok(())
    }
    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        Ok(())
    }
}

fn write(key: &DecoratedKey, value: &str, ts: i64) -> Mutation {
    Mutation::builder(key.clone())
        .cell(
            "r",
            0,
            Cell::live(value.as_bytes().to_vec(), Timestamp::from_micros(ts)),
        )
        .build()
        .unwrap()
}

#[test]
fn a_failed_update_invalidates_what_it_did_not_deliver() {
    let (_pool, source, cache) = common::setup(8 << 20);
    let mut keys: Vec<DecoratedKey> = (0..6)
        .map(|i| DecoratedKey::from_bytes(format!("k{i}")).unwrap())
        .collect();
    keys.sort();
    let old: Vec<Mutation> = keys.iter().map(|k| write(k, "old", 1)).collect();
    for m in &old {
        source.apply(m);
    }
    // Everything cached, the ring continuous.
    assert_eq!(
        common::read(&cache, PartitionRange::full(), ClusteringRange::full()),
        old
    );
    // A flush of keys 1 and 4 is committed; its stream delivers key 1, then fails.
    let new1 = write(&keys[1], "new", 2);
    let new4 = write(&keys[4], "new", 2);
    source.apply(&new1);
    source.apply(&new4);
    let mut stream = FailsAfterFirst(new1.fragments().into());
    let err = cache.update_from(&mut stream).unwrap_err();
    assert!(
        matches!(err, Error::UpdateStream { partitions: 1, .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "the flushed stream failed after 1 partitions; the rest of the ring was invalidated"
    );
    // Keys after 1 were dropped; 0 and 1 are still cached (1 merged).
    assert_eq!(cache.stats().partitions, 2);
    cache.check_invariants().unwrap();
    let mut want = old.clone();
    want[1] = old[1].clone().merge(new1).unwrap();
    want[4] = old[4].clone().merge(new4).unwrap();
    assert_eq!(
        common::read(&cache, PartitionRange::full(), ClusteringRange::full()),
        want
    );
}
