//! The crate's errors.

/// What the I/O scheduler refuses.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A capacity figure that is zero.
    #[error("device capacity: {what} of 0 (every figure must be at least 1)")]
    ZeroCapacity {
        /// Which figure.
        what: &'static str,
    },
    /// A dispatch bound of zero would let nothing through.
    #[error("the dispatch bound must be above zero")]
    ZeroDispatchBound,
    /// A class name used twice on one queue.
    #[error("I/O class {name:?} exists on this queue already")]
    DuplicateClass {
        /// The name.
        name: String,
    },
    /// More classes than a queue keeps.
    #[error("a queue holds at most {limit} I/O classes")]
    TooManyClasses {
        /// The limit.
        limit: usize,
    },
    /// A class of another queue.
    #[error("I/O class #{class} does not belong to this queue")]
    UnknownClass {
        /// The class's index.
        class: usize,
    },
    /// A shares curve that cannot be followed.
    #[error("bad shares curve: {reason}")]
    BadCurve {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The queue was closed: it dispatches nothing more.
    #[error("the I/O queue of device {device:?} is closed")]
    Closed {
        /// The queue's device name.
        device: String,
    },
}
