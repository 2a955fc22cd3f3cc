//! Property test of the corruption policy against a simple model: random
//! damage (a byte flip, a zeroed range, a truncation, a header flip) in a
//! random segment of a five-segment log. The model: entries of the other
//! segments and entries ending before the first damaged byte always come
//! back; `Stop` fails exactly when `Skip` reports damage, and then nothing
//! is replayed and every file is byte-identical; when `Stop` opens, both
//! policies replay the same entries; a truncation is always damage
//! (segments are made at their full size), except a cut to nothing of one
//! of the last two segments (a file being created); `commitlog::check`
//! fails exactly when `Stop` does.

mod common;

use common::{config, snapshot};

use std::collections::BTreeMap;

use commitlog::{CommitLog, CorruptionPolicy, Error, ReplayPosition};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use proptest::prelude::*;

type Entry = (u64, Mutation, ReplayPosition);

struct Pristine {
    files: BTreeMap<String, Vec<u8>>,
    segments: Vec<u64>,
    entries: Vec<Entry>,
    /// Framed end of each entry.
    ends: BTreeMap<ReplayPosition, u32>,
}

fn pristine() -> &'static Pristine {
    static P: std::sync::OnceLock<Pristine> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) =
            CommitLog::open(dir.path(), config(CorruptionPolicy::Stop), |_, _, _| {}).unwrap();
        let (mut entries, mut ends) = (Vec::new(), BTreeMap::new());
        for i in 0.. {
            let m = Mutation::builder(DecoratedKey::from_bytes(format!("k{i}")).unwrap())
                .cell(
                    "c",
                    0,
                    Cell::live(
                        vec![i as u8 + 1; 300 + (i * 53) % 400],
                        Timestamp::from_micros(1),
                    ),
                )
                .build()
                .unwrap();
            let pos = log.add(i as u64 % 3, &m).unwrap();
            ends.insert(pos, pos.offset + (9 + m.encoded_len() + 20) as u32);
            entries.push((i as u64 % 3, m, pos));
            let mut segments: Vec<u64> = entries.iter().map(|e: &Entry| e.2.segment).collect();
            segments.dedup();
            if segments.len() == 5 {
                break;
            }
        }
        log.close().unwrap();
        let mut segments: Vec<u64> = entries.iter().map(|e| e.2.segment).collect();
        segments.dedup();
        Pristine {
            files: snapshot(dir.path()),
            segments,
            entries,
            ends,
        }
    })
}

#[derive(Debug, Clone)]
enum Damage {
    Flip(usize),
    Zero(usize, usize),
    Truncate(usize),
    HeaderFlip(usize),
}

fn damage() -> impl Strategy<Value = (usize, Damage)> {
    (
        0usize..5,
        prop_oneof![
            (0usize..4096).prop_map(Damage::Flip),
            ((0usize..4096), (1usize..64)).prop_map(|(a, n)| Damage::Zero(a, n)),
            (0usize..4096).prop_map(Damage::Truncate),
            (0usize..24).prop_map(Damage::HeaderFlip),
        ],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn the_policies_agree_with_the_model((index, d) in damage()) {
        let p = pristine();
        let id = p.segments[index];
        let name = format!("CommitLog-1-{id}.log");
        let mut bytes = p.files[&name].clone();
        let data_end = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
        // The first byte the damage changes (or cuts).
        let first_bad = match d {
            Damage::Flip(at) => {
                let at = at % data_end;
                bytes[at] ^= 0x5a;
                at
            }
            Damage::Zero(at, n) => {
                let at = at % data_end;
                let end = (at + n).min(bytes.len());
                bytes[at..end].fill(0);
                at
            }
            Damage::Truncate(len) => {
                let len = len % data_end;
                bytes.truncate(len);
                len
            }
            Damage::HeaderFlip(at) => {
                bytes[at] ^= 0x01;
                at
            }
        };
        let changed = bytes != p.files[&name];
        let dir = tempfile::tempdir().unwrap();
        for (n, b) in &p.files {
            std::fs::write(dir.path().join(n), if *n == name { &bytes } else { b }).unwrap();
        }
        let before = snapshot(dir.path());

        let mut skipped = Vec::new();
        let (log, report) = CommitLog::open(dir.path(), config(CorruptionPolicy::Skip), |t, m, pos| {
            skipped.push((t, m, pos));
        })
        .unwrap();
        drop(log);
        // Nothing before the damage, nothing of another segment, is lost;
        // nothing is invented, the order is kept.
        for e in &p.entries {
            if e.2.segment != id || p.ends[&e.2] as usize <= first_bad {
                prop_assert!(skipped.contains(e), "{d:?} in segment {index}: lost {}", e.2);
            }
        }
        let mut it = p.entries.iter();
        prop_assert!(skipped.iter().all(|g| it.any(|e| e == g)));
        if matches!(d, Damage::Truncate(_)) && changed {
            prop_assert_eq!(
                !report.damage.is_empty(),
                first_bad > 0 || index < 3,
                "{:?} in segment {}: {:?}", d, index, report
            );
        }

        // Restore the damaged image exactly (skip mode sets a damaged
        // segment that held nothing replayed aside at once), then open by
        // default.
        for e in std::fs::read_dir(dir.path()).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        for (n, b) in &before {
            std::fs::write(dir.path().join(n), b).unwrap();
        }
        let checked = commitlog::check(dir.path());
        prop_assert!(snapshot(dir.path()) == before, "{:?}: check changed files", d);
        let mut stopped = Vec::new();
        let result = CommitLog::open(dir.path(), config(CorruptionPolicy::Stop), |t, m, pos| {
            stopped.push((t, m, pos));
        });
        match result {
            Err(Error::Corrupt { segment, offset, .. }) => {
                prop_assert!(
                    matches!(checked, Err(Error::Corrupt { segment: s, offset: o, .. }) if (s, o) == (segment, offset)),
                    "{:?}: open refused at {}:{}, check said {:?}", d, segment, offset, checked
                );
                prop_assert!(!report.damage.is_empty(), "{d:?}: Stop failed, Skip saw no damage");
                prop_assert_eq!(segment, id);
                prop_assert!(stopped.is_empty());
                prop_assert!(snapshot(dir.path()) == before, "{:?}: files changed", d);
            }
            Ok((log, opened)) => {
                let checked = checked.map_err(|e| e.to_string());
                prop_assert!(checked.is_ok(), "{:?}: open accepted, check said {:?}", d, checked);
                prop_assert_eq!(&checked.unwrap().torn, &opened.torn);
                prop_assert!(report.damage.is_empty(), "{d:?}: Skip saw damage, Stop opened");
                prop_assert_eq!(&stopped, &skipped);
                log.close().unwrap();
            }
            Err(other) => prop_assert!(false, "{d:?}: unexpected error {other}"),
        }
    }
}
