//! The size limits every layer accepts: what a [`MutationBuilder`] lets
//! through, a memtable can hold, an sstable can write and a commit log can
//! frame, so that nothing written is ever unflushable.
//!
//! # Where the numbers come from
//!
//! The sstable format (`sstable/FORMAT.md`, version 1) is the tightest
//! layer:
//!
//! * keys are stored as `bytes` with a 65,535-byte limit, so a partition or
//!   clustering key is at most [`MAX_KEY_LEN`] bytes;
//! * Data is a sequence of blocks of at most 64 MiB raw
//!   ([`SSTABLE_MAX_BLOCK`]) and a fragment never spans two blocks, so the
//!   encoding of one row (a clustering or static row fragment) must fit in
//!   64 MiB.
//!
//! A mutation is capped at [`MAX_MUTATION_SIZE`]: 16 MiB less a 64 KiB
//! margin ([`FRAMING_MARGIN`]), measured both as its sstable encoding
//! ([`size_bound`]) and as its versioned binary encoding
//! ([`Mutation::encoded_len`], what a commit log writes). That is
//! Cassandra's and ScyllaDB's rule, half a 32 MiB commit log segment, with
//! the margin left for the log's entry framing, so a commit log with the
//! default 32 MiB segments frames every mutation the builder accepts; and it
//! is a quarter of an sstable block, so the flush of a mutation never writes
//! a fragment that spans blocks. A cell value is capped at
//! [`MAX_CELL_VALUE_LEN`] (8 MiB, about half the mutation limit), so that
//! one oversized value is refused with its own clear error rather than as
//! an oversized mutation, and a mutation still has room for its keys.
//!
//! [`size_bound`] is an upper bound of the sstable encoding: it counts every
//! key and value byte, plus the largest encoding of each length, varint,
//! timestamp, TTL and flag the format writes around them.
//!
//! # What each layer does with them
//!
//! * [`MutationBuilder::build`] refuses a cell value over
//!   [`MAX_CELL_VALUE_LEN`] ([`Error::CellValueTooLarge`]) and a mutation
//!   over [`MAX_MUTATION_SIZE`] ([`Error::MutationTooLarge`]); keys over
//!   [`MAX_KEY_LEN`] are refused when they are made.
//! * A memtable applies mutations that passed the builder. Merging two
//!   mutations of one row can grow that row (different columns add up), so a
//!   memtable must also refuse an apply that would make a row's
//!   [`row_size_bound`] exceed [`MAX_ROW_SIZE`]: then every row it holds
//!   fits in one sstable block.
//! * A commit log frames whole mutations of at most [`MAX_MUTATION_SIZE`]
//!   encoded bytes; its segments must be at least twice that plus its
//!   framing (the default 32 MiB are).
//! * A write path that checks a mutation (with [`check`]) measures it once:
//!   the [`Checked`] mutation carries both sizes on to the layers below
//!   (the commit log sizes its entry with the encoded length).
//!
//! [`Mutation::encoded_len`]: crate::Mutation::encoded_len
//!
//! [`MutationBuilder`]: crate::MutationBuilder
//! [`MutationBuilder::build`]: crate::MutationBuilder::build
//! [`Error::CellValueTooLarge`]: crate::Error::CellValueTooLarge
//! [`Error::MutationTooLarge`]: crate::Error::MutationTooLarge

use crate::{Cell, ClusteringKey, Error, Mutation, Row};

pub use crate::key::MAX_KEY_LEN;

/// The sstable format's largest block (raw or stored), 64 MiB: a fragment
/// never spans two blocks, so no row may encode larger.
pub const SSTABLE_MAX_BLOCK: usize = 64 << 20;

/// The largest encoded size of one row, as [`row_size_bound`] counts it: a
/// whole Data block.
pub const MAX_ROW_SIZE: usize = SSTABLE_MAX_BLOCK;

/// What [`MAX_MUTATION_SIZE`] leaves below half a 32 MiB commit log segment
/// for the log's entry framing and table id: 64 KiB.
pub const FRAMING_MARGIN: usize = 64 << 10;

/// The largest mutation, both as [`size_bound`] counts it (its sstable
/// encoding) and as [`Mutation::encoded_len`] counts it (its binary
/// encoding, which a commit log frames): half a 32 MiB commit log segment
/// less [`FRAMING_MARGIN`] (see the module docs).
pub const MAX_MUTATION_SIZE: usize = (16 << 20) - FRAMING_MARGIN;

/// The largest cell value, in bytes: 8 MiB.
pub const MAX_CELL_VALUE_LEN: usize = 8 << 20;

const _: () = assert!(MAX_MUTATION_SIZE <= SSTABLE_MAX_BLOCK / 2);
const _: () = assert!(MAX_CELL_VALUE_LEN + 2 * MAX_KEY_LEN + 4096 < MAX_MUTATION_SIZE);

/// Longest LEB128 encoding of a `u32` (lengths, counts, column ids).
const MAX_U32_VARINT: usize = 5;
/// Longest LEB128 encoding of a zigzagged `i64` (timestamps).
const MAX_I64_VARINT: usize = 10;
/// A fragment or cell kind tag, or a row's flags: one byte.
const TAG: usize = 1;
/// The most a `bytes` field adds to its content: its length varint.
const BYTES_OVERHEAD: usize = MAX_U32_VARINT;
/// An optional tombstone: presence byte, timestamp, deletion time.
const TOMBSTONE: usize = TAG + MAX_I64_VARINT + MAX_U32_VARINT;
/// A TTL: seconds and expiry.
const TTL: usize = 2 * MAX_U32_VARINT;
/// A row marker with a TTL.
const MARKER: usize = MAX_I64_VARINT + TTL;
/// A cell without its value: column delta, kind, timestamp, TTL, value length.
const CELL_OVERHEAD: usize = MAX_U32_VARINT + TAG + MAX_I64_VARINT + TTL + BYTES_OVERHEAD;
/// A row fragment without its key and cells: tag, flags, marker, row
/// tombstone, cell count.
const ROW_OVERHEAD: usize = TAG + TAG + MARKER + TOMBSTONE + MAX_U32_VARINT;
/// A range tombstone change without its key: tag, position tag, key length,
/// optional tombstone.
const RANGE_CHANGE_OVERHEAD: usize = TAG + TAG + BYTES_OVERHEAD + TOMBSTONE;
/// Partition start (tag, key length, tombstone) and partition end (tag).
const PARTITION_OVERHEAD: usize = TAG + BYTES_OVERHEAD + TOMBSTONE + TAG;

/// An upper bound of the sstable encoding of one cell.
fn cell_size_bound(cell: &Cell) -> usize {
    match cell {
        Cell::Live { value, .. } => CELL_OVERHEAD + value.len(),
        Cell::Tombstone { .. } => CELL_OVERHEAD,
    }
}

/// An upper bound of the sstable encoding of the row fragment of `row` at
/// `key` (`None` for the static row). A memtable refuses a write that would
/// make this exceed [`MAX_ROW_SIZE`].
pub fn row_size_bound(key: Option<&ClusteringKey>, row: &Row) -> usize {
    let key = key.map_or(0, |k| BYTES_OVERHEAD + k.bytes().len());
    row.cells
        .values()
        .map(cell_size_bound)
        .fold(ROW_OVERHEAD + key, usize::saturating_add)
}

/// An upper bound of the sstable encoding of every fragment of `mutation`,
/// which the builder holds to [`MAX_MUTATION_SIZE`].
pub fn size_bound(mutation: &Mutation) -> usize {
    let key = mutation.key().key().bytes().len();
    let mut size = PARTITION_OVERHEAD + key;
    if let Some(row) = mutation.static_row() {
        size = size.saturating_add(row_size_bound(None, row));
    }
    for (ck, row) in mutation.rows() {
        size = size.saturating_add(row_size_bound(Some(ck), row));
    }
    for (position, _) in mutation.range_tombstones().changes() {
        let key = position.key().map_or(0, |k| k.bytes().len());
        size = size.saturating_add(RANGE_CHANGE_OVERHEAD + key);
    }
    size
}

/// A mutation that passed [`check`], with the two sizes the check measured:
/// a write path that checks a mutation once hands these on rather than
/// measuring it again (a commit log sizes its entry by
/// [`encoded_len`](Self::encoded_len), a table counts the bytes users wrote
/// by [`size_bound`](Self::size_bound)).
///
/// ```
/// use mutation::{Cell, DecoratedKey, Mutation, Timestamp, limits};
/// let m = Mutation::builder(DecoratedKey::from_bytes("k")?)
///     .cell("ck", 1, Cell::live("v", Timestamp::from_micros(5)))
///     .build()?;
/// let checked = limits::check(&m)?;
/// assert_eq!(checked.encoded_len(), m.encoded_len());
/// assert_eq!(checked.size_bound(), limits::size_bound(&m));
/// assert!(std::ptr::eq(checked.mutation(), &m));
/// # Ok::<(), mutation::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Checked<'a> {
    mutation: &'a Mutation,
    size_bound: usize,
    encoded_len: usize,
}

impl<'a> Checked<'a> {
    /// The mutation that was checked.
    pub fn mutation(&self) -> &'a Mutation {
        self.mutation
    }

    /// Its [`size_bound`] (the sstable encoding's upper bound), at most
    /// [`MAX_MUTATION_SIZE`].
    pub fn size_bound(&self) -> usize {
        self.size_bound
    }

    /// Its [`Mutation::encoded_len`] (what a commit log frames), at most
    /// [`MAX_MUTATION_SIZE`].
    pub fn encoded_len(&self) -> usize {
        self.encoded_len
    }
}

/// Checks `mutation` against [`MAX_CELL_VALUE_LEN`] and [`MAX_MUTATION_SIZE`]
/// (its sstable size bound and its [`encoded_len`](Mutation::encoded_len)),
/// and returns it with both sizes ([`Checked`]), each measured once.
/// The builder runs it on every mutation it builds; a write path runs it
/// again only on mutations it did not build itself or that it merged (a
/// merge can grow one past the limits).
///
/// # Errors
/// [`Error::CellValueTooLarge`] or [`Error::MutationTooLarge`].
pub fn check(mutation: &Mutation) -> Result<Checked<'_>, Error> {
    let rows = mutation
        .static_row()
        .into_iter()
        .chain(mutation.rows().values());
    for row in rows {
        for cell in row.cells.values() {
            if let Cell::Live { value, .. } = cell
                && value.len() > MAX_CELL_VALUE_LEN
            {
                return Err(Error::CellValueTooLarge {
                    len: value.len(),
                    limit: MAX_CELL_VALUE_LEN,
                });
            }
        }
    }
    let size_bound = size_bound(mutation);
    let encoded_len = mutation.encoded_len();
    let size = size_bound.max(encoded_len);
    if size > MAX_MUTATION_SIZE {
        return Err(Error::MutationTooLarge {
            key: mutation.key().to_string(),
            size,
            limit: MAX_MUTATION_SIZE,
        });
    }
    Ok(Checked {
        mutation,
        size_bound,
        encoded_len,
    })
}
