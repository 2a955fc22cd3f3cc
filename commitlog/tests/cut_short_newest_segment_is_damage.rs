//! The newest segment of a log with acknowledged entries, cut short (in the
//! middle of an entry, or in the zeros after the last one): segments are
//! made at their full size before anything is written, so no crash leaves
//! a short file. It is damage: open refuses it by default, naming the
//! segment and changing nothing, and `CorruptionPolicy::Skip` reports it
//! as damage, not as a torn tail.

mod common;

use common::{config, snapshot};

use std::path::Path;

use commitlog::{CommitLog, CorruptionPolicy, Error, ReplayPosition};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

const SEGMENT_SIZE: u64 = 4096;

/// A log of two segments, every entry acknowledged (batch mode), closed;
/// returns the positions of the newest segment's entries.
fn log_in(dir: &Path) -> Vec<ReplayPosition> {
    let (log, _) = CommitLog::open(dir, config(CorruptionPolicy::Stop), |_, _, _| {}).unwrap();
    let mut positions: Vec<ReplayPosition> = Vec::new();
    for i in 0.. {
        let m = Mutation::builder(DecoratedKey::from_bytes(format!("k{i}")).unwrap())
            .cell("c", 0, Cell::live(vec![7; 500], Timestamp::from_micros(1)))
            .build()
            .unwrap();
        positions.push(log.add(1, &m).unwrap());
        let first = positions[0].segment;
        let newest: Vec<_> = positions.iter().filter(|p| p.segment != first).collect();
        if newest.len() == 3 {
            break;
        }
    }
    log.close().unwrap();
    let newest = positions.last().unwrap().segment;
    positions.retain(|p| p.segment == newest);
    positions
}

/// Cuts the newest segment to `cut(its entries, its bytes)` bytes and checks that
/// open refuses it by default and reports damage (not a torn tail) when
/// told to skip.
fn cut_is_damage(what: &str, cut: impl Fn(&[ReplayPosition], &[u8]) -> usize) {
    let dir = tempfile::tempdir().unwrap();
    let newest = log_in(dir.path());
    let id = newest[0].segment;
    let path = dir.path().join(format!("CommitLog-1-{id}.log"));
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len() as u64, SEGMENT_SIZE, "made at its full size");
    let len = cut(&newest, &bytes);
    std::fs::write(&path, &bytes[..len]).unwrap();
    let reason = format!("segment is cut short: {len} of {SEGMENT_SIZE} bytes");

    let before = snapshot(dir.path());
    let mut got = 0;
    let err = CommitLog::open(dir.path(), config(CorruptionPolicy::Stop), |_, _, _| {
        got += 1
    })
    .map(|_| ())
    .unwrap_err();
    match &err {
        Error::Corrupt {
            path: p,
            segment,
            reason: r,
            ..
        } => {
            assert_eq!((p, *segment), (&path, id), "{what}: {err}");
            assert_eq!(r, &reason, "{what}");
        }
        other => panic!("{what}: expected Error::Corrupt, got {other}"),
    }
    assert_eq!(got, 0, "{what}: nothing replayed");
    assert_eq!(snapshot(dir.path()), before, "{what}: nothing changed");

    let (log, report) =
        CommitLog::open(dir.path(), config(CorruptionPolicy::Skip), |_, _, _| {}).unwrap();
    assert!(
        report.torn.is_empty(),
        "{what}: not a torn tail: {report:?}"
    );
    assert_eq!(report.damage.len(), 1, "{what}: {report:?}");
    assert_eq!(report.damage[0].segment, id, "{what}");
    assert_eq!(report.damage[0].reason, reason, "{what}");
    log.close().unwrap();
}

#[test]
fn a_newest_segment_cut_inside_an_entry_is_damage() {
    cut_is_damage("cut inside the last entry", |newest, _| {
        newest[2].offset as usize + 30
    });
}

#[test]
fn a_newest_segment_cut_in_the_zeros_after_its_entries_is_damage() {
    cut_is_damage("cut in the zeros", |_, bytes| {
        let data_end = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
        assert!(data_end + 100 < bytes.len(), "room left after the entries");
        data_end + 100
    });
}
