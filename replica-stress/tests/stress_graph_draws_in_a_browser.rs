//! `--graph FILE.html` draws the run in one self-contained HTML file: a
//! `--compare` pair and a later `mixed` run added to the same file, each
//! with its per-second series, whose figures match the JSON reports. A
//! real browser (headless Chromium: Debian's `chromium`) then loads the
//! file, and every chart must have drawn every run's series; where no
//! Chromium is installed that part is skipped, saying so.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn run(dir: &Path, args: &[&str], json: &Path, graph: &Path) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_replica-stress"))
        .args([
            "--threads=2",
            "--duration=1s",
            "--partitions=2000",
            "--partition-size=4KiB",
            "--row-size=1KiB",
            "--budget=16MiB",
            "--prefault=off",
        ])
        .args(args)
        .arg(format!("--json={}", json.display()))
        .arg(format!("--graph={}", graph.display()))
        .env("TMPDIR", dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(&format!("Graph: {}", graph.display())),
        "{stdout}"
    );
    serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap()
}

/// Headless Chromium, if installed (`CHROMIUM` names another binary).
fn chromium() -> Option<PathBuf> {
    let names = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(["chromium", "chromium-browser", "google-chrome"].map(PathBuf::from));
    names.into_iter().find(|name| {
        Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn browse(chromium: &Path, profile: &Path, args: &[&str], page: &Path) -> Vec<u8> {
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// The elements `<name ...>` of `dom` (their opening tags), less the
/// page script's templates of them (`${...}` in their attributes).
fn tags<'a>(dom: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name} ");
    dom.match_indices(&open)
        .map(|(i, _)| &dom[i..i + dom[i..].find('>').unwrap()])
        .filter(|t| !t.contains("${"))
        .collect()
}

fn attr<'a>(tag: &'a str, name: &str) -> &'a str {
    let key = format!(" {name}=\"");
    let start = tag
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        + key.len();
    &tag[start..start + tag[start..].find('"').unwrap()]
}

/// The part of `dom` inside the chart `id`.
fn chart<'a>(dom: &'a str, id: &str) -> &'a str {
    let start = dom
        .find(&format!("data-chart=\"{id}\""))
        .unwrap_or_else(|| panic!("no chart {id}"));
    &dom[start..start + dom[start..].find("</svg>").unwrap()]
}

#[test]
fn the_graph_holds_every_run_and_draws_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("graph.html");
    let compare = run(
        dir.path(),
        &["--compare"],
        &dir.path().join("compare.json"),
        &graph,
    );
    let mixed = run(
        dir.path(),
        &["mixed"],
        &dir.path().join("mixed.json"),
        &graph,
    );
    let reports = [&compare["baseline"], &compare["candidate"], &mixed];

    // The file holds the three runs, in order, with the JSON's figures.
    let runs = replica_stress::read_graph(&graph).unwrap();
    let labels: Vec<&str> = runs.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "write (per-memtable)",
            "write (soft-limit)",
            "mixed (soft-limit)"
        ]
    );
    for (r, report) in runs.iter().zip(reports) {
        let ops: u64 = r["series"]["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(ops, report["total_operations"].as_u64().unwrap());
        assert_eq!(r["summary"]["op_rate"], report["op_rate"]);
        assert_eq!(r["summary"]["flushes"], report["dirty_memory"]["flushes"]);
        assert_eq!(r["limits"]["hard"], 16 << 20);
        assert_eq!(r["limits"]["unspooled_hard"], 8 << 20);
        assert_eq!(r["limits"]["soft"], 4 << 20);
    }
    assert_eq!(runs[2]["mixed"], true);
    let page = std::fs::read_to_string(&graph).unwrap();
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "self-contained: nothing to fetch"
    );

    let Some(chromium) = chromium() else {
        eprintln!(
            "skipped the browser part: no headless Chromium (install Debian's `chromium`, \
             or set CHROMIUM)"
        );
        return;
    };
    let profile = dir.path().join("profile");
    let dom = String::from_utf8(browse(&chromium, &profile, &["--dump-dom"], &graph)).unwrap();
    let charts = tags(&dom, "svg");
    let charts: Vec<&&str> = charts
        .iter()
        .filter(|t| t.contains("class=\"chart\""))
        .collect();
    assert_eq!(charts.len(), 3, "three charts");
    let points = |run: usize| runs[run]["series"]["time_s"].as_array().unwrap().len();
    for (id, per_run) in [
        (
            "op-rate",
            vec![
                vec!["operations"],
                vec!["operations"],
                vec!["reads", "writes"],
            ],
        ),
        ("latency", vec![vec!["p50", "p99", "p99.9", "max"]; 3]),
        (
            "dirty-memory",
            vec![vec!["real dirty", "unspooled dirty"]; 3],
        ),
    ] {
        let lines = tags(chart(&dom, id), "polyline");
        for (run, names) in per_run.iter().enumerate() {
            for name in names {
                let line = lines
                    .iter()
                    .find(|l| {
                        attr(l, "data-run") == run.to_string() && attr(l, "data-series") == *name
                    })
                    .unwrap_or_else(|| panic!("{id}: no {name} of run {run}"));
                assert_eq!(attr(line, "data-points"), points(run).to_string(), "{line}");
                assert!(!attr(line, "points").contains("NaN"), "{line}");
            }
        }
    }
    let dirty = chart(&dom, "dirty-memory");
    assert_eq!(
        tags(dirty, "line")
            .iter()
            .filter(|l| l.contains("class=\"limit\""))
            .count(),
        3
    );
    let flush_marks: usize = runs
        .iter()
        .map(|r| r["marks"]["flushes_s"].as_array().unwrap().len())
        .sum();
    assert!(
        flush_marks > 0,
        "16 MiB of budget and a second of writes flush"
    );
    assert_eq!(dirty.matches("data-kind=\"flush\"").count(), flush_marks);
    // The table of runs shows the JSON's figures.
    let rows = tags(&dom, "tr");
    let rows: Vec<&&str> = rows
        .iter()
        .filter(|r| r.contains("class=\"run\""))
        .collect();
    assert_eq!(rows.len(), 3);
    for (row, report) in rows.iter().zip(reports) {
        assert_eq!(
            attr(row, "data-total-ops"),
            report["total_operations"].to_string()
        );
    }
    for report in reports {
        let rate = report["op_rate"].as_f64().unwrap().round();
        assert!(
            dom.contains(&format!("<td class=\"op-rate\">{rate}</td>")),
            "{rate}"
        );
    }
    // And a screenshot is a picture, not a blank page.
    let shot = dir.path().join("shot.png");
    browse(
        &chromium,
        &profile,
        &[
            "--window-size=1000,1200",
            &format!("--screenshot={}", shot.display()),
        ],
        &graph,
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    assert!(
        png.len() > 20_000,
        "{} bytes: a blank page is smaller",
        png.len()
    );
}
