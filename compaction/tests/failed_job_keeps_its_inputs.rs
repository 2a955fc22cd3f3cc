//! A compaction job whose file call fails (each create, write, sync,
//! rename, removal or directory sync of a job, in turn, on the file
//! layer) is abandoned: its outputs are removed, its inputs stay in the
//! set and on disk, and the table reads the same; a failure after the
//! job's checkpoint leaves its outputs, never a mix; a reopen finds one or
//! the other, reading the same, with no temporary left.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{Memtable, job_options, read_all, writer_options};
use compaction::{JobPlan, ManualClock, SstableSet, Unthrottled, run_job};
use fs::{FaultError, FaultFs, FaultRule, FsHandle, Op, PowerLossFs};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp, from_mutations};
use sstable::Sstable;

const NOW: u32 = 1_000_000;

fn batch(round: u32) -> Vec<Mutation> {
    (0..30u32)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(format!("key-{i:03}")).unwrap())
                .cell(
                    "r",
                    0,
                    Cell::live(
                        vec![(i + round) as u8; 200],
                        Timestamp::from_micros(i64::from(round)),
                    ),
                )
                .build()
                .unwrap()
        })
        .collect()
}

/// A set in `/data` on a fresh in-memory disk under a fault layer, with
/// four flushed sstables; returns the fault layer, the set and the
/// inputs.
fn setup() -> (FaultFs, FsHandle, SstableSet, Vec<u64>) {
    let disk = FaultFs::new(Arc::new(PowerLossFs::new()));
    let fs = FsHandle::new(Arc::new(disk.clone()));
    let dir = Path::new("/data");
    fs.create_dir_all_durably(dir).unwrap();
    let set = SstableSet::open_dirs_with(dir, &[], |_| None, &fs).unwrap();
    let mut inputs = Vec::new();
    for round in 1..=4 {
        let mut w = set.create_writer(dir, writer_options()).unwrap();
        w.write_all(&mut from_mutations(batch(round))).unwrap();
        let committed = w.commit().unwrap();
        set.add(Sstable::open_with(dir, committed.generation, None, &fs).unwrap());
        inputs.push(committed.generation);
    }
    disk.reset_counts();
    (disk, fs, set, inputs)
}

fn compact(set: &SstableSet, inputs: &[u64]) -> compaction::Result<Vec<u64>> {
    let plan = JobPlan {
        inputs: inputs.to_vec(),
        fragment_size: None,
    };
    let options = job_options(Arc::new(ManualClock::new(NOW)));
    run_job(set, &plan, &options, &Memtable::default(), &Unthrottled).map(|r| r.outputs)
}

fn generations(set: &SstableSet) -> Vec<u64> {
    let mut g: Vec<u64> = set
        .snapshot()
        .handles()
        .iter()
        .map(|h| h.generation())
        .collect();
    g.sort_unstable();
    g
}

#[test]
fn a_job_whose_file_call_fails_is_abandoned_with_its_inputs_kept() {
    let (counting, _, set, inputs) = setup();
    let before = read_all(&set, &[]);
    let outputs = compact(&set, &inputs).unwrap();
    assert_eq!(generations(&set), outputs);
    let mut cases = 0;
    for op in [
        Op::Create,
        Op::Write,
        Op::Sync,
        Op::SyncDir,
        Op::Rename,
        Op::Remove,
    ] {
        for n in 1..=counting.calls(op) {
            let (disk, fs, set, inputs) = setup();
            disk.add_rule(FaultRule::nth(op, n, FaultError::Io))
                .unwrap();
            let result = compact(&set, &inputs);
            disk.clear_rules();
            let what = format!("{op:?} call {n}");
            assert_eq!(read_all(&set, &[]), before, "{what}: reads the same");
            // Either the job is undone (its inputs stay) or it got past
            // its checkpoint (its outputs replaced them all): never a mix.
            let whole = |gens: &[u64]| {
                gens == inputs.as_slice() || !gens.iter().any(|g| inputs.contains(g))
            };
            let kept = generations(&set);
            assert!(whole(&kept), "{what}: kept {kept:?} of inputs {inputs:?}");
            if result.is_err() && kept != inputs {
                // A failure after the checkpoint (removing what the job
                // replaced): the outputs stand.
                assert!(!kept.is_empty(), "{what}");
            }
            drop(set);
            // What a reopen finds: the same, and nothing half done.
            let set = SstableSet::open_dirs_with("/data", &[], |_| None, &fs).unwrap();
            let reopened = generations(&set);
            assert!(
                whole(&reopened),
                "{what}: reopened {reopened:?} of inputs {inputs:?}"
            );
            assert_eq!(
                read_all(&set, &[]),
                before,
                "{what}: reads the same after a reopen"
            );
            let files = fs.read_dir(Path::new("/data")).unwrap();
            assert!(
                !files.iter().any(|p| p.to_string_lossy().ends_with(".tmp")),
                "{what}: temporaries left: {files:?}"
            );
            // No file of an abandoned output is left.
            for p in &files {
                if let Ok((g, _)) = sstable::parse_component_path(p) {
                    assert!(reopened.contains(&g), "{what}: {} left", p.display());
                }
            }
            cases += 1;
        }
    }
    println!("{cases} failed calls");
    assert!(cases > 20, "{cases}");
}
