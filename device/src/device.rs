//! [`Device`]: a named token bucket that reads and writes are charged to,
//! with the counters that say how much went through it and how long the
//! chargers waited.

use std::fmt;
use std::time::Duration;

use crate::bucket::TokenBucket;
use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::sync::{Arc, AtomicU64, Ordering};

/// The longest device name accepted, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// The burst of a device of `bandwidth` bytes per second made with
/// [`Device::new`]: a second's worth, at least 64 KiB and at most 4 MiB
/// (so a modelled disk lets one large buffer through at once, but never
/// more than a few tens of milliseconds ahead of its rate).
pub fn default_burst(bandwidth: u64) -> u64 {
    bandwidth.clamp(64 << 10, 4 << 20)
}

/// A modelled storage device: a bandwidth shared by every reader and
/// writer of the directories on it.
///
/// [`charge_write`](Self::charge_write) and
/// [`charge_read`](Self::charge_read) take the bytes from the device's
/// token bucket, blocking the calling thread until they fit the rate, and
/// count them. Callers charge *before* the I/O and hold no lock that
/// other writers need while they do (the bucket's own lock is held only to
/// reserve, never while waiting).
///
/// Reads and writes draw on the same bucket, as they share a real disk's
/// bandwidth. Two devices are equal only if they are the same device.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use device::{Device, ManualClock};
///
/// let clock = Arc::new(ManualClock::new());
/// let disk = Device::with_clock("disk", 1_000_000, 1_000, clock.clone())?;
/// assert_eq!(disk.charge_read(1_000), Duration::ZERO); // the full burst
/// // The next kilobyte is paid for a millisecond later.
/// assert_eq!(disk.ready_at(1_000), Duration::from_millis(1));
/// let s = disk.stats();
/// assert_eq!((s.name.as_str(), s.bytes_read, s.bytes_written), ("disk", 1_000, 0));
/// # Ok::<(), device::Error>(())
/// ```
pub struct Device {
    name: String,
    bucket: TokenBucket<Arc<dyn Clock>>,
    read: AtomicU64,
    written: AtomicU64,
    /// Charges that had to wait, and the time they waited (nanoseconds).
    waits: AtomicU64,
    waited: AtomicU64,
}

/// What went through a [`Device`], from [`Device::stats`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceStats {
    /// The device's name.
    pub name: String,
    /// Its bandwidth in bytes per second.
    pub bandwidth: u64,
    /// Bytes charged as reads.
    pub bytes_read: u64,
    /// Bytes charged as writes.
    pub bytes_written: u64,
    /// Charges that had to wait for the rate.
    pub waits: u64,
    /// Total time chargers spent waiting for the rate (summed over
    /// threads, so it can exceed the elapsed time).
    pub waited: Duration,
}

impl DeviceStats {
    /// Bytes read and written.
    pub fn bytes(&self) -> u64 {
        self.bytes_read.saturating_add(self.bytes_written)
    }

    /// The share of the bandwidth used over `elapsed`: bytes charged over
    /// `bandwidth * elapsed` (0 for an empty span).
    pub fn utilisation(&self, elapsed: Duration) -> f64 {
        let capacity = self.bandwidth as f64 * elapsed.as_secs_f64();
        if capacity > 0.0 {
            self.bytes() as f64 / capacity
        } else {
            0.0
        }
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.name)
            .field("bandwidth", &self.bucket.rate())
            .field("burst", &self.bucket.burst())
            .finish_non_exhaustive()
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for Device {}

fn check_name(name: &str) -> Result<(), Error> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(Error::BadName {
            name: name.to_owned(),
            limit: MAX_NAME_LEN,
        });
    }
    Ok(())
}

impl Device {
    /// A device of `bandwidth` bytes per second on the system clock, with
    /// the [`default_burst`].
    ///
    /// # Errors
    /// [`Error::BadName`] for an empty or overlong name,
    /// [`Error::ZeroBandwidth`] for a zero bandwidth.
    pub fn new(name: impl Into<String>, bandwidth: u64) -> Result<Arc<Device>, Error> {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        Self::with_clock(name, bandwidth, default_burst(bandwidth), clock)
    }

    /// A device of `bandwidth` bytes per second and `burst` bytes on
    /// `clock`.
    ///
    /// # Errors
    /// As [`new`](Self::new), and [`Error::ZeroBurst`] for a zero burst.
    pub fn with_clock(
        name: impl Into<String>,
        bandwidth: u64,
        burst: u64,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Device>, Error> {
        let name = name.into();
        check_name(&name)?;
        let what = || format!("device {name:?}");
        let bucket = TokenBucket::with_clock(bandwidth, burst, clock).map_err(|e| match e {
            Error::ZeroBandwidth { .. } => Error::ZeroBandwidth { what: what() },
            Error::ZeroBurst { .. } => Error::ZeroBurst { what: what() },
            other => other,
        })?;
        Ok(Arc::new(Device {
            name,
            bucket,
            read: AtomicU64::new(0),
            written: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            waited: AtomicU64::new(0),
        }))
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its bandwidth in bytes per second.
    pub fn bandwidth(&self) -> u64 {
        self.bucket.rate()
    }

    /// When a charge of `bytes` made now would be granted, on the device's
    /// clock, without making it.
    pub fn ready_at(&self, bytes: u64) -> Duration {
        self.bucket.ready_at(bytes)
    }

    /// Charges `bytes` about to be written, blocking until they fit the
    /// device's rate; returns the time waited.
    pub fn charge_write(&self, bytes: u64) -> Duration {
        self.written.fetch_add(bytes, Ordering::Relaxed);
        self.charge(bytes)
    }

    /// Charges `bytes` about to be read, blocking until they fit the
    /// device's rate; returns the time waited.
    pub fn charge_read(&self, bytes: u64) -> Duration {
        self.read.fetch_add(bytes, Ordering::Relaxed);
        self.charge(bytes)
    }

    fn charge(&self, bytes: u64) -> Duration {
        if bytes == 0 {
            return Duration::ZERO;
        }
        let waited = self.bucket.acquire(bytes);
        if !waited.is_zero() {
            self.waits.fetch_add(1, Ordering::Relaxed);
            self.waited.fetch_add(
                u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
        }
        waited
    }

    /// The device's counters so far.
    pub fn stats(&self) -> DeviceStats {
        DeviceStats {
            name: self.name.clone(),
            bandwidth: self.bandwidth(),
            bytes_read: self.read.load(Ordering::Relaxed),
            bytes_written: self.written.load(Ordering::Relaxed),
            waits: self.waits.load(Ordering::Relaxed),
            waited: Duration::from_nanos(self.waited.load(Ordering::Relaxed)),
        }
    }
}

/// Charges `bytes` about to be written to `device`, if there is one: the
/// call the I/O crates make before each write (`None`: a real device,
/// nothing charged).
pub fn charge_write(device: Option<&Device>, bytes: u64) {
    if let Some(d) = device {
        d.charge_write(bytes);
    }
}

/// Charges `bytes` about to be read from `device`, if there is one.
pub fn charge_read(device: Option<&Device>, bytes: u64) {
    if let Some(d) = device {
        d.charge_read(bytes);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn manual(name: &str, rate: u64, burst: u64) -> (Arc<ManualClock>, Arc<Device>) {
        let clock = Arc::new(ManualClock::new());
        let as_dyn: Arc<dyn Clock> = clock.clone();
        (
            clock,
            Device::with_clock(name, rate, burst, as_dyn).unwrap(),
        )
    }

    #[test]
    fn bad_names_and_zero_rates_are_refused_by_name() {
        let e = Device::new("", 1).unwrap_err().to_string();
        assert!(e.contains("1 to 64 bytes"), "{e}");
        let long = "x".repeat(65);
        assert!(Device::new(long, 1).is_err());
        let e = Device::new("disk", 0).unwrap_err().to_string();
        assert!(
            e.contains("device \"disk\"") && e.contains("at least 1 byte per second"),
            "{e}"
        );
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
        let e = Device::with_clock("disk", 1, 0, clock)
            .unwrap_err()
            .to_string();
        assert!(e.contains("device \"disk\"") && e.contains("burst"), "{e}");
    }

    #[test]
    fn reads_and_writes_share_the_bucket_and_are_counted_apart() {
        let (clock, d) = manual("disk", 1000, 100);
        assert_eq!(d.charge_write(60), Duration::ZERO);
        assert_eq!(d.charge_read(40), Duration::ZERO);
        // The burst is spent by both together: the next byte waits.
        assert_eq!(d.ready_at(100), Duration::from_millis(100));
        clock.advance(Duration::from_millis(100));
        assert_eq!(d.charge_read(100), Duration::ZERO);
        let s = d.stats();
        assert_eq!((s.bytes_read, s.bytes_written, s.bytes()), (140, 60, 200));
        assert_eq!((s.waits, s.waited), (0, Duration::ZERO));
        assert_eq!(s.bandwidth, 1000);
        assert!((s.utilisation(Duration::from_millis(200)) - 1.0).abs() < 1e-9);
        assert_eq!(s.utilisation(Duration::ZERO), 0.0);
    }

    #[test]
    fn a_charge_that_waits_is_counted_with_its_wait() {
        let (clock, d) = manual("disk", 1000, 100);
        d.charge_write(100);
        let waiter = {
            let d = Arc::clone(&d);
            std::thread::spawn(move || d.charge_write(50))
        };
        clock.wait_for_waiters(1);
        clock.advance(Duration::from_millis(50));
        assert_eq!(waiter.join().unwrap(), Duration::from_millis(50));
        let s = d.stats();
        assert_eq!((s.waits, s.waited), (1, Duration::from_millis(50)));
        // The free functions charge an optional device, and nothing
        // without one.
        charge_read(None, 1 << 40);
        charge_write(None, 1 << 40);
        charge_read(Some(&d), 0);
        assert_eq!(d.stats().bytes(), 150);
    }

    #[test]
    fn devices_are_equal_only_to_themselves() {
        let a = Device::new("a", 1).unwrap();
        let b = Device::new("a", 1).unwrap();
        assert_eq!(a, Arc::clone(&a));
        assert_ne!(a, b);
        assert!(format!("{a:?}").contains("bandwidth: 1"));
    }
}
