//! The crate's one error type.

/// What a device or bucket refuses.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A bucket or device was given a bandwidth of zero bytes per second.
    #[error("{what} of 0 bytes per second: a bandwidth must be at least 1 byte per second")]
    ZeroBandwidth {
        /// What had the bandwidth (`device "disk"`, `token bucket`).
        what: String,
    },
    /// A bucket or device was given a burst of zero bytes.
    #[error("{what} with a burst of 0 bytes: a burst must be at least 1 byte")]
    ZeroBurst {
        /// What had the burst.
        what: String,
    },
    /// A device name that is empty, or longer than [`MAX_NAME_LEN`](crate::MAX_NAME_LEN)
    /// bytes.
    #[error("device name {name:?}: a name must be 1 to {limit} bytes")]
    BadName {
        /// The name.
        name: String,
        /// The longest name accepted.
        limit: usize,
    },
}
