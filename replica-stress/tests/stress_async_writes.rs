//! `replica-stress --async N` against the database: each client thread
//! keeps N writes in flight through `Database::apply_async`; every
//! operation completes without error, concurrent writes share the batch
//! log's syncs, and the run's description and JSON say how the clients
//! wrote. An out-of-range N is refused before anything runs.

use clap::Parser;
use replica_stress::Error;
use replica_stress::{DatabaseFactory, StressOptions, execute};

fn options(extra: &[&str]) -> StressOptions {
    let base = [
        "replica-stress",
        "--threads=2",
        "--ops=3000",
        "--partitions=500",
        "--partition-size=1KiB",
        "--commitlog=batch",
        // The machine-sized default pool, not touched whole at open.
        "--prefault=off",
    ];
    StressOptions::try_parse_from(base.iter().chain(extra)).unwrap()
}

#[test]
fn async_writers_complete_share_syncs_and_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let json_arg = format!("--json={}", json.display());
    // No populate phase: its blocking writes would share no syncs, and
    // this measures the asynchronous clients' sharing.
    let o = options(&["--async=32", "mixed", "--populate=no", &json_arg]);
    let mut out = Vec::new();
    let summaries = execute(&o, &mut DatabaseFactory::new(&o), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("with 2 threads x 32 async writes in flight"),
        "{text}"
    );
    let [s] = summaries.as_slice() else {
        panic!("one run")
    };
    assert_eq!(s.counts.ops, 3000);
    assert_eq!(s.counts.errors, 0, "{:?}", s.first_error);
    assert!(s.counts.writes > 0 && s.counts.reads > 0);
    assert!(
        s.commitlog_synced_entries > 2 * s.commitlog_syncs,
        "writes in flight share syncs: {} entries over {} syncs",
        s.commitlog_synced_entries,
        s.commitlog_syncs
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["async_in_flight"], 32);
    assert_eq!(v["total_operations"], 3000);
}

#[test]
fn too_many_writes_in_flight_are_refused() {
    let o = options(&["--async=70000"]);
    let err = execute(&o, &mut DatabaseFactory::new(&o), &mut Vec::new()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidOption {
                name: "--async",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("65536"), "{err}");
}
