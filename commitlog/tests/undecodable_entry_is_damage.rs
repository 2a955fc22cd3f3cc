//! An entry whose payload passes both CRC-32C checksums but does not decode
//! as a mutation (a bug, or another build's mutation encoding: disk damage
//! would fail the checksum) is damage like any other. `commitlog::check`
//! refuses it, naming the segment and the offset. Under the default
//! `CorruptionPolicy::Stop` open refuses it with the same error, without
//! changing a file; it decodes each entry once, as it hands it over, so it
//! has handed over exactly the entries before it (the documented
//! exception to "nothing is handed over"). Under `CorruptionPolicy::Skip`
//! it is reported in `ReplayReport::damage`, the entries before it are
//! handed over, and so are those of later segments.

mod common;

use common::{config, snapshot};

use std::collections::BTreeMap;
use std::path::Path;

use commitlog::{CommitLog, CorruptionPolicy, Damage, Error, ReplayPosition};
use mutation::Mutation;

type Entry = (u64, Mutation, ReplayPosition);

/// Bytes of an entry header (format.rs: length:u32 | segment id:u64 |
/// crc32c(length, id):u32).
const ENTRY_HEADER_LEN: usize = 16;
/// Bytes of a payload before the encoded mutation: kind:u8 | table id:u64.
const PAYLOAD_PREFIX: usize = 9;

fn restore(files: &BTreeMap<String, Vec<u8>>, dir: &Path) {
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// Rewrites the payload of the entry at `offset` of a segment's `bytes` so
/// that its entry header and payload checksums still hold but the body is
/// not a valid mutation encoding: its first byte, the encoding version,
/// becomes 0xff. The length is unchanged, so the entry header (and its
/// checksum) stays as written; the payload checksum is recomputed.
fn make_undecodable(bytes: &mut [u8], offset: usize) {
    let len = u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap()) as usize;
    let payload = offset + ENTRY_HEADER_LEN..offset + ENTRY_HEADER_LEN + len;
    assert_eq!(bytes[payload.start], 1, "a mutation entry");
    bytes[payload.start + PAYLOAD_PREFIX] = 0xff;
    let crc = crc32c::crc32c(&bytes[payload.clone()]);
    bytes[payload.end..payload.end + 4].copy_from_slice(&crc.to_le_bytes());
}

fn m(i: usize) -> Mutation {
    common::row("k", i, 560)
}

#[test]
fn an_undecodable_entry_is_refused_by_stop_and_reported_by_skip() {
    // A log of four segments of acknowledged (batch-synced) entries.
    let written = tempfile::tempdir().unwrap();
    let (log, _) =
        CommitLog::open(written.path(), config(CorruptionPolicy::Stop), |_, _, _| {}).unwrap();
    let mut entries: Vec<Entry> = Vec::new();
    for i in 0.. {
        let mut segments: Vec<u64> = entries.iter().map(|e| e.2.segment).collect();
        segments.dedup();
        if segments.len() == 4 {
            break;
        }
        let table = (i % 3) as u64;
        let pos = log.add(table, &m(i)).unwrap();
        entries.push((table, m(i), pos));
    }
    log.close().unwrap();
    drop(log);
    let mut segments: Vec<u64> = entries.iter().map(|e| e.2.segment).collect();
    segments.dedup();

    // The second entry of the second segment stops decoding.
    let id = segments[1];
    let in_segment: Vec<&Entry> = entries.iter().filter(|e| e.2.segment == id).collect();
    assert!(in_segment.len() >= 3, "{} entries", in_segment.len());
    let target = in_segment[1].2;
    let mut files = snapshot(written.path());
    let name = format!("CommitLog-1-{id}.log");
    let seg = files.get_mut(&name).unwrap();
    make_undecodable(seg, target.offset as usize);
    let data_end = seg.iter().rposition(|&b| b != 0).unwrap() + 1;

    let kept: Vec<Entry> = entries
        .iter()
        .filter(|e| e.2.segment != id || e.2 < target)
        .cloned()
        .collect();
    let before_it: Vec<Entry> = kept.iter().filter(|e| e.2 < target).cloned().collect();
    assert!(kept.iter().any(|e| e.2.segment > id));
    assert!(!before_it.is_empty());

    // The check refuses it, naming the segment and the offset, before
    // anything is replayed.
    let dir = tempfile::tempdir().unwrap();
    restore(&files, dir.path());
    let before = snapshot(dir.path());
    let checked = commitlog::check(dir.path()).expect_err("check accepted it");
    let Error::Corrupt {
        segment, offset, ..
    } = checked
    else {
        panic!("not Corrupt: {checked}");
    };
    assert_eq!((segment, offset), (id, target.offset));

    // Stop: refused with the same error, after handing over only the
    // entries before it; nothing on disk changes.
    let mut handed = Vec::new();
    let err = CommitLog::open(dir.path(), config(CorruptionPolicy::Stop), |t, m, p| {
        handed.push((t, m, p))
    })
    .map(|(_, report)| report)
    .expect_err("open with CorruptionPolicy::Stop accepted an undecodable entry");
    let Error::Corrupt {
        path,
        segment,
        offset,
        reason,
    } = &err
    else {
        panic!("not Corrupt: {err}");
    };
    assert_eq!((*segment, *offset), (id, target.offset), "{err}");
    assert!(path.ends_with(&name), "{}", path.display());
    assert!(reason.contains("does not decode"), "{reason}");
    assert!(
        reason.contains("version"),
        "names the decode error: {reason}"
    );
    assert_eq!(handed, before_it, "entries handed over before the refusal");
    assert_eq!(snapshot(dir.path()), before, "a refused open changed files");
    let checked = commitlog::check(dir.path()).unwrap_err().to_string();
    assert_eq!(
        checked,
        err.to_string(),
        "check and open name the same damage"
    );

    // Skip: the rest of that segment is skipped and reported; everything
    // before it, and every later segment, is handed over.
    let expected = Damage {
        segment: id,
        offset: target.offset,
        bytes_skipped: (data_end - target.offset as usize) as u64,
        entries_skipped: (in_segment.len() - 1) as u64,
        reason: reason.clone(),
    };
    let dir = tempfile::tempdir().unwrap();
    restore(&files, dir.path());
    let mut got = Vec::new();
    let (log, report) = CommitLog::open(dir.path(), config(CorruptionPolicy::Skip), |t, m, p| {
        got.push((t, m, p))
    })
    .unwrap();
    log.close().unwrap();
    assert_eq!(report.damage, vec![expected.clone()], "{report:?}");
    assert_eq!(report.corrupt_segments, 1);
    assert_eq!(report.bytes_skipped, expected.bytes_skipped);
    assert_eq!(report.entries_skipped, expected.entries_skipped);
    assert!(report.torn.is_empty(), "{report:?}");
    assert_eq!(report.entries, kept.len() as u64);
    assert_eq!(got, kept);

    // The read-only replay reads the skip way and reports the same.
    let dir = tempfile::tempdir().unwrap();
    restore(&files, dir.path());
    let mut replayed = Vec::new();
    let report = commitlog::replay(dir.path(), |t, m, p| replayed.push((t, m, p))).unwrap();
    assert_eq!(report.damage, vec![expected]);
    assert_eq!(replayed, kept);
}

#[test]
fn open_names_an_undecodable_entry_before_later_damage_as_the_check_does() {
    let written = tempfile::tempdir().unwrap();
    let (log, _) =
        CommitLog::open(written.path(), config(CorruptionPolicy::Stop), |_, _, _| {}).unwrap();
    let mut positions = Vec::new();
    for i in 0..20 {
        positions.push(log.add(0, &m(i)).unwrap());
    }
    log.close().unwrap();
    drop(log);
    let mut segments: Vec<u64> = positions.iter().map(|p| p.segment).collect();
    segments.dedup();
    assert!(segments.len() >= 3, "{segments:?}");
    let in_segment = |id| positions.iter().filter(move |p| p.segment == id);

    // An undecodable entry in the first segment, and a payload checksum
    // that fails (with data after it) in the third.
    let mut files = snapshot(written.path());
    let first = *in_segment(segments[0]).nth(1).unwrap();
    make_undecodable(
        files
            .get_mut(&format!("CommitLog-1-{}.log", segments[0]))
            .unwrap(),
        first.offset as usize,
    );
    let flipped = *in_segment(segments[2]).next().unwrap();
    files
        .get_mut(&format!("CommitLog-1-{}.log", segments[2]))
        .unwrap()[flipped.offset as usize + 30] ^= 0x40;

    let dir = tempfile::tempdir().unwrap();
    restore(&files, dir.path());
    let mut handed = 0;
    let err = CommitLog::open(dir.path(), config(CorruptionPolicy::Stop), |_, _, _| {
        handed += 1
    })
    .map(|(_, report)| report)
    .expect_err("open accepted a damaged log");
    // The first damage of the log is named, and found before anything is
    // handed over: the later damage refuses the open in its first pass.
    let Error::Corrupt {
        segment,
        offset,
        ref reason,
        ..
    } = err
    else {
        panic!("not Corrupt: {err}");
    };
    assert_eq!((segment, offset), (first.segment, first.offset), "{err}");
    assert!(reason.contains("does not decode"), "{reason}");
    assert_eq!(handed, 0);
    let checked = commitlog::check(dir.path()).unwrap_err();
    assert_eq!(checked.to_string(), err.to_string());

    // Skip reports both.
    let (log, report) =
        CommitLog::open(dir.path(), config(CorruptionPolicy::Skip), |_, _, _| {}).unwrap();
    log.close().unwrap();
    let found: Vec<(u64, u32)> = report
        .damage
        .iter()
        .map(|d| (d.segment, d.offset))
        .collect();
    assert_eq!(
        found,
        [
            (first.segment, first.offset),
            (flipped.segment, flipped.offset)
        ]
    );
}
