//! The bounds-checked cursor every decoder reads through, and the error it
//! reports.

use bytes::Bytes;

use super::leb128::{self, Malformed};

/// Why bytes did not decode: where, and what was wrong. Each format wraps
/// it in its own error with its own context (the mutation encoding in
/// [`crate::Error::Decode`], the memtable and the sstable in their
/// `Corrupt` errors, with the file and the component for an sstable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {detail}")]
pub struct DecodeError {
    /// Offset from the start of the [`Reader`]'s input where the bad value
    /// starts.
    pub offset: usize,
    /// What was wrong, naming the field ("cell value needs 5 bytes but
    /// only 2 remain").
    pub detail: String,
}

impl DecodeError {
    /// An error at `offset`.
    pub fn new(offset: usize, detail: impl Into<String>) -> Self {
        DecodeError {
            offset,
            detail: detail.into(),
        }
    }
}

/// A forward cursor over an input that never reads past its end: every
/// read checks what remains and fails with a [`DecodeError`] naming the
/// field, so malformed input is an error, never a panic, and no length is
/// trusted before it is checked.
///
/// ```
/// use mutation::codec::Reader;
///
/// let mut r = Reader::new(&[0x2a, 0xac, 0x02, 7]);
/// assert_eq!(r.u8("tag")?, 0x2a);
/// assert_eq!(r.uvarint("length", 32)?, 300);
/// let err = r.u32("count").unwrap_err();
/// assert_eq!(err.to_string(), "at byte 3: count needs 4 bytes but only 1 remain");
/// # Ok::<(), mutation::codec::DecodeError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    /// The whole input.
    bytes: &'a [u8],
    /// What remains of it to read.
    rest: &'a [u8],
    /// `bytes` as a shared buffer: byte strings taken with
    /// [`Reader::take_bytes`] are slices of it, not copies.
    shared: Option<&'a Bytes>,
}

impl<'a> Reader<'a> {
    /// A reader over `bytes`; [`Reader::take_bytes`] copies.
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader {
            bytes,
            rest: bytes,
            shared: None,
        }
    }

    /// A reader over a shared buffer; [`Reader::take_bytes`] returns
    /// slices of it (which keep it alive) instead of copies.
    #[inline]
    pub fn new_shared(bytes: &'a Bytes) -> Self {
        Reader {
            bytes,
            rest: bytes,
            shared: Some(bytes),
        }
    }

    /// The offset of the next byte to read.
    #[inline]
    pub fn position(&self) -> usize {
        self.bytes.len() - self.rest.len()
    }

    /// Moves to `position`.
    ///
    /// # Errors
    /// A position past the end of the input.
    pub fn seek(&mut self, position: usize) -> Result<(), DecodeError> {
        match self.bytes.get(position..) {
            Some(rest) => {
                self.rest = rest;
                Ok(())
            }
            None => Err(self.error(format!(
                "position {position} is past the end of a {}-byte region",
                self.bytes.len()
            ))),
        }
    }

    /// How many bytes are left to read.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// True when every byte was read.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// An error at the current position.
    pub fn error(&self, detail: impl Into<String>) -> DecodeError {
        DecodeError::new(self.position(), detail)
    }

    /// Fails unless every byte was read: `what` names what should have
    /// ended ("the mutation").
    ///
    /// # Errors
    /// The count of trailing bytes.
    pub fn expect_end(&self, what: &str) -> Result<(), DecodeError> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(self.error(format!("{} trailing bytes after {what}", self.remaining())))
        }
    }

    /// The next `n` bytes.
    ///
    /// # Errors
    /// Fewer than `n` bytes remain.
    #[inline]
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        match self.rest.split_at_checked(n) {
            Some((head, tail)) => {
                self.rest = tail;
                Ok(head)
            }
            None => Err(self.error(format!(
                "{what} needs {n} bytes but only {} remain",
                self.rest.len()
            ))),
        }
    }

    /// The next `n` bytes as [`Bytes`]: a slice of the shared buffer of
    /// [`Reader::new_shared`], or a copy.
    ///
    /// # Errors
    /// As [`Reader::take`].
    #[inline]
    pub fn take_bytes(&mut self, n: usize, what: &str) -> Result<Bytes, DecodeError> {
        let start = self.position();
        let s = self.take(n, what)?;
        Ok(match self.shared {
            Some(shared) => shared.slice(start..start + n),
            None => Bytes::copy_from_slice(s),
        })
    }

    /// The next `N` bytes as an array.
    #[inline]
    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    /// One byte.
    ///
    /// # Errors
    /// The input ends.
    #[inline]
    pub fn u8(&mut self, what: &str) -> Result<u8, DecodeError> {
        match self.rest.split_first() {
            Some((&b, tail)) => {
                self.rest = tail;
                Ok(b)
            }
            None => Err(self.error(format!("{what} needs 1 bytes but only 0 remain"))),
        }
    }

    /// A little-endian `u16`.
    ///
    /// # Errors
    /// The input ends.
    #[inline]
    pub fn u16(&mut self, what: &str) -> Result<u16, DecodeError> {
        self.array(what).map(u16::from_le_bytes)
    }

    /// A little-endian `u32`.
    ///
    /// # Errors
    /// The input ends.
    #[inline]
    pub fn u32(&mut self, what: &str) -> Result<u32, DecodeError> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// A little-endian `u64`.
    ///
    /// # Errors
    /// The input ends.
    #[inline]
    pub fn u64(&mut self, what: &str) -> Result<u64, DecodeError> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A little-endian `i64`.
    ///
    /// # Errors
    /// The input ends.
    #[inline]
    pub fn i64(&mut self, what: &str) -> Result<i64, DecodeError> {
        self.array(what).map(i64::from_le_bytes)
    }

    /// A LEB128 varint of at most `bits` bits (1 to 64; [`leb128::get`]):
    /// each value has exactly one encoding.
    ///
    /// # Errors
    /// A truncated, overlong or overflowing varint.
    ///
    /// # Panics
    /// If `bits` is 0 or above 64 (a caller's constant).
    #[inline]
    pub fn uvarint(&mut self, what: &str, bits: u32) -> Result<u64, DecodeError> {
        match leb128::get(self.rest, bits) {
            Ok((v, len)) => {
                self.rest = self.rest.get(len..).unwrap_or_default();
                Ok(v)
            }
            Err(malformed) => Err(self.error(match malformed {
                Malformed::Truncated => format!("truncated varint for {what}"),
                Malformed::Overlong => format!("overlong varint for {what}"),
                Malformed::Overflow => format!("varint for {what} overflows {bits} bits"),
            })),
        }
    }

    /// A 32-bit LEB128 varint.
    ///
    /// # Errors
    /// As [`Reader::uvarint`].
    #[inline]
    pub fn u32_varint(&mut self, what: &str) -> Result<u32, DecodeError> {
        // A varint of at most 32 bits fits.
        self.uvarint(what, 32).map(|v| v as u32)
    }

    /// A zigzag LEB128 varint ([`super::put_ivarint`]).
    ///
    /// # Errors
    /// As [`Reader::uvarint`].
    #[inline]
    pub fn ivarint(&mut self, what: &str) -> Result<i64, DecodeError> {
        self.uvarint(what, 64).map(super::unzigzag)
    }
}

/// Turns a constructor's error (a key too long, a TTL out of range) into
/// a decode error at `offset`.
pub(crate) fn checked<T>(offset: usize, r: Result<T, crate::Error>) -> Result<T, DecodeError> {
    r.map_err(|e| DecodeError::new(offset, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_name_the_field_and_the_offset() {
        let mut r = Reader::new(&[1, 2, 0, 0, 0, 0x80]);
        assert_eq!(r.u8("a").unwrap(), 1);
        assert_eq!(r.u32("b").unwrap(), 2);
        assert_eq!(
            r.uvarint("c", 32).unwrap_err(),
            DecodeError::new(5, "truncated varint for c")
        );
        assert_eq!(
            r.take(2, "d").unwrap_err().to_string(),
            "at byte 5: d needs 2 bytes but only 1 remain"
        );
        assert_eq!(
            r.expect_end("e").unwrap_err().to_string(),
            "at byte 5: 1 trailing bytes after e"
        );
        assert!(r.seek(7).is_err());
        r.seek(6).unwrap();
        assert!(r.is_empty());
        r.expect_end("e").unwrap();
    }

    #[test]
    fn malformed_varints_are_errors() {
        let err = |bytes: &[u8], bits| Reader::new(bytes).uvarint("v", bits).unwrap_err().detail;
        assert_eq!(err(&[0x80, 0x00], 64), "overlong varint for v");
        assert_eq!(err(&[0xff; 10], 64), "varint for v overflows 64 bits");
        assert_eq!(
            err(&[0xFF, 0xFF, 0xFF, 0xFF, 0x10], 32),
            "varint for v overflows 32 bits"
        );
        let mut r = Reader::new(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]);
        assert_eq!(r.u32_varint("v").unwrap(), u32::MAX);
    }

    #[test]
    fn take_bytes_slices_a_shared_buffer_and_copies_otherwise() {
        let shared = Bytes::from_static(b"abcdef");
        let mut r = Reader::new_shared(&shared);
        r.u8("x").unwrap();
        let b = r.take_bytes(3, "y").unwrap();
        assert_eq!(&b[..], b"bcd");
        assert_eq!(b.as_ptr(), shared[1..].as_ptr());
        let mut r = Reader::new(&shared);
        let b = r.take_bytes(2, "y").unwrap();
        assert_eq!(&b[..], b"ab");
        assert_ne!(b.as_ptr(), shared.as_ptr());
    }
}
