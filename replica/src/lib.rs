//! `replica`: composes memtables, the dirty-memory manager, the flush
//! scheduler and sstables behind a small Database/Table API, and ships the
//! `replica-stress` load generator.
//!
//! **Not built yet.** The write path it composes is still being built in the
//! crates below it; this crate exports nothing and ships no binary until its
//! issue lands. `cargo xtask stress` says so rather than running a
//! placeholder.
#![forbid(unsafe_code)]
