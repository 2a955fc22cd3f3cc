//! Loom models of the group's admission and soft-limit code, run on the real
//! implementation through the [`sync`](crate::sync) facade.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p region-group --release -- loom_`.

use loom::sync::Mutex;
use loom::thread;

use crate::sync::Arc;
use crate::{Error, ReclaimConfig, RegionGroup, RegionId, RegionListener};

const REGION: RegionId = RegionId::from_raw(1);

/// Checks `f` under every interleaving within the preemption bound
/// (`LOOM_MAX_PREEMPTIONS`, default 2).
fn model(f: impl Fn() + Send + Sync + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.check(f);
}

/// A group with a hard limit of 10 bytes, already 1 byte over it.
fn over_limit_group() -> Arc<RegionGroup> {
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
        let order = std::sync::Arc::new(Mutex::new(Vec::new()));
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
/// alternating start/stop calls that end in the state usage implies.
#[test]
fn loom_soft_limit_crossings_balanced() {
    model(|| {
        let log = std::sync::Arc::new(Mutex::new(Vec::new()));
        let (start, stop) = (log.clone(), log.clone());
        let group = RegionGroup::new(
            "loom",
            ReclaimConfig {
                unspooled_soft_limit: 10,
                start_reclaiming: Some(std::sync::Arc::new(move || {
                    start.lock().unwrap().push(true)
                })),
                stop_reclaiming: Some(std::sync::Arc::new(move || {
                    stop.lock().unwrap().push(false)
                })),
                ..Default::default()
            },
        );
        group.add(REGION, 10);
        let other = {
            let group = group.clone();
            thread::spawn(move || {
                group.increase_usage(REGION, 1);
                group.decrease_usage(REGION, 1);
            })
        };
        group.increase_usage(REGION, 2);
        group.decrease_usage(REGION, 2);
        other.join().unwrap();
        let log = log.lock().unwrap();
        assert!(
            !log.is_empty(),
            "usage rose above the soft limit at least once"
        );
        for (i, &started) in log.iter().enumerate() {
            assert_eq!(
                started,
                i % 2 == 0,
                "calls alternate, starting with start: {log:?}"
            );
        }
        assert_eq!(log.len() % 2, 0, "balanced: usage ended at the soft limit");
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
