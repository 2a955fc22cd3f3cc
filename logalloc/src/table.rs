//! Handles and the per-region handle table that maps them to object locations.
//!
//! A region's table is a list of *parts* of up to 65,536 eight-byte entries.
//! Every part has a pool-wide unique *tag* (15 bits), so a slot number
//! `tag << 16 | index` names one entry in the whole pool. That is what makes
//! merge free: the merged region adopts the other region's parts as they
//! are, and every handle issued by either keeps resolving. It is also what
//! makes a handle from another region detectable: its tag is not among this
//! region's parts.
//!
//! Tags are recycled when a region is dropped, and every pool numbers its
//! tags from 0, so a tag alone does not say which part issued a handle. Each
//! part therefore also has an *epoch*, stored once in the part (not in its
//! entries): the pool draws epochs from a counter that starts at a per-pool
//! seed and steps once per part created. A handle carries the low bits of
//! its part's epoch next to the generation, and resolution compares both.
//!
//! A live entry packs `generation | alignment class | segment | offset | size`
//! (widths from [`Geometry`]; in a pool too large for that, the size is in
//! a header in front of the object and the entry has no size field); a free
//! entry holds the next free index of its part and the generation the next
//! object in that slot will get.

use std::fmt;
use std::num::NonZeroU64;

use crate::Error;
use crate::config::{ALIGN_BITS, Geometry};

/// Entries per handle-table part.
pub(crate) const PART_ENTRIES: usize = 1 << 16;
/// Number of distinct part tags in a pool (slot numbers are 31 bits).
pub(crate) const MAX_TAGS: usize = 1 << 15;
const LIVE: u64 = 1 << 63;
/// How many slots ahead compaction prefetches table entries.
const PREFETCH_DISTANCE: usize = 16;
/// Largest growth step of a part's entry vector.
const GROWTH_STEP: usize = 4096;
const NO_NEXT: u32 = 0x7FFF_FFFF;
const NO_PART: u32 = u32::MAX;

/// A stable reference to an object in a [`Region`](crate::Region).
///
/// Eight bytes, `Copy`, and `Option<Handle>` is eight bytes too. A handle
/// stays valid while its object is live, across compaction (which moves the
/// object) and across [`merge`](crate::Region::merge) (into the merged
/// region). Using it after `free`, or on another live region of the same
/// pool that neither issued it nor absorbed its issuer, returns an error
/// instead of touching memory.
///
/// Its layout: bit 63 set, a 31-bit slot number (the table part's tag and
/// the index in the part), then 32 bits holding the slot's *generation* in
/// the low 12 to 16 bits (depending on the pool's geometry; 15 with the
/// defaults) and the low bits of the table part's *epoch* in the other 16
/// to 20 (17 with the defaults).
///
/// * **After free.** Freeing bumps the slot's generation, so a stale handle
///   is detected unless its slot was reused a multiple of 2^generation-bits
///   times since.
/// * **A dropped region's handle** used on a region that was later given
///   the same (recycled) tag: every part a pool creates gets the next
///   epoch of the pool's counter, so this is detected unless 2^epoch-bits
///   (131,072 with the defaults) parts were created in the pool in between.
/// * **Another pool's handle**: pools seed their epoch counters
///   differently, so it is detected unless its part's epoch happens to
///   agree in the epoch bits with the part of the same tag here, roughly a
///   2^-epoch-bits (1 in 131,072 with the defaults) chance, *and* its
///   generation also agrees with that slot's.
///
/// In those residual cases the handle resolves to the current object of
/// the slot it names in the region it is used on. That stays memory-safe:
/// resolution only ever reads the region's own table and reaches its own
/// live objects, never freed memory.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle(NonZeroU64);

impl Handle {
    #[inline]
    fn new(slot: u32, stamp: u32) -> Handle {
        let raw = LIVE | (u64::from(slot) << 32) | u64::from(stamp);
        Handle(NonZeroU64::new(raw).expect("bit 63 is set"))
    }

    #[inline]
    pub(crate) fn slot(self) -> u32 {
        ((self.0.get() >> 32) as u32) & 0x7FFF_FFFF
    }

    /// The low 32 bits: the part's epoch bits above the slot's generation.
    #[inline]
    fn stamp(self) -> u32 {
        self.0.get() as u32
    }

    /// The handle as a `u64`, for storing it inside other objects.
    pub fn to_raw(self) -> u64 {
        self.0.get()
    }

    /// Rebuilds a handle from [`to_raw`](Self::to_raw). Returns `None` for
    /// values that no handle can have; a well-formed value that was never
    /// issued is caught when it is used.
    pub fn from_raw(raw: u64) -> Option<Handle> {
        if raw & LIVE == 0 {
            return None;
        }
        NonZeroU64::new(raw).map(Handle)
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slot = self.slot();
        write!(
            f,
            "Handle({}:{}@{:#x})",
            slot >> 16,
            slot & 0xFFFF,
            self.stamp()
        )
    }
}

/// Where an object lives: segment index, byte offset of its first byte,
/// its size in bytes and its alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Location {
    pub(crate) segment: u32,
    pub(crate) offset: u32,
    /// The size as the entry holds it, or [`SIZE_IN_HEADER`] from a table
    /// whose sizes are in object headers (`Geometry::header_bytes` != 0):
    /// `SegmentMemory::object_size` reads the header then.
    pub(crate) size: u32,
    /// The requested alignment.
    pub(crate) align: u32,
}

/// [`Location::size`] of an object whose size is in its header (no object
/// is that large: sizes are at most 6.4 MiB).
pub(crate) const SIZE_IN_HEADER: u32 = u32::MAX;

/// Packs and unpacks entries for one pool geometry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Codec {
    offset_shift: u32,
    segment_shift: u32,
    align_shift: u32,
    generation_shift: u32,
    generation_bits: u32,
    generation_mask: u64,
    size_mask: u64,
    offset_mask: u64,
    segment_mask: u64,
}

impl Codec {
    fn new(geometry: &Geometry) -> Codec {
        let offset_shift = geometry.size_bits;
        let segment_shift = offset_shift + geometry.offset_bits;
        let align_shift = segment_shift + geometry.segment_bits;
        let generation_shift = align_shift + ALIGN_BITS;
        Codec {
            offset_shift,
            segment_shift,
            align_shift,
            generation_shift,
            generation_bits: geometry.generation_bits,
            generation_mask: (1u64 << geometry.generation_bits) - 1,
            size_mask: (1u64 << geometry.size_bits) - 1,
            offset_mask: (1u64 << geometry.offset_bits) - 1,
            segment_mask: (1u64 << geometry.segment_bits) - 1,
        }
    }

    #[inline]
    fn live(&self, generation: u32, at: Location) -> u64 {
        debug_assert!(
            self.fits(at.segment, at.offset),
            "{at:?} overflows its fields"
        );
        LIVE | (u64::from(generation) << self.generation_shift)
            | (u64::from(at.align.trailing_zeros()) << self.align_shift)
            | (u64::from(at.segment) << self.segment_shift)
            | (u64::from(at.offset) << self.offset_shift)
            | (u64::from(at.size) & self.size_mask)
    }

    #[inline]
    fn location(&self, entry: u64) -> Location {
        // A table without size bits (sizes in headers) says so in `size`,
        // decided from the mask already in a register: `get` needs no
        // other load to know where the size is.
        let size = if self.size_mask == 0 {
            SIZE_IN_HEADER
        } else {
            (entry & self.size_mask) as u32
        };
        Location {
            size,
            offset: ((entry >> self.offset_shift) & self.offset_mask) as u32,
            segment: ((entry >> self.segment_shift) & self.segment_mask) as u32,
            align: 1 << ((entry >> self.align_shift) & ((1 << ALIGN_BITS) - 1)),
        }
    }

    /// Live `entry` with its object moved to `offset` in `segment`: size,
    /// alignment and generation are kept.
    #[inline]
    pub(crate) fn relocated(&self, entry: u64, segment: u32, offset: u32) -> u64 {
        debug_assert!(entry & LIVE != 0);
        debug_assert!(
            self.fits(segment, offset),
            "{segment}:{offset} overflows its fields"
        );
        let place =
            (self.segment_mask << self.segment_shift) | (self.offset_mask << self.offset_shift);
        (entry & !place)
            | (u64::from(segment) << self.segment_shift)
            | (u64::from(offset) << self.offset_shift)
    }

    /// Whether `segment` and `offset` fit their fields (an offset is below
    /// the segment size): a wider value would spill into the next field.
    #[inline]
    fn fits(&self, segment: u32, offset: u32) -> bool {
        u64::from(segment) <= self.segment_mask && u64::from(offset) <= self.offset_mask
    }

    #[inline]
    fn live_generation(&self, entry: u64) -> u32 {
        ((entry >> self.generation_shift) & self.generation_mask) as u32
    }

    /// The epoch bits of a part's handles: `epoch` shifted above the
    /// generation (its top bits fall off).
    #[inline]
    fn epoch_stamp(&self, epoch: u32) -> u32 {
        epoch << self.generation_bits
    }

    /// Whether the epoch bits of two stamps differ.
    #[inline]
    fn epochs_differ(&self, a: u32, b: u32) -> bool {
        (a ^ b) >> self.generation_bits != 0
    }

    #[inline]
    fn free(next: u32, generation: u32) -> u64 {
        (u64::from(next) << 32) | u64::from(generation)
    }

    #[inline]
    fn free_next(entry: u64) -> u32 {
        (entry >> 32) as u32
    }

    #[inline]
    fn free_generation(entry: u64) -> u32 {
        entry as u32
    }

    #[inline]
    fn bump(&self, generation: u32) -> u32 {
        ((u64::from(generation) + 1) & self.generation_mask) as u32
    }
}

#[derive(Debug)]
struct Part {
    tag: u16,
    /// The part's epoch, already shifted into the handle's epoch bits.
    stamp: u32,
    entries: Vec<u64>,
    free_head: u32,
    live: u32,
    in_avail: bool,
}

impl Part {
    #[inline]
    fn has_room(&self) -> bool {
        self.free_head != NO_NEXT || self.entries.len() < PART_ENTRIES
    }
}

/// A region's handle table.
#[derive(Debug)]
pub(crate) struct HandleTable {
    codec: Codec,
    tag_map: Vec<u32>,
    parts: Vec<Part>,
    avail: Vec<u32>,
    live: usize,
    /// Heap bytes of the vectors above, kept up to date wherever one of
    /// them can grow (`insert`'s growth branch, `add_part`), so `bytes()`
    /// is a load: the region compares it after every allocation to report
    /// table growth to its listener.
    bytes: usize,
}

impl HandleTable {
    pub(crate) fn new(geometry: &Geometry) -> HandleTable {
        HandleTable {
            codec: Codec::new(geometry),
            tag_map: Vec::new(),
            parts: Vec::new(),
            avail: Vec::new(),
            live: 0,
            bytes: 0,
        }
    }

    /// Number of live entries.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Heap bytes held by the table (entries, tag map, part list and the
    /// list of parts with room).
    #[inline]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// `bytes()` recounted from the vectors' capacities.
    fn recount_bytes(&self) -> usize {
        let entries: usize = self.parts.iter().map(|p| p.entries.capacity() * 8).sum();
        entries
            + self.tag_map.capacity() * 4
            + self.parts.capacity() * size_of::<Part>()
            + self.avail.capacity() * 4
    }

    /// The tags of all parts, to give back to the pool.
    pub(crate) fn tags(&self) -> impl Iterator<Item = u16> + '_ {
        self.parts.iter().map(|p| p.tag)
    }

    /// Makes sure `insert` has a slot, taking a new (tag, epoch) from
    /// `new_part` if every part is full. Fails only if the pool has no tag
    /// left.
    #[inline]
    pub(crate) fn prepare(
        &mut self,
        new_part: impl FnOnce() -> Option<(u16, u32)>,
    ) -> Result<(), Error> {
        if !self.avail.is_empty() {
            return Ok(());
        }
        let (tag, epoch) = new_part().ok_or(Error::HandleTableFull { parts: MAX_TAGS })?;
        self.add_part(Part {
            tag,
            stamp: self.codec.epoch_stamp(epoch),
            entries: Vec::new(),
            free_head: NO_NEXT,
            live: 0,
            in_avail: false,
        });
        Ok(())
    }

    fn add_part(&mut self, mut part: Part) {
        let index = self.parts.len() as u32;
        let tag = usize::from(part.tag);
        if self.tag_map.len() <= tag {
            self.tag_map.resize(tag + 1, NO_PART);
        }
        self.tag_map[tag] = index;
        part.in_avail = part.has_room();
        if part.in_avail {
            self.avail.push(index);
        }
        self.parts.push(part);
        // Room in `avail` for every part, so that `remove` (which may list a
        // part again) never grows it: the table's size changes only here and
        // in `insert`, where `bytes` follows it.
        self.avail
            .reserve_exact(self.parts.len().saturating_sub(self.avail.len()));
        self.bytes = self.recount_bytes();
    }

    /// Stores `at` in a free slot and returns its handle. `prepare` must
    /// have succeeded since the last insert.
    #[inline]
    pub(crate) fn insert(&mut self, at: Location) -> Handle {
        let part_index = *self
            .avail
            .last()
            .expect("prepare() guarantees a part with room");
        let part = &mut self.parts[part_index as usize];
        let (index, generation) = if part.free_head != NO_NEXT {
            let index = part.free_head;
            let entry = part.entries[index as usize];
            part.free_head = Codec::free_next(entry);
            (index, Codec::free_generation(entry))
        } else {
            if part.entries.len() == part.entries.capacity() {
                // Double up to 4096 entries, then grow 4096 at a time, so
                // a part's unused capacity stays under 32 KiB.
                let cap = part.entries.capacity();
                let grow = cap.clamp(16, GROWTH_STEP).min(PART_ENTRIES - cap);
                part.entries.reserve_exact(grow);
                self.bytes += (part.entries.capacity() - cap) * 8;
            }
            part.entries.push(0);
            ((part.entries.len() - 1) as u32, 0)
        };
        part.entries[index as usize] = self.codec.live(generation, at);
        part.live += 1;
        if !part.has_room() {
            part.in_avail = false;
            self.avail.pop();
        }
        self.live += 1;
        Handle::new((u32::from(part.tag) << 16) | index, part.stamp | generation)
    }

    #[inline]
    fn find(&self, handle: Handle) -> Result<(usize, usize, u64), Error> {
        let slot = handle.slot();
        let tag = (slot >> 16) as usize;
        let index = (slot & 0xFFFF) as usize;
        let part = *self
            .tag_map
            .get(tag)
            .ok_or(Error::ForeignHandle { handle })?;
        if part == NO_PART {
            return Err(Error::ForeignHandle { handle });
        }
        let stamp = self.parts[part as usize].stamp;
        let entry = *self.parts[part as usize]
            .entries
            .get(index)
            .ok_or(Error::ForeignHandle { handle })?;
        // One compare checks the part's epoch and the slot's generation.
        if entry & LIVE == 0 || (stamp | self.codec.live_generation(entry)) != handle.stamp() {
            return Err(if self.codec.epochs_differ(stamp, handle.stamp()) {
                Error::ForeignHandle { handle }
            } else {
                Error::StaleHandle { handle }
            });
        }
        Ok((part as usize, index, entry))
    }

    /// Where the object of `handle` is.
    #[inline]
    pub(crate) fn lookup(&self, handle: Handle) -> Result<Location, Error> {
        self.find(handle)
            .map(|(_, _, entry)| self.codec.location(entry))
    }

    /// Frees the slot of `handle`, returning where its object was.
    #[inline]
    pub(crate) fn remove(&mut self, handle: Handle) -> Result<Location, Error> {
        let (part_index, index, entry) = self.find(handle)?;
        let at = self.codec.location(entry);
        let next_generation = self.codec.bump(self.codec.live_generation(entry));
        let part = &mut self.parts[part_index];
        part.entries[index] = Codec::free(part.free_head, next_generation);
        part.free_head = index as u32;
        part.live -= 1;
        if !part.in_avail {
            part.in_avail = true;
            debug_assert!(
                self.avail.len() < self.avail.capacity(),
                "add_part made room"
            );
            self.avail.push(part_index as u32);
        }
        self.live -= 1;
        Ok(at)
    }

    /// Hints the CPU to fetch the entry of `slot` into the cache: compaction
    /// visits hundreds of scattered entries per segment.
    #[inline]
    pub(crate) fn prefetch(&self, slot: u32) {
        if let Some(&part) = self.tag_map.get((slot >> 16) as usize)
            && let Some(part) = self.parts.get(part as usize)
            && let Some(entry) = part.entries.get((slot & 0xFFFF) as usize)
        {
            crate::segment::prefetch(entry);
        }
    }

    /// Compaction's walk over a segment's slot list: from `slots[start]`
    /// on, calls `visit(slot, entry, location)` for every slot whose entry
    /// is live with its object in `segment` (skipping freed slots and
    /// objects that moved elsewhere). `visit` moves the object and rewrites
    /// the entry, or returns false to stop before moving it. Returns the
    /// index of the first slot not dealt with (`slots.len()` when done).
    ///
    /// One lookup per slot: the part of the previous slot is remembered
    /// (a segment's slots mostly share parts), and entries are prefetched
    /// `PREFETCH_DISTANCE` slots ahead, since they are scattered.
    #[inline]
    pub(crate) fn visit_live_in_segment(
        &mut self,
        slots: &[u32],
        start: usize,
        segment: u32,
        mut visit: impl FnMut(u32, &mut u64, Location) -> bool,
    ) -> usize {
        let codec = self.codec;
        for &slot in slots.iter().skip(start).take(PREFETCH_DISTANCE) {
            self.prefetch(slot);
        }
        let (mut cached_tag, mut cached_part) = (u32::MAX, 0usize);
        for (i, &slot) in slots.iter().enumerate().skip(start) {
            if let Some(&ahead) = slots.get(i + PREFETCH_DISTANCE) {
                self.prefetch(ahead);
            }
            let tag = slot >> 16;
            if tag != cached_tag {
                match self.tag_map.get(tag as usize) {
                    Some(&part) if part != NO_PART => {
                        (cached_tag, cached_part) = (tag, part as usize)
                    }
                    _ => continue,
                }
            }
            let Some(entry) = self.parts[cached_part]
                .entries
                .get_mut((slot & 0xFFFF) as usize)
            else {
                continue;
            };
            if *entry & LIVE == 0 {
                continue;
            }
            let at = codec.location(*entry);
            if at.segment == segment && !visit(slot, entry, at) {
                return i;
            }
        }
        slots.len()
    }

    /// The location of the object in `slot`, or `None` if the slot does
    /// not exist here or is free.
    pub(crate) fn live_location(&self, slot: u32) -> Option<Location> {
        let part = *self.tag_map.get((slot >> 16) as usize)?;
        let entry = *self
            .parts
            .get(part as usize)?
            .entries
            .get((slot & 0xFFFF) as usize)?;
        (entry & LIVE != 0).then(|| self.codec.location(entry))
    }

    /// The entry packing of this table, for `Codec::relocated`.
    #[inline]
    pub(crate) fn codec(&self) -> Codec {
        self.codec
    }

    /// Adopts every part of `other` with its tag and epoch (merge): no entry
    /// changes.
    pub(crate) fn absorb(&mut self, other: HandleTable) {
        self.live += other.live;
        for part in other.parts {
            self.add_part(part);
        }
    }

    /// Every live entry as (slot, location), for invariant checks.
    pub(crate) fn live_entries(&self) -> impl Iterator<Item = (u32, Location)> + '_ {
        self.parts.iter().flat_map(move |part| {
            part.entries
                .iter()
                .enumerate()
                .filter(|&(_, &entry)| entry & LIVE != 0)
                .map(move |(index, &entry)| {
                    let slot = (u32::from(part.tag) << 16) | index as u32;
                    (slot, self.codec.location(entry))
                })
        })
    }

    /// Checks the free lists and counters against a recount.
    pub(crate) fn check(&self) -> Result<(), String> {
        let mut live = 0;
        for (i, part) in self.parts.iter().enumerate() {
            if self.tag_map.get(usize::from(part.tag)) != Some(&(i as u32)) {
                return Err(format!("tag {} of part {i} is not mapped to it", part.tag));
            }
            let part_live = part.entries.iter().filter(|&&e| e & LIVE != 0).count();
            let mut free = 0;
            let mut next = part.free_head;
            while next != NO_NEXT {
                let entry = part.entries[next as usize];
                if entry & LIVE != 0 {
                    return Err(format!("free list of part {i} reaches live slot {next}"));
                }
                free += 1;
                if free > part.entries.len() {
                    return Err(format!("free list of part {i} has a cycle"));
                }
                next = Codec::free_next(entry);
            }
            if part_live != part.live as usize || part_live + free != part.entries.len() {
                return Err(format!(
                    "part {i}: {part_live} live + {free} free != {} entries (counted live {})",
                    part.entries.len(),
                    part.live
                ));
            }
            if part.in_avail != self.avail.contains(&(i as u32)) || part.in_avail != part.has_room()
            {
                return Err(format!("part {i}: availability list is wrong"));
            }
            live += part_live;
        }
        if self.bytes != self.recount_bytes() {
            return Err(format!(
                "table bytes {} != recount {}",
                self.bytes,
                self.recount_bytes()
            ));
        }
        if live != self.live {
            return Err(format!(
                "table counts {} live entries, recount {live}",
                self.live
            ));
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::PoolConfig;

    fn table() -> HandleTable {
        HandleTable::new(&Geometry::new(&PoolConfig::default()).unwrap())
    }

    #[test]
    fn handle_is_eight_bytes_with_niche() {
        assert_eq!(size_of::<Handle>(), 8);
        assert_eq!(size_of::<Option<Handle>>(), 8);
        let h = Handle::new(0x7FFF_FFFF, 5);
        assert_eq!(Handle::from_raw(h.to_raw()), Some(h));
        assert_eq!(Handle::from_raw(5), None);
    }

    #[test]
    fn entries_round_trip_and_generations_detect_reuse() {
        let mut t = table();
        t.prepare(|| Some((3, 77))).unwrap();
        let at = Location {
            segment: 8191,
            offset: (128 << 10) - 13107,
            size: 13107,
            align: 4096,
        };
        let h = t.insert(at);
        assert_eq!(t.lookup(h), Ok(at));
        assert_eq!(t.remove(h), Ok(at));
        assert_eq!(t.lookup(h), Err(Error::StaleHandle { handle: h }));
        t.prepare(|| panic!("part has room")).unwrap();
        let h2 = t.insert(at);
        assert_eq!(h.slot(), h2.slot(), "slot reused");
        assert_ne!(h, h2);
        assert_eq!(t.lookup(h), Err(Error::StaleHandle { handle: h }));
        assert_eq!(t.remove(h), Err(Error::StaleHandle { handle: h }));
        t.check().unwrap();
    }

    #[test]
    fn foreign_handles_are_detected_and_absorb_keeps_handles() {
        let mut a = table();
        let mut b = table();
        a.prepare(|| Some((1, 10))).unwrap();
        b.prepare(|| Some((2, 11))).unwrap();
        let at = Location {
            segment: 1,
            offset: 63,
            size: 10,
            align: 8,
        };
        let ha = a.insert(at);
        let hb = b.insert(at);
        assert_eq!(a.lookup(hb), Err(Error::ForeignHandle { handle: hb }));
        a.absorb(b);
        assert_eq!(a.lookup(hb), Ok(at));
        assert_eq!(a.lookup(ha), Ok(at));
        assert_eq!(a.live(), 2);
        a.check().unwrap();
        assert_eq!(a.tags().collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn epochs_tell_apart_parts_that_share_a_tag() {
        let at = Location {
            segment: 2,
            offset: 64,
            size: 24,
            align: 8,
        };
        // Two tables whose parts have the same tag but different epochs
        // (a recycled tag, or another pool): same slot, same generation.
        let mut old = table();
        let mut new = table();
        old.prepare(|| Some((5, 1000))).unwrap();
        new.prepare(|| Some((5, 1001))).unwrap();
        let h_old = old.insert(at);
        let h_new = new.insert(at);
        assert_eq!(h_old.slot(), h_new.slot());
        assert_ne!(h_old, h_new);
        assert_eq!(new.lookup(h_new), Ok(at));
        let foreign = Err(Error::ForeignHandle { handle: h_old });
        assert_eq!(new.lookup(h_old), foreign);
        assert_eq!(new.remove(h_old), foreign, "frees nothing");
        assert_eq!(new.live(), 1);
        // A freed slot: the epoch mismatch still says foreign, the
        // generation mismatch of the right epoch says stale.
        assert_eq!(new.remove(h_new), Ok(at));
        assert_eq!(new.lookup(h_old), foreign);
        assert_eq!(new.lookup(h_new), Err(Error::StaleHandle { handle: h_new }));
        // Only the epoch's low bits are carried: epochs 2^epoch-bits apart
        // are indistinguishable (the documented residual case).
        let geometry = Geometry::new(&PoolConfig::default()).unwrap();
        let epoch_bits = 32 - geometry.generation_bits;
        let mut wrapped = table();
        wrapped
            .prepare(|| Some((5, 1000 + (1 << epoch_bits))))
            .unwrap();
        assert_eq!(wrapped.insert(at), h_old);
        // Merge adopts parts with their epochs: handles keep resolving.
        let mut merged = table();
        merged.prepare(|| Some((6, 3))).unwrap();
        let h_merged = merged.insert(at);
        merged.absorb(old);
        assert_eq!(merged.lookup(h_old), Ok(at));
        assert_eq!(merged.lookup(h_merged), Ok(at));
        merged.check().unwrap();
    }

    /// The geometry of a 1 TiB pool of 128 KiB segments.
    fn tebibyte() -> Geometry {
        Geometry::new(&PoolConfig::default().with_memory_limit(1 << 40)).unwrap()
    }

    #[test]
    fn tebibyte_entries_round_trip_at_the_extremes() {
        let geometry = tebibyte();
        assert_eq!(geometry.header_bytes, 2);
        let codec = Codec::new(&geometry);
        let top = (1u32 << geometry.generation_bits) - 1;
        for (segment, offset, align, generation) in [
            ((1 << 23) - 1, (128 << 10) - 1, 1, top),
            ((1 << 23) - 1, (128 << 10) - 4096, 4096, 0),
            (0, 0, 1, top),
            (0, 2, 2, 1),
        ] {
            // No size field: sizes are in the objects' headers.
            let at = Location {
                segment,
                offset,
                size: SIZE_IN_HEADER,
                align,
            };
            let entry = codec.live(generation, at);
            assert_ne!(entry & LIVE, 0);
            assert_eq!(codec.location(entry), at);
            assert_eq!(codec.live_generation(entry), generation);
            let moved = codec.relocated(entry, segment ^ 1, offset & !1);
            let expected = Location {
                segment: segment ^ 1,
                offset: offset & !1,
                ..at
            };
            assert_eq!(codec.location(moved), expected);
            assert_eq!(codec.live_generation(moved), generation);
        }
        // A size handed to the codec is not stored: it cannot spill into
        // the other fields.
        let at = Location {
            segment: 5,
            offset: 7,
            size: 13107,
            align: 1,
        };
        assert_eq!(
            codec.location(codec.live(3, at)),
            Location {
                size: SIZE_IN_HEADER,
                ..at
            }
        );
        // Through a table, with the handle's stamp.
        let mut t = HandleTable::new(&geometry);
        t.prepare(|| Some(((MAX_TAGS - 1) as u16, u32::MAX)))
            .unwrap();
        let last = Location {
            segment: (1 << 23) - 1,
            offset: (128 << 10) - 13107,
            size: SIZE_IN_HEADER,
            align: 1,
        };
        let h = t.insert(last);
        assert_eq!(t.lookup(h), Ok(last));
        assert_eq!(t.remove(h), Ok(last));
        assert_eq!(t.lookup(h), Err(Error::StaleHandle { handle: h }));
        t.check().unwrap();
    }

    /// Frees and reallocates one slot `2^generation-bits` times: the stale
    /// handle is detected every time but the last, when the generation has
    /// wrapped to its value again (the documented residual case).
    fn generation_wraps_after_two_to_the_bits_reuses(geometry: &Geometry) {
        let mut t = HandleTable::new(geometry);
        t.prepare(|| Some((1, 9))).unwrap();
        let at = Location {
            segment: 3,
            offset: 64,
            size: if geometry.header_bytes == 0 {
                24
            } else {
                SIZE_IN_HEADER
            },
            align: 8,
        };
        let first = t.insert(at);
        let mut current = first;
        let reuses = 1u32 << geometry.generation_bits;
        for reuse in 1..=reuses {
            assert_eq!(t.remove(current), Ok(at));
            current = t.insert(at);
            assert_eq!(current.slot(), first.slot(), "the freed slot is reused");
            if reuse < reuses {
                assert_eq!(t.lookup(first), Err(Error::StaleHandle { handle: first }));
            }
        }
        assert_eq!(current, first, "generation wrapped after {reuses} reuses");
        assert_eq!(t.lookup(first), Ok(at));
        t.check().unwrap();
    }

    #[test]
    fn stale_handles_are_detected_until_the_generation_wraps() {
        let default = Geometry::new(&PoolConfig::default()).unwrap();
        assert_eq!(default.generation_bits, 15);
        generation_wraps_after_two_to_the_bits_reuses(&default);
        let large = tebibyte();
        assert_eq!(large.generation_bits, 16);
        generation_wraps_after_two_to_the_bits_reuses(&large);
    }

    #[test]
    fn a_full_part_asks_for_a_new_tag() {
        let mut t = table();
        let mut next_tag = 0u16;
        let at = Location {
            segment: 0,
            offset: 0,
            size: 0,
            align: 4,
        };
        for _ in 0..PART_ENTRIES + 1 {
            t.prepare(|| {
                next_tag += 1;
                Some((next_tag, u32::from(next_tag)))
            })
            .unwrap();
            t.insert(at);
        }
        assert_eq!(next_tag, 2);
        t.check().unwrap();
        assert!(t.bytes() >= (PART_ENTRIES + 1) * 8);
        let mut full = table();
        assert_eq!(
            full.prepare(|| None),
            Err(Error::HandleTableFull { parts: MAX_TAGS })
        );
    }
}
