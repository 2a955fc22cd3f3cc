//! What the damage tests share: a small-segment batch-mode log
//! configuration, a snapshot of a directory's files, and rows of a given
//! size.
#![allow(dead_code, unreachable_pub, reason = "each test uses a subset")]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use commitlog::{Config, CorruptionPolicy, Preallocate, SyncMode};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

/// 4 KiB segments, a 1 MiB total limit, batch mode with no window (every
/// entry acknowledged once synced), no preallocated reserve, `policy` at
/// damage.
pub fn config(policy: CorruptionPolicy) -> Config {
    let mut c = Config::default();
    c.segment_size = 4096;
    c.total_size_limit = 1 << 20;
    c.sync = SyncMode::Batch(Duration::ZERO);
    c.preallocate = Preallocate::Never;
    c.on_corruption = policy;
    c
}

/// Every file of `dir` by name, with its bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

/// Partition `{tag}{i}` with one cell of `len` bytes, each `i + 1`.
pub fn row(tag: &str, i: usize, len: usize) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("{tag}{i}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![i as u8 + 1; len], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}
