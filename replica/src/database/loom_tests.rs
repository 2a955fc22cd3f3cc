//! Loom models of the table's memtable-list swap, of `close()`, of the
//! write/seal/discard interplay with log positions, and of the order in
//! which a flush and a read take the memtables and the sstable set,
//! running the real [`MemtableList`] (its `begin_flush`, `retire` and
//! `read_sources`, as production calls them), [`Logged`] and [`Gate`]
//! through the sync facade, with a small memtable stand-in (a sealable
//! list of values) and a stand-in sstable set (the values each flush
//! wrote) under the facade's lock.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p replmem-replica --release
//! --target-dir target/loom -- loom_` (LOOM_MAX_PREEMPTIONS=2 keeps it
//! short).

use std::collections::BTreeSet;

use loom::thread;

use crate::database::gate::Gate;
use commitlog::{ReplayPosition, ReplayPositionSet};

use crate::database::memtable_list::{
    Attempt, Logged, MemtableList, ReadSources, Seal, SstableSet,
};
use crate::sync::{Arc, Mutex, RwLock};

/// A memtable stand-in: values, refused once sealed, as `Memtable::apply`
/// refuses with `Error::Sealed`.
#[derive(Debug, Default)]
struct FakeMemtable {
    state: Mutex<(bool, Vec<u32>)>,
}

impl FakeMemtable {
    fn apply(&self, value: u32) -> Result<(), Attempt<()>> {
        let mut state = self.state.lock();
        if state.0 {
            return Err(Attempt::Sealed);
        }
        state.1.push(value);
        Ok(())
    }

    fn values(&self) -> Vec<u32> {
        self.state.lock().1.clone()
    }
}

impl Seal for FakeMemtable {
    fn seal(&self) {
        self.state.lock().0 = true;
    }
}

/// The table's sstable set: the values each flush wrote, pinned by a read
/// as `TableSstables` is (a snapshot of the set as it is).
#[derive(Debug, Default)]
struct FakeSet {
    sstables: RwLock<Vec<Arc<Vec<u32>>>>,
}

impl FakeSet {
    fn add(&self, sstable: Vec<u32>) {
        self.sstables.write().push(Arc::new(sstable));
    }
}

impl SstableSet for FakeSet {
    type Pinned = Vec<Arc<Vec<u32>>>;

    fn pin(&self) -> Self::Pinned {
        self.sstables.read().clone()
    }
}

type List = MemtableList<FakeMemtable>;

fn new_list() -> Arc<List> {
    Arc::new(MemtableList::new(Arc::new(FakeMemtable::default())))
}

/// A write as `Table::apply` makes it (without admission).
fn write(list: &List, value: u32) {
    list.with_active(|m| m.upgrade().map_or(Err(Attempt::Sealed), |m| m.apply(value)))
        .expect("the stand-in fails only as sealed");
}

/// The end of a flush as the flush job makes it: the sstable (if the
/// memtable held anything) joins the set, then the memtable is retired.
fn publish(list: &List, set: &FakeSet, memtable: &Arc<FakeMemtable>) {
    let values = memtable.values();
    if !values.is_empty() {
        set.add(values);
    }
    assert!(list.retire(memtable));
}

/// A flush of the active memtable as the flush target and job make it:
/// `begin_flush` (fresh memtable installed, old one sealed), the data
/// written out after the seal, then its sstable published.
fn flush_active(list: &List, set: &FakeSet) {
    let memtable = list.active();
    let unused = list
        .begin_flush(
            &memtable,
            || Ok::<_, ()>(Arc::new(FakeMemtable::default())),
            || {},
        )
        .expect("the stand-in's fresh memtable never fails");
    assert!(unused.is_none(), "only this thread flushes");
    publish(list, set, &memtable);
}

/// Every value a read's sources hold (a value flushed while the read
/// started may be in both its memtable and its sstable: the merging
/// reader reconciles the two).
fn read_values(list: &List, set: &FakeSet) -> Vec<u32> {
    let ReadSources { memtables, pinned } = list.read_sources(set);
    let mut all: Vec<u32> = memtables.iter().flat_map(|m| m.values()).collect();
    all.extend(pinned.iter().flat_map(|s| s.iter().copied()));
    all
}

fn assert_once(values: &[u32]) {
    let distinct: BTreeSet<u32> = values.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        values.len(),
        "a value seen twice: {values:?}"
    );
}

#[test]
fn loom_flush_swap_against_a_writer_and_a_reader_loses_and_duplicates_nothing() {
    loom::model(|| {
        let list = new_list();
        let set = Arc::new(FakeSet::default());
        write(&list, 1);
        let writer = {
            let list = Arc::clone(&list);
            thread::spawn(move || write(&list, 2))
        };
        let reader = {
            let (list, set) = (Arc::clone(&list), Arc::clone(&set));
            thread::spawn(move || {
                let seen = read_values(&list, &set);
                // Written before the reader started: never missed.
                assert!(seen.contains(&1), "{seen:?}");
            })
        };
        flush_active(&list, &set);
        writer.join().unwrap();
        reader.join().unwrap();
        // Once the flush is done, every value is in one place.
        let mut all = read_values(&list, &set);
        assert_once(&all);
        all.sort_unstable();
        assert_eq!(all, [1, 2], "no acknowledged write lost");
    });
}

#[test]
fn loom_close_against_a_write_and_a_flush_keeps_every_acknowledged_write() {
    loom::model(|| {
        let list = new_list();
        let set = Arc::new(FakeSet::default());
        let gate = Arc::new(Gate::new());
        let writer = {
            let (list, gate) = (Arc::clone(&list), Arc::clone(&gate));
            thread::spawn(move || match gate.enter() {
                Some(_pass) => {
                    write(&list, 7);
                    true
                }
                None => false,
            })
        };
        let flusher = {
            let (list, set) = (Arc::clone(&list), Arc::clone(&set));
            thread::spawn(move || flush_active(&list, &set))
        };
        // close(): no operation starts after this, and those inside finish.
        assert!(gate.close());
        assert!(gate.enter().is_none());
        let acknowledged = writer.join().unwrap();
        flusher.join().unwrap();
        // close() then flushes what is left in memory.
        flush_active(&list, &set);
        let ReadSources { memtables, pinned } = list.read_sources(&*set);
        assert!(memtables.iter().all(|m| m.values().is_empty()));
        let flushed: Vec<u32> = pinned.iter().flat_map(|s| s.iter().copied()).collect();
        assert_once(&flushed);
        assert_eq!(flushed.contains(&7), acknowledged, "{flushed:?}");
    });
}

/// The commit log as the write path sees it: every append is its own
/// segment (so "pinned" is exact per entry), pinned until handed back.
#[derive(Debug, Default)]
struct FakeLog {
    /// (last segment id, entries still pinned per segment).
    state: Mutex<(u64, std::collections::BTreeMap<u64, u64>)>,
}

impl FakeLog {
    fn append(&self) -> ReplayPosition {
        let mut st = self.state.lock();
        st.0 += 1;
        let id = st.0;
        st.1.insert(id, 1);
        ReplayPosition::new(id, 0)
    }

    /// `CommitLog::discard_flushed`: exactly the entries of `set`.
    fn discard_flushed(&self, set: &ReplayPositionSet) {
        let mut st = self.state.lock();
        for (segment, n) in set.segments() {
            if let Some(c) = st.1.get_mut(&segment) {
                *c = c.saturating_sub(n);
            }
        }
    }

    /// The rule issue 18 replaced: everything up to the flushed memtable's
    /// newest entry.
    fn discard_up_to_newest(&self, set: &ReplayPositionSet) {
        let Some((newest, _)) = set.segments().last() else {
            return;
        };
        for (_, c) in self.state.lock().1.range_mut(..=newest) {
            *c = 0;
        }
    }

    fn pinned(&self, segment: u64) -> bool {
        self.state.lock().1.get(&segment).is_some_and(|&c| c > 0)
    }

    fn all_released(&self) -> bool {
        self.state.lock().1.values().all(|&c| c == 0)
    }
}

type LoggedList = MemtableList<Logged<FakeMemtable>>;

/// A write as `Table::apply` makes it: append, then apply to the active
/// memtable (recording the entry), handing the entry back if the
/// memtable's flush already did. The value written is its segment id.
fn logged_write(list: &LoggedList, log: &FakeLog) {
    let position = log.append();
    let release = list
        .with_active(|m| {
            m.upgrade().map_or(Err(Attempt::Sealed), |m| {
                m.apply_recorded(Some(position), |fake| fake.apply(position.segment as u32))
            })
        })
        .expect("the stand-in fails only as sealed");
    if release {
        log.discard_flushed(&ReplayPositionSet::from(position));
    }
}

/// A flush of the active memtable as the flush target and job make it,
/// handing the log what the memtable holds by `discard`.
fn logged_flush(
    list: &LoggedList,
    set: &FakeSet,
    log: &FakeLog,
    discard: fn(&FakeLog, &ReplayPositionSet),
) {
    let memtable = list.active();
    let unused = list
        .begin_flush(
            &memtable,
            || Ok::<_, ()>(Logged::new(Arc::new(FakeMemtable::default()))),
            || {},
        )
        .expect("the stand-in's fresh memtable never fails");
    assert!(unused.is_none(), "only this thread flushes");
    let values = memtable.values();
    if !values.is_empty() {
        set.add(values);
    }
    assert!(list.retire(&memtable));
    discard(log, &memtable.take_positions());
}

/// Two writers race a flush; afterwards every write still only in memory
/// must still pin its log entry (or a crash would lose it), and once
/// everything is flushed no entry stays pinned.
fn writers_racing_a_flush(discard: fn(&FakeLog, &ReplayPositionSet)) {
    let list: Arc<LoggedList> = Arc::new(MemtableList::new(Logged::new(Arc::new(
        FakeMemtable::default(),
    ))));
    let set = FakeSet::default();
    let log = Arc::new(FakeLog::default());
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let (list, log) = (Arc::clone(&list), Arc::clone(&log));
            thread::spawn(move || logged_write(&list, &log))
        })
        .collect();
    logged_flush(&list, &set, &log, discard);
    for w in writers {
        w.join().unwrap();
    }
    for memtable in list.memtables() {
        for value in memtable.values() {
            assert!(
                log.pinned(u64::from(value)),
                "write {value} is only in memory, but its log entry was released"
            );
        }
    }
    logged_flush(&list, &set, &log, discard);
    assert!(
        log.all_released(),
        "an entry stays pinned after every flush"
    );
}

#[test]
fn loom_a_flush_releases_only_the_log_entries_its_memtable_holds() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| writers_racing_a_flush(FakeLog::discard_flushed));
}

/// The model catches the rule issue 18 replaced: with it, a writer that
/// appended first but applied to the fresh memtable loses its entry.
#[test]
#[should_panic(expected = "its log entry was released")]
fn loom_the_up_to_newest_rule_releases_a_newer_memtables_entry() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| writers_racing_a_flush(FakeLog::discard_up_to_newest));
}

/// Which of the protocol's two orders a model reverses.
#[derive(Debug, Clone, Copy)]
enum Order {
    /// As production: the flush adds its sstable to the set, then retires
    /// the memtable; the read takes the memtables, then pins the set.
    Production,
    /// The flush retires the memtable before adding its sstable.
    FlushRetiresFirst,
    /// The read pins the set before it takes the memtables.
    ReadPinsFirst,
}

/// A flush of a memtable holding one row races a reader: the reader must
/// see the row in the memtable or in the set.
fn flush_against_a_reader(order: Order) {
    let list = new_list();
    let set = Arc::new(FakeSet::default());
    write(&list, 1);
    let reader = {
        let (list, set) = (Arc::clone(&list), Arc::clone(&set));
        thread::spawn(move || {
            let seen = match order {
                Order::ReadPinsFirst => {
                    let pinned = set.pin();
                    let mut seen: Vec<u32> =
                        list.memtables().iter().flat_map(|m| m.values()).collect();
                    seen.extend(pinned.iter().flat_map(|s| s.iter().copied()));
                    seen
                }
                Order::Production | Order::FlushRetiresFirst => read_values(&list, &set),
            };
            assert!(seen.contains(&1), "the flushed row was in neither");
        })
    };
    let memtable = list.active();
    list.begin_flush(
        &memtable,
        || Ok::<_, ()>(Arc::new(FakeMemtable::default())),
        || {},
    )
    .expect("the stand-in's fresh memtable never fails");
    match order {
        Order::FlushRetiresFirst => {
            assert!(list.retire(&memtable));
            set.add(memtable.values());
        }
        Order::Production | Order::ReadPinsFirst => publish(&list, &set, &memtable),
    }
    reader.join().unwrap();
}

fn check(order: Order) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || flush_against_a_reader(order));
}

#[test]
fn loom_a_reader_sees_a_flushed_row_in_the_memtable_or_the_set() {
    check(Order::Production);
}

/// Retiring the memtable before adding the sstable loses the row for a
/// reader in between: the model sees it.
#[test]
#[should_panic(expected = "the flushed row was in neither")]
fn loom_retiring_the_memtable_first_loses_the_row_for_a_reader() {
    check(Order::FlushRetiresFirst);
}

/// A reader that pins the set before it takes the memtables loses the row
/// of a flush that published between the two: the model sees it.
#[test]
#[should_panic(expected = "the flushed row was in neither")]
fn loom_pinning_the_set_before_the_memtables_loses_the_row() {
    check(Order::ReadPinsFirst);
}
