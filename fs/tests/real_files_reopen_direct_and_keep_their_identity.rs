//! A real file opened again for direct reads reads the same bytes and is
//! the same file (device and inode); through `FaultFs` the reopened file's
//! reads are counted and can fail like any other read; the power-loss file
//! system has no direct reads and no identity, and says so.

use std::path::Path;
use std::sync::Arc;

use fs::{FaultError, FaultFs, FaultRule, FileSystem, Op, OpenOptions, PowerLossFs, RealFs};

#[test]
fn a_reopened_real_file_reads_the_same_bytes_and_is_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    let f = RealFs.open(&path, &OpenOptions::create_new()).unwrap();
    let bytes: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
    f.write_all_at(&bytes, 0).unwrap();
    f.sync_data().unwrap();
    // Hints are accepted on any range.
    f.start_writeback(0, 8192).unwrap();
    f.drop_cached(0, 4096).unwrap();
    let id = f.identity().unwrap().expect("a real file has an identity");
    let again = RealFs.open(&path, &OpenOptions::read()).unwrap();
    assert_eq!(again.identity().unwrap(), Some(id));
    // tmpfs refuses O_DIRECT: then there is no direct reader, and that is
    // all the test can say.
    if let Some(direct) = f.reopen_direct().unwrap() {
        let mut r = writeback::direct::DirectReader::new(direct);
        assert_eq!(r.read(100, 5000).unwrap(), &bytes[100..5100]);
    }
}

#[test]
fn reads_of_a_reopened_file_are_counted_and_fail_as_told() {
    let dir = tempfile::tempdir().unwrap();
    let disk = FaultFs::new(Arc::new(RealFs));
    let path = dir.path().join("data");
    let f = disk.open(&path, &OpenOptions::create_new()).unwrap();
    f.write_all_at(&[7u8; 4096], 0).unwrap();
    let Some(direct) = f.reopen_direct().unwrap() else {
        // No direct I/O here: the reopen was still counted as an open.
        assert_eq!(disk.calls(Op::Open), 1);
        return;
    };
    assert_eq!(disk.calls(Op::Open), 1);
    disk.add_rule(FaultRule::nth(Op::Read, 1, FaultError::Io))
        .unwrap();
    // Direct reads want aligned buffers: the reader provides them.
    let mut r = writeback::direct::DirectReader::new(direct);
    let e = r.read(0, 4096).unwrap_err();
    assert!(e.to_string().contains("injected fault on Read"), "{e}");
    assert_eq!(r.read(0, 4096).unwrap(), &[7u8; 4096][..]);
}

#[test]
fn the_power_loss_file_system_has_no_direct_reads_and_no_identity() {
    let disk = PowerLossFs::new();
    let f = disk
        .open(Path::new("/f"), &OpenOptions::create_new())
        .unwrap();
    assert!(f.reopen_direct().unwrap().is_none());
    assert_eq!(f.identity().unwrap(), None);
}
