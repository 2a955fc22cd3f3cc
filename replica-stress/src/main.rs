//! `replica-stress`: a write (or read, or mixed) load against an embedded
//! [`replica::Database`], reported the way cassandra-stress reports. With
//! no arguments it writes for 30 seconds to a temporary directory with a
//! dirty-memory budget sized to the machine, then removes the directory.
//! `--help` lists the options; `--compare` runs both flush policies on the
//! same load and prints the ratios.
//!
//! The program counts its heap allocations (a counting global allocator
//! over the system one, here in the program only, never in the library),
//! so its reports show the live heap and its peak beside the peak
//! resident set and the dirty-memory budget.
// The counting allocator is the one unsafe code of the program: a
// `GlobalAlloc` implementation is unsafe by definition.
#![deny(unsafe_code)]

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use replica_stress::{
    DatabaseFactory, Error, HeapFigures, Interrupt, MemoryProbe, StressOptions, error_chain,
    execute,
};

mod counting {
    //! A global allocator that forwards to the system allocator and counts
    //! live bytes and their peak. Two relaxed atomic operations per
    //! allocation (one more when a new peak is reached).
    #![allow(
        unsafe_code,
        reason = "GlobalAlloc is an unsafe trait; every call forwards to System"
    )]

    use std::alloc::{GlobalAlloc, Layout, System};

    // `plain`: statics, which loom cannot hold; never in a loom model.
    use sync::plain::{AtomicU64, Ordering};

    use replica_stress::HeapFigures;

    static LIVE: AtomicU64 = AtomicU64::new(0);
    static PEAK: AtomicU64 = AtomicU64::new(0);

    /// The counting allocator.
    pub(crate) struct Counting;

    fn grew(by: usize) {
        let live = LIVE.fetch_add(by as u64, Ordering::Relaxed) + by as u64;
        if live > PEAK.load(Ordering::Relaxed) {
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
    }

    fn shrank(by: usize) {
        LIVE.fetch_sub(by as u64, Ordering::Relaxed);
    }

    // SAFETY: every method forwards to `System` with the caller's
    // arguments unchanged, so `System`'s guarantees are ours; the counting
    // touches only atomics and never allocates.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: the caller's contract for `alloc` is `System`'s.
            let p = unsafe { System.alloc(layout) };
            if !p.is_null() {
                grew(layout.size());
            }
            p
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: as `alloc`.
            let p = unsafe { System.alloc_zeroed(layout) };
            if !p.is_null() {
                grew(layout.size());
            }
            p
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: `ptr` came from this allocator, that is from `System`,
            // with `layout`, as the caller guarantees.
            unsafe { System.dealloc(ptr, layout) };
            shrank(layout.size());
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: as `dealloc` for `ptr` and `layout`; `new_size` is
            // the caller's, checked by it as `realloc` requires.
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            if !p.is_null() {
                match new_size.checked_sub(layout.size()) {
                    Some(more) => grew(more),
                    None => shrank(layout.size() - new_size),
                }
            }
            p
        }
    }

    /// Brings the peak down to the live bytes now (each `--compare` run
    /// reports its own peak).
    pub(crate) fn reset_peak() {
        PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// The live heap bytes and their peak.
    pub(crate) fn figures() -> HeapFigures {
        HeapFigures {
            live: LIVE.load(Ordering::Relaxed),
            peak: PEAK.load(Ordering::Relaxed),
        }
    }
}

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

fn heap() -> HeapFigures {
    counting::figures()
}

/// The exit status of a run a signal stopped, as a shell reports a
/// process killed by SIGINT (128 + 2).
const INTERRUPTED: u8 = 130;

/// Watches for SIGINT and SIGTERM on a thread of its own: the first asks
/// the run to stop through `interrupt` (the program then prints what ran,
/// closes the database and removes its temporary directory); a second
/// removes the temporary directories and exits at once.
fn watch_signals(interrupt: Interrupt) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    sync::thread::spawn_named("replica-stress-signals".to_owned(), move || {
        for signal in signals.forever() {
            let name = if signal == SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            };
            if interrupt.request() {
                eprintln!(
                    "\nreplica-stress: {name}: stopping the load; the summary of what ran follows \
                     (a second signal exits at once)"
                );
                continue;
            }
            for (dir, e) in interrupt.remove_temporary_dirs() {
                eprintln!(
                    "replica-stress: cannot remove temporary directory {}: {e}",
                    dir.display()
                );
            }
            eprintln!("replica-stress: {name} again: temporary directory removed, exiting");
            std::process::exit(i32::from(INTERRUPTED));
        }
    })?;
    Ok(())
}

/// The exit status of bad usage (an option the program refuses), as clap
/// exits on a command line it cannot parse; a run that fails exits 1.
const USAGE: u8 = 2;

/// Prints a command line clap refused, once, and gives its exit status
/// (0 for `--help` and `--version`). A value our parser refused is shown
/// as our message alone: clap's own wrapping would name the option twice.
fn refused(e: &clap::Error) -> ExitCode {
    use std::error::Error as _;
    match (e.kind(), e.source()) {
        (clap::error::ErrorKind::ValueValidation, Some(why)) => {
            eprintln!("replica-stress: {why}\n\nFor more information, try '--help'.");
            ExitCode::from(USAGE)
        }
        _ => {
            let _ = e.print();
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(USAGE))
        }
    }
}

fn main() -> ExitCode {
    let mut options = match StressOptions::try_parse() {
        Ok(options) => options,
        Err(e) => return refused(&e),
    };
    options.memory =
        MemoryProbe::with_heap_counter(heap).with_heap_peak_reset(counting::reset_peak);
    if let Err(e) = watch_signals(options.interrupt.clone()) {
        eprintln!("replica-stress: cannot watch for SIGINT and SIGTERM: {e}");
        return ExitCode::FAILURE;
    }
    let mut factory = DatabaseFactory::new(&options);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = execute(&options, &mut factory, &mut out);
    let _ = out.flush();
    // The factory's temporary directory goes before the program exits.
    drop(factory);
    match result {
        Ok(_) if options.interrupt.is_requested() => {
            eprintln!(
                "replica-stress: interrupted: the summary above covers the part that ran; \
                 temporary data removed"
            );
            ExitCode::from(INTERRUPTED)
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(e @ Error::Interrupted { .. }) => {
            eprintln!("replica-stress: {e}; temporary data removed");
            ExitCode::from(INTERRUPTED)
        }
        Err(e @ Error::InvalidOption { .. }) => {
            eprintln!("replica-stress: {e}");
            ExitCode::from(USAGE)
        }
        Err(e) => {
            // The whole chain: "cannot create lock file X: Permission
            // denied (os error 13)", not its first link alone.
            eprintln!("replica-stress: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}
