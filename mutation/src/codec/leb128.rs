//! LEB128 varints, the one implementation the workspace's encodings share
//! (through [`Reader::uvarint`](super::Reader::uvarint) and
//! [`put_uvarint`](super::put_uvarint)): 7 bits a byte, low bits first, the
//! high bit set on every byte but the last.
//!
//! Decoding is strict, so every value has exactly one encoding: an
//! overlong form (a final zero byte after the first) is refused, and so is
//! a value that does not fit the width asked for.
//!
//! ```
//! use mutation::codec::leb128;
//!
//! let mut out = Vec::new();
//! leb128::put(&mut out, 300);
//! assert_eq!(out, [0xAC, 0x02]);
//! assert_eq!(leb128::get(&out, 32), Ok((300, 2)));
//! assert_eq!(leb128::get(&[0x80, 0x00], 64), Err(leb128::Malformed::Overlong));
//! assert_eq!(leb128::get(&[0xFF, 0xFF, 0xFF, 0xFF, 0x10], 32), Err(leb128::Malformed::Overflow));
//! ```

use std::fmt;

/// Why bytes do not decode as a varint (each format wraps it in its own
/// error, with its own context).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// The bytes end before the varint's last byte.
    Truncated,
    /// A longer encoding of a value that has a shorter one.
    Overlong,
    /// The value does not fit the width asked for.
    Overflow,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Malformed::Truncated => "truncated varint",
            Malformed::Overlong => "overlong varint",
            Malformed::Overflow => "varint overflows its width",
        })
    }
}

/// Appends `v` (1 to 10 bytes; a `u32` takes at most 5).
#[inline]
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// How many bytes [`put`] writes for `v` (1 to 10).
#[inline]
pub const fn len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Decodes the varint at the start of `bytes` as a value of at most
/// `bits` bits (1 to 64), and returns it with the number of bytes it took.
///
/// # Errors
/// [`Malformed`] for bytes that end too soon, an overlong encoding, or a
/// value wider than `bits`.
///
/// # Panics
/// If `bits` is 0 or above 64 (a caller's constant).
#[inline]
pub fn get(bytes: &[u8], bits: u32) -> Result<(u64, usize), Malformed> {
    assert!((1..=64).contains(&bits), "a varint of {bits} bits");
    let max_len = bits.div_ceil(7) as usize;
    let mut v = 0u64;
    for (i, &b) in bytes.iter().take(max_len).enumerate() {
        let shift = 7 * i as u32;
        let low = u64::from(b & 0x7f);
        let room = bits - shift;
        if (room < 7 && low >> room != 0) || (b & 0x80 != 0 && i + 1 == max_len) {
            return Err(Malformed::Overflow);
        }
        v |= low << shift;
        if b & 0x80 == 0 {
            if b == 0 && i > 0 {
                return Err(Malformed::Overlong);
            }
            return Ok((v, i + 1));
        }
    }
    Err(Malformed::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_width_round_trips() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put(&mut out, v);
            assert_eq!(out.len(), len(v), "{v}");
            assert_eq!(get(&out, 64), Ok((v, out.len())), "{v}");
            assert_eq!(
                get(&out[..out.len() - 1], 64),
                Err(Malformed::Truncated),
                "{v} cut"
            );
            if let Ok(small) = u32::try_from(v) {
                assert!(out.len() <= 5);
                assert_eq!(get(&out, 32), Ok((u64::from(small), out.len())));
            } else {
                assert_eq!(get(&out, 32), Err(Malformed::Overflow), "{v}");
            }
        }
        // Trailing bytes are the caller's.
        assert_eq!(get(&[0x05, 0xFF], 64), Ok((5, 1)));
    }

    #[test]
    fn malformed_encodings_are_refused() {
        assert_eq!(get(&[], 64), Err(Malformed::Truncated));
        assert_eq!(get(&[0x80, 0x80], 64), Err(Malformed::Truncated));
        assert_eq!(get(&[0x80, 0x00], 64), Err(Malformed::Overlong));
        assert_eq!(get(&[0xFF; 10], 64), Err(Malformed::Overflow));
        assert_eq!(get(&[0x80; 11], 64), Err(Malformed::Overflow));
        assert_eq!(
            get(&[0xFF, 0xFF, 0xFF, 0xFF, 0x10], 32),
            Err(Malformed::Overflow)
        );
        assert_eq!(
            get(&[0x80, 0x80, 0x80, 0x80, 0x80, 0], 32),
            Err(Malformed::Overflow)
        );
        assert_eq!(
            get(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F], 32),
            Ok((u64::from(u32::MAX), 5))
        );
    }
}
