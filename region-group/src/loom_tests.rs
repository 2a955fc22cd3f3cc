//! Loom models of the group's admission and soft-limit code, run on the real
//! implementation through the [`sync`](crate::sync) facade.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p replmem-region-group --release -- loom_`.

use loom::sync::Mutex;
use loom::thread;

use crate::sync::{Arc, PlainArc};
use crate::{Error, ReclaimConfig, RegionGroup, RegionId, RegionListener};

const REGION: RegionId = RegionId::from_raw(1);

/// Checks `f` under every interleaving within the preemption bound
/// (`LOOM_MAX_PREEMPTIONS`, default 2).
fn model(f: impl Fn() + Send + Sync + 'static) {
    model_with_min_bound(0, f);
}

/// As [`model`], with a preemption bound of at least `min_bound`: for tiny
/// models whose interesting interleaving needs more preemptions than the
/// default allows.
fn model_with_min_bound(min_bound: usize, f: impl Fn() + Send + Sync + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.unwrap_or(2).max(min_bound));
    builder.check(f);
}

/// A group with a soft limit of 10 whose callbacks log `true` (start) and
/// `false` (stop), and the log.
fn logging_group() -> (PlainArc<RegionGroup>, Arc<Mutex<Vec<bool>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (start, stop) = (log.clone(), log.clone());
    let group = RegionGroup::new(
        "loom",
        ReclaimConfig {
            unspooled_soft_limit: 10,
            start_reclaiming: Some(PlainArc::new(move || start.lock().unwrap().push(true))),
            stop_reclaiming: Some(PlainArc::new(move || stop.lock().unwrap().push(false))),
            ..Default::default()
        },
    );
    (group, log)
}

/// The callback log alternates start/stop starting with start, and ends in
/// the state the group is in.
fn assert_balanced(group: &RegionGroup, log: &[bool]) {
    for (i, &started) in log.iter().enumerate() {
        assert_eq!(
            started,
            i % 2 == 0,
            "calls alternate, starting with start: {log:?}"
        );
    }
    assert_eq!(
        log.len() % 2 == 1,
        group.is_reclaiming(),
        "the last call matches the state: {log:?}"
    );
    assert_eq!(group.is_reclaiming(), group.unspooled_usage() > 10);
}

/// A group with a hard limit of 10 bytes, already 1 byte over it.
fn over_limit_group() -> PlainArc<RegionGroup> {
    let group = RegionGroup::new(
        "loom",
        ReclaimConfig {
            unspooled_hard_limit: 10,
            ..Default::default()
        },
    );
    group.add(REGION, 11);
    group
}

/// (a) A writer blocked at the hard limit is always released when memory is
/// freed: no lost wake-up, whichever of "queue" and "free" comes first.
#[test]
fn loom_blocked_writer_released_when_memory_freed() {
    model(|| {
        let group = over_limit_group();
        let writer = {
            let group = group.clone();
            thread::spawn(move || group.run_when_memory_available(|| 7, None))
        };
        group.decrease_usage(REGION, 1);
        assert_eq!(writer.join().unwrap(), Ok(7));
        assert_eq!(group.queued_requests(), 0);
    });
}

/// (b) Two blocked writers are released in FIFO order: the second, arriving
/// while memory is being freed, never runs before the first.
#[test]
fn loom_two_blocked_writers_released_fifo() {
    model(|| {
        let group = over_limit_group();
        let order = Arc::new(Mutex::new(Vec::new()));
        let spawn_writer = |n: u32| {
            let (group, order) = (group.clone(), order.clone());
            thread::spawn(move || {
                group.run_when_memory_available(|| order.lock().unwrap().push(n), None)
            })
        };
        let first = spawn_writer(1);
        while group.queued_requests() == 0 {
            thread::yield_now();
        }
        let second = spawn_writer(2);
        group.decrease_usage(REGION, 1);
        assert_eq!(first.join().unwrap(), Ok(()));
        assert_eq!(second.join().unwrap(), Ok(()));
        assert_eq!(*order.lock().unwrap(), [1, 2]);
    });
}

/// (c) Concurrent usage changes around the soft limit produce balanced,
/// alternating start/stop calls that end in the state usage implies. One
/// thread goes above and back, the other below and back, so either can
/// record a crossing while the other is delivering one. (Losing a crossing
/// recorded while another thread finishes delivering takes 3 preemptions
/// here, hence the minimum bound; the model still runs in well under 1 s.)
#[test]
fn loom_soft_limit_crossings_balanced() {
    model_with_min_bound(3, || {
        let (group, log) = logging_group();
        group.add(REGION, 10);
        let other = {
            let group = group.clone();
            thread::spawn(move || {
                group.increase_usage(REGION, 1);
                group.decrease_usage(REGION, 1);
            })
        };
        group.decrease_usage(REGION, 1);
        group.increase_usage(REGION, 1);
        other.join().unwrap();
        assert_balanced(&group, &log.lock().unwrap());
        assert!(!group.is_reclaiming());
    });
}

/// (c') A crossing recorded while another thread is delivering one is
/// delivered too: here a flush's spool accounting brings usage back to the
/// limit while the writer that crossed it is in its callback.
#[test]
fn loom_soft_limit_crossing_during_delivery_is_delivered() {
    model(|| {
        let (group, log) = logging_group();
        group.add(REGION, 10);
        let flusher = {
            let group = group.clone();
            thread::spawn(move || group.account_spooled(1).unwrap())
        };
        group.increase_usage(REGION, 1);
        flusher.join().unwrap();
        assert_balanced(&group, &log.lock().unwrap());
        assert!(!group.is_reclaiming());
    });
}

/// (d) Shutdown with blocked writers wakes them all with the shutdown error.
#[test]
fn loom_shutdown_wakes_all_blocked_writers() {
    model(|| {
        let group = over_limit_group();
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let group = group.clone();
                thread::spawn(move || group.run_when_memory_available(|| (), None))
            })
            .collect();
        group.shutdown();
        for writer in writers {
            assert_eq!(
                writer.join().unwrap(),
                Err(Error::Shutdown {
                    group: "loom".into()
                })
            );
        }
        assert_eq!(group.queued_requests(), 0);
    });
}

/// (e) An async writer is woken through its `Waker` when memory is freed.
#[test]
fn loom_async_writer_woken_when_memory_freed() {
    model(|| {
        let group = over_limit_group();
        let writer = {
            let group = group.clone();
            thread::spawn(move || {
                loom::future::block_on(group.run_when_memory_available_async(|| 3, None))
            })
        };
        group.decrease_usage(REGION, 1);
        assert_eq!(writer.join().unwrap(), Ok(3));
    });
}

/// (f) Spooled bytes attributed to a region never outlive it: a flush that
/// accounts and later reverts its progress, racing with the region being
/// dropped, leaves no spooled bytes behind and never takes more back than
/// it accounted.
#[test]
fn loom_region_spooled_bytes_leave_with_a_concurrently_dropped_region() {
    model(|| {
        let group = RegionGroup::new("loom", ReclaimConfig::default());
        let other = RegionId::from_raw(2);
        group.add(REGION, 10);
        group.add(other, 5);
        let flush = {
            let group = group.clone();
            thread::spawn(move || {
                let accounted = group.account_region_spooled(REGION, 8).is_ok();
                let reverted = group.revert_region_spooled(REGION, 8);
                (accounted, reverted)
            })
        };
        group.del(REGION, 10);
        let (accounted, reverted) = flush.join().unwrap();
        assert!(reverted <= if accounted { 8 } else { 0 });
        assert_eq!(group.spooled(), 0);
        assert_eq!((group.real_usage(), group.unspooled_usage()), (5, 5));
    });
}

/// (g) A region's bytes pinned as it leaves stay counted, and a writer
/// blocked at the real hard limit by them is always released when the pin
/// releases them, whichever comes first: no lost wake-up, and no moment
/// at which the departure let it in early.
#[test]
fn loom_writer_blocked_by_a_pin_released_with_it() {
    model(|| {
        let group = RegionGroup::new(
            "loom",
            ReclaimConfig {
                real_hard_limit: 10,
                ..Default::default()
            },
        );
        const LEAVING: RegionId = RegionId::from_raw(2);
        group.add(REGION, 5);
        group.add(LEAVING, 6);
        let mut pin = group.pin_on_leave(LEAVING).unwrap();
        let admitted = Arc::new(Mutex::new(None));
        let writer = {
            let (group, admitted) = (group.clone(), admitted.clone());
            thread::spawn(move || {
                group.run_when_memory_available(
                    || *admitted.lock().unwrap() = Some(group.real_usage()),
                    None,
                )
            })
        };
        group.del(LEAVING, 6);
        assert_eq!(pin.release(1), 1);
        assert_eq!(writer.join().unwrap(), Ok(()));
        let seen = admitted.lock().unwrap().unwrap();
        assert!(seen <= 10, "admitted at real usage {seen}");
        drop(pin);
        assert_eq!(group.real_usage(), 5);
        assert_eq!(group.queued_requests(), 0);
    });
}
