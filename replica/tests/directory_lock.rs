//! A database directory locked by another process is refused with a clear
//! error, and free again once that process exits.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use replica::{DirectoryLock, Error};

const HOLDER_ENV: &str = "REPLICA_TEST_LOCK_HOLDER";
const HELD: &str = "REPLICA-TEST-LOCK-HELD";

/// In the child: lock the directory, say so, and hold the lock until the
/// parent closes our standard input.
fn hold(dir: &Path) {
    let _lock = DirectoryLock::acquire(dir).unwrap();
    println!("{HELD}");
    std::io::stdout().flush().unwrap();
    let mut rest = String::new();
    std::io::stdin().read_line(&mut rest).unwrap();
}

#[test]
fn a_directory_held_by_another_process_is_refused_until_it_exits() {
    if let Some(dir) = std::env::var_os(HOLDER_ENV) {
        hold(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_directory_held_by_another_process_is_refused_until_it_exits",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOLDER_ENV, dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines
            .next()
            .expect("the child exited before taking the lock")
            .unwrap();
        // libtest prints the test's name on the same line.
        if line.trim_end().ends_with(HELD) {
            break;
        }
    }

    let e = DirectoryLock::acquire(dir.path()).unwrap_err();
    let text = e.to_string();
    match e {
        Error::DirectoryLocked { holder, .. } => {
            assert_eq!(holder, Some(child.id().to_string()), "{text}");
        }
        other => panic!("expected DirectoryLocked, got {other}"),
    }
    assert!(text.contains("in use by another open database"), "{text}");

    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    // The lock died with its holder.
    DirectoryLock::acquire(dir.path()).unwrap();
}
