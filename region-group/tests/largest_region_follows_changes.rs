//! The largest region follows growth, shrink, grounding, merge and removal.
mod common;

use common::id;
use logalloc::RegionListener;
use region_group::{ReclaimConfig, RegionGroup};

#[test]
fn largest_region_tracks_every_kind_of_change() {
    let g = RegionGroup::new("largest", ReclaimConfig::default());
    assert_eq!(g.largest_region(), None);
    let (a, b, c) = (id(1), id(2), id(3));
    g.add(a, 100);
    g.add(b, 200);
    g.add(c, 0);
    assert_eq!(g.largest_region(), Some(b));

    g.increase_usage(a, 150); // growth: a = 250
    assert_eq!(g.largest_region(), Some(a));

    g.decrease_usage(a, 100); // shrink: a = 150
    assert_eq!(g.largest_region(), Some(b));

    g.ground_evictable(b); // grounded: orders as 0, memory still counts
    assert_eq!(g.largest_region(), Some(a));
    assert_eq!(g.region_size(b), Some((200, true)));
    assert_eq!(g.real_usage(), 350);

    g.increase_usage(c, 160); // c = 160 beats a = 150
    assert_eq!(g.largest_region(), Some(c));

    g.merged(a, c, 160); // c's segments move into a: a = 310
    assert_eq!(g.region_size(c), None);
    assert_eq!(g.region_size(a), Some((310, false)));
    assert_eq!(g.largest_region(), Some(a));
    assert_eq!(g.real_usage(), 510, "a merge does not change the total");

    g.del(a, 310); // removal
    assert_eq!(
        g.largest_flushable_region(),
        None,
        "only the grounded b is left"
    );
    assert_eq!(
        g.largest_region(),
        Some(b),
        "largest_region may return a grounded region when nothing else is left"
    );
    g.del(b, 200);
    assert_eq!(g.largest_region(), None);
    assert_eq!((g.real_usage(), g.region_count()), (0, 0));
}

#[test]
fn grounded_region_is_never_the_flushable_pick() {
    let g = RegionGroup::new("largest", ReclaimConfig::default());
    let (big, small) = (id(1), id(2));
    g.add(big, 1 << 20);
    g.add(small, 4096);
    g.ground_evictable(big);
    g.increase_usage(big, 1 << 20); // a grounded region may still grow
    assert_eq!(g.largest_flushable_region(), Some(small));
    assert_eq!(g.largest_region(), Some(small));
}
