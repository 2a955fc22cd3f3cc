//! `PowerLossFs::crash` keeps exactly what a machine crash keeps: synced
//! bytes of files in synced directories; it drops unsynced writes and
//! undoes creations, renames and removals whose directory was not synced;
//! `TearLastWrite` keeps a sector-aligned prefix of each file's last
//! unsynced write; a capacity fails writes as a full disk does.

use std::io::ErrorKind;
use std::path::Path;

use fs::{Crash, FileSystem, OpenOptions, PowerLossFs};

fn read(disk: &PowerLossFs, path: &str) -> Option<Vec<u8>> {
    let file = match disk.open(Path::new(path), &OpenOptions::read()) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return None,
        Err(e) => panic!("{path}: {e}"),
    };
    let mut buf = vec![0; usize::try_from(file.len().unwrap()).unwrap()];
    file.read_exact_at(&mut buf, 0).unwrap();
    Some(buf)
}

fn write(disk: &PowerLossFs, path: &str, bytes: &[u8], sync: bool) {
    let f = disk
        .open(Path::new(path), &OpenOptions::create_truncate())
        .unwrap();
    f.write_all_at(bytes, 0).unwrap();
    if sync {
        f.sync_data().unwrap();
    }
}

#[test]
fn unsynced_writes_and_unsynced_directory_changes_are_lost() {
    let disk = PowerLossFs::new();
    disk.create_dir(Path::new("/db")).unwrap();
    disk.sync_dir(Path::new("/")).unwrap();
    write(&disk, "/db/synced", b"kept", true);
    write(&disk, "/db/unsynced", b"lost", false);
    disk.sync_dir(Path::new("/db")).unwrap();
    // After the directory sync: a new file, a rename, a removal, and an
    // unsynced append to a synced file.
    write(&disk, "/db/new", b"new", true);
    disk.rename(Path::new("/db/synced"), Path::new("/db/renamed"))
        .unwrap();
    disk.remove_file(Path::new("/db/unsynced")).unwrap();
    let f = disk
        .open(Path::new("/db/renamed"), &OpenOptions::write())
        .unwrap();
    f.write_all_at(b" and more", 4).unwrap();
    // 9 appended, and the removed file's 4 (a crash may bring it back).
    assert_eq!(disk.unsynced_bytes(), 13);

    disk.crash(Crash::LoseUnsynced);
    assert!(f.len().is_err(), "a handle from before the crash is dead");
    assert_eq!(read(&disk, "/db/synced").as_deref(), Some(&b"kept"[..]));
    assert_eq!(read(&disk, "/db/renamed"), None, "the rename is undone");
    assert_eq!(read(&disk, "/db/new"), None, "the creation is undone");
    assert_eq!(
        read(&disk, "/db/unsynced").as_deref(),
        Some(&b""[..]),
        "the removal is undone; its data was never synced"
    );
    assert_eq!(
        disk.read_dir(Path::new("/db")).unwrap(),
        vec![Path::new("/db/synced"), Path::new("/db/unsynced")]
    );
}

#[test]
fn a_directory_not_synced_into_its_parent_goes_with_its_files() {
    let disk = PowerLossFs::new();
    disk.create_dir_all(Path::new("/a/b")).unwrap();
    disk.sync_dir(Path::new("/a/b")).unwrap();
    disk.sync_dir(Path::new("/a")).unwrap();
    write(&disk, "/a/b/f", b"x", true);
    disk.sync_dir(Path::new("/a/b")).unwrap();
    // `/a` itself was never synced into `/`.
    disk.crash(Crash::LoseUnsynced);
    assert_eq!(disk.kind(Path::new("/a")).unwrap(), None);
    assert_eq!(disk.used(), 0);
}

#[test]
fn a_torn_write_keeps_the_sectors_up_to_its_middle() {
    let disk = PowerLossFs::new();
    write(&disk, "/log", &[1; 1000], true);
    disk.sync_dir(Path::new("/")).unwrap();
    let f = disk.open(Path::new("/log"), &OpenOptions::write()).unwrap();
    f.write_all_at(&[2; 100], 1000).unwrap(); // unsynced, kept whole
    f.write_all_at(&[3; 2048], 1100).unwrap(); // the last: torn
    disk.crash(Crash::TearLastWrite);
    let data = read(&disk, "/log").unwrap();
    // The middle byte of the last write is at 1100 + 1024 = 2124, in the
    // sector 2048..2560: the write is kept up to 2560.
    assert_eq!(data.len(), 2560);
    assert!(data[..1000].iter().all(|&b| b == 1));
    assert!(data[1000..1100].iter().all(|&b| b == 2));
    assert!(data[1100..].iter().all(|&b| b == 3));
    // What a crash kept is durable: a second crash keeps it.
    disk.crash(Crash::LoseUnsynced);
    assert_eq!(read(&disk, "/log").unwrap().len(), 2560);
}

#[test]
fn a_full_disk_refuses_writes_until_space_is_freed() {
    let disk = PowerLossFs::new();
    disk.set_capacity(Some(100));
    write(&disk, "/a", &[0; 80], true);
    assert_eq!(disk.free_space(Path::new("/")).unwrap(), 20);
    let f = disk
        .open(Path::new("/b"), &OpenOptions::create_new())
        .unwrap();
    let e = f.write_all_at(&[0; 30], 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::StorageFull, "{e}");
    assert_eq!(f.len().unwrap(), 0, "a refused write changes nothing");
    disk.remove_file(Path::new("/a")).unwrap();
    f.write_all_at(&[0; 30], 0).unwrap();
    assert_eq!(disk.free_space(Path::new("/")).unwrap(), 70);
}

#[test]
fn bad_calls_get_the_errors_a_real_file_system_gives() {
    let disk = PowerLossFs::new();
    let kind = |r: std::io::Result<()>| r.unwrap_err().kind();
    assert_eq!(
        disk.open(Path::new("/missing"), &OpenOptions::read())
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        disk.open(Path::new("/no/dir"), &OpenOptions::create_new())
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    write(&disk, "/f", b"x", false);
    assert_eq!(
        disk.open(Path::new("/f"), &OpenOptions::create_new())
            .unwrap_err()
            .kind(),
        ErrorKind::AlreadyExists
    );
    let ro = disk.open(Path::new("/f"), &OpenOptions::read()).unwrap();
    assert_eq!(
        ro.write_at(b"y", 0).unwrap_err().kind(),
        ErrorKind::PermissionDenied
    );
    disk.create_dir(Path::new("/d")).unwrap();
    write(&disk, "/d/g", b"x", false);
    assert_eq!(
        kind(disk.remove_dir(Path::new("/d"))),
        ErrorKind::DirectoryNotEmpty
    );
    assert_eq!(
        kind(disk.remove_file(Path::new("/d"))),
        ErrorKind::IsADirectory
    );
    assert_eq!(
        kind(disk.create_dir(Path::new("/f/x"))),
        ErrorKind::NotADirectory
    );
    assert_eq!(
        kind(disk.sync_dir(Path::new("/f"))),
        ErrorKind::NotADirectory
    );
    assert_eq!(
        kind(disk.create_dir(Path::new("/d/../e"))),
        ErrorKind::InvalidInput
    );
    let e = ro.read_exact_at(&mut [0; 4], 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
}

#[test]
fn a_hard_link_shares_the_file_and_lasts_once_its_directory_is_synced() {
    let disk = PowerLossFs::new();
    disk.create_dir_all(Path::new("/d")).unwrap();
    disk.sync_dir(Path::new("/")).unwrap();
    write(&disk, "/d/a", b"data", true);
    disk.sync_dir(Path::new("/d")).unwrap();
    disk.hard_link(Path::new("/d/a"), Path::new("/d/b"))
        .unwrap();
    assert_eq!(
        disk.hard_link(Path::new("/d/a"), Path::new("/d/b"))
            .unwrap_err()
            .kind(),
        ErrorKind::AlreadyExists
    );
    assert_eq!(read(&disk, "/d/b").as_deref(), Some(&b"data"[..]));
    disk.crash(Crash::LoseUnsynced);
    assert_eq!(read(&disk, "/d/b"), None, "the link was never synced");
    disk.hard_link(Path::new("/d/a"), Path::new("/d/b"))
        .unwrap();
    disk.sync_dir(Path::new("/d")).unwrap();
    disk.remove_file(Path::new("/d/a")).unwrap();
    disk.sync_dir(Path::new("/d")).unwrap();
    disk.crash(Crash::LoseUnsynced);
    assert_eq!(read(&disk, "/d/a"), None);
    assert_eq!(read(&disk, "/d/b").as_deref(), Some(&b"data"[..]));
}

#[test]
fn directories_created_durably_survive_a_crash() {
    let disk = PowerLossFs::new();
    disk.create_dir_all(Path::new("/a/b")).unwrap();
    disk.crash(Crash::LoseUnsynced);
    assert_eq!(disk.kind(Path::new("/a")).unwrap(), None, "never synced");
    disk.create_dir_all_durably(Path::new("/a/b/c")).unwrap();
    // Existing: nothing to do.
    disk.create_dir_all_durably(Path::new("/a/b")).unwrap();
    disk.crash(Crash::LoseUnsynced);
    assert_eq!(
        disk.kind(Path::new("/a/b/c")).unwrap(),
        Some(fs::EntryKind::Dir)
    );
}
