//! Little-endian fixed-width and LEB128 varint coding, and a bounds-checked
//! decoder that turns every malformed input into [`Error::Corrupt`] naming
//! the file, the component and the offset.

use std::path::Path;

use crate::error::{Component, Error};

/// Where decoded bytes come from, for error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin<'a> {
    pub(crate) file: &'a Path,
    pub(crate) component: Component,
}

impl Origin<'_> {
    /// A corruption error at `offset` in this origin.
    pub(crate) fn corrupt(&self, offset: u64, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            file: self.file.to_path_buf(),
            component: self.component,
            offset,
            reason: reason.into(),
        }
    }
}

/// Appends `v` as an unsigned LEB128 varint (1 to 10 bytes), the
/// workspace's one encoding of it ([`mutation::leb128`]).
pub(crate) fn put_uvarint(out: &mut Vec<u8>, v: u64) {
    mutation::leb128::put(out, v);
}

/// Appends `v` zigzag-encoded as a varint, so small negatives stay short.
pub(crate) fn put_ivarint(out: &mut Vec<u8>, v: i64) {
    put_uvarint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Appends a varint length followed by the bytes.
pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_uvarint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A forward decoder over a byte slice that reports errors with absolute
/// offsets.
#[derive(Debug)]
pub(crate) struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf[0]` in the file, for error messages.
    base: u64,
    origin: Origin<'a>,
}

impl<'a> Decoder<'a> {
    /// A decoder over `buf`, whose first byte is at file offset `base`.
    pub(crate) fn new(buf: &'a [u8], base: u64, origin: Origin<'a>) -> Self {
        Decoder {
            buf,
            pos: 0,
            base,
            origin,
        }
    }

    /// Current position within the slice.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Moves to `pos` within the slice; an out-of-range position is corrupt.
    pub(crate) fn seek(&mut self, pos: usize) -> Result<(), Error> {
        if pos > self.buf.len() {
            return Err(self.corrupt(format!(
                "position {pos} is past the end of a {}-byte region",
                self.buf.len()
            )));
        }
        self.pos = pos;
        Ok(())
    }

    /// Bytes not yet decoded.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when every byte was decoded.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// Absolute file offset of the current position.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// A corruption error at the current position.
    pub(crate) fn corrupt(&self, reason: impl Into<String>) -> Error {
        self.origin.corrupt(self.offset(), reason)
    }

    /// A corruption error at an earlier absolute offset (where the bad
    /// value started).
    pub(crate) fn corrupt_at(&self, offset: u64, reason: impl Into<String>) -> Error {
        self.origin.corrupt(offset, reason)
    }

    /// Fails unless every byte was consumed.
    pub(crate) fn expect_end(&self, what: &str) -> Result<(), Error> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(self.corrupt(format!("{} trailing bytes after {what}", self.remaining())))
        }
    }

    /// Takes `n` bytes.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Error> {
        if n > self.remaining() {
            return Err(self.corrupt(format!(
                "{what} needs {n} bytes but only {} remain",
                self.remaining()
            )));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Reads one byte.
    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, Error> {
        Ok(self.take(1, what)?[0])
    }

    /// Reads a little-endian u32.
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, Error> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a little-endian u64.
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, Error> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// Reads a little-endian i64.
    pub(crate) fn i64(&mut self, what: &str) -> Result<i64, Error> {
        Ok(self.u64(what)? as i64)
    }

    /// Reads an unsigned LEB128 varint; overlong or overflowing encodings
    /// are corrupt, so each value has exactly one encoding.
    pub(crate) fn uvarint(&mut self, what: &str) -> Result<u64, Error> {
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        match mutation::leb128::get(rest, 64) {
            Ok((v, len)) => {
                self.pos += len;
                Ok(v)
            }
            Err(malformed) => Err(self.corrupt(match malformed {
                mutation::leb128::Malformed::Truncated => format!("truncated varint for {what}"),
                mutation::leb128::Malformed::Overlong => format!("overlong varint for {what}"),
                mutation::leb128::Malformed::Overflow => {
                    format!("varint for {what} overflows 64 bits")
                }
            })),
        }
    }

    /// Reads a zigzag varint.
    pub(crate) fn ivarint(&mut self, what: &str) -> Result<i64, Error> {
        let u = self.uvarint(what)?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    /// Reads a varint that must fit a `usize` no larger than `limit`.
    pub(crate) fn len(&mut self, what: &str, limit: u64) -> Result<usize, Error> {
        let v = self.uvarint(what)?;
        if v > limit {
            return Err(self.corrupt(format!("{what} of {v} exceeds the limit of {limit}")));
        }
        usize::try_from(v)
            .map_err(|_| self.corrupt(format!("{what} of {v} does not fit in memory")))
    }

    /// Reads a varint length followed by that many bytes.
    pub(crate) fn bytes(&mut self, what: &str, limit: u64) -> Result<&'a [u8], Error> {
        let n = self.len(what, limit)?;
        self.take(n, what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn origin(p: &Path) -> Origin<'_> {
        Origin {
            file: p,
            component: Component::Data,
        }
    }

    #[test]
    fn uvarint_round_trips_edges() {
        let p = PathBuf::from("x");
        for v in [
            0,
            1,
            127,
            128,
            300,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_uvarint(&mut out, v);
            let mut d = Decoder::new(&out, 0, origin(&p));
            assert_eq!(d.uvarint("v").unwrap(), v);
            assert!(d.is_empty());
        }
    }

    #[test]
    fn ivarint_round_trips_edges() {
        let p = PathBuf::from("x");
        for v in [0, -1, 1, -64, 64, i64::MIN, i64::MAX] {
            let mut out = Vec::new();
            put_ivarint(&mut out, v);
            let mut d = Decoder::new(&out, 0, origin(&p));
            assert_eq!(d.ivarint("v").unwrap(), v);
        }
    }

    #[test]
    fn malformed_varints_are_corrupt_with_offset() {
        let p = PathBuf::from("f");
        let mut d = Decoder::new(&[0x80, 0x80], 100, origin(&p));
        let e = d.uvarint("len").unwrap_err().to_string();
        assert!(e.contains("offset 100") && e.contains("truncated"), "{e}");
        let mut d = Decoder::new(&[0x80, 0x00], 0, origin(&p));
        assert!(
            d.uvarint("len")
                .unwrap_err()
                .to_string()
                .contains("overlong")
        );
        let mut d = Decoder::new(&[0xff; 10], 0, origin(&p));
        assert!(
            d.uvarint("len")
                .unwrap_err()
                .to_string()
                .contains("overflows")
        );
        let mut d = Decoder::new(&[5, 1, 2], 0, origin(&p));
        assert!(
            d.bytes("key", 100)
                .unwrap_err()
                .to_string()
                .contains("needs 5 bytes")
        );
        let mut d = Decoder::new(&[200, 1], 0, origin(&p));
        assert!(
            d.len("key", 100)
                .unwrap_err()
                .to_string()
                .contains("exceeds")
        );
    }
}
