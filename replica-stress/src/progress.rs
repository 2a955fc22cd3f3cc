//! The progress line printed once per interval: ops/s, p99 latency, real
//! and unspooled dirty memory, flushes, the row cache's hit ratio so far,
//! and the process's peak resident set and live heap (`-` where unknown).

use std::io::Write;

use crate::error::Error;
use crate::latency::IntervalReport;
use crate::runner::Observer;
use crate::units::format_bytes;

/// The header above the progress lines.
pub const PROGRESS_HEADER: &str = "    time       op/s    p99 ms   errors     real dirty  unspooled dirty   flushes  cache hit     peak RSS    live heap   sstables     WA";

/// What the header's less obvious columns are, printed above it once.
pub const PROGRESS_LEGEND: &str = "Columns: real dirty = memtable memory in use; unspooled dirty = the part flushes have not yet written out (writers wait when it reaches half the budget);\n         peak RSS = the process's peak resident set; live heap = its allocated bytes now; WA = write amplification (sstable bytes written / bytes users wrote)";

fn bytes_or_dash(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "-".to_owned(), format_bytes)
}

/// One interval's progress line (the time is the interval's end).
pub fn progress_line(r: &IntervalReport) -> String {
    format!(
        "{:>7.1}s {:>10.0} {:>9.2} {:>8} {:>14} {:>16} {:>9} {:>10} {:>12} {:>12} {:>10} {:>6}",
        (r.start + r.length).as_secs_f64(),
        r.ops_per_second(),
        r.p99_ms(),
        r.counts.errors,
        format_bytes(r.stats.real_dirty),
        format_bytes(r.stats.unspooled_dirty),
        r.stats.flushes,
        r.stats
            .cache_hit_ratio()
            .map_or_else(|| "-".to_owned(), |h| format!("{:.1}%", h * 100.0)),
        bytes_or_dash(r.memory.peak_resident),
        bytes_or_dash(r.memory.live_heap),
        r.stats.compaction.sstables,
        r.stats.compaction.write_amplification_text(),
    )
}

/// An [`Observer`] printing the header, then a progress line per interval,
/// to `out` (standard output in `replica-stress`).
#[derive(Debug)]
pub struct ProgressPrinter<W: Write> {
    out: W,
    header_done: bool,
}

impl<W: Write> ProgressPrinter<W> {
    /// A printer writing to `out`.
    pub fn new(out: W) -> Self {
        ProgressPrinter {
            out,
            header_done: false,
        }
    }

    /// Gives back the output.
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write> Observer for ProgressPrinter<W> {
    fn on_interval(&mut self, report: &IntervalReport) -> Result<(), Error> {
        let fail = |e: std::io::Error| Error::Report {
            what: "progress line",
            detail: e.to_string(),
        };
        if !self.header_done {
            writeln!(self.out, "{PROGRESS_LEGEND}\n{PROGRESS_HEADER}").map_err(fail)?;
            self.header_done = true;
        }
        writeln!(self.out, "{}", progress_line(report)).map_err(fail)?;
        self.out.flush().map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::latency::{Counts, new_histogram};
    use crate::target::TargetStats;

    #[test]
    fn lines_show_rate_p99_dirty_memory_and_flushes() {
        let mut latency = new_histogram().unwrap();
        for _ in 0..99 {
            latency.record(1000).unwrap();
        }
        latency.record(250_000).unwrap();
        let report = IntervalReport {
            index: 2,
            start: Duration::from_secs(2),
            length: Duration::from_millis(500),
            counts: Counts {
                ops: 100,
                writes: 100,
                partitions: 100,
                rows: 100,
                ..Counts::default()
            },
            latency,
            read_latency: None,
            write_latency: None,
            stats: TargetStats {
                real_dirty: 3 << 20,
                unspooled_dirty: 1 << 20,
                flushes: 7,
                cache_enabled: true,
                cache_hits: 3,
                cache_misses: 1,
                ..TargetStats::default()
            },
            memory: crate::ProcessMemory {
                peak_resident: Some(600 << 20),
                live_heap: Some(300 << 20),
                ..Default::default()
            },
            devices: Vec::new(),
        };
        let mut p = ProgressPrinter::new(Vec::new());
        p.on_interval(&report).unwrap();
        p.on_interval(&report).unwrap();
        let text = String::from_utf8(p.into_inner()).unwrap();
        let text = text
            .strip_prefix(&format!("{PROGRESS_LEGEND}\n"))
            .expect("the legend opens the table");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "one header, then one line per interval");
        assert_eq!(lines[0], PROGRESS_HEADER);
        // The legend names the columns a reader cannot guess.
        for column in ["real dirty =", "unspooled dirty =", "peak RSS =", "WA ="] {
            assert!(PROGRESS_LEGEND.contains(column), "{column}");
        }
        let fields: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            fields,
            [
                "2.5s", "200", "1.00", "0", "3.0", "MiB", "1.0", "MiB", "7", "75.0%", "600.0",
                "MiB", "300.0", "MiB", "0", "-"
            ]
        );
        let unknown = IntervalReport {
            memory: crate::ProcessMemory::default(),
            ..report
        };
        let fields: Vec<String> = progress_line(&unknown)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        assert_eq!(fields[fields.len() - 4..fields.len() - 2], ["-", "-"]);
        // Without a cache (or before its first read) the ratio is a dash.
        let uncached = IntervalReport {
            stats: TargetStats {
                cache_enabled: false,
                ..report.stats
            },
            ..unknown
        };
        let fields: Vec<String> = progress_line(&uncached)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        assert_eq!(fields[9], "-");
        // The header's columns end where the lines' do.
        assert_eq!(PROGRESS_HEADER.len(), lines[1].len());
    }
}
