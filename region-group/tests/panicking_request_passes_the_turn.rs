//! A released request whose function panics still ends its turn: the panic
//! reaches its caller and the next queued request is admitted.
mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use common::{id, wait_until};
use logalloc::RegionListener;
use region_group::{ReclaimConfig, RegionGroup};

#[test]
fn panic_in_a_released_request_does_not_stall_the_queue() {
    let g = RegionGroup::new(
        "panic",
        ReclaimConfig {
            unspooled_hard_limit: 10,
            ..Default::default()
        },
    );
    g.add(id(1), 11);
    let g1 = g.clone();
    let panicking = std::thread::spawn(move || {
        catch_unwind(AssertUnwindSafe(|| {
            g1.run_when_memory_available(|| panic!("request failed"), None)
        }))
        .is_err()
    });
    wait_until("the panicking request is queued", || {
        g.queued_requests() == 1
    });
    let g2 = g.clone();
    let next = std::thread::spawn(move || g2.run_when_memory_available(|| "next ran", None));
    wait_until("the next request is queued", || g.queued_requests() == 2);
    g.decrease_usage(id(1), 1);
    assert!(panicking.join().unwrap(), "the panic reaches the caller");
    assert_eq!(next.join().unwrap(), Ok("next ran"));
    assert_eq!(g.run_when_memory_available(|| 1, None), Ok(1));
}
