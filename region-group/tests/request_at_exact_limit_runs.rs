//! Usage equal to a hard limit is within it: the request runs at once; one
//! byte more makes it wait.
mod common;

use std::time::Duration;

use common::id;
use logalloc::RegionListener;
use region_group::{Error, ReclaimConfig, RegionGroup};

#[test]
fn request_at_exactly_the_limits_runs() {
    let g = RegionGroup::new(
        "exact",
        ReclaimConfig {
            unspooled_hard_limit: 4096,
            real_hard_limit: 8192,
            ..Default::default()
        },
    );
    g.add(id(1), 4096);
    assert!(g.execution_permitted());
    assert_eq!(
        g.run_when_memory_available(|| 7, Some(Duration::ZERO)),
        Ok(7)
    );

    g.increase_usage(id(1), 1);
    assert!(!g.execution_permitted());
    assert_eq!(
        g.run_when_memory_available(|| 7, Some(Duration::ZERO)),
        Err(Error::Timeout {
            group: "exact".into()
        })
    );

    // Real usage exactly at the real hard limit, unspooled well under its own.
    g.increase_usage(id(1), 8192 - 4097);
    g.account_spooled(8192).unwrap();
    assert_eq!((g.real_usage(), g.unspooled_usage()), (8192, 0));
    assert_eq!(
        g.run_when_memory_available(|| 8, Some(Duration::ZERO)),
        Ok(8)
    );
}
