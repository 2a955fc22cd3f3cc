//! The table catalog's public behaviour: tables survive reloads, names
//! and limits are checked, and a damaged or hand-edited catalog file is
//! refused with an error that locates the damage.

use std::fs;

use replica::{CATALOG_FILE_NAME, Catalog, Error, TableOptions, TableSchema};

fn system(name: &str) -> TableSchema {
    let mut options = TableOptions::default();
    options.system = true;
    TableSchema::with_options(name, options).unwrap()
}

#[test]
fn tables_survive_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Catalog::load(dir.path()),
        Err(Error::CatalogMissing { found: None, .. })
    ));
    let mut c = Catalog::create(dir.path()).unwrap();
    assert!(c.is_empty());
    c.create_table(TableSchema::new("users").unwrap()).unwrap();
    c.create_table(system("peers")).unwrap();
    c.create_table(TableSchema::new("events_2").unwrap())
        .unwrap();
    c.drop_table("users").unwrap();
    let c = Catalog::load(dir.path()).unwrap();
    assert_eq!(c.names().collect::<Vec<_>>(), ["events_2", "peers"]);
    assert!(c.get("peers").unwrap().options().system);
    assert!(!c.get("events_2").unwrap().options().system);
    assert_eq!(c.len(), 2);
}

#[test]
fn duplicates_and_unknown_tables_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Catalog::create(dir.path()).unwrap();
    c.create_table(TableSchema::new("t").unwrap()).unwrap();
    let before = fs::read(c.path()).unwrap();
    let e = c.create_table(system("t")).unwrap_err();
    assert_eq!(e.to_string(), "table \"t\" already exists");
    let e = c.drop_table("nope").unwrap_err();
    assert_eq!(e.to_string(), "no table named \"nope\"");
    assert!(matches!(c.get("nope"), Err(Error::UnknownTable { .. })));
    assert_eq!(fs::read(c.path()).unwrap(), before);
    assert!(!c.get("t").unwrap().options().system);
}

#[test]
fn bad_names_say_what_is_wrong() {
    let long = "a".repeat(49);
    for (name, reason) in [
        ("", "at least 1 character"),
        (long.as_str(), "at most 48"),
        ("Users", "starts with a lowercase"),
        ("1st", "starts with a lowercase"),
        ("_x", "starts with a lowercase"),
        ("a-b", "only lowercase"),
        ("a.b", "only lowercase"),
        ("a/b", "only lowercase"),
        ("é", "starts with a lowercase"),
    ] {
        let e = TableSchema::new(name).unwrap_err().to_string();
        assert!(e.contains(reason), "{name:?}: {e}");
    }
    assert!(TableSchema::new("a".repeat(48)).is_ok());
}

#[test]
fn corruption_is_detected_and_located() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Catalog::create(dir.path()).unwrap();
    c.create_table(TableSchema::new("users").unwrap()).unwrap();
    let path = c.path().to_path_buf();
    let good = fs::read(&path).unwrap();
    let corrupt = |bytes: &[u8]| {
        fs::write(&path, bytes).unwrap();
        Catalog::load(dir.path()).unwrap_err().to_string()
    };
    // A flipped byte in a table name.
    let mut flipped = good.clone();
    let at = good.windows(5).position(|w| w == b"users").unwrap();
    flipped[at] = b'x';
    let e = corrupt(&flipped);
    assert!(
        e.contains("checksum mismatch") && e.contains(CATALOG_FILE_NAME),
        "{e}"
    );
    // Truncated before the checksum.
    let e = corrupt(&good[..good.len() - 10]);
    assert!(e.contains("not a crc32c checksum"), "{e}");
    assert!(corrupt(b"").contains("no checksum line"));
    assert!(corrupt(&[0xff, 0xfe, b'\n', b'\n']).contains("not UTF-8"));
    // Well checksummed but malformed bodies.
    for (body, what) in [
        ("replica-catalog 3\n", "line 1"),
        ("replica-catalog 2\n", "line 2: expected `next-generation"),
        (
            "replica-catalog 2\nnext-generation 2\ntable a system=0\n",
            "line 3: expected `table <name> system=<0|1> generation=<n>`",
        ),
        (
            "replica-catalog 2\nnext-generation 2\ntable a system=0 generation=x\n",
            "expected generation=<decimal number>",
        ),
        (
            "replica-catalog 2\nnext-generation 2\ntable a system=0 generation=2\n",
            "not below the next generation 2",
        ),
        (
            "replica-catalog 1\ntable users\n",
            "line 2: expected `table",
        ),
        (
            "replica-catalog 1\ntable users system=2\n",
            "system=0 or system=1",
        ),
        ("replica-catalog 1\ntable Users system=0\n", "lowercase"),
        (
            "replica-catalog 1\ntable a system=0\ntable a system=1\n",
            "line 3: table listed twice",
        ),
    ] {
        let crc = crc32c::crc32c(body.as_bytes());
        let e = corrupt(format!("{body}crc32c {crc:08x}\n").as_bytes());
        assert!(e.contains(what), "{body:?}: {e}");
    }
}

#[test]
fn each_incarnation_gets_a_new_generation_and_log_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Catalog::create(dir.path()).unwrap();
    let first = c.create_table(TableSchema::new("t").unwrap()).unwrap();
    let other = c.create_table(TableSchema::new("u").unwrap()).unwrap();
    c.drop_table("t").unwrap();
    // The counter survives a reload, so the next incarnation is new.
    let mut c = Catalog::load(dir.path()).unwrap();
    let second = c.create_table(TableSchema::new("t").unwrap()).unwrap();
    assert_eq!(
        (first.generation(), other.generation(), second.generation()),
        (1, 2, 3)
    );
    assert_ne!(first.log_id(), second.log_id());
    assert_ne!(first.log_id(), other.log_id());
    let c = Catalog::load(dir.path()).unwrap();
    assert_eq!(c.get("t").unwrap(), &second);
    // Generation 0 keeps the id version-1 catalogs' tables had: the
    // FNV-1a hash of the name alone.
    let legacy = TableSchema::new("t").unwrap();
    assert_eq!(legacy.log_id(), 0xaf63_e94c_8602_02a3);
}

#[test]
fn a_version_1_catalog_is_read_with_generation_0() {
    let dir = tempfile::tempdir().unwrap();
    let body = "replica-catalog 1\ntable users system=0\ntable peers system=1\n";
    let crc = crc32c::crc32c(body.as_bytes());
    fs::write(
        dir.path().join(CATALOG_FILE_NAME),
        format!("{body}crc32c {crc:08x}\n"),
    )
    .unwrap();
    let mut c = Catalog::load(dir.path()).unwrap();
    assert!(c.tables().all(|t| t.generation() == 0));
    assert!(c.get("peers").unwrap().options().system);
    // A change writes version 2, keeping generation 0 for the old.
    let new = c.create_table(TableSchema::new("events").unwrap()).unwrap();
    assert_eq!(new.generation(), 1);
    let text = fs::read_to_string(c.path()).unwrap();
    assert!(
        text.starts_with("replica-catalog 2\nnext-generation 2\n"),
        "{text}"
    );
    assert!(
        text.contains("table users system=0 generation=0\n"),
        "{text}"
    );
    let c = Catalog::load(dir.path()).unwrap();
    assert_eq!(c.names().collect::<Vec<_>>(), ["events", "peers", "users"]);
}

#[test]
fn create_refuses_an_existing_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Catalog::create(dir.path()).unwrap();
    c.create_table(TableSchema::new("t").unwrap()).unwrap();
    let before = fs::read(c.path()).unwrap();
    let e = Catalog::create(dir.path()).unwrap_err();
    assert!(matches!(e, Error::CatalogExists { .. }), "{e}");
    assert_eq!(fs::read(c.path()).unwrap(), before);
}
