//! Timestamps, TTLs, cells, tombstones and row markers, with the rules that
//! decide which of two versions wins.

use std::cmp::Ordering;
use std::fmt;

use bytes::Bytes;

use crate::Error;

/// The longest TTL Cassandra accepts: 20 years, in seconds.
pub const MAX_TTL_SECONDS: u32 = 20 * 365 * 24 * 60 * 60;

/// A write timestamp in microseconds (the client's clock, usually since the
/// Unix epoch). Valid values are [`Timestamp::MIN`]..=[`Timestamp::MAX`];
/// `i64::MIN` is reserved as "missing", as in Cassandra and ScyllaDB
/// (`api::missing_timestamp`), and is rejected when a mutation is built.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The smallest valid timestamp, `i64::MIN + 1`.
    pub const MIN: Timestamp = Timestamp(i64::MIN + 1);
    /// The largest valid timestamp, `i64::MAX`.
    pub const MAX: Timestamp = Timestamp(i64::MAX);

    /// Wraps a value without checking it; mutation builders and the stream
    /// validator check the range.
    pub const fn from_micros(micros: i64) -> Self {
        Timestamp(micros)
    }

    /// Wraps a value, checking the range.
    ///
    /// # Errors
    /// [`Error::TimestampOutOfRange`] for `i64::MIN`.
    pub fn new(micros: i64) -> Result<Self, Error> {
        let ts = Timestamp(micros);
        ts.check("write")?;
        Ok(ts)
    }

    /// The value in microseconds.
    pub const fn micros(self) -> i64 {
        self.0
    }

    /// True if within [`Timestamp::MIN`]..=[`Timestamp::MAX`].
    pub const fn is_valid(self) -> bool {
        self.0 != i64::MIN
    }

    pub(crate) fn check(self, what: &'static str) -> Result<(), Error> {
        if self.is_valid() {
            Ok(())
        } else {
            Err(Error::TimestampOutOfRange {
                what,
                micros: self.0,
            })
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}us", self.0)
    }
}

/// The time-to-live of an expiring cell or row marker: the TTL in seconds
/// and the local time (seconds since the Unix epoch) at which the data
/// expires. Constructed only through [`Ttl::new`], so always sane.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Ttl {
    ttl: u32,
    expiry: u32,
}

impl Ttl {
    /// A TTL of `ttl` seconds expiring at `expiry` (seconds since the epoch).
    ///
    /// # Errors
    /// [`Error::InvalidTtl`] if `ttl` is 0, exceeds [`MAX_TTL_SECONDS`], or
    /// is larger than `expiry` (the write would predate the epoch).
    pub fn new(ttl: u32, expiry: u32) -> Result<Self, Error> {
        let reason = if ttl == 0 {
            "a TTL must be at least 1 second"
        } else if ttl > MAX_TTL_SECONDS {
            "a TTL must not exceed 630720000 seconds (20 years)"
        } else if expiry < ttl {
            "the expiry time minus the TTL (the write time) is before the epoch"
        } else {
            return Ok(Self { ttl, expiry });
        };
        Err(Error::InvalidTtl {
            ttl,
            expiry,
            reason,
        })
    }

    /// The TTL in seconds.
    pub const fn ttl(self) -> u32 {
        self.ttl
    }

    /// When the data expires, in seconds since the Unix epoch.
    pub const fn expiry(self) -> u32 {
        self.expiry
    }

    /// Reconciliation order: later expiry wins, then the longer TTL.
    fn merge_cmp(self, other: Self) -> Ordering {
        self.expiry
            .cmp(&other.expiry)
            .then(self.ttl.cmp(&other.ttl))
    }
}

/// A deletion: everything it covers with a write timestamp less than or
/// equal to `timestamp` is shadowed. `local_deletion_time` (seconds since
/// the epoch) is when the deletion happened on the replica, used for
/// garbage collection.
///
/// Tombstones are ordered as Cassandra's `DeletionTime.supersedes`: by
/// timestamp, then by local deletion time; the greater one wins.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Tombstone {
    /// Write timestamp of the deletion.
    pub timestamp: Timestamp,
    /// Local deletion time, seconds since the Unix epoch.
    pub local_deletion_time: u32,
}

impl Tombstone {
    /// A tombstone.
    pub const fn new(timestamp: Timestamp, local_deletion_time: u32) -> Self {
        Self {
            timestamp,
            local_deletion_time,
        }
    }

    /// True if data written at `ts` is shadowed: `ts <= self.timestamp`.
    pub fn shadows(&self, ts: Timestamp) -> bool {
        ts <= self.timestamp
    }
}

/// True if `tomb` (possibly absent) shadows data written at `ts`.
pub(crate) fn shadowed_by(tomb: Option<Tombstone>, ts: Timestamp) -> bool {
    tomb.is_some_and(|t| t.shadows(ts))
}

/// One column's value in a row: live data or a cell tombstone.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Cell {
    /// A written value, possibly expiring.
    Live {
        /// The value bytes.
        value: Bytes,
        /// Write timestamp.
        timestamp: Timestamp,
        /// TTL and expiry, for an expiring cell.
        ttl: Option<Ttl>,
    },
    /// A deleted value.
    Tombstone {
        /// Write timestamp of the deletion.
        timestamp: Timestamp,
        /// Local deletion time, seconds since the Unix epoch.
        local_deletion_time: u32,
    },
}

impl Cell {
    /// A live, non-expiring cell.
    pub fn live(value: impl Into<Bytes>, timestamp: Timestamp) -> Self {
        Cell::Live {
            value: value.into(),
            timestamp,
            ttl: None,
        }
    }

    /// A live cell that expires.
    pub fn expiring(value: impl Into<Bytes>, timestamp: Timestamp, ttl: Ttl) -> Self {
        Cell::Live {
            value: value.into(),
            timestamp,
            ttl: Some(ttl),
        }
    }

    /// A cell tombstone.
    pub fn tombstone(timestamp: Timestamp, local_deletion_time: u32) -> Self {
        Cell::Tombstone {
            timestamp,
            local_deletion_time,
        }
    }

    /// The write timestamp.
    pub fn timestamp(&self) -> Timestamp {
        match self {
            Cell::Live { timestamp, .. } | Cell::Tombstone { timestamp, .. } => *timestamp,
        }
    }

    /// True for a live cell.
    pub fn is_live(&self) -> bool {
        matches!(self, Cell::Live { .. })
    }

    /// Reconciliation order of two versions of one cell; the greater wins.
    ///
    /// 1. Higher timestamp wins.
    /// 2. Equal timestamps: a tombstone beats a live cell; of two tombstones,
    ///    the later local deletion time wins.
    /// 3. Two live cells: an expiring cell beats a non-expiring one; of two
    ///    expiring cells the later expiry wins; then the larger value
    ///    (bytewise); then the longer TTL.
    ///
    /// This is a total order, so reconciling never depends on argument order.
    pub fn merge_cmp(&self, other: &Cell) -> Ordering {
        self.timestamp()
            .cmp(&other.timestamp())
            .then_with(|| match (self, other) {
                (
                    Cell::Tombstone {
                        local_deletion_time: a,
                        ..
                    },
                    Cell::Tombstone {
                        local_deletion_time: b,
                        ..
                    },
                ) => a.cmp(b),
                (Cell::Tombstone { .. }, Cell::Live { .. }) => Ordering::Greater,
                (Cell::Live { .. }, Cell::Tombstone { .. }) => Ordering::Less,
                (
                    Cell::Live {
                        value: va, ttl: ta, ..
                    },
                    Cell::Live {
                        value: vb, ttl: tb, ..
                    },
                ) => {
                    let by_expiry = match (ta, tb) {
                        (None, None) => Ordering::Equal,
                        (Some(_), None) => Ordering::Greater,
                        (None, Some(_)) => Ordering::Less,
                        (Some(a), Some(b)) => a.expiry.cmp(&b.expiry),
                    };
                    by_expiry
                        .then_with(|| va.cmp(vb))
                        .then_with(|| match (ta, tb) {
                            (Some(a), Some(b)) => a.ttl.cmp(&b.ttl),
                            _ => Ordering::Equal,
                        })
                }
            })
    }

    /// Reconciles two versions of one cell, returning the winner.
    pub fn reconcile(self, other: Cell) -> Cell {
        if other.merge_cmp(&self) == Ordering::Greater {
            other
        } else {
            self
        }
    }

    pub(crate) fn validate(&self, what: &'static str) -> Result<(), Error> {
        self.timestamp().check(what)
    }
}

/// A row marker (Cassandra's primary key liveness info): the row exists,
/// written at `timestamp`, even if all its cells are null.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RowMarker {
    /// Write timestamp.
    pub timestamp: Timestamp,
    /// TTL and expiry, for an expiring row (`INSERT ... USING TTL`).
    pub ttl: Option<Ttl>,
}

impl RowMarker {
    /// A non-expiring marker.
    pub const fn new(timestamp: Timestamp) -> Self {
        Self {
            timestamp,
            ttl: None,
        }
    }

    /// An expiring marker.
    pub const fn expiring(timestamp: Timestamp, ttl: Ttl) -> Self {
        Self {
            timestamp,
            ttl: Some(ttl),
        }
    }

    /// Reconciliation order; the greater wins. Higher timestamp, then an
    /// expiring marker beats a non-expiring one, then later expiry, then the
    /// longer TTL (a total order, as for cells).
    pub fn merge_cmp(&self, other: &RowMarker) -> Ordering {
        self.timestamp
            .cmp(&other.timestamp)
            .then_with(|| match (self.ttl, other.ttl) {
                (None, None) => Ordering::Equal,
                (Some(_), None) => Ordering::Greater,
                (None, Some(_)) => Ordering::Less,
                (Some(a), Some(b)) => a.merge_cmp(b),
            })
    }

    /// Reconciles two markers, returning the winner.
    pub fn reconcile(self, other: RowMarker) -> RowMarker {
        if other.merge_cmp(&self) == Ordering::Greater {
            other
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(v: i64) -> Timestamp {
        Timestamp::from_micros(v)
    }

    #[test]
    fn higher_timestamp_wins() {
        let a = Cell::live("a", ts(1));
        let b = Cell::tombstone(ts(2), 0);
        assert_eq!(a.clone().reconcile(b.clone()), b);
        assert_eq!(b.clone().reconcile(a), b);
        let c = Cell::live("z", ts(3));
        assert_eq!(b.reconcile(c.clone()), c);
    }

    #[test]
    fn tombstone_beats_live_on_equal_timestamps() {
        let live = Cell::live("a", ts(5));
        let dead = Cell::tombstone(ts(5), 0);
        assert_eq!(live.clone().reconcile(dead.clone()), dead);
        assert_eq!(dead.clone().reconcile(live), dead);
    }

    #[test]
    fn expiring_then_later_expiry_then_larger_value() {
        let plain_big = Cell::live("zzz", ts(5));
        let exp_small = Cell::expiring("a", ts(5), Ttl::new(10, 100).unwrap());
        let exp_later = Cell::expiring("a", ts(5), Ttl::new(10, 200).unwrap());
        let exp_later_bigger = Cell::expiring("b", ts(5), Ttl::new(10, 200).unwrap());
        assert_eq!(plain_big.clone().reconcile(exp_small.clone()), exp_small);
        assert_eq!(exp_later.clone().reconcile(exp_small.clone()), exp_later);
        assert_eq!(
            exp_later.reconcile(exp_later_bigger.clone()),
            exp_later_bigger
        );
        let a = Cell::live("a", ts(5));
        let b = Cell::live("b", ts(5));
        assert_eq!(a.clone().reconcile(b.clone()), b);
        assert_eq!(b.clone().reconcile(a), b);
    }

    #[test]
    fn ttl_sanity() {
        assert!(Ttl::new(0, 10).is_err());
        assert!(Ttl::new(MAX_TTL_SECONDS + 1, u32::MAX).is_err());
        assert!(Ttl::new(10, 9).is_err());
        let err = Ttl::new(0, 10).unwrap_err().to_string();
        assert!(err.contains("at least 1 second"), "{err}");
        assert!(Ttl::new(MAX_TTL_SECONDS, MAX_TTL_SECONDS).is_ok());
    }

    #[test]
    fn timestamp_range() {
        assert!(Timestamp::new(i64::MIN).is_err());
        assert!(Timestamp::new(i64::MIN + 1).is_ok());
        assert!(Timestamp::new(i64::MAX).is_ok());
    }

    #[test]
    fn tombstone_order_and_shadowing() {
        let t = Tombstone::new(ts(5), 1);
        assert!(t.shadows(ts(5)));
        assert!(!t.shadows(ts(6)));
        assert!(Tombstone::new(ts(5), 2) > t);
        assert!(Tombstone::new(ts(6), 0) > Tombstone::new(ts(5), 9));
    }
}
