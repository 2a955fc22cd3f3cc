//! Sequential decoding of fragments from a position in Data.

use mutation::Fragment;

use super::Inner;
use crate::block::{HEADER_LEN, PREAMBLE_LEN, ReadAhead};
use crate::codec::decode_fragment;
use crate::decoder::Decoder;
use crate::error::{Component, Error};

/// Decodes fragments sequentially from a Data position.
#[derive(Debug)]
pub(crate) struct DataCursor {
    block: Vec<u8>,
    block_offset: u64,
    pos: usize,
    next_block: u64,
    /// A scan from the start reads ahead ([`READ_AHEAD`](crate::block::READ_AHEAD) bytes at a
    /// time); a cursor placed at a partition (a point or range read) reads
    /// only the blocks it decodes.
    ahead: Option<ReadAhead>,
}

impl DataCursor {
    /// A cursor at raw offset `in_block` of the Data block at `block`.
    pub(crate) fn at(inner: &Inner, block: u64, in_block: u64) -> Result<Self, Error> {
        let origin = inner.origin(Component::Data);
        if block < PREAMBLE_LEN || block >= inner.data_end() {
            return Err(origin.corrupt(
                block,
                format!("data position {block} is outside the Data blocks"),
            ));
        }
        let b = inner.read_data_block(block)?;
        if in_block >= b.raw.len() as u64 {
            return Err(origin.corrupt(
                block,
                format!("offset {in_block} is past the {}-byte block", b.raw.len()),
            ));
        }
        Ok(DataCursor {
            block: b.raw,
            block_offset: block,
            pos: in_block as usize,
            next_block: b.next,
            ahead: None,
        })
    }

    /// A cursor before the first Data block, for a scan: it reads ahead.
    pub(crate) fn start() -> Self {
        DataCursor {
            block: Vec::new(),
            block_offset: PREAMBLE_LEN,
            pos: 0,
            next_block: PREAMBLE_LEN,
            ahead: Some(ReadAhead::default()),
        }
    }

    /// File offset of the current block.
    pub(crate) fn offset(&self) -> u64 {
        self.block_offset
    }

    /// Offset of the current block, and of the next fragment in it; a fresh
    /// block is loaded first if the current one is exhausted.
    pub(crate) fn next_fragment(&mut self, inner: &Inner) -> Result<Option<Fragment>, Error> {
        Ok(self.next_located(inner)?.map(|(f, ..)| f))
    }

    /// Like `next_fragment`, also returning the block offset, the offset in
    /// the block and the encoded length.
    pub(crate) fn next_located(
        &mut self,
        inner: &Inner,
    ) -> Result<Option<(Fragment, u64, u64, u64)>, Error> {
        let origin = inner.origin(Component::Data);
        if self.pos >= self.block.len() {
            if self.next_block >= inner.data_end() {
                return Ok(None);
            }
            let b = match &mut self.ahead {
                Some(ahead) => inner.read_data_block_ahead(self.next_block, ahead)?,
                None => inner.read_data_block(self.next_block)?,
            };
            if b.raw.is_empty() {
                return Err(origin.corrupt(self.next_block, "empty Data block"));
            }
            self.block = b.raw;
            self.block_offset = self.next_block;
            self.pos = 0;
            self.next_block = b.next;
        }
        let mut d = Decoder::new(&self.block, self.block_offset + HEADER_LEN as u64, origin);
        d.seek(self.pos)?;
        let start = self.pos;
        let f = decode_fragment(&mut d)?;
        self.pos = d.position();
        Ok(Some((
            f,
            self.block_offset,
            start as u64,
            (self.pos - start) as u64,
        )))
    }
}
