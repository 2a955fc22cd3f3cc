//! Checksummed block framing shared by the Data and Index components, and
//! by the single-block components (Summary, Filter, Statistics).
//!
//! ```text
//! block   := flags:u8  stored_len:u32  raw_len:u32  payload[stored_len]  crc:u32
//! flags   := 0 (payload is raw) | 1 (payload is LZ4 block-compressed)
//! crc     := masked crc32c (`crc::mask`) of every preceding byte of the
//!            block (header and payload)
//! ```

use std::io::Write;
use std::path::Path;

use crate::decoder::Origin;
use crate::error::{Error, io_err};
use crate::storage::{DirectSource, SequentialSource, Source};
use crate::sync::Arc;

/// Bytes of every component's preamble: the 4-byte magic, then the 4-byte
/// format version. The first block starts right after it.
pub(crate) const PREAMBLE_LEN: u64 = 8;
/// Bytes before the payload.
pub(crate) const HEADER_LEN: usize = 9;
/// Where a single-block component's body starts in its file: after the
/// preamble and the block header.
pub(crate) const SINGLE_BLOCK_BODY_OFFSET: u64 = PREAMBLE_LEN + HEADER_LEN as u64;
/// Bytes after the payload.
pub(crate) const TRAILER_LEN: usize = 4;
/// Largest raw or stored block payload accepted (64 MiB).
pub(crate) const MAX_BLOCK: u32 = 64 << 20;

/// Largest LZ4 expansion per compressed byte.
const LZ4_MAX_RATIO: u64 = 255;

const FLAG_RAW: u8 = 0;
const FLAG_LZ4: u8 = 1;

/// Frames `raw` as one block, compressing it when `compress` is set and
/// compression actually shrinks it. Appends to `out`.
pub(crate) fn encode_block(raw: &[u8], compress: bool, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0u8; HEADER_LEN]);
    let mut flags = FLAG_RAW;
    if compress {
        let bound = lz4_flex::block::get_maximum_output_size(raw.len());
        out.resize(start + HEADER_LEN + bound, 0);
        match lz4_flex::block::compress_into(raw, &mut out[start + HEADER_LEN..]) {
            Ok(n) if n < raw.len() => {
                out.truncate(start + HEADER_LEN + n);
                flags = FLAG_LZ4;
            }
            _ => {
                out.truncate(start + HEADER_LEN);
            }
        }
    }
    if flags == FLAG_RAW {
        out.extend_from_slice(raw);
    }
    let stored = (out.len() - start - HEADER_LEN) as u32;
    out[start] = flags;
    out[start + 1..start + 5].copy_from_slice(&stored.to_le_bytes());
    out[start + 5..start + 9].copy_from_slice(&(raw.len() as u32).to_le_bytes());
    let crc = crate::crc::mask(crc32c::crc32c(&out[start..]));
    out.extend_from_slice(&crc.to_le_bytes());
}

/// A decoded block.
#[derive(Debug)]
pub(crate) struct Block {
    /// The raw (decompressed) payload.
    pub(crate) raw: Vec<u8>,
    /// File offset of the block that follows.
    pub(crate) next: u64,
}

/// Bytes a sequential scan reads from its file at once ([`ReadAhead`]):
/// as large as the writer's 1 MiB I/O buffer, so a compaction reading its
/// inputs issues I/O of the size the flushes and the commit log beside it
/// write in (RocksDB's `compaction_readahead_size` is 2 MiB), instead of
/// one read per 16 KiB block and another per block header.
pub(crate) const READ_AHEAD: usize = 1 << 20;

/// The bytes a sequential scan read ahead of the block it decodes: one
/// window of the file, refilled with [`READ_AHEAD`] bytes (or the block,
/// if larger) from the first offset it does not hold. Where the source
/// offers it ([`Source::open_direct`]), windows are read with direct I/O
/// into an aligned buffer, bypassing the page cache: a scan reads each
/// byte once, and the copy out of the page cache had taken 60% of the
/// compaction thread's CPU; where the file system refuses the alignment,
/// the scan goes on through the page cache.
#[derive(Debug, Default)]
pub(crate) struct ReadAhead {
    start: u64,
    /// The window through the page cache (with a direct source, the
    /// window is its last read).
    bytes: Vec<u8>,
    direct: Direct,
}

/// Whether a scan reads directly.
#[derive(Debug, Default)]
enum Direct {
    /// Not yet asked (at the first window).
    #[default]
    Untried,
    Open(DirectSource),
    /// Through the page cache, on a descriptor of the scan's own, which
    /// keeps the kernel's sequential read-ahead (the shared descriptors
    /// serve point reads and are advised random reads).
    Sequential(SequentialSource),
    /// None to be had: through the page cache, on the shared descriptor.
    Off,
}

impl Direct {
    /// Through the page cache: on a descriptor of its own if `src` gives
    /// one.
    fn buffered(src: &dyn Source) -> Self {
        src.open_sequential()
            .map_or(Direct::Off, Direct::Sequential)
    }
}

impl ReadAhead {
    /// Fills `buf` from `offset` of `src`, from the window if it holds
    /// the range, else from a new window read at `offset`.
    fn read(&mut self, src: &dyn Source, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let end = offset + buf.len() as u64;
        if offset < self.start || end > self.start + self.window().len() as u64 {
            let want = (READ_AHEAD as u64)
                .max(buf.len() as u64)
                .min(src.len().saturating_sub(offset));
            if want < buf.len() as u64 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
            }
            self.fill(src, offset, want as usize)?;
            if self.window().len() < buf.len() {
                // The file ended before its recorded length.
                self.bytes.clear();
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
            }
        }
        let at = (offset - self.start) as usize;
        buf.copy_from_slice(&self.window()[at..at + buf.len()]);
        Ok(())
    }

    /// The bytes read ahead, from `start`.
    fn window(&self) -> &[u8] {
        match &self.direct {
            Direct::Open(d) => d.last(),
            _ => &self.bytes,
        }
    }

    /// Reads a new window of `want` bytes at `offset`: directly if it can,
    /// else through the page cache.
    fn fill(&mut self, src: &dyn Source, offset: u64, want: usize) -> std::io::Result<()> {
        self.start = offset;
        if matches!(self.direct, Direct::Untried) {
            self.direct = match src.open_direct() {
                Some(d) => Direct::Open(d),
                None => Direct::buffered(src),
            };
        }
        if let Direct::Open(d) = &mut self.direct {
            match d.read(offset, want) {
                Ok(()) => return Ok(()),
                // The file system refused the alignment: read through the
                // page cache from now on.
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                    self.direct = Direct::buffered(src);
                }
                Err(e) => return Err(e),
            }
        }
        self.bytes.resize(want, 0);
        let read = match &self.direct {
            Direct::Sequential(own) => own.read_exact_at(&mut self.bytes, offset),
            _ => src.read_exact_at(&mut self.bytes, offset),
        };
        if let Err(e) = read {
            self.bytes.clear();
            return Err(e);
        }
        Ok(())
    }

    /// Whether its windows are read with direct I/O.
    #[cfg(test)]
    pub(crate) fn is_direct(&self) -> bool {
        matches!(self.direct, Direct::Open(_))
    }
}

/// Reads, checks and decompresses the block at `offset`, in two reads: its
/// header, then the rest (where nothing tells the block's length).
pub(crate) fn read_block(
    src: &dyn Source,
    offset: u64,
    origin: Origin<'_>,
) -> Result<Block, Error> {
    read_block_sized(src, offset, origin, HEADER_LEN)
}

/// [`read_block`] whose first read takes `first` bytes from `offset` (at
/// least the header, at most the rest of the file): a caller that knows
/// the block's length (an Index block, from the Summary) or a good guess
/// at it (a Data block, from the sstable's average) reads the whole block
/// in one positional read; a block longer than the guess costs one more
/// read, of the bytes the first did not get.
pub(crate) fn read_block_sized(
    src: &dyn Source,
    offset: u64,
    origin: Origin<'_>,
    first: usize,
) -> Result<Block, Error> {
    read_block_with(src.len(), offset, origin, first, &mut |buf, at| {
        src.read_exact_at(buf, at)
    })
}

/// A failed read of `len` bytes at `offset` of the file of `origin`: the
/// error names the file (the `path` of [`Error::Io`]) and the offset.
fn read_error(origin: Origin<'_>, offset: u64, len: usize, e: std::io::Error) -> Error {
    let e = std::io::Error::new(e.kind(), format!("{len} bytes at offset {offset}: {e}"));
    io_err("read", origin.file)(e)
}

/// [`read_block`] for a sequential scan: the bytes come from `ahead`,
/// which reads [`READ_AHEAD`] bytes of `src` at a time.
pub(crate) fn read_block_ahead(
    src: &dyn Source,
    offset: u64,
    origin: Origin<'_>,
    ahead: &mut ReadAhead,
) -> Result<Block, Error> {
    read_block_with(src.len(), offset, origin, HEADER_LEN, &mut |buf, at| {
        ahead.read(src, buf, at)
    })
}

/// Reads, checks and decompresses the block at `offset` of a file of `len`
/// bytes, whose bytes `read` fills in: first `first` bytes (clamped to the
/// header and the end of the file), then whatever of the block they did
/// not hold.
fn read_block_with(
    len: u64,
    offset: u64,
    origin: Origin<'_>,
    first: usize,
    read: &mut dyn FnMut(&mut [u8], u64) -> std::io::Result<()>,
) -> Result<Block, Error> {
    let header_end = offset
        .checked_add(HEADER_LEN as u64)
        .filter(|&e| e <= len)
        .ok_or_else(|| {
            origin.corrupt(
                offset,
                format!("block header at offset {offset} runs past the end of the {len}-byte file"),
            )
        })?;
    let rest = usize::try_from(len - offset).unwrap_or(usize::MAX);
    let first = first.clamp(HEADER_LEN, rest);
    let mut buf = vec![0u8; first];
    read(&mut buf, offset).map_err(|e| read_error(origin, offset, first, e))?;
    let mut header = [0u8; HEADER_LEN];
    header.copy_from_slice(&buf[..HEADER_LEN]);
    let flags = header[0];
    let stored = u32::from_le_bytes([header[1], header[2], header[3], header[4]]);
    let raw_len = u32::from_le_bytes([header[5], header[6], header[7], header[8]]);
    if stored > MAX_BLOCK || raw_len > MAX_BLOCK {
        return Err(origin.corrupt(
            offset,
            format!(
                "block of {stored} stored / {raw_len} raw bytes exceeds the {MAX_BLOCK}-byte limit"
            ),
        ));
    }
    let end = header_end + u64::from(stored) + TRAILER_LEN as u64;
    if end > len {
        return Err(origin.corrupt(
            offset,
            format!("block of {stored} bytes at offset {offset} runs past the end of the {len}-byte file"),
        ));
    }
    let total = HEADER_LEN + stored as usize + TRAILER_LEN;
    if total > buf.len() {
        let have = buf.len();
        buf.resize(total, 0);
        let at = offset + have as u64;
        read(&mut buf[have..], at).map_err(|e| read_error(origin, at, total - have, e))?;
    } else {
        buf.truncate(total);
    }
    let payload_end = HEADER_LEN + stored as usize;
    let crc_bytes = &buf[payload_end..];
    let expected = u32::from_le_bytes([crc_bytes[0], crc_bytes[1], crc_bytes[2], crc_bytes[3]]);
    // The crc32c of the header and the payload, which lie together in `buf`.
    let actual = crate::crc::mask(crc32c::crc32c(&buf[..payload_end]));
    if expected != actual {
        return Err(origin.corrupt(
            offset,
            format!(
                "block checksum mismatch: stored masked crc32c {expected:#010x}, computed {actual:#010x}"
            ),
        ));
    }
    let raw = match flags {
        FLAG_RAW => {
            if raw_len != stored {
                return Err(origin.corrupt(
                    offset,
                    format!("raw block claims {raw_len} bytes but stores {stored}"),
                ));
            }
            // The payload moves to the front of the buffer it was read
            // into: no second allocation.
            buf.copy_within(HEADER_LEN..payload_end, 0);
            buf.truncate(stored as usize);
            buf
        }
        FLAG_LZ4 => {
            // Each LZ4 byte expands to at most 255 bytes (a match-length
            // byte of 255), so a header claiming more is lying; checking
            // keeps a tiny crafted block from making the reader allocate
            // up to the 64 MiB limit.
            let most = u64::from(stored) * LZ4_MAX_RATIO + 64;
            if u64::from(raw_len) > most {
                return Err(origin.corrupt(
                    offset,
                    format!(
                        "LZ4 block of {stored} bytes cannot decompress to the {raw_len} bytes its header claims (at most {most})"
                    ),
                ));
            }
            let payload = &buf[HEADER_LEN..payload_end];
            let mut raw = vec![0u8; raw_len as usize];
            match lz4_flex::block::decompress_into(payload, &mut raw) {
                Ok(n) if n == raw_len as usize => raw,
                Ok(n) => {
                    return Err(origin.corrupt(
                        offset,
                        format!("LZ4 block decompressed to {n} bytes, header says {raw_len}"),
                    ));
                }
                Err(e) => {
                    return Err(
                        origin.corrupt(offset, format!("LZ4 block does not decompress: {e}"))
                    );
                }
            }
        }
        other => return Err(origin.corrupt(offset, format!("unknown block flags {other:#04x}"))),
    };
    Ok(Block { raw, next: end })
}

/// A component file being written: buffered, tracking its length.
#[derive(Debug)]
pub(crate) struct ComponentFile {
    out: std::io::BufWriter<Appender>,
    path: std::path::PathBuf,
    len: u64,
    /// Incremental write-back of what reached the file.
    pub(crate) writeback: writeback::WriteBack,
    /// The device every byte is charged to before it is written.
    device: Option<Arc<device::Device>>,
}

impl ComponentFile {
    /// Creates `path` (which must not exist) with an I/O buffer of `buffer`
    /// bytes, starting write-back every `bytes_per_sync` bytes (0: never),
    /// charging what it writes to `device`.
    pub(crate) fn create(
        fs: &dyn fs::FileSystem,
        path: &Path,
        buffer: usize,
        bytes_per_sync: u64,
        device: Option<Arc<device::Device>>,
    ) -> Result<Self, Error> {
        let file = fs
            .open(path, &fs::OpenOptions::create_new())
            .map_err(io_err("create", path))?;
        Ok(ComponentFile {
            out: std::io::BufWriter::with_capacity(buffer, Appender { file, at: 0 }),
            path: path.to_path_buf(),
            len: 0,
            writeback: writeback::WriteBack::new(bytes_per_sync),
            device,
        })
    }

    /// Appends bytes (charged to the device first: they are on their way
    /// to the file, through the buffer).
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        device::charge_write(self.device.as_deref(), bytes.len() as u64);
        self.out
            .write_all(bytes)
            .map_err(io_err("write", &self.path))?;
        self.len += bytes.len() as u64;
        // What left the buffer is in the file.
        let in_file = self.len - self.out.buffer().len() as u64;
        let file = &self.out.get_ref().file;
        self.writeback
            .after_write_with(in_file, |at, len| file.start_writeback(at, len))
            .map_err(io_err("sync_file_range", &self.path))
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Flushes the buffer and fdatasyncs the file, then closes it.
    pub(crate) fn finish(self) -> Result<(), Error> {
        let path = self.path;
        let file = self.out.into_inner().map_err(|e| Error::Io {
            op: "flush",
            path: path.clone(),
            source: e.into_error(),
        })?;
        file.file.sync_data().map_err(io_err("fdatasync", &path))
    }
}

/// A file written front to back, as [`std::io::Write`] (under the
/// component's buffer).
#[derive(Debug)]
struct Appender {
    file: Box<dyn fs::File>,
    /// Bytes written so far: where the next write goes.
    at: u64,
}

impl Write for Appender {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes a single-block component: `magic`, the format version, then one block.
pub(crate) fn single_block_component(magic: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + PREAMBLE_LEN as usize + HEADER_LEN + TRAILER_LEN);
    out.extend_from_slice(magic);
    out.extend_from_slice(&crate::FORMAT_VERSION.to_le_bytes());
    encode_block(body, false, &mut out);
    out
}

/// Checks a component's magic and version (the first 8 bytes).
pub(crate) fn check_preamble(
    src: &dyn Source,
    magic: &[u8; 4],
    origin: Origin<'_>,
) -> Result<(), Error> {
    if src.len() < PREAMBLE_LEN {
        return Err(origin.corrupt(
            0,
            format!(
                "file of {} bytes is shorter than the 8-byte preamble",
                src.len()
            ),
        ));
    }
    let mut pre = [0u8; PREAMBLE_LEN as usize];
    src.read_exact_at(&mut pre, 0)
        .map_err(io_err("read", origin.file))?;
    if &pre[..4] != magic {
        return Err(origin.corrupt(
            0,
            format!("bad magic {:?}, expected {:?}", &pre[..4], magic),
        ));
    }
    let version = u32::from_le_bytes([pre[4], pre[5], pre[6], pre[7]]);
    if version != crate::FORMAT_VERSION {
        return Err(origin.corrupt(
            4,
            format!(
                "format version {version} is not supported (this reader reads version {})",
                crate::FORMAT_VERSION
            ),
        ));
    }
    Ok(())
}

/// Reads a single-block component and returns its body; the block must end
/// exactly at the end of the file.
pub(crate) fn read_single_block_component(
    src: &dyn Source,
    magic: &[u8; 4],
    origin: Origin<'_>,
) -> Result<Vec<u8>, Error> {
    check_preamble(src, magic, origin)?;
    let block = read_block(src, PREAMBLE_LEN, origin)?;
    if block.next != src.len() {
        return Err(origin.corrupt(
            block.next,
            format!(
                "{} trailing bytes after the component's block",
                src.len() - block.next
            ),
        ));
    }
    Ok(block.raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Component;
    use crate::storage::MemSource;
    use std::path::PathBuf;

    #[test]
    fn blocks_round_trip_raw_and_compressed() {
        let p = PathBuf::from("t");
        let origin = Origin {
            file: &p,
            component: Component::Data,
        };
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8).collect();
        for compress in [false, true] {
            let mut out = vec![1, 2, 3];
            encode_block(&data, compress, &mut out);
            encode_block(b"xyz", compress, &mut out);
            let src = MemSource(out);
            let b = read_block(&src, 3, origin).unwrap();
            assert_eq!(b.raw, data);
            let b2 = read_block(&src, b.next, origin).unwrap();
            assert_eq!(b2.raw, b"xyz");
            assert_eq!(b2.next, src.len());
        }
    }

    /// A source that counts its reads.
    #[derive(Debug)]
    struct Counting(MemSource, std::sync::atomic::AtomicUsize);

    impl Source for Counting {
        fn len(&self) -> u64 {
            self.0.len()
        }
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.0.read_exact_at(buf, offset)
        }
    }

    /// A Data file of `n` blocks after the preamble, block `i` of the
    /// length and compression `shape(i)` says, and the blocks' raw bytes.
    fn encoded_blocks(n: u32, shape: impl Fn(u32) -> (usize, bool)) -> (Vec<u8>, Vec<Vec<u8>>) {
        let mut out = vec![0u8; PREAMBLE_LEN as usize];
        let raws = (0..n)
            .map(|i| {
                let (len, compress) = shape(i);
                let raw: Vec<u8> = (0..len).map(|j| ((i as usize + j) % 251) as u8).collect();
                encode_block(&raw, compress, &mut out);
                raw
            })
            .collect();
        (out, raws)
    }

    /// Scans `src` block after block through a read-ahead window until a
    /// read fails; returns the error's text.
    fn scan_to_error(src: &dyn Source, origin: Origin<'_>) -> String {
        let mut ahead = ReadAhead::default();
        let mut at = PREAMBLE_LEN;
        loop {
            match read_block_ahead(src, at, origin, &mut ahead) {
                Ok(b) => at = b.next,
                Err(e) => return e.to_string(),
            }
        }
    }

    /// A scan through the read-ahead window decodes the same blocks as
    /// block-by-block reads, with one read of the file per
    /// `READ_AHEAD` bytes (or per block larger than that) instead of two per
    /// block, and damage is still found.
    #[test]
    fn read_ahead_reads_the_file_in_large_pieces_and_decodes_the_same_blocks() {
        let p = PathBuf::from("t");
        let origin = Origin {
            file: &p,
            component: Component::Data,
        };
        // 16 KiB blocks, and a few far larger than the window.
        let (out, raws) = encoded_blocks(400, |i| {
            let len = if i % 100 == 99 { 3 << 20 } else { 16 << 10 };
            (len, false)
        });
        let file_len = out.len();
        let src = Counting(MemSource(out.clone()), Default::default());
        let mut ahead = ReadAhead::default();
        let mut at = PREAMBLE_LEN;
        for raw in &raws {
            let b = read_block_ahead(&src, at, origin, &mut ahead).unwrap();
            assert_eq!(&b.raw, raw);
            at = b.next;
        }
        assert_eq!(at, file_len as u64);
        let reads = src.1.load(std::sync::atomic::Ordering::Relaxed);
        // About 18 MiB in 1 MiB windows, 4 blocks larger than a window.
        let bound = file_len / READ_AHEAD + 2 * 4 + 1;
        assert!(reads <= bound, "{reads} reads, bound {bound}");
        // At least one read per big block, and the small ones' windows.
        assert!(reads >= 4 + 396 * (16 << 10) / READ_AHEAD, "{reads}");
        // Block by block: two reads a block.
        let plain = Counting(MemSource(out.clone()), Default::default());
        let mut at = PREAMBLE_LEN;
        for _ in &raws {
            at = read_block(&plain, at, origin).unwrap().next;
        }
        assert_eq!(plain.1.load(std::sync::atomic::Ordering::Relaxed), 800);
        // A flipped byte inside a window is still a checksum error.
        let mut bad = out;
        bad[PREAMBLE_LEN as usize + HEADER_LEN + 100] ^= 1;
        let mut ahead = ReadAhead::default();
        let e = read_block_ahead(&MemSource(bad), PREAMBLE_LEN, origin, &mut ahead)
            .unwrap_err()
            .to_string();
        assert!(e.contains("checksum mismatch"), "{e}");
        // A block running past the end of the file is refused, not read.
        let cut = MemSource(src.0.0[..file_len - 10].to_vec());
        let err = scan_to_error(&cut, origin);
        assert!(err.contains("runs past the end"), "{err}");
    }

    /// The same scan over a real file reads its windows with direct I/O
    /// (where the file system allows it) and decodes the same blocks,
    /// including ones larger than a window, the last short block of the
    /// file, and windows that start off the direct-I/O alignment.
    #[test]
    fn read_ahead_over_a_file_reads_directly_and_decodes_the_same_blocks() {
        let p = PathBuf::from("t");
        let origin = Origin {
            file: &p,
            component: Component::Data,
        };
        // Odd sizes, so windows start anywhere in a disk block.
        let (out, raws) = encoded_blocks(120, |i| {
            let len = if i % 40 == 39 {
                (2 << 20) + 333
            } else {
                12_345 + i as usize
            };
            (len, i % 3 == 0)
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Data.db");
        std::fs::write(&path, &out).unwrap();
        let src = crate::storage::FileSource::open(&fs::FsHandle::real(), &path, None).unwrap();
        let mut ahead = ReadAhead::default();
        let mut at = PREAMBLE_LEN;
        for raw in &raws {
            let b = read_block_ahead(&src, at, origin, &mut ahead).unwrap();
            assert_eq!(&b.raw, raw);
            at = b.next;
        }
        assert_eq!(at, out.len() as u64);
        if !ahead.is_direct() {
            eprintln!(
                "direct reads skipped: no O_DIRECT on {}",
                dir.path().display()
            );
        }
        // A cut file: the block running past the end is refused.
        std::fs::write(&path, &out[..out.len() - 10]).unwrap();
        let src = crate::storage::FileSource::open(&fs::FsHandle::real(), &path, None).unwrap();
        let err = scan_to_error(&src, origin);
        assert!(err.contains("runs past the end"), "{err}");
    }

    /// A sized read takes a block in one positional read when the guess
    /// covers it and in two (the rest only) when it does not, decodes the
    /// same bytes either way, and finds the same damage as a plain read.
    #[test]
    fn a_sized_read_takes_a_block_in_one_read_when_the_guess_covers_it() {
        let p = PathBuf::from("t");
        let origin = Origin {
            file: &p,
            component: Component::Data,
        };
        let (out, raws) = encoded_blocks(6, |i| (3000 + 500 * i as usize, i % 2 == 0));
        let mut at = PREAMBLE_LEN;
        for raw in &raws {
            let whole = read_block(&MemSource(out.clone()), at, origin).unwrap();
            assert_eq!(&whole.raw, raw);
            let len = (whole.next - at) as usize;
            for (guess, reads) in [(len, 1), (len + 4096, 1), (len - 1, 2), (HEADER_LEN, 2)] {
                let src = Counting(MemSource(out.clone()), Default::default());
                let b = read_block_sized(&src, at, origin, guess).unwrap();
                assert_eq!((&b.raw, b.next), (raw, whole.next), "guess {guess}");
                assert_eq!(src.1.load(std::sync::atomic::Ordering::Relaxed), reads);
            }
            // Damage anywhere in the block: the same error as a plain read.
            for i in [0, 3, HEADER_LEN + 7, len - 1] {
                let mut bad = out.clone();
                bad[at as usize + i] ^= 0x21;
                let plain = read_block(&MemSource(bad.clone()), at, origin).map(|b| b.raw);
                for guess in [len, len + 100, len / 2] {
                    let sized =
                        read_block_sized(&MemSource(bad.clone()), at, origin, guess).map(|b| b.raw);
                    match (&plain, &sized) {
                        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                        other => panic!("byte {i}, guess {guess}: {other:?}"),
                    }
                }
            }
            at = whole.next;
        }
    }

    /// A block with a valid checksum whose header claims far more raw bytes
    /// than LZ4 can produce from its payload is refused before allocating.
    #[test]
    fn lz4_block_claiming_an_impossible_size_is_corrupt() {
        let p = PathBuf::from("t");
        let origin = Origin {
            file: &p,
            component: Component::Data,
        };
        let data = vec![7u8; 100_000];
        let mut good = Vec::new();
        encode_block(&data, true, &mut good);
        assert_eq!(good[0], FLAG_LZ4);
        assert_eq!(
            read_block(&MemSource(good.clone()), 0, origin).unwrap().raw,
            data
        );
        // Rewrite the raw length to the 64 MiB limit and fix the crc.
        let mut bad = good[..good.len() - TRAILER_LEN].to_vec();
        bad[5..9].copy_from_slice(&MAX_BLOCK.to_le_bytes());
        let crc = crate::crc::mask(crc32c::crc32c(&bad));
        bad.extend_from_slice(&crc.to_le_bytes());
        let e = read_block(&MemSource(bad), 0, origin)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot decompress to the 67108864 bytes"), "{e}");
    }

    #[test]
    fn any_flipped_byte_or_truncation_is_detected() {
        let p = PathBuf::from("t");
        let origin = Origin {
            file: &p,
            component: Component::Index,
        };
        let data: Vec<u8> = (0..300u32).map(|i| (i % 5) as u8).collect();
        for compress in [false, true] {
            let mut out = Vec::new();
            encode_block(&data, compress, &mut out);
            for i in 0..out.len() {
                let mut bad = out.clone();
                bad[i] ^= 0x5a;
                let e = read_block(&MemSource(bad), 0, origin)
                    .unwrap_err()
                    .to_string();
                assert!(e.contains("Index") && e.contains("offset"), "{e}");
                assert!(read_block(&MemSource(out[..i].to_vec()), 0, origin).is_err());
            }
        }
    }
}
