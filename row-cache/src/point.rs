//! Points of the token ring and the continuity set built on them.
//!
//! A [`Point`] is a position between or at partitions: before or after all
//! keys of a token, just before, at or just after a key, or either end of
//! the ring. Range bounds map to points (`start_point`, `end_point`) the
//! way `mutation`'s own comparisons do, so "the range [a, b] is continuous"
//! is an interval check in one ordered space.
//!
//! Lookups never build an owned point: stored points and borrowed
//! [`Probe`]s both compare through the [`RingKey`] trait object, which the
//! `BTreeMap`s are searched by (`Borrow<dyn RingKey>`), so a lookup by a
//! caller's key clones nothing and allocates nothing.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;

use mutation::{DecoratedKey, PartitionRange, RingPosition, Token};

/// The weight of a key point: just before the key, at it, just after it.
pub(crate) const BEFORE: i8 = -1;
/// See [`BEFORE`].
pub(crate) const AT: i8 = 0;
/// See [`BEFORE`].
pub(crate) const AFTER: i8 = 1;

/// A position on the ring, owned.
#[derive(Clone, Debug)]
pub(crate) enum Point {
    /// Before every key.
    Min,
    /// Before (`0`) or after (`2`) every key of a token.
    Token(Token, u8),
    /// Just before ([`BEFORE`]), at ([`AT`]) or just after ([`AFTER`]) a key.
    Key(DecoratedKey, i8),
    /// After every key.
    Max,
}

/// A position on the ring, borrowed: what lookups compare with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe<'a> {
    rank: u8,
    token: i64,
    sub: u8,
    bytes: &'a [u8],
    weight: i8,
}

/// The comparable form shared by [`Point`] and [`Probe`]: rank (min, at,
/// max), token, sub-position (before-all-keys 0, a key 1, after-all-keys
/// 2), key bytes, weight.
pub(crate) trait RingKey {
    fn parts(&self) -> (u8, i64, u8, &[u8], i8);
}

impl RingKey for Probe<'_> {
    fn parts(&self) -> (u8, i64, u8, &[u8], i8) {
        (self.rank, self.token, self.sub, self.bytes, self.weight)
    }
}

impl RingKey for Point {
    fn parts(&self) -> (u8, i64, u8, &[u8], i8) {
        match self {
            Point::Min => (0, 0, 0, &[], 0),
            Point::Token(t, sub) => (1, t.value(), *sub, &[], 0),
            Point::Key(k, w) => (1, k.token().value(), 1, k.key().as_bytes(), *w),
            Point::Max => (2, 0, 0, &[], 0),
        }
    }
}

impl PartialEq for dyn RingKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}
impl Eq for dyn RingKey + '_ {}
impl PartialOrd for dyn RingKey + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for dyn RingKey + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        self.parts().cmp(&other.parts())
    }
}

impl PartialEq for Point {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}
impl Eq for Point {}
impl PartialOrd for Point {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Point {
    fn cmp(&self, other: &Self) -> Ordering {
        self.parts().cmp(&other.parts())
    }
}

impl<'a> Borrow<dyn RingKey + 'a> for Point {
    fn borrow(&self) -> &(dyn RingKey + 'a) {
        self
    }
}

impl<'a> Probe<'a> {
    /// The point of `key` with `weight`.
    pub(crate) fn key(key: &'a DecoratedKey, weight: i8) -> Self {
        Probe {
            rank: 1,
            token: key.token().value(),
            sub: 1,
            bytes: key.key().as_bytes(),
            weight,
        }
    }

    /// A borrowed view of an owned point.
    pub(crate) fn of(point: &'a Point) -> Self {
        let (rank, token, sub, bytes, weight) = point.parts();
        Probe {
            rank,
            token,
            sub,
            bytes,
            weight,
        }
    }

    /// The start of a range.
    pub(crate) fn start(bound: &'a Bound<RingPosition>) -> Self {
        match bound {
            Bound::Unbounded => Probe::of_parts(0, 0, 0),
            Bound::Included(RingPosition::Token(t)) => Probe::of_parts(1, t.value(), 0),
            Bound::Excluded(RingPosition::Token(t)) => Probe::of_parts(1, t.value(), 2),
            Bound::Included(RingPosition::Key(k)) => Probe::key(k, BEFORE),
            Bound::Excluded(RingPosition::Key(k)) => Probe::key(k, AFTER),
        }
    }

    /// The end of a range.
    pub(crate) fn end(bound: &'a Bound<RingPosition>) -> Self {
        match bound {
            Bound::Unbounded => Probe::of_parts(2, 0, 0),
            Bound::Included(RingPosition::Token(t)) => Probe::of_parts(1, t.value(), 2),
            Bound::Excluded(RingPosition::Token(t)) => Probe::of_parts(1, t.value(), 0),
            Bound::Included(RingPosition::Key(k)) => Probe::key(k, AFTER),
            Bound::Excluded(RingPosition::Key(k)) => Probe::key(k, BEFORE),
        }
    }

    fn of_parts(rank: u8, token: i64, sub: u8) -> Self {
        Probe {
            rank,
            token,
            sub,
            bytes: &[],
            weight: 0,
        }
    }

    pub(crate) fn as_dyn(&self) -> &(dyn RingKey + 'a) {
        self
    }
}

impl Point {
    /// The start of a range, owned.
    pub(crate) fn start(bound: &Bound<RingPosition>) -> Point {
        match bound {
            Bound::Unbounded => Point::Min,
            Bound::Included(RingPosition::Token(t)) => Point::Token(*t, 0),
            Bound::Excluded(RingPosition::Token(t)) => Point::Token(*t, 2),
            Bound::Included(RingPosition::Key(k)) => Point::Key(k.clone(), BEFORE),
            Bound::Excluded(RingPosition::Key(k)) => Point::Key(k.clone(), AFTER),
        }
    }

    /// The end of a range, owned.
    pub(crate) fn end(bound: &Bound<RingPosition>) -> Point {
        match bound {
            Bound::Unbounded => Point::Max,
            Bound::Included(RingPosition::Token(t)) => Point::Token(*t, 2),
            Bound::Excluded(RingPosition::Token(t)) => Point::Token(*t, 0),
            Bound::Included(RingPosition::Key(k)) => Point::Key(k.clone(), AFTER),
            Bound::Excluded(RingPosition::Key(k)) => Point::Key(k.clone(), BEFORE),
        }
    }

    /// This point as a range start bound (every point a reader uses as a
    /// start is one: a range's start, or just after a key).
    fn to_start_bound(&self) -> Bound<RingPosition> {
        match self {
            Point::Min => Bound::Unbounded,
            Point::Token(t, 0) => Bound::Included(RingPosition::Token(*t)),
            Point::Token(t, _) => Bound::Excluded(RingPosition::Token(*t)),
            Point::Key(k, w) if *w <= AT => Bound::Included(RingPosition::Key(k.clone())),
            Point::Key(k, _) => Bound::Excluded(RingPosition::Key(k.clone())),
            // Nothing follows the end of the ring: an empty start.
            Point::Max => Bound::Excluded(RingPosition::Token(Token::from_i64(i64::MAX))),
        }
    }

    /// This point as a range end bound.
    fn to_end_bound(&self) -> Bound<RingPosition> {
        match self {
            Point::Max => Bound::Unbounded,
            Point::Token(t, 2) => Bound::Included(RingPosition::Token(*t)),
            Point::Token(t, _) => Bound::Excluded(RingPosition::Token(*t)),
            Point::Key(k, w) if *w >= AT => Bound::Included(RingPosition::Key(k.clone())),
            Point::Key(k, _) => Bound::Excluded(RingPosition::Key(k.clone())),
            Point::Min => Bound::Excluded(RingPosition::Token(Token::from_i64(i64::MIN))),
        }
    }
}

/// The partition range from `start` to `end`, or `None` if it holds no key.
pub(crate) fn range_between(start: &Point, end: &Point) -> Option<PartitionRange> {
    if start >= end {
        return None;
    }
    PartitionRange::new(start.to_start_bound(), end.to_end_bound()).ok()
}

/// The key ranges the cache holds completely: closed intervals of points,
/// disjoint and sorted (start to end). Every partition of the underlying
/// source inside an interval has a cache entry, so a key in an interval
/// without an entry is absent.
#[derive(Debug, Default)]
pub(crate) struct Continuity {
    intervals: BTreeMap<Point, Point>,
}

/// The most intervals kept (heap memory the region does not see): past
/// it, the first interval is forgotten, which only loses knowledge.
/// Reads of many absent keys each add one.
pub(crate) const MAX_INTERVALS: usize = 1 << 16;

impl Continuity {
    /// Whether `[start, end]` lies inside one interval.
    pub(crate) fn covers(&self, start: Probe<'_>, end: Probe<'_>) -> bool {
        let Some((_, e)) = self
            .intervals
            .range::<dyn RingKey, _>((Bound::Unbounded, Bound::Included(start.as_dyn())))
            .next_back()
        else {
            return false;
        };
        Probe::of(e).as_dyn() >= end.as_dyn()
    }

    /// Whether the key is inside an interval.
    pub(crate) fn contains_key(&self, key: &DecoratedKey) -> bool {
        self.covers(Probe::key(key, AT), Probe::key(key, AT))
    }

    /// Marks `[start, end]` continuous, merging with the intervals it meets.
    pub(crate) fn insert(&mut self, start: Point, end: Point) {
        if start > end {
            return;
        }
        let (mut start, mut end) = (start, end);
        // The interval starting at or before `start`, if it reaches it.
        if let Some((s, e)) = self
            .intervals
            .range::<dyn RingKey, _>((
                Bound::Unbounded,
                Bound::Included(Probe::of(&start).as_dyn()),
            ))
            .next_back()
            && *e >= start
        {
            let s = s.clone();
            let e = self.intervals.remove(&s).expect("just found");
            start = s;
            if e > end {
                end = e;
            }
        }
        // Intervals starting inside `[start, end]`.
        loop {
            let next = self
                .intervals
                .range::<dyn RingKey, _>((
                    Bound::Included(Probe::of(&start).as_dyn()),
                    Bound::Included(Probe::of(&end).as_dyn()),
                ))
                .next()
                .map(|(s, _)| s.clone());
            let Some(s) = next else { break };
            let e = self.intervals.remove(&s).expect("just found");
            if e > end {
                end = e;
            }
        }
        self.intervals.insert(start, end);
        while self.intervals.len() > MAX_INTERVALS {
            self.intervals.pop_first();
        }
    }

    /// Makes the neighbourhood of `key` discontinuous: the interval holding
    /// it (if any) is split around it.
    pub(crate) fn remove_key(&mut self, key: &DecoratedKey) {
        self.remove_range(
            Point::Key(key.clone(), BEFORE),
            Point::Key(key.clone(), AFTER),
        );
    }

    /// Makes `[a, b]` discontinuous: intervals meeting it are cut back to
    /// what lies outside it.
    pub(crate) fn remove_range(&mut self, a: Point, b: Point) {
        if a > b {
            return;
        }
        let mut hit: Vec<(Point, Point)> = Vec::new();
        if let Some((s, e)) = self
            .intervals
            .range::<dyn RingKey, _>((Bound::Unbounded, Bound::Excluded(Probe::of(&a).as_dyn())))
            .next_back()
            && *e >= a
        {
            hit.push((s.clone(), e.clone()));
        }
        hit.extend(
            self.intervals
                .range::<dyn RingKey, _>((
                    Bound::Included(Probe::of(&a).as_dyn()),
                    Bound::Included(Probe::of(&b).as_dyn()),
                ))
                .map(|(s, e)| (s.clone(), e.clone())),
        );
        for (s, e) in hit {
            self.intervals.remove(&s);
            if s < a {
                self.intervals.insert(s, a.clone());
            }
            if b < e {
                self.intervals.insert(b.clone(), e);
            }
        }
    }

    /// How many intervals there are.
    pub(crate) fn len(&self) -> usize {
        self.intervals.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> DecoratedKey {
        DecoratedKey::from_bytes(s.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn points_order_like_ranges() {
        let a = k("a");
        let range = PartitionRange::single_key(a.clone());
        let s = Point::start(range.start());
        let e = Point::end(range.end());
        assert!(s < Point::Key(a.clone(), AT));
        assert!(Point::Key(a.clone(), AT) < e);
        assert!(Point::Token(a.token(), 0) < s);
        assert!(e < Point::Token(a.token(), 2));
        assert!(Point::Min < Point::Token(a.token(), 0));
        assert!(Point::Token(a.token(), 2) < Point::Max);
        let back = range_between(&s, &e).unwrap();
        assert_eq!(back, range);
        assert!(range_between(&e, &s).is_none());
        assert_eq!(
            range_between(&Point::Min, &Point::Max).unwrap(),
            PartitionRange::full()
        );
    }

    #[test]
    fn continuity_is_bounded() {
        let mut c = Continuity::default();
        for i in 0..MAX_INTERVALS + 10 {
            let key = k(&format!("k{i}"));
            c.insert(Point::Key(key.clone(), BEFORE), Point::Key(key, AFTER));
        }
        assert_eq!(c.len(), MAX_INTERVALS);
    }

    #[test]
    fn continuity_merges_and_splits() {
        let mut keys: Vec<_> = ["a", "b", "c", "d"].into_iter().map(k).collect();
        keys.sort();
        let mut c = Continuity::default();
        assert!(!c.contains_key(&keys[0]));
        c.insert(Point::Min, Point::Key(keys[1].clone(), AFTER));
        c.insert(
            Point::Key(keys[1].clone(), AFTER),
            Point::Key(keys[2].clone(), AFTER),
        );
        assert_eq!(c.len(), 1);
        for key in &keys[..3] {
            assert!(c.contains_key(key));
        }
        assert!(!c.contains_key(&keys[3]));
        c.remove_key(&keys[1]);
        assert_eq!(c.len(), 2);
        assert!(!c.contains_key(&keys[1]));
        assert!(c.contains_key(&keys[0]) && c.contains_key(&keys[2]));
        c.insert(Point::Min, Point::Max);
        assert_eq!(c.len(), 1);
        assert!(c.covers(Probe::of(&Point::Min), Probe::of(&Point::Max)));
        c.remove_range(Point::Key(keys[2].clone(), BEFORE), Point::Max);
        assert!(c.contains_key(&keys[1]));
        assert!(!c.contains_key(&keys[2]) && !c.contains_key(&keys[3]));
    }
}
