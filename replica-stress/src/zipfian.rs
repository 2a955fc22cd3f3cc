//! YCSB's key choosers: [`Zipfian`], Gray et al.'s generator of a zipfian
//! rank ("Quickly Generating Billion-Record Synthetic Databases", SIGMOD
//! 1994, as YCSB's `ZipfianGenerator` implements it), and
//! [`ScrambledZipfian`], YCSB's `requestdistribution=zipfian`: a rank over
//! ten billion items, hashed (FNV-1a, 64 bits) onto the key space, so the
//! popular keys are spread over it instead of being its first ones.

use rand::Rng;

/// YCSB's default skew (`ZipfianGenerator.ZIPFIAN_CONSTANT`).
pub const YCSB_THETA: f64 = 0.99;

/// The items [`ScrambledZipfian`] draws a rank from before hashing
/// (YCSB's `ScrambledZipfianGenerator.ITEM_COUNT`).
const SCRAMBLED_ITEMS: u64 = 10_000_000_000;

/// `zeta(SCRAMBLED_ITEMS, 0.99)`, as YCSB precomputes it
/// (`ScrambledZipfianGenerator.ZETAN`): summing ten billion terms at
/// every start would take minutes.
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// `sum(1 / i^theta)` for `i` in `1..=n`.
pub fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

/// Zipfian ranks in `0..items`: rank `r` is drawn with probability
/// proportional to `1 / (r + 1)^theta`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// Ranks in `0..items` (at least 2) with skew `theta` in `(0, 1)`;
    /// computes `zeta(items, theta)`, which takes time linear in `items`.
    ///
    /// # Panics
    /// If `items < 2` or `theta` is outside `(0, 1)`: the caller's
    /// configuration, checked before.
    pub fn new(items: u64, theta: f64) -> Self {
        Self::with_zetan(items, theta, zeta(items, theta))
    }

    fn with_zetan(items: u64, theta: f64, zetan: f64) -> Self {
        assert!(
            items >= 2,
            "a zipfian needs at least two items, not {items}"
        );
        assert!(
            theta > 0.0 && theta < 1.0,
            "zipfian theta {theta} outside (0, 1)"
        );
        let zeta2 = zeta(2, theta);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
        }
    }

    /// The next rank.
    pub fn next(&self, rng: &mut impl Rng) -> u64 {
        let u: f64 = rng.r#gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items - 1)
    }
}

/// YCSB's 64-bit FNV-1a of `value`'s eight bytes, least significant first,
/// made non-negative as Java's `Math.abs` of a `long` does.
pub fn fnv_hash64(mut value: u64) -> u64 {
    let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
    for _ in 0..8 {
        hash ^= value & 0xff;
        hash = hash.wrapping_mul(1_099_511_628_211);
        value >>= 8;
    }
    (hash as i64).wrapping_abs() as u64
}

/// YCSB's `zipfian` request distribution over keys `0..keys`: a zipfian
/// rank (theta 0.99) over ten billion items, hashed onto the keys.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScrambledZipfian {
    keys: u64,
    ranks: Zipfian,
}

impl ScrambledZipfian {
    /// Keys in `0..keys` (at least 1).
    ///
    /// # Panics
    /// If `keys` is 0.
    pub fn new(keys: u64) -> Self {
        assert!(keys > 0, "a key chooser needs at least one key");
        ScrambledZipfian {
            keys,
            ranks: Zipfian::with_zetan(SCRAMBLED_ITEMS, YCSB_THETA, SCRAMBLED_ZETAN),
        }
    }

    /// The next key.
    pub fn next(&self, rng: &mut impl Rng) -> u64 {
        fnv_hash64(self.ranks.next(rng)) % self.keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    #[test]
    fn zeta_of_small_sets_is_the_hand_sum() {
        assert!((zeta(1, 0.99) - 1.0).abs() < 1e-12);
        let two = 1.0 + 1.0 / 2f64.powf(0.5);
        assert!((zeta(2, 0.5) - two).abs() < 1e-12);
    }

    #[test]
    fn ranks_follow_the_zipfian_law() {
        let z = Zipfian::new(100, YCSB_THETA);
        let mut rng = SmallRng::seed_from_u64(7);
        let mut counts = [0u32; 100];
        let draws = 400_000;
        for _ in 0..draws {
            counts[z.next(&mut rng) as usize] += 1;
        }
        // Rank 0 has probability 1 / zeta(100), rank 1 1 / (2^0.99 zeta(100)).
        let z100 = zeta(100, YCSB_THETA);
        for (rank, count) in counts.iter().enumerate().take(2) {
            let expected = draws as f64 / ((rank + 1) as f64).powf(YCSB_THETA) / z100;
            let got = f64::from(*count);
            assert!(
                (got - expected).abs() < expected * 0.03,
                "rank {rank}: {got} draws, expected about {expected}"
            );
        }
        // The law's shape: rank 0 beats rank 9 by about 10^0.99.
        let ratio = f64::from(counts[0]) / f64::from(counts[9]);
        assert!((7.0..13.0).contains(&ratio), "rank 0 / rank 9 = {ratio}");
    }

    #[test]
    fn the_precomputed_zetan_is_ycsbs() {
        // YCSB computed ZETAN as zeta(10^10, 0.99): the first million terms
        // summed here, plus the tail from 10^6 to 10^10, which the integral
        // of x^-0.99 gives to well within 10^-3 (the terms are that flat).
        let (a, b) = (1e6f64, 1e10f64);
        let tail = (b.powf(1.0 - YCSB_THETA) - a.powf(1.0 - YCSB_THETA)) / (1.0 - YCSB_THETA);
        let whole = zeta(1_000_000, YCSB_THETA) + tail;
        assert!(
            (whole - SCRAMBLED_ZETAN).abs() < 1e-3,
            "zeta(10^10) about {whole}, YCSB's {SCRAMBLED_ZETAN}"
        );
    }

    #[test]
    fn fnv_hash_matches_ycsbs() {
        // FNV-1a 64 of eight zero bytes: the offset basis, xor 0, times the
        // prime, eight times.
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        for _ in 0..8 {
            h = h.wrapping_mul(1_099_511_628_211);
        }
        assert_eq!(fnv_hash64(0), (h as i64).wrapping_abs() as u64);
        assert!(fnv_hash64(u64::MAX) <= i64::MAX as u64);
    }

    #[test]
    fn scrambled_keys_stay_in_range_and_are_skewed() {
        let keys = 1000;
        let z = ScrambledZipfian::new(keys);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut counts = vec![0u32; keys as usize];
        for _ in 0..100_000 {
            let k = z.next(&mut rng);
            assert!(k < keys);
            counts[k as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        // The hottest key (rank 0's) takes about 1/26.5 of the draws,
        // far above a uniform key's 1/1000.
        assert!(counts[0] > 2_500, "hottest key drawn {} times", counts[0]);
        assert!(counts[0] < 6_000, "hottest key drawn {} times", counts[0]);
    }
}
