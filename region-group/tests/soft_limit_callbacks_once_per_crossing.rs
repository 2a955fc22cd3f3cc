//! The soft-limit callbacks fire exactly once per crossing: above the limit
//! starts reclaiming, back to or below it stops, and staying on one side
//! fires nothing.
mod common;

use std::sync::{Arc, Mutex};

use common::id;
use logalloc::RegionListener;
use region_group::{ReclaimConfig, RegionGroup};

fn recording_group(soft: usize) -> (Arc<RegionGroup>, Arc<Mutex<Vec<&'static str>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (start, stop) = (log.clone(), log.clone());
    let group = RegionGroup::new(
        "soft",
        ReclaimConfig {
            unspooled_soft_limit: soft,
            start_reclaiming: Some(Arc::new(move || start.lock().unwrap().push("start"))),
            stop_reclaiming: Some(Arc::new(move || stop.lock().unwrap().push("stop"))),
            ..Default::default()
        },
    );
    (group, log)
}

#[test]
fn callbacks_fire_once_per_crossing() {
    let (g, log) = recording_group(100);
    let r = id(1);
    g.add(r, 100); // equal to the soft limit: not above
    assert!(log.lock().unwrap().is_empty());
    g.increase_usage(r, 1); // 101: above
    g.increase_usage(r, 50); // still above: nothing new
    assert_eq!(*log.lock().unwrap(), ["start"]);
    g.decrease_usage(r, 51); // 100: back to the limit
    g.decrease_usage(r, 50); // further below: nothing new
    assert_eq!(*log.lock().unwrap(), ["start", "stop"]);
    g.increase_usage(r, 60); // 110
    g.account_spooled(10).unwrap(); // unspooled 100: stop
    g.revert_spooled(10).unwrap(); // unspooled 110: start
    g.update_limits(usize::MAX, 200, usize::MAX); // limit raised: stop
    g.update_limits(usize::MAX, 50, usize::MAX); // limit lowered: start
    g.del(r, 110); // region gone: stop
    assert_eq!(
        *log.lock().unwrap(),
        [
            "start", "stop", "start", "stop", "start", "stop", "start", "stop"
        ]
    );
    assert!(!g.is_reclaiming());
}

#[test]
fn concurrent_crossings_stay_balanced_and_ordered() {
    let (g, log) = recording_group(1000);
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let g = g.clone();
            std::thread::spawn(move || {
                let r = id(t);
                g.add(r, 0);
                for _ in 0..500 {
                    g.increase_usage(r, 400);
                    g.decrease_usage(r, 400);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let log = log.lock().unwrap();
    // Delivered in crossing order: strictly alternating, starting with start,
    // and the final state (usage 0) is "not reclaiming".
    assert!(
        log.iter()
            .enumerate()
            .all(|(i, e)| *e == if i % 2 == 0 { "start" } else { "stop" })
    );
    assert_eq!(log.len() % 2, 0);
    assert!(!g.is_reclaiming());
}
