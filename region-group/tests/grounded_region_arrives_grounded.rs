//! Grounding is permanent and travels with the region: a grounded region
//! that starts listening to a group (again, or a new one) arrives grounded
//! there, so the group never picks a memtable under flush for flushing a
//! second time. And a `SizeTrackedRegion` grounds through `&self`.

use std::sync::Arc;

use logalloc::{PoolConfig, Region, SegmentPool};
use region_group::{ReclaimConfig, RegionGroup, SizeTrackedRegion};

const SEGMENT: usize = 64 << 10;

fn pool() -> Arc<SegmentPool> {
    SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(SEGMENT)
            .with_memory_limit(16 * SEGMENT),
    )
    .expect("valid pool config")
}

#[test]
fn a_grounded_region_listening_to_a_new_group_arrives_grounded() {
    let pool = pool();
    let first = RegionGroup::new("first", ReclaimConfig::default());
    let second = RegionGroup::new("second", ReclaimConfig::default());

    let mut sealed = SizeTrackedRegion::new(&first, &pool);
    sealed.alloc(1024, 8).expect("room");
    let id = sealed.id();
    // Through `&self`: a shared reference to the tracked region suffices.
    let shared: &SizeTrackedRegion = &sealed;
    shared.ground_evictable_occupancy();
    assert_eq!(first.largest_flushable_region(), None);

    // Handed over, then moved to another group: it arrives there grounded.
    let mut region: Region = sealed.into_region();
    region.listen(second.clone());
    assert_eq!(first.region_count(), 0, "the old group heard `del`");
    assert_eq!(
        second.region_size(id),
        Some((region.stats().footprint_bytes(), true))
    );
    assert_eq!(second.largest_region(), Some(id));
    assert_eq!(second.largest_flushable_region(), None);

    // And again after leaving and rejoining the same group.
    region.unlisten();
    assert_eq!(second.region_count(), 0);
    region.listen(second.clone());
    assert_eq!(
        second.region_size(id).map(|(_, grounded)| grounded),
        Some(true)
    );
    assert_eq!(second.largest_flushable_region(), None);
}

#[test]
fn an_ungrounded_region_arrives_flushable() {
    let pool = pool();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mut region = Region::new(&pool);
    region.alloc(1024, 8).expect("room");
    region.listen(group.clone());
    assert_eq!(group.region_size(region.id()).map(|(_, g)| g), Some(false));
    assert_eq!(group.largest_flushable_region(), Some(region.id()));
}

#[test]
fn a_size_tracked_region_stays_in_its_group_while_it_changes() {
    let pool = pool();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mut tracked = SizeTrackedRegion::new(&group, &pool);
    let handle = tracked.alloc_bytes(b"abc").expect("room");
    tracked.get_mut(handle).expect("live")[0] = b'x';
    assert_eq!(&*tracked.get(handle).expect("live"), b"xbc");
    tracked.compact();
    tracked.full_compaction().expect("room to compact");
    let mut other = Region::new(&pool);
    other.alloc(2048, 8).expect("room");
    tracked.merge(other).expect("same pool");
    tracked.free(handle).expect("live");
    // Every change went through the tracked region's own methods: the
    // group still follows it, and agrees with its footprint.
    assert_eq!(group.region_count(), 1);
    assert_eq!(
        group.region_size(tracked.id()),
        Some((tracked.stats().footprint_bytes(), false))
    );
}

#[test]
fn leave_group_is_the_one_explicit_way_out_and_the_writer_stays_in() {
    let pool = pool();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mut tracked = SizeTrackedRegion::new(&group, &pool);

    // Writes through the writer are reported as they happen.
    let handle = {
        let mut w = tracked.writer();
        w.alloc_bytes(&[7u8; 4096]).expect("room")
    };
    let footprint = tracked.stats().footprint_bytes();
    assert!(footprint > 0);
    assert_eq!(group.region_size(tracked.id()), Some((footprint, false)));
    assert_eq!(group.real_usage(), footprint);

    // Leaving: the group forgets the region at once; the region keeps its
    // objects and stays usable, and the group hears nothing more of it.
    tracked.leave_group();
    assert_eq!(group.region_count(), 0);
    assert_eq!(group.real_usage(), 0);
    assert_eq!(
        &*tracked.get(handle).expect("object kept"),
        &[7u8; 4096][..]
    );
    tracked.alloc(4096, 8).expect("still usable");
    assert_eq!(group.real_usage(), 0);

    // Idempotent, and dropping it later reports nothing twice.
    tracked.leave_group();
    drop(tracked);
    assert_eq!(group.region_count(), 0);
    assert_eq!(group.real_usage(), 0);
}
