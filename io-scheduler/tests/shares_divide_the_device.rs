//! The fair queue's promises, on a modelled device in simulated time
//! (tests/common): under backlog each class's device time is proportional
//! to its shares within 5% over 10 s; a high-share request waits at most
//! the dispatch bound; shares changed at run time take effect at the next
//! dispatch; a class of 1 share still progresses; and the rate keeps
//! dispatch to the device's capacity when the device would take more.

mod common;

use std::time::Duration;

use common::{Load, Sim};
use io_scheduler::{Capacity, FairQueue, Kind, QueueConfig};

const MIB: u64 = 1 << 20;
const SECOND: Duration = Duration::from_secs(1);

fn queue(rate_limited: bool) -> FairQueue {
    let mut config = QueueConfig::new(Capacity {
        read_bytes_per_sec: 256 * MIB,
        write_bytes_per_sec: 64 * MIB,
        read_ops_per_sec: 20_000,
        write_ops_per_sec: 10_000,
    });
    config.rate_limited = rate_limited;
    FairQueue::new(config).unwrap()
}

fn assert_within_5_percent(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= want * 0.05,
        "{what}: {got:.4} of the device time, {want:.4} wanted"
    );
}

#[test]
fn device_time_follows_shares_whatever_the_request_sizes() {
    for rate_limited in [false, true] {
        let mut q = queue(rate_limited);
        let log = q.add_class("commitlog", 100).unwrap();
        let flush = q.add_class("flush", 300).unwrap();
        let compaction = q.add_class("compaction", 600).unwrap();
        let read = q.add_class("read", 200).unwrap();
        let loads = [
            Load {
                class: log,
                kind: Kind::Write,
                bytes: 32 << 10,
                depth: 8,
            },
            Load {
                class: flush,
                kind: Kind::Write,
                bytes: MIB,
                depth: 2,
            },
            Load {
                class: compaction,
                kind: Kind::Write,
                bytes: 128 << 10,
                depth: 4,
            },
            Load {
                class: read,
                kind: Kind::Read,
                bytes: 4 << 10,
                depth: 16,
            },
        ];
        let mut sim = Sim::new(q, loads.len());
        sim.run(&loads, 10 * SECOND);
        let total: u64 = loads
            .iter()
            .map(|l| sim.device_time(l.class, Duration::ZERO, 10 * SECOND))
            .sum();
        for (l, shares) in loads.iter().zip([100.0, 300.0, 600.0, 200.0]) {
            let got = sim.device_time(l.class, Duration::ZERO, 10 * SECOND) as f64 / total as f64;
            assert_within_5_percent(
                &format!("rate {rate_limited}, class {:?}", l.class),
                got,
                shares / 1200.0,
            );
        }
        // The device was kept busy: 10 s of device time, less the bound.
        assert!(total as f64 >= 9.9e9, "{total} ns of device time in 10 s");
    }
}

#[test]
fn a_high_share_request_waits_at_most_the_dispatch_bound() {
    let mut q = queue(true);
    let bound = q.config().dispatch_bound;
    let bulk = q.add_class("compaction", 100).unwrap();
    let urgent = q.add_class("commitlog", 1000).unwrap();
    let loads = [Load {
        class: bulk,
        kind: Kind::Write,
        bytes: 96 << 10,
        depth: 64,
    }];
    let mut sim = Sim::new(q, 1);
    let mut waits = Vec::new();
    for i in 1..=200u32 {
        // Every 50 ms (off the bulk's rhythm), one 4 KiB log write.
        sim.run(
            &loads,
            Duration::from_micros(50_000 * u64::from(i) + 777 * u64::from(i % 7)),
        );
        let ticket = sim.submit_once(urgent, Kind::Write, 4 << 10);
        let at = sim.now;
        let until = at + 4 * bound;
        sim.run(&loads, until);
        let (t, d) = sim
            .dispatched
            .iter()
            .find(|(_, d)| d.ticket == ticket)
            .copied()
            .expect("dispatched within 4 bounds");
        assert_eq!(t - at, d.queued);
        waits.push(d.queued);
    }
    let longest = waits.iter().max().unwrap();
    assert!(
        *longest <= bound,
        "a commit-log write waited {longest:?}, bound {bound:?}"
    );
    // The bulk class had the device meanwhile.
    let bulk_time = sim.device_time(bulk, Duration::ZERO, sim.now) as f64 / 1e9;
    assert!(
        bulk_time > 0.95 * sim.now.as_secs_f64(),
        "{bulk_time} s of {:?}",
        sim.now
    );
}

#[test]
fn shares_changed_at_run_time_act_from_the_next_dispatch() {
    let mut q = queue(true);
    let a = q.add_class("a", 100).unwrap();
    let b = q.add_class("b", 100).unwrap();
    let loads = [
        Load {
            class: a,
            kind: Kind::Write,
            bytes: 64 << 10,
            depth: 4,
        },
        Load {
            class: b,
            kind: Kind::Write,
            bytes: 64 << 10,
            depth: 4,
        },
    ];
    let mut sim = Sim::new(q, 2);
    sim.run(&loads, 5 * SECOND);
    let half = |sim: &Sim, from, to| {
        let ta = sim.device_time(a, from, to) as f64;
        let tb = sim.device_time(b, from, to) as f64;
        tb / (ta + tb)
    };
    assert_within_5_percent("equal shares", half(&sim, Duration::ZERO, 5 * SECOND), 0.5);
    let changed_at = sim.now;
    let before = sim.dispatched.len();
    sim.queue.set_shares(b, 900).unwrap();
    sim.run(&loads, 10 * SECOND);
    // From the first dispatch after the change: b's turn comes at once
    // again and again (a waits while b catches up to a's accumulated).
    let next: Vec<_> = sim.dispatched[before..before + 8]
        .iter()
        .map(|(_, d)| d.class)
        .collect();
    assert!(next.iter().filter(|&&c| c == b).count() >= 7, "{next:?}");
    assert_within_5_percent("after 100 -> 900", half(&sim, changed_at, 10 * SECOND), 0.9);
}

#[test]
fn a_class_of_one_share_still_progresses() {
    let mut q = queue(true);
    let big = q.add_class("big", 1000).unwrap();
    let tiny = q.add_class("tiny", 0).unwrap();
    assert_eq!(q.shares(tiny).unwrap(), 1, "0 shares are 1");
    let loads = [
        Load {
            class: big,
            kind: Kind::Write,
            bytes: 64 << 10,
            depth: 4,
        },
        Load {
            class: tiny,
            kind: Kind::Write,
            bytes: 64 << 10,
            depth: 4,
        },
    ];
    let mut sim = Sim::new(q, 2);
    sim.run(&loads, 10 * SECOND);
    let tiny_ops = sim
        .dispatched
        .iter()
        .filter(|(_, d)| d.class == tiny)
        .count();
    let big_ops = sim
        .dispatched
        .iter()
        .filter(|(_, d)| d.class == big)
        .count();
    assert!(tiny_ops >= big_ops / 1001, "tiny {tiny_ops}, big {big_ops}");
    assert!(tiny_ops > 0);
    // And it is never more than a thousand of big's requests behind.
    let mut since = 0;
    for (_, d) in &sim.dispatched {
        if d.class == tiny {
            since = 0;
        } else {
            since += 1;
            assert!(since <= 1001, "tiny waited {since} dispatches");
        }
    }
}

#[test]
fn the_rate_keeps_dispatch_to_the_capacity_when_completions_are_instant() {
    // Completions at once (buffered writes into the page cache): only the
    // rate holds dispatch to the device's capacity.
    let mut q = queue(true);
    let c = q.add_class("flush", 100).unwrap();
    let mut now = Duration::ZERO;
    let mut out = Vec::new();
    let mut cost = 0u64;
    while now < 10 * SECOND {
        while q.queued() < 4 {
            q.enqueue(c, Kind::Write, MIB, now).unwrap();
        }
        out.clear();
        q.dispatch(now, &mut out);
        for d in &out {
            cost += d.cost;
            q.complete(d.cost);
        }
        now = q.ready_at(now).unwrap_or(now + Duration::from_micros(100));
    }
    // 10 s of device time, plus at most the bucket's depth.
    let bound = q.config().dispatch_bound.as_nanos() as u64;
    let one = Capacity::bandwidth(64 * MIB).cost_nanos(Kind::Write, MIB);
    assert!(
        cost <= 10_000_000_000 + bound + one,
        "{cost} ns dispatched in 10 s"
    );
    assert!(
        cost >= 10_000_000_000 - bound - one,
        "{cost} ns dispatched in 10 s"
    );
}

#[test]
fn bad_settings_are_refused() {
    let mut config = QueueConfig::new(Capacity::bandwidth(MIB));
    config.dispatch_bound = Duration::ZERO;
    assert_eq!(
        FairQueue::new(config).unwrap_err().to_string(),
        "the dispatch bound must be above zero"
    );
    let mut q = queue(true);
    q.add_class("a", 1).unwrap();
    assert_eq!(
        q.add_class("a", 2).unwrap_err().to_string(),
        "I/O class \"a\" exists on this queue already"
    );
    for i in 1..io_scheduler::MAX_CLASSES {
        q.add_class(&format!("c{i}"), 1).unwrap();
    }
    assert!(matches!(
        q.add_class("one more", 1),
        Err(io_scheduler::Error::TooManyClasses { limit: 64 })
    ));
    // A class of another queue, beyond this one's classes.
    let mut big = queue(true);
    let foreign = (0..3)
        .map(|i| big.add_class(&format!("b{i}"), 1).unwrap())
        .last()
        .unwrap();
    let mut small = queue(true);
    small.add_class("only", 1).unwrap();
    assert_eq!(
        small
            .enqueue(foreign, Kind::Read, 1, Duration::ZERO)
            .unwrap_err()
            .to_string(),
        "I/O class #2 does not belong to this queue"
    );
    assert!(small.set_shares(foreign, 5).is_err());
}

#[test]
fn an_idle_class_banks_no_credit() {
    let mut q = queue(true);
    let a = q.add_class("a", 100).unwrap();
    let b = q.add_class("b", 100).unwrap();
    let only_a = [Load {
        class: a,
        kind: Kind::Write,
        bytes: 64 << 10,
        depth: 4,
    }];
    let both = [
        Load {
            class: a,
            kind: Kind::Write,
            bytes: 64 << 10,
            depth: 4,
        },
        Load {
            class: b,
            kind: Kind::Write,
            bytes: 64 << 10,
            depth: 4,
        },
    ];
    let mut sim = Sim::new(q, 2);
    // a alone for 5 s, then both: b rejoins at the queue's virtual time,
    // not with 5 s of credit that would shut a out for 5 s.
    sim.run(&only_a, 5 * SECOND);
    let from = sim.now;
    sim.run(&both, from + SECOND);
    let ta = sim.device_time(a, from, from + SECOND) as f64;
    let tb = sim.device_time(b, from, from + SECOND) as f64;
    assert_within_5_percent("b after idling", tb / (ta + tb), 0.5);
}
