//! Spooled bytes attributed to a region (`account_region_spooled`) never
//! outlive or outgrow it: a flushed memtable dropped before its flush gave
//! its bytes back, or one that shrank during its flush, cannot hide other
//! regions' memory from the limits.

mod common;

use std::time::Duration;

use common::id;
use region_group::{Error, ReclaimConfig, RegionGroup, RegionListener};

fn group() -> std::sync::Arc<RegionGroup> {
    RegionGroup::new(
        "dirty",
        ReclaimConfig {
            unspooled_hard_limit: 200,
            unspooled_soft_limit: 100,
            ..Default::default()
        },
    )
}

#[test]
fn group_level_spooled_bytes_outlive_a_dropped_region() {
    // The hazard the region form removes: with `account_spooled`, bytes of a
    // memtable dropped before its flush reverted them stay accounted.
    let g = group();
    g.add(id(1), 150);
    g.add(id(2), 100);
    g.account_spooled(150).unwrap();
    g.del(id(1), 150);
    g.increase_usage(id(2), 150); // 250 bytes of unflushed memtable
    assert_eq!(
        (g.real_usage(), g.spooled(), g.unspooled_usage()),
        (250, 150, 100)
    );
    assert!(
        g.execution_permitted(),
        "250 > 200, yet writers are admitted"
    );
    assert!(!g.is_reclaiming(), "250 > 100, yet no flush is asked for");
}

#[test]
fn a_dropped_region_takes_its_spooled_bytes_along() {
    let g = group();
    g.add(id(1), 150);
    g.add(id(2), 100);
    g.account_region_spooled(id(1), 150).unwrap();
    assert_eq!(
        (g.unspooled_usage(), g.region_spooled(id(1))),
        (100, Some(150))
    );
    g.del(id(1), 150);
    assert_eq!(
        (g.real_usage(), g.spooled(), g.unspooled_usage()),
        (100, 0, 100)
    );
    g.increase_usage(id(2), 150);
    assert_eq!(g.unspooled_usage(), 250);
    assert!(!g.execution_permitted());
    assert!(g.is_reclaiming());
    // The flush's late revert finds nothing left to give back.
    assert_eq!(g.revert_region_spooled(id(1), 150), 0);
    assert_eq!(g.unspooled_usage(), 250);
    let late = g.run_when_memory_available(|| (), Some(Duration::ZERO));
    assert_eq!(
        late,
        Err(Error::Timeout {
            group: "dirty".into()
        })
    );
}

#[test]
fn a_shrinking_region_caps_its_spooled_bytes() {
    let g = group();
    g.add(id(1), 100);
    g.add(id(2), 60);
    g.account_region_spooled(id(1), 80).unwrap();
    assert_eq!(g.unspooled_usage(), 80);
    // The memtable frees 50 bytes during its flush: 80 spooled of 50 held
    // would hide 30 bytes of region 2.
    g.decrease_usage(id(1), 50);
    assert_eq!(g.region_spooled(id(1)), Some(50));
    assert_eq!(
        (g.real_usage(), g.spooled(), g.unspooled_usage()),
        (110, 50, 60)
    );
    assert_eq!(g.revert_region_spooled(id(1), 80), 50, "only what is left");
    assert_eq!((g.spooled(), g.unspooled_usage()), (0, 110));
}

#[test]
fn a_merged_region_hands_its_spooled_bytes_to_the_target() {
    let g = group();
    g.add(id(1), 100);
    g.add(id(2), 60);
    g.account_region_spooled(id(1), 40).unwrap();
    g.merged(id(2), id(1), 100);
    assert_eq!(g.region_spooled(id(2)), Some(40));
    assert_eq!((g.real_usage(), g.unspooled_usage()), (160, 120));
    assert_eq!(g.revert_region_spooled(id(2), 40), 40);
}

#[test]
fn bad_region_accounting_is_refused_without_change() {
    let g = group();
    g.add(id(1), 100);
    g.add(id(2), 100);
    let unknown = g.account_region_spooled(id(9), 1).unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "region group `dirty`: region#9 does not report to this group"
    );
    g.account_region_spooled(id(1), 70).unwrap();
    let too_much = g.account_region_spooled(id(1), 31).unwrap_err();
    assert_eq!(
        too_much.to_string(),
        "region group `dirty`: cannot account 31 spooled bytes of region#1: 70 already spooled \
         of its 100 bytes"
    );
    // Group-level reverts cannot take a region's bytes.
    assert!(matches!(
        g.revert_spooled(1),
        Err(Error::RevertExceedsSpooled { spooled: 0, .. })
    ));
    assert_eq!((g.spooled(), g.region_spooled(id(1))), (70, Some(70)));
    assert_eq!(g.revert_region_spooled(id(9), 5), 0);
}
