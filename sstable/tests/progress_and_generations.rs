//! The writer reports progress in bytes written; concurrent writers in one
//! directory never share a generation.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use sstable::{Component, SstableDirectory, Writer, WriterOptions, component_path};

#[test]
fn progress_grows_to_the_file_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let ms: Vec<Mutation> = (0..200u32)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(i.to_be_bytes().to_vec()).unwrap())
                .cell(
                    vec![1u8],
                    1,
                    Cell::live(vec![3u8; 500], Timestamp::from_micros(1)),
                )
                .build()
                .unwrap()
        })
        .collect();
    let (fragments, _) = canonical(&ms);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut w = Writer::create(dir.path(), WriterOptions::default()).unwrap();
    let s = Arc::clone(&seen);
    w.on_progress(move |p| s.lock().unwrap().push(p));
    let mut polled = vec![w.bytes_written()];
    for f in fragments {
        w.write(&f).unwrap();
        polled.push(w.bytes_written());
    }
    assert!(polled.windows(2).all(|p| p[0] <= p[1]));
    let c = w.commit().unwrap();
    let progress = seen.lock().unwrap();
    assert!(progress.len() > 3, "{} callbacks", progress.len());
    // Both measures strictly grow, and raw bytes never exceed what the
    // sstable holds.
    assert!(progress.windows(2).all(|p| p[0].raw_bytes < p[1].raw_bytes));
    assert!(
        progress
            .iter()
            .all(|p| p.raw_bytes <= c.statistics.data_raw_bytes)
    );
    assert!(progress.last().unwrap().raw_bytes > c.statistics.data_raw_bytes / 2);
    let seen: Vec<u64> = progress.iter().map(|p| p.bytes_written).collect();
    assert!(seen.windows(2).all(|p| p[0] < p[1]));
    let data = std::fs::metadata(component_path(dir.path(), c.generation, Component::Data))
        .unwrap()
        .len();
    let index = std::fs::metadata(component_path(dir.path(), c.generation, Component::Index))
        .unwrap()
        .len();
    assert!(*seen.last().unwrap() <= data + index);
    assert!(*polled.last().unwrap() > data / 2);
}

#[test]
fn concurrent_writers_get_distinct_generations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let generations: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let path = path.clone();
                s.spawn(move || {
                    (0..5)
                        .map(|_| {
                            Writer::create(&path, small_options(false))
                                .unwrap()
                                .commit()
                                .unwrap()
                                .generation
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let mut sorted = generations.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 20, "{generations:?}");
    assert_eq!(
        SstableDirectory::open(&path).unwrap().generations(),
        sorted.as_slice()
    );
}
