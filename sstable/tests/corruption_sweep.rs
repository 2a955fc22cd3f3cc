//! For every component of a small sstable, flipping any byte or truncating
//! the file at any position yields an error from open, read or verify:
//! never a panic, never data that differs from what was written.

mod common;

use common::*;
use mutation::{DecoratedKey, Fragment, Mutation};
use sstable::{Component, Error, Sstable, component_path};

struct Expected {
    scan: Vec<Fragment>,
    partitions: Vec<(DecoratedKey, Vec<Fragment>)>,
}

/// Runs every read path; returns whether any reported an error, and
/// panics (failing the test) if any returned wrong data.
fn check(components: [Vec<u8>; 7], expected: &Expected, what: &str) -> Vec<Error> {
    let mut errors = Vec::new();
    let table = match Sstable::from_bytes(components) {
        Ok(t) => t,
        Err(e) => return vec![e],
    };
    let mut scan = table.scan();
    let mut got = Vec::new();
    loop {
        match scan.next_fragment() {
            Ok(Some(f)) => got.push(f),
            Ok(None) => {
                assert_eq!(got, expected.scan, "{what}: scan returned wrong data");
                break;
            }
            Err(e) => {
                assert!(
                    expected.scan.starts_with(&got),
                    "{what}: scan returned wrong data before failing"
                );
                errors.push(e);
                break;
            }
        }
    }
    for (key, frags) in &expected.partitions {
        match table.read_partition(key) {
            Ok(Some(f)) => assert_eq!(&f, frags, "{what}: lookup of {key} returned wrong data"),
            Ok(None) => panic!("{what}: lookup of {key} found nothing"),
            Err(e) => errors.push(e),
        }
    }
    if let Err(e) = table.verify() {
        errors.push(e);
    }
    errors
}

fn sweep(compression: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mutations: Vec<Mutation> = (0..4u8)
        .map(|p| {
            let mut b = Mutation::builder(DecoratedKey::from_bytes(vec![b'k', p]).unwrap())
                .cell(
                    vec![1u8],
                    0,
                    mutation::Cell::live(vec![p; 20], mutation::Timestamp::from_micros(5)),
                )
                .row_marker(
                    vec![2u8],
                    mutation::RowMarker::new(mutation::Timestamp::from_micros(6)),
                );
            if p == 2 {
                b = b.partition_tombstone(mutation::Tombstone::new(
                    mutation::Timestamp::from_micros(1),
                    9,
                ));
            }
            b.build().unwrap()
        })
        .collect();
    let (scan, merged) = canonical(&mutations);
    let table = write(dir.path(), &scan, small_options(compression));
    let expected = Expected {
        scan,
        partitions: merged
            .iter()
            .map(|m| (m.key().clone(), m.fragments()))
            .collect(),
    };
    let original: Vec<Vec<u8>> = Component::ALL
        .iter()
        .map(|&c| std::fs::read(component_path(dir.path(), table.generation(), c)).unwrap())
        .collect();
    let pristine: [Vec<u8>; 7] = original.clone().try_into().unwrap();
    assert!(check(pristine, &expected, "pristine").is_empty());

    let mut cases = 0;
    for (slot, &component) in Component::ALL.iter().enumerate() {
        let bytes = &original[slot];
        for pos in 0..=bytes.len() {
            let mut variants = vec![(
                format!("{component} truncated to {pos} bytes"),
                bytes[..pos].to_vec(),
            )];
            if pos < bytes.len() {
                for mask in [0x01u8, 0xff] {
                    let mut b = bytes.clone();
                    b[pos] ^= mask;
                    variants.push((format!("{component} byte {pos} xor {mask:#04x}"), b));
                }
            }
            if pos == bytes.len() {
                variants.pop();
                let mut b = bytes.clone();
                b.push(0);
                variants.push((format!("{component} with a trailing byte"), b));
            }
            for (what, corrupted) in variants {
                let mut parts = original.clone();
                parts[slot] = corrupted;
                let errors = check(parts.try_into().unwrap(), &expected, &what);
                assert!(
                    !errors.is_empty(),
                    "{what}: no error from open, read or verify"
                );
                for e in &errors {
                    let msg = e.to_string();
                    assert!(
                        matches!(e, Error::Corrupt { .. }),
                        "{what}: unexpected error kind: {msg}"
                    );
                    assert!(
                        msg.contains("offset") && msg.contains("sst-0-"),
                        "{what}: error does not name file and offset: {msg}"
                    );
                }
                cases += 1;
            }
        }
    }
    assert!(cases > 1000, "only {cases} cases");
}

#[test]
fn every_flip_and_truncation_is_detected_uncompressed() {
    sweep(false);
}

#[test]
fn every_flip_and_truncation_is_detected_compressed() {
    sweep(true);
}
