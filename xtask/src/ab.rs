//! `cargo xtask ab REV_A REV_B [--runs N] -- ARGS...`: the main program of
//! two revisions, side by side on this machine.
//!
//! Each revision is exported from git (`git archive`, so the working tree
//! is not touched) into `target/ab/<commit>/src` and built in release mode
//! into its own target directory beside it (kept: a second A/B of the same
//! commit does not build it again). The runs alternate, A then B, `N`
//! times (3 by default), each `replica-stress ARGS... --json FILE`; before
//! each run the 1-minute load average is read from `/proc/loadavg`, and the
//! run's CPU time (user + system) is what it adds to this process's
//! children's times (`/proc/self/stat`). The table printed at the end gives
//! every run's figure of each metric, both means and the ratio B/A of the
//! means, so a figure is reproducible from two commit ids.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

use crate::runner;

/// The figures compared, as (label, path in the run's JSON summary,
/// whether larger is better). `cpu_s` and `cpu_us_per_op` are measured
/// here, not read from the JSON.
const METRICS: &[(&str, &str, bool)] = &[
    ("op rate (op/s)", "op_rate", true),
    ("latency mean (ms)", "latency_ms.mean", false),
    ("latency p95 (ms)", "latency_ms.p95", false),
    ("latency p99 (ms)", "latency_ms.p99", false),
    ("latency p99.9 (ms)", "latency_ms.p99_9", false),
    ("latency max (ms)", "latency_ms.max", false),
    ("longest pause (ms)", "longest_pause_ms", false),
    (
        "writers blocked (s)",
        "dirty_memory.writers_blocked_s",
        false,
    ),
    (
        "peak RSS (MiB)",
        "process_memory.peak_resident_bytes",
        false,
    ),
    ("flushes", "dirty_memory.flushes", true),
    ("CPU (s)", "cpu_s", false),
    ("CPU per op (us)", "cpu_us_per_op", false),
];

/// What `cargo xtask ab` was asked.
#[derive(Debug, PartialEq)]
struct Request {
    a: String,
    b: String,
    runs: usize,
    args: Vec<String>,
}

fn usage() -> String {
    "usage: cargo xtask ab REV_A REV_B [--runs N] -- ARGS...\n\
     (builds replica-stress at both revisions, alternates N runs of each, default 3,\n\
     with ARGS, and prints every run's figures and the ratios B/A)"
        .to_owned()
}

fn parse(args: &[&str]) -> Result<Request, String> {
    let (ours, theirs) = match args.iter().position(|a| *a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let mut revs = Vec::new();
    let mut runs = 3;
    let mut it = ours.iter();
    while let Some(arg) = it.next() {
        match *arg {
            "--runs" => {
                let value = it
                    .next()
                    .ok_or_else(|| format!("--runs needs a count\n{}", usage()))?;
                runs = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=100).contains(n))
                    .ok_or_else(|| format!("--runs {value}: expected 1 to 100 runs"))?;
            }
            flag if flag.starts_with('-') => {
                return Err(format!("unknown option {flag}\n{}", usage()));
            }
            rev => revs.push(rev.to_owned()),
        }
    }
    let [a, b] = <[String; 2]>::try_from(revs)
        .map_err(|revs| format!("expected two revisions, got {}\n{}", revs.len(), usage()))?;
    if let Some(json) = theirs.iter().find(|a| a.starts_with("--json")) {
        return Err(format!(
            "{json}: ab passes --json to each run itself (the runs' files are under target/ab/runs)"
        ));
    }
    Ok(Request {
        a,
        b,
        runs,
        args: theirs.iter().map(|s| (*s).to_owned()).collect(),
    })
}

/// The full commit id of `rev`.
fn resolve(rev: &str) -> Result<String, String> {
    let spec = format!("{rev}^{{commit}}");
    let out = runner::program("git", &["rev-parse", "--verify", "--quiet", &spec])
        .output()
        .map_err(|_| format!("{rev}: not a commit of this repository"))?;
    Ok(out.trim().to_owned())
}

/// Exports `commit` and builds its `replica-stress`, unless a build of it
/// is there already; returns the binary.
fn build(commit: &str) -> Result<PathBuf, String> {
    let root = Path::new("target/ab").join(commit);
    let src = root.join("src");
    let binary = root.join("target/release/replica-stress");
    if binary.is_file() {
        println!("{}: built already ({})", &commit[..10], binary.display());
        return Ok(binary);
    }
    if !src.join("Cargo.toml").is_file() {
        let partial = root.join("src.partial");
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir_all(&partial)
            .map_err(|e| format!("cannot create {}: {e}", partial.display()))?;
        export(commit, &partial)?;
        std::fs::rename(&partial, &src).map_err(|e| {
            format!(
                "cannot move {} to {}: {e}",
                partial.display(),
                src.display()
            )
        })?;
    }
    let manifest = src.join("Cargo.toml");
    let target = root.join("target");
    let manifest = manifest.to_string_lossy().into_owned();
    runner::cargo(&[
        "build",
        "--release",
        "--manifest-path",
        &manifest,
        "-p",
        "replmem-replica-stress",
        "--bin",
        "replica-stress",
    ])
    .env("CARGO_TARGET_DIR", &target.to_string_lossy())
    .status()?;
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(format!("{commit}: the build made no {}", binary.display()))
    }
}

/// `git archive commit | tar -x -C dir`.
fn export(commit: &str, dir: &Path) -> Result<(), String> {
    let mut archive = Command::new("git")
        .args(["archive", "--format=tar", commit])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start git archive: {e}"))?;
    let stdout = archive
        .stdout
        .take()
        .ok_or("git archive has no output pipe")?;
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(dir)
        .stdin(stdout)
        .status()
        .map_err(|e| format!("cannot start tar: {e}"))?;
    let archived = archive.wait().map_err(|e| format!("git archive: {e}"))?;
    if archived.success() && tar.success() {
        Ok(())
    } else {
        Err(format!(
            "exporting {commit} into {} failed (git archive {archived}, tar {tar})",
            dir.display()
        ))
    }
}

/// The 1-minute load average.
fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The CPU time, in clock ticks, of this process's waited-for children:
/// `cutime + cstime`, fields 16 and 17 of `/proc/self/stat`.
fn children_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    children_ticks_of(&stat)
}

fn children_ticks_of(stat: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may hold spaces:
    // count the fields after its closing parenthesis (field 3 first).
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let cutime: u64 = fields.get(16 - 3)?.parse().ok()?;
    let cstime: u64 = fields.get(17 - 3)?.parse().ok()?;
    Some(cutime + cstime)
}

/// Clock ticks per second (`getconf CLK_TCK`; 100, Linux's, if unknown).
fn ticks_per_second() -> f64 {
    runner::program("getconf", &["CLK_TCK"])
        .output()
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// The number at `path` (dot-separated) in `value`.
fn number_at(value: &Value, path: &str) -> Option<f64> {
    path.split('.')
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_f64)
}

/// One run's figures, in [`METRICS`] order.
fn figures(summary: &Value, cpu_s: f64) -> Vec<Option<f64>> {
    METRICS
        .iter()
        .map(|(_, path, _)| match *path {
            "cpu_s" => Some(cpu_s),
            "cpu_us_per_op" => number_at(summary, "total_operations")
                .filter(|ops| *ops > 0.0)
                .map(|ops| cpu_s * 1e6 / ops),
            "process_memory.peak_resident_bytes" => {
                number_at(summary, path).map(|b| b / f64::from(1 << 20))
            }
            _ => number_at(summary, path),
        })
        .collect()
}

fn mean(values: &[Option<f64>]) -> Option<f64> {
    let known: Vec<f64> = values.iter().flatten().copied().collect();
    (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64)
}

fn show(v: Option<f64>) -> String {
    match v {
        None => "-".to_owned(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.3}"),
    }
}

/// The table: each metric's runs of A, of B, their means and B/A.
fn table(a: &[Vec<Option<f64>>], b: &[Vec<Option<f64>>]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:<22} {:>34} {:>34} {:>10} {:>10} {:>7}\n",
        "metric", "A runs", "B runs", "A mean", "B mean", "B/A"
    ));
    for (i, (label, _, higher_is_better)) in METRICS.iter().enumerate() {
        let runs_a: Vec<Option<f64>> = a.iter().map(|r| r[i]).collect();
        let runs_b: Vec<Option<f64>> = b.iter().map(|r| r[i]).collect();
        let (ma, mb) = (mean(&runs_a), mean(&runs_b));
        let ratio = match (ma, mb) {
            (Some(x), Some(y)) if x != 0.0 => format!("{:.2}x", y / x),
            _ => "-".to_owned(),
        };
        let list = |runs: &[Option<f64>]| {
            runs.iter()
                .map(|v| show(*v))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        out.push_str(&format!(
            "{:<22} {:>34} {:>34} {:>10} {:>10} {:>7}{}\n",
            label,
            list(&runs_a),
            list(&runs_b),
            show(ma),
            show(mb),
            ratio,
            if *higher_is_better {
                ""
            } else {
                "  (lower is better)"
            }
        ));
    }
    out
}

pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let request = parse(args)?;
    let commits = [resolve(&request.a)?, resolve(&request.b)?];
    let binaries = [build(&commits[0])?, build(&commits[1])?];
    let runs_dir = Path::new("target/ab/runs");
    std::fs::create_dir_all(runs_dir)
        .map_err(|e| format!("cannot create {}: {e}", runs_dir.display()))?;
    let ticks = ticks_per_second();
    let mut results: [Vec<Vec<Option<f64>>>; 2] = [Vec::new(), Vec::new()];
    let mut loads = Vec::new();
    for run in 1..=request.runs {
        for (side, name) in [(0, "A"), (1, "B")] {
            let commit = &commits[side];
            let json = runs_dir.join(format!("{}-{run}.json", &commit[..10]));
            let _ = std::fs::remove_file(&json);
            let load = load_average();
            loads.push(format!(
                "{name}{run} {}",
                load.map_or("?".to_owned(), |l| format!("{l:.2}"))
            ));
            println!(
                "run {run}/{} {name} ({}), load average {}",
                request.runs,
                &commit[..10],
                load.map_or("unknown".to_owned(), |l| format!("{l:.2}"))
            );
            let before = children_ticks();
            let started = Instant::now();
            let status = Command::new(&binaries[side])
                .args(&request.args)
                .arg("--json")
                .arg(&json)
                .stdout(Stdio::null())
                .status()
                .map_err(|e| format!("cannot start {}: {e}", binaries[side].display()))?;
            if !status.success() {
                return Err(format!(
                    "run {run} of {name} ({commit}) failed ({status}); its arguments: {}",
                    request.args.join(" ")
                ));
            }
            let cpu_s = match (before, children_ticks()) {
                (Some(b), Some(a)) => a.saturating_sub(b) as f64 / ticks,
                _ => f64::NAN,
            };
            let text = std::fs::read_to_string(&json)
                .map_err(|e| format!("run {run} of {name} wrote no {}: {e}", json.display()))?;
            let summary: Value = serde_json::from_str(&text)
                .map_err(|e| format!("{}: not JSON: {e}", json.display()))?;
            let f = figures(&summary, cpu_s);
            println!(
                "  {:.1} s, op rate {}, CPU {:.1} s",
                started.elapsed().as_secs_f64(),
                show(f[0]),
                cpu_s
            );
            results[side].push(f);
        }
    }
    println!(
        "\nA = {} ({}), B = {} ({}), {} runs each, alternating; arguments: {}",
        &commits[0][..10],
        request.a,
        &commits[1][..10],
        request.b,
        request.runs,
        if request.args.is_empty() {
            "(none)".to_owned()
        } else {
            request.args.join(" ")
        }
    );
    println!(
        "load average (1 min) before each run: {}\n",
        loads.join(", ")
    );
    print!("{}", table(&results[0], &results[1]));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_read_and_bad_ones_refused() {
        let r = parse(&["main", "HEAD", "--runs", "5", "--", "--duration", "10s"]).unwrap();
        assert_eq!(
            r,
            Request {
                a: "main".into(),
                b: "HEAD".into(),
                runs: 5,
                args: vec!["--duration".into(), "10s".into()],
            }
        );
        assert_eq!(parse(&["a", "b"]).unwrap().runs, 3);
        assert!(parse(&["a"]).unwrap_err().contains("two revisions"));
        assert!(parse(&["a", "b", "c"]).unwrap_err().contains("got 3"));
        assert!(
            parse(&["a", "b", "--runs", "0"])
                .unwrap_err()
                .contains("1 to 100")
        );
        assert!(
            parse(&["a", "b", "--runs"])
                .unwrap_err()
                .contains("needs a count")
        );
        assert!(
            parse(&["a", "b", "--fast"])
                .unwrap_err()
                .contains("unknown option")
        );
        assert!(
            parse(&["a", "b", "--", "--json=x"])
                .unwrap_err()
                .contains("passes --json")
        );
    }

    #[test]
    fn the_childrens_cpu_time_is_read_past_a_name_with_spaces() {
        // pid (comm) state ppid ... utime stime cutime cstime ...
        let stat = "42 (x task (1)) S 1 2 3 4 5 6 7 8 9 10 11 12 30 7 0 0 0";
        assert_eq!(children_ticks_of(stat), Some(37));
        assert_eq!(children_ticks_of("garbage"), None);
    }

    #[test]
    fn figures_come_from_the_summary_and_the_cpu_time() {
        let summary: Value = serde_json::json!({
            "op_rate": 2000.0,
            "total_operations": 60000,
            "latency_ms": {"mean": 1.5, "p95": 3.0, "p99": 4.0, "p99_9": 8.0, "max": 20.0},
            "longest_pause_ms": 50.0,
            "dirty_memory": {"writers_blocked_s": 0.5, "flushes": 12},
            "process_memory": {"peak_resident_bytes": 512u64 << 20},
        });
        let f = figures(&summary, 3.0);
        assert_eq!(f.len(), METRICS.len());
        assert_eq!(f[0], Some(2000.0));
        assert_eq!(f[8], Some(512.0), "RSS in MiB");
        assert_eq!(f[10], Some(3.0));
        assert_eq!(f[11], Some(50.0), "3 s over 60,000 operations");
        let missing = figures(&serde_json::json!({}), 1.0);
        assert_eq!(missing[0], None);
        assert_eq!(missing[11], None);
    }

    #[test]
    fn the_table_gives_every_run_both_means_and_the_ratio() {
        let a = vec![
            vec![Some(100.0); METRICS.len()],
            vec![Some(300.0); METRICS.len()],
        ];
        let b = vec![vec![Some(300.0); METRICS.len()], vec![None; METRICS.len()]];
        let t = table(&a, &b);
        let op_rate = t.lines().nth(1).unwrap();
        assert!(op_rate.starts_with("op rate"), "{op_rate}");
        assert!(op_rate.contains("100.0 / 300.0"), "{op_rate}");
        assert!(op_rate.contains("300.0 / -"), "{op_rate}");
        assert!(op_rate.contains("1.50x"), "{op_rate}");
    }
}
