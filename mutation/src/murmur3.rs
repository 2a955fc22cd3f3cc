//! MurmurHash3 x64/128 exactly as Cassandra's `MurmurHash.hash3_x64_128`
//! computes it, including its quirk: the bytes of the final partial block
//! are read as *signed* Java bytes and sign-extended before they are shifted
//! into place. Whole 16-byte blocks are read as unsigned little-endian words,
//! as in the reference algorithm. For keys whose tail bytes are all below
//! 0x80 this equals the reference MurmurHash3.

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

fn fmix(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

fn mix_k1(k1: u64) -> u64 {
    k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2)
}

fn mix_k2(k2: u64) -> u64 {
    k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1)
}

/// A tail byte as Cassandra reads it: a signed Java byte widened to `long`.
fn signed(b: u8) -> u64 {
    i64::from(b as i8) as u64
}

/// Returns the two 64-bit halves of Cassandra's `hash3_x64_128(key, seed = 0)`.
pub(crate) fn cassandra_hash3_x64_128(key: &[u8]) -> [u64; 2] {
    let mut h1: u64 = 0;
    let mut h2: u64 = 0;
    let mut blocks = key.chunks_exact(16);
    for block in &mut blocks {
        let (lo, hi) = block.split_at(8);
        let k1 = u64::from_le_bytes(lo.try_into().unwrap_or([0; 8]));
        let k2 = u64::from_le_bytes(hi.try_into().unwrap_or([0; 8]));

        h1 ^= mix_k1(k1);
        h1 = h1.rotate_left(27).wrapping_add(h2);
        h1 = h1.wrapping_mul(5).wrapping_add(0x52dc_e729);

        h2 ^= mix_k2(k2);
        h2 = h2.rotate_left(31).wrapping_add(h1);
        h2 = h2.wrapping_mul(5).wrapping_add(0x3849_5ab5);
    }

    let tail = blocks.remainder();
    let mut k1: u64 = 0;
    let mut k2: u64 = 0;
    for (i, &b) in tail.iter().enumerate().rev() {
        if i >= 8 {
            k2 ^= signed(b) << ((i - 8) * 8);
        } else {
            k1 ^= signed(b) << (i * 8);
        }
    }
    if tail.len() > 8 {
        h2 ^= mix_k2(k2);
    }
    if !tail.is_empty() {
        h1 ^= mix_k1(k1);
    }

    let len = key.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    [h1, h2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_tail_matches_reference_murmur3() {
        // Reference MurmurHash3_x64_128("hello", seed 0), first half
        // (also listed in gocql's murmur tests; see tests/token_values.rs).
        assert_eq!(cassandra_hash3_x64_128(b"hello")[0], 0xcbd8_a7b3_41bd_9b02);
    }

    #[test]
    fn empty_input_hashes_to_zero() {
        assert_eq!(cassandra_hash3_x64_128(b""), [0, 0]);
    }
}
