//! The peer bench (benches/peer) at its smoke size: both engines, the
//! write shape and one read case, each in a child process (this test
//! binary again). Checks the report's shape and that every read was
//! checked and found as written, not speed.

#[allow(
    dead_code,
    reason = "the bench's parts that only the bench's options reach"
)]
#[path = "../benches/peer/harness/mod.rs"]
mod harness;

use clap::Parser;

fn smoke() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let options = harness::Options::try_parse_from([
        "peer",
        "--scale=64",
        "--duration=500ms",
        "--write-threads=4",
        "--read-threads=2",
        "--load-threads=2",
        "--shapes=1x8KiB,8x1KiB",
        "--data=2",
        "--keys=zipfian",
    ])
    .expect("the smoke options parse");
    let options = harness::Options {
        dir: Some(dir.path().to_path_buf()),
        ..options
    };
    let mut out = Vec::new();
    let reports = harness::run_parent(&options, &mut out).expect("the smoke runs");
    let text = String::from_utf8(out).expect("a text report");
    print!("{text}");
    // The write shape, then one read case per shape.
    assert_eq!(reports.len(), 3, "{text}");
    assert!(reports[0].title.starts_with("write 128x1KiB"), "{text}");
    for report in &reports {
        let engines: Vec<&str> = report.results.iter().map(|(e, _, _)| e.name()).collect();
        assert_eq!(engines, ["replica", "fjall"], "{text}");
        for (engine, r, bound) in &report.results {
            let ops = r["ops"].as_u64().expect("ops");
            assert!(ops > 0, "{} did nothing in {}", engine.name(), report.title);
            assert_eq!(r["errors"], 0, "{}: {}", engine.name(), r["first_error"]);
            for k in [
                "op_rate",
                "p50_us",
                "p95_us",
                "p99_us",
                "max_us",
                "cpu_us_per_op",
            ] {
                assert!(r[k].as_f64().is_some_and(|v| v > 0.0), "{k} of {r}");
            }
            assert!(r["peak_rss"].as_u64().is_some_and(|v| v > 0), "{r}");
            assert!(r["stall_ms"].as_u64().is_some(), "{r}");
            if report.title.starts_with("read") {
                // Every read checked, every one as written, and the trace
                // holds every read.
                assert_eq!(r["checked"], r["reads"], "{r}");
                assert_eq!(r["bad"], 0, "{}: {}", engine.name(), r["first_bad"]);
                let bound = bound.as_ref().expect("a read case has its LRU bound");
                assert_eq!(bound.traced, ops, "{r}");
                assert!((0.0..=1.0).contains(&bound.nominal));
                if *engine == harness::EngineKind::Replica {
                    let held = bound.at_held.expect("the replica's cache held partitions");
                    assert!(held.0 > 0);
                }
            }
        }
    }
    for header in [
        "engine",
        "op/s",
        "p99 ms",
        "CPU us/op",
        "RSS MiB",
        "stall ms",
        "checked",
    ] {
        assert!(text.contains(header), "{header} missing:\n{text}");
    }
    assert_eq!(text.matches("replica/fjall: op/s").count(), 3, "{text}");
    assert_eq!(text.matches("LRU bound").count(), 4, "{text}");
    assert!(
        text.contains("measured"),
        "the replica's hit ratio:\n{text}"
    );
    assert_eq!(
        text.matches("its block cache answered").count(),
        2,
        "fjall's block cache:\n{text}"
    );
}

fn main() {
    // A child of the parent this test runs (the engines' processes).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a.starts_with("--peer-child")) {
        if let Err(e) = harness::main(&args, &mut std::io::stdout()) {
            eprintln!("peer child: {e}");
            std::process::exit(1);
        }
        return;
    }
    test_support::single_test_main("peer_smoke", smoke);
}
