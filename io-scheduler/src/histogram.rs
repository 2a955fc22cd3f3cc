//! Queueing times, as a small log-linear histogram (8 steps per power of
//! two of nanoseconds: within 12.5% of the true value), with no lock of
//! its own (the queue's lock guards it).

use std::time::Duration;

const SUB: usize = 8;
const BUCKETS: usize = 64 * SUB;

/// A histogram of durations.
#[derive(Clone)]
pub(crate) struct WaitHistogram {
    counts: Box<[u64; BUCKETS]>,
    total: u64,
    max: u64,
}

impl Default for WaitHistogram {
    fn default() -> Self {
        WaitHistogram {
            counts: Box::new([0; BUCKETS]),
            total: 0,
            max: 0,
        }
    }
}

impl std::fmt::Debug for WaitHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitHistogram")
            .field("total", &self.total)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

fn bucket(nanos: u64) -> usize {
    if nanos < SUB as u64 {
        return nanos as usize;
    }
    let power = 63 - nanos.leading_zeros() as usize; // >= 3
    let step = ((nanos >> (power - 3)) & (SUB as u64 - 1)) as usize;
    (power - 2) * SUB + step
}

/// The largest value bucket `b` holds.
fn upper(b: usize) -> u64 {
    if b < SUB {
        return b as u64;
    }
    let power = b / SUB + 2;
    let step = (b % SUB) as u64;
    let low = (1u64 << power) + (step << (power - 3));
    low + (1u64 << (power - 3)) - 1
}

impl WaitHistogram {
    pub(crate) fn record(&mut self, wait: Duration) {
        let nanos = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
        self.counts[bucket(nanos)] += 1;
        self.total += 1;
        self.max = self.max.max(nanos);
    }

    /// The value at quantile `q` (0..=1), as the top of its bucket (never
    /// above the maximum recorded).
    pub(crate) fn quantile(&self, q: f64) -> Duration {
        if self.total == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Duration::from_nanos(upper(b).min(self.max));
            }
        }
        Duration::from_nanos(self.max)
    }

    pub(crate) fn max(&self) -> Duration {
        Duration::from_nanos(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_values_within_an_eighth() {
        for v in [
            0u64,
            1,
            7,
            8,
            9,
            15,
            16,
            100,
            1_000,
            123_456,
            10_000_000_000,
            u64::MAX / 3,
        ] {
            let b = bucket(v);
            assert!(upper(b) >= v, "{v} above its bucket's top {}", upper(b));
            if v >= 8 {
                assert!(
                    (upper(b) - v) as f64 <= v as f64 / 8.0,
                    "{v}: top {}",
                    upper(b)
                );
            }
            if b > 0 {
                assert!(upper(b - 1) < v, "{v} belongs lower");
            }
        }
    }

    #[test]
    fn quantiles_of_a_known_set() {
        let mut h = WaitHistogram::default();
        for us in 1..=100 {
            h.record(Duration::from_micros(us));
        }
        let p50 = h.quantile(0.5).as_micros();
        assert!((50..=57).contains(&p50), "{p50}");
        let p99 = h.quantile(0.99).as_micros();
        assert!((99..=100).contains(&p99), "{p99}");
        assert_eq!(h.max(), Duration::from_micros(100));
        assert_eq!(WaitHistogram::default().quantile(0.5), Duration::ZERO);
    }
}
