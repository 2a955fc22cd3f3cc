//! Bloom filter over partition keys.
//!
//! Keys are hashed once to 64 bits (the partition token, itself a Murmur3
//! hash); probe `i` is `h1 + i * h2` (Kirsch-Mitzenmacher double hashing)
//! with `h1` the hash and `h2` a SplitMix64 mix of it, forced odd.

use crate::decoder::{Decoder, Origin};
use crate::error::Error;

/// Largest bit array: the filter body (`probes:u32 nbits:u64 bits`) must
/// fit the component's single block ([`crate::block::MAX_BLOCK`]). A larger
/// filter would be written but refused by every reader, so very large
/// sstables get a filter of this size and a false-positive rate above the
/// configured one. Also bounds what a corrupt header can make a reader
/// allocate.
const MAX_FILTER_BYTES: u64 = crate::block::MAX_BLOCK as u64 - 12;

/// A bloom filter with a fixed number of bits and probes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BloomFilter {
    bits: Vec<u8>,
    nbits: u64,
    probes: u32,
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl BloomFilter {
    /// A filter sized for `expected` keys at false-positive rate `fp_rate`
    /// (which must be in (0, 1); checked by the writer's options).
    pub(crate) fn new(expected: u64, fp_rate: f64) -> Self {
        let n = expected.max(1) as f64;
        let ln2 = std::f64::consts::LN_2;
        let m = (-(n * fp_rate.ln()) / (ln2 * ln2)).ceil().max(64.0);
        let nbits = (m as u64).min(MAX_FILTER_BYTES * 8);
        let probes = ((nbits as f64 / n) * ln2).round().clamp(1.0, 30.0) as u32;
        BloomFilter {
            bits: vec![0; nbits.div_ceil(8) as usize],
            nbits,
            probes,
        }
    }

    fn positions(&self, hash: u64) -> impl Iterator<Item = u64> + '_ {
        let h2 = mix(hash) | 1;
        (0..u64::from(self.probes)).map(move |i| hash.wrapping_add(i.wrapping_mul(h2)) % self.nbits)
    }

    /// Adds a key by its hash.
    pub(crate) fn insert(&mut self, hash: u64) {
        let positions: Vec<u64> = self.positions(hash).collect();
        for p in positions {
            self.bits[(p / 8) as usize] |= 1 << (p % 8);
        }
    }

    /// False when the key is certainly absent.
    pub(crate) fn may_contain(&self, hash: u64) -> bool {
        self.positions(hash)
            .all(|p| self.bits[(p / 8) as usize] & (1 << (p % 8)) != 0)
    }

    /// Number of probes per key.
    pub(crate) fn probes(&self) -> u32 {
        self.probes
    }

    /// Size of the bit array in bits.
    pub(crate) fn nbits(&self) -> u64 {
        self.nbits
    }

    /// Encodes the filter body: `probes:u32 nbits:u64 bits[ceil(nbits/8)]`.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + self.bits.len());
        out.extend_from_slice(&self.probes.to_le_bytes());
        out.extend_from_slice(&self.nbits.to_le_bytes());
        out.extend_from_slice(&self.bits);
        out
    }

    /// Decodes a filter body.
    pub(crate) fn decode(body: &[u8], base: u64, origin: Origin<'_>) -> Result<Self, Error> {
        let mut d = Decoder::new(body, base, origin);
        let probes = d.u32("filter probe count")?;
        if !(1..=30).contains(&probes) {
            return Err(d.corrupt(format!("filter probe count {probes} is outside 1..=30")));
        }
        let nbits = d.u64("filter bit count")?;
        if nbits == 0 || nbits > MAX_FILTER_BYTES * 8 {
            return Err(d.corrupt(format!(
                "filter bit count {nbits} is outside 1..={}",
                MAX_FILTER_BYTES * 8
            )));
        }
        let bytes = nbits.div_ceil(8) as usize;
        let bits = d.take(bytes, "filter bits")?.to_vec();
        d.expect_end("the filter bits")?;
        Ok(BloomFilter {
            bits,
            nbits,
            probes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_rate_near_target() {
        for rate in [0.1, 0.01, 0.001] {
            let mut f = BloomFilter::new(10_000, rate);
            for i in 0..10_000u64 {
                f.insert(mix(i));
            }
            assert!((0..10_000u64).all(|i| f.may_contain(mix(i))));
            let fp = (10_000..110_000u64)
                .filter(|&i| f.may_contain(mix(i)))
                .count();
            let measured = fp as f64 / 100_000.0;
            assert!(measured < rate * 2.0, "rate {rate}: measured {measured}");
        }
    }

    #[test]
    fn the_largest_filter_still_fits_one_block() {
        // 100M keys at 1% want ~120 MB of bits; the filter is capped so its
        // component stays readable.
        let f = BloomFilter::new(100_000_000, 0.01);
        assert_eq!(f.nbits(), MAX_FILTER_BYTES * 8);
        let body = f.encode();
        assert_eq!(body.len(), crate::block::MAX_BLOCK as usize);
        let p = std::path::PathBuf::from("f");
        let origin = Origin {
            file: &p,
            component: crate::error::Component::Filter,
        };
        assert_eq!(BloomFilter::decode(&body, 0, origin).unwrap(), f);
    }

    #[test]
    fn encode_decode_round_trip() {
        let mut f = BloomFilter::new(100, 0.01);
        f.insert(42);
        let p = std::path::PathBuf::from("f");
        let origin = Origin {
            file: &p,
            component: crate::error::Component::Filter,
        };
        let g = BloomFilter::decode(&f.encode(), 0, origin).unwrap();
        assert_eq!(f, g);
        assert!(BloomFilter::decode(&f.encode()[..20], 0, origin).is_err());
    }
}
