//! The corruption policy of `CommitLog::open`, for every damage kind (byte
//! flip, zeroed range, truncation, bad segment header) in every segment
//! position (first, middle, last): by default open fails, naming the
//! segment, offset and reason, and leaves every file byte-identical; with
//! `CorruptionPolicy::Skip` the damage is reported exactly, nothing before
//! it is lost and the segment is set aside. Segments are made at their full
//! size, so a truncation is damage in the last segment too (no crash leaves
//! it). `commitlog::check` refuses exactly what open refuses, changing
//! nothing. A dropped table's entries never come back, even when the damage
//! hides the drop record.

mod common;

use common::{config, snapshot};

use std::collections::BTreeMap;
use std::path::Path;

use commitlog::{CommitLog, CorruptionPolicy, Damage, Error, ReplayPosition};
use mutation::Mutation;

type Entry = (u64, Mutation, ReplayPosition);

fn seg_name(id: u64) -> String {
    format!("CommitLog-1-{id}.log")
}

/// A log of five segments of entries of tables 0..3, closed.
struct Pristine {
    files: BTreeMap<String, Vec<u8>>,
    segments: Vec<u64>,
    entries: Vec<Entry>,
}

fn pristine() -> Pristine {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) =
        CommitLog::open(dir.path(), config(CorruptionPolicy::Stop), |_, _, _| {}).unwrap();
    let mut entries = Vec::new();
    // Five segments, the last with three entries.
    for i in 0.. {
        let mut segments: Vec<u64> = entries.iter().map(|e: &Entry| e.2.segment).collect();
        segments.dedup();
        let last = segments.last().copied();
        let in_last = entries.iter().filter(|e| Some(e.2.segment) == last).count();
        if segments.len() == 5 && in_last >= 3 {
            break;
        }
        let mutation = m("k", i);
        let table = (i % 3) as u64;
        let pos = log.add(table, &mutation).unwrap();
        entries.push((table, mutation, pos));
    }
    log.close().unwrap();
    let mut segments: Vec<u64> = entries.iter().map(|e| e.2.segment).collect();
    segments.dedup();
    assert_eq!(segments.len(), 5, "{segments:?}");
    Pristine {
        files: snapshot(dir.path()),
        segments,
        entries,
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    ByteFlip,
    ZeroedRange,
    Truncation,
    BadHeader,
}

#[derive(Debug, Clone, Copy)]
enum Position {
    First,
    Middle,
    Last,
}

/// Writes the pristine log into `dir` with `kind` of damage in the segment
/// at `position`, and returns that segment's id and the damage expected in
/// the report.
fn damage(p: &Pristine, dir: &Path, kind: Kind, position: Position) -> (u64, Damage) {
    let id = match position {
        Position::First => p.segments[0],
        Position::Middle => p.segments[2],
        Position::Last => p.segments[4],
    };
    for (name, bytes) in &p.files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    let mut bytes = p.files[&seg_name(id)].clone();
    let in_segment: Vec<&Entry> = p.entries.iter().filter(|e| e.2.segment == id).collect();
    let second = in_segment[1].2.offset as usize;
    let data_end = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    let from_second = in_segment.len() as u64 - 1;
    let expected = match kind {
        Kind::ByteFlip => {
            bytes[second + 30] ^= 0x40;
            Damage {
                segment: id,
                offset: second as u32,
                bytes_skipped: (data_end - second) as u64,
                entries_skipped: from_second,
                reason: "entry payload checksum mismatch".to_string(),
            }
        }
        Kind::ZeroedRange => {
            bytes[second..second + 40].fill(0);
            Damage {
                segment: id,
                offset: second as u32,
                bytes_skipped: (data_end - second) as u64,
                entries_skipped: from_second,
                reason: "zeroed entry header followed by data".to_string(),
            }
        }
        Kind::Truncation => {
            bytes.truncate(second + 10);
            let last = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
            // In every position, the last segment included.
            Damage {
                segment: id,
                offset: second as u32,
                bytes_skipped: (last - second) as u64,
                // Only the cut entry's first bytes are left to count.
                entries_skipped: 1,
                reason: format!("segment is cut short: {} of 4096 bytes", second + 10),
            }
        }
        Kind::BadHeader => {
            bytes[1] ^= 0x01;
            Damage {
                segment: id,
                offset: 0,
                bytes_skipped: data_end as u64,
                entries_skipped: in_segment.len() as u64,
                reason: "segment header magic or checksum does not match".to_string(),
            }
        }
    };
    std::fs::write(dir.join(seg_name(id)), &bytes).unwrap();
    (id, expected)
}

fn m(tag: &str, i: usize) -> Mutation {
    common::row(tag, i, 560)
}

#[test]
fn every_damage_kind_in_every_position_under_both_policies() {
    let p = pristine();
    for kind in [
        Kind::ByteFlip,
        Kind::ZeroedRange,
        Kind::Truncation,
        Kind::BadHeader,
    ] {
        for position in [Position::First, Position::Middle, Position::Last] {
            let what = format!("{kind:?} in the {position:?} segment");
            let dir = tempfile::tempdir().unwrap();
            let (id, d) = damage(&p, dir.path(), kind, position);
            let lost_from = ReplayPosition::new(id, d.offset);
            let kept: Vec<&Entry> = p
                .entries
                .iter()
                .filter(|e| e.2.segment != id || e.2 < lost_from)
                .collect();

            // Default: stop, name it, change nothing; the check says the
            // same, and changes nothing either.
            let before = snapshot(dir.path());
            let checked = commitlog::check(dir.path());
            assert_eq!(snapshot(dir.path()), before, "{what}: check changed files");
            let mut got = Vec::new();
            let stopped =
                CommitLog::open(dir.path(), config(CorruptionPolicy::Stop), |t, m, pos| {
                    got.push((t, m, pos));
                });
            for (who, result) in [
                ("check", checked.map(|_| ())),
                ("open", stopped.map(|_| ())),
            ] {
                match result {
                    Err(Error::Corrupt {
                        path,
                        segment,
                        offset,
                        reason,
                    }) => {
                        assert_eq!((segment, offset), (d.segment, d.offset), "{what}: {who}");
                        assert_eq!(reason, d.reason, "{what}: {who}");
                        assert_eq!(path, dir.path().join(seg_name(id)), "{what}: {who}");
                    }
                    other => panic!("{what}: {who}: expected {d:?}, got {other:?}"),
                }
            }
            assert!(got.is_empty(), "{what}: nothing is replayed");
            assert_eq!(snapshot(dir.path()), before, "{what}: files unchanged");

            // Skip: reported exactly, nothing before the damage lost.
            let mut got = Vec::new();
            let (log, report) =
                CommitLog::open(dir.path(), config(CorruptionPolicy::Skip), |t, m, pos| {
                    got.push((t, m, pos));
                })
                .unwrap();
            assert_eq!(report.damage, vec![d.clone()], "{what}");
            assert_eq!(report.corrupt_segments, 1, "{what}");
            assert_eq!(report.bytes_skipped, d.bytes_skipped, "{what}");
            assert_eq!(report.entries_skipped, d.entries_skipped, "{what}");
            let want: Vec<Entry> = kept.iter().map(|e| (*e).clone()).collect();
            assert_eq!(got, want, "{what}: exactly the entries before the damage");
            // Once everything replayed is flushed, the damaged segment is
            // set aside, not deleted.
            let mut newest: BTreeMap<u64, ReplayPosition> = BTreeMap::new();
            for (t, _, pos) in &got {
                let e = newest.entry(*t).or_insert(*pos);
                *e = (*e).max(*pos);
            }
            for (t, pos) in newest {
                log.discard_completed(t, pos);
            }
            log.close().unwrap();
            let after = snapshot(dir.path());
            assert!(
                after.contains_key(&format!("{}.damaged", seg_name(id))),
                "{what}: {:?}",
                after.keys()
            );
        }
    }
}

/// A log where table 5 has entries in the first segment and is dropped in
/// a later one, right after an entry of table 6; returns the directory's
/// files, the position of the entry before the drop and the entries that
/// must come back (everything but table 5's).
fn dropped_table_log() -> (BTreeMap<String, Vec<u8>>, ReplayPosition, Vec<Entry>) {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) =
        CommitLog::open(dir.path(), config(CorruptionPolicy::Stop), |_, _, _| {}).unwrap();
    let mut entries = Vec::new();
    let first = log.add(5, &m("five", 0)).unwrap();
    entries.push((5, m("five", 0), first));
    let mut i = 1;
    let mut before_drop = first;
    while before_drop.segment == first.segment {
        before_drop = log.add(6, &m("six", i)).unwrap();
        entries.push((6, m("six", i), before_drop));
        i += 1;
    }
    let drop_at = log.drop_table(5).unwrap();
    assert_eq!(drop_at.segment, before_drop.segment);
    let after = log.add(6, &m("six", 99)).unwrap();
    entries.push((6, m("six", 99), after));
    log.close().unwrap();
    let keep = entries.into_iter().filter(|e| e.0 != 5).collect();
    (snapshot(dir.path()), before_drop, keep)
}

#[test]
fn damage_right_before_a_drop_record_never_brings_the_dropped_table_back() {
    let (files, before_drop, all_but_five) = dropped_table_log();
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in &files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    // Damage the entry just before the drop record: the skip takes the drop
    // record with it.
    let name = seg_name(before_drop.segment);
    let mut bytes = files[&name].clone();
    bytes[before_drop.offset as usize + 40] ^= 0x08;
    std::fs::write(dir.path().join(&name), &bytes).unwrap();

    let before = snapshot(dir.path());
    let err = CommitLog::open(dir.path(), config(CorruptionPolicy::Stop), |_, _, _| {
        panic!("nothing is replayed")
    })
    .unwrap_err();
    assert!(
        matches!(err, Error::Corrupt { segment, offset, .. } if segment == before_drop.segment && offset == before_drop.offset),
        "{err}"
    );
    assert_eq!(snapshot(dir.path()), before);

    let mut got = Vec::new();
    let (log, report) = CommitLog::open(dir.path(), config(CorruptionPolicy::Skip), |t, m, p| {
        got.push((t, m, p));
    })
    .unwrap();
    assert!(got.iter().all(|e| e.0 != 5), "the dropped table came back");
    assert_eq!(report.dropped_entries, 1);
    let want: Vec<Entry> = all_but_five
        .into_iter()
        .filter(|e| e.2 < before_drop)
        .collect();
    assert_eq!(got, want);
    assert_eq!(report.damage.len(), 1);
    // The drop record, the damaged entry and the entry after the drop.
    assert_eq!(report.damage[0].entries_skipped, 3);
    log.close().unwrap();
}

#[test]
fn a_damaged_drop_file_stops_open_by_default_and_is_reported_in_skip_mode() {
    let (files, _, all_but_five) = dropped_table_log();
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in &files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let drops = dir.path().join("CommitLog-1-drops");
    let mut bytes = std::fs::read(&drops).unwrap();
    bytes[13] ^= 0x01;
    std::fs::write(&drops, &bytes).unwrap();
    let before = snapshot(dir.path());
    let err =
        CommitLog::open(dir.path(), config(CorruptionPolicy::Stop), |_, _, _| {}).unwrap_err();
    assert!(
        matches!(&err, Error::Corrupt { path, reason, .. } if *path == drops && reason == "drop file checksum mismatch"),
        "{err}"
    );
    assert_eq!(snapshot(dir.path()), before);
    // Skip: the drop record in its segment still counts.
    let mut got = Vec::new();
    let (log, report) = CommitLog::open(dir.path(), config(CorruptionPolicy::Skip), |t, m, p| {
        got.push((t, m, p));
    })
    .unwrap();
    assert_eq!(
        report.drops_file_damage.as_deref(),
        Some("drop file checksum mismatch")
    );
    assert_eq!(got, all_but_five);
    log.close().unwrap();
}
