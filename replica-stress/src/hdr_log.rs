//! `--hdr-log`: each interval's latency histogram in the standard
//! HdrHistogram interval log format (V2 compressed histograms), readable by
//! `HistogramLogProcessor`, HdrHistogram's plotters, and
//! `hdrhistogram::serialization::interval_log::IntervalLogIterator`.
//!
//! Values are microseconds (pass `-outputValueUnitRatio 1000` to Java's
//! `HistogramLogProcessor` for milliseconds); interval timestamps are
//! seconds since the log's `StartTime`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::SystemTime;

use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;

use crate::error::{Error, io_err};
use crate::latency::IntervalReport;
use crate::runner::Observer;

/// The column legend Java's `HistogramLogWriter` writes after the headers.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

fn fail(e: impl std::fmt::Display) -> Error {
    Error::Report {
        what: "HdrHistogram interval log",
        detail: e.to_string(),
    }
}

/// An interval log being written; an [`Observer`] writing one histogram
/// per interval.
pub struct HdrLog<W: Write> {
    out: W,
    serializer: V2DeflateSerializer,
}

impl<W: Write> std::fmt::Debug for HdrLog<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HdrLog").finish_non_exhaustive()
    }
}

impl HdrLog<BufWriter<File>> {
    /// Creates (or truncates) the log file `path`.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be created or written.
    pub fn create(path: &Path, start: SystemTime, description: &str) -> Result<Self, Error> {
        let file = File::create(path).map_err(io_err("create", path))?;
        HdrLog::new(BufWriter::new(file), start, description)
    }
}

impl<W: Write> HdrLog<W> {
    /// Starts a log on `out`: a comment with `description`, the run's
    /// `StartTime` and `BaseTime`, and the column legend.
    ///
    /// # Errors
    /// [`Error::Report`] if `out` fails.
    pub fn new(mut out: W, start: SystemTime, description: &str) -> Result<Self, Error> {
        let mut serializer = V2DeflateSerializer::new();
        IntervalLogWriterBuilder::new()
            .add_comment(&format!("replica-stress: {description}"))
            .add_comment("latencies in microseconds")
            .with_start_time(start)
            .with_base_time(start)
            .begin_log_with(&mut out, &mut serializer)
            .map_err(fail)?;
        out.write_all(LEGEND.as_bytes()).map_err(fail)?;
        Ok(HdrLog { out, serializer })
    }

    /// Appends one interval.
    ///
    /// # Errors
    /// [`Error::Report`] if serializing or writing fails.
    pub fn write_interval(&mut self, report: &IntervalReport) -> Result<(), Error> {
        // A builder with no headers writes nothing: this only borrows the
        // output and the serializer for one histogram line.
        let mut writer = IntervalLogWriterBuilder::new()
            .begin_log_with(&mut self.out, &mut self.serializer)
            .map_err(fail)?;
        writer
            .write_histogram(&report.latency, report.start, report.length, None)
            .map_err(fail)
    }

    /// Flushes the log and gives back its output.
    ///
    /// # Errors
    /// [`Error::Report`] if flushing fails.
    pub fn finish(mut self) -> Result<W, Error> {
        self.out.flush().map_err(fail)?;
        Ok(self.out)
    }
}

impl<W: Write> Observer for HdrLog<W> {
    fn on_interval(&mut self, report: &IntervalReport) -> Result<(), Error> {
        self.write_interval(report)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    use super::*;
    use crate::latency::{Counts, new_histogram};
    use crate::target::TargetStats;

    fn report(index: u64, values: &[u64]) -> IntervalReport {
        let mut latency = new_histogram().unwrap();
        for v in values {
            latency.record(*v).unwrap();
        }
        IntervalReport {
            index,
            start: Duration::from_secs(index),
            length: Duration::from_secs(1),
            counts: Counts::default(),
            latency,
            read_latency: None,
            write_latency: None,
            stats: TargetStats::default(),
            memory: crate::ProcessMemory::default(),
            devices: Vec::new(),
        }
    }

    #[test]
    fn intervals_read_back_with_the_standard_parser() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut log = HdrLog::new(Vec::new(), start, "write, 4 threads").unwrap();
        log.on_interval(&report(0, &[100, 200, 300])).unwrap();
        log.on_interval(&report(1, &[])).unwrap();
        log.on_interval(&report(2, &[5_000_000])).unwrap();
        let bytes = log.finish().unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.starts_with("#replica-stress: write, 4 threads\n"),
            "{text}"
        );
        assert!(text.contains(LEGEND), "{text}");

        let mut starts = Vec::new();
        let mut counts = Vec::new();
        let mut maxes = Vec::new();
        let mut start_time = None;
        for entry in IntervalLogIterator::new(&bytes) {
            match entry.unwrap() {
                LogEntry::StartTime(t) => start_time = Some(t),
                LogEntry::BaseTime(_) => {}
                LogEntry::Interval(h) => {
                    starts.push(h.start_timestamp());
                    assert_eq!(h.duration(), Duration::from_secs(1));
                    let decoded = base64_decode(h.encoded_histogram());
                    let hist: hdrhistogram::Histogram<u64> = Deserializer::new()
                        .deserialize(&mut decoded.as_slice())
                        .unwrap();
                    counts.push(hist.len());
                    maxes.push(hist.max());
                }
            }
        }
        assert_eq!(start_time, Some(Duration::from_secs(1_700_000_000)));
        assert_eq!(
            starts,
            [0, 1, 2].map(Duration::from_secs).to_vec(),
            "timestamps are seconds since the StartTime"
        );
        assert_eq!(counts, [3, 0, 1]);
        assert!(
            hdrhistogram::Histogram::<u64>::new(3)
                .unwrap()
                .equivalent(maxes[2], 5_000_000)
        );
    }

    /// The log's histograms are standard base64 (the format's encoding).
    fn base64_decode(s: &str) -> Vec<u8> {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = Vec::new();
        let mut acc = 0u32;
        let mut bits = 0;
        for c in s.bytes().filter(|&c| c != b'=') {
            let v = ALPHABET.iter().position(|&a| a == c).unwrap() as u32;
            acc = (acc << 6) | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
                acc &= (1 << bits) - 1;
            }
        }
        out
    }

    #[test]
    fn an_unwritable_path_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("x.hlog");
        let e = HdrLog::create(&path, SystemTime::now(), "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing"), "{e}");
    }
}
