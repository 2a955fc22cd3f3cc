//! The crate's one door to shared-state primitives, all from the
//! workspace's `sync` facade.
//!
//! An open sstable is immutable and shared by its readers through [`Arc`];
//! the shared mutable state is a `Relaxed` diagnostic counter of blocks
//! read and the process-wide cache of open files (`file_cache`), a static
//! behind one lock that is held only for map updates. Every one of these is
//! a `sync::plain` type, `std`'s in every build, loom's included, each for
//! its reason:
//!
//! * the cache is a `static` (`LazyLock<Mutex<..>>`), and a static can hold
//!   no loom type: loom's exist only inside one model, and a static outlives
//!   them all;
//! * the cache holds `Arc<File>` clones, so the files' `Arc` is the
//!   static's too;
//! * an open sstable (`Arc` of its immutable parts and sources) has no
//!   protocol between threads for loom to explore, and is opened outside
//!   models as often as inside other crates' ones;
//! * an open sstable's cache of Index blocks (`index_cache`) fills each
//!   slot once (`OnceLock`) and counts bytes against a static budget;
//! * the id counter is a static, and the blocks-read counter orders
//!   nothing between threads; so is the direct-scans setting, a flag read
//!   once per scan.
//!
//! Plain types also keep the crate usable from other crates' loom models
//! (an sstable opened in a model leaves nothing loom would report as a
//! leak).

pub(crate) use ::sync::plain::{
    Arc, AtomicBool, AtomicU64, LazyLock, Mutex, MutexGuard, OnceLock, Ordering, PoisonError,
};
