//! `--results-dir`: each run's per-second table of op rate, latency
//! percentiles, dirty memory, flushes, compaction and each modelled
//! device's share of its bandwidth, as CSV (one row per interval), so the
//! runs of an experiment can be plotted and compared second by second.
//!
//! Columns: `time_s` (the interval's end, seconds since the run
//! started), `ops`, `op_rate`, `errors`, `p50_ms`, `p95_ms`, `p99_ms`,
//! `p999_ms`, `max_ms` (of every operation), `real_dirty_bytes`,
//! `unspooled_dirty_bytes`, `flushes`, `sstables`,
//! `compaction_bytes_written`, `read_p99_ms` and `write_p99_ms` (the
//! reads' and the writes' own, in a mixed workload; empty otherwise),
//! then per device
//! `<name>_read_bytes`, `<name>_written_bytes` (in the interval),
//! `<name>_busy` (those bytes over what the bandwidth allows in the
//! interval) and `<name>_waited_s` (time the I/O waited for it in the
//! interval, summed over threads).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use replica::device::DeviceStats;

use crate::error::{Error, io_err};
use crate::latency::{IntervalReport, micros_to_ms};
use crate::runner::Observer;

fn fail(e: impl std::fmt::Display) -> Error {
    Error::Report {
        what: "per-second rate table",
        detail: e.to_string(),
    }
}

/// An [`Observer`] writing one CSV row per interval.
pub struct RateTable<W: Write> {
    out: W,
    header_done: bool,
    /// The devices' counters at the previous interval's end.
    last: Vec<DeviceStats>,
}

impl<W: Write> std::fmt::Debug for RateTable<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateTable").finish_non_exhaustive()
    }
}

impl RateTable<BufWriter<File>> {
    /// Creates (or truncates) the table file `path`.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be created.
    pub fn create(path: &Path) -> Result<Self, Error> {
        let file = File::create(path).map_err(io_err("create", path))?;
        Ok(RateTable::new(BufWriter::new(file)))
    }
}

impl<W: Write> RateTable<W> {
    /// A table written to `out`; the header comes with the first row.
    pub fn new(out: W) -> Self {
        RateTable {
            out,
            header_done: false,
            last: Vec::new(),
        }
    }

    /// Flushes the output and gives it back.
    ///
    /// # Errors
    /// [`Error::Report`] if the output cannot be flushed.
    pub fn finish(mut self) -> Result<W, Error> {
        self.out.flush().map_err(fail)?;
        Ok(self.out)
    }

    fn header(&mut self, devices: &[DeviceStats]) -> Result<(), Error> {
        let mut line = String::from(
            "time_s,ops,op_rate,errors,p50_ms,p95_ms,p99_ms,p999_ms,max_ms,real_dirty_bytes,\
             unspooled_dirty_bytes,flushes,sstables,compaction_bytes_written,read_p99_ms,write_p99_ms",
        );
        for d in devices {
            let n = &d.name;
            line.push_str(&format!(
                ",{n}_read_bytes,{n}_written_bytes,{n}_busy,{n}_waited_s"
            ));
        }
        writeln!(self.out, "{line}").map_err(fail)
    }
}

impl<W: Write> Observer for RateTable<W> {
    fn on_interval(&mut self, r: &IntervalReport) -> Result<(), Error> {
        if !self.header_done {
            self.header(&r.devices)?;
            self.header_done = true;
        }
        let q = |q: f64| micros_to_ms(r.latency.value_at_quantile(q));
        let mut line = format!(
            "{:.3},{},{:.1},{},{:.3},{:.3},{:.3},{:.3},{:.3},{},{},{},{},{}",
            (r.start + r.length).as_secs_f64(),
            r.counts.ops,
            r.ops_per_second(),
            r.counts.errors,
            q(0.5),
            q(0.95),
            q(0.99),
            q(0.999),
            micros_to_ms(r.latency.max()),
            r.stats.real_dirty,
            r.stats.unspooled_dirty,
            r.stats.flushes,
            r.stats.compaction.sstables,
            r.stats.compaction.bytes_written,
        );
        for p99 in [r.read_p99_ms(), r.write_p99_ms()] {
            match p99 {
                Some(ms) => line.push_str(&format!(",{ms:.3}")),
                None => line.push(','),
            }
        }
        for d in &r.devices {
            let before = self.last.iter().find(|l| l.name == d.name);
            let read = d.bytes_read - before.map_or(0, |b| b.bytes_read);
            let written = d.bytes_written - before.map_or(0, |b| b.bytes_written);
            let waited = d.waited - before.map_or(std::time::Duration::ZERO, |b| b.waited);
            let capacity = d.bandwidth as f64 * r.length.as_secs_f64();
            let busy = if capacity > 0.0 {
                (read + written) as f64 / capacity
            } else {
                0.0
            };
            line.push_str(&format!(
                ",{read},{written},{busy:.3},{:.3}",
                waited.as_secs_f64()
            ));
        }
        self.last.clone_from(&r.devices);
        writeln!(self.out, "{line}").map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::latency::{Counts, new_histogram};
    use crate::target::TargetStats;

    #[test]
    fn a_row_per_interval_with_each_devices_share() {
        let clock: Arc<dyn replica::device::Clock> = Arc::new(replica::device::ManualClock::new());
        let disk = replica::device::Device::with_clock("disk", 1000, 1 << 40, clock).unwrap();
        let mut table = RateTable::new(Vec::new());
        for i in 0..2u64 {
            let mut latency = new_histogram().unwrap();
            latency.record(2_000).unwrap();
            disk.charge_write(500 * (i + 1));
            let r = IntervalReport {
                index: i,
                start: Duration::from_secs(i),
                length: Duration::from_secs(1),
                counts: Counts {
                    ops: 10,
                    writes: 10,
                    ..Counts::default()
                },
                // The second interval is of a mixed load.
                read_latency: (i == 1).then(|| latency.clone()),
                write_latency: (i == 1).then(|| latency.clone()),
                latency,
                stats: TargetStats {
                    real_dirty: 4096,
                    flushes: i,
                    ..TargetStats::default()
                },
                memory: crate::ProcessMemory::default(),
                devices: vec![disk.stats()],
            };
            table.on_interval(&r).unwrap();
        }
        let text = String::from_utf8(table.finish().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("time_s,ops,op_rate"));
        assert!(lines[0].ends_with(",disk_read_bytes,disk_written_bytes,disk_busy,disk_waited_s"));
        // Interval 1 wrote 500 B of 1000 B/s, interval 2 another 1000 B.
        assert!(lines[1].starts_with("1.000,10,10.0,0,"), "{}", lines[1]);
        assert!(lines[1].ends_with(",0,,,0,500,0.500,0.000"), "{}", lines[1]);
        assert!(lines[2].contains(",2.000,2.000,0,1000,"), "{}", lines[2]);
        assert!(lines[2].ends_with(",0,1000,1.000,0.000"), "{}", lines[2]);
        let columns = lines[0].split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == columns));
    }
}
