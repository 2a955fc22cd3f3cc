//! The Data component's writer: fragments are encoded straight into a
//! staging buffer at their final place inside the open block, blocks are
//! framed (and optionally compressed) in place, and the buffer goes to the
//! file in large writes. The whole-file crc32c for the Digest is combined
//! from the block checksums ([`crate::crc::combine`]), so every byte is
//! hashed once.

use std::path::{Path, PathBuf};

use fs::{File, OpenOptions};

use crate::block::{HEADER_LEN, TRAILER_LEN};
use crate::error::{Error, io_err};
use crate::sync::Arc;
use crate::writer::WriterOptions;
use writeback::WriteBack;
use writeback::direct::DirectWriter;

/// Streaming writer of checksummed Data blocks.
#[derive(Debug)]
pub(crate) struct DataWriter {
    file: Box<dyn File>,
    path: PathBuf,
    /// Staged bytes: finished blocks, then the open block's reserved header
    /// and its raw payload so far.
    out: Vec<u8>,
    /// Bytes already written to the file.
    flushed: u64,
    /// crc32c of every finished byte (file start to the open block).
    crc: u32,
    /// Where the open block's header starts in `out`.
    header_pos: usize,
    io_buffer: usize,
    compress: bool,
    /// Blocks to store raw without trying LZ4, after one did not shrink.
    skip_compression: u32,
    scratch: Vec<u8>,
    /// Incremental write-back of what was written.
    pub(crate) writeback: WriteBack,
    /// Finished blocks.
    pub(crate) blocks: u64,
    /// Raw payload bytes of finished blocks.
    pub(crate) raw_bytes: u64,
    /// The device every buffer is charged to before it is written.
    device: Option<Arc<device::Device>>,
    /// Set when `file` is open with `O_DIRECT`: the aligned writes (the
    /// file may then end in zero padding until `finish` trims it).
    direct: Option<DirectWriter>,
}

impl DataWriter {
    /// Creates `path` (which must not exist) and stages `preamble`, with
    /// the I/O buffer, block size, compression, write-back, direct I/O and
    /// device of `options`.
    pub(crate) fn create(
        path: &Path,
        options: &WriterOptions,
        preamble: &[u8],
    ) -> Result<Self, Error> {
        let WriterOptions {
            io_buffer,
            block_size,
            compression: compress,
            bytes_per_sync,
            direct_io,
            ..
        } = *options;
        let device = options.device.clone();
        let fs = &options.fs;
        let mut file = fs
            .open(path, &OpenOptions::create_new())
            .map_err(io_err("create", path))?;
        let mut direct = None;
        if direct_io {
            // Opened again with O_DIRECT once created, so that a file
            // system refusing direct I/O never leaves a half-made file.
            match fs.open(path, &OpenOptions::write().with_direct(true)) {
                Ok(f) => {
                    file = f;
                    direct = Some(DirectWriter::new());
                }
                Err(e) if fs::direct_refused(&e) => {}
                Err(e) => return Err(io_err("open O_DIRECT", path)(e)),
            }
        }
        let mut out = Vec::with_capacity(io_buffer + 2 * block_size + HEADER_LEN + TRAILER_LEN);
        out.extend_from_slice(preamble);
        let header_pos = out.len();
        out.extend_from_slice(&[0u8; HEADER_LEN]);
        Ok(DataWriter {
            file,
            path: path.to_path_buf(),
            out,
            flushed: 0,
            crc: crc32c::crc32c(preamble),
            header_pos,
            io_buffer,
            compress,
            skip_compression: 0,
            scratch: Vec::new(),
            writeback: WriteBack::new(bytes_per_sync),
            blocks: 0,
            raw_bytes: 0,
            device,
            direct,
        })
    }

    /// Raw bytes in the open block.
    pub(crate) fn block_len(&self) -> usize {
        self.out.len() - self.header_pos - HEADER_LEN
    }

    /// File offset of the open block.
    pub(crate) fn block_start(&self) -> u64 {
        self.flushed + self.header_pos as u64
    }

    /// Bytes of finished blocks (and the preamble).
    pub(crate) fn len(&self) -> u64 {
        self.block_start()
    }

    /// The buffer to encode the open block's next fragment into.
    pub(crate) fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Closes the open block (if it holds anything) and opens the next.
    pub(crate) fn close_block(&mut self) -> Result<(), Error> {
        let raw_start = self.header_pos + HEADER_LEN;
        let raw_len = self.out.len() - raw_start;
        if raw_len == 0 {
            return Ok(());
        }
        let mut flags = 0u8;
        let mut stored = raw_len;
        if self.compress && self.skip_compression > 0 {
            self.skip_compression -= 1;
        } else if self.compress {
            self.scratch
                .resize(lz4_flex::block::get_maximum_output_size(raw_len), 0);
            match lz4_flex::block::compress_into(&self.out[raw_start..], &mut self.scratch) {
                Ok(n) if n < raw_len - raw_len / 8 => {
                    self.out.truncate(raw_start);
                    self.out.extend_from_slice(&self.scratch[..n]);
                    flags = 1;
                    stored = n;
                }
                // Saved less than 1/8: store raw, and only try again on
                // every 16th block while the data stays incompressible.
                _ => self.skip_compression = 15,
            }
        }
        let h = self.header_pos;
        self.out[h] = flags;
        self.out[h + 1..h + 5].copy_from_slice(&(stored as u32).to_le_bytes());
        self.out[h + 5..h + 9].copy_from_slice(&(raw_len as u32).to_le_bytes());
        let block_crc = crc32c::crc32c(&self.out[h..]);
        let stored_crc = crate::crc::mask(block_crc).to_le_bytes();
        let framed = (self.out.len() - h) as u64;
        self.out.extend_from_slice(&stored_crc);
        let with_block = crate::crc::combine(self.crc, block_crc, framed);
        self.crc = crc32c::crc32c_append(with_block, &stored_crc);
        self.blocks += 1;
        self.raw_bytes += raw_len as u64;
        if self.out.len() >= self.io_buffer {
            self.write_out()?;
        }
        self.header_pos = self.out.len();
        self.out.extend_from_slice(&[0u8; HEADER_LEN]);
        Ok(())
    }

    fn write_out(&mut self) -> Result<(), Error> {
        device::charge_write(self.device.as_deref(), self.out.len() as u64);
        match &mut self.direct {
            Some(w) => w.write_at(&*self.file, self.flushed, &self.out),
            None => self.file.write_all_at(&self.out, self.flushed),
        }
        .map_err(io_err("write", &self.path))?;
        self.flushed += self.out.len() as u64;
        self.out.clear();
        if self.direct.is_some() {
            // Nothing waits in the page cache.
            return Ok(());
        }
        let file = &self.file;
        self.writeback
            .after_write_with(self.flushed, |at, len| file.start_writeback(at, len))
            .map_err(io_err("sync_file_range", &self.path))
    }

    /// Closes the last block, writes everything and fdatasyncs. Returns the
    /// file length and its crc32c.
    pub(crate) fn finish(mut self) -> Result<(u64, u32), Error> {
        self.close_block()?;
        // Drop the reserved header of the (empty) next block.
        self.out.truncate(self.header_pos);
        self.write_out()?;
        if self.direct.is_some() {
            // Direct writes end in whole blocks: drop the zero padding.
            self.file
                .set_len(self.flushed)
                .map_err(io_err("truncate", &self.path))?;
        }
        self.file
            .sync_data()
            .map_err(io_err("fdatasync", &self.path))?;
        Ok((self.flushed, self.crc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::read_block;
    use crate::decoder::Origin;
    use crate::error::Component;
    use crate::storage::MemSource;

    #[test]
    fn blocks_and_crc_match_a_reread() {
        for (compress, direct) in [(false, false), (true, false), (false, true), (true, true)] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("d");
            let options = WriterOptions {
                io_buffer: 4096,
                block_size: 512,
                compression: compress,
                bytes_per_sync: 8192,
                direct_io: direct,
                ..WriterOptions::default()
            };
            let mut w = DataWriter::create(&path, &options, b"PREAMBLE").unwrap();
            let mut x = 12345u32;
            for i in 0..100u32 {
                if i < 30 {
                    // Incompressible first: exercises the skip heuristic.
                    for _ in 0..300 {
                        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                        w.buf().push((x >> 16) as u8);
                    }
                } else {
                    w.buf().extend_from_slice(&[(i % 7) as u8; 300]);
                }
                if w.block_len() >= 512 {
                    w.close_block().unwrap();
                }
            }
            // Direct writes leave nothing in the page cache to write back.
            assert_eq!(w.writeback.requests() > 0, w.direct.is_none());
            if direct && w.direct.is_none() {
                // A file system refusing O_DIRECT: written buffered, as
                // checked here, but the direct path is not shown.
                eprintln!("note: O_DIRECT refused in {}", dir.path().display());
            }
            let (len, crc) = w.finish().unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(bytes.len() as u64, len);
            assert_eq!(crc32c::crc32c(&bytes), crc);
            let src = MemSource(bytes);
            let origin = Origin {
                file: &path,
                component: Component::Data,
            };
            let mut at = 8;
            let mut raw = 0;
            while at < len {
                let b = read_block(&src, at, origin).unwrap();
                raw += b.raw.len();
                at = b.next;
            }
            assert_eq!(raw, 30_000);
        }
    }
}
