//! The cache's reader: partitions from the cache where it is continuous,
//! from the underlying source elsewhere (populating the cache as it goes).

use std::collections::VecDeque;
use std::fmt;

use mutation::{
    ClusteringRange, DecoratedKey, Fragment, FragmentReader, FragmentsReader, Mutation,
    MutationFragments, PartitionRange, to_mutations,
};

use crate::cache::{Population, Shared};
use crate::index::{CacheId, Index};
use crate::point::{AFTER, BEFORE, Point, Probe, range_between};
use crate::slice::{is_full, next_partition, slice_covers, slice_fragments, slice_hull};
use crate::stats::Counters;
use crate::stored::Pieces;
use crate::sync::Arc;

/// `m` restricted to `slice`, as a mutation.
pub(crate) fn restrict(m: Mutation, slice: &ClusteringRange) -> Mutation {
    if is_full(slice) {
        return m;
    }
    let key = m.key().clone();
    let mut r = FragmentsReader::new(slice_fragments(m, slice));
    to_mutations(&mut r)
        .ok()
        .and_then(|mut v| v.pop())
        .unwrap_or_else(|| Mutation::new(key))
}

/// The underlying reader a scan is using for a discontinuous stretch.
struct Under {
    reader: Box<dyn FragmentReader + Send>,
    /// The phase it was opened in.
    phase: u64,
    /// Where the next partition it yields may start; it is reused only
    /// while the scan's cursor is still here.
    at: Point,
    /// From where the stretch it has shown so far is complete (populated
    /// entry by entry), if it is.
    continuous_from: Option<Point>,
}

/// What the next step of a scan reads.
enum Step {
    Done,
    /// A cached partition.
    Hit(DecoratedKey, Pieces),
    /// A cached partition that lacks rows of the slice: re-read it with
    /// this wider slice (the hull of what it holds and what is asked, so
    /// the rows it holds stay cached).
    Refetch(DecoratedKey, ClusteringRange, u64),
    /// A discontinuous stretch: read the underlying source (phase).
    Gap(u64),
}

/// Where the next partition between `start` and `end` comes from, for a
/// reader with `slice` (marking a hit's entry most recently used).
fn step_in(
    idx: &mut Index,
    c: CacheId,
    start: Probe<'_>,
    end: Probe<'_>,
    slice: &ClusteringRange,
) -> Step {
    // A cursor is never a key's own point, so `start == end` holds no
    // key either.
    if start.as_dyn() >= end.as_dyn() {
        return Step::Done;
    }
    let next = idx.first_in(c, start, end);
    let cache = idx.cache(c);
    let continuous = match next {
        None => cache.continuity.covers(start, end),
        Some(i) => {
            let before = Probe::key(&idx.entry(i).key, BEFORE);
            start.as_dyn() >= before.as_dyn() || cache.continuity.covers(start, before)
        }
    };
    let phase = cache.phase;
    if !continuous {
        return Step::Gap(phase);
    }
    let Some(i) = next else {
        return Step::Done;
    };
    let e = idx.entry(i);
    if !slice_covers(&e.covered, slice) {
        let wider = slice_hull(&e.covered, slice).unwrap_or_else(|| slice.clone());
        return Step::Refetch(e.key.clone(), wider, phase);
    }
    let (key, pieces) = (e.key.clone(), Pieces::clone(&e.pieces));
    idx.touch(i);
    Step::Hit(key, pieces)
}

/// A [`FragmentReader`] over the cache; see
/// [`RowCache::make_reader`](crate::RowCache::make_reader).
///
/// It holds no lock between calls. Each partition comes whole from one
/// place (the cache, or the underlying source), so a partition evicted or
/// updated between two calls is never seen half old, half new; a partition
/// evicted between the index lookup and the read is read from the
/// underlying source instead.
pub struct CacheReader {
    shared: Arc<Shared>,
    end: Point,
    slice: ClusteringRange,
    /// Where the next partition may start (a range start, or just after
    /// the last partition produced).
    cursor: Point,
    pending: Pending,
    under: Option<Under>,
    done: bool,
    /// The first step, decided by `new_opt` under its one index lock.
    first: Option<Step>,
}

impl fmt::Debug for CacheReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheReader")
            .field("cursor", &self.cursor)
            .field("end", &self.end)
            .field("slice", &self.slice)
            .field("done", &self.done)
            .finish()
    }
}

impl CacheReader {
    pub(crate) fn new(shared: Arc<Shared>, range: PartitionRange, slice: ClusteringRange) -> Self {
        CacheReader {
            shared,
            cursor: Point::start(range.start()),
            end: Point::end(range.end()),
            slice,
            pending: Pending::Nothing,
            under: None,
            done: false,
            first: None,
        }
    }

    /// [`RowCache::make_reader_opt`](crate::RowCache::make_reader_opt):
    /// one look at the index decides both whether the range is known to
    /// hold nothing (`None`, allocating nothing) and where the reader's
    /// first partition comes from, so a single-partition hit takes the
    /// index lock once. The decision may be stale by the time the reader
    /// acts on it, as any step is: a hit whose partition was evicted
    /// meanwhile reads it through, a gap carries its phase.
    pub(crate) fn new_opt(
        shared: &Arc<Shared>,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Option<Self> {
        let first = {
            let mut idx = shared.index().lock();
            step_in(
                &mut idx,
                shared.id,
                Probe::start(range.start()),
                Probe::end(range.end()),
                &slice,
            )
        };
        if let Step::Done = first {
            Counters::add(&shared.counters.hits, 1);
            return None;
        }
        let mut reader = CacheReader::new(Arc::clone(shared), range, slice);
        reader.first = Some(first);
        Some(reader)
    }

    /// Decides where the next partition comes from.
    fn step(&mut self) -> Step {
        if let Some(first) = self.first.take() {
            return first;
        }
        let c = self.shared.id;
        let mut idx = self.shared.index().lock();
        step_in(
            &mut idx,
            c,
            Probe::of(&self.cursor),
            Probe::of(&self.end),
            &self.slice,
        )
    }

    /// Produces the next partition into `pending`, or sets `done`.
    fn fill(&mut self) -> Result<(), crate::Error> {
        match self.step() {
            Step::Done => {
                self.under = None;
                self.done = true;
            }
            Step::Hit(key, pieces) => {
                self.under = None;
                match self.shared.load(&key, &pieces, &self.slice)? {
                    Some(m) => {
                        Counters::add(&self.shared.counters.hits, 1);
                        self.emit(m);
                    }
                    // Evicted since the lookup: read it through.
                    None => {
                        let phase = self.shared.phase();
                        self.read_one(key, self.slice.clone(), phase, true)?;
                    }
                }
            }
            Step::Refetch(key, wider, phase) => {
                self.under = None;
                self.read_one(key, wider, phase, false)?;
            }
            Step::Gap(phase) => self.read_gap(phase)?,
        }
        Ok(())
    }

    /// Reads one partition from the underlying source with `slice`, emits
    /// it restricted to the reader's slice, populates the cache with it.
    fn read_one(
        &mut self,
        key: DecoratedKey,
        slice: ClusteringRange,
        phase: u64,
        neighbourhood: bool,
    ) -> Result<(), crate::Error> {
        Counters::add(&self.shared.counters.misses, 1);
        let range = PartitionRange::single_key(key.clone());
        let mut r = self
            .shared
            .source
            .make_reader(range, slice.clone())
            .map_err(crate::Error::Source)?;
        let got = next_partition(&mut *r).map_err(crate::Error::Source)?;
        let continuous = neighbourhood.then(|| {
            (
                Point::Key(key.clone(), BEFORE),
                Point::Key(key.clone(), AFTER),
            )
        });
        self.shared.populate(Population {
            partition: got.as_ref(),
            covered: &slice,
            continuous,
            phase,
        });
        match got {
            Some(m) => self.emit(m),
            // Gone from the source (it cannot shrink, but a bad source
            // might): skip it.
            None => self.cursor = Point::Key(key, AFTER),
        }
        Ok(())
    }

    /// Reads the next partition of a discontinuous stretch.
    fn read_gap(&mut self, phase: u64) -> Result<(), crate::Error> {
        Counters::add(&self.shared.counters.misses, 1);
        let reuse = self.under.as_ref().is_some_and(|u| u.at == self.cursor);
        if !reuse {
            let Some(range) = range_between(&self.cursor, &self.end) else {
                self.done = true;
                return Ok(());
            };
            let reader = self
                .shared
                .source
                .make_reader(range, self.slice.clone())
                .map_err(crate::Error::Source)?;
            self.under = Some(Under {
                reader,
                phase,
                at: self.cursor.clone(),
                continuous_from: Some(self.cursor.clone()),
            });
        }
        let under = self.under.as_mut().expect("just set");
        let got = next_partition(&mut *under.reader).map_err(crate::Error::Source)?;
        let from = under.continuous_from.take();
        let phase = under.phase;
        match got {
            Some(m) => {
                let after = Point::Key(m.key().clone(), AFTER);
                self.shared.populate(Population {
                    partition: Some(&m),
                    covered: &self.slice,
                    continuous: from.map(|s| (s, after.clone())),
                    phase,
                });
                let under = self.under.as_mut().expect("still there");
                under.at = after.clone();
                under.continuous_from = Some(after);
                self.emit(m);
            }
            None => {
                if let Some(s) = from {
                    self.shared.populate(Population {
                        partition: None,
                        covered: &self.slice,
                        continuous: Some((s, self.end.clone())),
                        phase,
                    });
                }
                self.under = None;
                self.done = true;
            }
        }
        Ok(())
    }

    fn emit(&mut self, m: Mutation) {
        self.cursor = Point::Key(m.key().clone(), AFTER);
        self.pending = Pending::Ready(m);
    }

    /// A produced partition as it is streamed with the reader's slice.
    fn stream(&self, m: Mutation) -> Pending {
        if is_full(&self.slice) {
            Pending::Whole(m.into_fragments())
        } else if m.range_tombstones().is_empty() {
            Pending::Rows(m.into_fragments())
        } else {
            Pending::Built(slice_fragments(m, &self.slice))
        }
    }

    /// The next fragment of the partition being produced.
    fn next_pending(&mut self) -> Option<Fragment> {
        if let Pending::Ready(_) = self.pending {
            let Pending::Ready(m) = std::mem::replace(&mut self.pending, Pending::Nothing) else {
                unreachable!("matched just above")
            };
            self.pending = self.stream(m);
        }
        match &mut self.pending {
            Pending::Nothing | Pending::Ready(_) => None,
            Pending::Whole(fragments) => fragments.next(),
            Pending::Rows(fragments) => loop {
                match fragments.next()? {
                    Fragment::ClusteringRow { ref key, .. } if !self.slice.contains(key) => {}
                    f => return Some(f),
                }
            },
            Pending::Built(fragments) => fragments.pop_front(),
        }
    }
}

/// The rest of the partition a [`CacheReader`] is producing. A partition
/// asked for whole (`next_mutation`) is handed over as it was loaded; one
/// read whole is streamed from its mutation as it is (no copy into a
/// queue); a sliced one skips the rows outside the slice on the way, and
/// only one with range tombstones to clip is built ahead.
enum Pending {
    Nothing,
    /// Produced, not yet streamed: [`FragmentReader::next_mutation`] hands
    /// it over as it is, [`FragmentReader::next`] starts streaming it.
    Ready(Mutation),
    /// The reader's slice is the whole partition.
    Whole(MutationFragments),
    /// No range tombstones: the rows outside the slice are skipped.
    Rows(MutationFragments),
    /// Range tombstones clipped to the slice (`slice_fragments`).
    Built(VecDeque<Fragment>),
}

impl FragmentReader for CacheReader {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        loop {
            if let Some(f) = self.next_pending() {
                return Ok(Some(f));
            }
            if self.done {
                return Ok(None);
            }
            self.fill()?;
        }
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        let start = Point::start(range.start());
        if start > self.cursor {
            self.cursor = start;
        }
        self.end = Point::end(range.end());
        self.first = None;
        self.pending = Pending::Nothing;
        self.under = None;
        self.done = false;
        Ok(())
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        self.pending = Pending::Nothing;
        Ok(())
    }

    /// A partition from the cache is handed over as it was decoded
    /// (restricted to the slice), not streamed and collected again; one
    /// read through from the source likewise. Inside a partition already
    /// streamed from, the default's error.
    fn next_mutation(&mut self) -> Result<Option<Mutation>, mutation::Error> {
        loop {
            match std::mem::replace(&mut self.pending, Pending::Nothing) {
                Pending::Ready(m) => return Ok(Some(restrict(m, &self.slice))),
                Pending::Nothing if self.done => return Ok(None),
                Pending::Nothing => self.fill()?,
                streaming => {
                    self.pending = streaming;
                    return mutation::collect_partition(self);
                }
            }
        }
    }
}
