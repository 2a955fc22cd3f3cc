//! The listener hears add/del, usage changes (segments taken and released,
//! handle table and slot lists grown and shrunk), merges and grounding, and
//! its totals always equal the regions' footprints: segments plus table plus
//! slot lists, as `RegionStats::footprint_bytes` counts them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use logalloc::{PoolConfig, Region, RegionId, RegionListener, SegmentPool};

#[derive(Default)]
struct Recorder {
    totals: Mutex<HashMap<RegionId, usize>>,
    events: Mutex<Vec<String>>,
}

impl Recorder {
    fn total(&self, id: RegionId) -> Option<usize> {
        self.totals.lock().unwrap().get(&id).copied()
    }
    fn events(&self) -> Vec<String> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }
}

impl RegionListener for Recorder {
    fn add(&self, region: RegionId, total: usize) {
        assert!(self.totals.lock().unwrap().insert(region, total).is_none());
        self.events.lock().unwrap().push(format!("add {total}"));
    }
    fn del(&self, region: RegionId, total: usize) {
        assert_eq!(self.totals.lock().unwrap().remove(&region), Some(total));
        self.events.lock().unwrap().push(format!("del {total}"));
    }
    fn increase_usage(&self, region: RegionId, delta: usize) {
        assert!(delta > 0);
        *self.totals.lock().unwrap().get_mut(&region).unwrap() += delta;
    }
    fn decrease_usage(&self, region: RegionId, delta: usize) {
        assert!(delta > 0);
        *self.totals.lock().unwrap().get_mut(&region).unwrap() -= delta;
    }
    fn merged(&self, into: RegionId, from: RegionId, moved: usize) {
        let mut totals = self.totals.lock().unwrap();
        assert_eq!(totals.remove(&from), Some(moved));
        *totals.get_mut(&into).unwrap() += moved;
        self.events.lock().unwrap().push(format!("merged {moved}"));
    }
    fn ground_evictable(&self, _region: RegionId) {
        self.events.lock().unwrap().push("ground".into());
    }
}

fn pool() -> Arc<SegmentPool> {
    SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4096)
            .with_memory_limit(64 * 4096),
    )
    .unwrap()
}

#[test]
fn usage_follows_segments_through_alloc_free_compaction() {
    let pool = pool();
    let recorder = Arc::new(Recorder::default());
    let mut region = Region::new(&pool);
    let first = region.alloc_bytes(&[1; 100]).unwrap();
    region.listen(recorder.clone());
    let footprint = region.stats().footprint_bytes();
    assert!(footprint > 4096, "one segment plus the table: {footprint}");
    assert_eq!(recorder.events(), vec![format!("add {footprint}")]);
    let mut handles = Vec::new();
    for _ in 0..300 {
        handles.push(region.alloc_bytes(&[2; 100]).unwrap());
        // Exact after every allocation, table and slot-list growth included.
        assert_eq!(
            recorder.total(region.id()),
            Some(region.stats().footprint_bytes())
        );
    }
    region.check_invariants().unwrap();
    for h in handles.iter().step_by(3) {
        region.free(*h).unwrap();
    }
    region.compact();
    region.full_compaction().unwrap();
    region.check_invariants().unwrap();
    assert_eq!(
        recorder.total(region.id()),
        Some(region.stats().footprint_bytes())
    );
    region.free(first).unwrap();
    region.ground_evictable_occupancy();
    assert!(region.is_grounded());
    assert_eq!(recorder.events(), vec!["ground"]);
    let total = region.stats().footprint_bytes();
    region.unlisten();
    assert_eq!(recorder.events(), vec![format!("del {total}")]);
    region.unlisten();
    assert!(recorder.events().is_empty(), "unlisten twice reports once");
}

#[test]
fn merge_with_the_same_listener_is_reported_as_merged() {
    let pool = pool();
    let recorder = Arc::new(Recorder::default());
    let mut a = Region::new(&pool);
    let mut b = Region::new(&pool);
    a.listen(recorder.clone());
    b.listen(recorder.clone());
    a.alloc_bytes(&[1; 300]).unwrap();
    for _ in 0..40 {
        b.alloc_bytes(&[2; 300]).unwrap();
    }
    let moved = b.stats().footprint_bytes();
    recorder.events();
    a.merge(b).unwrap();
    assert_eq!(recorder.events(), vec![format!("merged {moved}")]);
    // Adopting b's table parts may grow a's part list: reported as usage.
    assert_eq!(recorder.total(a.id()), Some(a.stats().footprint_bytes()));
    a.check_invariants().unwrap();
    let total = a.stats().footprint_bytes();
    drop(a);
    assert_eq!(recorder.events(), vec![format!("del {total}")]);
    assert!(recorder.totals.lock().unwrap().is_empty());
}

#[test]
fn merge_across_listeners_is_del_plus_increase() {
    let pool = pool();
    let (ra, rb) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
    let mut a = Region::new(&pool);
    let mut b = Region::new(&pool);
    a.listen(ra.clone());
    b.listen(rb.clone());
    b.alloc_bytes(&[2; 300]).unwrap();
    let (b_id, moved) = (b.id(), b.stats().footprint_bytes());
    rb.events();
    a.merge(b).unwrap();
    assert_eq!(rb.events(), vec![format!("del {moved}")]);
    assert_eq!(rb.total(b_id), None);
    assert_eq!(ra.total(a.id()), Some(a.stats().footprint_bytes()));
    a.check_invariants().unwrap();
}

#[test]
fn merging_regions_of_different_pools_is_refused() {
    let (p1, p2) = (pool(), pool());
    let mut a = Region::new(&p1);
    let mut b = Region::new(&p2);
    let h = b.alloc_bytes(b"x").unwrap();
    let a_before = a.stats();
    assert_eq!(a.merge(b), Err(logalloc::Error::PoolMismatch));
    assert_eq!(a.stats(), a_before);
    assert!(a.get(h).is_err());
    assert_eq!(
        p2.stats().segments_in_use,
        0,
        "the refused region was dropped normally"
    );
}
