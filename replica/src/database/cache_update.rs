//! The flush's hand-off to the row cache: the flushed memtable's data goes
//! into the cache while its memory, pinned against the real dirty limit,
//! is released as the update passes its partitions.

use mutation::{ClusteringRange, Fragment, FragmentReader, Mutation, PartitionRange};
use region_group::RealPin;

use crate::database::table::{Table, TableMemtable};
use crate::sync::Ordering;

impl Table {
    /// Brings the flushed `memtable` into the cache (if the table has
    /// one), after its sstable joined the list. A failure is counted, not
    /// returned: the cache dropped what it missed, and the flush stands.
    ///
    /// `pin` holds the memtable's memory against the real dirty limit
    /// while the update reads it (the memtable has left the dirty-memory
    /// accounting, see the flush's end); it is released in proportion to
    /// the partitions passed, so writers held at the real limit are let in
    /// as the update goes, not only once it ends.
    pub(crate) fn update_cache(&self, memtable: &TableMemtable, pin: Option<RealPin>) {
        let Some(cache) = &self.cache else { return };
        let partitions = memtable.memtable().stats().partitions;
        #[cfg(feature = "testing")]
        let on_release = {
            let mut first = true;
            move || {
                if std::mem::take(&mut first) {
                    self.hooks
                        .fire(crate::hooks::HookPoint::CacheUpdateReleasedMemory);
                }
            }
        };
        #[cfg(not(feature = "testing"))]
        let on_release = || {};
        // By a region merge (the memtable's partitions adopted where they
        // lie) unless a reader of the memtable is open; then by its stream.
        let mut release = PinRelease::new(pin, partitions, on_release);
        match cache.update_by_merge(memtable.memtable(), &mut || release.passed()) {
            Ok(Some(_)) => return,
            Ok(None) => {}
            Err(_) => {
                // What it missed is invalidated already; the flush stands.
                cache.invalidate(&PartitionRange::full());
                self.counters
                    .cache_update_failures
                    .fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        let updated = memtable
            .memtable()
            .make_reader(PartitionRange::full(), ClusteringRange::full())
            .map_err(|e| e.to_string())
            .and_then(|reader| {
                let mut reader = Unpinning {
                    inner: reader,
                    release,
                    started: false,
                };
                cache.update_from(&mut reader).map_err(|e| e.to_string())
            });
        if updated.is_err() {
            // `update_from` invalidated what it missed; a memtable that
            // could not be read at all brought nothing, so nothing cached
            // may stand for its keys: drop it all (reads go to the
            // sstables, which hold the flushed data).
            cache.invalidate(&PartitionRange::full());
            self.counters
                .cache_update_failures
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The release of a flushed memtable's real-dirty pin as the cache update
/// passes its partitions: an equal share per partition, in steps of a
/// sixteenth of the pin up to [`PinRelease::MAX_STEP`], so a memtable of
/// small partitions does not take the group's lock for each, and a small
/// one still releases in steps. The rest goes with the pin when this is
/// dropped. `on_release` runs after each step.
struct PinRelease<F> {
    pin: Option<RealPin>,
    per_partition: usize,
    step: usize,
    owed: usize,
    on_release: F,
}

impl<F: FnMut()> PinRelease<F> {
    /// The largest step, in bytes.
    const MAX_STEP: usize = 1 << 20;

    fn new(pin: Option<RealPin>, partitions: usize, on_release: F) -> Self {
        let bytes = pin.as_ref().map_or(0, RealPin::bytes);
        PinRelease {
            pin,
            per_partition: bytes / partitions.max(1),
            step: (bytes / 16).clamp(1, Self::MAX_STEP),
            owed: 0,
            on_release,
        }
    }

    /// One more partition is in the cache.
    fn passed(&mut self) {
        let Some(pin) = &mut self.pin else { return };
        self.owed += self.per_partition;
        if self.owed >= self.step {
            pin.release(std::mem::take(&mut self.owed));
            (self.on_release)();
        }
    }
}

/// A reader of a flushed memtable that releases the memtable's real-dirty
/// pin ([`PinRelease`]) as its partitions go by: a partition's share when
/// the next one starts (so once the cache took it).
struct Unpinning<R, F> {
    inner: R,
    release: PinRelease<F>,
    /// A partition was started (its share is owed when the next starts).
    started: bool,
}

impl<R, F: FnMut()> Unpinning<R, F> {
    #[cfg(all(test, not(loom)))]
    fn new(inner: R, pin: Option<RealPin>, partitions: usize, on_release: F) -> Self {
        Unpinning {
            inner,
            release: PinRelease::new(pin, partitions, on_release),
            started: false,
        }
    }

    /// A partition starts: the one before it has passed.
    fn partition_starts(&mut self) {
        if std::mem::replace(&mut self.started, true) {
            self.release.passed();
        }
    }
}

impl<R: FragmentReader, F: FnMut()> FragmentReader for Unpinning<R, F> {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        let fragment = self.inner.next()?;
        if let Some(Fragment::PartitionStart { .. }) = &fragment {
            self.partition_starts();
        }
        Ok(fragment)
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        self.inner.fast_forward_to(range)
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        self.inner.next_partition()
    }

    fn next_mutation(&mut self) -> Result<Option<Mutation>, mutation::Error> {
        let m = self.inner.next_mutation()?;
        if m.is_some() {
            self.partition_starts();
        }
        Ok(m)
    }
}

#[cfg(all(test, not(loom)))]
mod unpinning_tests {
    use mutation::{Cell, DecoratedKey, Timestamp, from_mutations};
    use region_group::{ReclaimConfig, RegionGroup, RegionId, RegionListener};

    use super::*;

    fn partition(i: u32) -> Mutation {
        Mutation::builder(DecoratedKey::from_bytes(format!("pk{i:03}")).unwrap())
            .cell("r", 0, Cell::live(vec![1u8; 8], Timestamp::from_micros(1)))
            .build()
            .unwrap()
    }

    /// A group holding `bytes` in a region that has left, pinned.
    fn pinned(bytes: usize) -> (sync::plain::Arc<RegionGroup>, RealPin) {
        let group = RegionGroup::new("unpinning", ReclaimConfig::default());
        let region = RegionId::from_raw(1);
        group.add(region, bytes);
        let pin = group.pin_on_leave(region).unwrap();
        group.del(region, bytes);
        (group, pin)
    }

    #[test]
    fn each_partition_releases_its_share_once_the_next_starts() {
        // 32 partitions of 1,024 bytes each: steps of 2,048 (a sixteenth).
        let (group, pin) = pinned(32 << 10);
        let reader = from_mutations((0..32).map(partition).collect::<Vec<_>>());
        let mut releases = 0;
        let mut reader = Unpinning::new(reader, Some(pin), 32, || releases += 1);
        let mut seen = Vec::new();
        while let Some(f) = reader.next().unwrap() {
            if matches!(f, Fragment::PartitionStart { .. }) {
                seen.push(group.real_usage());
            }
        }
        // At each partition's start, the partitions before it are
        // released, in steps of two.
        let want: Vec<usize> = (0..32).map(|i| (32 << 10) - (i / 2) * 2048).collect();
        assert_eq!(seen, want);
        // 31 passed, 30 of them released: one share owed, and the last.
        assert_eq!(group.real_usage(), 2048);
        drop(reader);
        assert_eq!(group.real_usage(), 0, "the rest goes with the reader");
        assert_eq!(releases, 15);
    }

    #[test]
    fn whole_partitions_release_too() {
        let (group, pin) = pinned(4 << 10);
        let reader = from_mutations((0..4).map(partition).collect::<Vec<_>>());
        let mut reader = Unpinning::new(reader, Some(pin), 4, || {});
        let mut got = 0;
        while reader.next_mutation().unwrap().is_some() {
            got += 1;
        }
        assert_eq!(got, 4);
        assert_eq!(
            group.real_usage(),
            1 << 10,
            "three passed, the last at the end"
        );
        drop(reader);
        assert_eq!(group.real_usage(), 0);
    }

    #[test]
    fn without_a_pin_it_only_reads() {
        let reader = from_mutations((0..3).map(partition).collect::<Vec<_>>());
        let mut reader = Unpinning::new(reader, None, 3, || panic!("nothing to release"));
        assert_eq!(mutation::to_mutations(&mut reader).unwrap().len(), 3);
    }
}
