//! Closed segments bucketed by free space, so a sparsest one is found in O(1).
//!
//! Bucket `b` holds segments with `free >> shift == b`, where `shift` makes
//! 64 buckets per segment size. Any segment of the highest non-empty bucket
//! is within 1/64 of a segment of the sparsest: the same "one of the
//! largest" contract as ScyllaDB's `log_heap`.

/// Buckets per segment size.
const BUCKETS: usize = 64;

/// Where a segment sits in the histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) bucket: u16,
    pub(crate) position: u32,
}

#[derive(Debug)]
pub(crate) struct Histogram {
    shift: u32,
    buckets: Vec<Vec<u32>>,
    /// No bucket above `top` is non-empty.
    top: usize,
    len: usize,
}

impl Histogram {
    pub(crate) fn new(segment_shift: u32) -> Histogram {
        Histogram {
            shift: segment_shift - BUCKETS.trailing_zeros(),
            buckets: vec![Vec::new(); BUCKETS + 1],
            top: 0,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Adds `segment` with `free` bytes free.
    pub(crate) fn insert(&mut self, segment: u32, free: usize) -> Slot {
        let bucket = (free >> self.shift).min(BUCKETS);
        self.buckets[bucket].push(segment);
        self.top = self.top.max(bucket);
        self.len += 1;
        Slot {
            bucket: bucket as u16,
            position: (self.buckets[bucket].len() - 1) as u32,
        }
    }

    /// Whether a segment with `free` bytes belongs in the bucket of `slot`.
    #[inline]
    pub(crate) fn same_bucket(&self, slot: Slot, free: usize) -> bool {
        usize::from(slot.bucket) == (free >> self.shift).min(BUCKETS)
    }

    /// The `used` bytes a segment at `slot` must keep above to stay in its
    /// bucket: freeing only adds free space, so a segment freed down to
    /// `used > used_floor(slot)` stays where it is. `u32::MAX` for the top
    /// bucket (only an empty segment belongs there).
    pub(crate) fn used_floor(&self, slot: Slot) -> u32 {
        let bucket = usize::from(slot.bucket);
        if bucket >= BUCKETS {
            return u32::MAX;
        }
        // Bucket `b < BUCKETS` holds free space below `(b + 1) << shift`,
        // and a segment is `BUCKETS << shift` bytes, so it stays while
        // `used > (BUCKETS - 1 - b) << shift`; that fits in a u32 because
        // segment offsets do.
        ((BUCKETS - 1 - bucket) << self.shift) as u32
    }

    /// Removes the segment at `slot`. Returns the segment that took its
    /// position (whose slot the caller must update), if any.
    pub(crate) fn remove(&mut self, slot: Slot) -> Option<u32> {
        let bucket = &mut self.buckets[usize::from(slot.bucket)];
        bucket.swap_remove(slot.position as usize);
        self.len -= 1;
        bucket.get(slot.position as usize).copied()
    }

    /// One of the sparsest segments.
    pub(crate) fn sparsest(&mut self) -> Option<u32> {
        while self.top > 0 && self.buckets[self.top].is_empty() {
            self.top -= 1;
        }
        self.buckets[self.top].last().copied()
    }

    /// All segments, in no particular order.
    pub(crate) fn segments(&self) -> impl Iterator<Item = u32> + '_ {
        self.buckets.iter().flatten().copied()
    }

    /// Whether `segment` is at `slot` and `slot` matches `free`.
    pub(crate) fn holds(&self, segment: u32, slot: Slot, free: usize) -> bool {
        usize::from(slot.bucket) == (free >> self.shift).min(BUCKETS)
            && self.buckets[usize::from(slot.bucket)].get(slot.position as usize) == Some(&segment)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn sparsest_is_from_the_top_bucket() {
        let mut h = Histogram::new(17);
        let a = h.insert(1, 100);
        let b = h.insert(2, 60_000);
        let c = h.insert(3, 60_100);
        assert_eq!(h.sparsest(), Some(3));
        assert_eq!(h.remove(b), Some(3), "3 moved into 2's place");
        let c = Slot {
            position: b.position,
            ..c
        };
        assert!(h.holds(3, c, 60_100));
        assert_eq!(h.remove(c), None);
        assert_eq!(h.sparsest(), Some(1));
        assert_eq!(h.remove(a), None);
        assert_eq!(h.sparsest(), None);
        assert_eq!(h.len(), 0);
    }
}
