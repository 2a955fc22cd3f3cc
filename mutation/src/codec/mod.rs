//! The codec primitives every encoding of the data model is built from:
//! the commit log's mutation encoding ([`crate::Mutation::encode`]), the
//! memtable's region entries and the sstable's Data and Index blocks. Each
//! format keeps its own layout and version; what they share is written
//! once, here.
//!
//! * [`leb128`]: varints, the one implementation.
//! * Integers: fixed-width little-endian ([`put_u32`]), varints
//!   ([`put_uvarint`]), zigzag varints ([`put_ivarint`], [`zigzag`]) and
//!   varint-prefixed byte strings ([`put_bytes`]).
//! * [`Reader`]: the bounds-checked cursor every decoder reads through; a
//!   malformed input is a [`DecodeError`] naming the offset and the field,
//!   never a panic, and no length is trusted before it is checked.
//! * [`Format`] and its [`Layout`]: what a format chooses (fixed or
//!   varint for each kind of number, how column ids are written, its
//!   longest value, its row flag bits).
//! * The data model's values, generic over the format: timestamps
//!   ([`put_timestamp`]/[`get_timestamp`]), deletion and expiry times
//!   ([`put_time`]), counts ([`get_count`]), tombstones
//!   ([`put_tombstone`], [`put_optional_tombstone`]), TTLs ([`put_ttl`]),
//!   keys ([`put_key`], [`get_clustering_key`], [`get_partition_key`]),
//!   cell values ([`put_value`]), clustering bounds ([`put_bound`]) and
//!   positions ([`put_position`]), rows and cells ([`put_row`],
//!   [`get_row`], [`put_cell`], [`get_cell`]). Each `put_*` has a `get_*`
//!   that checks what it reads as the value's constructor would, and most
//!   a `*_len` with the exact length written.
//!
//! ```
//! use mutation::codec::{self, Format, Layout, Reader};
//! use mutation::{Timestamp, Tombstone};
//!
//! /// Fixed-width numbers, as the commit log's encoding writes them.
//! struct Fixed;
//! impl Format for Fixed {
//!     const LAYOUT: Layout = Layout::FIXED;
//! }
//!
//! let t = Tombstone::new(Timestamp::from_micros(5), 9);
//! let mut out = Vec::new();
//! codec::put_optional_tombstone::<Fixed>(&mut out, Some(t));
//! assert_eq!(out, [1, 5, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0]);
//! let mut r = Reader::new(&out);
//! assert_eq!(codec::get_optional_tombstone::<Fixed>(&mut r, "tombstone")?, Some(t));
//! r.expect_end("the tombstone")?;
//! // Bad input is an error that says where and what.
//! let err = codec::get_optional_tombstone::<Fixed>(&mut Reader::new(&[2]), "tombstone");
//! assert_eq!(
//!     err.unwrap_err().to_string(),
//!     "at byte 0: tombstone presence flag 2 is neither 0 nor 1"
//! );
//! # Ok::<(), codec::DecodeError>(())
//! ```

mod fields;
mod ints;
mod layout;
pub mod leb128;
mod reader;
mod row;

pub use fields::{
    bound_len, count_len, get_bound, get_clustering_key, get_count, get_key,
    get_optional_tombstone, get_partition_key, get_position, get_time, get_timestamp,
    get_tombstone, get_ttl, get_value, key_len, put_bound, put_count, put_key,
    put_optional_tombstone, put_position, put_time, put_timestamp, put_tombstone, put_ttl,
    put_value, time_len, timestamp_len, tombstone_len, ttl_len, value_len,
};
pub use ints::{
    put_bytes, put_i64, put_ivarint, put_u16, put_u32, put_u64, put_uvarint, unzigzag, zigzag,
};
pub use layout::{Columns, Format, Int, Layout, RowFlags};
pub(crate) use reader::checked;
pub use reader::{DecodeError, Reader};
pub use row::{cell_len, get_cell, get_row, put_cell, put_row, row_len};
