//! A profile of one hit, one miss and one write on each engine, measured
//! by counting (no timing, so a busy machine gives the same figures).
//!
//! Reads: a settled load (flushed, compacted, reopened), then distinct
//! keys read once (each a miss: the cache is cold after the reopen) and
//! read again (each a hit: the cache holds them all), one thread, per
//! read:
//!
//! * allocations (the counting global allocator of test-support);
//! * read system calls, bytes they read (`syscr`, `rchar` of
//!   `/proc/self/io`: every sstable block or index read is one `pread`) and
//!   bytes read from storage (`read_bytes`: 0 when the page cache held the
//!   files);
//! * the replica's steps: cache hits, misses, populations and evictions,
//!   sstable reads and the sstables they consulted (its metrics).
//!
//!
//! Writes: the write shape's partitions (128 rows of 1 KiB), one thread,
//! the commit log periodic (fjall: its journal written to the OS at each
//! write), per write: allocations, write system calls, bytes written and
//! bytes that reached storage, for the writes alone and then through the
//! flush and a major compaction (everything the process did, background
//! threads included). Allocations include the bench's own: each row's
//! value (a `Vec`), and its key (fjall) or clustering key (the replica).
//!
//! `cargo bench -p replmem-replica-stress --bench profile` (`-- --test`
//! or `--quick`: fewer partitions, keys and writes).

#[allow(
    dead_code,
    reason = "the peer bench's parts this profile does not use (its parent, its report)"
)]
#[path = "peer/harness/mod.rs"]
mod harness;

use std::io::Write;

use harness::data::ValueBook;
use harness::engine::{self, Engine, ReadCheck};
use harness::{EngineKind, Shape};
use serde_json::Value;

#[global_allocator]
static GLOBAL: test_support::CountingAllocator = test_support::CountingAllocator;

/// `/proc/self/io`'s read counters (or, from [`write_io`], its write
/// counters).
#[derive(Debug, Clone, Copy, Default)]
struct Io {
    syscalls: u64,
    chars: u64,
    storage: u64,
}

/// `/proc/self/io`'s write counters.
fn write_io() -> harness::Result<Io> {
    io_fields(["syscw", "wchar", "write_bytes"])
}

fn io() -> harness::Result<Io> {
    io_fields(["syscr", "rchar", "read_bytes"])
}

fn io_fields([syscalls, chars, storage]: [&str; 3]) -> harness::Result<Io> {
    let text = std::fs::read_to_string("/proc/self/io")?;
    let field = |name: &str| -> harness::Result<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": ")?.parse().ok())
            .ok_or_else(|| format!("/proc/self/io has no {name}").into())
    };
    Ok(Io {
        syscalls: field(syscalls)?,
        chars: field(chars)?,
        storage: field(storage)?,
    })
}

/// The counters that one pass of reads moved.
#[derive(Debug, Default)]
struct Pass {
    reads: u64,
    allocations: u64,
    io: Io,
    /// The replica's counters after less before (cache hits, misses,
    /// populations, evictions, sstable reads, sstables consulted).
    steps: [u64; 6],
}

fn steps(figures: &Value) -> [u64; 6] {
    let c = &figures["cache"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    [
        n(&c["hits"]),
        n(&c["misses"]),
        n(&c["populations"]),
        n(&c["evictions"]),
        n(&figures["sstable_reads"]),
        n(&figures["sstables_consulted"]),
    ]
}

fn pass(
    engine: &dyn Engine,
    keys: &[u64],
    shape: Shape,
    values: &ValueBook,
    overhead: Io,
) -> harness::Result<Pass> {
    let before_steps = steps(&engine.figures());
    let before_io = io()?;
    let before_allocations = test_support::allocations();
    for &k in keys {
        if let ReadCheck::Bad(why) = engine.read(k, shape, values)? {
            return Err(why.into());
        }
    }
    let allocations = test_support::allocations() - before_allocations;
    let after_io = io()?;
    let after_steps = steps(&engine.figures());
    let mut s = [0; 6];
    for (i, d) in s.iter_mut().enumerate() {
        *d = after_steps[i] - before_steps[i];
    }
    Ok(Pass {
        reads: keys.len() as u64,
        allocations,
        io: Io {
            syscalls: (after_io.syscalls - before_io.syscalls).saturating_sub(overhead.syscalls),
            chars: (after_io.chars - before_io.chars).saturating_sub(overhead.chars),
            storage: after_io.storage - before_io.storage,
        },
        steps: s,
    })
}

/// What reading `/proc/self/io` itself adds to its counters.
fn io_overhead() -> harness::Result<Io> {
    let a = io()?;
    let b = io()?;
    Ok(Io {
        syscalls: b.syscalls - a.syscalls,
        chars: b.chars - a.chars,
        storage: 0,
    })
}

fn profile(
    kind: EngineKind,
    shape: Shape,
    partitions: u64,
    reads: u64,
    out: &mut impl Write,
) -> harness::Result<()> {
    let dir = tempfile::Builder::new().prefix("read-profile").tempdir()?;
    let values = ValueBook::new(shape.row_bytes);
    // Memory enough for every partition read: the hits are hits.
    let budget = 64 << 20;
    let cache = (reads * shape.bytes() * 4).max(64 << 20);
    {
        let e = engine::open(kind, dir.path(), budget, cache, false)?;
        for p in 0..partitions {
            e.write(p, shape, &values)?;
        }
        e.settle()?;
        e.close()?;
    }
    let e = engine::open(kind, dir.path(), budget, cache, false)?;
    // Distinct keys spread over the data (a stride prime to the count).
    let stride = (partitions / reads).max(1) | 1;
    let keys: Vec<u64> = (0..reads).map(|i| (i * stride + 7) % partitions).collect();
    let overhead = io_overhead()?;
    let miss = pass(&*e, &keys, shape, &values, overhead)?;
    let hit = pass(&*e, &keys, shape, &values, overhead)?;
    e.close()?;
    for (name, p) in [("miss", &miss), ("hit", &hit)] {
        let per = |v: u64| v as f64 / p.reads as f64;
        let steps = if kind == EngineKind::Replica {
            format!(
                "{:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2}",
                per(p.steps[0]),
                per(p.steps[1]),
                per(p.steps[2]),
                per(p.steps[3]),
                per(p.steps[4]),
                per(p.steps[5]),
            )
        } else {
            "- | - | - | - | - | -".to_string()
        };
        writeln!(
            out,
            "| {} | {} | {name} | {:.1} | {:.2} | {:.0} | {:.0} | {steps} |",
            kind.name(),
            shape.name(),
            per(p.allocations),
            per(p.io.syscalls),
            per(p.io.chars),
            per(p.io.storage),
        )?;
    }
    Ok(())
}

/// The write shape on `kind`: `writes` partitions of 128 rows of 1 KiB,
/// then the flush and a major compaction; one table row for each part.
fn write_profile(kind: EngineKind, writes: u64, out: &mut impl Write) -> harness::Result<()> {
    let dir = tempfile::Builder::new().prefix("write-profile").tempdir()?;
    let shape = Shape::WRITE;
    let values = ValueBook::new(shape.row_bytes);
    let e = engine::open(kind, dir.path(), 64 << 20, 64 << 20, true)?;
    let measure = |f: &mut dyn FnMut() -> harness::Result<()>| -> harness::Result<(u64, Io)> {
        let (before, allocations) = (write_io()?, test_support::allocations());
        f()?;
        let (after, allocations) = (write_io()?, test_support::allocations() - allocations);
        Ok((
            allocations,
            Io {
                syscalls: after.syscalls - before.syscalls,
                chars: after.chars - before.chars,
                storage: after.storage - before.storage,
            },
        ))
    };
    let writes_only = measure(&mut || {
        for p in 0..writes {
            e.write(p, shape, &values)?;
        }
        Ok(())
    })?;
    let settle = measure(&mut || e.settle())?;
    e.close()?;
    let user = (writes * shape.bytes()) as f64;
    for (name, (allocations, io)) in [
        ("writes", writes_only),
        (
            "writes, flush, compaction",
            (
                writes_only.0 + settle.0,
                Io {
                    syscalls: writes_only.1.syscalls + settle.1.syscalls,
                    chars: writes_only.1.chars + settle.1.chars,
                    storage: writes_only.1.storage + settle.1.storage,
                },
            ),
        ),
    ] {
        let per = |v: u64| v as f64 / writes as f64;
        writeln!(
            out,
            "| {} | {} | {name} | {:.1} | {:.2} | {:.0} | {:.2} | {:.0} |",
            kind.name(),
            shape.name(),
            per(allocations),
            per(io.syscalls),
            per(io.chars),
            io.chars as f64 / user,
            per(io.storage),
        )?;
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--test" || a == "--quick");
    let (partitions, reads, writes) = if quick {
        (2_000, 200, 100)
    } else {
        (40_000, 4_000, 1_000)
    };
    let mut out = std::io::stdout();
    let header = format!(
        "read profile: {partitions} partitions loaded, flushed, compacted, reopened; {reads} distinct keys read \
         once (misses) then again (hits), one thread; figures per read\n\n\
         | engine | shape | read | allocations | read syscalls | bytes read | from storage | cache hits | cache misses | populations | evictions | sstable reads | sstables consulted |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    println!("{header}");
    for shape in [
        Shape {
            rows: 1,
            row_bytes: 8192,
        },
        Shape {
            rows: 8,
            row_bytes: 1024,
        },
    ] {
        for kind in [EngineKind::Replica, EngineKind::Fjall] {
            if let Err(e) = profile(kind, shape, partitions, reads, &mut out) {
                eprintln!("read profile of {} {}: {e}", kind.name(), shape.name());
                std::process::exit(1);
            }
        }
    }
    println!(
        "\nwrite profile: {writes} partitions of 128 rows of 1 KiB, one thread, commit log periodic \
         (fjall: journal written to the OS each write); figures per write\n\n\
         | engine | shape | measured | allocations | write syscalls | bytes written | written / user bytes | to storage |\n\
         |---|---|---|---|---|---|---|---|"
    );
    for kind in [EngineKind::Replica, EngineKind::Fjall] {
        if let Err(e) = write_profile(kind, writes, &mut out) {
            eprintln!("write profile of {}: {e}", kind.name());
            std::process::exit(1);
        }
    }
}
