//! A region's memory pinned with `RegionGroup::pin_on_leave` stays in real
//! usage when the region leaves (in the same step: no moment at which the
//! limits saw it gone), counts against the real hard limit only, and goes
//! as the pin releases it: a writer waits while it pushes real usage over
//! the limit and is let in by the release that brings usage back within
//! it, not before; dropping the pin releases the rest.
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::id;
use logalloc::RegionListener;
use region_group::{Error, ReclaimConfig, RegionGroup};

fn group() -> Arc<RegionGroup> {
    RegionGroup::new(
        "pins",
        ReclaimConfig {
            unspooled_hard_limit: 100,
            unspooled_soft_limit: 50,
            real_hard_limit: 100,
            ..Default::default()
        },
    )
}

#[test]
fn a_leaving_region_stays_counted_against_the_real_limit_only() {
    let g = group();
    g.add(id(1), 40);
    g.add(id(2), 70);
    g.account_region_spooled(id(2), 70).unwrap();
    let mut pin = g.pin_on_leave(id(2)).unwrap();
    assert_eq!(pin.bytes(), 0, "nothing held before the region leaves");
    g.del(id(2), 70);
    let m = g.metrics();
    assert_eq!((m.real_usage, m.unspooled_usage, m.spooled), (110, 40, 0));
    assert_eq!(m.peak_real_usage, 110, "the handover counted nothing twice");
    assert_eq!((g.region_count(), pin.bytes()), (1, 70));
    assert!(!g.is_reclaiming(), "the soft limit does not see pins");
    assert!(!g.execution_permitted());
    assert_eq!(
        g.run_when_memory_available(|| (), Some(Duration::ZERO)),
        Err(Error::Timeout {
            group: "pins".into()
        })
    );
    assert_eq!(pin.release(10), 10);
    assert_eq!((g.real_usage(), pin.bytes()), (100, 60));
    assert!(g.execution_permitted(), "equal to the limit is within it");
    // Releasing more than is held releases what is held.
    assert_eq!(pin.release(1000), 60);
    assert_eq!(pin.release(1), 0);
    assert_eq!(g.real_usage(), 40);
    drop(pin);
    assert_eq!(g.real_usage(), 40);
}

#[test]
fn a_pin_dropped_before_its_region_leaves_changes_nothing() {
    let g = group();
    g.add(id(1), 40);
    drop(g.pin_on_leave(id(1)).unwrap());
    g.del(id(1), 40);
    assert_eq!(g.real_usage(), 0);
    assert_eq!(
        g.pin_on_leave(id(1)).unwrap_err(),
        Error::UnknownRegion {
            group: "pins".into(),
            region: id(1)
        }
    );
}

#[test]
fn a_blocked_writer_is_let_in_by_the_release_that_makes_room() {
    let g = group();
    g.add(id(1), 90);
    g.add(id(2), 20);
    let mut pin = g.pin_on_leave(id(2)).unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let writer = {
        let (g, ran) = (Arc::clone(&g), Arc::clone(&ran));
        std::thread::spawn(move || {
            g.run_when_memory_available(|| ran.store(true, Ordering::SeqCst), None)
        })
    };
    while g.queued_requests() == 0 {
        std::thread::yield_now();
    }
    // The region leaves: still 110.
    g.del(id(2), 20);
    assert_eq!(g.queued_requests(), 1);
    // 101: still over the limit, the writer stays queued.
    assert_eq!(pin.release(9), 9);
    assert_eq!(g.queued_requests(), 1);
    assert!(!ran.load(Ordering::SeqCst));
    // 100: within it.
    assert_eq!(pin.release(1), 1);
    writer.join().unwrap().unwrap();
    assert!(ran.load(Ordering::SeqCst));
    // The rest goes with the pin.
    drop(pin);
    assert_eq!(g.real_usage(), 90);
    assert_eq!(g.metrics().blocked_requests_total, 1);
}

#[test]
fn dropping_the_pin_lets_every_waiter_in() {
    let g = group();
    g.add(id(1), 50);
    g.add(id(2), 60);
    let pin = g.pin_on_leave(id(2)).unwrap();
    g.del(id(2), 60);
    let writers: Vec<_> = (0..4)
        .map(|i| {
            let g = Arc::clone(&g);
            std::thread::spawn(move || g.run_when_memory_available(move || i, None))
        })
        .collect();
    while g.queued_requests() < 4 {
        std::thread::yield_now();
    }
    drop(pin);
    let mut done: Vec<i32> = writers
        .into_iter()
        .map(|w| w.join().unwrap().unwrap())
        .collect();
    done.sort_unstable();
    assert_eq!(done, [0, 1, 2, 3]);
    assert_eq!(g.real_usage(), 50);
}
