//! `memtable`: sorted partitions held in a logalloc region, reconciled by
//! timestamp and read back as ordered fragment streams.
//!
//! **Not built yet.** This crate is reserved in the workspace so that its
//! place in the dependency graph is fixed; it exports nothing until its issue
//! lands. It will depend on `logalloc`, `region-group` and `mutation`, and
//! never on `sstable`.
#![forbid(unsafe_code)]
