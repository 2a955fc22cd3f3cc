//! Sources need not be canonical (an sstable may hold shadowed data and
//! redundant range tombstone changes): the merging reader still produces the
//! canonical, reconciled stream.

use mutation::{
    Cell, ClusteringKey, DecoratedKey, Fragment, FragmentReader, FragmentsReader, MergingReader,
    Mutation, Position, Row, Timestamp, Tombstone, to_mutations, validate_stream,
};

fn ts(v: i64) -> Timestamp {
    Timestamp::from_micros(v)
}

fn t(v: i64) -> Option<Tombstone> {
    Some(Tombstone::new(ts(v), 0))
}

fn ck(s: &str) -> ClusteringKey {
    ClusteringKey::new(s.as_bytes().to_vec()).unwrap()
}

fn row(key: &str, cell_ts: i64) -> Fragment {
    Fragment::ClusteringRow {
        key: ck(key),
        row: Row::new().with_cell(0, Cell::live(key.as_bytes().to_vec(), ts(cell_ts))),
    }
}

fn rtc(position: Position, tombstone: Option<Tombstone>) -> Fragment {
    Fragment::RangeTombstoneChange {
        position,
        tombstone,
    }
}

fn drain(r: &mut dyn FragmentReader) -> Vec<Fragment> {
    let mut out = Vec::new();
    while let Some(f) = r.next().unwrap() {
        out.push(f);
    }
    out
}

#[test]
fn raw_sources_merge_to_the_canonical_stream() {
    let key = DecoratedKey::from_bytes("pk").unwrap();
    let a = vec![
        Fragment::PartitionStart {
            key: key.clone(),
            tombstone: t(5),
        },
        // Not greater than the partition tombstone: deletes nothing new.
        rtc(Position::Before(ck("b")), t(3)),
        row("b", 4), // shadowed by the partition tombstone
        rtc(Position::After(ck("b")), None),
        row("c", 9),
        Fragment::ClusteringRow {
            key: ck("d"),
            row: Row::new()
                .with_tombstone(Tombstone::new(ts(2), 0))
                .with_cell(0, Cell::live("d", ts(1))),
        },
        Fragment::PartitionEnd,
    ];
    let b = vec![
        Fragment::PartitionStart {
            key: key.clone(),
            tombstone: None,
        },
        rtc(Position::Before(ck("a")), t(7)),
        rtc(Position::Before(ck("c")), t(7)), // redundant change
        row("c", 6),                          // shadowed by the range tombstone
        rtc(Position::After(ck("c")), None),
        row("e", 6),
        Fragment::PartitionEnd,
    ];
    assert!(validate_stream(&a).is_ok() && validate_stream(&b).is_ok());

    let merged = drain(&mut MergingReader::new([
        FragmentsReader::new(a.clone()),
        FragmentsReader::new(b.clone()),
    ]));

    let expected = vec![
        Fragment::PartitionStart {
            key: key.clone(),
            tombstone: t(5),
        },
        rtc(Position::Before(ck("a")), t(7)),
        row("c", 9),
        rtc(Position::After(ck("c")), None),
        row("e", 6),
        Fragment::PartitionEnd,
    ];
    assert_eq!(merged, expected);

    // The same as collecting each source into (canonical) mutations and
    // merging those.
    let ma = to_mutations(&mut FragmentsReader::new(a)).unwrap();
    let mb = to_mutations(&mut FragmentsReader::new(b)).unwrap();
    let reconciled: Vec<Fragment> = Mutation::reconcile_all(ma.into_iter().chain(mb))
        .into_iter()
        .flat_map(Mutation::into_fragments)
        .collect();
    assert_eq!(merged, reconciled);
}

#[test]
fn invalid_source_is_reported_not_merged() {
    let key = DecoratedKey::from_bytes("pk").unwrap();
    // A row outside any partition.
    let bad = vec![row("a", 1)];
    let good = vec![
        Fragment::PartitionStart {
            key,
            tombstone: None,
        },
        Fragment::PartitionEnd,
    ];
    let mut merged = MergingReader::new([FragmentsReader::new(good), FragmentsReader::new(bad)]);
    let err = merged.next().unwrap_err().to_string();
    assert!(
        err.contains("source #1 produced a clustering row between partitions"),
        "{err}"
    );
}
