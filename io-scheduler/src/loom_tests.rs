//! Loom model of the blocking queue: two submitters and the completions
//! that let them go, with one request in flight at a time.

use std::time::Duration;

use device::{Clock, ManualClock};

use crate::sync::PlainArc;
use crate::{Capacity, IoQueue, Kind, QueueConfig};

#[test]
fn loom_two_submitters_and_a_completion() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| {
        let clock: PlainArc<dyn Clock> = PlainArc::new(ManualClock::new());
        // 1 byte/s, bound 1 s: every 1-byte request costs 1 s + 1 ns, so
        // one is in flight at a time; no rate limit (loom has no time).
        let config = QueueConfig {
            capacity: Capacity {
                read_bytes_per_sec: 1,
                write_bytes_per_sec: 1,
                read_ops_per_sec: 1_000_000_000,
                write_ops_per_sec: 1_000_000_000,
            },
            dispatch_bound: Duration::from_secs(1),
            rate_limited: false,
        };
        let q = ::sync::Arc::new(IoQueue::new("d", config, clock).unwrap());
        let a = q.add_class("a", 1).unwrap();
        let b = q.add_class("b", 1).unwrap();
        let in_io = ::sync::Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = [a, b]
            .into_iter()
            .map(|class| {
                let q = ::sync::Arc::clone(&q);
                let in_io = ::sync::Arc::clone(&in_io);
                loom::thread::spawn(move || {
                    let permit = q.submit(class, Kind::Write, 1).unwrap();
                    let was = in_io.fetch_add(1, loom::sync::atomic::Ordering::SeqCst);
                    assert_eq!(was, 0, "two requests in flight past the bound");
                    in_io.fetch_sub(1, loom::sync::atomic::Ordering::SeqCst);
                    drop(permit);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let stats = q.stats();
        assert_eq!(stats.in_flight, 0);
        assert_eq!(stats.classes.iter().map(|c| c.ops).sum::<u64>(), 2);
    });
}
