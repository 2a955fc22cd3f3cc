//! The token bucket's rules on random sequences of requests and idle
//! gaps, on the manual clock (each request reserves its bytes and the
//! clock moves to its grant, as a blocked caller's wait would):
//!
//! * never more than `max(burst, first request) + rate * t` bytes granted
//!   within any span `t` from a grant to a later one (a request above the
//!   burst is granted once the bucket would have held it);
//! * grants in request order;
//! * no needless wait: a request no larger than the burst, made after the
//!   bucket sat idle long enough to refill, is granted at once;
//! * no wait longer than the bytes outstanding at the rate.

use std::sync::Arc;
use std::time::Duration;

use device::{Clock, ManualClock, TokenBucket};
use proptest::prelude::*;

const NANOS: u128 = 1_000_000_000;

fn nanos_for(bytes: u64, rate: u64) -> u128 {
    (u128::from(bytes) * NANOS).div_ceil(u128::from(rate))
}

proptest! {
    #[test]
    fn grants_follow_the_bucket_rules(
        rate in 1_000u64..10_000_000,
        burst in 1u64..100_000,
        steps in prop::collection::vec((1u64..200_000, 0u64..50_000_000), 1..200),
    ) {
        let clock = Arc::new(ManualClock::new());
        let bucket = TokenBucket::with_clock(rate, burst, clock.clone()).unwrap();
        // (grant time in ns, bytes)
        let mut grants: Vec<(u128, u64)> = Vec::new();
        // When everything granted so far is paid for, by the rules.
        let mut paid_until: u128 = 0;
        for (bytes, gap_ns) in steps {
            clock.advance(Duration::from_nanos(gap_ns));
            let asked = clock.now().as_nanos();
            let predicted = bucket.ready_at(bytes);
            let (reserved_at, ready) = bucket.reserve(bytes);
            prop_assert_eq!(reserved_at.as_nanos(), asked);
            prop_assert_eq!(ready, predicted, "ready_at predicts the grant");
            let ready = ready.as_nanos();
            prop_assert!(ready >= asked);
            // Never longer than what is outstanding, this request included.
            let outstanding = paid_until.saturating_sub(asked) + nanos_for(bytes, rate);
            prop_assert!(ready - asked <= outstanding, "waits {} ns", ready - asked);
            // Idle long enough to refill: at once, if it fits the burst.
            if bytes <= burst && asked >= paid_until {
                prop_assert_eq!(ready, asked);
            }
            if ready > asked {
                clock.advance(Duration::from_nanos(u64::try_from(ready - asked).unwrap()));
            }
            if let Some(&(last, _)) = grants.last() {
                prop_assert!(ready >= last, "grants in order");
            }
            grants.push((ready, bytes));
            paid_until = paid_until.max(asked) + nanos_for(bytes, rate);
        }
        // Any span from a grant to a later one: at most burst + rate * t,
        // the first grant's bytes being part of the burst.
        for i in 0..grants.len() {
            let mut sum: u128 = 0;
            for &(at, bytes) in &grants[i..] {
                sum += u128::from(bytes);
                let t = at - grants[i].0;
                let allowed = u128::from(burst.max(grants[i].1)) + u128::from(rate) * t / NANOS;
                prop_assert!(sum <= allowed + 1, "{sum} bytes in {t} ns, allowed {allowed}");
            }
        }
        prop_assert_eq!(bucket.granted_bytes(), grants.iter().map(|g| g.1).sum::<u64>());
        prop_assert_eq!(bucket.total_wait(), Duration::ZERO);
    }
}
