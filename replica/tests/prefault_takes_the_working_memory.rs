//! `DatabaseConfig::prefault_memory`: the memtable pool takes the user
//! dirty budget and the cache's share at open, not the headroom above them
//! (without a cache the pool is twice the budgets, and prefaulting all of
//! it made a 256 MiB budget hold 512 MiB from the start); without
//! prefault it takes nothing until a write needs it.

use replica::{CacheSize, Database, DatabaseConfig};

const MIB: usize = 1 << 20;

fn open(cache: CacheSize, prefault: bool) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.dirty_memory_budget = 64 * MIB;
    config.system_dirty_memory_budget = 8 * MIB;
    config.cache_size = cache;
    config.prefault_memory = prefault;
    let db = Database::open(config).unwrap();
    (dir, db)
}

#[test]
fn prefault_takes_the_user_budget_and_the_cache_share_not_the_headroom() {
    let (user, system) = (64 * MIB, 8 * MIB);
    // No cache: the user budget, of a pool twice the budgets.
    let (_d, db) = open(CacheSize::Off, true);
    let m = db.metrics();
    assert_eq!(m.pool_limit, 2 * (user + system));
    assert_eq!(m.pool_system_bytes, user);
    // A cache of 16 MiB: the budget and the share, of the same pool.
    let (_d, db) = open(CacheSize::Bytes(16 * MIB), true);
    let m = db.metrics();
    assert_eq!(m.pool_limit, 2 * (user + system));
    assert_eq!(m.pool_system_bytes, user + 16 * MIB);
    // The default cache takes what the pool holds beyond the budgets: all
    // of it but the system tables' budget.
    let (_d, db) = open(CacheSize::Auto, true);
    let m = db.metrics();
    assert_eq!(m.pool_system_bytes, m.pool_limit - system);
    // Without prefault, nothing until a write.
    let (_d, db) = open(CacheSize::Auto, false);
    assert_eq!(db.metrics().pool_system_bytes, 0);
}
