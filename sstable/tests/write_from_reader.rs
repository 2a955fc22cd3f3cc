//! `Writer::write_all` consumes a fragment reader (as a memtable flush
//! does); an error from the reader fails the write and commits nothing.

mod common;

use common::*;
use mutation::{
    Cell, DecoratedKey, Fragment, FragmentReader, Mutation, PartitionRange, Timestamp,
    from_mutations,
};
use sstable::{Error, Sstable, SstableDirectory, Writer};

fn mutations() -> Vec<Mutation> {
    (0..30u32)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(i.to_le_bytes().to_vec()).unwrap())
                .cell(
                    vec![1u8],
                    2,
                    Cell::live(vec![5u8; 64], Timestamp::from_micros(9)),
                )
                .build()
                .unwrap()
        })
        .collect()
}

#[test]
fn write_all_from_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let ms = mutations();
    let mut w = Writer::create(dir.path(), small_options(true)).unwrap();
    w.write_all(&mut from_mutations(ms.clone())).unwrap();
    let c = w.commit().unwrap();
    assert_eq!(c.statistics.partitions, 30);
    let t = Sstable::open(dir.path(), c.generation).unwrap();
    assert_eq!(drain(&mut t.scan()), canonical(&ms).0);
}

/// Yields a few fragments, then fails.
struct Failing {
    inner: mutation::MutationsReader,
    left: usize,
}

impl FragmentReader for Failing {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        if self.left == 0 {
            return Err(mutation::Error::Source("disk on fire".into()));
        }
        self.left -= 1;
        self.inner.next()
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        self.inner.fast_forward_to(range)
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        self.inner.next_partition()
    }
}

#[test]
fn source_error_fails_the_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), small_options(true)).unwrap();
    let mut r = Failing {
        inner: from_mutations(mutations()),
        left: 10,
    };
    let e = w.write_all(&mut r).unwrap_err();
    assert!(matches!(e, Error::Source(_)), "{e}");
    // The causes are the error's sources, not repeated in its message.
    let mut chain = Vec::new();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        chain.push(c.to_string());
        cause = c.source();
    }
    assert_eq!(chain, ["fragment source failed", "disk on fire"], "{e}");
    assert!(w.commit().is_err());
    assert!(
        SstableDirectory::open(dir.path())
            .unwrap()
            .generations()
            .is_empty()
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
