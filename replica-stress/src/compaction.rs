//! Compaction's figures in `replica-stress`'s reports: the `--compaction`
//! option's parser, what the target reports ([`CompactionFigures`]), and
//! their summary line and JSON.

use std::fmt;

use serde_json::{Value, json};

use replica::FlushThrottleConfig;
use replica::compaction::StrategyConfig;

use crate::error::Error;
use crate::units::format_bytes;

/// Parses `--compaction`: `stcs`, `ics` or `none`.
///
/// # Errors
/// [`Error::InvalidOption`] naming `--compaction`.
pub fn parse_compaction(s: &str) -> Result<StrategyConfig, Error> {
    StrategyConfig::parse(s).map_err(|_| Error::InvalidOption {
        name: "--compaction",
        value: s.to_owned(),
        expected: "stcs, ics or none".to_owned(),
    })
}

/// Parses `--flush-throttle`: `SLOW:STOP` (sorted runs of a table from
/// which its flushes wait for one compaction step, and from which they
/// wait until the count is below it) or `off`.
///
/// # Errors
/// [`Error::InvalidOption`] naming `--flush-throttle`.
pub fn parse_flush_throttle(s: &str) -> Result<FlushThrottleConfig, Error> {
    let invalid = || Error::InvalidOption {
        name: "--flush-throttle",
        value: s.to_owned(),
        expected: "SLOW:STOP (sorted runs, SLOW at most STOP, e.g. 20:28) or off".to_owned(),
    };
    if s == "off" {
        return Ok(FlushThrottleConfig::OFF);
    }
    let (slow, stop) = s.split_once(':').ok_or_else(invalid)?;
    let throttle = FlushThrottleConfig {
        slowdown_runs: slow.trim().parse().map_err(|_| invalid())?,
        stop_runs: stop.trim().parse().map_err(|_| invalid())?,
    };
    if throttle.slowdown_runs == 0 || throttle.stop_runs < throttle.slowdown_runs {
        return Err(invalid());
    }
    Ok(throttle)
}

/// The command line's name of a strategy.
pub fn strategy_name(strategy: &StrategyConfig) -> &'static str {
    match strategy {
        StrategyConfig::SizeTiered(_) => "stcs",
        StrategyConfig::None => "none",
        _ => "ics",
    }
}

/// What a target reports of its compaction (all zero for a target that
/// has none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionFigures {
    /// The strategy's name (`""` when unknown).
    pub strategy: &'static str,
    /// Sstables of every table now.
    pub sstables: u64,
    /// Bytes of those sstables.
    pub live_bytes: u64,
    /// Compaction jobs completed.
    pub jobs: u64,
    /// Jobs queued and running now.
    pub pending_jobs: u64,
    /// Bytes compactions read.
    pub bytes_read: u64,
    /// Bytes compactions wrote (the bytes compacted).
    pub bytes_written: u64,
    /// Sstable bytes flushes wrote.
    pub flush_bytes: u64,
    /// Bytes users wrote (`mutation::limits::size_bound` of each write).
    pub user_bytes: u64,
    /// The largest temporary disk use of one job.
    pub peak_temporary_bytes: u64,
    /// Reads, and the sstables they consulted.
    pub reads: u64,
    /// Sstables those reads consulted.
    pub sstables_consulted: u64,
    /// Sorted runs of every table now (a flushed sstable is one, an
    /// incremental run of fragments is one).
    pub sorted_runs: u64,
    /// Flushes that waited for compaction to catch up.
    pub flushes_throttled: u64,
    /// Their wait, summed, in milliseconds.
    pub flush_throttle_wait_ms: u64,
}

impl CompactionFigures {
    /// (flush + compaction bytes written) / bytes written by users; `None`
    /// before any write.
    pub fn write_amplification(&self) -> Option<f64> {
        (self.user_bytes > 0)
            .then(|| (self.flush_bytes + self.bytes_written) as f64 / self.user_bytes as f64)
    }

    /// Sstables consulted per read (0 before any read).
    pub fn sstables_per_read(&self) -> f64 {
        if self.reads == 0 {
            0.0
        } else {
            self.sstables_consulted as f64 / self.reads as f64
        }
    }

    /// The write amplification for a progress line (`-` before any write).
    pub fn write_amplification_text(&self) -> String {
        self.write_amplification()
            .map_or_else(|| "-".to_owned(), |wa| format!("{wa:.2}"))
    }

    /// The figures as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "strategy": self.strategy,
            "sstables": self.sstables,
            "sorted_runs": self.sorted_runs,
            "flushes_throttled": self.flushes_throttled,
            "flush_throttle_wait_ms": self.flush_throttle_wait_ms,
            "live_bytes": self.live_bytes,
            "jobs": self.jobs,
            "pending_jobs": self.pending_jobs,
            "bytes_read": self.bytes_read,
            "bytes_compacted": self.bytes_written,
            "flush_bytes": self.flush_bytes,
            "user_bytes": self.user_bytes,
            "write_amplification": self.write_amplification(),
            "peak_temporary_bytes": self.peak_temporary_bytes,
            "sstables_per_read": self.sstables_per_read(),
        })
    }
}

/// The summary's compaction lines.
impl fmt::Display for CompactionFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Compaction ({:<4})         : {:>10} sstables ({}), {} jobs, {} compacted, peak temporary {}",
            self.strategy,
            self.sstables,
            format_bytes(self.live_bytes),
            self.jobs,
            format_bytes(self.bytes_written),
            format_bytes(self.peak_temporary_bytes),
        )?;
        writeln!(
            f,
            "Flushes held for compaction: {:>9} ({:.1} s in all; {} sorted runs now)",
            self.flushes_throttled,
            self.flush_throttle_wait_ms as f64 / 1000.0,
            self.sorted_runs,
        )?;
        write!(
            f,
            "Write amplification       : {:>10} (sstable bytes written: flushes {} + compaction {}, \
             over the {} users wrote",
            self.write_amplification_text(),
            format_bytes(self.flush_bytes),
            format_bytes(self.bytes_written),
            format_bytes(self.user_bytes),
        )?;
        if self.write_amplification().is_some_and(|wa| wa < 1.0) {
            // Not a fault: data not yet flushed is written, not yet
            // counted; sstables compress their blocks.
            f.write_str(
                "; below 1 while written data is still in memtables, or as sstables compress it",
            )?;
        }
        writeln!(f, ")")?;
        if self.reads > 0 {
            writeln!(
                f,
                "Sstables per read         : {:>10.2}",
                self.sstables_per_read()
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_bad_ones_are_named() {
        for name in ["stcs", "ics", "none"] {
            assert_eq!(strategy_name(&parse_compaction(name).unwrap()), name);
        }
        let e = parse_compaction("lcs").unwrap_err().to_string();
        assert!(e.contains("--compaction") && e.contains("stcs"), "{e}");
        let t = parse_flush_throttle("16:24").unwrap();
        assert_eq!((t.slowdown_runs, t.stop_runs), (16, 24));
        assert_eq!(
            parse_flush_throttle("off").unwrap(),
            replica::FlushThrottleConfig::OFF
        );
        for bad in ["24:16", "0:4", "12", "a:b", ""] {
            let e = parse_flush_throttle(bad).unwrap_err().to_string();
            assert!(e.contains("--flush-throttle"), "{bad}: {e}");
        }
        let e = parse_compaction("lcs").unwrap_err().to_string();
        assert!(e.contains("--compaction") && e.contains("stcs"), "{e}");
    }

    #[test]
    fn figures_give_write_amplification_and_lines() {
        let f = CompactionFigures {
            strategy: "stcs",
            sstables: 7,
            bytes_written: 300,
            flush_bytes: 100,
            user_bytes: 100,
            reads: 4,
            sstables_consulted: 6,
            ..CompactionFigures::default()
        };
        assert_eq!(f.write_amplification(), Some(4.0));
        assert_eq!(CompactionFigures::default().write_amplification(), None);
        assert!((f.sstables_per_read() - 1.5).abs() < 1e-9);
        let text = f.to_string();
        assert!(text.contains("Compaction (stcs)"), "{text}");
        assert!(
            text.contains(
                "Write amplification       :       4.00 (sstable bytes written: flushes 100 B + \
                 compaction 300 B, over the 100 B users wrote)"
            ),
            "{text}"
        );
        assert!(
            text.contains("Sstables per read         :       1.50"),
            "{text}"
        );
        let below = CompactionFigures {
            flush_bytes: 84,
            bytes_written: 0,
            reads: 0,
            ..f
        }
        .to_string();
        assert!(
            below.contains("0.84 (")
                && below.contains("below 1 while written data is still in memtables"),
            "{below}"
        );
        assert!(!below.contains("Sstables per read"), "no reads: {below}");
        let j = f.to_json();
        assert_eq!(j["sstables"], 7);
        assert_eq!(j["write_amplification"], 4.0);
    }
}
