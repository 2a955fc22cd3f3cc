//! The token bucket every device is: a rate in bytes per second and a
//! burst, kept as a "theoretical arrival time" (GCRA, the virtual
//! scheduling form of a token bucket): the time at which every byte
//! granted so far will have been paid for at `rate`. A request of `n`
//! bytes moves it `n / rate` later and may proceed once it lies no more
//! than `burst / rate` ahead of the clock. So over any span `t`, at most
//! `burst + rate * t` bytes are granted; an idle bucket refills to `burst`
//! and no further; a request larger than the burst is granted once the
//! bucket would have held it. Requests are granted in the order they
//! reserved (first come, first served), so chargers sharing a bucket share
//! its rate in proportion to what they ask. One lock guards the arrival
//! time, held only to move it; waiting happens outside it, on the
//! [`Clock`].

use std::time::Duration;

use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::sync::{AtomicU64, Mutex, Ordering};

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// A token bucket of `rate` bytes per second holding at most `burst`
/// bytes; [`acquire`](Self::acquire) blocks until the bytes fit.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use device::{Clock, ManualClock, TokenBucket};
///
/// let clock = Arc::new(ManualClock::new());
/// let bucket = TokenBucket::with_clock(1 << 20, 64 << 10, clock.clone())?;
/// // A full bucket grants its burst at once.
/// assert_eq!(bucket.acquire(64 << 10), Duration::ZERO);
/// // The next 64 KiB are paid for 1/16 s later.
/// assert_eq!(bucket.ready_at(64 << 10), Duration::from_millis(62) + Duration::from_micros(500));
/// # Ok::<(), device::Error>(())
/// ```
#[derive(Debug)]
pub struct TokenBucket<C: Clock = SystemClock> {
    rate: u64,
    burst: u64,
    clock: C,
    /// When everything granted so far is paid for, on the clock.
    paid_until: Mutex<Duration>,
    /// Clock time callers spent blocked, in nanoseconds.
    waited: AtomicU64,
    /// Bytes granted so far.
    granted: AtomicU64,
}

fn nanos_for(bytes: u64, rate: u64) -> Duration {
    let ns = (u128::from(bytes) * NANOS_PER_SEC).div_ceil(u128::from(rate));
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

impl TokenBucket<SystemClock> {
    /// A bucket on the system clock.
    ///
    /// # Errors
    /// As [`with_clock`](TokenBucket::with_clock).
    pub fn new(rate: u64, burst: u64) -> Result<Self, Error> {
        TokenBucket::with_clock(rate, burst, SystemClock::new())
    }
}

impl<C: Clock> TokenBucket<C> {
    /// A bucket of `rate` bytes per second and `burst` bytes on `clock`,
    /// full at the clock's current time.
    ///
    /// # Errors
    /// [`Error::ZeroBandwidth`] or [`Error::ZeroBurst`] for a zero rate or
    /// burst.
    pub fn with_clock(rate: u64, burst: u64, clock: C) -> Result<Self, Error> {
        if rate == 0 {
            return Err(Error::ZeroBandwidth {
                what: "token bucket".to_owned(),
            });
        }
        if burst == 0 {
            return Err(Error::ZeroBurst {
                what: "token bucket".to_owned(),
            });
        }
        let now = clock.now();
        Ok(TokenBucket {
            rate,
            burst,
            clock,
            paid_until: Mutex::new(now),
            waited: AtomicU64::new(0),
            granted: AtomicU64::new(0),
        })
    }

    /// Bytes per second.
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// The most bytes granted at once after the bucket sat idle.
    pub fn burst(&self) -> u64 {
        self.burst
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Total clock time callers of [`acquire`](Self::acquire) spent blocked.
    pub fn total_wait(&self) -> Duration {
        Duration::from_nanos(self.waited.load(Ordering::Relaxed))
    }

    /// Total bytes granted (or being waited for) so far.
    pub fn granted_bytes(&self) -> u64 {
        self.granted.load(Ordering::Relaxed)
    }

    /// When a request of `bytes` made now would be granted, without making
    /// it.
    pub fn ready_at(&self, bytes: u64) -> Duration {
        let paid_until = *self.paid_until.lock();
        self.schedule(paid_until, self.clock.now(), bytes).1
    }

    /// `(new paid_until, ready time)` for a request of `bytes` at `now`.
    fn schedule(&self, paid_until: Duration, now: Duration, bytes: u64) -> (Duration, Duration) {
        let paid_until = paid_until
            .max(now)
            .saturating_add(nanos_for(bytes, self.rate));
        let ready = paid_until.saturating_sub(nanos_for(self.burst, self.rate));
        (paid_until, ready.max(now))
    }

    /// Reserves `bytes` now without waiting; returns the time of the
    /// reservation and the time the bytes are granted (no earlier than the
    /// first), for a caller that waits for that time itself.
    /// [`acquire`](Self::acquire) is this and the wait.
    pub fn reserve(&self, bytes: u64) -> (Duration, Duration) {
        let mut paid_until = self.paid_until.lock();
        let now = self.clock.now();
        let (next, ready) = self.schedule(*paid_until, now, bytes);
        *paid_until = next;
        self.granted.fetch_add(bytes, Ordering::Relaxed);
        (now, ready)
    }

    /// Takes `bytes` from the bucket, blocking until they fit the rate;
    /// returns the clock time spent blocked.
    pub fn acquire(&self, bytes: u64) -> Duration {
        let (now, ready) = self.reserve(bytes);
        if ready <= now {
            return Duration::ZERO;
        }
        self.clock.wait_until(ready);
        let waited = ready - now;
        self.waited.fetch_add(
            u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{ManualClock, SystemClock};
    use crate::sync::{Arc, Ordering};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn zero_rate_or_burst_is_refused() {
        let e = TokenBucket::new(0, 1).unwrap_err().to_string();
        assert!(
            e.contains("token bucket") && e.contains("at least 1 byte per second"),
            "{e}"
        );
        let e = TokenBucket::new(1, 0).unwrap_err().to_string();
        assert!(e.contains("burst"), "{e}");
    }

    #[test]
    fn a_full_bucket_grants_its_burst_then_the_rate() {
        let clock = Arc::new(ManualClock::new());
        // 1000 B/s, burst 100 B: 100 B cost 100 ms.
        let b = TokenBucket::with_clock(1000, 100, clock.clone()).unwrap();
        assert_eq!(b.acquire(60), Duration::ZERO);
        assert_eq!(b.acquire(40), Duration::ZERO);
        assert_eq!(b.ready_at(100), ms(100));
        assert_eq!(b.ready_at(1), ms(1));
        // Idle time refills the bucket, but never beyond the burst.
        clock.advance(Duration::from_secs(10));
        assert_eq!(b.acquire(100), Duration::ZERO);
        assert_eq!(b.ready_at(100), Duration::from_secs(10) + ms(100));
        // A request above the burst waits until the bucket would have held it.
        clock.advance(Duration::from_secs(1));
        assert_eq!(b.ready_at(350), Duration::from_secs(11) + ms(250));
    }

    #[test]
    fn grants_never_outrun_burst_plus_rate_times_time() {
        // A deterministic pseudo-random mix of request sizes and idle gaps.
        let clock = Arc::new(ManualClock::new());
        let (rate, burst) = (10_000u64, 2_500u64);
        let b = TokenBucket::with_clock(rate, burst, clock.clone()).unwrap();
        let mut x = 12345u64;
        let mut granted = 0u64;
        for _ in 0..2_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let bytes = 1 + (x >> 33) % 4_000;
            if (x >> 20).is_multiple_of(4) {
                clock.advance(Duration::from_micros((x >> 40) % 300_000));
            }
            // Reserve, then move the clock to the grant, as a blocked
            // caller's wait would.
            let (now, ready) = b.reserve(bytes);
            assert!(ready >= now);
            clock.advance(ready - now);
            granted += bytes;
            let t = clock.now();
            let allowed = u128::from(burst) + u128::from(rate) * t.as_nanos() / NANOS_PER_SEC;
            assert!(
                u128::from(granted) <= allowed + 1,
                "{granted} bytes granted by {t:?}, allowed {allowed}"
            );
        }
    }

    #[test]
    fn two_chargers_share_the_rate_in_turn() {
        // Two chargers on one bucket, each asking again the moment its
        // previous request is granted: a small-request one (1 KB) and a
        // large-request one (4 KB). Simulated on the manual clock, one
        // grant at a time in grant order, as two blocked threads would be
        // woken. Each gets its turn in reservation order, so over any
        // stretch their shares of the bytes follow what they ask (1:4),
        // and neither waits longer than the other's one request.
        let clock = Arc::new(ManualClock::new());
        let (rate, burst) = (1_000_000u64, 1_000u64);
        let b = TokenBucket::with_clock(rate, burst, clock.clone()).unwrap();
        let sizes = [1_000u64, 4_000];
        let mut granted = [0u64; 2];
        // Each charger's pending grant time.
        let mut ready = [b.reserve(sizes[0]).1, b.reserve(sizes[1]).1];
        let mut turns = [0u64; 2];
        for _ in 0..1_000 {
            let who = usize::from(ready[1] < ready[0]);
            let at = ready[who];
            if at > clock.now() {
                clock.advance(at - clock.now());
            }
            granted[who] += sizes[who];
            turns[who] += 1;
            let (now, next) = b.reserve(sizes[who]);
            assert_eq!(now, at);
            // It waits for the other's pending request and its own.
            let other = 1 - who;
            let most = nanos_for(sizes[who] + sizes[other], rate);
            assert!(next - now <= most, "{who} waits {:?}", next - now);
            ready[who] = next;
        }
        // Taking turns: equal grant counts (within one), so bytes 1:4.
        assert!(turns[0].abs_diff(turns[1]) <= 1, "{turns:?}");
        let t = clock.now();
        let allowed = u128::from(burst) + u128::from(rate) * t.as_nanos() / NANOS_PER_SEC;
        assert!(u128::from(granted[0] + granted[1]) <= allowed + 1);
        // And the bucket was kept busy: the rate, less one request.
        let expected = u128::from(rate) * t.as_nanos() / NANOS_PER_SEC;
        assert!(u128::from(granted[0] + granted[1]) + 4_000 >= expected);
    }

    #[test]
    fn acquire_blocks_until_the_clock_reaches_its_turn() {
        let clock = Arc::new(ManualClock::new());
        let b = Arc::new(TokenBucket::with_clock(1000, 100, clock.clone()).unwrap());
        assert_eq!(b.acquire(100), Duration::ZERO);
        let done = Arc::new(AtomicU64::new(0));
        let waiter = {
            let (b, done) = (b.clone(), done.clone());
            std::thread::spawn(move || {
                let waited = b.acquire(200);
                done.store(1, Ordering::SeqCst);
                waited
            })
        };
        clock.wait_for_waiters(1);
        assert_eq!(clock.next_deadline(), Some(ms(200)));
        clock.advance(ms(150));
        // Still short of its deadline: it cannot have been granted.
        assert_eq!(done.load(Ordering::SeqCst), 0);
        clock.advance(ms(50));
        assert_eq!(waiter.join().unwrap(), ms(200));
        assert_eq!(b.total_wait(), ms(200));
        assert_eq!(clock.waiting(), 0);
    }

    #[test]
    fn concurrent_writers_are_granted_in_turn() {
        let clock = Arc::new(ManualClock::new());
        // 1 MB/s, burst 1 KB; four writers of 10 x 1 KB each.
        let b = Arc::new(TokenBucket::with_clock(1_000_000, 1_000, clock.clone()).unwrap());
        let writers: Vec<_> = (0..4)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || {
                    for _ in 0..10 {
                        b.acquire(1_000);
                    }
                })
            })
            .collect();
        // Reservations are granted 1 ms apart (1 KB at 1 MB/s), the first
        // at once from the full bucket, so the 40th at 39 ms. Until then
        // some writer is blocked or about to block on a later deadline:
        // wait for it and move the clock to the earliest one.
        while clock.now() < ms(39) {
            clock.wait_for_waiters(1);
            let next = clock.next_deadline().unwrap();
            clock.advance(next - clock.now());
        }
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(clock.now(), ms(39));
    }

    #[test]
    fn the_system_clock_moves_forward_and_past_deadlines_return_at_once() {
        let c = SystemClock::new();
        let a = c.now();
        c.wait_until(Duration::ZERO);
        c.wait_until(a);
        assert!(c.now() >= a);
        let b = TokenBucket::new(u64::MAX, u64::MAX).unwrap();
        assert_eq!(b.acquire(u64::MAX / 2), Duration::ZERO);
    }
}
