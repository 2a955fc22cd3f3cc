//! What a device can do, and what a request costs in its time.

use std::time::Duration;

use crate::Error;

/// Whether a request reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A read.
    Read,
    /// A write (a sync is a write of 0 bytes: one operation).
    Write,
}

/// A device's capacity: bandwidth and operations per second, for reads and
/// for writes (as Seastar's `io_properties.yaml` holds them, from
/// `iotune` or a model). A request's cost is the device time it takes:
/// its bytes at the bandwidth plus one operation at the rate, so a 4 KiB
/// read on a device of 100,000 reads/s costs at least 10 us whatever the
/// bandwidth, and a 1 MiB write on a 1 GiB/s device about 1 ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Bytes read per second.
    pub read_bytes_per_sec: u64,
    /// Bytes written per second.
    pub write_bytes_per_sec: u64,
    /// Read operations per second.
    pub read_ops_per_sec: u64,
    /// Write operations per second.
    pub write_ops_per_sec: u64,
}

impl Capacity {
    /// A capacity of `bytes_per_sec` both ways with no operation rate that
    /// binds (a modelled device of the `device` crate: bandwidth only).
    pub fn bandwidth(bytes_per_sec: u64) -> Self {
        Capacity {
            read_bytes_per_sec: bytes_per_sec,
            write_bytes_per_sec: bytes_per_sec,
            read_ops_per_sec: u64::MAX,
            write_ops_per_sec: u64::MAX,
        }
    }

    /// Checks that no figure is zero.
    ///
    /// # Errors
    /// [`Error::ZeroCapacity`] naming the figure.
    pub fn validate(&self) -> Result<(), Error> {
        for (what, v) in [
            ("read bandwidth", self.read_bytes_per_sec),
            ("write bandwidth", self.write_bytes_per_sec),
            ("read operation rate", self.read_ops_per_sec),
            ("write operation rate", self.write_ops_per_sec),
        ] {
            if v == 0 {
                return Err(Error::ZeroCapacity { what });
            }
        }
        Ok(())
    }

    /// The device time a request of `kind` and `bytes` takes, in
    /// nanoseconds (at least 1).
    pub fn cost_nanos(&self, kind: Kind, bytes: u64) -> u64 {
        let (bw, ops) = match kind {
            Kind::Read => (self.read_bytes_per_sec, self.read_ops_per_sec),
            Kind::Write => (self.write_bytes_per_sec, self.write_ops_per_sec),
        };
        let transfer = u128::from(bytes) * 1_000_000_000 / u128::from(bw.max(1));
        let op = 1_000_000_000 / u128::from(ops.max(1));
        u64::try_from(transfer + op).unwrap_or(u64::MAX).max(1)
    }

    /// [`cost_nanos`](Self::cost_nanos) as a duration.
    pub fn cost(&self, kind: Kind, bytes: u64) -> Duration {
        Duration::from_nanos(self.cost_nanos(kind, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_transfer_plus_one_operation() {
        let c = Capacity {
            read_bytes_per_sec: 1 << 30,
            write_bytes_per_sec: 512 << 20,
            read_ops_per_sec: 100_000,
            write_ops_per_sec: 50_000,
        };
        // 4 KiB read: 3.8 us of transfer + 10 us of operation.
        assert_eq!(c.cost_nanos(Kind::Read, 4096), 3_814 + 10_000);
        // 1 MiB write: 1/512 s + 20 us.
        assert_eq!(c.cost_nanos(Kind::Write, 1 << 20), 1_953_125 + 20_000);
        // A sync: one write operation.
        assert_eq!(c.cost(Kind::Write, 0), Duration::from_micros(20));
        let bw = Capacity::bandwidth(64 << 20);
        assert_eq!(bw.cost(Kind::Write, 64 << 20), Duration::from_secs(1));
        assert_eq!(bw.cost_nanos(Kind::Read, 0), 1, "never free");
    }

    #[test]
    fn zero_figures_are_refused_by_name() {
        let mut c = Capacity::bandwidth(1);
        assert_eq!(c.validate(), Ok(()));
        c.write_ops_per_sec = 0;
        let e = c.validate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "device capacity: write operation rate of 0 (every figure must be at least 1)"
        );
    }
}
