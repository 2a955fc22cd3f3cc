//! Index entries: partition key to data position, with the clustering-block
//! index of large partitions (see FORMAT.md, "Index").

use bytes::Bytes;
use mutation::codec::{put_bytes, put_uvarint};
use mutation::{DecoratedKey, Position, Tombstone};

use crate::codec::{key, position, put_position, put_tombstone_opt, tombstone_opt};
use crate::decoder::Decoder;
use crate::error::Error;

/// Where a partition's fragments are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    /// The partition.
    pub(crate) key: DecoratedKey,
    /// Offset of the Data block holding the partition start.
    pub(crate) data_block: u64,
    /// Offset of the partition start in that block's raw payload.
    pub(crate) in_block: u64,
    /// Raw bytes of the partition's fragments.
    pub(crate) size: u64,
    /// One entry per Data block starting inside the partition (large
    /// partitions only).
    pub(crate) cblocks: Vec<ClusteringBlock>,
}

/// A Data block that starts inside a large partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClusteringBlock {
    /// Offset of the block in Data.
    pub(crate) block: u64,
    /// Position of the block's first fragment (before-all for a static
    /// row, after-all for the partition end).
    pub(crate) first: Position,
    /// Range tombstone in force just before that fragment.
    pub(crate) active: Option<Tombstone>,
}

impl IndexEntry {
    /// Appends the entry's encoding.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key.token().value().to_le_bytes());
        put_bytes(out, self.key.key().as_bytes());
        put_uvarint(out, self.data_block);
        put_uvarint(out, self.in_block);
        put_uvarint(out, self.size);
        put_uvarint(out, self.cblocks.len() as u64);
        let mut prev = self.data_block;
        for c in &self.cblocks {
            put_uvarint(out, c.block - prev);
            prev = c.block;
            put_position(out, &c.first);
            put_tombstone_opt(out, c.active);
        }
    }
}

/// The token and key bytes of the next entry, without decoding the rest.
pub(crate) fn peek_key<'a>(d: &mut Decoder<'a>) -> Result<(i64, &'a [u8]), Error> {
    let token = d.i64("index token")?;
    let key = key(d, "index key")?;
    Ok((token, key))
}

/// Decodes the rest of an entry after [`peek_key`].
pub(crate) fn decode_rest(
    d: &mut Decoder<'_>,
    token: i64,
    key: &[u8],
) -> Result<IndexEntry, Error> {
    let key_at = d.offset();
    let key = DecoratedKey::from_bytes(Bytes::copy_from_slice(key))
        .map_err(|e| d.corrupt(e.to_string()))?;
    if key.token().value() != token {
        return Err(d.corrupt(format!(
            "index entry ending at {key_at} stores token {token} but its key hashes to {}",
            key.token().value()
        )));
    }
    decode_positions(d, key)
}

/// [`decode_rest`] of the entry whose token and key bytes [`peek_key`]
/// found equal to `key`'s: the entry takes a clone of `key` instead of a
/// copy of its bytes hashed again (the token it stores is `key`'s, which
/// hashes to it).
pub(crate) fn decode_rest_of(d: &mut Decoder<'_>, key: &DecoratedKey) -> Result<IndexEntry, Error> {
    decode_positions(d, key.clone())
}

/// The rest of an entry after its key: its Data position, size and
/// clustering blocks.
fn decode_positions(d: &mut Decoder<'_>, key: DecoratedKey) -> Result<IndexEntry, Error> {
    let data_block = d.uvarint("data block offset")?;
    let in_block = d.uvarint("offset in data block")?;
    let size = d.uvarint("partition size")?;
    let count = d.len("clustering block count", d.remaining() as u64 / 3)?;
    let mut cblocks = Vec::with_capacity(count);
    let mut prev = data_block;
    for _ in 0..count {
        let delta = d.uvarint("clustering block delta")?;
        if delta == 0 {
            return Err(d.corrupt("clustering block offsets do not increase"));
        }
        let block = prev
            .checked_add(delta)
            .ok_or_else(|| d.corrupt("clustering block offset overflows"))?;
        prev = block;
        let first = position(d)?;
        let active = tombstone_opt(d)?;
        cblocks.push(ClusteringBlock {
            block,
            first,
            active,
        });
    }
    Ok(IndexEntry {
        key,
        data_block,
        in_block,
        size,
        cblocks,
    })
}

/// Decodes a whole entry.
pub(crate) fn decode_entry(d: &mut Decoder<'_>) -> Result<IndexEntry, Error> {
    let (token, key) = peek_key(d)?;
    decode_rest(d, token, key)
}

/// Skips the rest of an entry after [`peek_key`].
pub(crate) fn skip_rest(d: &mut Decoder<'_>) -> Result<(), Error> {
    d.uvarint("data block offset")?;
    d.uvarint("offset in data block")?;
    d.uvarint("partition size")?;
    let count = d.len("clustering block count", d.remaining() as u64 / 3)?;
    for _ in 0..count {
        d.uvarint("clustering block delta")?;
        position(d)?;
        tombstone_opt(d)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decoder::Origin;
    use crate::error::Component;
    use mutation::{ClusteringKey, Timestamp};
    use std::path::PathBuf;

    #[test]
    fn entries_round_trip_and_check_their_token() {
        let entry = IndexEntry {
            key: DecoratedKey::from_bytes("partition").unwrap(),
            data_block: 8,
            in_block: 100,
            size: 200_000,
            cblocks: vec![
                ClusteringBlock {
                    block: 16_000,
                    first: Position::At(ClusteringKey::new(b"a".to_vec()).unwrap()),
                    active: None,
                },
                ClusteringBlock {
                    block: 32_000,
                    first: Position::Before(ClusteringKey::new(b"b".to_vec()).unwrap()),
                    active: Some(Tombstone::new(Timestamp::from_micros(4), 1)),
                },
            ],
        };
        let mut out = Vec::new();
        entry.encode(&mut out);
        let p = PathBuf::from("i");
        let origin = Origin {
            file: &p,
            component: Component::Index,
        };
        let mut d = Decoder::new(&out, 0, origin);
        assert_eq!(decode_entry(&mut d).unwrap(), entry);
        let mut d = Decoder::new(&out, 0, origin);
        peek_key(&mut d).unwrap();
        skip_rest(&mut d).unwrap();
        assert!(d.is_empty());
        // A stored token that does not match the key is corrupt.
        let mut bad = out.clone();
        bad[0] ^= 1;
        let e = decode_entry(&mut Decoder::new(&bad, 0, origin))
            .unwrap_err()
            .to_string();
        assert!(e.contains("hashes to"), "{e}");
    }
}
