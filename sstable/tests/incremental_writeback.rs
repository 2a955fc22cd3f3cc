//! `WriterOptions::bytes_per_sync` starts write-back every that many bytes
//! written to Data and Index (counted by `Writer::writeback_requests`), 0
//! turns it off, a value below 4 KiB is refused, and the sstable written is
//! the same either way.

use mutation::{Cell, DecoratedKey, Mutation, Timestamp, to_mutations};
use sstable::{Error, Sstable, Writer, WriterOptions};

/// 64 partitions of 16 rows of 1 KiB of incompressible bytes: about 1 MiB.
fn partitions() -> Vec<Mutation> {
    let mut x = 1u32;
    let mut value = || {
        (0..1024)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect::<Vec<u8>>()
    };
    let mut ms: Vec<Mutation> = (0..64)
        .map(|p| {
            let mut b = Mutation::builder(DecoratedKey::from_bytes(format!("p{p:03}")).unwrap());
            for r in 0..16u32 {
                b = b.cell(
                    format!("r{r:02}"),
                    0,
                    Cell::live(value(), Timestamp::from_micros(1)),
                );
            }
            b.build().unwrap()
        })
        .collect();
    ms.sort_by(|a, b| a.key().cmp(b.key()));
    ms
}

/// Writes `ms` with `bytes_per_sync`; returns the requests counted before
/// the commit, the Data file's size, and what reads back.
fn write(dir: &std::path::Path, ms: &[Mutation], bytes_per_sync: u64) -> (u64, u64, Vec<Mutation>) {
    write_with(dir, ms, bytes_per_sync, false)
}

/// As [`write`], the Data file written with direct I/O or not.
fn write_with(
    dir: &std::path::Path,
    ms: &[Mutation],
    bytes_per_sync: u64,
    direct_io: bool,
) -> (u64, u64, Vec<Mutation>) {
    let mut options = WriterOptions::default();
    options.bytes_per_sync = bytes_per_sync;
    // Write-back is for the page cache: these tests write through it.
    options.direct_io = direct_io;
    options.io_buffer = 64 << 10;
    options.compression = false;
    let mut w = Writer::create(dir, options).unwrap();
    for m in ms {
        for f in m.fragments() {
            w.write(&f).unwrap();
        }
    }
    let requests = w.writeback_requests();
    let c = w.commit().unwrap();
    let sst = Sstable::open(dir, c.generation).unwrap();
    sst.verify().unwrap();
    let back = to_mutations(&mut sst.scan()).unwrap();
    (requests, c.statistics.data_size, back)
}

#[test]
fn write_back_comes_every_n_bytes_and_zero_turns_it_off() {
    let dir = tempfile::tempdir().unwrap();
    let ms = partitions();
    let (every_64k, data_size, a) = write(dir.path(), &ms, 64 << 10);
    let (every_256k, _, b) = write(dir.path(), &ms, 256 << 10);
    let (off, _, c) = write(dir.path(), &ms, 0);
    assert!(data_size > 1 << 20, "{data_size}");
    // Data reaches its file in 64 KiB writes (the I/O buffer), so a
    // request follows every write past the threshold: at least one per
    // full threshold of what was written before the commit.
    let full = data_size - (64 << 10);
    assert!(
        every_64k >= full / (64 << 10),
        "{every_64k} for {data_size}"
    );
    assert!(every_64k <= data_size / (64 << 10) + 1, "{every_64k}");
    assert!(
        every_256k >= full / (256 << 10) && every_256k < every_64k,
        "{every_256k}"
    );
    assert_eq!(off, 0);
    assert_eq!(a, ms);
    assert_eq!(b, ms);
    assert_eq!(c, ms);
}

#[test]
fn a_threshold_below_4_kib_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = WriterOptions::default();
    assert_eq!(options.bytes_per_sync, 1 << 20);
    options.bytes_per_sync = 4095;
    let e = Writer::create(dir.path(), options).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidOption {
                name: "bytes_per_sync",
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("0 (off) or at least 4096 bytes"),
        "{e}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn direct_io_writes_the_same_sstable_and_needs_no_write_back_for_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let ms = partitions();
    let (buffered_requests, buffered_size, a) = write_with(dir.path(), &ms, 64 << 10, false);
    let (direct_requests, direct_size, b) = write_with(dir.path(), &ms, 64 << 10, true);
    // The same bytes (the zero padding of the last block trimmed at
    // commit: `verify` checks the Data file's length and checksum).
    assert_eq!(direct_size, buffered_size);
    assert_eq!(a, ms);
    assert_eq!(b, ms);
    if direct_io_works(dir.path()) {
        // Only the Index still goes through the page cache.
        assert!(
            direct_requests < buffered_requests / 4,
            "{direct_requests} against {buffered_requests}"
        );
    }
}

/// Whether files in `dir` can be opened with O_DIRECT (not on every file
/// system; elsewhere the writer writes through the page cache).
fn direct_io_works(dir: &std::path::Path) -> bool {
    let probe = dir.join("direct-probe");
    std::fs::File::create(&probe).unwrap();
    let works = writeback::direct::reopen_direct(&probe).unwrap().is_some();
    std::fs::remove_file(&probe).unwrap();
    if !works {
        eprintln!("note: O_DIRECT refused in {}", dir.display());
    }
    works
}
