//! The group's regions ordered by size, so that the largest is found cheaply.
//!
//! Every region the group hears of has an entry in a hash map (its segment
//! total, whether it is grounded, its spooled bytes and what its owner
//! attached to it) and a node in an intrusive red-black
//! tree keyed by `(ordering size, id)`, where the ordering size is the total,
//! or 0 once the region is grounded. A size change removes the node by key,
//! updates it and reinserts it: O(log n), no allocation. The largest region
//! is the tree's last node.

use std::any::Any;
use std::collections::HashMap;

use intrusive_collections::{KeyAdapter, RBTree, RBTreeLink, intrusive_adapter};
use logalloc::RegionId;

/// A region's node in the ordering tree.
#[derive(Debug)]
struct Node {
    link: RBTreeLink,
    id: RegionId,
    ordering_size: usize,
}

intrusive_adapter!(NodeAdapter = Box<Node>: Node { link: RBTreeLink });

impl<'a> KeyAdapter<'a> for NodeAdapter {
    type Key = (usize, RegionId);
    fn get_key(&self, node: &'a Node) -> Self::Key {
        (node.ordering_size, node.id)
    }
}

/// What the group knows of one region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RegionEntry {
    /// Bytes of segments the region holds.
    pub(crate) total: usize,
    /// Whether the region was grounded (its size counts as 0 for ordering).
    pub(crate) grounded: bool,
    /// Bytes of this region accounted as spooled (written out by its flush);
    /// never more than `total`.
    pub(crate) spooled: usize,
}

impl RegionEntry {
    fn ordering_size(self) -> usize {
        if self.grounded { 0 } else { self.total }
    }
}

/// What a region's owner attached to it
/// ([`RegionGroup::set_region_owner`](crate::RegionGroup::set_region_owner)):
/// a `PlainArc<O>` of the group's owner type `O`, kept in the region's own
/// entry. The type is erased here so that the group's state (shared with
/// its timeout thread, its admission futures and its pins) stays one type
/// for every `O`; only `RegionGroup<O>`'s typed API stores and reads it.
pub(crate) type Owner = Box<dyn Any + Send + Sync>;

/// One tracked region: its figures and its owner.
struct Tracked {
    entry: RegionEntry,
    owner: Option<Owner>,
}

/// The regions of a group, ordered by size.
pub(crate) struct RegionTracker {
    tree: RBTree<NodeAdapter>,
    entries: HashMap<RegionId, Tracked>,
}

impl std::fmt::Debug for RegionTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionTracker")
            .field("regions", &self.entries.len())
            .finish()
    }
}

impl Default for RegionTracker {
    fn default() -> Self {
        RegionTracker {
            tree: RBTree::new(NodeAdapter::new()),
            entries: HashMap::new(),
        }
    }
}

impl RegionTracker {
    /// Number of tracked regions.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// What is known of `id`.
    pub(crate) fn get(&self, id: RegionId) -> Option<RegionEntry> {
        self.entries.get(&id).map(|t| t.entry)
    }

    /// Starts tracking `id` with `total` bytes; returns the entry it replaced
    /// if `id` was already tracked.
    pub(crate) fn insert(&mut self, id: RegionId, total: usize) -> Option<RegionEntry> {
        let old = self.remove(id);
        let entry = RegionEntry {
            total,
            grounded: false,
            spooled: 0,
        };
        self.entries.insert(id, Tracked { entry, owner: None });
        self.tree.insert(Box::new(Node {
            link: RBTreeLink::new(),
            id,
            ordering_size: entry.ordering_size(),
        }));
        old
    }

    /// Attaches `owner` to the tracked region `id`; false (dropping
    /// `owner`) if `id` is not tracked.
    pub(crate) fn set_owner(&mut self, id: RegionId, owner: Owner) -> bool {
        let Some(tracked) = self.entries.get_mut(&id) else {
            return false;
        };
        tracked.owner = Some(owner);
        true
    }

    /// The owner attached to `id`.
    pub(crate) fn owner(&self, id: RegionId) -> Option<&Owner> {
        self.entries.get(&id)?.owner.as_ref()
    }

    /// Stops tracking `id` (its owner goes with it); returns what was known
    /// of it.
    pub(crate) fn remove(&mut self, id: RegionId) -> Option<RegionEntry> {
        let entry = self.entries.remove(&id)?.entry;
        let node = self.tree.find_mut(&(entry.ordering_size(), id)).remove();
        debug_assert!(node.is_some(), "tree and map disagree about {id}");
        Some(entry)
    }

    /// Applies `change` to the entry of `id` and re-sorts it. Returns `false`
    /// (changing nothing) if `id` is not tracked.
    fn update(&mut self, id: RegionId, change: impl FnOnce(&mut RegionEntry)) -> bool {
        let Some(Tracked { entry, .. }) = self.entries.get_mut(&id) else {
            return false;
        };
        let old_key = (entry.ordering_size(), id);
        change(entry);
        let new_size = entry.ordering_size();
        if new_size != old_key.0
            && let Some(mut node) = self.tree.find_mut(&old_key).remove()
        {
            node.ordering_size = new_size;
            self.tree.insert(node);
        }
        true
    }

    /// `id` grew by `delta` bytes; an untracked region starts being tracked.
    pub(crate) fn grow(&mut self, id: RegionId, delta: usize) {
        if !self.update(id, |e| e.total = e.total.saturating_add(delta)) {
            self.insert(id, delta);
        }
    }

    /// `id` shrank by `delta` bytes (saturating at 0). Its spooled bytes are
    /// capped at its new total; returns how many spooled bytes that dropped.
    pub(crate) fn shrink(&mut self, id: RegionId, delta: usize) -> usize {
        let mut dropped = 0;
        self.update(id, |e| {
            e.total = e.total.saturating_sub(delta);
            dropped = e.spooled.saturating_sub(e.total);
            e.spooled -= dropped;
        });
        dropped
    }

    /// Accounts `bytes` more of `id` as spooled. Returns the region's size
    /// and spooled bytes, and whether they were accounted (not if `id` is
    /// unknown or that would make its spooled bytes exceed its size).
    pub(crate) fn add_spooled(
        &mut self,
        id: RegionId,
        bytes: usize,
    ) -> Option<(usize, usize, bool)> {
        let entry = &mut self.entries.get_mut(&id)?.entry;
        let (total, spooled) = (entry.total, entry.spooled);
        let fits = spooled.checked_add(bytes).is_some_and(|s| s <= total);
        if fits {
            entry.spooled += bytes;
        }
        Some((total, spooled, fits))
    }

    /// Takes back up to `bytes` of `id`'s spooled bytes; returns how many.
    pub(crate) fn take_spooled(&mut self, id: RegionId, bytes: usize) -> usize {
        let Some(Tracked { entry, .. }) = self.entries.get_mut(&id) else {
            return 0;
        };
        let taken = bytes.min(entry.spooled);
        entry.spooled -= taken;
        taken
    }

    /// `id` is grounded: from now on it orders as size 0.
    pub(crate) fn ground(&mut self, id: RegionId) {
        self.update(id, |e| e.grounded = true);
    }

    /// `from` was merged into `into`, moving `moved` bytes (and `from`'s
    /// spooled bytes, which stay accounted, now to `into`).
    pub(crate) fn merge(&mut self, into: RegionId, from: RegionId, moved: usize) {
        let spooled = self.remove(from).map_or(0, |e| e.spooled);
        self.grow(into, moved);
        self.update(into, |e| e.spooled += spooled);
    }

    /// The region with the largest ordering size (grounded regions order as
    /// 0, ties go to the higher id), grounded or not.
    pub(crate) fn largest(&self) -> Option<RegionId> {
        self.tree.back().get().map(|node| node.id)
    }

    /// The largest region that is not grounded and holds at least one byte.
    pub(crate) fn largest_flushable(&self) -> Option<RegionId> {
        self.tree
            .back()
            .get()
            .filter(|node| node.ordering_size > 0)
            .map(|node| node.id)
    }

    /// Ids in descending ordering size (for tests and debugging).
    #[cfg(test)]
    pub(crate) fn descending(&self) -> Vec<(usize, RegionId)> {
        let mut out = Vec::new();
        let mut cursor = self.tree.back();
        while let Some(node) = cursor.get() {
            out.push((node.ordering_size, node.id));
            cursor.move_prev();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn id(n: u64) -> RegionId {
        RegionId::from_raw(n)
    }

    #[test]
    fn largest_follows_growth_shrink_ground_merge_remove() {
        let mut t = RegionTracker::default();
        assert_eq!(t.largest(), None);
        t.insert(id(1), 100);
        t.insert(id(2), 50);
        assert_eq!(t.largest(), Some(id(1)));
        t.grow(id(2), 60);
        assert_eq!(t.largest(), Some(id(2)));
        t.shrink(id(2), 100);
        assert_eq!(t.largest(), Some(id(1)));
        t.ground(id(1));
        assert_eq!(t.largest(), Some(id(2)));
        assert_eq!(
            t.get(id(1)),
            Some(RegionEntry {
                total: 100,
                grounded: true,
                spooled: 0,
            })
        );
        t.merge(id(2), id(1), 100);
        assert_eq!(t.get(id(2)).map(|e| e.total), Some(110));
        assert_eq!(t.len(), 1);
        t.remove(id(2));
        assert_eq!(t.largest(), None);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn flushable_skips_grounded_and_empty() {
        let mut t = RegionTracker::default();
        t.insert(id(1), 0);
        assert_eq!(t.largest(), Some(id(1)));
        assert_eq!(t.largest_flushable(), None);
        t.grow(id(1), 10);
        t.ground(id(1));
        assert_eq!(t.largest_flushable(), None);
        t.insert(id(2), 5);
        assert_eq!(t.largest_flushable(), Some(id(2)));
    }

    #[test]
    fn spooled_bytes_follow_shrink_and_merge() {
        let mut t = RegionTracker::default();
        t.insert(id(1), 100);
        assert_eq!(t.add_spooled(id(1), 80), Some((100, 0, true)));
        assert_eq!(t.add_spooled(id(1), 21), Some((100, 80, false)));
        assert_eq!(t.add_spooled(id(9), 1), None);
        assert_eq!(t.shrink(id(1), 10), 0, "90 bytes still hold 80 spooled");
        assert_eq!(t.shrink(id(1), 30), 20, "60 bytes hold at most 60 spooled");
        assert_eq!(t.get(id(1)).map(|e| (e.total, e.spooled)), Some((60, 60)));
        t.insert(id(2), 10);
        t.merge(id(2), id(1), 60);
        assert_eq!(t.get(id(2)).map(|e| (e.total, e.spooled)), Some((70, 60)));
        assert_eq!(t.take_spooled(id(2), 100), 60);
        assert_eq!(t.take_spooled(id(1), 1), 0);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u64, usize),
        Remove(u64),
        Grow(u64, usize),
        Shrink(u64, usize),
        Ground(u64),
        Merge(u64, u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..8u64, 0..1000usize).prop_map(|(i, s)| Op::Insert(i, s)),
            (0..8u64).prop_map(Op::Remove),
            (0..8u64, 0..1000usize).prop_map(|(i, s)| Op::Grow(i, s)),
            (0..8u64, 0..1000usize).prop_map(|(i, s)| Op::Shrink(i, s)),
            (0..8u64).prop_map(Op::Ground),
            (0..8u64, 0..8u64).prop_map(|(a, b)| Op::Merge(a, b)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// The tree always agrees with a plain map model.
        #[test]
        fn tracker_matches_model(ops in proptest::collection::vec(op(), 1..64)) {
            let mut t = RegionTracker::default();
            let mut model: HashMap<u64, RegionEntry> = HashMap::new();
            for op in ops {
                match op {
                    Op::Insert(i, s) => {
                        t.insert(id(i), s);
                        model.insert(i, RegionEntry { total: s, grounded: false, spooled: 0 });
                    }
                    Op::Remove(i) => {
                        prop_assert_eq!(t.remove(id(i)), model.remove(&i));
                    }
                    Op::Grow(i, s) => {
                        t.grow(id(i), s);
                        model.entry(i).or_insert(RegionEntry { total: 0, grounded: false, spooled: 0 }).total += s;
                    }
                    Op::Shrink(i, s) => {
                        t.shrink(id(i), s);
                        if let Some(e) = model.get_mut(&i) {
                            e.total = e.total.saturating_sub(s);
                        }
                    }
                    Op::Ground(i) => {
                        t.ground(id(i));
                        if let Some(e) = model.get_mut(&i) {
                            e.grounded = true;
                        }
                    }
                    Op::Merge(a, b) if a != b && model.contains_key(&b) => {
                        let moved = model[&b].total;
                        t.merge(id(a), id(b), moved);
                        model.remove(&b);
                        model.entry(a).or_insert(RegionEntry { total: 0, grounded: false, spooled: 0 }).total += moved;
                    }
                    Op::Merge(..) => {}
                }
                let mut expected: Vec<(usize, RegionId)> =
                    model.iter().map(|(&i, e)| (e.ordering_size(), id(i))).collect();
                expected.sort_unstable_by(|a, b| b.cmp(a));
                prop_assert_eq!(t.descending(), expected.clone());
                prop_assert_eq!(t.largest(), expected.first().map(|&(_, i)| i));
                prop_assert_eq!(t.len(), model.len());
            }
        }
    }
}
