//! The workspace's one synchronisation facade.
//!
//! Every crate of the workspace that shares state between threads names its
//! primitives through this crate, never `parking_lot::`, `std::sync::` or
//! `std::thread::` directly. Normal builds get `parking_lot` locks and `std`
//! atomics and threads; builds with `RUSTFLAGS="--cfg loom"` get the
//! `loom` equivalents, so a loom model of a crate explores the crate's real
//! code (parking_lot and std are invisible to loom: a model that used them
//! would check nothing). This is the arrangement of tokio's `loom` module
//! and of crossbeam-utils.
//!
//! The API is parking_lot-shaped and the same in both builds:
//!
//! * [`Mutex::lock`], [`RwLock::read`] and [`RwLock::write`] return the
//!   guard (no poisoning: under loom a poisoned lock is entered anyway, as
//!   parking_lot does);
//! * [`Condvar::wait`] takes the guard by `&mut`; the timed waits
//!   [`Condvar::wait_for`] and [`Condvar::wait_until`] return `true` when
//!   they timed out;
//! * [`Arc`], the atomics (also under [`atomic`]) and [`thread`] come from
//!   loom under `cfg(loom)`; [`arc_from_std`] and [`arc_dyn!`] make an
//!   `Arc<dyn Trait>` in both builds (loom's `Arc` cannot coerce);
//! * [`plain`] holds the `std` types that stay `std` in every build: for
//!   statics (loom types cannot live in one), for `Arc`s std's traits need
//!   (error sources, wakers), `Weak`, values that cross a public API as
//!   `std::sync::Arc`, and counters that order nothing;
//! * [`time::now`] is a fixed instant under loom (loom does not model
//!   time, and a model must replay identically), and [`time::deadline_after`]
//!   adds a wait to it without overflowing.
//!
//! Loom does not model time: under `cfg(loom)` a timed wait is a plain wait
//! that never reports a timeout, so code under a model must always be woken
//! by a notification.
//!
//! # Example
//!
//! ```
//! use sync::{Arc, Condvar, Mutex, thread};
//!
//! let pair = Arc::new((Mutex::new(false), Condvar::new()));
//! let signaller = Arc::clone(&pair);
//! let handle = thread::spawn_named("signaller".to_string(), move || {
//!     let (ready, cv) = &*signaller;
//!     *ready.lock() = true;
//!     cv.notify_one();
//! })
//! .expect("spawn");
//!
//! let (ready, cv) = &*pair;
//! let mut guard = ready.lock();
//! while !*guard {
//!     cv.wait(&mut guard);
//! }
//! drop(guard);
//! handle.join().expect("the signaller does not panic");
//! ```
//!
//! # Features
//!
//! * `lock-census` (off by default, for tests only): the `census`
//!   module, which records which locks a piece of code takes, at which
//!   source line. Normal builds only.
//!
//! The loom switch is not a feature but the `loom` cfg (`RUSTFLAGS="--cfg
//! loom"`), which applies to the whole build, as loom expects.

#![forbid(unsafe_code)]

#[cfg(not(loom))]
mod std_impl;
#[cfg(not(loom))]
use std_impl as imp;

#[cfg(loom)]
mod loom_impl;

#[cfg(all(feature = "lock-census", not(loom)))]
pub mod census;
#[cfg(loom)]
use loom_impl as imp;

pub use imp::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Shared ownership that loom tracks under `cfg(loom)` (it reports an `Arc`
/// still alive at the end of a model as a leak); `std::sync::Arc`
/// otherwise.
#[cfg(loom)]
pub use loom::sync::Arc;
/// Shared ownership that loom tracks under `cfg(loom)` (it reports an `Arc`
/// still alive at the end of a model as a leak); `std::sync::Arc`
/// otherwise.
///
/// Loom's `Arc` is a different type from `std::sync::Arc` and cannot
/// coerce to an `Arc<dyn Trait>`: make an unsized one with [`arc_from_std`]
/// (or [`arc_dyn!`]); where std's own traits need `std::sync::Arc` (an error
/// `#[source]`, `std::task::Wake`), or a `static` holds one, use
/// [`plain::Arc`].
#[cfg(not(loom))]
pub use std::sync::Arc;

/// The facade's [`Arc`] of the value a fresh `std::sync::Arc` holds: that
/// `Arc` itself normally, loom's `Arc::from_std` under `cfg(loom)`. The way
/// to an `Arc<dyn Trait>` (or any unsized value) that loom tracks, since
/// loom's `Arc` cannot coerce: coerce the `std` one on the way in, where
/// the expected type says what to coerce to.
///
/// `arc` must be unique (just made, never cloned): loom panics otherwise,
/// as its count could not follow the clones made before.
///
/// ```
/// use std::fmt::Display;
/// use sync::{Arc, plain};
///
/// let shown: Arc<dyn Display + Send + Sync> = sync::arc_from_std(plain::Arc::new(5));
/// assert_eq!(shown.to_string(), "5");
/// ```
#[track_caller]
pub fn arc_from_std<T: ?Sized>(arc: plain::Arc<T>) -> Arc<T> {
    #[cfg(loom)]
    {
        Arc::from_std(arc)
    }
    #[cfg(not(loom))]
    {
        arc
    }
}

/// `arc_dyn!(value)`: a new facade [`Arc`] holding `value`, coerced to the
/// unsized type the context expects (`Arc<dyn Trait>`), in loom builds too
/// (see [`arc_from_std`]). Say the type where it is not implied: under loom
/// an `Arc` inferred as `Arc<Value>` cannot become an `Arc<dyn Trait>`
/// later.
///
/// ```
/// use std::fmt::Debug;
/// use sync::Arc;
///
/// let mut items: Vec<Arc<dyn Debug + Send + Sync>> = Vec::new();
/// items.push(sync::arc_dyn!(1));
/// items.push(sync::arc_dyn!("two"));
/// assert_eq!(format!("{items:?}"), r#"[1, "two"]"#);
/// ```
#[macro_export]
macro_rules! arc_dyn {
    ($value:expr) => {
        $crate::arc_from_std($crate::plain::Arc::new($value))
    };
}

pub use atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};

/// Atomics: `std::sync::atomic` normally, `loom::sync::atomic` under
/// `cfg(loom)`.
///
/// Loom's atomics have no `const fn new` and no `get_mut` (use `with_mut`
/// through an `&mut`, or a plain load); keep them out of statics (see
/// [`plain`]).
pub mod atomic {
    #[cfg(loom)]
    pub use loom::sync::atomic::{
        AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
    };
    #[cfg(not(loom))]
    pub use std::sync::atomic::{
        AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
    };
}

/// The `std` types that stay `std` under `cfg(loom)` too.
///
/// For what loom must not (or cannot) see: a `static` and what it holds
/// (loom's types must be created inside a model and gone at its end; hence
/// `Mutex` and `LazyLock` here, std-shaped: `lock` returns a `Result`), an
/// `Arc` that std's traits need (`Error` for an error's `#[source]`,
/// `std::task::Wake`), a `Weak` (loom has none), an `Arc` that still
/// crosses a public API where callers write `std::sync::Arc`, and
/// statistics counters that order nothing between threads. Say why at each
/// use. Anything that carries a protocol between threads belongs in the
/// crate root's modelled types instead.
pub mod plain {
    pub use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
    pub use std::sync::{Arc, LazyLock, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
}

/// Threads: `std::thread` normally, `loom::thread` under `cfg(loom)`.
pub mod thread {
    #[cfg(loom)]
    pub use loom::thread::{Builder, JoinHandle, Thread, current, park, spawn, yield_now};
    #[cfg(not(loom))]
    pub use std::thread::{Builder, JoinHandle, Thread, current, park, spawn, yield_now};

    /// Spawns a thread named `name` (loom ignores names).
    ///
    /// # Errors
    ///
    /// The operating system's error when it cannot create the thread.
    pub fn spawn_named<F, T>(name: String, f: F) -> std::io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        Builder::new().name(name).spawn(f)
    }
}

/// Time as the synchronising code sees it.
pub mod time {
    use std::time::{Duration, Instant};

    /// The current time. Under `cfg(loom)` it is one fixed instant per
    /// process: loom does not model time (its timed waits never time out),
    /// and a model must behave the same on every replay, so deadlines never
    /// pass there.
    pub fn now() -> Instant {
        #[cfg(loom)]
        {
            static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
            *EPOCH.get_or_init(Instant::now)
        }
        #[cfg(not(loom))]
        {
            Instant::now()
        }
    }

    /// `now + wait`, or the latest instant the platform can represent short
    /// of that when the sum overflows: a wait of `Duration::MAX` means "until
    /// woken", and must neither panic nor wrap.
    pub fn deadline_after(now: Instant, wait: Duration) -> Instant {
        let mut wait = wait;
        loop {
            if let Some(deadline) = now.checked_add(wait) {
                return deadline;
            }
            wait /= 2;
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn deadline_after_saturates_instead_of_overflowing() {
            let now = now();
            assert_eq!(
                deadline_after(now, Duration::from_secs(1)),
                now + Duration::from_secs(1)
            );
            let far = deadline_after(now, Duration::MAX);
            assert!(far > now + Duration::from_secs(1_000_000));
        }
    }
}

// The README's example runs as a doc test, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
