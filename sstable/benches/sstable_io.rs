//! Benchmark: sstable write bandwidth against plain buffered writes of the
//! same number of bytes (both ending with one fdatasync), with and without
//! LZ4, each written through the page cache with incremental write-back on
//! and off and with direct I/O (in the same run), with the process CPU
//! each variant used, and point-lookup latency against a raw positional
//! read of one block.
//!
//! ```text
//! cargo bench -p replmem-sstable --bench sstable_io -- [--scale F] [--dir PATH] [--runs N] [--only write|commit|lookup]
//! ```
//!
//! `--scale 1` is the full size: 1 GiB of 128 KiB partitions written, and
//! lookups on a file of 1,000,000 partitions. The default scale is 1/16.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use mutation::{Cell, DecoratedKey, Mutation, Row, Timestamp};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sstable::{Component, Sstable, Writer, WriterOptions, component_path};

struct Args {
    scale: f64,
    dir: PathBuf,
    runs: usize,
    only: Option<String>,
}

fn parse_args() -> Args {
    let mut args = Args {
        scale: 1.0 / 16.0,
        dir: std::env::temp_dir(),
        runs: 5,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--scale" => {
                args.scale = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--scale takes a number")
            }
            "--dir" => args.dir = PathBuf::from(it.next().expect("--dir takes a path")),
            "--runs" => {
                args.runs = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--runs takes a count")
            }
            "--only" => args.only = Some(it.next().expect("--only takes write, commit or lookup")),
            "--bench" => {}
            other => panic!(
                "unknown argument {other}; use --scale F, --dir PATH, --runs N, --only write|lookup"
            ),
        }
    }
    args
}

/// Values half random, half repetitive text, so LZ4 has something to do
/// without the data being trivially compressible.
fn value(rng: &mut SmallRng, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rng.fill(&mut v[..len / 2]);
    let text = b"customer-record status=active region=eu-west-1 tier=gold ";
    for (i, b) in v[len / 2..].iter_mut().enumerate() {
        *b = text[i % text.len()];
    }
    v
}

/// Fragments of `count` partitions of about 128 KiB each (128 rows of one
/// 1 KiB cell), sharing value buffers.
fn big_partitions(count: usize, incompressible: bool) -> Vec<Mutation> {
    let mut rng = SmallRng::seed_from_u64(1);
    let values: Vec<bytes::Bytes> = (0..64)
        .map(|_| {
            if incompressible {
                let mut v = vec![0u8; 1000];
                rng.fill(&mut v[..]);
                v.into()
            } else {
                value(&mut rng, 1000).into()
            }
        })
        .collect();
    let mut ms = Vec::with_capacity(count);
    for p in 0..count {
        let mut b = Mutation::builder(
            DecoratedKey::from_bytes(format!("partition-{p:08}").into_bytes()).unwrap(),
        );
        for r in 0..128u32 {
            let row = Row::new().with_cell(
                1,
                Cell::live(
                    values[(p + r as usize) % 64].clone(),
                    Timestamp::from_micros(1_700_000_000_000_000 + i64::from(r)),
                ),
            );
            b = b.row(r.to_be_bytes().to_vec(), row);
        }
        ms.push(b.build().unwrap());
    }
    ms.sort_by(|a, b| a.key().cmp(b.key()));
    ms
}

/// Writes the fragments as an sstable; returns the total time, raw bytes,
/// file bytes (Data + Index), and the time spent in `commit`.
///
/// Each partition's fragments are materialised just before the writer
/// consumes them, outside the timed sections, as a flush reader hands over
/// freshly built fragments; the time is the writer's alone (create, every
/// `write`, `commit`).
fn write_sstable(
    dir: &Path,
    partitions: &[Mutation],
    compression: bool,
    bytes_per_sync: u64,
    direct_io: bool,
) -> (Duration, u64, u64, Duration) {
    let mut o = WriterOptions::default();
    o.compression = compression;
    o.bytes_per_sync = bytes_per_sync;
    o.direct_io = direct_io;
    let start = Instant::now();
    let mut w = Writer::create(dir, o).unwrap();
    let mut elapsed = start.elapsed();
    for m in partitions {
        let fragments = m.fragments();
        let t = Instant::now();
        for f in &fragments {
            w.write(f).unwrap();
        }
        elapsed += t.elapsed();
    }
    let commit_start = Instant::now();
    let c = w.commit().unwrap();
    let commit = commit_start.elapsed();
    elapsed += commit;
    let s = &c.statistics;
    for comp in Component::ALL {
        std::fs::remove_file(component_path(dir, c.generation, comp)).unwrap();
    }
    (
        elapsed,
        s.data_raw_bytes,
        s.data_size + s.index_size,
        commit,
    )
}

fn write_plain(dir: &Path, bytes: u64) -> Duration {
    let path = dir.join("plain-baseline.bin");
    let chunk = vec![0x5au8; 128 << 10];
    let start = Instant::now();
    let file = std::fs::File::create(&path).unwrap();
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        w.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    let file = w.into_inner().unwrap();
    file.sync_data().unwrap();
    let elapsed = start.elapsed();
    std::fs::remove_file(&path).unwrap();
    elapsed
}

/// CPU seconds this process has used (user + system), from
/// `/proc/self/stat` (clock ticks of 10 ms); 0 where there is none.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which is in parentheses): utime and
    // stime are the 12th and 13th of them.
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bench_write(args: &Args, dir: &Path, incompressible: bool) {
    let total = ((1u64 << 30) as f64 * args.scale) as u64;
    let count = (total / (128 << 10)).max(1) as usize;
    let partitions = big_partitions(count, incompressible);
    println!(
        "## Write{}: {count} partitions of ~128 KiB ({} MiB raw), {} runs, median shown",
        if incompressible {
            " (incompressible values)"
        } else {
            " (values half random, half text)"
        },
        total >> 20,
        args.runs
    );
    println!();
    println!("Each run writes the seven variants back to back, rotating their order; the ratio is");
    println!(
        "taken within each run (same machine state), then the median over runs. Write-back is"
    );
    println!(
        "`WriterOptions::bytes_per_sync`: on (the 1 MiB default) or off (0), through the page"
    );
    println!("cache (`direct_io` off); direct I/O is `WriterOptions::direct_io` (the default).");
    println!("CPU is the process's user + system seconds over the variant's runs (median).");
    println!();
    println!(
        "| variant | median time (s) | of which commit (s) | logical MiB/s | file MiB | median ratio vs plain | CPU s |"
    );
    println!("|---|---|---|---|---|---|---|");
    // (name, compression, bytes_per_sync, direct_io); variant 0 is the
    // plain baseline.
    let on = WriterOptions::default().bytes_per_sync;
    let variants: [(&str, bool, u64, bool); 7] = [
        ("plain BufWriter + 1 fdatasync", false, 0, false),
        (
            "sstable writer, no compression, write-back on",
            false,
            on,
            false,
        ),
        ("sstable writer, LZ4, write-back on", true, on, false),
        (
            "sstable writer, no compression, write-back off",
            false,
            0,
            false,
        ),
        ("sstable writer, LZ4, write-back off", true, 0, false),
        (
            "sstable writer, no compression, direct I/O",
            false,
            on,
            true,
        ),
        ("sstable writer, LZ4, direct I/O", true, on, true),
    ];
    let n = variants.len();
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut sizes = vec![0u64; n];
    let mut commits: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut raw = 0;
    for run in 0..args.runs {
        let mut t = vec![0f64; n];
        for k in 0..n {
            let variant = (run + k) % n;
            let cpu_start = cpu_seconds();
            match variant {
                0 => {
                    // The plain baseline writes the same number of bytes as the
                    // uncompressed sstable's Data file holds raw data.
                    let bytes = if raw == 0 {
                        write_sstable(dir, &partitions, false, on, false).1
                    } else {
                        raw
                    };
                    raw = bytes;
                    t[0] = write_plain(dir, bytes).as_secs_f64();
                    sizes[0] = bytes;
                }
                v => {
                    let (_, compression, bytes_per_sync, direct_io) = variants[v];
                    let r = write_sstable(dir, &partitions, compression, bytes_per_sync, direct_io);
                    raw = r.1;
                    t[v] = r.0.as_secs_f64();
                    sizes[v] = r.2;
                    commits[v].push(r.3.as_secs_f64());
                }
            }
            cpu[variant].push(cpu_seconds() - cpu_start);
        }
        for v in 0..n {
            times[v].push(t[v]);
            ratios[v].push(t[0] / t[v]);
        }
    }
    for v in 0..n {
        let t = median(times[v].clone());
        let commit = if v == 0 {
            "-".to_owned()
        } else {
            format!("{:.3}", median(commits[v].clone()))
        };
        println!(
            "| {} | {:.3} | {commit} | {:.1} | {} | {:.2} | {:.2} |",
            variants[v].0,
            t,
            raw as f64 / (1 << 20) as f64 / t,
            sizes[v] >> 20,
            median(ratios[v].clone()),
            median(cpu[v].clone())
        );
    }
    println!();
    let rounded = |v: &[f64]| {
        v.iter()
            .map(|r| (r * 100.0).round() / 100.0)
            .collect::<Vec<_>>()
    };
    for v in 1..n {
        println!(
            "per-run ratios, {}: {:?}",
            variants[v].0,
            rounded(&ratios[v])
        );
    }
    // Write-back on against off, within each run.
    for (on_v, off_v) in [(1, 3), (2, 4)] {
        let within: Vec<f64> = times[off_v]
            .iter()
            .zip(&times[on_v])
            .map(|(off, on)| off / on)
            .collect();
        println!(
            "median speed of write-back on vs off ({}): {:.2}",
            if on_v == 1 { "no compression" } else { "LZ4" },
            median(within)
        );
    }
    // Direct I/O against buffered with write-back on, within each run.
    for (direct_v, buffered_v) in [(5, 1), (6, 2)] {
        let within: Vec<f64> = times[buffered_v]
            .iter()
            .zip(&times[direct_v])
            .map(|(b, d)| b / d)
            .collect();
        println!(
            "median speed of direct I/O vs buffered with write-back ({}): {:.2}; CPU {:.2} s vs {:.2} s",
            if direct_v == 5 {
                "no compression"
            } else {
                "LZ4"
            },
            median(within),
            median(cpu[direct_v].clone()),
            median(cpu[buffered_v].clone()),
        );
    }
    println!();
}

fn bench_lookup(args: &Args, dir: &Path) {
    let partitions = ((1_000_000f64 * args.scale) as usize).max(1000);
    let lookups = 200_000.min(partitions * 4);
    let keys: Vec<DecoratedKey> = (0..partitions)
        .map(|i| DecoratedKey::from_bytes(format!("user:{i:010}").into_bytes()).unwrap())
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    println!(
        "## Point lookups: {partitions} partitions (one 100-byte cell each), {lookups} lookups per row (page cache warm)"
    );
    println!();
    println!("| operation | p50 (us) | p99 (us) | p99.9 (us) | mean (us) |");
    println!("|---|---|---|---|---|");
    let mut notes = Vec::new();
    for compression in [false, true] {
        let mut rng = SmallRng::seed_from_u64(2);
        let val = value(&mut rng, 100);
        let mut o = WriterOptions::default();
        o.compression = compression;
        let mut w = Writer::create(dir, o).unwrap();
        for k in &sorted {
            let m = Mutation::builder(k.clone())
                .cell(
                    b"c".to_vec(),
                    1,
                    Cell::live(val.clone(), Timestamp::from_micros(1)),
                )
                .build()
                .unwrap();
            for f in m.fragments() {
                w.write(&f).unwrap();
            }
        }
        let c = w.commit().unwrap();
        let table = Sstable::open(dir, c.generation).unwrap();
        let mut hit = Histogram::<u64>::new(3).unwrap();
        let mut miss = Histogram::<u64>::new(3).unwrap();
        let mut raw = Histogram::<u64>::new(3).unwrap();
        let data = std::fs::File::open(component_path(dir, c.generation, Component::Data)).unwrap();
        let data_len = data.metadata().unwrap().len();
        let mut buf = vec![0u8; 16 << 10];
        let mut false_positives = 0u64;
        for i in 0..lookups {
            let k = &keys[rng.gen_range(0..partitions)];
            let t = Instant::now();
            let got = table.read_partition(k).unwrap();
            hit.record(t.elapsed().as_nanos() as u64).unwrap();
            assert!(got.is_some());
            let absent = DecoratedKey::from_bytes(format!("nobody:{i}").into_bytes()).unwrap();
            false_positives += u64::from(table.may_contain(&absent));
            let t = Instant::now();
            let got = table.read_partition(&absent).unwrap();
            miss.record(t.elapsed().as_nanos() as u64).unwrap();
            assert!(got.is_none());
            if !compression {
                let off = rng.gen_range(0..data_len.saturating_sub(buf.len() as u64).max(1));
                let t = Instant::now();
                std::os::unix::fs::FileExt::read_at(&data, &mut buf, off).unwrap();
                std::hint::black_box(crc32c::crc32c(&buf));
                raw.record(t.elapsed().as_nanos() as u64).unwrap();
            }
        }
        let tag = if compression { "LZ4" } else { "no compression" };
        let mut rows = vec![
            (format!("read_partition, present key, {tag}"), &hit),
            (format!("read_partition, absent key, {tag}"), &miss),
        ];
        if !compression {
            rows.push(("baseline: pread 16 KiB + crc32c".to_owned(), &raw));
            notes.push(format!(
                "present-key p50 / baseline p50 = {:.2}",
                hit.value_at_quantile(0.5) as f64 / raw.value_at_quantile(0.5) as f64
            ));
        }
        for (name, h) in rows {
            println!(
                "| {name} | {:.1} | {:.1} | {:.1} | {:.1} |",
                h.value_at_quantile(0.5) as f64 / 1000.0,
                h.value_at_quantile(0.99) as f64 / 1000.0,
                h.value_at_quantile(0.999) as f64 / 1000.0,
                h.mean() / 1000.0
            );
        }
        let s = table.statistics();
        notes.push(format!(
            "{tag}: Data {} KiB in {} blocks, Index {} KiB, {:.2} data blocks read per present lookup, absent-key false positives {:.3}%",
            s.data_size >> 10,
            s.data_blocks,
            s.index_size >> 10,
            table.data_blocks_read() as f64 / lookups as f64,
            false_positives as f64 * 100.0 / lookups as f64
        ));
        for comp in Component::ALL {
            std::fs::remove_file(component_path(dir, c.generation, comp)).unwrap();
        }
    }
    println!();
    for n in notes {
        println!("{n}");
    }
}

/// The fixed cost of a commit: tiny sstables (one small partition), so
/// the time is the fsyncs and renames, not the data.
fn bench_commit(args: &Args, dir: &Path) {
    let count = (args.runs * 20).max(20);
    let m = Mutation::builder(DecoratedKey::from_bytes(b"k".to_vec()).unwrap())
        .cell(
            b"c".to_vec(),
            1,
            Cell::live(b"v".to_vec(), Timestamp::from_micros(1)),
        )
        .build()
        .unwrap();
    let fragments = m.fragments();
    let mut h = Histogram::<u64>::new(3).unwrap();
    let mut sync = Histogram::<u64>::new(3).unwrap();
    for _ in 0..count {
        let t = Instant::now();
        let mut w = Writer::create(dir, WriterOptions::default()).unwrap();
        for f in &fragments {
            w.write(f).unwrap();
        }
        let c = w.commit().unwrap();
        h.record(t.elapsed().as_micros() as u64).unwrap();
        for comp in Component::ALL {
            std::fs::remove_file(component_path(dir, c.generation, comp)).unwrap();
        }
        // Baseline: create, write and fdatasync one small file.
        let path = dir.join("one-small-file");
        let t = Instant::now();
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(b"0123456789").unwrap();
        f.sync_data().unwrap();
        sync.record(t.elapsed().as_micros() as u64).unwrap();
        std::fs::remove_file(&path).unwrap();
    }
    println!("## Commit of a one-partition sstable ({count} commits)");
    println!();
    println!("| operation | p50 (ms) | p99 (ms) |");
    println!("|---|---|---|");
    for (name, h) in [
        (
            "create + write + commit (7 files, 7 fdatasyncs, 2 directory fsyncs)",
            &h,
        ),
        ("baseline: create + write + fdatasync one small file", &sync),
    ] {
        println!(
            "| {name} | {:.2} | {:.2} |",
            h.value_at_quantile(0.5) as f64 / 1000.0,
            h.value_at_quantile(0.99) as f64 / 1000.0
        );
    }
    println!();
    println!(
        "commit p50 / one-file p50 = {:.1}",
        h.value_at_quantile(0.5) as f64 / sync.value_at_quantile(0.5) as f64
    );
    println!();
}

fn main() {
    let args = parse_args();
    let dir = tempfile::tempdir_in(&args.dir).unwrap();
    println!(
        "# sstable_io (scale {}, dir {})",
        args.scale,
        args.dir.display()
    );
    println!();
    if args.only.as_deref().is_none_or(|o| o == "write") {
        bench_write(&args, dir.path(), false);
        bench_write(&args, dir.path(), true);
    }
    if args.only.as_deref().is_none_or(|o| o == "commit") {
        bench_commit(&args, dir.path());
    }
    if args.only.as_deref().is_none_or(|o| o == "lookup") {
        bench_lookup(&args, dir.path());
    }
}
