//! What a format chooses: how each kind of number is written, the longest
//! value it reads, and which bit of a row's flags means what. Everything
//! else about the data model's encodings is shared (the [`codec`](super)
//! functions).

/// How a format writes one kind of integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Int {
    /// Little-endian at the field's own width (named with each field of
    /// [`Layout`]).
    Fixed,
    /// A LEB128 varint ([`super::leb128`]); a signed field is zigzagged
    /// first, so that small negative values stay short.
    Varint,
}

impl Int {
    /// The fewest bytes a value takes: `width` for [`Int::Fixed`], 1 for
    /// [`Int::Varint`].
    pub const fn min_len(self, width: usize) -> usize {
        match self {
            Int::Fixed => width,
            Int::Varint => 1,
        }
    }
}

/// How a format writes the column ids of a row's cells (which ascend).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Columns {
    /// Each id as a little-endian `u32`.
    Fixed,
    /// Each id as a varint.
    Varint,
    /// The first id as a varint, then each id's gap after the previous one
    /// (the id minus the previous minus 1) as a varint: dense columns take
    /// one byte each whatever their ids.
    VarintGaps,
}

impl Columns {
    /// The fewest bytes a column id takes.
    pub const fn min_len(self) -> usize {
        match self {
            Columns::Fixed => 4,
            Columns::Varint | Columns::VarintGaps => 1,
        }
    }
}

/// The bits of a row's flag byte; the three must be distinct single bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowFlags {
    /// The row has a marker.
    pub marker: u8,
    /// The marker has a TTL (set only with `marker`).
    pub marker_ttl: u8,
    /// The row has a tombstone.
    pub tombstone: u8,
}

impl RowFlags {
    /// Every bit the flags may have.
    pub const fn known(self) -> u8 {
        self.marker | self.marker_ttl | self.tombstone
    }
}

/// One format's choices: how it writes each kind of number, the longest
/// cell value it reads, and its row flag bits. Most formats are one of the
/// two bases ([`Layout::FIXED`], [`Layout::VARINT`]) or one with a few
/// fields changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Write timestamps ([`crate::Timestamp`]): 8 bytes when fixed.
    pub timestamp: Int,
    /// Local deletion times, TTLs and expiry times (`u32` seconds): 4
    /// bytes when fixed.
    pub time: Int,
    /// Counts of cells, rows and range tombstones: a `u32` when fixed.
    pub count: Int,
    /// Column ids.
    pub columns: Columns,
    /// The length before a partition or clustering key: a `u16` when fixed
    /// (keys are at most [`crate::MAX_KEY_LEN`] bytes).
    pub key_len: Int,
    /// The length before a cell value: a `u32` when fixed.
    pub value_len: Int,
    /// The longest cell value the format decodes.
    pub max_value_len: u32,
    /// The bits of a row's flag byte.
    pub row_flags: RowFlags,
}

impl Layout {
    /// Every number at its fixed width; row flags 1 marker, 2 marker TTL,
    /// 4 tombstone.
    pub const FIXED: Layout = Layout {
        timestamp: Int::Fixed,
        time: Int::Fixed,
        count: Int::Fixed,
        columns: Columns::Fixed,
        key_len: Int::Fixed,
        value_len: Int::Fixed,
        max_value_len: u32::MAX,
        row_flags: RowFlags {
            marker: 1,
            marker_ttl: 2,
            tombstone: 4,
        },
    };

    /// Every number a varint (column ids each whole); row flags as
    /// [`Layout::FIXED`]'s.
    pub const VARINT: Layout = Layout {
        timestamp: Int::Varint,
        time: Int::Varint,
        count: Int::Varint,
        columns: Columns::Varint,
        key_len: Int::Varint,
        value_len: Int::Varint,
        ..Layout::FIXED
    };
}

/// A format: a type with no values that names its [`Layout`]. The codec
/// functions are generic over it, so each format's encoder is compiled for
/// its layout with no choice left to make at run time.
///
/// ```
/// use mutation::codec::{self, Columns, Format, Int, Layout, Reader};
/// use mutation::{Cell, Row, Timestamp};
///
/// struct Compact;
/// impl Format for Compact {
///     const LAYOUT: Layout = Layout {
///         columns: Columns::VarintGaps,
///         max_value_len: 1 << 20,
///         ..Layout::VARINT
///     };
/// }
///
/// let row = Row::new().with_cell(7, Cell::live("v", Timestamp::from_micros(-3)));
/// let mut out = Vec::new();
/// codec::put_row::<Compact>(&mut out, &row);
/// // Flags, cell count, column, kind, timestamp, value length, value.
/// assert_eq!(out, [0, 1, 7, 0, 5, 1, b'v']);
/// assert_eq!(out.len(), codec::row_len::<Compact>(&row));
/// let mut r = Reader::new(&out);
/// assert_eq!(codec::get_row::<Compact>(&mut r)?, row);
/// # Ok::<(), mutation::codec::DecodeError>(())
/// ```
pub trait Format {
    /// The format's choices.
    const LAYOUT: Layout;
}
