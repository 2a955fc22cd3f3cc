//! A crafted Index (valid checksums) whose entry points at another
//! partition's start in Data is reported as corrupt by point lookups and
//! by partition-range readers, instead of silently returning the wrong
//! partition or none.

mod common;

use common::*;
use mutation::{Cell, DecoratedKey, Mutation, PartitionRange, Timestamp};
use sstable::{Component, Error, Sstable, WriterOptions, component_path};

fn uvarint(b: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let x = b[*at];
        *at += 1;
        v |= u64::from(x & 0x7f) << shift;
        if x & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

#[test]
fn index_entry_pointing_at_the_next_partition_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let ms: Vec<Mutation> = (0..3u8)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(vec![b'p', i]).unwrap())
                .cell(vec![1u8], 0, Cell::live(vec![i], Timestamp::from_micros(1)))
                .build()
                .unwrap()
        })
        .collect();
    let (fragments, merged) = canonical(&ms);
    let mut o = WriterOptions::default();
    o.compression = false;
    let table = write(dir.path(), &fragments, o);
    let generation = table.generation();

    // Index: preamble, one block; entries are token, key, data_block,
    // in_block, size, cblock count (0 for these small partitions).
    let mut parts: Vec<Vec<u8>> = Component::ALL
        .iter()
        .map(|&c| std::fs::read(component_path(dir.path(), generation, c)).unwrap())
        .collect();
    let index = &mut parts[1];
    let payload = 8 + 9;
    let mut at = payload;
    let mut in_block_at = Vec::new();
    let mut in_block = Vec::new();
    for _ in 0..3 {
        at += 8;
        let klen = uvarint(index, &mut at) as usize;
        at += klen;
        uvarint(index, &mut at);
        in_block_at.push(at);
        in_block.push(uvarint(index, &mut at));
        uvarint(index, &mut at);
        assert_eq!(uvarint(index, &mut at), 0);
    }
    assert_eq!(at + 4, index.len());
    assert!(in_block[1] < 128 && in_block[0] == 0);
    // The first entry now points at the second partition.
    index[in_block_at[0]] = in_block[1] as u8;
    let crc = crc32c::crc32c(&index[8..at]);
    let masked = crc.rotate_right(15).wrapping_add(0xa282_ead8);
    index[at..].copy_from_slice(&masked.to_le_bytes());
    let parts: [Vec<u8>; 7] = parts.try_into().unwrap();
    let bad = Sstable::from_bytes(parts).unwrap();

    let first = merged[0].key();
    let e = bad.read_partition(first).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Corrupt {
                component: Component::Index,
                ..
            }
        ),
        "{e}"
    );
    let mut r = bad
        .make_reader_opt(&PartitionRange::single_key(first.clone()), None)
        .unwrap()
        .unwrap();
    let e = r.next_fragment().unwrap_err();
    assert!(
        matches!(
            e,
            Error::Corrupt {
                component: Component::Index,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("points at partition"), "{e}");
    // The other partitions still read.
    assert_eq!(
        bad.read_partition(merged[1].key()).unwrap().unwrap(),
        merged[1].fragments()
    );
}
