//! The on-disk format: segment file names, the segment header and entry
//! framing. Everything is little-endian; checksums are the standard CRC-32C
//! (Castagnoli, initial value and final XOR `0xffffffff`, as the `crc32c`
//! crate computes it: `crc32c(b"123456789") == 0xe3069283`).
//!
//! ```text
//! segment  = header entry* zero-fill
//! header   = magic "RPCL" | version:u32 (=1) | segment id:u64
//!          | segment size:u32 | crc32c(previous 20 bytes):u32     (24 bytes)
//! entry    = length:u32 | segment id:u64 | crc32c(length, id):u32  (16 bytes)
//!          | payload (length bytes) | crc32c(payload):u32          (4 bytes)
//! payload  = kind:u8 | table id:u64 | body
//!            kind 1: body = encoded mutation (`Mutation::encode`)
//!            kind 2: body empty; the table was dropped here
//! ```
//!
//! A segment file is created at its full size (zero-filled by the file
//! system), so everything after the last written entry reads as zeros. The
//! segment id in every entry header makes bytes left by another segment
//! (a recycled file) recognisable: a header whose checksum holds but whose
//! id differs ends the segment as stale data, not as damage.

use std::path::Path;

use crate::TableId;

/// Segment header magic.
pub(crate) const MAGIC: [u8; 4] = *b"RPCL";
/// The format version written and read.
pub(crate) const VERSION: u32 = 1;
/// Bytes of the segment header.
pub(crate) const HEADER_LEN: usize = 24;
/// Bytes of an entry header.
pub(crate) const ENTRY_HEADER_LEN: usize = 16;
/// Bytes of framing per entry: header plus payload checksum.
pub(crate) const FRAMING: usize = ENTRY_HEADER_LEN + 4;
/// Bytes of a payload before its body: kind and table id.
pub(crate) const PAYLOAD_PREFIX: usize = 9;
/// Payload kind of a mutation.
pub(crate) const KIND_MUTATION: u8 = 1;
/// Payload kind of a table drop.
pub(crate) const KIND_DROP: u8 = 2;

/// File name prefix; segment `id` lives in `CommitLog-1-<id>.log`.
const PREFIX: &str = "CommitLog-1-";
const SUFFIX: &str = ".log";

/// The file name of segment `id`.
/// The zero-filled segment made ahead of need, before it gets an id (see
/// `Config::preallocate`); a leftover one is removed at open.
pub(crate) const RESERVE_FILE_NAME: &str = "CommitLog-1-next.reserve";

pub(crate) fn file_name(id: u64) -> String {
    format!("{PREFIX}{id}{SUFFIX}")
}

/// The segment id named by `path`'s file name, if it is a segment of this
/// format (anything else in the directory is ignored).
pub(crate) fn parse_file_name(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let digits = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The largest payload a segment of `segment_size` bytes accepts: half the
/// segment less the framing.
pub(crate) fn max_payload(segment_size: u32) -> usize {
    (segment_size / 2) as usize - FRAMING
}

/// The segment header.
pub(crate) fn header(id: u64, segment_size: u32) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..4].copy_from_slice(&MAGIC);
    h[4..8].copy_from_slice(&VERSION.to_le_bytes());
    h[8..16].copy_from_slice(&id.to_le_bytes());
    h[16..20].copy_from_slice(&segment_size.to_le_bytes());
    let crc = crc32c::crc32c(&h[..20]);
    h[20..24].copy_from_slice(&crc.to_le_bytes());
    h
}

/// A parsed segment header whose checksum holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    pub(crate) version: u32,
    pub(crate) id: u64,
    pub(crate) segment_size: u32,
}

/// Parses a header; `None` if the magic or the checksum does not hold.
pub(crate) fn parse_header(h: &[u8; HEADER_LEN]) -> Option<Header> {
    if h[0..4] != MAGIC || le_u32(&h[20..24]) != crc32c::crc32c(&h[..20]) {
        return None;
    }
    Some(Header {
        version: le_u32(&h[4..8]),
        id: le_u64(&h[8..16]),
        segment_size: le_u32(&h[16..20]),
    })
}

/// The payload prefix of a mutation entry (the encoded mutation follows).
pub(crate) fn payload_prefix(kind: u8, table: TableId) -> [u8; PAYLOAD_PREFIX] {
    let mut p = [0u8; PAYLOAD_PREFIX];
    p[0] = kind;
    p[1..9].copy_from_slice(&table.to_le_bytes());
    p
}

/// Appends a framed entry for segment `id` to `out`: its header for a
/// payload of `len` bytes, the payload `fill` appends (exactly `len`
/// bytes: a payload of any other length is taken back out of `out` and
/// this panics, `out` as it was), and the payload's checksum.
pub(crate) fn put_entry_with(
    out: &mut Vec<u8>,
    id: u64,
    len: usize,
    fill: impl FnOnce(&mut Vec<u8>),
) {
    let len32 = u32::try_from(len).expect("payload length is checked against max_payload");
    let mut h = [0u8; ENTRY_HEADER_LEN];
    h[0..4].copy_from_slice(&len32.to_le_bytes());
    h[4..12].copy_from_slice(&id.to_le_bytes());
    let crc = crc32c::crc32c(&h[..12]);
    h[12..16].copy_from_slice(&crc.to_le_bytes());
    let start = out.len();
    out.extend_from_slice(&h);
    fill(out);
    let written = out.len() - start - ENTRY_HEADER_LEN;
    if written != len {
        out.truncate(start);
        panic!("an entry's payload of {len} bytes was {written} bytes long");
    }
    let payload_crc = crc32c::crc32c(&out[start + ENTRY_HEADER_LEN..]);
    out.extend_from_slice(&payload_crc.to_le_bytes());
}

#[cfg(test)]
/// Appends a framed entry holding `payload` for segment `id` to `out`.
pub(crate) fn put_entry(out: &mut Vec<u8>, id: u64, payload: &[u8]) {
    put_entry_with(out, id, payload.len(), |o| o.extend_from_slice(payload));
}

/// A parsed entry header whose checksum holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryHeader {
    pub(crate) len: u32,
    pub(crate) segment: u64,
}

/// Parses an entry header; `None` if its checksum does not hold.
pub(crate) fn parse_entry_header(h: &[u8]) -> Option<EntryHeader> {
    if le_u32(&h[12..16]) != crc32c::crc32c(&h[..12]) {
        return None;
    }
    Some(EntryHeader {
        len: le_u32(&h[0..4]),
        segment: le_u64(&h[4..12]),
    })
}

pub(crate) fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

pub(crate) fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// The drop side file: every table drop still relevant (its segment or an
/// older one on disk), so that a drop record lost to damage still counts.
///
/// ```text
/// drops = magic "RPCD" | version:u32 (=1) | count:u32
///       | count x (table id:u64 | segment id:u64 | offset:u32)
///       | crc32c(everything before):u32
/// ```
///
/// Replaced whole (written to a temporary name, synced, renamed, the
/// directory synced) at every drop.
pub(crate) const DROPS_FILE_NAME: &str = "CommitLog-1-drops";
/// The temporary name of a drop side file being written.
pub(crate) const DROPS_TMP_FILE_NAME: &str = "CommitLog-1-drops.tmp";
const DROPS_MAGIC: [u8; 4] = *b"RPCD";

/// The records of a drop side file: table and position of its last drop.
pub(crate) type DropRecords = Vec<(TableId, crate::ReplayPosition)>;

/// The side file's bytes for `drops` (table → position of its last drop).
pub(crate) fn encode_drops(
    drops: &std::collections::BTreeMap<TableId, crate::ReplayPosition>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + drops.len() * 20);
    out.extend_from_slice(&DROPS_MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(drops.len() as u32).to_le_bytes());
    for (&table, pos) in drops {
        out.extend_from_slice(&table.to_le_bytes());
        out.extend_from_slice(&pos.segment.to_le_bytes());
        out.extend_from_slice(&pos.offset.to_le_bytes());
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Reads a drop side file, or says what is wrong with it.
pub(crate) fn decode_drops(bytes: &[u8]) -> Result<DropRecords, String> {
    if bytes.len() < 16 {
        return Err(format!(
            "drop file of {} bytes is shorter than its 16-byte frame",
            bytes.len()
        ));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if le_u32(crc) != crc32c::crc32c(body) {
        return Err("drop file checksum mismatch".to_string());
    }
    if body[..4] != DROPS_MAGIC || le_u32(&body[4..8]) != VERSION {
        return Err("drop file magic or version does not match".to_string());
    }
    let count = le_u32(&body[8..12]) as usize;
    let records = &body[12..];
    if records.len() != count.saturating_mul(20) {
        return Err(format!(
            "drop file holds {} bytes for {count} records",
            records.len()
        ));
    }
    Ok(records
        .chunks_exact(20)
        .map(|r| {
            (
                le_u64(&r[..8]),
                crate::ReplayPosition::new(le_u64(&r[8..16]), le_u32(&r[16..20])),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_is_the_standard_variant() {
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn header_round_trip_and_damage() {
        let h = header(42, 1 << 20);
        let p = parse_header(&h).unwrap();
        assert_eq!((p.version, p.id, p.segment_size), (VERSION, 42, 1 << 20));
        for i in 0..HEADER_LEN {
            let mut d = h;
            d[i] ^= 0x10;
            assert!(parse_header(&d).is_none(), "flip at {i}");
        }
    }

    #[test]
    fn file_names() {
        assert_eq!(file_name(7), "CommitLog-1-7.log");
        assert_eq!(parse_file_name(Path::new("/x/CommitLog-1-7.log")), Some(7));
        for bad in [
            "CommitLog-1-.log",
            "CommitLog-1-7.log.corrupt",
            "CommitLog-2-7.log",
            "CommitLog-1-+7.log",
            ".CommitLog-1-7.log",
        ] {
            assert_eq!(parse_file_name(Path::new(bad)), None, "{bad}");
        }
    }

    #[test]
    fn a_payload_of_another_length_than_framed_is_taken_back_out() {
        let mut out = b"kept".to_vec();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            put_entry_with(&mut out, 1, 5, |o| o.extend_from_slice(b"abc"))
        }));
        assert!(r.is_err());
        assert_eq!(out, b"kept");
        put_entry_with(&mut out, 1, 3, |o| o.extend_from_slice(b"abc"));
        assert_eq!(out.len(), 4 + FRAMING + 3);
    }

    #[test]
    fn entry_framing() {
        let mut out = Vec::new();
        put_entry(&mut out, 9, b"abc");
        assert_eq!(out.len(), FRAMING + 3);
        let h = parse_entry_header(&out[..ENTRY_HEADER_LEN]).unwrap();
        assert_eq!((h.len, h.segment), (3, 9));
        assert_eq!(le_u32(&out[19..23]), crc32c::crc32c(b"abc"));
    }

    #[test]
    fn drop_file_round_trips_and_damage_is_named() {
        let drops: std::collections::BTreeMap<_, _> = [
            (3, crate::ReplayPosition::new(10, 24)),
            (9, crate::ReplayPosition::new(11, 500)),
        ]
        .into_iter()
        .collect();
        let bytes = encode_drops(&drops);
        assert_eq!(
            decode_drops(&bytes).unwrap(),
            drops.into_iter().collect::<Vec<_>>()
        );
        let mut bad = bytes.clone();
        bad[14] ^= 1;
        assert_eq!(
            decode_drops(&bad).unwrap_err(),
            "drop file checksum mismatch"
        );
        assert!(decode_drops(&bytes[..10]).unwrap_err().contains("shorter"));
    }
}
