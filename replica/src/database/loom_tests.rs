//! Loom models of the table's memtable-list swap, of `close()`, and of the
//! write/seal/discard interplay with log positions, running the real
//! [`MemtableList`], [`Logged`] and [`Gate`] through the sync facade, with a
//! small memtable stand-in (a sealable list of values) and sstables as the
//! values a flush wrote.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p replmem-replica --release
//! --target-dir target/loom -- loom_` (LOOM_MAX_PREEMPTIONS=2 keeps it
//! short).

use std::collections::BTreeSet;

use loom::thread;

use crate::database::gate::Gate;
use commitlog::{ReplayPosition, ReplayPositionSet};

use crate::database::memtable_list::{Attempt, Logged, MemtableList, Seal};
use crate::sync::{Arc, Mutex};

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

type List = MemtableList<FakeMemtable, Vec<u32>>;

fn new_list() -> Arc<List> {
    Arc::new(MemtableList::new(
        Arc::new(FakeMemtable::default()),
        Vec::new(),
    ))
}

/// A write as `Table::apply` makes it (without admission).
fn write(list: &List, value: u32) {
    list.with_active(|m| m.upgrade().map_or(Err(Attempt::Sealed), |m| m.apply(value)))
        .expect("the stand-in fails only as sealed");
}

/// A flush of the active memtable as the flush target and job make it:
/// `begin_flush` (fresh memtable installed, old one sealed), the data
/// written out after the seal, then `commit`.
fn flush_active(list: &List) {
    let memtable = list.active();
    let unused = list
        .begin_flush(
            &memtable,
            || Ok::<_, ()>(Arc::new(FakeMemtable::default())),
            || {},
        )
        .expect("the stand-in's fresh memtable never fails");
    assert!(unused.is_none(), "only this thread flushes");
    let sstable = Arc::new(memtable.values());
    assert!(list.commit(&memtable, Some(sstable)));
}

/// Every value a snapshot of the list holds, counted.
fn snapshot_values(list: &List) -> Vec<u32> {
    let sources = list.sources();
    let mut all: Vec<u32> = sources.memtables.iter().flat_map(|m| m.values()).collect();
    all.extend(sources.sstables.iter().flat_map(|s| s.iter().copied()));
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
        write(&list, 1);
        let writer = {
            let list = Arc::clone(&list);
            thread::spawn(move || write(&list, 2))
        };
        let reader = {
            let list = Arc::clone(&list);
            thread::spawn(move || {
                let seen = snapshot_values(&list);
                assert_once(&seen);
                // Written before the reader started: never missed.
                assert!(seen.contains(&1), "{seen:?}");
            })
        };
        flush_active(&list);
        writer.join().unwrap();
        reader.join().unwrap();
        let mut all = snapshot_values(&list);
        assert_once(&all);
        all.sort_unstable();
        assert_eq!(all, [1, 2], "no acknowledged write lost");
    });
}

#[test]
fn loom_close_against_a_write_and_a_flush_keeps_every_acknowledged_write() {
    loom::model(|| {
        let list = new_list();
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
            let list = Arc::clone(&list);
            thread::spawn(move || flush_active(&list))
        };
        // close(): no operation starts after this, and those inside finish.
        assert!(gate.close());
        assert!(gate.enter().is_none());
        let acknowledged = writer.join().unwrap();
        flusher.join().unwrap();
        // close() then flushes what is left in memory.
        flush_active(&list);
        let sources = list.sources();
        assert!(sources.memtables.iter().all(|m| m.values().is_empty()));
        let flushed: Vec<u32> = sources
            .sstables
            .iter()
            .flat_map(|s| s.iter().copied())
            .collect();
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

type LoggedList = MemtableList<Logged<FakeMemtable>, Vec<u32>>;

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
fn logged_flush(list: &LoggedList, log: &FakeLog, discard: fn(&FakeLog, &ReplayPositionSet)) {
    let memtable = list.active();
    let unused = list
        .begin_flush(
            &memtable,
            || Ok::<_, ()>(Logged::new(Arc::new(FakeMemtable::default()))),
            || {},
        )
        .expect("the stand-in's fresh memtable never fails");
    assert!(unused.is_none(), "only this thread flushes");
    let sstable = Arc::new(memtable.values());
    assert!(list.commit(&memtable, Some(sstable)));
    discard(log, &memtable.take_positions());
}

/// Two writers race a flush; afterwards every write still only in memory
/// must still pin its log entry (or a crash would lose it), and once
/// everything is flushed no entry stays pinned.
fn writers_racing_a_flush(discard: fn(&FakeLog, &ReplayPositionSet)) {
    let list: Arc<LoggedList> = Arc::new(MemtableList::new(
        Logged::new(Arc::new(FakeMemtable::default())),
        Vec::new(),
    ));
    let log = Arc::new(FakeLog::default());
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let (list, log) = (Arc::clone(&list), Arc::clone(&log));
            thread::spawn(move || logged_write(&list, &log))
        })
        .collect();
    logged_flush(&list, &log, discard);
    for w in writers {
        w.join().unwrap();
    }
    for memtable in list.sources().memtables {
        for value in memtable.values() {
            assert!(
                log.pinned(u64::from(value)),
                "write {value} is only in memory, but its log entry was released"
            );
        }
    }
    logged_flush(&list, &log, discard);
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

/// The table's sstables live outside the memtable list (in the
/// compaction crate's set, here a stand-in under the facade's lock): a
/// flush adds its sstable to the set, *then* removes the memtable from the
/// list; a read takes the list's sources, *then* pins the set. `set_first`
/// false swaps the flush's two steps, which the model must catch.
fn flush_into_a_set_against_a_reader(set_first: bool) {
    let list = new_list();
    let set: Arc<crate::sync::RwLock<Vec<Arc<Vec<u32>>>>> =
        Arc::new(crate::sync::RwLock::new(Vec::new()));
    write(&list, 1);
    let reader = {
        let (list, set) = (Arc::clone(&list), Arc::clone(&set));
        thread::spawn(move || {
            let sources = list.sources();
            let pinned = set.read().clone();
            let mut seen: Vec<u32> = sources.memtables.iter().flat_map(|m| m.values()).collect();
            seen.extend(pinned.iter().flat_map(|s| s.iter().copied()));
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
    let sstable = Arc::new(memtable.values());
    if set_first {
        set.write().push(sstable);
        assert!(list.commit(&memtable, None));
    } else {
        assert!(list.commit(&memtable, None));
        set.write().push(sstable);
    }
    reader.join().unwrap();
}

#[test]
fn loom_a_reader_sees_a_flushed_row_in_the_memtable_or_the_set() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| flush_into_a_set_against_a_reader(true));
}

/// Removing the memtable before adding the sstable loses the row for a
/// reader in between: the model sees it.
#[test]
#[should_panic(expected = "the flushed row was in neither")]
fn loom_removing_the_memtable_first_loses_the_row_for_a_reader() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| flush_into_a_set_against_a_reader(false));
}
