//! The flush bandwidth limit: a token bucket that sstable writes draw on,
//! blocking the writer until its bytes fit the rate.
//!
//! The bucket is kept as a "theoretical arrival time" (GCRA, the virtual
//! scheduling form of a token bucket): the time at which every byte
//! granted so far will have been paid for at `rate`. A request of `n`
//! bytes moves it `n / rate` later and may proceed once it lies no more
//! than `burst / rate` ahead of the clock. So over any span `t`, at most
//! `burst + rate * t` bytes are granted; an idle bucket refills to `burst`
//! and no further; a request larger than the burst is granted once the
//! bucket would have held it. One lock guards the arrival time; waiting
//! happens outside it, on the [`Clock`].
//!
//! The clock is injected: [`SystemClock`] in production, [`ManualClock`]
//! in tests, which moves only when the test advances it, so tests of
//! throttled code never sleep.

use std::fmt;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::sync::{Arc, AtomicU64, Condvar, Mutex, Ordering};

/// Time as a throttle sees it.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Time since the clock's origin; never decreases.
    fn now(&self) -> Duration;

    /// Blocks the calling thread until [`now`](Self::now) reaches
    /// `deadline` (returns at once if it has).
    fn wait_until(&self, deadline: Duration);
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Duration {
        (**self).now()
    }

    fn wait_until(&self, deadline: Duration) {
        (**self).wait_until(deadline);
    }
}

/// The monotonic system clock, from its creation.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// Sleeps: waiting for time to pass is what a rate limit is, and no
    /// other thread can end the wait sooner, so there is no one to notify.
    fn wait_until(&self, deadline: Duration) {
        loop {
            let now = self.now();
            if now >= deadline {
                return;
            }
            std::thread::sleep(deadline - now);
        }
    }
}

/// A clock that moves only when told to, for tests of throttled code:
/// threads waiting on it block on a condition variable until
/// [`advance`](Self::advance) moves it past their deadline.
#[derive(Debug, Default)]
pub struct ManualClock {
    state: Mutex<ManualState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct ManualState {
    now: Duration,
    /// The threads blocked in `wait_until` whose deadline is still ahead,
    /// as (ticket, deadline).
    waiting: Vec<(u64, Duration)>,
    next_ticket: u64,
}

impl ManualClock {
    /// A clock at time zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock `by` forward and wakes the waiters.
    pub fn advance(&self, by: Duration) {
        let mut s = self.state.lock();
        s.now += by;
        let now = s.now;
        // Waiters whose deadline passed are no longer waiting, even before
        // they wake and leave.
        s.waiting.retain(|&(_, deadline)| deadline > now);
        self.changed.notify_all();
    }

    /// How many threads are blocked in `wait_until` with a deadline still
    /// ahead.
    pub fn waiting(&self) -> usize {
        self.state.lock().waiting.len()
    }

    /// The earliest deadline a blocked thread waits for.
    pub fn next_deadline(&self) -> Option<Duration> {
        self.state.lock().waiting.iter().map(|&(_, d)| d).min()
    }

    /// Blocks until at least `n` threads are blocked in `wait_until` with
    /// a deadline still ahead.
    pub fn wait_for_waiters(&self, n: usize) {
        let mut s = self.state.lock();
        while s.waiting.len() < n {
            self.changed.wait(&mut s);
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        self.state.lock().now
    }

    fn wait_until(&self, deadline: Duration) {
        let mut s = self.state.lock();
        if s.now >= deadline {
            return;
        }
        let ticket = s.next_ticket;
        s.next_ticket += 1;
        s.waiting.push((ticket, deadline));
        self.changed.notify_all();
        while s.now < deadline {
            self.changed.wait(&mut s);
        }
        // `advance` removed the entry already.
        debug_assert!(s.waiting.iter().all(|&(t, _)| t != ticket));
    }
}

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// A token bucket of `rate` bytes per second holding at most `burst`
/// bytes; [`acquire`](Self::acquire) blocks until the bytes fit.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use replica::{Clock, ManualClock, TokenBucket};
///
/// let clock = Arc::new(ManualClock::new());
/// let bucket = TokenBucket::with_clock(1 << 20, 64 << 10, clock.clone())?;
/// // A full bucket grants its burst at once.
/// assert_eq!(bucket.acquire(64 << 10), Duration::ZERO);
/// // The next 64 KiB are paid for 1/16 s later.
/// assert_eq!(bucket.ready_at(64 << 10), Duration::from_millis(62) + Duration::from_micros(500));
/// # Ok::<(), replica::Error>(())
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
    /// [`Error::InvalidOption`] for a zero rate or burst.
    pub fn with_clock(rate: u64, burst: u64, clock: C) -> Result<Self, Error> {
        if rate == 0 {
            return Err(Error::InvalidOption {
                name: "flush bandwidth limit",
                value: "0".to_owned(),
                expected: "at least 1 byte per second".to_owned(),
            });
        }
        if burst == 0 {
            return Err(Error::InvalidOption {
                name: "flush bandwidth burst",
                value: "0".to_owned(),
                expected: "at least 1 byte".to_owned(),
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

    /// Reserves `bytes` now; returns the time of the reservation and the
    /// time it is granted (no earlier than the first).
    fn reserve(&self, bytes: u64) -> (Duration, Duration) {
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

/// Throttles a writer through its progress reports: each report's growth
/// in bytes written is taken from the bucket, blocking the writer (inside
/// its `write` call) until the bytes fit the rate. Made for
/// `sstable::Writer::on_progress`, whose reports carry the total bytes
/// written so far.
#[derive(Debug)]
pub struct WriteThrottle<C: Clock = SystemClock> {
    bucket: Arc<TokenBucket<C>>,
    seen: u64,
}

impl<C: Clock> WriteThrottle<C> {
    /// A throttle for one writer, drawing on `bucket` (which every flush
    /// shares).
    pub fn new(bucket: Arc<TokenBucket<C>>) -> Self {
        WriteThrottle { bucket, seen: 0 }
    }

    /// Takes the bytes written since the last call from the bucket, given
    /// the writer's running total; returns the clock time spent blocked.
    /// A total that did not grow takes nothing.
    pub fn bytes_written(&mut self, total: u64) -> Duration {
        let delta = total.saturating_sub(self.seen);
        self.seen = self.seen.max(total);
        if delta == 0 {
            Duration::ZERO
        } else {
            self.bucket.acquire(delta)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn zero_rate_or_burst_is_refused() {
        let e = TokenBucket::new(0, 1).unwrap_err().to_string();
        assert!(
            e.contains("flush bandwidth limit") && e.contains("1 byte per second"),
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
    fn a_write_throttle_takes_what_an_sstable_writer_reports() {
        use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
        let clock = Arc::new(ManualClock::new());
        // A burst big enough that nothing blocks: this checks the
        // accounting, the blocking is checked above.
        let bucket = Arc::new(TokenBucket::with_clock(1, 1 << 40, clock).unwrap());
        let dir = tempfile::tempdir().unwrap();
        let mut options = sstable::WriterOptions::default();
        options.block_size = 512;
        options.compression = false;
        let mut writer = sstable::Writer::create(dir.path(), options).unwrap();
        let mut throttle = WriteThrottle::new(bucket.clone());
        let reports = Arc::new(AtomicU64::new(0));
        let counted = reports.clone();
        writer.on_progress(move |p| {
            throttle.bytes_written(p.bytes_written);
            counted.store(p.bytes_written, Ordering::Relaxed);
        });
        let mutations = (0..200u32).map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(format!("k{i:04}")).unwrap())
                .cell(
                    "r",
                    0,
                    Cell::live(vec![7u8; 100], Timestamp::from_micros(1)),
                )
                .build()
                .unwrap()
        });
        // In ring order, as a memtable streams them.
        for m in Mutation::reconcile_all(mutations) {
            for f in m.fragments() {
                writer.write(&f).unwrap();
            }
        }
        let last_report = reports.load(Ordering::Relaxed);
        assert!(last_report > 10_000, "{last_report}");
        assert_eq!(bucket.granted_bytes(), last_report);
        writer.commit().unwrap();

        let mut t = WriteThrottle::new(bucket.clone());
        let before = bucket.granted_bytes();
        t.bytes_written(100);
        t.bytes_written(100);
        t.bytes_written(50);
        t.bytes_written(130);
        assert_eq!(bucket.granted_bytes() - before, 130);
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
