//! Replay: reads every segment of a directory in id order and yields each
//! entry as `(table, mutation, position)`.
//!
//! Per segment, the reader classifies where reading stopped:
//!
//! * **clean end**: the rest of the segment is zeros (never written), or an
//!   entry header with a valid checksum names another segment (stale bytes
//!   of a reused file);
//! * **torn tail**: the last entry was being written when the process or
//!   machine died: its bytes stop with zeros behind them (the rest of the
//!   entry, and everything after it, still zero); or the segment has no
//!   header at all and is empty or all zeros (it was being created).
//!   Expected after a crash in the segments written last (the newest two
//!   with a header, and header-less ones after them); reported with its
//!   offset, never counted as corruption there, and damage in any older
//!   segment;
//! * **corruption**: anything else (a checksum that fails with data after
//!   it, a zero header followed by data, a length out of range, a payload
//!   that does not decode, and a file shorter than the segment size its
//!   header gives, wherever the segment is: segment files are created at
//!   their full size before the header is written, and a reserve is
//!   zero-filled to it before it is named, so no crash leaves a short
//!   one). Under [`CorruptionPolicy::Stop`] replay fails before yielding
//!   anything ([`Error::Corrupt`]), but for a payload that does not decode
//!   (below); otherwise the rest of that segment is skipped and reported
//!   with the segment, the offset, the bytes skipped (up to the segment's
//!   last non-zero byte) and the entries found in them (the undecodable
//!   entry and every later one whose header checks out), and replay goes
//!   on with the next segment.
//!
//! The first pass (drops and classification) is shared by replay and
//! [`crate::check`], so the check refuses exactly what open refuses, with
//! the same error. The second pass yields, decoding each entry once as it
//! hands it over.
//!
//! **A payload that passes its checksums but does not decode** is damage
//! too. Disk damage cannot make one (the payload's CRC-32C catches it); a
//! bug or another build's mutation encoding can. Open's first pass does
//! not decode: decoding there costs a second decode of every entry, which
//! measured on a 300 MiB log (800 000 entries of 362 bytes, or 65 000 of
//! 4.8 KiB; page cache warm, 2 shared cores) adds 40-50% to replay's own
//! time in the quietest run (about 0.9-1.0 s to 1.4 s; one decode pass
//! takes about 0.4-0.5 s there, the first pass without it about 0.3 s),
//! up to double under load, on every start, for
//! damage no disk produces. So open finds such a payload in its second
//! pass, when it reaches it: under [`CorruptionPolicy::Skip`] the segment
//! ends there as damage, reported as any other (its entries before it
//! handed over, replay going on with the next segment); under
//! [`CorruptionPolicy::Stop`] open fails with [`Error::Corrupt`] naming
//! the segment and offset, having handed over the entries before it (it
//! still changes nothing on disk). [`crate::check`] does decode in its
//! first pass, and so refuses such a log before anything is yielded: an
//! owner that must not see any entry of a log open will refuse (the
//! replica) checks first. When open's first pass refuses for other damage,
//! it decides again with decoding (cost paid only when refusing), so that
//! it names the first damage of the log, as the check does.
//!
//! A length is never trusted before its own checksum holds. A segment whose
//! header is damaged is skipped whole and reported the same way. A segment
//! of another format version fails replay ([`Error::UnsupportedVersion`])
//! rather than being misread.
//!
//! Table drops are logged, in the segments and in a side file; replay skips
//! (and counts) every entry of a table that precedes the table's last drop,
//! so a dropped table's data
//! cannot come back, even if a table with the same id is created later.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use fs::FileSystem;
use mutation::Mutation;

use crate::config::CorruptionPolicy;
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
    /// Entries in the skipped bytes, as far as can be told: the damaged
    /// entry and every later one whose entry header still checks out
    /// (entries whose header the damage destroyed cannot be counted).
    pub entries_skipped: u64,
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
    /// Entries in skipped bytes, over all segments (see
    /// [`Damage::entries_skipped`]).
    pub entries_skipped: u64,
    /// Entries skipped because their table was dropped after them.
    pub dropped_entries: u64,
    /// The drop side file could not be read (skip mode only: it is ignored
    /// and the drop records in the segments still count).
    pub drops_file_damage: Option<String>,
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
    entry: impl FnMut(u32, u8, TableId, &[u8]) -> Result<(), String>,
) -> Result<Stop, Error> {
    // The last non-zero byte decides torn versus corrupt: an unfinished
    // write leaves zeros behind it, damage usually does not.
    let last_nonzero = bytes.iter().rposition(|&b| b != 0);
    let data_ends_before = |end: usize| last_nonzero.is_none_or(|l| l < end);
    if bytes.len() < HEADER_LEN && last_nonzero.is_some() {
        // Part of a header: the file is made at its full size before its
        // header is written, so this is not a file being created.
        return Ok(Stop::Corrupt {
            offset: 0,
            reason: format!(
                "segment is cut short: {} bytes, less than its {HEADER_LEN}-byte header",
                bytes.len()
            ),
        });
    }
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
    let (stop, stopped_at) = scan_entries(id, bytes, last_nonzero, header.segment_size, entry);
    // Segment files are created at their full size before their header is
    // written (and a reserve is zero-filled to it before it is named), so a
    // file with a header that ends early was cut short after it was made:
    // no crash leaves that, wherever the segment is. Where reading would
    // have ended cleanly or at a torn entry, it is damage.
    let size = header.segment_size as usize;
    Ok(match stop {
        Stop::Clean | Stop::Torn(_) if bytes.len() < size => Stop::Corrupt {
            offset: stopped_at,
            reason: format!("segment is cut short: {} of {size} bytes", bytes.len()),
        },
        stop => stop,
    })
}

/// Scans the entries of segment `id` (its header is intact and gives
/// `segment_size`; `last_nonzero` is the offset of its last non-zero byte)
/// for [`scan`], and returns how the scan ended and the
/// offset it ended at (where the next entry would have begun).
fn scan_entries(
    id: u64,
    bytes: &[u8],
    last_nonzero: Option<usize>,
    segment_size: u32,
    mut entry: impl FnMut(u32, u8, TableId, &[u8]) -> Result<(), String>,
) -> (Stop, usize) {
    let data_ends_before = |end: usize| last_nonzero.is_none_or(|l| l < end);
    let limit = bytes.len().min(segment_size as usize);
    let max_payload = format::max_payload(segment_size);
    let mut pos = HEADER_LEN;
    loop {
        if pos + ENTRY_HEADER_LEN > limit {
            // The file ends (a cut-short file is damage; see `scan`), or
            // too little of the segment is left for an entry header.
            let stop = if data_ends_before(pos) {
                Stop::Clean
            } else {
                Stop::Torn(pos as u32)
            };
            return (stop, pos);
        }
        let eh = &bytes[pos..pos + ENTRY_HEADER_LEN];
        if eh.iter().all(|&b| b == 0) {
            if data_ends_before(pos) {
                return (Stop::Clean, pos);
            }
            return (
                Stop::Corrupt {
                    offset: pos,
                    reason: "zeroed entry header followed by data".to_string(),
                },
                pos,
            );
        }
        let Some(eh) = format::parse_entry_header(eh) else {
            if data_ends_before(pos + ENTRY_HEADER_LEN - 1) {
                return (Stop::Torn(pos as u32), pos);
            }
            return (
                Stop::Corrupt {
                    offset: pos,
                    reason: "entry header checksum mismatch".to_string(),
                },
                pos,
            );
        };
        if eh.segment != id {
            // Positive evidence of stale bytes: a valid header of another
            // segment. Nothing of this segment follows.
            return (Stop::Clean, pos);
        }
        let len = eh.len as usize;
        if !(format::PAYLOAD_PREFIX..=max_payload).contains(&len)
            || pos + FRAMING + len > segment_size as usize
        {
            return (
                Stop::Corrupt {
                    offset: pos,
                    reason: format!(
                        "entry length {len} is outside {}..={max_payload} or runs past the segment end",
                        format::PAYLOAD_PREFIX
                    ),
                },
                pos,
            );
        }
        let end = pos + FRAMING + len;
        if end > bytes.len() {
            // The file ends inside the entry: a torn (or truncated) tail.
            return (Stop::Torn(pos as u32), pos);
        }
        let payload = &bytes[pos + ENTRY_HEADER_LEN..end - 4];
        if format::le_u32(&bytes[end - 4..end]) != crc32c::crc32c(payload) {
            if data_ends_before(end - 1) {
                return (Stop::Torn(pos as u32), pos);
            }
            return (
                Stop::Corrupt {
                    offset: pos,
                    reason: "entry payload checksum mismatch".to_string(),
                },
                pos,
            );
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
            return (
                Stop::Corrupt {
                    offset: pos,
                    reason,
                },
                pos,
            );
        }
        pos = end;
    }
}

/// Decodes the body of a mutation entry whose checksums hold; a body that
/// does not decode is damage, with the decode error as its reason.
fn decode_mutation(body: &[u8]) -> Result<Mutation, String> {
    Mutation::decode(body)
        .map_err(|e| format!("entry payload passes its checksums but does not decode: {e}"))
}

/// The segment files of `dir`, by id (other files are ignored), and the
/// highest id in use, segments set aside as damaged included (so a new
/// segment never takes the id, and later the name, of one of them).
pub(crate) fn list_segments(
    fs: &dyn FileSystem,
    dir: &Path,
) -> Result<(BTreeMap<u64, PathBuf>, u64), Error> {
    let mut out = BTreeMap::new();
    let mut max_id = 0;
    let entries = fs.read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for path in entries {
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

/// What pass 1 learned of one segment.
pub(crate) struct Scanned {
    pub(crate) id: u64,
    path: PathBuf,
    stop: Stop,
    /// Mutation entries whose framing and checksums hold (and which decode,
    /// with [`Decode::InPass1`]), before the stop.
    pub(crate) mutations: u64,
    /// Drop records, before the stop.
    pub(crate) drop_records: u64,
}

impl Scanned {
    /// The torn tail the segment ends in, if it does.
    pub(crate) fn torn(&self) -> Option<TornTail> {
        match self.stop {
            Stop::Torn(offset) => Some(TornTail {
                segment: self.id,
                offset,
            }),
            _ => None,
        }
    }
}

/// Pass 1 of a replay, all that decides whether a log can be opened: the
/// last drop of every table and how each segment ends.
pub(crate) struct Classified {
    /// The last drop of every table (segments and side file).
    pub(crate) drops: BTreeMap<TableId, ReplayPosition>,
    /// Why the drop side file could not be read (skip mode only).
    pub(crate) drops_file_damage: Option<String>,
    /// Every segment, in id order, with its stop classified.
    pub(crate) scanned: Vec<Scanned>,
}

/// Everything a replay produced: the report, what each segment held, and
/// the last drop of every table (from the segments and the side file).
pub(crate) struct Replayed {
    pub(crate) report: ReplayReport,
    pub(crate) summaries: BTreeMap<u64, SegmentSummary>,
    pub(crate) drops: BTreeMap<TableId, ReplayPosition>,
}

/// Reads the drop side file of `dir`, if there is one.
fn read_drops_file(fs: &dyn FileSystem, dir: &Path) -> Result<Option<(PathBuf, Vec<u8>)>, Error> {
    let path = dir.join(format::DROPS_FILE_NAME);
    match fs.read(&path) {
        Ok(bytes) => Ok(Some((path, bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// How many entries the skipped bytes from `offset` on of segment `id`
/// held, as far as can be told: every entry whose entry header still
/// checks out (found by walking the lengths, and byte by byte past a broken
/// header), and the damaged entry at `offset` if its own header is broken
/// (the damage is at an entry, past the segment header).
fn entries_in_skipped(id: u64, bytes: &[u8], offset: usize) -> u64 {
    let header_at = |p: usize| {
        bytes
            .get(p..p + ENTRY_HEADER_LEN)
            .and_then(format::parse_entry_header)
            .filter(|h| h.segment == id && h.len as usize >= format::PAYLOAD_PREFIX)
    };
    let from = offset.max(HEADER_LEN);
    let mut count = u64::from(offset >= HEADER_LEN && header_at(from).is_none());
    let mut p = from;
    while p + ENTRY_HEADER_LEN <= bytes.len() {
        match header_at(p) {
            Some(h) => {
                count += 1;
                p += FRAMING + h.len as usize;
            }
            None => p += 1,
        }
    }
    count
}

/// Whether pass 1 decodes the mutation entries it checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decode {
    /// Decode each (and drop it): a payload that does not decode is damage
    /// found in pass 1. [`crate::check`] does this.
    InPass1,
    /// Leave decoding to pass 2, which decodes each entry once as it hands
    /// it over. Open and [`replay`] do this (see the module docs).
    InPass2,
}

/// Pass 1 of a replay of the segments `segments` of `dir`: reads the drop
/// side file and every segment (whole, one at a time), notes every drop,
/// and classifies where each segment stops (clean end, torn tail, damage),
/// decoding each mutation (and dropping it) only with [`Decode::InPass1`].
/// A torn tail counts only in the segments written last (the newest two
/// with a header, and header-less ones after them); anywhere else it is
/// damage.
///
/// Under [`CorruptionPolicy::Stop`] with [`Decode::InPass2`], a refusal is
/// decided again with decoding (the only time that pass decodes), so that
/// it names the first damage in the log, an undecodable payload before
/// the damage found included: the same error [`crate::check`] returns.
///
/// # Errors
/// Under [`CorruptionPolicy::Stop`], [`Error::Corrupt`] for the drop side
/// file or the first damaged segment (after every segment was read, so an
/// I/O error or [`Error::UnsupportedVersion`] of a later one comes first);
/// I/O errors; [`Error::UnsupportedVersion`].
pub(crate) fn classify(
    fs: &dyn FileSystem,
    dir: &Path,
    segments: &BTreeMap<u64, PathBuf>,
    policy: CorruptionPolicy,
    device: Option<&device::Device>,
    decode: Decode,
) -> Result<Classified, Error> {
    let first = classify_once(fs, dir, segments, policy, device, decode);
    if decode == Decode::InPass1
        || policy != CorruptionPolicy::Stop
        || !matches!(first, Err(Error::Corrupt { .. }))
    {
        return first;
    }
    match classify_once(fs, dir, segments, policy, device, Decode::InPass1) {
        Err(e) => Err(e),
        // Decoding only adds damage; the files changed between the reads.
        Ok(_) => first,
    }
}

/// One pass 1, as [`classify`] describes.
fn classify_once(
    fs: &dyn FileSystem,
    dir: &Path,
    segments: &BTreeMap<u64, PathBuf>,
    policy: CorruptionPolicy,
    device: Option<&device::Device>,
    decode: Decode,
) -> Result<Classified, Error> {
    let mut drops_file_damage = None;
    let mut drops: BTreeMap<TableId, ReplayPosition> = BTreeMap::new();
    let note_drop = |drops: &mut BTreeMap<TableId, ReplayPosition>, table, pos| {
        let e = drops.entry(table).or_insert(pos);
        *e = (*e).max(pos);
    };
    if let Some((path, bytes)) = read_drops_file(fs, dir)? {
        match format::decode_drops(&bytes) {
            Ok(records) => {
                for (table, pos) in records {
                    note_drop(&mut drops, table, pos);
                }
            }
            Err(reason) if policy == CorruptionPolicy::Stop => {
                return Err(Error::Corrupt {
                    path,
                    segment: 0,
                    offset: 0,
                    reason,
                });
            }
            Err(reason) => drops_file_damage = Some(reason),
        }
    }
    let mut scanned = Vec::with_capacity(segments.len());
    for (&id, path) in segments {
        let bytes = fs.read(path).map_err(|e| Error::io(path, e))?;
        // Charged as read (after the read: its length is known then; the
        // wait lands before the segment is used all the same).
        device::charge_read(device, bytes.len() as u64);
        let (mut mutations, mut drop_records) = (0, 0);
        let stop = scan(id, path, &bytes, |offset, kind, table, body| {
            if kind == KIND_DROP {
                drop_records += 1;
                note_drop(&mut drops, table, ReplayPosition::new(id, offset));
            } else {
                if decode == Decode::InPass1 {
                    decode_mutation(body)?;
                }
                mutations += 1;
            }
            Ok(())
        })?;
        scanned.push(Scanned {
            id,
            path: path.clone(),
            stop,
            mutations,
            drop_records,
        });
    }
    // The segments written last: the newest two with a header, and any
    // header-less ones after them (one write-and-sync cycle spans at most
    // one segment switch). A torn tail anywhere else is damage.
    let has_header =
        |s: &Scanned| !matches!(s.stop, Stop::Torn(0) | Stop::Corrupt { offset: 0, .. });
    let mut with_header = scanned.iter().filter(|s| has_header(s)).map(|s| s.id).rev();
    let newest = with_header.next();
    let tail_from = with_header.next().or(newest).unwrap_or(0);
    for s in &mut scanned {
        if s.id >= tail_from {
            continue;
        }
        if let Stop::Torn(offset) = s.stop {
            let reason = if offset == 0 {
                "segment has no header and is not among the last written".to_string()
            } else {
                "torn entry in a segment that is not among the last written".to_string()
            };
            s.stop = Stop::Corrupt {
                offset: offset as usize,
                reason,
            };
        }
    }
    if policy == CorruptionPolicy::Stop
        && let Some((s, offset, reason)) = scanned.iter().find_map(|s| match &s.stop {
            Stop::Corrupt { offset, reason } => Some((s, *offset, reason.clone())),
            _ => None,
        })
    {
        return Err(Error::Corrupt {
            path: s.path.clone(),
            segment: s.id,
            offset: offset as u32,
            reason,
        });
    }
    Ok(Classified {
        drops,
        drops_file_damage,
        scanned,
    })
}

/// Replays the segments `segments` (id → path, read in id order) of `dir`,
/// calling `f` for every entry that is not superseded by a later drop of
/// its table. Under [`CorruptionPolicy::Stop`] any damage fails replay
/// before `f` is called at all, but for a payload that passes its
/// checksums and does not decode: pass 1 does not decode, so replay fails
/// at it, after handing over the entries before it (see the module docs).
pub(crate) fn replay_segments(
    fs: &dyn FileSystem,
    dir: &Path,
    segments: &BTreeMap<u64, PathBuf>,
    policy: CorruptionPolicy,
    device: Option<&device::Device>,
    mut f: impl FnMut(TableId, Mutation, ReplayPosition),
) -> Result<Replayed, Error> {
    let Classified {
        drops,
        drops_file_damage,
        scanned,
    } = classify(fs, dir, segments, policy, device, Decode::InPass2)?;
    let mut report = ReplayReport {
        drops_file_damage,
        ..ReplayReport::default()
    };
    // Pass 2: yield.
    let mut summaries = BTreeMap::new();
    for s in scanned {
        let (id, path) = (s.id, &s.path);
        let bytes = fs.read(path).map_err(|e| Error::io(path, e))?;
        // Charged as read (after the read: its length is known then; the
        // wait lands before the segment is used all the same).
        device::charge_read(device, bytes.len() as u64);
        let mut summary = SegmentSummary {
            len: bytes.len() as u64,
            ..SegmentSummary::default()
        };
        let rescanned = scan(id, path, &bytes, |offset, kind, table, body| {
            let pos = ReplayPosition::new(id, offset);
            if kind == KIND_DROP {
                summary.has_drop = true;
                return Ok(());
            }
            let m = decode_mutation(body)?;
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
        // Pass 2 stops where pass 1 did, or earlier, at a payload that
        // passes its checksums but does not decode (pass 1 did not decode
        // it), or where the file changed between the two reads. The stop
        // met first is the one reported: nothing past it was handed over.
        // Under Stop that is a refusal, after the entries before it.
        let stop = match (s.stop, rescanned) {
            (Stop::Corrupt { offset, reason }, Stop::Corrupt { offset: at, .. })
                if offset <= at =>
            {
                Stop::Corrupt { offset, reason }
            }
            (_, Stop::Corrupt { offset, reason }) => {
                if policy == CorruptionPolicy::Stop {
                    return Err(Error::Corrupt {
                        path: path.clone(),
                        segment: id,
                        offset: offset as u32,
                        reason,
                    });
                }
                Stop::Corrupt { offset, reason }
            }
            (stop, _) => stop,
        };
        match stop {
            Stop::Clean => {}
            Stop::Torn(offset) => report.torn.push(TornTail {
                segment: id,
                offset,
            }),
            Stop::Corrupt { offset, reason } => {
                let last = bytes.iter().rposition(|&b| b != 0).unwrap_or(offset);
                let skipped = (last + 1).saturating_sub(offset).max(1) as u64;
                let entries_skipped = entries_in_skipped(id, &bytes, offset);
                let damage = Damage {
                    segment: id,
                    offset: offset as u32,
                    bytes_skipped: skipped,
                    entries_skipped,
                    reason,
                };
                report.corrupt_segments += 1;
                report.bytes_skipped += skipped;
                report.entries_skipped += entries_skipped;
                report.damage.push(damage.clone());
                summary.damage = Some(damage);
            }
        }
        summaries.insert(id, summary);
    }
    Ok(Replayed {
        report,
        summaries,
        drops,
    })
}

/// Replays every segment in `dir` in id order, calling `f(table, mutation,
/// position)` for each entry, and reports what was read, what was torn and
/// what was damaged. Read-only: nothing in `dir` changes.
///
/// Damage never stops this replay (it reads as
/// [`CorruptionPolicy::Skip`] does; [`crate::CommitLog::open`] stops at
/// damage by default): a damaged segment is cut at the damage and
/// reported, and replay goes on with the next segment. Per segment,
/// reading stops at
///
/// * a **clean end**: only zeros follow (never written), or a valid entry
///   header of another segment (stale bytes);
/// * a **torn tail** ([`ReplayReport::torn`]): within a segment at its full
///   size, the entry's bytes stop with zeros behind them (nothing non-zero
///   after it), or the segment has no header and holds nothing: what a
///   crash mid-write leaves, in one of the segments written last (the
///   newest two with a header, and header-less ones after them); in an
///   older segment it is damage;
/// * **damage** ([`ReplayReport::damage`]): anything else (a checksum that
///   fails with data after it, a zeroed header followed by data, a length
///   out of range, a payload that does not decode, a bad segment header,
///   and a file shorter than the segment size in its header, in any
///   segment, the newest included: segments are created at their full
///   size, so a short one was cut after it was made; reason "segment is
///   cut short: N of M bytes"). The rest of the segment is skipped and
///   counted up to its last non-zero byte.
///
/// Entries of a table that precede the table's last logged drop (in a
/// segment or in the drop side file) are skipped and counted in [`ReplayReport::dropped_entries`]. To know the
/// drops first, every segment is read twice, whole, one at a time (memory:
/// one segment); each mutation is decoded once, in the second read, so a
/// payload that passes its checksums but does not decode ends its segment
/// as damage after the entries before it were handed over.
///
/// # Errors
/// [`Error::Io`] if the directory or a segment cannot be read;
/// [`Error::UnsupportedVersion`] for a segment of another format version.
pub fn replay(
    dir: &Path,
    f: impl FnMut(TableId, Mutation, ReplayPosition),
) -> Result<ReplayReport, Error> {
    let fs = fs::RealFs;
    let (segments, _) = list_segments(&fs, dir)?;
    replay_segments(&fs, dir, &segments, CorruptionPolicy::Skip, None, f).map(|r| r.report)
}
