//! Issue 18's lost write, built deterministically with the test hooks: a
//! writer takes the active memtable M1; a flush of M1 installs M2 and
//! pauses before sealing M1; a second writer's acknowledged writes go to
//! M2 and fill a log segment; the first writer then applies to M1, with an
//! entry later in the log than all of them. Flushing M1 must not let the
//! log retire the segment that only M2 (not flushed) still needs: after a
//! crash, replay brings every acknowledged write back.

mod pause;

use pause::Pause;
use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::{CommitLogMode, Database, DatabaseConfig, HookPoint, TableSchema};

const SEGMENT: u32 = 64 << 10;

fn config(dir: &Path) -> DatabaseConfig {
    let mut config = DatabaseConfig::new(dir);
    config.commitlog = CommitLogMode::Batch(Duration::ZERO);
    config.commitlog_segment_size = SEGMENT;
    config
}

fn write(key: &str) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(key.to_owned()).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![b'v'; 1024], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

fn read(db: &Database, key: &str) -> Option<Mutation> {
    db.get(
        "t",
        &DecoratedKey::from_bytes(key.to_owned()).unwrap(),
        ClusteringRange::full(),
    )
    .unwrap()
}

#[test]
fn a_flush_keeps_the_log_entries_of_a_newer_memtable() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::open(config(dir.path())).unwrap());
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    // Something to flush in M1 besides the paused writer's row.
    db.apply("t", &write("m1-first")).unwrap();

    let writer_a = Pause::armed();
    let flush = Pause::armed();
    {
        let (writer_a, flush) = (Arc::clone(&writer_a), Arc::clone(&flush));
        db.set_test_hook(Some(Arc::new(move |point| match point {
            HookPoint::WriterTookActive if thread::current().name() == Some("writer-a") => {
                writer_a.stop_here();
            }
            HookPoint::FlushInstalledFresh => flush.stop_here(),
            _ => {}
        })));
    }

    // 1. Writer A takes M1 and stops.
    let a = {
        let db = Arc::clone(&db);
        thread::Builder::new()
            .name("writer-a".into())
            .spawn(move || db.apply("t", &write("a")))
            .unwrap()
    };
    writer_a.wait_reached();
    // 2. A flush of M1 installs M2 and stops before sealing M1.
    let f = {
        let db = Arc::clone(&db);
        thread::spawn(move || db.flush("t"))
    };
    flush.wait_reached();
    // 3. Writer B: acknowledged writes into M2, more than a segment's worth,
    // so the log moves on to another segment.
    let b_writes = (SEGMENT as usize / 1024) + 8;
    for i in 0..b_writes {
        db.apply("t", &write(&format!("b{i:04}"))).unwrap();
    }
    // 4. Writer A appends (after all of B's entries) and applies to M1.
    writer_a.release();
    a.join().unwrap().unwrap();
    // 5. The flush seals and writes M1 (rows m1-first and a), and tells the
    // log what it made durable.
    flush.release();
    f.join().unwrap().unwrap();
    db.set_test_hook(None);
    assert!(read(&db, "b0000").is_some());

    // 6. A crash before M2 is flushed, and a reopen that replays the log.
    let db = Arc::into_inner(db).unwrap();
    db.crash();
    let db = Database::open(config(dir.path())).unwrap();
    let mut lost = Vec::new();
    for i in 0..b_writes {
        let key = format!("b{i:04}");
        if read(&db, &key).is_none() {
            lost.push(key);
        }
    }
    assert!(
        lost.is_empty(),
        "{} of {b_writes} acknowledged writes lost after replay: {:?}...",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    assert!(read(&db, "a").is_some() && read(&db, "m1-first").is_some());
    db.close().unwrap();
}
