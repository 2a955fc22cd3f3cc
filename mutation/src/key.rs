//! Partition keys, tokens, decorated keys and clustering keys.

use std::cmp::Ordering;
use std::fmt;

use bytes::Bytes;

use crate::Error;
use crate::murmur3::cassandra_hash3_x64_128;

/// The largest partition or clustering key, in bytes (Cassandra's unsigned
/// 16-bit length prefix).
pub const MAX_KEY_LEN: usize = 65_535;

/// Writes `bytes` as lowercase hex, eliding the middle of long keys.
pub(crate) fn fmt_hex(bytes: &[u8], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str("0x")?;
    if bytes.len() <= 32 {
        for b in bytes {
            write!(f, "{b:02x}")?;
        }
    } else {
        for b in &bytes[..16] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "..({} bytes)..", bytes.len())?;
        for b in &bytes[bytes.len() - 8..] {
            write!(f, "{b:02x}")?;
        }
    }
    Ok(())
}

/// The serialized bytes of a partition key: 1 to 65,535 bytes.
///
/// ```
/// use mutation::PartitionKey;
/// assert!(PartitionKey::new("user:42").is_ok());
/// assert!(PartitionKey::new("").is_err());
/// assert!(PartitionKey::new(vec![0u8; 70_000]).is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartitionKey(Bytes);

impl PartitionKey {
    /// Validates and wraps key bytes.
    ///
    /// # Errors
    /// [`Error::EmptyPartitionKey`] for an empty key,
    /// [`Error::PartitionKeyTooLong`] above [`MAX_KEY_LEN`] bytes.
    pub fn new(bytes: impl Into<Bytes>) -> Result<Self, Error> {
        let bytes = bytes.into();
        if bytes.is_empty() {
            return Err(Error::EmptyPartitionKey);
        }
        if bytes.len() > MAX_KEY_LEN {
            return Err(Error::PartitionKeyTooLong { len: bytes.len() });
        }
        Ok(Self(bytes))
    }

    /// The key bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The key bytes as a cheaply clonable buffer.
    pub fn bytes(&self) -> &Bytes {
        &self.0
    }

    /// Length in bytes (never 0).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false: a partition key has at least one byte. Present so the
    /// type reads like other byte containers.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The Murmur3 token of this key.
    pub fn token(&self) -> Token {
        Token::of_key(&self.0)
    }

    /// Decorates this key with its token.
    pub fn decorate(self) -> DecoratedKey {
        DecoratedKey::new(self)
    }
}

impl fmt::Debug for PartitionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_hex(&self.0, f)
    }
}

impl fmt::Display for PartitionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_hex(&self.0, f)
    }
}

/// A position on the token ring: a signed 64-bit Murmur3 token, as
/// Cassandra's `Murmur3Partitioner` computes it.
///
/// The token of a key is the first 64-bit half of Cassandra's
/// `MurmurHash.hash3_x64_128(key, seed 0)` read as `i64`; the value
/// `i64::MIN` is reserved for the ring minimum, so a key hashing to it gets
/// `i64::MAX` instead (Cassandra's `normalize`).
///
/// ```
/// use mutation::Token;
/// // Published value, see tests/token_values.rs.
/// assert_eq!(Token::of_key(b"test").value(), -6017608668500074083);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Token(i64);

impl Token {
    /// The ring minimum; no key has this token.
    pub const MIN: Token = Token(i64::MIN);
    /// The largest token a key can have.
    pub const MAX: Token = Token(i64::MAX);

    /// A token with the given value (for building ranges).
    pub const fn from_i64(value: i64) -> Self {
        Token(value)
    }

    /// The Murmur3 token of `key`, equal to Cassandra's for the same bytes.
    pub fn of_key(key: &[u8]) -> Self {
        let h1 = cassandra_hash3_x64_128(key)[0] as i64;
        Self::normalize(h1)
    }

    /// Maps the reserved minimum to `i64::MAX`, as Cassandra does.
    const fn normalize(value: i64) -> Self {
        if value == i64::MIN {
            Token(i64::MAX)
        } else {
            Token(value)
        }
    }

    /// The signed 64-bit value.
    pub const fn value(self) -> i64 {
        self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({})", self.0)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A partition key with its token: the partition's place on the ring.
/// Ordered by token, then by key bytes (ring order), so a range between two
/// keys holds the partitions whose tokens lie between theirs, not those
/// whose bytes do.
///
/// Built with [`DecoratedKey::from_bytes`] or `try_from` any of `&str`,
/// `String`, `&[u8]`, `&[u8; N]`, `Vec<u8>` and `Bytes`; a key outside the
/// limits (empty, or above [`MAX_KEY_LEN`] bytes) is an [`Error`]:
///
/// ```
/// use mutation::{DecoratedKey, Error};
/// let key = DecoratedKey::try_from("user:1")?;
/// assert_eq!(key, DecoratedKey::from_bytes(b"user:1".to_vec())?);
/// assert!(matches!(DecoratedKey::try_from(""), Err(Error::EmptyPartitionKey)));
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct DecoratedKey {
    token: Token,
    key: PartitionKey,
}

impl DecoratedKey {
    /// Computes the token of `key`.
    pub fn new(key: PartitionKey) -> Self {
        Self {
            token: key.token(),
            key,
        }
    }

    /// Validates `bytes` as a partition key and decorates it.
    ///
    /// # Errors
    /// As [`PartitionKey::new`].
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Result<Self, Error> {
        PartitionKey::new(bytes).map(Self::new)
    }

    /// The token.
    pub fn token(&self) -> Token {
        self.token
    }

    /// The partition key.
    pub fn key(&self) -> &PartitionKey {
        &self.key
    }
}

impl Ord for DecoratedKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.token
            .cmp(&other.token)
            .then_with(|| self.key.cmp(&other.key))
    }
}

impl PartialOrd for DecoratedKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for DecoratedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{token {}, key {}}}", self.token, self.key)
    }
}

impl fmt::Display for DecoratedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{token {}, key {}}}", self.token, self.key)
    }
}

/// The serialized clustering prefix of a row: 0 to 65,535 bytes, ordered
/// bytewise. (The empty key is the single row of a table without clustering
/// columns.)
///
/// Built with [`ClusteringKey::new`] or `try_from` any of `&str`, `String`,
/// `&[u8]`, `&[u8; N]`, `Vec<u8>` and `Bytes`; a key above [`MAX_KEY_LEN`]
/// bytes is an [`Error`]:
///
/// ```
/// use mutation::{ClusteringKey, ClusteringRange, Error, MAX_KEY_LEN};
/// let row = ClusteringKey::try_from("row-1")?;
/// let slice = ClusteringRange::singular(row.clone());
/// assert!(slice.contains(&row));
/// assert!(matches!(
///     ClusteringKey::try_from(vec![0u8; MAX_KEY_LEN + 1]),
///     Err(Error::ClusteringKeyTooLong { len: 65_536 })
/// ));
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusteringKey(Bytes);

impl ClusteringKey {
    /// Validates and wraps key bytes.
    ///
    /// # Errors
    /// [`Error::ClusteringKeyTooLong`] above [`MAX_KEY_LEN`] bytes.
    pub fn new(bytes: impl Into<Bytes>) -> Result<Self, Error> {
        let bytes = bytes.into();
        if bytes.len() > MAX_KEY_LEN {
            return Err(Error::ClusteringKeyTooLong { len: bytes.len() });
        }
        Ok(Self(bytes))
    }

    /// The key bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The key bytes as a cheaply clonable buffer.
    pub fn bytes(&self) -> &Bytes {
        &self.0
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for the empty clustering key.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for ClusteringKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_hex(&self.0, f)
    }
}

impl fmt::Display for ClusteringKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_hex(&self.0, f)
    }
}

/// `TryFrom` for every byte source a key is commonly written from (`&str`,
/// `String`, `&[u8]`, `&[u8; N]`, `Vec<u8>`, `Bytes`), each the key's own
/// constructor: a source outside the key's length limits is an
/// [`Error`], never a panic.
macro_rules! key_conversions {
    ($key:ident, $construct:path) => {
        impl TryFrom<&str> for $key {
            type Error = Error;
            fn try_from(value: &str) -> Result<Self, Error> {
                $construct(Bytes::copy_from_slice(value.as_bytes()))
            }
        }

        impl TryFrom<String> for $key {
            type Error = Error;
            fn try_from(value: String) -> Result<Self, Error> {
                $construct(Bytes::from(value))
            }
        }

        impl TryFrom<&[u8]> for $key {
            type Error = Error;
            fn try_from(value: &[u8]) -> Result<Self, Error> {
                $construct(Bytes::copy_from_slice(value))
            }
        }

        impl<const N: usize> TryFrom<&[u8; N]> for $key {
            type Error = Error;
            fn try_from(value: &[u8; N]) -> Result<Self, Error> {
                $construct(Bytes::copy_from_slice(value))
            }
        }

        impl TryFrom<Vec<u8>> for $key {
            type Error = Error;
            fn try_from(value: Vec<u8>) -> Result<Self, Error> {
                $construct(Bytes::from(value))
            }
        }

        impl TryFrom<Bytes> for $key {
            type Error = Error;
            fn try_from(value: Bytes) -> Result<Self, Error> {
                $construct(value)
            }
        }
    };
}

key_conversions!(PartitionKey, PartitionKey::new);
key_conversions!(DecoratedKey, DecoratedKey::from_bytes);
key_conversions!(ClusteringKey, ClusteringKey::new);

impl From<PartitionKey> for DecoratedKey {
    fn from(key: PartitionKey) -> Self {
        Self::new(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_key_limits() {
        assert!(matches!(
            PartitionKey::new(Bytes::new()),
            Err(Error::EmptyPartitionKey)
        ));
        assert!(PartitionKey::new(vec![1u8; MAX_KEY_LEN]).is_ok());
        let err = PartitionKey::new(vec![1u8; 70_000]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "partition key of 70000 bytes exceeds the 65535-byte limit"
        );
    }

    #[test]
    fn clustering_key_limits() {
        assert!(ClusteringKey::new(Bytes::new()).is_ok());
        assert!(ClusteringKey::new(vec![1u8; MAX_KEY_LEN]).is_ok());
        assert!(matches!(
            ClusteringKey::new(vec![1u8; MAX_KEY_LEN + 1]),
            Err(Error::ClusteringKeyTooLong { len: 65_536 })
        ));
    }

    #[test]
    fn min_token_normalizes_to_max() {
        assert_eq!(Token::normalize(i64::MIN), Token::MAX);
        assert_eq!(Token::normalize(-5).value(), -5);
    }

    #[test]
    fn decorated_keys_order_by_token_then_bytes() {
        let a = DecoratedKey::from_bytes("a").unwrap();
        let b = DecoratedKey::from_bytes("b").unwrap();
        assert_eq!(a.cmp(&b), a.token().cmp(&b.token()));
        // Same token, different bytes: construct directly to force a tie.
        let x = DecoratedKey {
            token: Token(7),
            key: PartitionKey::new("x").unwrap(),
        };
        let y = DecoratedKey {
            token: Token(7),
            key: PartitionKey::new("y").unwrap(),
        };
        assert!(x < y);
    }

    #[test]
    fn keys_convert_from_strings_and_bytes() {
        let from_str = DecoratedKey::try_from("user:1").unwrap();
        assert_eq!(from_str, DecoratedKey::from_bytes("user:1").unwrap());
        assert_eq!(
            DecoratedKey::try_from(String::from("user:1")).unwrap(),
            from_str
        );
        assert_eq!(DecoratedKey::try_from(&b"user:1"[..]).unwrap(), from_str);
        assert_eq!(DecoratedKey::try_from(b"user:1").unwrap(), from_str);
        assert_eq!(
            DecoratedKey::try_from(b"user:1".to_vec()).unwrap(),
            from_str
        );
        assert_eq!(
            DecoratedKey::try_from(Bytes::from_static(b"user:1")).unwrap(),
            from_str
        );
        assert_eq!(
            DecoratedKey::from(PartitionKey::try_from("user:1").unwrap()),
            from_str
        );

        let ck: ClusteringKey = "row-1".try_into().unwrap();
        assert_eq!(ck.as_bytes(), b"row-1");
        assert_eq!(ClusteringKey::try_from(b"row-1".to_vec()).unwrap(), ck);
        assert_eq!(ClusteringKey::try_from(&b"row-1"[..]).unwrap(), ck);
        // The empty clustering key is valid: the single row of a table
        // without clustering columns.
        assert!(ClusteringKey::try_from("").unwrap().is_empty());
    }

    #[test]
    fn conversions_refuse_keys_outside_the_limits_with_the_error() {
        // Empty partition keys, from every source.
        assert!(matches!(
            DecoratedKey::try_from(""),
            Err(Error::EmptyPartitionKey)
        ));
        assert!(matches!(
            DecoratedKey::try_from(Vec::new()),
            Err(Error::EmptyPartitionKey)
        ));
        assert!(matches!(
            PartitionKey::try_from(&b""[..]),
            Err(Error::EmptyPartitionKey)
        ));
        // Keys one byte over the limit.
        let long = vec![b'k'; MAX_KEY_LEN + 1];
        let long_str = String::from_utf8(long.clone()).unwrap();
        assert!(matches!(
            DecoratedKey::try_from(long_str.as_str()),
            Err(Error::PartitionKeyTooLong { len: 65_536 })
        ));
        assert!(matches!(
            DecoratedKey::try_from(long.as_slice()),
            Err(Error::PartitionKeyTooLong { len: 65_536 })
        ));
        let err = ClusteringKey::try_from(long.clone()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "clustering key of 65536 bytes exceeds the 65535-byte limit"
        );
        assert!(matches!(
            ClusteringKey::try_from(long_str),
            Err(Error::ClusteringKeyTooLong { len: 65_536 })
        ));
        assert!(matches!(
            ClusteringKey::try_from(Bytes::from(long)),
            Err(Error::ClusteringKeyTooLong { len: 65_536 })
        ));
        // At the limit, both are accepted.
        let max = vec![b'k'; MAX_KEY_LEN];
        assert_eq!(
            DecoratedKey::try_from(max.as_slice()).unwrap().key().len(),
            MAX_KEY_LEN
        );
        assert_eq!(ClusteringKey::try_from(max).unwrap().len(), MAX_KEY_LEN);
    }
}
