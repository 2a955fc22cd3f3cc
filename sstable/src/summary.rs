//! The Summary component: the first key of every Index block, held in
//! memory so a lookup reads exactly one Index block.

use mutation::codec::{put_bytes, put_uvarint};

use crate::decoder::{Decoder, Origin};
use crate::error::Error;

/// One sampled index entry: the first partition of an Index block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SummaryEntry {
    /// Token of the block's first partition.
    pub(crate) token: i64,
    /// Key bytes of the block's first partition.
    pub(crate) key: Vec<u8>,
    /// Offset of the Index block.
    pub(crate) index_offset: u64,
}

/// The in-memory summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Total size of the Index component, so a truncated Index is caught at open.
    pub(crate) index_size: u64,
    /// One entry per Index block, in ring order.
    pub(crate) entries: Vec<SummaryEntry>,
}

impl Summary {
    /// Encodes the component body.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_uvarint(&mut out, self.index_size);
        put_uvarint(&mut out, self.entries.len() as u64);
        for e in &self.entries {
            out.extend_from_slice(&e.token.to_le_bytes());
            put_bytes(&mut out, &e.key);
            put_uvarint(&mut out, e.index_offset);
        }
        out
    }

    /// Decodes the component body, checking that entries are in strictly
    /// increasing ring order and offsets strictly increase.
    pub(crate) fn decode(body: &[u8], base: u64, origin: Origin<'_>) -> Result<Self, Error> {
        let mut d = Decoder::new(body, base, origin);
        let index_size = d.uvarint("index size")?;
        // Every entry takes at least 10 bytes, which bounds the count.
        let count = d.len("summary entry count", body.len() as u64 / 10)?;
        let mut entries: Vec<SummaryEntry> = Vec::with_capacity(count);
        for _ in 0..count {
            let at = d.offset();
            let token = d.i64("summary token")?;
            let key = d.bytes("summary key", 65_535)?.to_vec();
            let index_offset = d.uvarint("index block offset")?;
            if key.is_empty() {
                return Err(origin.corrupt(at, "summary entry has an empty partition key"));
            }
            if let Some(prev) = entries.last() {
                if (prev.token, &prev.key) >= (token, &key) {
                    return Err(
                        origin.corrupt(at, "summary entries are not in increasing ring order")
                    );
                }
                if prev.index_offset >= index_offset {
                    return Err(origin.corrupt(
                        at,
                        format!(
                            "index block offset {index_offset} does not follow {}",
                            prev.index_offset
                        ),
                    ));
                }
            }
            if index_offset >= index_size {
                return Err(origin.corrupt(
                    at,
                    format!(
                        "index block offset {index_offset} is past the {index_size}-byte Index"
                    ),
                ));
            }
            entries.push(SummaryEntry {
                token,
                key,
                index_offset,
            });
        }
        d.expect_end("the summary entries")?;
        Ok(Summary {
            index_size,
            entries,
        })
    }

    /// Index of the last entry whose key is `<=` `(token, key)`, if any.
    pub(crate) fn locate(&self, token: i64, key: &[u8]) -> Option<usize> {
        let n = self
            .entries
            .partition_point(|e| (e.token, e.key.as_slice()) <= (token, key));
        n.checked_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_locate() {
        let s = Summary {
            index_size: 1000,
            entries: vec![
                SummaryEntry {
                    token: -5,
                    key: b"a".to_vec(),
                    index_offset: 8,
                },
                SummaryEntry {
                    token: 3,
                    key: b"b".to_vec(),
                    index_offset: 100,
                },
            ],
        };
        let p = std::path::PathBuf::from("s");
        let origin = Origin {
            file: &p,
            component: crate::error::Component::Summary,
        };
        assert_eq!(Summary::decode(&s.encode(), 0, origin).unwrap(), s);
        assert_eq!(s.locate(-6, b"z"), None);
        assert_eq!(s.locate(-5, b"a"), Some(0));
        assert_eq!(s.locate(3, b"a"), Some(0));
        assert_eq!(s.locate(3, b"b"), Some(1));
        let mut bad = s.clone();
        bad.entries.swap(0, 1);
        assert!(Summary::decode(&bad.encode(), 0, origin).is_err());
    }
}
