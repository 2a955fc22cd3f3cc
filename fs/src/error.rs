//! The crate's error: a fault rule that cannot be honoured. File
//! operations themselves fail with [`std::io::Error`]s, as the operating
//! system's do.

/// What the file layer refuses.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A [`FaultRule`](crate::FaultRule) that can never match as meant.
    #[error("fault rule {rule} is refused: {reason}")]
    InvalidRule {
        /// The rule, as debug output.
        rule: String,
        /// Why.
        reason: String,
    },
}
