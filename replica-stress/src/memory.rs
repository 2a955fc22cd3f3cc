//! The process's own memory, as `replica-stress` reports it beside the
//! dirty-memory budget: the peak resident set the kernel records (Linux's
//! `VmHWM` in `/proc/self/status`; unknown elsewhere) and, when the program
//! counts its allocations, the live heap bytes and their peak.
//!
//! The counting itself is the program's (a counting global allocator in
//! `src/bin/replica-stress.rs`): a library never installs an allocator, so
//! the figures reach the runner through a [`MemoryProbe`] the program
//! sets in [`StressOptions::memory`](crate::StressOptions::memory).

use std::fmt;

/// Live and peak heap bytes, from a counting allocator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeapFigures {
    /// Bytes allocated and not yet freed.
    pub live: u64,
    /// The highest `live` has been.
    pub peak: u64,
}

/// A function returning the counting allocator's figures.
pub type HeapCounter = fn() -> HeapFigures;

/// What the runner samples about the process's memory every interval.
/// [`MemoryProbe::default`] reads the resident set only.
#[derive(Clone, Copy, Default)]
pub struct MemoryProbe {
    heap: Option<HeapCounter>,
    reset_heap_peak: Option<fn()>,
}

impl fmt::Debug for MemoryProbe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryProbe")
            .field("counts_heap", &self.heap.is_some())
            .finish()
    }
}

/// Probes are equal when they measure the same things (function pointers
/// have no meaningful equality).
impl PartialEq for MemoryProbe {
    fn eq(&self, other: &Self) -> bool {
        self.heap.is_some() == other.heap.is_some()
    }
}

impl MemoryProbe {
    /// A probe that also reports the heap figures `counter` returns.
    pub fn with_heap_counter(counter: HeapCounter) -> Self {
        MemoryProbe {
            heap: Some(counter),
            reset_heap_peak: None,
        }
    }

    /// The probe, with `reset` to bring the heap counter's peak down to
    /// its live bytes for [`reset_peaks`](Self::reset_peaks).
    #[must_use]
    pub fn with_heap_peak_reset(self, reset: fn()) -> Self {
        MemoryProbe {
            reset_heap_peak: Some(reset),
            ..self
        }
    }

    /// Starts the peaks afresh, so that a run's report holds its own and
    /// not an earlier run's of the same process (`--compare`): the peak
    /// resident set becomes the resident set now (Linux: `5` written to
    /// `/proc/self/clear_refs`), and the heap peak the live heap (with a
    /// reset given). Returns whether the resident set's peak was reset.
    pub fn reset_peaks(&self) -> bool {
        if let Some(reset) = self.reset_heap_peak {
            reset();
        }
        std::fs::write("/proc/self/clear_refs", b"5").is_ok()
    }

    /// The process's memory now.
    pub fn sample(&self) -> ProcessMemory {
        let (peak_resident, resident) =
            std::fs::read_to_string("/proc/self/status").map_or((None, None), |s| parse_status(&s));
        let heap = self.heap.map(|counter| counter());
        ProcessMemory {
            peak_resident,
            resident,
            live_heap: heap.map(|h| h.live),
            peak_live_heap: heap.map(|h| h.peak),
        }
    }
}

/// The process's memory at one moment; `None` for what is not known
/// (the resident set off Linux, the heap without a counting allocator).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessMemory {
    /// The peak resident set so far, in bytes (`VmHWM`).
    pub peak_resident: Option<u64>,
    /// The resident set now, in bytes (`VmRSS`).
    pub resident: Option<u64>,
    /// Live heap bytes now.
    pub live_heap: Option<u64>,
    /// The peak of live heap bytes so far.
    pub peak_live_heap: Option<u64>,
}

impl ProcessMemory {
    /// The larger of each figure of `self` and `other` (peaks), the later
    /// one's current figures.
    pub fn merge_peaks(self, later: ProcessMemory) -> ProcessMemory {
        let max = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        ProcessMemory {
            peak_resident: max(self.peak_resident, later.peak_resident),
            resident: later.resident.or(self.resident),
            live_heap: later.live_heap.or(self.live_heap),
            peak_live_heap: max(self.peak_live_heap, later.peak_live_heap),
        }
    }
}

/// `VmHWM` and `VmRSS` of a `/proc/<pid>/status` text, in bytes.
pub fn parse_status(status: &str) -> (Option<u64>, Option<u64>) {
    let field = |name: &str| {
        status.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?.strip_prefix(':')?;
            let kib = rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
            kib.checked_mul(1024)
        })
    };
    (field("VmHWM"), field("VmRSS"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_parsed_in_bytes() {
        let status = "Name:\treplica-stress\nVmPeak:\t  900000 kB\nVmHWM:\t  651264 kB\n\
                      VmRSS:\t  400000 kB\nThreads:\t101\n";
        assert_eq!(
            parse_status(status),
            (Some(651_264 * 1024), Some(400_000 * 1024))
        );
        assert_eq!(parse_status("VmHWM: lots\n"), (None, None));
        assert_eq!(parse_status(""), (None, None));
    }

    #[test]
    fn peaks_start_afresh_on_reset() {
        use std::sync::atomic::{AtomicBool, Ordering};
        static RESET: AtomicBool = AtomicBool::new(false);
        fn counter() -> HeapFigures {
            HeapFigures { live: 1, peak: 2 }
        }
        fn reset() {
            RESET.store(true, Ordering::Relaxed);
        }
        let probe = MemoryProbe::with_heap_counter(counter).with_heap_peak_reset(reset);
        if cfg!(target_os = "linux") {
            // Touch 32 MiB, so the peak is well above what stays resident.
            let big = vec![1u8; 32 << 20];
            assert_eq!(big.iter().map(|&b| u64::from(b)).sum::<u64>(), 32 << 20);
            drop(big);
            let before = probe.sample().peak_resident.unwrap();
            assert!(probe.reset_peaks(), "/proc/self/clear_refs is writable");
            let after = probe.sample().peak_resident.unwrap();
            assert!(after < before, "peak {after} after reset, {before} before");
        } else {
            probe.reset_peaks();
        }
        assert!(
            RESET.load(Ordering::Relaxed),
            "the heap's peak was reset too"
        );
    }

    #[test]
    fn a_sample_reads_this_process_and_the_counter() {
        fn counter() -> HeapFigures {
            HeapFigures { live: 7, peak: 9 }
        }
        let m = MemoryProbe::with_heap_counter(counter).sample();
        assert_eq!((m.live_heap, m.peak_live_heap), (Some(7), Some(9)));
        if cfg!(target_os = "linux") {
            let (peak, now) = (m.peak_resident.unwrap(), m.resident.unwrap());
            assert!(peak >= now && now > 0, "{m:?}");
        }
        let plain = MemoryProbe::default().sample();
        assert_eq!((plain.live_heap, plain.peak_live_heap), (None, None));
        assert_ne!(
            MemoryProbe::default(),
            MemoryProbe::with_heap_counter(counter)
        );
    }

    #[test]
    fn peaks_merge_and_current_figures_follow_the_later_sample() {
        let a = ProcessMemory {
            peak_resident: Some(10),
            resident: Some(8),
            live_heap: Some(5),
            peak_live_heap: Some(6),
        };
        let b = ProcessMemory {
            peak_resident: Some(9),
            resident: Some(7),
            live_heap: Some(2),
            peak_live_heap: Some(3),
        };
        let m = a.merge_peaks(b);
        assert_eq!(
            m,
            ProcessMemory {
                peak_resident: Some(10),
                resident: Some(7),
                live_heap: Some(2),
                peak_live_heap: Some(6),
            }
        );
        assert_eq!(ProcessMemory::default().merge_peaks(b), b);
    }
}
