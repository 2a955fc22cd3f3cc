//! A device's configured bandwidth holds within 5% over 10 seconds of
//! real time: two writers charge 256 KiB chunks to one 20 MiB/s device,
//! as fast as it lets them, and write each chunk to a file. A bucket is
//! an upper bound (at most `burst + rate * t` bytes by time `t`), so the
//! figure cannot be above the rate by more than the burst over 10 s (2%);
//! 20 MiB/s is low enough for a loaded machine to keep the bucket busy,
//! and the burst (4 MiB, 200 ms) absorbs scheduling delays, so it cannot
//! fall far below either.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use device::Device;

#[test]
fn twenty_mib_per_second_holds_within_five_percent_over_ten_seconds() {
    const RATE: u64 = 20 << 20;
    const CHUNK: usize = 256 << 10;
    const SPAN: Duration = Duration::from_secs(10);
    let disk = Device::new("disk", RATE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let charged = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let writers: Vec<_> = (0..2)
        .map(|i| {
            let (disk, charged) = (Arc::clone(&disk), Arc::clone(&charged));
            let path = dir.path().join(format!("writer-{i}"));
            std::thread::spawn(move || {
                let mut file = std::fs::File::create(&path).unwrap();
                let chunk = vec![i as u8; CHUNK];
                let mut written = 0u64;
                while start.elapsed() < SPAN {
                    disk.charge_write(CHUNK as u64);
                    file.write_all(&chunk).unwrap();
                    charged.fetch_add(CHUNK as u64, Ordering::Relaxed);
                    written += CHUNK as u64;
                    // Keep the scratch file small: start over every 16 MiB.
                    if written >= 16 << 20 {
                        file.set_len(0).unwrap();
                        file = std::fs::File::create(&path).unwrap();
                        written = 0;
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let elapsed = start.elapsed();
    let bytes = charged.load(Ordering::Relaxed);
    let rate = bytes as f64 / elapsed.as_secs_f64();
    let ratio = rate / RATE as f64;
    assert!(
        (0.95..=1.05).contains(&ratio),
        "{bytes} bytes in {elapsed:?}: {:.2} MiB/s against 20 MiB/s ({ratio:.4}x)",
        rate / f64::from(1 << 20)
    );
    let stats = disk.stats();
    assert_eq!(stats.bytes_written, bytes);
    // Both writers waited for the rate most of the time.
    assert!(stats.waited > Duration::from_secs(10), "{stats:?}");
}
