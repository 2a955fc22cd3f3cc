//! A damaged transaction file makes `recover` (and so `SstableSet::open`)
//! fail with an error naming the file and line, touching nothing; a torn
//! last record is a crash during its append and is ignored.

use std::fs;

use compaction::{Error, SstableSet, recover};

fn record(body: &str) -> String {
    format!("{body} {:08x}\n", crc32c::crc32c(body.as_bytes()))
}

#[test]
fn damage_is_an_error_and_nothing_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = record("compaction-transaction 1");
    text.push_str(&record("input 1"));
    text.push_str("begin 0badc0de\n");
    text.push_str(&record("output 2"));
    let path = dir.path().join("compaction-1-0.txn");
    fs::write(&path, &text).unwrap();
    let bystander = dir.path().join("sst-2-Data.db");
    fs::write(&bystander, b"x").unwrap();
    let err = recover(dir.path()).unwrap_err();
    assert!(
        matches!(err, Error::CorruptTransaction { line: 3, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("compaction-1-0.txn"), "{err}");
    assert!(err.to_string().contains("line 3"), "{err}");
    let err = SstableSet::open(dir.path()).unwrap_err();
    assert!(matches!(err, Error::CorruptTransaction { .. }));
    assert!(path.exists() && bystander.exists());
}

#[test]
fn a_torn_last_record_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = record("compaction-transaction 1");
    text.push_str(&record("input 1"));
    text.push_str(&record("begin"));
    text.push_str(&record("output 2"));
    text.push_str("checkpoint keep 2 rel");
    fs::write(dir.path().join("compaction-1-0.txn"), &text).unwrap();
    // Output 2 was never kept: its (uncommitted) files go.
    fs::write(dir.path().join("sst-2-Data.db.tmp"), b"x").unwrap();
    let report = recover(dir.path()).unwrap();
    assert_eq!(report.transactions, 1);
    assert_eq!(report.removed_outputs, vec![2]);
    assert!(report.removed_inputs.is_empty());
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn unknown_records_and_bad_headers_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("compaction-3-0.txn");
    fs::write(&path, record("compaction-transaction 9")).unwrap();
    assert!(
        recover(dir.path())
            .unwrap_err()
            .to_string()
            .contains("header")
    );
    let mut text = record("compaction-transaction 1");
    text.push_str(&record("input 3"));
    text.push_str(&record("begin"));
    text.push_str(&record("checkpoint keep - release 4"));
    fs::write(&path, &text).unwrap();
    let e = recover(dir.path()).unwrap_err().to_string();
    assert!(e.contains("releases 4, which is not an input"), "{e}");
}
