//! Fuzz target for the sstable reader: open, scan, point lookups, slices,
//! range readers and verify must never panic, whatever the component bytes.
//!
//! The input either patches a valid small sstable (built once, in memory,
//! through the real writer) or, with a leading 0xff, supplies all seven
//! components raw (each prefixed by a little-endian u16 length), so the
//! fuzzer reaches deep decoding paths without a seed corpus. With a leading
//! 0xfe the patches are applied and then every block checksum of the
//! patched Data, Index, Summary, Filter and Statistics is recomputed, so
//! the patched bytes get past the crc checks into the decoders (a crafted
//! file rather than a damaged one).
//!
//! Run: `cd sstable/fuzz && cargo +nightly fuzz run reader -- -max_total_time=60`
#![no_main]

use std::ops::Bound;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange,
    RowMarker, Timestamp, Tombstone,
};
use sstable::{Component, Sstable, Writer, WriterOptions, component_path};

struct Pristine {
    parts: Vec<Vec<u8>>,
    keys: Vec<DecoratedKey>,
}

fn pristine() -> &'static Pristine {
    static P: OnceLock<Pristine> = OnceLock::new();
    P.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut ms: Vec<Mutation> = (0..6u8)
            .map(|p| {
                let mut b = Mutation::builder(DecoratedKey::from_bytes(vec![b'k', p]).expect("key"))
                    .static_cell(0, Cell::live(vec![p], Timestamp::from_micros(1)));
                for r in 0..(u32::from(p) * 20) {
                    b = b.cell(r.to_be_bytes().to_vec(), 1, Cell::live(vec![p; 30], Timestamp::from_micros(2)));
                }
                b = b
                    .row_marker(vec![9u8], RowMarker::new(Timestamp::from_micros(3)))
                    .range_tombstone_bounds(
                        Bound::Included(vec![0u8, 0, 0, 5]),
                        Bound::Excluded(vec![0u8, 0, 0, 40]),
                        Tombstone::new(Timestamp::from_micros(1), 7),
                    );
                b.build().expect("mutation")
            })
            .collect();
        ms.sort_by(|a, b| a.key().cmp(b.key()));
        let mut o = WriterOptions::default();
        o.block_size = 512;
        o.index_block_size = 64;
        o.large_partition_threshold = 600;
        o.compression = true;
        let mut w = Writer::create(dir.path(), o).expect("writer");
        for m in &ms {
            for f in m.fragments() {
                w.write(&f).expect("write");
            }
        }
        let c = w.commit().expect("commit");
        let parts = Component::ALL
            .iter()
            .map(|&comp| std::fs::read(component_path(dir.path(), c.generation, comp)).expect("read"))
            .collect();
        Pristine {
            parts,
            keys: ms.iter().map(|m| m.key().clone()).collect(),
        }
    })
}

fn components(data: &[u8]) -> Option<[Vec<u8>; 7]> {
    let p = pristine();
    let mut parts = p.parts.clone();
    if data.first() == Some(&0xff) {
        let mut rest = &data[1..];
        for part in parts.iter_mut() {
            if rest.len() < 2 {
                return None;
            }
            let n = usize::from(u16::from_le_bytes([rest[0], rest[1]])).min(rest.len() - 2);
            *part = rest[2..2 + n].to_vec();
            rest = &rest[2 + n..];
        }
    } else {
        let fix_crcs = data.first() == Some(&0xfe);
        let patches = if fix_crcs { &data[1..] } else { data };
        // Patches: (component, offset u16, value) triples; a value of 0 at
        // an even position truncates instead.
        for chunk in patches.chunks_exact(4) {
            let part = &mut parts[usize::from(chunk[0]) % 7];
            if part.is_empty() {
                continue;
            }
            let at = usize::from(u16::from_le_bytes([chunk[1], chunk[2]])) % part.len();
            if chunk[3] == 0 && at % 2 == 0 {
                part.truncate(at);
            } else {
                part[at] ^= chunk[3];
            }
        }
        if fix_crcs {
            // Data, Index, Summary, Filter, Statistics: blocks from offset 8.
            for part in parts.iter_mut().take(5) {
                fix_block_crcs(part);
            }
        }
    }
    parts.try_into().ok()
}

/// Rewrites the (masked crc32c) trailer of every whole block from offset 8.
fn fix_block_crcs(part: &mut [u8]) {
    let mut at = 8usize;
    while at + 9 <= part.len() {
        let stored = u32::from_le_bytes([part[at + 1], part[at + 2], part[at + 3], part[at + 4]]);
        let Some(end) = (at + 9).checked_add(stored as usize) else { return };
        if end + 4 > part.len() {
            return;
        }
        let crc = crc32c::crc32c(&part[at..end]);
        let masked = crc.rotate_right(15).wrapping_add(0xa282_ead8);
        part[end..end + 4].copy_from_slice(&masked.to_le_bytes());
        at = end + 4;
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(parts) = components(data) else { return };
    let Ok(table) = Sstable::from_bytes(parts) else { return };
    let mut scan = table.scan();
    while let Ok(Some(_)) = scan.next_fragment() {}
    let slice = ClusteringRange::new(
        Bound::Included(ClusteringKey::new(vec![0u8, 0, 0, 10]).expect("ckey")),
        Bound::Excluded(ClusteringKey::new(vec![0u8, 0, 0, 30]).expect("ckey")),
    )
    .expect("range");
    for key in &pristine().keys {
        let _ = table.read_partition(key);
        let _ = table.read_slice(key, &slice);
        if let Ok(Some(mut r)) = table.make_reader_opt(&PartitionRange::single_key(key.clone()), Some(slice.clone())) {
            while let Ok(Some(_)) = r.next() {}
        }
    }
    if let Ok(Some(mut r)) = table.make_reader_opt(&PartitionRange::full(), None) {
        let _ = r.next();
        let _ = r.next_partition();
        while let Ok(Some(_)) = r.next() {}
    }
    let _ = table.verify();
});
