//! Index blocks kept in memory once read, as ScyllaDB keeps partition
//! index pages in its index cache: a warm point read finds its partition's
//! index entry without reading, checksumming or walking an Index block.
//!
//! Each open sstable has one slot per Index block (per Summary entry),
//! filled the first time a lookup reads that block and then read without
//! a lock. What the slots hold is counted against one process-wide budget
//! ([`set_index_cache_budget`], [`DEFAULT_INDEX_CACHE_BUDGET`] by
//! default; [`index_cache_bytes`] is what is held now): a block that
//! would go over it is used for its lookup and not kept. Nothing is
//! evicted: a block stays until its sstable is closed (the last clone of
//! the [`Sstable`](crate::Sstable) dropped), which gives its bytes back;
//! compaction replacing sstables is what turns the cache over.

use std::cmp::Ordering as KeyOrder;

use crate::decoder::{Decoder, Origin};
use crate::error::Error;
use mutation::DecoratedKey;

use crate::index::{IndexEntry, decode_rest, decode_rest_of, peek_key, skip_rest};
use crate::sync::{AtomicU64, OnceLock, Ordering};

/// Bytes of Index blocks the whole process keeps in memory when
/// [`set_index_cache_budget`] was never called: 64 MiB, the Index of about
/// 16 GiB of 8 KiB partitions (an Index entry of such a partition takes
/// about 30 bytes).
pub const DEFAULT_INDEX_CACHE_BUDGET: u64 = 64 << 20;

static BUDGET: AtomicU64 = AtomicU64::new(DEFAULT_INDEX_CACHE_BUDGET);
static USED: AtomicU64 = AtomicU64::new(0);

/// Sets how many bytes of Index blocks the process keeps in memory, over
/// all open sstables (0: none are kept, every lookup reads its Index
/// block). Blocks held beyond a lowered budget stay until their sstables
/// close; no block is kept while the cache holds more than the budget.
pub fn set_index_cache_budget(bytes: u64) {
    // Relaxed: a limit read at each admission, ordering nothing.
    BUDGET.store(bytes, Ordering::Relaxed);
}

/// The budget of [`set_index_cache_budget`].
pub fn index_cache_budget() -> u64 {
    BUDGET.load(Ordering::Relaxed)
}

/// Bytes of Index blocks held in memory now, by every open sstable.
pub fn index_cache_bytes() -> u64 {
    USED.load(Ordering::Relaxed)
}

/// Takes `bytes` of the budget, if they fit.
fn reserve(bytes: u64) -> bool {
    let budget = BUDGET.load(Ordering::Relaxed);
    USED.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
        used.checked_add(bytes).filter(|&n| n <= budget)
    })
    .is_ok()
}

fn release(bytes: u64) {
    USED.fetch_sub(bytes, Ordering::Relaxed);
}

/// One Index block's raw payload and where each of its entries starts, so
/// a lookup binary-searches the entries' keys and decodes only its own.
#[derive(Debug)]
pub(crate) struct IndexBlock {
    raw: Vec<u8>,
    /// File offset of the payload's first byte (for errors).
    base: u64,
    /// Where each entry starts in `raw`, in key order.
    starts: Vec<u32>,
}

impl IndexBlock {
    /// Walks the entries of `raw` (the checked payload of the Index block
    /// whose payload starts at file offset `base`), checking that they
    /// decode and that their keys strictly increase.
    pub(crate) fn new(raw: Vec<u8>, base: u64, origin: Origin<'_>) -> Result<Self, Error> {
        let mut starts = Vec::new();
        {
            let mut d = Decoder::new(&raw, base, origin);
            let mut prev: Option<(i64, &[u8])> = None;
            while !d.is_empty() {
                let at = d.position();
                let (t, k) = peek_key(&mut d)?;
                if prev.is_some_and(|p| p >= (t, k)) {
                    return Err(d.corrupt("index entries are not in increasing ring order"));
                }
                prev = Some((t, k));
                skip_rest(&mut d)?;
                starts.push(u32::try_from(at).map_err(|_| d.corrupt("index block too large"))?);
            }
        }
        starts.shrink_to_fit();
        Ok(IndexBlock { raw, base, starts })
    }

    /// Bytes it holds, as counted against the budget.
    fn bytes(&self) -> u64 {
        (self.raw.capacity() + 4 * self.starts.capacity() + std::mem::size_of::<Self>()) as u64
    }

    /// A decoder at entry `i`.
    fn at<'a>(&'a self, i: usize, origin: Origin<'a>) -> Result<Decoder<'a>, Error> {
        let mut d = Decoder::new(&self.raw, self.base, origin);
        d.seek(self.starts[i] as usize)?;
        Ok(d)
    }

    /// The entry of `key`, if the block holds it.
    pub(crate) fn find(
        &self,
        key: &DecoratedKey,
        origin: Origin<'_>,
    ) -> Result<Option<IndexEntry>, Error> {
        let (token, bytes) = (key.token().value(), key.key().as_bytes());
        let (mut lo, mut hi) = (0, self.starts.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let mut d = self.at(mid, origin)?;
            let (t, k) = peek_key(&mut d)?;
            match (t, k).cmp(&(token, bytes)) {
                KeyOrder::Less => lo = mid + 1,
                KeyOrder::Greater => hi = mid,
                KeyOrder::Equal => return decode_rest_of(&mut d, key).map(Some),
            }
        }
        Ok(None)
    }

    /// The first entry for which `before` is false, if any.
    pub(crate) fn first_not(
        &self,
        origin: Origin<'_>,
        mut before: impl FnMut(i64, &[u8]) -> bool,
    ) -> Result<Option<IndexEntry>, Error> {
        for i in 0..self.starts.len() {
            let mut d = self.at(i, origin)?;
            let (t, k) = peek_key(&mut d)?;
            if !before(t, k) {
                return decode_rest(&mut d, t, k).map(Some);
            }
        }
        Ok(None)
    }
}

/// An Index block from the cache, or read for one lookup only.
#[derive(Debug)]
pub(crate) enum BlockRef<'a> {
    /// Held by the sstable's cache.
    Cached(&'a IndexBlock),
    /// Not admitted (the budget is spent): dropped after the lookup.
    Owned(IndexBlock),
}

impl std::ops::Deref for BlockRef<'_> {
    type Target = IndexBlock;

    fn deref(&self) -> &IndexBlock {
        match self {
            BlockRef::Cached(b) => b,
            BlockRef::Owned(b) => b,
        }
    }
}

/// One open sstable's Index blocks held in memory, one slot per block.
#[derive(Debug, Default)]
pub(crate) struct IndexCache {
    slots: Vec<OnceLock<IndexBlock>>,
    /// Bytes its slots hold, given back to the budget when it is dropped.
    held: AtomicU64,
}

impl IndexCache {
    /// A cache for an Index of `blocks` blocks, holding none yet.
    pub(crate) fn new(blocks: usize) -> Self {
        IndexCache {
            slots: (0..blocks).map(|_| OnceLock::new()).collect(),
            held: AtomicU64::new(0),
        }
    }

    /// Block `i`, from the cache, or from `load` (then kept if the budget
    /// allows).
    pub(crate) fn get_or_load(
        &self,
        i: usize,
        load: impl FnOnce() -> Result<IndexBlock, Error>,
    ) -> Result<BlockRef<'_>, Error> {
        let Some(slot) = self.slots.get(i) else {
            return load().map(BlockRef::Owned);
        };
        if let Some(b) = slot.get() {
            return Ok(BlockRef::Cached(b));
        }
        let block = load()?;
        let bytes = block.bytes();
        if !reserve(bytes) {
            return Ok(BlockRef::Owned(block));
        }
        let mut kept = false;
        let cached = slot.get_or_init(|| {
            kept = true;
            block
        });
        if kept {
            self.held.fetch_add(bytes, Ordering::Relaxed);
        } else {
            // Another reader filled the slot first: its block is kept.
            release(bytes);
        }
        Ok(BlockRef::Cached(cached))
    }
}

impl Drop for IndexCache {
    fn drop(&mut self) {
        release(*self.held.get_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Component;

    fn entries(n: u32) -> Vec<IndexEntry> {
        let mut v: Vec<IndexEntry> = (0..n)
            .map(|i| IndexEntry {
                key: DecoratedKey::from_bytes(format!("k{i}")).unwrap(),
                data_block: 8 + u64::from(i) * 100,
                in_block: u64::from(i % 3),
                size: 50,
                cblocks: Vec::new(),
            })
            .collect();
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v
    }

    /// Every entry of a block is found by binary search, keys between
    /// and around them are not, and the first entry not before a bound
    /// is the right one; a block whose keys do not increase is corrupt.
    #[test]
    fn a_block_finds_each_of_its_entries_and_refuses_disorder() {
        let p = std::path::PathBuf::from("i");
        let origin = Origin {
            file: &p,
            component: Component::Index,
        };
        for n in [1, 2, 7, 64] {
            let es = entries(n);
            let mut raw = Vec::new();
            es.iter().for_each(|e| e.encode(&mut raw));
            let block = IndexBlock::new(raw.clone(), 17, origin).unwrap();
            for (i, e) in es.iter().enumerate() {
                let (t, k) = (e.key.token().value(), e.key.key().as_bytes());
                assert_eq!(block.find(&e.key, origin).unwrap().as_ref(), Some(e));
                // A key of other bytes: absent.
                let mut other = k.to_vec();
                other.push(b'x');
                let other = DecoratedKey::from_bytes(other).unwrap();
                assert_eq!(block.find(&other, origin).unwrap(), None);
                let first = block.first_not(origin, |bt, bk| (bt, bk) < (t, k)).unwrap();
                assert_eq!(first.as_ref(), Some(&es[i]));
            }
            if n > 1 {
                let mut swapped = Vec::new();
                es[1].encode(&mut swapped);
                es[0].encode(&mut swapped);
                let e = IndexBlock::new(swapped, 17, origin)
                    .unwrap_err()
                    .to_string();
                assert!(e.contains("increasing ring order"), "{e}");
            }
        }
    }
}
