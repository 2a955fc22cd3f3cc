//! Loom models of the table's memtable-list swap and of `close()`, running
//! the real [`MemtableList`] and [`Gate`] through the sync facade, with a
//! small memtable stand-in (a sealable list of values) and sstables as the
//! values a flush wrote.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p replica --release
//! --target-dir target/loom -- loom_` (LOOM_MAX_PREEMPTIONS=2 keeps it
//! short).

use std::collections::BTreeSet;

use loom::thread;

use crate::database::gate::Gate;
use crate::database::memtable_list::{Attempt, MemtableList, Seal};
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
