//! Replay: reads every segment of a directory in id order and yields each
//! entry as `(table, mutation, position)`.
//!
//! Per segment, the reader classifies where reading stopped:
//!
//! * **clean end**: the rest of the segment is zeros (never written), or an
//!   entry header with a valid checksum names another segment (stale bytes
//!   of a reused file);
//! * **torn tail**: the last entry was being written when the process or
//!   machine died: the file ends inside it, or its last byte is still zero
//!   and nothing non-zero follows it; or the segment has no header at all
//!   (it was being created). Expected after a crash; reported with its
//!   offset, never counted as corruption;
//! * **corruption**: anything else (a checksum that fails with data after
//!   it, a zero header followed by data, a length out of range, a payload
//!   that does not decode). The rest of that segment is skipped and
//!   reported with the segment, the offset and the bytes skipped (up to the
//!   segment's last non-zero byte); replay goes on with the next segment.
//!
//! A length is never trusted before its own checksum holds. A segment whose
//! header is damaged is skipped whole and reported the same way. A segment
//! of another format version fails replay ([`Error::UnsupportedVersion`])
//! rather than being misread.
//!
//! Table drops are logged; replay skips (and counts) every entry of a table
//! that precedes the table's last drop record, so a dropped table's data
//! cannot come back, even if a table with the same id is created later.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use mutation::Mutation;

use crate::format::{self, ENTRY_HEADER_LEN, FRAMING, HEADER_LEN, KIND_DROP, KIND_MUTATION};
use crate::{Error, ReplayPosition, TableId};

/// Where and why a segment was cut short by damage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The segment id.
    pub segment: u64,
    /// Offset of the first byte that could not be read.
    pub offset: u32,
    /// Bytes skipped: from `offset` to the segment's last non-zero byte.
    pub bytes_skipped: u64,
    /// What was wrong.
    pub reason: String,
}

/// A segment whose last entry was torn by a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornTail {
    /// The segment id.
    pub segment: u64,
    /// Offset of the torn entry (everything before it was replayed).
    pub offset: u32,
}

/// What a replay read and what it could not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// Entries handed to the caller.
    pub entries: u64,
    /// Segment files read.
    pub segments: u64,
    /// Segments cut short by damage (see [`ReplayReport::damage`]).
    pub corrupt_segments: u64,
    /// Bytes skipped because of damage, over all segments.
    pub bytes_skipped: u64,
    /// Entries skipped because their table was dropped after them.
    pub dropped_entries: u64,
    /// Every damaged segment: where and how many bytes were lost.
    pub damage: Vec<Damage>,
    /// Every segment that ended in a torn entry.
    pub torn: Vec<TornTail>,
}

/// What a scan of one segment learned besides its entries.
#[derive(Debug, Clone, Default)]
pub(crate) struct SegmentSummary {
    /// The highest entry offset per table whose entries were yielded.
    pub(crate) tables: HashMap<TableId, u32>,
    /// The segment holds a drop record.
    pub(crate) has_drop: bool,
    /// Damage found, if any.
    pub(crate) damage: Option<Damage>,
    /// The file size.
    pub(crate) len: u64,
}

/// How the scan of one segment ended.
enum Stop {
    Clean,
    Torn(u32),
    Corrupt { offset: usize, reason: String },
}

/// Scans the bytes of segment `id`, calling `entry(offset, kind, table,
/// body)` for every intact entry in order. `entry` may reject an entry
/// (a body that does not decode) with a reason, which ends the segment as
/// corrupt at that entry.
fn scan(
    id: u64,
    path: &Path,
    bytes: &[u8],
    mut entry: impl FnMut(u32, u8, TableId, &[u8]) -> Result<(), String>,
) -> Result<Stop, Error> {
    // The last non-zero byte decides torn versus corrupt: an unfinished
    // write leaves zeros behind it, damage usually does not.
    let last_nonzero = bytes.iter().rposition(|&b| b != 0);
    let data_ends_before = |end: usize| last_nonzero.is_none_or(|l| l < end);
    if bytes.len() < HEADER_LEN
        || (data_ends_before(HEADER_LEN) && bytes[..HEADER_LEN] == [0; HEADER_LEN])
    {
        // No header: the segment was being created when the process died
        // (or the file lost everything). Nothing to replay; reported as a
        // torn tail at 0 so that a segment emptied by damage is not silent.
        return Ok(Stop::Torn(0));
    }
    let mut h = [0u8; HEADER_LEN];
    h.copy_from_slice(&bytes[..HEADER_LEN]);
    let Some(header) = format::parse_header(&h) else {
        return Ok(Stop::Corrupt {
            offset: 0,
            reason: "segment header magic or checksum does not match".to_string(),
        });
    };
    if header.version != format::VERSION {
        return Err(Error::UnsupportedVersion {
            path: path.to_path_buf(),
            version: header.version,
            supported: format::VERSION,
        });
    }
    if header.id != id {
        return Ok(Stop::Corrupt {
            offset: 0,
            reason: format!(
                "segment header names segment {} but the file name says {id}",
                header.id
            ),
        });
    }
    if header.segment_size < crate::config::MIN_SEGMENT_SIZE {
        return Ok(Stop::Corrupt {
            offset: 0,
            reason: format!(
                "segment header gives a segment size of {} bytes, below the {}-byte minimum",
                header.segment_size,
                crate::config::MIN_SEGMENT_SIZE
            ),
        });
    }
    let limit = bytes.len().min(header.segment_size as usize);
    let max_payload = format::max_payload(header.segment_size);
    let mut pos = HEADER_LEN;
    loop {
        if pos + ENTRY_HEADER_LEN > limit {
            // Segment files are created at full size before their header is
            // written, so a file that ends early was cut short.
            let cut_short = bytes.len() < header.segment_size as usize;
            return Ok(if data_ends_before(pos) && !cut_short {
                Stop::Clean
            } else {
                Stop::Torn(pos as u32)
            });
        }
        let eh = &bytes[pos..pos + ENTRY_HEADER_LEN];
        if eh.iter().all(|&b| b == 0) {
            if data_ends_before(pos) {
                return Ok(Stop::Clean);
            }
            return Ok(Stop::Corrupt {
                offset: pos,
                reason: "zeroed entry header followed by data".to_string(),
            });
        }
        let Some(eh) = format::parse_entry_header(eh) else {
            if data_ends_before(pos + ENTRY_HEADER_LEN - 1) {
                return Ok(Stop::Torn(pos as u32));
            }
            return Ok(Stop::Corrupt {
                offset: pos,
                reason: "entry header checksum mismatch".to_string(),
            });
        };
        if eh.segment != id {
            // Positive evidence of stale bytes: a valid header of another
            // segment. Nothing of this segment follows.
            return Ok(Stop::Clean);
        }
        let len = eh.len as usize;
        if !(format::PAYLOAD_PREFIX..=max_payload).contains(&len)
            || pos + FRAMING + len > header.segment_size as usize
        {
            return Ok(Stop::Corrupt {
                offset: pos,
                reason: format!(
                    "entry length {len} is outside {}..={max_payload} or runs past the segment end",
                    format::PAYLOAD_PREFIX
                ),
            });
        }
        let end = pos + FRAMING + len;
        if end > bytes.len() {
            // The file ends inside the entry: a torn (or truncated) tail.
            return Ok(Stop::Torn(pos as u32));
        }
        let payload = &bytes[pos + ENTRY_HEADER_LEN..end - 4];
        if format::le_u32(&bytes[end - 4..end]) != crc32c::crc32c(payload) {
            if data_ends_before(end - 1) {
                return Ok(Stop::Torn(pos as u32));
            }
            return Ok(Stop::Corrupt {
                offset: pos,
                reason: "entry payload checksum mismatch".to_string(),
            });
        }
        let kind = payload[0];
        let table = format::le_u64(&payload[1..9]);
        let body = &payload[format::PAYLOAD_PREFIX..];
        let outcome = match kind {
            KIND_MUTATION => entry(pos as u32, kind, table, body),
            KIND_DROP if body.is_empty() => entry(pos as u32, kind, table, body),
            KIND_DROP => Err(format!("drop record with a {}-byte body", body.len())),
            other => Err(format!("unknown entry kind {other}")),
        };
        if let Err(reason) = outcome {
            return Ok(Stop::Corrupt {
                offset: pos,
                reason,
            });
        }
        pos = end;
    }
}

/// The segment files of `dir`, by id (other files are ignored), and the
/// highest id in use, segments set aside as damaged included (so a new
/// segment never takes the id, and later the name, of one of them).
pub(crate) fn list_segments(dir: &Path) -> Result<(BTreeMap<u64, PathBuf>, u64), Error> {
    let mut out = BTreeMap::new();
    let mut max_id = 0;
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        if let Some(id) = format::parse_file_name(&path) {
            max_id = max_id.max(id);
            out.insert(id, path);
        } else if let Some(id) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".damaged"))
            .and_then(|n| format::parse_file_name(Path::new(n)))
        {
            max_id = max_id.max(id);
        }
    }
    Ok((out, max_id))
}

/// Replays the segments `segments` (id → path, read in id order), calling
/// `f` for every entry that is not superseded by a later drop of its table.
/// Returns the report and what each segment held.
pub(crate) fn replay_segments(
    segments: &BTreeMap<u64, PathBuf>,
    mut f: impl FnMut(TableId, Mutation, ReplayPosition),
) -> Result<(ReplayReport, BTreeMap<u64, SegmentSummary>), Error> {
    // Pass 1: where was each table last dropped?
    let mut drops: HashMap<TableId, ReplayPosition> = HashMap::new();
    for (&id, path) in segments {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        scan(id, path, &bytes, |offset, kind, table, _| {
            if kind == KIND_DROP {
                let pos = ReplayPosition::new(id, offset);
                let e = drops.entry(table).or_insert(pos);
                *e = (*e).max(pos);
            }
            Ok(())
        })?;
    }
    // Pass 2: yield.
    let mut report = ReplayReport::default();
    let mut summaries = BTreeMap::new();
    for (&id, path) in segments {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let mut summary = SegmentSummary {
            len: bytes.len() as u64,
            ..SegmentSummary::default()
        };
        let stop = scan(id, path, &bytes, |offset, kind, table, body| {
            let pos = ReplayPosition::new(id, offset);
            if kind == KIND_DROP {
                summary.has_drop = true;
                return Ok(());
            }
            let m = Mutation::decode(body).map_err(|e| e.to_string())?;
            if drops.get(&table).is_some_and(|&d| pos < d) {
                report.dropped_entries += 1;
                return Ok(());
            }
            let e = summary.tables.entry(table).or_insert(offset);
            *e = (*e).max(offset);
            report.entries += 1;
            f(table, m, pos);
            Ok(())
        })?;
        report.segments += 1;
        match stop {
            Stop::Clean => {}
            Stop::Torn(offset) => report.torn.push(TornTail {
                segment: id,
                offset,
            }),
            Stop::Corrupt { offset, reason } => {
                let last = bytes.iter().rposition(|&b| b != 0).unwrap_or(offset);
                let skipped = (last + 1).saturating_sub(offset).max(1) as u64;
                let damage = Damage {
                    segment: id,
                    offset: offset as u32,
                    bytes_skipped: skipped,
                    reason,
                };
                report.corrupt_segments += 1;
                report.bytes_skipped += skipped;
                report.damage.push(damage.clone());
                summary.damage = Some(damage);
            }
        }
        summaries.insert(id, summary);
    }
    Ok((report, summaries))
}

/// Replays every segment in `dir` in id order, calling `f(table, mutation,
/// position)` for each entry, and reports what was read, what was torn and
/// what was damaged. Read-only: nothing in `dir` changes.
///
/// Damage never stops replay: a damaged segment is cut at the damage and
/// reported, and replay goes on with the next segment. Per segment,
/// reading stops at
///
/// * a **clean end**: only zeros follow (never written), or a valid entry
///   header of another segment (stale bytes);
/// * a **torn tail** ([`ReplayReport::torn`]): the file ends inside an
///   entry, or the entry's last byte is still zero with nothing non-zero
///   after it, or the segment has no header: what a crash mid-write leaves;
/// * **damage** ([`ReplayReport::damage`]): anything else (a checksum that
///   fails with data after it, a zeroed header followed by data, a length
///   out of range, a payload that does not decode, a bad segment header).
///   The rest of the segment is skipped and counted up to its last
///   non-zero byte.
///
/// Entries of a table that precede the table's last logged drop are
/// skipped and counted in [`ReplayReport::dropped_entries`]. To know the
/// drops first, every segment is read twice, whole, one at a time (memory:
/// one segment).
///
/// # Errors
/// [`Error::Io`] if the directory or a segment cannot be read;
/// [`Error::UnsupportedVersion`] for a segment of another format version.
pub fn replay(
    dir: &Path,
    f: impl FnMut(TableId, Mutation, ReplayPosition),
) -> Result<ReplayReport, Error> {
    let (segments, _) = list_segments(dir)?;
    replay_segments(&segments, f).map(|(report, _)| report)
}
