//! The system-tables manager has its own budget: user writes held at the
//! user manager's hard limit never hold system writes.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{PATIENCE, QueueTarget, memtable, wait_until};
use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager};
use logalloc::RegionListener;

#[test]
fn system_writes_run_while_user_writes_are_held() {
    let user_target = QueueTarget::new();
    let user = Arc::new(
        DirtyMemoryManager::new(DirtyMemoryConfig::new("user", 1 << 20), user_target.clone())
            .unwrap(),
    );
    let system_target = QueueTarget::new();
    let system =
        DirtyMemoryManager::new(DirtyMemoryConfig::system_tables(), system_target.clone()).unwrap();
    assert_eq!(system.name(), "system");
    assert_eq!(system.limits().real_hard, 10 << 20);

    // The user group is over its hard limit and its flush makes no progress.
    memtable(user.group(), 1, (1 << 20) / 2 + 1);
    let stuck = user_target.next();

    let user_writes = Arc::new(AtomicUsize::new(0));
    let held: Vec<_> = (0..2)
        .map(|_| {
            let (user, n) = (Arc::clone(&user), Arc::clone(&user_writes));
            std::thread::spawn(move || {
                user.run_when_memory_available(|| n.fetch_add(1, Ordering::SeqCst), Some(PATIENCE))
            })
        })
        .collect();
    wait_until("both user writers are held", || {
        user.metrics().writers_waiting == 2
    });

    // System writes are admitted at once, many of them.
    let sys = memtable(system.group(), 1, 0);
    for _ in 0..1000 {
        system
            .run_when_memory_available(|| system.group().increase_usage(sys, 1024), Some(PATIENCE))
            .expect("system writes never wait for user memory");
    }
    assert_eq!(system.metrics().writers_blocked, 0);
    assert_eq!(user_writes.load(Ordering::SeqCst), 0);
    assert_eq!(user.metrics().writers_waiting, 2);

    // Releasing the user flush lets the user writers in.
    common::complete(stuck);
    for h in held {
        h.join().unwrap().expect("admitted after the flush");
    }
    assert_eq!(user_writes.load(Ordering::SeqCst), 2);
    user.shutdown();
    system.shutdown();
    assert_eq!(
        system_target.queued(),
        0,
        "1 MiB of system writes is under its 3 MiB soft limit"
    );
}
