//! The LRU bound of a cache's hit ratio: [`LruSimulator`] replays a trace of
//! the keys a read run read through a least-recently-used cache holding
//! `capacity` keys, and counts what it would have hit. A measured cache
//! within a few points of it loses little to its admission, refusals,
//! invalidations or eviction granularity; one far below it loses there.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// No key: the end of the recency list.
const NIL: u32 = u32::MAX;

/// A least-recently-used cache of up to `capacity` keys from `0..universe`,
/// keeping only which keys it holds and their recency: a doubly linked list
/// in two arrays indexed by key, O(1) per access.
#[derive(Debug, Clone)]
pub struct LruSimulator {
    capacity: usize,
    len: usize,
    /// Towards the most recently used key, per key.
    newer: Vec<u32>,
    /// Towards the least recently used key, per key.
    older: Vec<u32>,
    held: Vec<bool>,
    most_recent: u32,
    least_recent: u32,
    hits: u64,
    accesses: u64,
}

impl LruSimulator {
    /// An empty cache of `capacity` keys of `0..universe`.
    ///
    /// # Panics
    /// If `universe` does not fit in a `u32` less one (the list's end
    /// marker): the caller's key space, checked before.
    pub fn new(capacity: usize, universe: u64) -> Self {
        assert!(
            universe < u64::from(NIL),
            "LRU simulation of {universe} keys: at most {} keys",
            NIL - 1
        );
        let n = universe as usize;
        LruSimulator {
            capacity,
            len: 0,
            newer: vec![NIL; n],
            older: vec![NIL; n],
            held: vec![false; n],
            most_recent: NIL,
            least_recent: NIL,
            hits: 0,
            accesses: 0,
        }
    }

    fn unlink(&mut self, k: u32) {
        let (newer, older) = (self.newer[k as usize], self.older[k as usize]);
        if newer == NIL {
            self.most_recent = older;
        } else {
            self.older[newer as usize] = older;
        }
        if older == NIL {
            self.least_recent = newer;
        } else {
            self.newer[older as usize] = newer;
        }
    }

    fn push_most_recent(&mut self, k: u32) {
        self.newer[k as usize] = NIL;
        self.older[k as usize] = self.most_recent;
        if self.most_recent == NIL {
            self.least_recent = k;
        } else {
            self.newer[self.most_recent as usize] = k;
        }
        self.most_recent = k;
    }

    /// Reads `key`: `true` if the cache held it (a hit). A miss inserts it,
    /// evicting the least recently used key when the cache is full; a hit
    /// makes it the most recently used.
    ///
    /// # Panics
    /// If `key` is outside the universe given to [`new`](Self::new).
    pub fn access(&mut self, key: u64) -> bool {
        assert!(
            key < self.held.len() as u64,
            "key {key} outside the simulated universe of {} keys",
            self.held.len()
        );
        let k = key as u32;
        self.accesses += 1;
        if self.held[k as usize] {
            self.hits += 1;
            self.unlink(k);
            self.push_most_recent(k);
            return true;
        }
        if self.capacity == 0 {
            return false;
        }
        if self.len == self.capacity {
            let victim = self.least_recent;
            self.unlink(victim);
            self.held[victim as usize] = false;
            self.len -= 1;
        }
        self.held[k as usize] = true;
        self.len += 1;
        self.push_most_recent(k);
        false
    }

    /// Hits so far.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Accesses so far.
    pub fn accesses(&self) -> u64 {
        self.accesses
    }

    /// `hits / accesses`, or 0 before the first access.
    pub fn hit_ratio(&self) -> f64 {
        if self.accesses == 0 {
            0.0
        } else {
            self.hits as f64 / self.accesses as f64
        }
    }

    /// Keys held now.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the cache holds no key.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Several threads' traces (each thread's keys in the order it read
/// them) as one sequence: each thread's `i`-th key of `n` placed at the
/// fraction `i / n` of the run, as if every thread read at a steady rate;
/// ties go to the lower thread. For keys drawn independently (uniform or
/// zipfian), the exact interleaving does not change what an LRU hits.
pub fn interleave_traces(traces: &[Vec<u32>]) -> Vec<u32> {
    let total: u128 = traces.iter().map(|t| t.len() as u128).sum();
    let mut heap = BinaryHeap::new();
    for (t, trace) in traces.iter().enumerate() {
        if !trace.is_empty() {
            heap.push(Reverse((0u128, t, 0usize)));
        }
    }
    let mut out = Vec::with_capacity(total as usize);
    while let Some(Reverse((_, t, i))) = heap.pop() {
        out.push(traces[t][i]);
        let next = i + 1;
        if next < traces[t].len() {
            let at = next as u128 * total / traces[t].len() as u128;
            heap.push(Reverse((at, t, next)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_computed_trace() {
        // Capacity 3. Trace and state (most recent first) after each access:
        //  1 miss [1]; 2 miss [2 1]; 3 miss [3 2 1]; 1 hit [1 3 2];
        //  4 miss, evicts 2 [4 1 3]; 2 miss, evicts 3 [2 4 1];
        //  1 hit [1 2 4]; 3 miss, evicts 4 [3 1 2]; 4 miss, evicts 2 [4 3 1];
        //  1 hit [1 4 3]; 3 hit [3 1 4]; 2 miss, evicts 4 [2 3 1].
        let trace = [1, 2, 3, 1, 4, 2, 1, 3, 4, 1, 3, 2];
        let expected = [
            false, false, false, true, false, false, true, false, false, true, true, false,
        ];
        let mut lru = LruSimulator::new(3, 5);
        let got: Vec<bool> = trace.iter().map(|&k| lru.access(k)).collect();
        assert_eq!(got, expected);
        assert_eq!((lru.hits(), lru.accesses(), lru.len()), (4, 12, 3));
        assert!((lru.hit_ratio() - 4.0 / 12.0).abs() < 1e-12);
        // The final state: 2, 3, 1 held; 4 evicted.
        assert!(lru.access(1) && lru.access(3) && lru.access(2));
        assert!(!lru.access(4));
    }

    #[test]
    fn traces_interleave_by_their_fraction_of_the_run() {
        // Thread 0 read 4 keys, thread 1 two: thread 1's keys fall at the
        // start and the middle of the run.
        let traces = vec![vec![10, 11, 12, 13], vec![20, 21]];
        assert_eq!(interleave_traces(&traces), [10, 20, 11, 12, 21, 13]);
        assert_eq!(interleave_traces(&[vec![], vec![1, 2]]), [1, 2]);
        assert!(interleave_traces(&[]).is_empty());
    }

    #[test]
    fn capacity_one_and_zero() {
        let mut one = LruSimulator::new(1, 3);
        assert_eq!(
            [0, 0, 1, 1, 0].map(|k| one.access(k)),
            [false, true, false, true, false]
        );
        let mut none = LruSimulator::new(0, 3);
        assert!(!none.access(1) && !none.access(1) && none.is_empty());
        assert_eq!(none.hit_ratio(), 0.0);
    }

    #[test]
    fn a_cache_of_every_key_misses_only_first_reads() {
        let mut lru = LruSimulator::new(10, 10);
        for round in 0..3 {
            for k in 0..10 {
                assert_eq!(lru.access(k), round > 0);
            }
        }
        assert_eq!(lru.hits(), 20);
    }
}
