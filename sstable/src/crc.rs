//! crc32c combination: the crc32c of `A ++ B` from `crc(A)`, `crc(B)` and
//! `len(B)`, in O(log len(B)) carry-less multiplications (zlib's
//! `crc32_combine` method, for the Castagnoli polynomial). Lets the Data
//! writer derive the whole-file Digest from the block checksums it computes
//! anyway, hashing every byte once.

/// Masks a crc32c before it is stored inside checksummed data (LevelDB's
/// mask). A crc stored raw after the bytes it covers makes the crc32c of
/// the whole (bytes ++ crc) a constant that depends only on the length: a
/// whole-file checksum over blocks with raw trailers would then ignore the
/// blocks' contents. The mask breaks that.
pub(crate) fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// The reflected Castagnoli polynomial.
const POLY: u32 = 0x82f6_3b78;

/// `a * b mod POLY` over GF(2), both reflected.
const fn multmodp(a: u32, mut b: u32) -> u32 {
    let mut m: u32 = 1 << 31;
    let mut p: u32 = 0;
    loop {
        if a & m != 0 {
            p ^= b;
            if a & (m - 1) == 0 {
                break;
            }
        }
        m >>= 1;
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    p
}

/// `X2N[k] = x^(2^k) mod POLY`.
const X2N: [u32; 32] = {
    let mut t = [0u32; 32];
    let mut p: u32 = 1 << 30; // x^1
    let mut k = 0;
    while k < 32 {
        t[k] = p;
        p = multmodp(p, p);
        k += 1;
    }
    t
};

/// `x^(8 * n) mod POLY`.
fn x8nmodp(mut n: u64) -> u32 {
    let mut p: u32 = 1 << 31; // x^0
    let mut k = 3;
    while n != 0 {
        if n & 1 != 0 {
            p = multmodp(X2N[k & 31], p);
        }
        n >>= 1;
        k += 1;
    }
    p
}

/// The crc32c of `A ++ B` given `crc(A)`, `crc(B)` and `len(B)`.
pub(crate) fn combine(crc_a: u32, crc_b: u32, len_b: u64) -> u32 {
    multmodp(x8nmodp(len_b), crc_a) ^ crc_b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_trailers_keep_the_whole_file_crc_content_sensitive() {
        let frame = |payload: &[u8], masked: bool| {
            let mut v = payload.to_vec();
            let c = crc32c::crc32c(payload);
            v.extend_from_slice(&(if masked { mask(c) } else { c }).to_le_bytes());
            crc32c::crc32c(&v)
        };
        // Raw trailers: the residue is the same for any payload.
        assert_eq!(frame(b"aaaa", false), frame(b"bbbb", false));
        assert_ne!(frame(b"aaaa", true), frame(b"bbbb", true));
    }

    #[test]
    fn combine_equals_appending() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 251) as u8).collect();
        for split in [0, 1, 7, 100, 2500, 4999, 5000] {
            let (a, b) = data.split_at(split);
            let c = combine(crc32c::crc32c(a), crc32c::crc32c(b), b.len() as u64);
            assert_eq!(c, crc32c::crc32c(&data), "split {split}");
        }
    }
}
