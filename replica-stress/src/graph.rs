//! `--graph FILE.html`: the run as a picture, as cassandra-stress's
//! `-graph` option draws it. One self-contained HTML file (its data and
//! its drawing code inline, nothing fetched) with, per second, the op rate
//! (reads and writes apart in a mixed load), the latency percentiles (p50,
//! p99, p99.9, max), the dirty memory against the soft limit and the two
//! hard limits, and the flushes and compactions as marks on the time axis.
//! A `--compare` pair is drawn in one file; a later run given the same
//! file is added beside the earlier ones.
//!
//! [`GraphRecorder`] collects one run's series as an [`Observer`];
//! [`write_graph`] adds the runs to the file.

use std::path::Path;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{Value, json};

use crate::error::{Error, io_err};
use crate::latency::{IntervalReport, micros_to_ms};
use crate::runner::Observer;
use crate::summary::Summary;

/// The page, with `/*RUNS*/` where the runs' JSON goes.
const TEMPLATE: &str = include_str!("graph.html");
/// What opens the runs' JSON in a graph file, and what closes it.
const DATA_START: &str = "<script type=\"application/json\" id=\"replica-stress-runs\">";
const DATA_END: &str = "</script>";

/// Collects one run's per-second series for [`write_graph`].
#[derive(Debug, Default)]
pub struct GraphRecorder {
    points: Vec<Point>,
    flush_marks: Vec<f64>,
    compaction_marks: Vec<f64>,
    flushes: u64,
    compactions: u64,
    budget: u64,
}

/// One interval of the run.
#[derive(Debug)]
struct Point {
    end: Duration,
    length: Duration,
    ops: u64,
    reads: u64,
    writes: u64,
    /// The latencies, kept for the last two intervals only (a short tail
    /// is merged into the interval before it).
    latency: Option<Histogram<u64>>,
    p50: f64,
    p99: f64,
    p999: f64,
    max: f64,
    real_dirty: u64,
    unspooled_dirty: u64,
}

impl Point {
    fn set_latency(&mut self, h: Histogram<u64>) {
        let q = |q: f64| micros_to_ms(h.value_at_quantile(q));
        (self.p50, self.p99, self.p999) = (q(0.5), q(0.99), q(0.999));
        self.max = micros_to_ms(h.max());
        self.latency = Some(h);
    }

    fn rate(&self, n: u64) -> f64 {
        let seconds = self.length.as_secs_f64();
        if seconds > 0.0 {
            n as f64 / seconds
        } else {
            0.0
        }
    }
}

impl GraphRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The run as the graph file holds it: its `label` and `description`,
    /// the dirty-memory limits (the soft limit at `soft_limit_ratio` of
    /// the budget, writers held at half of it unspooled and at all of it
    /// real), its series and the figures of its `summary`. A last interval
    /// shorter than half the one before (the tail after the clients
    /// stopped) is merged into that one, so it draws no spike.
    pub fn finish(
        mut self,
        label: &str,
        description: &str,
        soft_limit_ratio: f64,
        summary: &Summary,
    ) -> Value {
        self.merge_tail();
        let budget = if summary.dirty_budget > 0 {
            summary.dirty_budget
        } else {
            self.budget
        };
        let p = &self.points;
        let col = |f: &dyn Fn(&Point) -> Value| p.iter().map(f).collect::<Vec<Value>>();
        json!({
            "label": label,
            "description": description,
            "mixed": summary.read_latency.is_some(),
            "limits": {
                "soft": (budget as f64 * soft_limit_ratio) as u64,
                "unspooled_hard": budget / 2,
                "hard": budget,
            },
            "series": {
                "time_s": col(&|p| json!(p.end.as_secs_f64())),
                "ops": col(&|p| json!(p.ops)),
                "op_rate": col(&|p| json!(p.rate(p.ops))),
                "read_rate": col(&|p| json!(p.rate(p.reads))),
                "write_rate": col(&|p| json!(p.rate(p.writes))),
                "p50_ms": col(&|p| json!(p.p50)),
                "p99_ms": col(&|p| json!(p.p99)),
                "p99_9_ms": col(&|p| json!(p.p999)),
                "max_ms": col(&|p| json!(p.max)),
                "real_dirty_bytes": col(&|p| json!(p.real_dirty)),
                "unspooled_dirty_bytes": col(&|p| json!(p.unspooled_dirty)),
            },
            "marks": {
                "flushes_s": self.flush_marks,
                "compactions_s": self.compaction_marks,
            },
            "summary": {
                "op_rate": summary.op_rate(),
                "total_operations": summary.counts.ops,
                "p99_ms": summary.latency.p99_ms,
                "max_ms": summary.latency.max_ms,
                "flushes": summary.flushes,
                "compactions": summary.compaction.jobs,
                "elapsed_s": summary.elapsed.as_secs_f64(),
                "stopped_early": summary.stopped_early,
            },
        })
    }

    /// Merges a short last interval into the one before it.
    fn merge_tail(&mut self) {
        let n = self.points.len();
        if n < 2 || self.points[n - 1].length * 2 >= self.points[n - 2].length {
            return;
        }
        let tail = self.points.pop().expect("two points");
        let last = self.points.last_mut().expect("one point");
        last.end = tail.end;
        last.length += tail.length;
        last.ops += tail.ops;
        last.reads += tail.reads;
        last.writes += tail.writes;
        last.real_dirty = tail.real_dirty;
        last.unspooled_dirty = tail.unspooled_dirty;
        if let (Some(mut h), Some(t)) = (last.latency.take(), tail.latency)
            && h.add(&t).is_ok()
        {
            last.set_latency(h);
        }
    }
}

impl Observer for GraphRecorder {
    fn on_interval(&mut self, r: &IntervalReport) -> Result<(), Error> {
        let end = r.start + r.length;
        // Only the last two intervals keep their histograms.
        if let Some(older) = self.points.iter_mut().rev().nth(1) {
            older.latency = None;
        }
        let mut point = Point {
            end,
            length: r.length,
            ops: r.counts.ops,
            reads: r.counts.reads,
            writes: r.counts.writes,
            latency: None,
            p50: 0.0,
            p99: 0.0,
            p999: 0.0,
            max: 0.0,
            real_dirty: r.stats.real_dirty,
            unspooled_dirty: r.stats.unspooled_dirty,
        };
        point.set_latency(r.latency.clone());
        self.points.push(point);
        // A mark per interval in which flushes or compactions completed.
        if r.stats.flushes > self.flushes {
            self.flush_marks.push(end.as_secs_f64());
        }
        if r.stats.compaction.jobs > self.compactions {
            self.compaction_marks.push(end.as_secs_f64());
        }
        self.flushes = r.stats.flushes;
        self.compactions = r.stats.compaction.jobs;
        self.budget = r.stats.dirty_budget;
        Ok(())
    }
}

/// The runs an existing graph file holds (none when there is no file).
///
/// # Errors
/// [`Error::Io`] if the file cannot be read; [`Error::Report`] if it is
/// not a graph this program wrote (it is never overwritten then).
pub fn read_graph(path: &Path) -> Result<Vec<Value>, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err("read", path)(e)),
    };
    let not_ours = || Error::Report {
        what: "graph",
        detail: format!(
            "{} exists and is not a replica-stress graph (choose another --graph file)",
            path.display()
        ),
    };
    let start = text.find(DATA_START).ok_or_else(not_ours)? + DATA_START.len();
    let len = text[start..].find(DATA_END).ok_or_else(not_ours)?;
    match serde_json::from_str(&text[start..start + len]) {
        Ok(Value::Array(runs)) => Ok(runs),
        _ => Err(not_ours()),
    }
}

/// Writes the graph file `path` with the runs it held and `runs` after
/// them.
///
/// # Errors
/// As [`read_graph`]; [`Error::Io`] if the file cannot be written.
pub fn write_graph(path: &Path, runs: &[Value]) -> Result<(), Error> {
    let mut all = read_graph(path)?;
    all.extend_from_slice(runs);
    let data = serde_json::to_string(&all).map_err(|e| Error::Report {
        what: "graph",
        detail: e.to_string(),
    })?;
    // Inside a <script> element, "</" would end it: JSON may spell it
    // "<\/".
    let data = data.replace("</", "<\\/");
    let page = TEMPLATE.replacen("/*RUNS*/", &data, 1);
    std::fs::write(path, page).map_err(io_err("write", path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::{Counts, new_histogram};
    use crate::target::TargetStats;

    fn report(
        start_ms: u64,
        length_ms: u64,
        ops: u64,
        latency_ms: u64,
        flushes: u64,
    ) -> IntervalReport {
        let mut latency = new_histogram().unwrap();
        for _ in 0..ops {
            latency.record(latency_ms * 1000).unwrap();
        }
        IntervalReport {
            index: 0,
            start: Duration::from_millis(start_ms),
            length: Duration::from_millis(length_ms),
            counts: Counts {
                ops,
                writes: ops,
                ..Counts::default()
            },
            latency,
            read_latency: None,
            write_latency: None,
            stats: TargetStats {
                flushes,
                dirty_budget: 64 << 20,
                ..TargetStats::default()
            },
            memory: crate::ProcessMemory::default(),
            devices: Vec::new(),
        }
    }

    #[test]
    fn a_short_tail_is_merged_into_the_interval_before_it() {
        let mut g = GraphRecorder::new();
        for r in [
            report(0, 1000, 10, 1, 0),
            report(1000, 1000, 20, 2, 1),
            report(2000, 30, 2, 9, 1),
        ] {
            g.on_interval(&r).unwrap();
        }
        assert_eq!(g.flush_marks, [2.0], "the second's flush");
        assert!(
            g.points[0].latency.is_none(),
            "only the last two keep theirs"
        );
        g.merge_tail();
        let ends: Vec<f64> = g.points.iter().map(|p| p.end.as_secs_f64()).collect();
        assert_eq!(ends, [1.0, 2.03]);
        let last = &g.points[1];
        assert_eq!((last.ops, last.length), (22, Duration::from_millis(1030)));
        assert!((last.rate(last.ops) - 22.0 / 1.03).abs() < 1e-9);
        assert!((last.max - 9.0).abs() < 0.01, "the tail's slowest counts");
        // A whole last interval stays as it is.
        let before = g.points.len();
        g.merge_tail();
        assert_eq!(g.points.len(), before);
    }

    #[test]
    fn runs_are_added_beside_the_earlier_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.html");
        assert!(read_graph(&path).unwrap().is_empty());
        write_graph(
            &path,
            &[json!({"label": "a", "description": "</script> x"})],
        )
        .unwrap();
        write_graph(&path, &[json!({"label": "b"}), json!({"label": "c"})]).unwrap();
        let runs = read_graph(&path).unwrap();
        let labels: Vec<&str> = runs.iter().map(|r| r["label"].as_str().unwrap()).collect();
        assert_eq!(labels, ["a", "b", "c"]);
        assert_eq!(runs[0]["description"], "</script> x");
        let page = std::fs::read_to_string(&path).unwrap();
        assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
        assert!(
            !page.contains("http://") && !page.contains("https://"),
            "self-contained: nothing to fetch"
        );
        // A file that is not a graph is left alone.
        let other = dir.path().join("notes.html");
        std::fs::write(&other, "<p>mine</p>").unwrap();
        let e = write_graph(&other, &[]).unwrap_err().to_string();
        assert!(e.contains("is not a replica-stress graph"), "{e}");
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "<p>mine</p>");
    }
}
