//! Integers as bytes: little-endian fixed widths and LEB128 varints
//! (zigzagged when signed). [`super::Reader`] reads them back.

use super::leb128;

/// Appends `v` as 2 little-endian bytes.
#[inline]
pub fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 4 little-endian bytes.
#[inline]
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
#[inline]
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
#[inline]
pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as a LEB128 varint (1 to 10 bytes; [`leb128::put`]).
#[inline]
pub fn put_uvarint(out: &mut Vec<u8>, v: u64) {
    leb128::put(out, v);
}

/// Appends `v` zigzagged ([`zigzag`]) as a varint, so that small negative
/// values stay short.
#[inline]
pub fn put_ivarint(out: &mut Vec<u8>, v: i64) {
    leb128::put(out, zigzag(v));
}

/// Appends a varint length and then the bytes.
#[inline]
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_uvarint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Maps signed to unsigned so that values near zero stay small: 0, -1, 1,
/// -2, 2, ... become 0, 1, 2, 3, 4, ...
///
/// ```
/// use mutation::codec::{unzigzag, zigzag};
/// assert_eq!(zigzag(-1), 1);
/// assert_eq!(zigzag(i64::MIN), u64::MAX);
/// assert_eq!(unzigzag(zigzag(-300)), -300);
/// ```
#[inline]
pub const fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
#[inline]
pub const fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_the_edges() {
        for v in [0, -1, 1, -64, 64, i64::MIN, i64::MIN + 1, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-64), 127);
        assert_eq!(zigzag(64), 128);
    }

    #[test]
    fn fixed_widths_are_little_endian() {
        let mut out = Vec::new();
        put_u16(&mut out, 0x0102);
        put_u32(&mut out, 0x0304_0506);
        put_i64(&mut out, -2);
        put_bytes(&mut out, b"ab");
        assert_eq!(
            out,
            [
                2, 1, 6, 5, 4, 3, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, b'a', b'b'
            ]
        );
    }
}
