//! Unit tests of the log over the in-memory store.

mod append;
mod cycle;
mod durable;
mod segments;

pub(crate) use super::*;
pub(crate) use crate::storage::mem::MemStorage;
pub(crate) use mutation::{Cell, DecoratedKey, Timestamp};
pub(crate) use std::time::Duration;

pub(crate) fn mutation(key: &str, value: usize) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(key.to_string()).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![7u8; value], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

pub(crate) fn mem_log(config: Config) -> (CommitLog, MemStorage) {
    let storage = MemStorage::default();
    let log =
        CommitLog::with_storage(Box::new(storage.clone()), config, BTreeMap::new(), 0).unwrap();
    (log, storage)
}

pub(crate) fn small(sync: SyncMode) -> Config {
    Config {
        segment_size: 4096,
        total_size_limit: 4 * 4096,
        sync,
        write_timeout: Duration::from_secs(5),
        preallocate: crate::Preallocate::Never,
        ..Config::default()
    }
}
