//! Back-offs and timeouts at the extremes: a zero idle back-off (which
//! would make the flush loop spin) is refused, and durations too long to
//! add to the current time mean "for ever" rather than a panic.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{QueueTarget, complete, id, memtable};
use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, Error, FlushReason, LoopMode};

#[test]
fn a_zero_idle_backoff_is_refused() {
    let mut config = DirtyMemoryConfig::new("spin", 1000);
    config.idle_backoff = Duration::ZERO;
    let err = DirtyMemoryManager::new(config, QueueTarget::new()).unwrap_err();
    assert!(matches!(err, Error::ZeroIdleBackoff), "{err}");
    assert_eq!(
        err.to_string(),
        "idle_backoff of 0 is invalid: the flush loop would spin while nothing can be flushed"
    );
}

#[test]
fn an_unbounded_retry_backoff_waits_for_an_explicit_request() {
    let target = QueueTarget::new();
    let mut config = DirtyMemoryConfig::new("patient", 1000);
    config.loop_mode = LoopMode::Manual;
    // "Never retry on your own": retry only when someone asks.
    config.retry_backoff_min = Duration::MAX;
    config.retry_backoff_max = Duration::MAX;
    let m = DirtyMemoryManager::new(config, Arc::clone(&target) as _).unwrap();
    memtable(m.group(), 1, 300);
    assert_eq!(m.poll_flushes().unwrap(), 1);
    target.next().fail("injected");
    assert_eq!(m.metrics().retries_pending, 1);
    assert_eq!(m.poll_flushes().unwrap(), 0, "the back-off has not passed");

    let completion = m.request_flush(id(1)).unwrap();
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let retry = target.next();
    assert_eq!((retry.attempt(), retry.reason()), (2, FlushReason::Retry));
    complete(retry);
    assert!(matches!(
        completion.wait_timeout(Duration::MAX),
        Some(Ok(()))
    ));
}
