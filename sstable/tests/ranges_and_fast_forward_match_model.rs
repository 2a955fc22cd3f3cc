//! Partition-range readers with clustering slices, and fast-forwarding a
//! merge of sstable readers, against `from_mutations` plus plain filtering
//! as the model. Ranges use token and key bounds, inclusive, exclusive and
//! open, so equal-token keys and the first/last key of a file are hit.

mod common;

use std::ops::Bound;

use common::*;
use mutation::{
    DecoratedKey, Fragment, FragmentReader, MergingReader, Mutation, PartitionRange, RingPosition,
    from_mutations,
};
use proptest::prelude::*;

/// One end of a range: a key from the data (by index), or a random key,
/// as a key bound or as its token.
#[derive(Debug, Clone)]
struct End {
    pick: Option<usize>,
    random: Vec<u8>,
    by_token: bool,
    inclusive: bool,
    open: bool,
}

fn end() -> impl Strategy<Value = End> {
    (
        prop::option::weighted(0.7, 0usize..64),
        prop::collection::vec(any::<u8>(), 1..6),
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(pick, random, by_token, inclusive, open)| End {
            pick,
            random,
            by_token,
            inclusive,
            open,
        })
}

fn bound(e: &End, keys: &[DecoratedKey]) -> Bound<RingPosition> {
    if e.open {
        return Bound::Unbounded;
    }
    let key = match e.pick {
        Some(i) if !keys.is_empty() => keys[i % keys.len()].clone(),
        _ => DecoratedKey::from_bytes(e.random.clone()).unwrap(),
    };
    let pos = if e.by_token {
        RingPosition::Token(key.token())
    } else {
        RingPosition::Key(key)
    };
    if e.inclusive {
        Bound::Included(pos)
    } else {
        Bound::Excluded(pos)
    }
}

fn range(a: &End, b: &End, keys: &[DecoratedKey]) -> PartitionRange {
    let (s, e) = (bound(a, keys), bound(b, keys));
    PartitionRange::new(s.clone(), e.clone())
        .or_else(|_| PartitionRange::new(bound(b, keys), bound(a, keys)))
        .unwrap_or_else(|_| PartitionRange::full())
}

#[derive(Debug, Clone)]
enum Op {
    FastForward,
    Read(usize),
    NextPartition,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::FastForward),
        3 => (0usize..12).prop_map(Op::Read),
        1 => Just(Op::NextPartition),
    ]
}

/// Ranges that move forward around the ring, as `fast_forward_to`
/// expects: the ends are distinct-token keys in ring order, paired up, so
/// each range lies strictly after the previous one.
fn forward_ranges(ends: &[End], keys: &[DecoratedKey]) -> Vec<PartitionRange> {
    let mut points: Vec<(DecoratedKey, &End)> = ends
        .iter()
        .map(|e| {
            let key = match e.pick {
                Some(i) if !keys.is_empty() => keys[i % keys.len()].clone(),
                _ => DecoratedKey::from_bytes(e.random.clone()).unwrap(),
            };
            (key, e)
        })
        .collect();
    points.sort_by(|a, b| a.0.cmp(&b.0));
    points.dedup_by(|a, b| a.0.token() == b.0.token());
    let last = points.len() / 2;
    points
        .chunks_exact(2)
        .enumerate()
        .map(|(i, pair)| {
            let b = |(k, e): &(DecoratedKey, &End), open_ok: bool| {
                if e.open && open_ok {
                    return Bound::Unbounded;
                }
                let pos = if e.by_token {
                    RingPosition::Token(k.token())
                } else {
                    RingPosition::Key(k.clone())
                };
                if e.inclusive {
                    Bound::Included(pos)
                } else {
                    Bound::Excluded(pos)
                }
            };
            PartitionRange::new(b(&pair[0], false), b(&pair[1], i + 1 == last)).unwrap()
        })
        .collect()
}

fn run(r: &mut dyn FragmentReader, ops: &[Op], ranges: &[PartitionRange]) -> Vec<Fragment> {
    let mut out = Vec::new();
    let mut ranges = ranges.iter();
    for op in ops {
        match op {
            Op::FastForward => {
                if let Some(range) = ranges.next() {
                    out.push(Fragment::PartitionEnd); // marker between steps
                    r.fast_forward_to(range.clone()).unwrap();
                }
            }
            Op::Read(n) => {
                for _ in 0..*n {
                    match r.next().unwrap() {
                        Some(f) => out.push(f),
                        None => break,
                    }
                }
            }
            Op::NextPartition => r.next_partition().unwrap(),
        }
    }
    out.extend(drain(r));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn range_readers_with_slices_match_the_model(
        mutations in mutations_strategy(12),
        compression in any::<bool>(),
        ranges in prop::collection::vec((end(), end(), prop::option::of(clustering_range())), 1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (fragments, merged) = canonical(&mutations);
        let table = write(dir.path(), &fragments, small_options(compression));
        let keys: Vec<DecoratedKey> = merged.iter().map(|m| m.key().clone()).collect();
        for (a, b, slice) in &ranges {
            let range = range(a, b, &keys);
            let expected: Vec<Fragment> = merged
                .iter()
                .filter(|m| range.contains(m.key()))
                .flat_map(|m| match slice {
                    Some(s) => expected_slice(m, s),
                    None => m.fragments(),
                })
                .collect();
            let got = table
                .make_reader_opt(&range, slice.clone())
                .unwrap()
                .map(|mut r| drain(&mut r));
            match got {
                None => prop_assert!(expected.is_empty(), "None for {} but {} fragments expected", range, expected.len()),
                Some(got) => prop_assert_eq!(got, expected, "range {} slice {:?}", range, slice),
            }
        }
    }

    /// Two sstables holding a random split of the data, merged, then driven
    /// through fast-forwards, partial reads and next_partition: the output
    /// equals the same operations on one `from_mutations` reader.
    #[test]
    fn merged_sstable_readers_fast_forward_like_the_model(
        mutations in mutations_strategy(12),
        split in prop::collection::vec(any::<bool>(), 12),
        ops in prop::collection::vec(op(), 0..10),
        ends in prop::collection::vec(end(), 0..10),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (mut left, mut right) = (Vec::new(), Vec::new());
        for (i, m) in mutations.iter().enumerate() {
            if split[i % split.len()] { left.push(m.clone()) } else { right.push(m.clone()) }
        }
        let tables: Vec<_> = [left, right]
            .iter()
            .map(|part| write(dir.path(), &canonical(part).0, small_options(true)))
            .collect();
        let merged = Mutation::reconcile_all(mutations.clone());
        let keys: Vec<DecoratedKey> = merged.iter().map(|m| m.key().clone()).collect();
        let ranges = forward_ranges(&ends, &keys);
        let mut reader = MergingReader::new(tables.iter().map(|t| t.scan()));
        let got = run(&mut reader, &ops, &ranges);
        let expected = run(&mut from_mutations(mutations.clone()), &ops, &ranges);
        prop_assert_eq!(got, expected);
    }
}

/// The case the property found first, spelled out: a merge of two sstables
/// reads ahead into the partition after the one it is producing; a
/// fast-forward to a range starting at that partition must not make the
/// sstable reader produce it a second time.
#[test]
fn fast_forward_after_read_ahead_does_not_repeat_a_partition() {
    use mutation::{Cell, Timestamp};
    let dir = tempfile::tempdir().unwrap();
    let mut ms: Vec<Mutation> = (0..3u8)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(vec![b'k', i]).unwrap())
                .cell(vec![1u8], 0, Cell::live(vec![i], Timestamp::from_micros(1)))
                .build()
                .unwrap()
        })
        .collect();
    ms.sort_by(|a, b| a.key().cmp(b.key()));
    // First and third partitions in one sstable, the second in the other.
    let a = write(
        dir.path(),
        &canonical(&[ms[0].clone(), ms[2].clone()]).0,
        small_options(false),
    );
    let b = write(
        dir.path(),
        &canonical(&[ms[1].clone()]).0,
        small_options(false),
    );
    let mut r = MergingReader::new([a.scan(), b.scan()]);
    let mut got = Vec::new();
    // The first partition, and the start of the second (the merge has now
    // peeked at the third's start in `a`).
    for _ in 0..(ms[0].fragments().len() + 1) {
        got.push(r.next().unwrap().unwrap());
    }
    r.fast_forward_to(
        PartitionRange::new(
            Bound::Included(RingPosition::Key(ms[2].key().clone())),
            Bound::Unbounded,
        )
        .unwrap(),
    )
    .unwrap();
    got.extend(drain(&mut r));
    let mut expected = ms[0].fragments();
    expected.push(ms[1].fragments()[0].clone());
    expected.extend(ms[2].fragments());
    assert_eq!(got, expected);
}
