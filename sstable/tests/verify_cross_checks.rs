//! Verify catches components that are each well-formed (valid checksums)
//! but disagree with each other, naming the component at fault.

mod common;

use common::*;
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use sstable::{Component, Error, Sstable, component_path};

/// Components of a small sstable whose cells carry `value` at timestamp
/// `ts`; sstables built with values and timestamps of equal encoded
/// length have identical sizes and Index.
fn build(value: u8, ts: i64) -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    let ms: Vec<Mutation> = (0..8u8)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(vec![i, 1]).unwrap())
                .cell(
                    vec![i],
                    1,
                    Cell::live(vec![value; 40], Timestamp::from_micros(ts)),
                )
                .build()
                .unwrap()
        })
        .collect();
    let t = write(dir.path(), &canonical(&ms).0, small_options(false));
    Component::ALL
        .iter()
        .map(|&c| std::fs::read(component_path(dir.path(), t.generation(), c)).unwrap())
        .collect()
}

fn open(parts: Vec<Vec<u8>>) -> Sstable {
    Sstable::from_bytes(parts.try_into().unwrap()).unwrap()
}

fn slot(c: Component) -> usize {
    Component::ALL.iter().position(|&x| x == c).unwrap()
}

fn corrupt_component(e: Error) -> Component {
    match e {
        Error::Corrupt { component, .. } => component,
        other => panic!("expected a corruption error, got {other}"),
    }
}

#[test]
fn disagreeing_components_are_reported() {
    let a = build(1, 10);
    let b = build(2, 10);
    let c = build(1, 11);
    assert_eq!(a[slot(Component::Index)], b[slot(Component::Index)]);
    assert_ne!(a[slot(Component::Data)], b[slot(Component::Data)]);
    assert_ne!(
        a[slot(Component::Digest)],
        b[slot(Component::Digest)],
        "digests"
    );
    open(a.clone()).verify().unwrap();

    // Data of another sstable (same layout): the Digest disagrees.
    let mut parts = a.clone();
    parts[slot(Component::Data)] = b[slot(Component::Data)].clone();
    let t = open(parts.clone());
    assert_eq!(
        corrupt_component(t.verify().unwrap_err()),
        Component::Digest
    );
    // With its Digest too, it is simply that other (valid) sstable.
    parts[slot(Component::Digest)] = b[slot(Component::Digest)].clone();
    open(parts).verify().unwrap();

    // Statistics of an sstable with other timestamps: the recount disagrees.
    let mut parts = a.clone();
    parts[slot(Component::Statistics)] = c[slot(Component::Statistics)].clone();
    let e = open(parts).verify().unwrap_err();
    assert!(e.to_string().contains("timestamp"), "{e}");
    assert_eq!(corrupt_component(e), Component::Statistics);

    // A filter from an sstable of other keys rules out keys Data holds.
    let other_keys = {
        let dir = tempfile::tempdir().unwrap();
        let ms: Vec<Mutation> = (100..108u8)
            .map(|i| {
                Mutation::builder(DecoratedKey::from_bytes(vec![i, 1]).unwrap())
                    .cell(
                        vec![i],
                        1,
                        Cell::live(vec![1u8; 40], Timestamp::from_micros(10)),
                    )
                    .build()
                    .unwrap()
            })
            .collect();
        let t = write(dir.path(), &canonical(&ms).0, small_options(false));
        std::fs::read(component_path(
            dir.path(),
            t.generation(),
            Component::Filter,
        ))
        .unwrap()
    };
    let mut parts = a.clone();
    parts[slot(Component::Filter)] = other_keys;
    if let Err(e) = open(parts).verify() {
        assert_eq!(corrupt_component(e), Component::Filter);
    }
}
