//! Many threads at once: writers applying overlapping mutations (rows,
//! overwrites, range and partition tombstones), readers scanning and
//! slicing with validated streams, a thread compacting the region, and a
//! seal part-way through. Afterwards the memtable holds exactly the
//! reconciliation of the applies that succeeded; those refused after the
//! seal say so.

mod common;

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use memtable::Error;
use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp, Tombstone,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn random_mutation(rng: &mut SmallRng, ts: i64) -> Mutation {
    let key = DecoratedKey::from_bytes(format!("p{}", rng.gen_range(0..16))).unwrap();
    let mut b = Mutation::builder(key);
    let t = Timestamp::from_micros(ts);
    match rng.gen_range(0..10) {
        0 => b = b.partition_tombstone(Tombstone::new(t, 0)),
        1 => {
            let lo = rng.gen_range(0..30u32);
            b = b.range_tombstone_bounds(
                Bound::Included(format!("{lo:03}")),
                Bound::Excluded(format!("{:03}", lo + 5)),
                Tombstone::new(t, 0),
            );
        }
        _ => {
            for _ in 0..rng.gen_range(1..4) {
                let ck = format!("{:03}", rng.gen_range(0..40));
                b = b.cell(
                    ck,
                    rng.gen_range(0..3),
                    Cell::live(vec![b'v'; rng.gen_range(1..300)], t),
                );
            }
        }
    }
    b.build().unwrap()
}

#[test]
fn writers_readers_compaction_and_seal() {
    let (_pool, _group, mt) = common::setup(64 << 20);
    let applied = Arc::new(Mutex::new(Vec::new()));
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (mt, applied) = (mt.clone(), applied.clone());
            thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(w);
                let mut refused = 0;
                for i in 0..400 {
                    if w == 0 && i == 300 {
                        mt.seal();
                    }
                    let m = random_mutation(&mut rng, i * 3 + w as i64);
                    match mt.apply(&m) {
                        Ok(()) => applied.lock().unwrap().push(m),
                        Err(Error::Sealed { .. }) => refused += 1,
                        Err(e) => panic!("apply failed: {e}"),
                    }
                }
                refused
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (mt, done) = (mt.clone(), done.clone());
            thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + r);
                let mut reads = 0;
                while !done.load(Ordering::Acquire) {
                    let key =
                        DecoratedKey::from_bytes(format!("p{}", rng.gen_range(0..16))).unwrap();
                    let slice = ClusteringRange::new(
                        Bound::Included(mutation::ClusteringKey::new(b"010".to_vec()).unwrap()),
                        Bound::Excluded(mutation::ClusteringKey::new(b"030".to_vec()).unwrap()),
                    )
                    .unwrap();
                    if let Some(mut reader) = mt
                        .make_reader_opt(PartitionRange::single_key(key), slice)
                        .unwrap()
                    {
                        common::read_all(&mut reader);
                    }
                    common::scan(&mt);
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let compactor = {
        let (mt, done) = (mt.clone(), done.clone());
        thread::spawn(move || {
            let mut n = 0;
            while !done.load(Ordering::Acquire) {
                mt.full_compaction().unwrap();
                n += 1;
            }
            n
        })
    };
    let refused: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
    done.store(true, Ordering::Release);
    for r in readers {
        r.join().unwrap();
    }
    compactor.join().unwrap();

    assert!(mt.is_sealed());
    assert!(
        refused >= 100,
        "writer 0 alone is refused 100 times after its seal"
    );
    let applied = applied.lock().unwrap().clone();
    assert_eq!(applied.len() + refused, 1200);
    assert_eq!(common::scan(&mt), Mutation::reconcile_all(applied));
    mt.check_invariants().unwrap();
}

/// A memtable is shared across threads; a reader can move to another
/// thread (a replica hands readers to a merging reader on any thread).
#[test]
fn memtable_is_sync_and_readers_are_send() {
    fn shared<T: Send + Sync>() {}
    fn movable<T: Send>() {}
    shared::<memtable::Memtable>();
    movable::<memtable::MemtableReader>();
    let (_pool, _group, mt) = common::setup(4 << 20);
    let reader = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    let moved = thread::spawn(move || {
        let mut reader = reader;
        common::read_all(&mut reader).len()
    });
    assert_eq!(moved.join().unwrap(), 0);
}
