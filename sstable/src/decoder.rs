//! The sstable's view of [`mutation::codec::Reader`]: a decoder over one
//! component's bytes that turns every malformed input into
//! [`Error::Corrupt`] naming the file, the component and the absolute
//! offset. The integers, varints and data-model values themselves are
//! the workspace's codec primitives ([`mutation::codec`]).

use std::path::Path;

use mutation::codec::{DecodeError, Reader};

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

/// A forward decoder over a byte slice that reports errors with absolute
/// offsets.
#[derive(Debug)]
pub(crate) struct Decoder<'a> {
    r: Reader<'a>,
    /// Offset of the slice's first byte in the file, for error messages.
    base: u64,
    origin: Origin<'a>,
}

impl<'a> Decoder<'a> {
    /// A decoder over `buf`, whose first byte is at file offset `base`.
    pub(crate) fn new(buf: &'a [u8], base: u64, origin: Origin<'a>) -> Self {
        Decoder {
            r: Reader::new(buf),
            base,
            origin,
        }
    }

    /// The corruption error of a codec error.
    fn lift(&self, e: DecodeError) -> Error {
        self.origin.corrupt(self.base + e.offset as u64, e.detail)
    }

    /// Runs a codec decoding function on the bytes that remain, its error
    /// lifted into [`Error::Corrupt`].
    #[inline]
    pub(crate) fn decode<T>(
        &mut self,
        f: impl FnOnce(&mut Reader<'a>) -> Result<T, DecodeError>,
    ) -> Result<T, Error> {
        f(&mut self.r).map_err(|e| self.lift(e))
    }

    /// Current position within the slice.
    pub(crate) fn position(&self) -> usize {
        self.r.position()
    }

    /// Moves to `pos` within the slice; an out-of-range position is corrupt.
    pub(crate) fn seek(&mut self, pos: usize) -> Result<(), Error> {
        self.decode(|r| r.seek(pos))
    }

    /// Bytes not yet decoded.
    pub(crate) fn remaining(&self) -> usize {
        self.r.remaining()
    }

    /// True when every byte was decoded.
    pub(crate) fn is_empty(&self) -> bool {
        self.r.is_empty()
    }

    /// Absolute file offset of the current position.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.r.position() as u64
    }

    /// A corruption error at the current position.
    pub(crate) fn corrupt(&self, reason: impl Into<String>) -> Error {
        self.origin.corrupt(self.offset(), reason)
    }

    /// Fails unless every byte was consumed.
    pub(crate) fn expect_end(&self, what: &str) -> Result<(), Error> {
        self.r.expect_end(what).map_err(|e| self.lift(e))
    }

    /// Takes `n` bytes.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Error> {
        self.decode(|r| r.take(n, what))
    }

    /// Reads one byte.
    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, Error> {
        self.decode(|r| r.u8(what))
    }

    /// Reads a little-endian u32.
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, Error> {
        self.decode(|r| r.u32(what))
    }

    /// Reads a little-endian u64.
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, Error> {
        self.decode(|r| r.u64(what))
    }

    /// Reads a little-endian i64.
    pub(crate) fn i64(&mut self, what: &str) -> Result<i64, Error> {
        self.decode(|r| r.i64(what))
    }

    /// Reads an unsigned LEB128 varint; overlong or overflowing encodings
    /// are corrupt, so each value has exactly one encoding.
    pub(crate) fn uvarint(&mut self, what: &str) -> Result<u64, Error> {
        self.decode(|r| r.uvarint(what, 64))
    }

    /// Reads a zigzag varint.
    pub(crate) fn ivarint(&mut self, what: &str) -> Result<i64, Error> {
        self.decode(|r| r.ivarint(what))
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
    use mutation::codec::{put_ivarint, put_uvarint};
    use std::path::PathBuf;

    fn origin(p: &Path) -> Origin<'_> {
        Origin {
            file: p,
            component: Component::Data,
        }
    }

    /// The adapter reads what the codec writes (the varints themselves are
    /// tested with `mutation::codec`).
    #[test]
    fn reads_what_the_codec_writes() {
        let p = PathBuf::from("x");
        let mut out = Vec::new();
        put_uvarint(&mut out, u64::MAX);
        put_ivarint(&mut out, i64::MIN);
        out.extend_from_slice(&7u32.to_le_bytes());
        let mut d = Decoder::new(&out, 0, origin(&p));
        assert_eq!(d.uvarint("v").unwrap(), u64::MAX);
        assert_eq!(d.ivarint("v").unwrap(), i64::MIN);
        assert_eq!(d.u32("v").unwrap(), 7);
        d.expect_end("the values").unwrap();
    }

    #[test]
    fn errors_name_the_file_the_component_and_the_absolute_offset() {
        let p = PathBuf::from("f");
        let mut d = Decoder::new(&[1, 0x80, 0x80], 100, origin(&p));
        d.u8("tag").unwrap();
        let e = d.uvarint("len").unwrap_err().to_string();
        assert_eq!(
            e,
            "corrupt Data component f at offset 101: truncated varint for len"
        );
        let mut d = Decoder::new(&[0xff; 10], 0, origin(&p));
        assert!(
            d.uvarint("len")
                .unwrap_err()
                .to_string()
                .contains("overflows 64 bits")
        );
        let mut d = Decoder::new(&[5, 1, 2], 0, origin(&p));
        assert!(
            d.bytes("key", 100)
                .unwrap_err()
                .to_string()
                .contains("at offset 1: key needs 5 bytes")
        );
        let mut d = Decoder::new(&[200, 1], 0, origin(&p));
        assert!(
            d.len("key", 100)
                .unwrap_err()
                .to_string()
                .contains("exceeds")
        );
        let mut d = Decoder::new(&[0; 3], 0, origin(&p));
        assert!(d.seek(4).is_err());
        d.seek(3).unwrap();
        assert!(d.is_empty());
    }
}
