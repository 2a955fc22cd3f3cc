//! The replica beside fjall (issue 35): the same work on both engines,
//! each in a child process of its own (so peak RSS and CPU are per
//! engine), with the same memory (dirty budget and cache), compaction on:
//!
//! * `write`: the write shape (100 threads, partitions of 128 rows of
//!   1 KiB, a 256 MiB dirty budget, the commit log periodic; fjall's
//!   journal written to the OS at each write and synced at the same
//!   period);
//! * `read`: point reads after a load that settles both (flushed, major
//!   compaction, closed, reopened in a new process), 16 reader threads,
//!   uniform and YCSB zipfian (theta 0.99) keys, data at 1x, 4x and 12x the
//!   cache, partitions of one 8 KiB row and of 8 rows of 1 KiB, every
//!   read's value checked.
//!
//! For each engine: op rate, p50/p95/p99/max, CPU per operation (the
//! child's /proc/self/stat over the measured phase), peak RSS (VmHWM),
//! the longest stall (the longest interval with no completion), and the
//! ratios replica/fjall; for reads, the replica's cache hit ratio beside
//! the LRU bound simulated over the run's own trace of keys.
//!
//! The full runs (a quiet machine):
//! `cargo bench -p replmem-replica-stress --bench peer -- --runs 3`;
//! `--help` lists the options (`--scale 64 --duration 2s` is the smoke
//! size the test `peer_smoke` runs).

mod harness;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`; `cargo bench -- --test` asks for one
    // quick pass: the smoke size.
    if let Err(e) = harness::main(&args, &mut std::io::stdout()) {
        eprintln!("peer bench: {e}");
        std::process::exit(1);
    }
}
