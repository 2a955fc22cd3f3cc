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
    time: Vec<f64>,
    ops: Vec<u64>,
    op_rate: Vec<f64>,
    read_rate: Vec<f64>,
    write_rate: Vec<f64>,
    p50: Vec<f64>,
    p99: Vec<f64>,
    p999: Vec<f64>,
    max: Vec<f64>,
    real_dirty: Vec<u64>,
    unspooled_dirty: Vec<u64>,
    flush_marks: Vec<f64>,
    compaction_marks: Vec<f64>,
    flushes: u64,
    compactions: u64,
    budget: u64,
}

impl GraphRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The run as the graph file holds it: its `label` and `description`,
    /// the dirty-memory limits (the soft limit at `soft_limit_ratio` of
    /// the budget, writers held at half of it unspooled and at all of it
    /// real), its series and the figures of its `summary`.
    pub fn finish(
        self,
        label: &str,
        description: &str,
        soft_limit_ratio: f64,
        summary: &Summary,
    ) -> Value {
        let mut this = self;
        // The tail after the clients stopped, if nothing completed in it,
        // is not a second of the load.
        if this.time.len() > 1 && this.ops.last() == Some(&0) {
            this.pop();
        }
        let budget = if summary.dirty_budget > 0 {
            summary.dirty_budget
        } else {
            this.budget
        };
        let s = this;
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
                "time_s": s.time,
                "ops": s.ops,
                "op_rate": s.op_rate,
                "read_rate": s.read_rate,
                "write_rate": s.write_rate,
                "p50_ms": s.p50,
                "p99_ms": s.p99,
                "p99_9_ms": s.p999,
                "max_ms": s.max,
                "real_dirty_bytes": s.real_dirty,
                "unspooled_dirty_bytes": s.unspooled_dirty,
            },
            "marks": {
                "flushes_s": s.flush_marks,
                "compactions_s": s.compaction_marks,
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
}

impl GraphRecorder {
    /// Drops the last interval's figures.
    fn pop(&mut self) {
        for v in [
            &mut self.time,
            &mut self.op_rate,
            &mut self.read_rate,
            &mut self.write_rate,
            &mut self.p50,
            &mut self.p99,
            &mut self.p999,
            &mut self.max,
        ] {
            v.pop();
        }
        for v in [
            &mut self.ops,
            &mut self.real_dirty,
            &mut self.unspooled_dirty,
        ] {
            v.pop();
        }
    }
}

impl Observer for GraphRecorder {
    fn on_interval(&mut self, r: &IntervalReport) -> Result<(), Error> {
        let end = (r.start + r.length).as_secs_f64();
        let seconds = r.length.as_secs_f64();
        let rate = |n: u64| {
            if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            }
        };
        let q = |q: f64| micros_to_ms(r.latency.value_at_quantile(q));
        self.time.push(end);
        self.ops.push(r.counts.ops);
        self.op_rate.push(r.ops_per_second());
        self.read_rate.push(rate(r.counts.reads));
        self.write_rate.push(rate(r.counts.writes));
        self.p50.push(q(0.5));
        self.p99.push(q(0.99));
        self.p999.push(q(0.999));
        self.max.push(micros_to_ms(r.latency.max()));
        self.real_dirty.push(r.stats.real_dirty);
        self.unspooled_dirty.push(r.stats.unspooled_dirty);
        // A mark per interval in which flushes or compactions completed.
        if r.stats.flushes > self.flushes {
            self.flush_marks.push(end);
        }
        if r.stats.compaction.jobs > self.compactions {
            self.compaction_marks.push(end);
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
