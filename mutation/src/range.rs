//! Clustering positions and ranges, and partition (ring) ranges.

use std::cmp::Ordering;
use std::fmt;
use std::ops::Bound;

use crate::key::fmt_hex;
use crate::{ClusteringKey, DecoratedKey, Error, Token};

/// A point in the clustering order of a partition: a row's key, a point just
/// before or just after a key, or before/after every key.
///
/// Rows sit at [`Position::At`]; range tombstone changes sit at the other
/// kinds (an inclusive start bound `[k` is `Before(k)`, an exclusive start
/// `(k` is `After(k)`, an inclusive end `k]` is `After(k)`, an exclusive end
/// `k)` is `Before(k)`). Ordering: `BeforeAll` < `Before(k)` < `At(k)` <
/// `After(k)` < `Before(k')` for `k < k'` bytewise, and `AfterAll` last.
///
/// ```
/// use mutation::{ClusteringKey, Position};
/// let k = ClusteringKey::new(&b"k"[..]).unwrap();
/// assert!(Position::Before(k.clone()) < Position::At(k.clone()));
/// assert!(Position::At(k.clone()) < Position::After(k));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Position {
    /// Before every clustering row.
    BeforeAll,
    /// Just before the row with this key.
    Before(ClusteringKey),
    /// The row with this key.
    At(ClusteringKey),
    /// Just after the row with this key.
    After(ClusteringKey),
    /// After every clustering row.
    AfterAll,
}

/// A borrowed view of a [`Position`], for comparisons without cloning keys.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum PosRef<'a> {
    BeforeAll,
    Key(&'a [u8], i8),
    AfterAll,
}

impl PosRef<'_> {
    fn rank(&self) -> u8 {
        match self {
            PosRef::BeforeAll => 0,
            PosRef::Key(..) => 1,
            PosRef::AfterAll => 2,
        }
    }
}

impl Ord for PosRef<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PosRef::Key(a, wa), PosRef::Key(b, wb)) => a.cmp(b).then(wa.cmp(wb)),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PosRef<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Position {
    pub(crate) fn as_ref(&self) -> PosRef<'_> {
        match self {
            Position::BeforeAll => PosRef::BeforeAll,
            Position::Before(k) => PosRef::Key(k.as_bytes(), -1),
            Position::At(k) => PosRef::Key(k.as_bytes(), 0),
            Position::After(k) => PosRef::Key(k.as_bytes(), 1),
            Position::AfterAll => PosRef::AfterAll,
        }
    }

    /// The position where a range with this start bound begins.
    pub fn from_start_bound(bound: &Bound<ClusteringKey>) -> Self {
        match bound {
            Bound::Unbounded => Position::BeforeAll,
            Bound::Included(k) => Position::Before(k.clone()),
            Bound::Excluded(k) => Position::After(k.clone()),
        }
    }

    /// The position where a range with this end bound stops (exclusive:
    /// the range covers positions strictly before it).
    pub fn from_end_bound(bound: &Bound<ClusteringKey>) -> Self {
        match bound {
            Bound::Unbounded => Position::AfterAll,
            Bound::Included(k) => Position::After(k.clone()),
            Bound::Excluded(k) => Position::Before(k.clone()),
        }
    }

    /// The start bound of a range that begins at this position; `None` for
    /// [`Position::At`] and [`Position::AfterAll`], which no start bound
    /// produces.
    pub fn to_start_bound(&self) -> Option<Bound<ClusteringKey>> {
        match self {
            Position::BeforeAll => Some(Bound::Unbounded),
            Position::Before(k) => Some(Bound::Included(k.clone())),
            Position::After(k) => Some(Bound::Excluded(k.clone())),
            Position::At(_) | Position::AfterAll => None,
        }
    }

    /// The end bound of a range that stops at this position; `None` for
    /// [`Position::At`] and [`Position::BeforeAll`].
    pub fn to_end_bound(&self) -> Option<Bound<ClusteringKey>> {
        match self {
            Position::AfterAll => Some(Bound::Unbounded),
            Position::After(k) => Some(Bound::Included(k.clone())),
            Position::Before(k) => Some(Bound::Excluded(k.clone())),
            Position::At(_) | Position::BeforeAll => None,
        }
    }

    /// True for [`Position::At`], the position of a row.
    pub fn is_row(&self) -> bool {
        matches!(self, Position::At(_))
    }

    /// The clustering key this position refers to, if any.
    pub fn key(&self) -> Option<&ClusteringKey> {
        match self {
            Position::Before(k) | Position::At(k) | Position::After(k) => Some(k),
            Position::BeforeAll | Position::AfterAll => None,
        }
    }
}

impl Ord for Position {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_ref().cmp(&other.as_ref())
    }
}

impl PartialOrd for Position {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::BeforeAll => f.write_str("before-all"),
            Position::Before(k) => {
                f.write_str("before ")?;
                fmt_hex(k.as_bytes(), f)
            }
            Position::At(k) => {
                f.write_str("at ")?;
                fmt_hex(k.as_bytes(), f)
            }
            Position::After(k) => {
                f.write_str("after ")?;
                fmt_hex(k.as_bytes(), f)
            }
            Position::AfterAll => f.write_str("after-all"),
        }
    }
}

fn fmt_start(bound: &Bound<impl fmt::Display>) -> String {
    match bound {
        Bound::Unbounded => "(-inf".to_owned(),
        Bound::Included(k) => format!("[{k}"),
        Bound::Excluded(k) => format!("({k}"),
    }
}

fn fmt_end(bound: &Bound<impl fmt::Display>) -> String {
    match bound {
        Bound::Unbounded => "+inf)".to_owned(),
        Bound::Included(k) => format!("{k}]"),
        Bound::Excluded(k) => format!("{k})"),
    }
}

/// An interval of clustering keys with inclusive, exclusive or open ends.
/// The start never lies after the end (an empty range such as `[k, k)` is
/// allowed and covers nothing).
///
/// ```
/// use std::ops::Bound;
/// use mutation::{ClusteringKey, ClusteringRange};
/// let k = |s: &'static str| ClusteringKey::new(s.as_bytes()).unwrap();
/// let r = ClusteringRange::new(Bound::Included(k("b")), Bound::Excluded(k("d"))).unwrap();
/// assert!(r.contains(&k("b")) && r.contains(&k("c")) && !r.contains(&k("d")));
/// assert!(ClusteringRange::new(Bound::Included(k("d")), Bound::Included(k("b"))).is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ClusteringRange {
    start: Bound<ClusteringKey>,
    end: Bound<ClusteringKey>,
}

impl ClusteringRange {
    /// A range between two bounds.
    ///
    /// # Errors
    /// [`Error::ClusteringRangeReversed`] if the start lies after the end.
    pub fn new(start: Bound<ClusteringKey>, end: Bound<ClusteringKey>) -> Result<Self, Error> {
        let range = Self { start, end };
        if range.start_position() > range.end_position() {
            return Err(Error::ClusteringRangeReversed {
                start: fmt_start(&range.start),
                end: fmt_end(&range.end),
            });
        }
        Ok(range)
    }

    /// Every clustering key.
    pub fn full() -> Self {
        Self {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        }
    }

    /// Exactly one key: `[key, key]`.
    pub fn singular(key: ClusteringKey) -> Self {
        Self {
            start: Bound::Included(key.clone()),
            end: Bound::Included(key),
        }
    }

    /// The range between two positions, if both are valid bounds
    /// (`start` not `At`/`AfterAll`, `end` not `At`/`BeforeAll`).
    ///
    /// # Errors
    /// [`Error::ClusteringRangeReversed`] if `start > end`, or if either
    /// position cannot be a bound of that side.
    pub fn from_positions(start: &Position, end: &Position) -> Result<Self, Error> {
        match (start.to_start_bound(), end.to_end_bound()) {
            (Some(s), Some(e)) => Self::new(s, e),
            _ => Err(Error::ClusteringRangeReversed {
                start: start.to_string(),
                end: end.to_string(),
            }),
        }
    }

    /// The start bound.
    pub fn start(&self) -> &Bound<ClusteringKey> {
        &self.start
    }

    /// The end bound.
    pub fn end(&self) -> &Bound<ClusteringKey> {
        &self.end
    }

    /// The first position the range covers.
    pub fn start_position(&self) -> Position {
        Position::from_start_bound(&self.start)
    }

    /// The position just past the range.
    pub fn end_position(&self) -> Position {
        Position::from_end_bound(&self.end)
    }

    /// True if the range covers no key.
    pub fn is_empty(&self) -> bool {
        self.start_position() >= self.end_position()
    }

    /// True if `key` lies in the range.
    pub fn contains(&self, key: &ClusteringKey) -> bool {
        self.contains_position(&Position::At(key.clone()))
    }

    /// True if `start_position() <= pos < end_position()`.
    pub fn contains_position(&self, pos: &Position) -> bool {
        self.start_position() <= *pos && *pos < self.end_position()
    }
}

impl fmt::Display for ClusteringRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, {}", fmt_start(&self.start), fmt_end(&self.end))
    }
}

/// One end of a [`PartitionRange`]: a token (covering every key with that
/// token) or a specific decorated key.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum RingPosition {
    /// All keys with this token.
    Token(Token),
    /// This key.
    Key(DecoratedKey),
}

impl fmt::Display for RingPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingPosition::Token(t) => write!(f, "token {t}"),
            RingPosition::Key(k) => write!(f, "{k}"),
        }
    }
}

/// A point between or at keys on the ring, for comparing range ends.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum RingPoint<'a> {
    Min,
    /// (token, sub-position); sub-position orders before-all-keys (0),
    /// a key with weight (1), after-all-keys (2).
    At(Token, u8, &'a [u8], i8),
    Max,
}

fn start_point(b: &Bound<RingPosition>) -> RingPoint<'_> {
    match b {
        Bound::Unbounded => RingPoint::Min,
        Bound::Included(RingPosition::Token(t)) => RingPoint::At(*t, 0, &[], 0),
        Bound::Excluded(RingPosition::Token(t)) => RingPoint::At(*t, 2, &[], 0),
        Bound::Included(RingPosition::Key(k)) => {
            RingPoint::At(k.token(), 1, k.key().as_bytes(), -1)
        }
        Bound::Excluded(RingPosition::Key(k)) => RingPoint::At(k.token(), 1, k.key().as_bytes(), 1),
    }
}

fn end_point(b: &Bound<RingPosition>) -> RingPoint<'_> {
    match b {
        Bound::Unbounded => RingPoint::Max,
        Bound::Included(RingPosition::Token(t)) => RingPoint::At(*t, 2, &[], 0),
        Bound::Excluded(RingPosition::Token(t)) => RingPoint::At(*t, 0, &[], 0),
        Bound::Included(RingPosition::Key(k)) => RingPoint::At(k.token(), 1, k.key().as_bytes(), 1),
        Bound::Excluded(RingPosition::Key(k)) => {
            RingPoint::At(k.token(), 1, k.key().as_bytes(), -1)
        }
    }
}

/// A non-wrapping interval of the token ring, by tokens or by keys: what a
/// reader is asked to produce, and what
/// [`FragmentReader::fast_forward_to`](crate::FragmentReader::fast_forward_to)
/// moves to. Wrap-around ranges must be split by the caller.
///
/// ```
/// use std::ops::Bound;
/// use mutation::{DecoratedKey, PartitionRange, RingPosition, Token};
/// let k = DecoratedKey::from_bytes("test").unwrap(); // token -6017608668500074083
/// let r = PartitionRange::new(
///     Bound::Excluded(RingPosition::Token(Token::from_i64(-6017608668500074084))),
///     Bound::Included(RingPosition::Token(Token::from_i64(0))),
/// ).unwrap();
/// assert!(r.contains(&k));
/// assert!(PartitionRange::single_key(k.clone()).contains(&k));
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct PartitionRange {
    start: Bound<RingPosition>,
    end: Bound<RingPosition>,
}

impl PartitionRange {
    /// A range between two ring bounds.
    ///
    /// # Errors
    /// [`Error::PartitionRangeReversed`] if the start lies after the end.
    pub fn new(start: Bound<RingPosition>, end: Bound<RingPosition>) -> Result<Self, Error> {
        if start_point(&start) > end_point(&end) {
            return Err(Error::PartitionRangeReversed {
                start: fmt_start(&start),
                end: fmt_end(&end),
            });
        }
        Ok(Self { start, end })
    }

    /// The whole ring.
    pub fn full() -> Self {
        Self {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        }
    }

    /// Exactly one partition.
    pub fn single_key(key: DecoratedKey) -> Self {
        Self {
            start: Bound::Included(RingPosition::Key(key.clone())),
            end: Bound::Included(RingPosition::Key(key)),
        }
    }

    /// The Cassandra-style token range `(start, end]`.
    ///
    /// # Errors
    /// [`Error::PartitionRangeReversed`] if `start > end`.
    pub fn token_range(start_exclusive: Token, end_inclusive: Token) -> Result<Self, Error> {
        Self::new(
            Bound::Excluded(RingPosition::Token(start_exclusive)),
            Bound::Included(RingPosition::Token(end_inclusive)),
        )
    }

    /// The start bound.
    pub fn start(&self) -> &Bound<RingPosition> {
        &self.start
    }

    /// The end bound.
    pub fn end(&self) -> &Bound<RingPosition> {
        &self.end
    }

    /// True if `key` lies before the start of the range.
    pub fn is_before(&self, key: &DecoratedKey) -> bool {
        let p = RingPoint::At(key.token(), 1, key.key().as_bytes(), 0);
        p < start_point(&self.start)
    }

    /// True if `key` lies after the end of the range.
    pub fn is_after(&self, key: &DecoratedKey) -> bool {
        let p = RingPoint::At(key.token(), 1, key.key().as_bytes(), 0);
        p > end_point(&self.end)
    }

    /// True if `key` lies in the range.
    pub fn contains(&self, key: &DecoratedKey) -> bool {
        !self.is_before(key) && !self.is_after(key)
    }
}

impl fmt::Display for PartitionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, {}", fmt_start(&self.start), fmt_end(&self.end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ck(s: &str) -> ClusteringKey {
        ClusteringKey::new(s.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn position_order() {
        let mut v = vec![
            Position::AfterAll,
            Position::After(ck("b")),
            Position::At(ck("b")),
            Position::Before(ck("b")),
            Position::After(ck("a")),
            Position::At(ck("a")),
            Position::Before(ck("a")),
            Position::At(ck("")),
            Position::BeforeAll,
        ];
        let expected: Vec<_> = v.iter().rev().cloned().collect();
        v.sort();
        assert_eq!(v, expected);
    }

    #[test]
    fn clustering_range_bounds() {
        let r = ClusteringRange::new(Bound::Excluded(ck("a")), Bound::Included(ck("c"))).unwrap();
        assert!(!r.contains(&ck("a")));
        assert!(r.contains(&ck("b")));
        assert!(r.contains(&ck("c")));
        assert!(!r.contains(&ck("ca")));
        let empty =
            ClusteringRange::new(Bound::Included(ck("a")), Bound::Excluded(ck("a"))).unwrap();
        assert!(empty.is_empty());
        let err =
            ClusteringRange::new(Bound::Included(ck("c")), Bound::Included(ck("a"))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "clustering range start [0x63 is after its end 0x61]"
        );
        // (a, a] is empty but not reversed; (a, a) is reversed.
        assert!(ClusteringRange::new(Bound::Excluded(ck("a")), Bound::Included(ck("a"))).is_ok());
        assert!(ClusteringRange::new(Bound::Excluded(ck("a")), Bound::Excluded(ck("a"))).is_err());
    }

    #[test]
    fn partition_range_membership() {
        let k = DecoratedKey::from_bytes("k").unwrap();
        let t = k.token();
        let incl = PartitionRange::new(
            Bound::Included(RingPosition::Token(t)),
            Bound::Included(RingPosition::Token(t)),
        )
        .unwrap();
        assert!(incl.contains(&k));
        let excl =
            PartitionRange::new(Bound::Excluded(RingPosition::Token(t)), Bound::Unbounded).unwrap();
        assert!(excl.is_before(&k));
        let by_key = PartitionRange::new(
            Bound::Unbounded,
            Bound::Excluded(RingPosition::Key(k.clone())),
        )
        .unwrap();
        assert!(by_key.is_after(&k));
        assert!(PartitionRange::single_key(k.clone()).contains(&k));
        assert!(PartitionRange::full().contains(&k));
        assert!(PartitionRange::token_range(Token::from_i64(5), Token::from_i64(4)).is_err());
    }
}
