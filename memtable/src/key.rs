//! Entry keys: one order-preserving byte string per index entry.
//!
//! A partition's header (when it has an entry) and every row of the
//! partition are entries of one B+tree, keyed by
//!
//! ```text
//! token (8 bytes, big-endian, sign bit flipped)
//! partition key, each 0x00 escaped as 0x00 0xFF, then 0x00 0x01
//! kind: 0x00 partition header, 0x01 clustering row
//! clustering key bytes (rows only)
//! ```
//!
//! so that bytewise order is ring order of partitions (token, then key
//! bytes), the header first, then rows in clustering order. The escape keeps
//! a key that is a prefix of another ordered first, whatever follows.
//!
//! The region stores a key without its token: the index node keeps the
//! token next to the key's handle (as the key's head, which most
//! comparisons stop at), so storing it again would cost 8 bytes a key.
//! Two keys compare by their heads, then by the stored bytes.
//!
//! A partition's entries are exactly the keys from its header's key
//! (`Suffix::Header`) up to, not including, its `Suffix::After` key, so a
//! partition is found by that prefix whether or not it has a header entry:
//! one whose header is empty (no partition tombstone, static row or range
//! tombstone) and that has rows is stored as its rows alone, and its first
//! entry is its first row.

use std::cmp::Ordering;

use crate::tree::Part;
use mutation::{ClusteringKey, DecoratedKey, PartitionKey, Token};

use crate::Error;

/// The length of the token at the start of every encoded key. A stored
/// key omits it: the index node holds it next to the key's handle.
pub(crate) const TOKEN_LEN: usize = 8;

/// What is stored of an encoded key: all but its token.
pub(crate) fn tail(encoded: &[u8]) -> &[u8] {
    encoded.get(TOKEN_LEN..).unwrap_or(&[])
}

pub(crate) const KIND_HEADER: u8 = 0;
pub(crate) const KIND_ROW: u8 = 1;
/// Sorts after every entry of a partition; never stored.
pub(crate) const KIND_AFTER: u8 = 2;

fn token_bytes(token: Token) -> [u8; 8] {
    ((token.value() as u64) ^ (1 << 63)).to_be_bytes()
}

/// The token of an encoded key, from its first 8 bytes.
pub(crate) fn token_of(bytes: &[u8]) -> Token {
    let raw = u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes")) ^ (1 << 63);
    Token::from_i64(raw as i64)
}

/// What follows the partition part of a key.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Suffix<'a> {
    /// Nothing: the key is only a token (sorts before its partitions).
    TokenOnly,
    /// The partition header.
    Header,
    /// A row (or a seek point among rows) with these clustering key bytes.
    Row(&'a [u8]),
    /// Just after every entry of the partition.
    After,
}

/// A key to search for, compared with stored keys without being encoded.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SearchKey<'a> {
    token: Token,
    partition: &'a [u8],
    suffix: Suffix<'a>,
    /// An already encoded key (the others are then unused).
    raw: Option<&'a [u8]>,
}

impl<'a> SearchKey<'a> {
    pub(crate) fn new(key: &'a DecoratedKey, suffix: Suffix<'a>) -> Self {
        SearchKey {
            token: key.token(),
            partition: key.key().as_bytes(),
            suffix,
            raw: None,
        }
    }

    pub(crate) fn token(token: Token) -> Self {
        SearchKey {
            token,
            partition: &[],
            suffix: Suffix::TokenOnly,
            raw: None,
        }
    }

    /// An encoded key (all of it, token included).
    pub(crate) fn raw(bytes: &'a [u8]) -> Self {
        SearchKey {
            token: Token::MIN,
            partition: &[],
            suffix: Suffix::TokenOnly,
            raw: Some(bytes),
        }
    }

    #[cfg(test)]
    fn bytes(&self) -> impl Iterator<Item = u8> + 'a {
        token_bytes(self.token).into_iter().chain(self.tail_bytes())
    }

    /// The encoded key after its token (not for raw keys).
    fn tail_bytes(&self) -> impl Iterator<Item = u8> + 'a {
        let escaped = !matches!(self.suffix, Suffix::TokenOnly);
        let partition = self.partition;
        let part = escaped
            .then(move || {
                partition
                    .iter()
                    .flat_map(|&b| {
                        let second = (b == 0).then_some(0xFF);
                        std::iter::once(b).chain(second)
                    })
                    .chain([0u8, 1u8])
            })
            .into_iter()
            .flatten();
        let (kind, ck): (Option<u8>, &'a [u8]) = match self.suffix {
            Suffix::TokenOnly => (None, &[]),
            Suffix::Header => (Some(KIND_HEADER), &[]),
            Suffix::Row(ck) => (Some(KIND_ROW), ck),
            Suffix::After => (Some(KIND_AFTER), &[]),
        };
        part.chain(kind).chain(ck.iter().copied())
    }

    /// The first 8 bytes of the encoded key (every stored key has them:
    /// the token).
    pub(crate) fn head(&self) -> [u8; 8] {
        match self.raw {
            Some(raw) => {
                let mut head = [0u8; 8];
                let n = raw.len().min(8);
                head[..n].copy_from_slice(&raw[..n]);
                head
            }
            None => token_bytes(self.token),
        }
    }

    /// The encoded key.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Appends the encoded key to `out`.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        if let Some(raw) = self.raw {
            out.extend_from_slice(raw);
            return;
        }
        let ck: &[u8] = match self.suffix {
            Suffix::Row(ck) => ck,
            _ => &[],
        };
        out.reserve(8 + self.partition.len() + 3 + ck.len());
        out.extend_from_slice(&token_bytes(self.token));
        let kind = match self.suffix {
            Suffix::TokenOnly => return,
            Suffix::Header => KIND_HEADER,
            Suffix::Row(_) => KIND_ROW,
            Suffix::After => KIND_AFTER,
        };
        // Runs without 0x00 copied whole; each 0x00 escaped.
        for (i, run) in self.partition.split(|&b| b == 0).enumerate() {
            if i > 0 {
                out.extend_from_slice(&[0, 0xFF]);
            }
            out.extend_from_slice(run);
        }
        out.extend_from_slice(&[0, 1, kind]);
        out.extend_from_slice(ck);
    }

    /// `self` after its token compared with a stored key, which omits its
    /// token (the node holds it): the order of the two keys when their
    /// tokens, the heads, are equal.
    pub(crate) fn cmp_tail(&self, stored: &Part<'_>) -> Ordering {
        match (self.raw, stored.as_contiguous()) {
            (Some(raw), Some(bytes)) => tail(raw).cmp(bytes),
            (None, Some(bytes)) => self.tail_bytes().cmp(bytes.iter().copied()),
            // A chunked string, compared piece by piece.
            (Some(raw), None) => stored.cmp_bytes(tail(raw)).reverse(),
            (None, None) => self
                .tail_bytes()
                .cmp(stored.pieces().flat_map(|p| p.iter().copied())),
        }
    }

    /// `self` compared with the key whose head (token) is `head` and whose
    /// stored bytes are `stored`.
    pub(crate) fn cmp_entry(&self, head: [u8; TOKEN_LEN], stored: &Part<'_>) -> Ordering {
        self.head().cmp(&head).then_with(|| self.cmp_tail(stored))
    }
}

/// A stored key, decoded.
#[derive(Debug)]
pub(crate) struct EntryKey {
    pub(crate) partition: DecoratedKey,
    /// `None` for the partition header.
    pub(crate) row: Option<ClusteringKey>,
    /// The length of the partition part (token + escaped key + terminator).
    pub(crate) prefix_len: usize,
}

fn corrupt(what: &str) -> Error {
    Error::Corrupt {
        detail: format!("entry key: {what}"),
    }
}

/// Decodes a stored key.
pub(crate) fn decode(bytes: &[u8]) -> Result<EntryKey, Error> {
    let (_token, mut rest) = bytes
        .split_at_checked(8)
        .ok_or_else(|| corrupt("shorter than a token"))?;
    let mut pk = Vec::new();
    let mut consumed = 8;
    loop {
        match rest {
            [0, 0xFF, tail @ ..] => {
                pk.push(0);
                rest = tail;
                consumed += 2;
            }
            [0, 1, tail @ ..] => {
                rest = tail;
                consumed += 2;
                break;
            }
            [0, ..] | [] => return Err(corrupt("unterminated partition key")),
            [b, tail @ ..] => {
                pk.push(*b);
                rest = tail;
                consumed += 1;
            }
        }
    }
    let partition = PartitionKey::new(pk)
        .map_err(|e| corrupt(&e.to_string()))?
        .decorate();
    let row = match rest {
        [KIND_HEADER] => None,
        [KIND_ROW, ck @ ..] => {
            Some(ClusteringKey::new(ck.to_vec()).map_err(|e| corrupt(&e.to_string()))?)
        }
        _ => return Err(corrupt("unknown entry kind")),
    };
    Ok(EntryKey {
        partition,
        row,
        prefix_len: consumed,
    })
}

/// The kind byte of a stored key with a partition part of `prefix_len`.
pub(crate) fn is_row_of(stored: &[u8], prefix: &[u8]) -> bool {
    stored.len() > prefix.len() && stored.starts_with(prefix) && stored[prefix.len()] == KIND_ROW
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(pk: &[u8], suffix: Suffix<'_>) -> Vec<u8> {
        let key = PartitionKey::new(pk.to_vec()).unwrap().decorate();
        SearchKey::new(&key, suffix).encode()
    }

    #[test]
    fn encoding_orders_like_decorated_keys_then_rows() {
        let keys: Vec<DecoratedKey> = [&b"a"[..], b"a\0", b"ab", b"\0", b"b", b"a\0\0"]
            .iter()
            .map(|k| PartitionKey::new(k.to_vec()).unwrap().decorate())
            .collect();
        for x in &keys {
            for y in &keys {
                let ex = SearchKey::new(x, Suffix::Row(b"zz")).encode();
                let ey = SearchKey::new(y, Suffix::Header).encode();
                if x != y {
                    assert_eq!(ex.cmp(&ey), x.cmp(y), "{x} vs {y}");
                }
            }
        }
        let h = enc(b"k\0", Suffix::Header);
        let r0 = enc(b"k\0", Suffix::Row(b""));
        let r1 = enc(b"k\0", Suffix::Row(b"\0"));
        let after = enc(b"k\0", Suffix::After);
        assert!(h < r0 && r0 < r1 && r1 < after);
    }

    #[test]
    fn encode_agrees_with_the_compared_bytes() {
        for pk in [&b"k"[..], b"\0", b"a\0b\0\0", b"\0\0x\0"] {
            let key = PartitionKey::new(pk.to_vec()).unwrap().decorate();
            for suffix in [
                Suffix::TokenOnly,
                Suffix::Header,
                Suffix::Row(b"c\0k"),
                Suffix::After,
            ] {
                let k = SearchKey::new(&key, suffix);
                assert_eq!(
                    k.encode(),
                    k.bytes().collect::<Vec<u8>>(),
                    "{key} {suffix:?}"
                );
            }
        }
    }

    #[test]
    fn decode_inverts_encode() {
        let key = PartitionKey::new(b"p\0q".to_vec()).unwrap().decorate();
        let bytes = SearchKey::new(&key, Suffix::Row(b"c\0k")).encode();
        let d = decode(&bytes).unwrap();
        assert_eq!(d.partition, key);
        assert_eq!(d.row.unwrap().as_bytes(), b"c\0k");
        assert!(is_row_of(&bytes, &bytes[..d.prefix_len]));
        let h = decode(&SearchKey::new(&key, Suffix::Header).encode()).unwrap();
        assert!(h.row.is_none());
        assert!(decode(&[1, 2, 3]).is_err());
        assert!(decode(&[0; 9]).is_err());
    }

    /// A key compares with a stored one (its head, then the stored bytes
    /// without the token, the first part of an entry's string) as the
    /// whole encoded keys compare, for search keys built from parts and raw
    /// ones, in strings of one object and chunked ones; the key and value
    /// parts read back as stored.
    #[test]
    fn comparing_with_stored_keys_agrees_with_whole_keys() {
        use logalloc::{PoolConfig, Region, SegmentPool};

        use crate::tree::Entry;

        let pool = SegmentPool::new(
            PoolConfig::default()
                .with_segment_size(4 << 10)
                .with_memory_limit(4 << 20),
        )
        .unwrap();
        let mut region = Region::new(&pool);
        let mut w = region.writer();
        let long = vec![b'x'; 2000]; // chunked above the largest object
        let pks: Vec<DecoratedKey> = [&b"a"[..], b"a\0", b"\0", b"b", &long]
            .iter()
            .map(|k| PartitionKey::new(k.to_vec()).unwrap().decorate())
            .collect();
        let suffixes = [
            Suffix::TokenOnly,
            Suffix::Header,
            Suffix::Row(b""),
            Suffix::Row(b"c\0"),
            Suffix::Row(&long),
            Suffix::After,
        ];
        let keys: Vec<SearchKey<'_>> = pks
            .iter()
            .flat_map(|pk| suffixes.iter().map(move |s| SearchKey::new(pk, *s)))
            .collect();
        let values: Vec<Vec<u8>> = (0..keys.len())
            .map(|i| (0..[0, 5, 700, 3000][i % 4]).map(|b| b as u8).collect())
            .collect();
        let entries: Vec<Entry> = keys
            .iter()
            .zip(&values)
            .map(|(k, v)| {
                let key_tail = tail(&k.encode()).to_vec();
                let kv = w.alloc_managed(&[&key_tail[..], v].concat()).unwrap();
                Entry::new(k, kv, key_tail.len())
            })
            .collect();
        for ((k, v), e) in keys.iter().zip(&values).zip(&entries) {
            assert_eq!(e.key(&w).unwrap().to_vec(), tail(&k.encode()));
            assert_eq!(e.value(&w).unwrap().to_vec(), *v);
            assert_eq!(e.value(&w).unwrap().with_bytes(|b| b.to_vec()), *v);
        }
        for x in &keys {
            let encoded = x.encode();
            let raw = SearchKey::raw(&encoded);
            for (y, e) in keys.iter().zip(&entries) {
                let want = encoded.cmp(&y.encode());
                let stored = e.key(&w).unwrap();
                assert_eq!(x.cmp_entry(e.head(), &stored), want, "{x:?} vs {y:?}");
                assert_eq!(raw.cmp_entry(e.head(), &stored), want, "raw {x:?} vs {y:?}");
                if x.head() == e.head() {
                    assert_eq!(x.cmp_tail(&stored), want);
                }
            }
        }
    }

    #[test]
    fn token_only_key_sorts_before_its_partitions() {
        let key = PartitionKey::new(b"x".to_vec()).unwrap().decorate();
        let t = SearchKey::token(key.token()).encode();
        assert_eq!(token_of(&t), key.token());
        assert!(t < SearchKey::new(&key, Suffix::Header).encode());
    }
}
