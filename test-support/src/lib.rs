//! Support code shared by the workspace's tests and benchmarks, never by
//! the published crates: [`CountingAllocator`], a global allocator over
//! the system one that counts allocations and live heap bytes, and
//! [`single_test_main`], the `main` of a test binary without libtest's
//! harness (a crash test that re-runs itself as the child it kills).
//!
//! A test or bench installs it and measures around the code it checks:
//!
//! ```
//! #[global_allocator]
//! static GLOBAL: test_support::CountingAllocator = test_support::CountingAllocator;
//!
//! let (v, allocations) = test_support::allocations_in(|| vec![1u8; 64]);
//! assert_eq!(v.len(), 64);
//! assert_eq!(allocations, 1);
//! let before = test_support::live_bytes();
//! let w = vec![0u8; 4096];
//! assert_eq!(test_support::live_bytes() - before, 4096);
//! drop(w);
//! ```
//!
//! The counters are process-wide: a measurement also counts what other
//! threads allocate meanwhile, so a test that asserts an exact count runs
//! its measured part alone.

// A `GlobalAlloc` implementation is unsafe by definition; this is the one
// the workspace's tests and benches share.
#![deny(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};

// `plain`: statics, which loom cannot hold (never in a loom model).
use sync::plain::{AtomicU64, Ordering};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated less bytes freed, as two's complement (memory freed
/// here that was allocated before the allocator was installed makes it
/// wrap below zero; [`live_bytes`] reads it signed).
static LIVE: AtomicU64 = AtomicU64::new(0);

/// A global allocator that forwards every call to [`System`] and counts
/// allocations (`alloc`, `alloc_zeroed` and `realloc`, one each) and live
/// bytes. Install it with `#[global_allocator]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAllocator;

fn grew(by: usize) {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    LIVE.fetch_add(by as u64, Ordering::Relaxed);
}

fn shrank(by: usize) {
    LIVE.fetch_sub(by as u64, Ordering::Relaxed);
}

#[allow(
    unsafe_code,
    reason = "GlobalAlloc is an unsafe trait; every call forwards to System"
)]
// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are this allocator's; the counting
// touches only atomics and never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, so by `System`,
        // with `layout` (the caller's contract).
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc` is `System`'s.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            grew(new_size);
            shrank(layout.size());
        }
        p
    }
}

/// Allocations made so far (by every thread) through [`CountingAllocator`].
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Runs `f` and returns its value with the allocations made meanwhile.
pub fn allocations_in<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = allocations();
    let out = f();
    (out, allocations() - before)
}

/// Heap bytes allocated through [`CountingAllocator`] and not freed yet.
pub fn live_bytes() -> i64 {
    LIVE.load(Ordering::Relaxed) as i64
}

/// The `main` of a `harness = false` test binary holding one test named
/// `name`: speaks enough of libtest's protocol for `cargo test` and
/// cargo-nextest (`--list`, `--ignored`, name filters, so `cargo test --
/// loom_` does not run it, and the closing `test result` line), and runs
/// `test` unless filtered out. A panic in `test` fails the binary, as a
/// failed test does.
pub fn single_test_main(name: &str, test: impl FnOnce()) {
    let mut filters = Vec::new();
    let (mut list, mut ignored) = (false, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--list" => list = true,
            "--ignored" => ignored = true,
            "--test-threads" | "--skip" | "--format" | "--color" | "--logfile" => {
                args.next();
            }
            flag if flag.starts_with('-') => {}
            filter => filters.push(filter.to_owned()),
        }
    }
    if list {
        if !ignored {
            println!("{name}: test");
        }
        return;
    }
    if ignored || (!filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str()))) {
        println!("test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out");
        return;
    }
    test();
    println!("test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
}
