//! The values both engines store and every read checks, and the key
//! choosers.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use replica_stress::zipfian::ScrambledZipfian;

use super::KeyChoice;

/// Bytes of a value's header: the partition (8 bytes) and row (2 bytes)
/// it belongs to, so a value read back under the wrong key fails its
/// check.
const HEADER: usize = 10;
/// Offsets into the pool a value's body may start at.
const OFFSETS: usize = 4096;

/// The deterministic value of every (partition, row): its header, then a
/// slice of a seeded random pool that starts at an offset the pair
/// chooses.
#[derive(Debug)]
pub(crate) struct ValueBook {
    pool: Vec<u8>,
    row_bytes: usize,
}

impl ValueBook {
    /// Values of `row_bytes` (at least the header) bytes.
    pub(crate) fn new(row_bytes: usize) -> Self {
        let mut rng = SmallRng::seed_from_u64(0x005E_ED35);
        let mut pool = vec![0u8; row_bytes + OFFSETS];
        rng.fill(&mut pool[..]);
        ValueBook { pool, row_bytes }
    }

    fn body(&self, partition: u64, row: u16) -> &[u8] {
        let mix = partition
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(u64::from(row).wrapping_mul(0xC2B2_AE3D_27D4_EB4F));
        let offset = (mix >> 32) as usize % OFFSETS;
        &self.pool[offset..offset + self.row_bytes - HEADER]
    }

    /// The value of `row` of `partition`.
    pub(crate) fn value(&self, partition: u64, row: u16) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.row_bytes);
        v.extend_from_slice(&partition.to_le_bytes());
        v.extend_from_slice(&row.to_le_bytes());
        v.extend_from_slice(self.body(partition, row));
        v
    }

    /// Whether `value` is the value of `row` of `partition`, every byte.
    pub(crate) fn matches(&self, partition: u64, row: u16, value: &[u8]) -> bool {
        value.len() == self.row_bytes
            && value[..8] == partition.to_le_bytes()
            && value[8..HEADER] == row.to_le_bytes()
            && value[HEADER..] == *self.body(partition, row)
    }
}

/// A partition's key bytes, for both engines: its number, big-endian.
pub(crate) fn partition_key(partition: u64) -> [u8; 8] {
    partition.to_be_bytes()
}

/// A row's clustering key (replica) or key suffix (fjall), big-endian so
/// rows sort by number.
pub(crate) fn row_key(row: u16) -> [u8; 2] {
    row.to_be_bytes()
}

/// One thread's key chooser over `0..partitions`.
#[derive(Debug)]
pub(crate) struct Keys {
    rng: SmallRng,
    partitions: u64,
    zipfian: Option<ScrambledZipfian>,
}

impl Keys {
    /// Thread `thread`'s chooser: its own seed, the same for both engines.
    pub(crate) fn new(choice: KeyChoice, partitions: u64, thread: u64) -> Self {
        Keys {
            rng: SmallRng::seed_from_u64(0x35_0000 + thread),
            partitions,
            zipfian: (choice == KeyChoice::Zipfian).then(|| ScrambledZipfian::new(partitions)),
        }
    }

    /// The next partition.
    pub(crate) fn next(&mut self) -> u64 {
        match &self.zipfian {
            Some(z) => z.next(&mut self.rng),
            None => self.rng.gen_range(0..self.partitions),
        }
    }
}
