//! Rows and their cells, written as a format's [`Layout`](super::Layout)
//! says:
//!
//! ```text
//! row  = flags:u8 [marker: timestamp [ttl]] [tombstone]
//!        cell_count (column cell)*            columns ascending
//! cell = 0 timestamp value                    live
//!      | 1 timestamp ttl value                expiring
//!      | 2 timestamp local_deletion_time      tombstone
//! ttl  = seconds expiry
//! ```
//!
//! The flag bits are the layout's [`RowFlags`](super::RowFlags); a marker
//! TTL without a marker and unknown bits are refused.

use super::{
    Columns, DecodeError, Format, Reader, get_count, get_time, get_timestamp, get_tombstone,
    get_ttl, get_value, put_count, put_time, put_timestamp, put_tombstone, put_ttl, put_u32,
    put_value,
};
use crate::{Cell, ColumnId, Row, RowMarker};

const CELL_LIVE: u8 = 0;
const CELL_EXPIRING: u8 = 1;
const CELL_TOMBSTONE: u8 = 2;

/// Appends a row.
#[inline]
pub fn put_row<F: Format>(out: &mut Vec<u8>, row: &Row) {
    let bits = F::LAYOUT.row_flags;
    let mut flags = 0;
    if let Some(m) = row.marker {
        flags |= bits.marker;
        if m.ttl.is_some() {
            flags |= bits.marker_ttl;
        }
    }
    if row.tombstone.is_some() {
        flags |= bits.tombstone;
    }
    out.push(flags);
    if let Some(m) = row.marker {
        put_timestamp::<F>(out, m.timestamp);
        if let Some(ttl) = m.ttl {
            put_ttl::<F>(out, ttl);
        }
    }
    if let Some(t) = row.tombstone {
        put_tombstone::<F>(out, t);
    }
    put_count::<F>(out, row.cells.len());
    let mut previous = None;
    for (&column, cell) in &row.cells {
        put_column::<F>(out, previous, column);
        previous = Some(column);
        put_cell::<F>(out, cell);
    }
}

/// Appends a column id (ids ascend, so a gap is never negative).
#[inline]
fn put_column<F: Format>(out: &mut Vec<u8>, previous: Option<ColumnId>, column: ColumnId) {
    match F::LAYOUT.columns {
        Columns::Fixed => put_u32(out, column),
        Columns::Varint => super::put_uvarint(out, u64::from(column)),
        Columns::VarintGaps => {
            let gap = previous.map_or(column, |p| column - p - 1);
            super::put_uvarint(out, u64::from(gap));
        }
    }
}

/// Appends a cell (kind, timestamp, then its TTL and value or its
/// deletion time).
#[inline]
pub fn put_cell<F: Format>(out: &mut Vec<u8>, cell: &Cell) {
    match cell {
        Cell::Live {
            value,
            timestamp,
            ttl,
        } => {
            out.push(if ttl.is_some() {
                CELL_EXPIRING
            } else {
                CELL_LIVE
            });
            put_timestamp::<F>(out, *timestamp);
            if let Some(ttl) = ttl {
                put_ttl::<F>(out, *ttl);
            }
            put_value::<F>(out, value);
        }
        Cell::Tombstone {
            timestamp,
            local_deletion_time,
        } => {
            out.push(CELL_TOMBSTONE);
            put_timestamp::<F>(out, *timestamp);
            put_time::<F>(out, *local_deletion_time);
        }
    }
}

/// The exact length [`put_row`] writes.
pub fn row_len<F: Format>(row: &Row) -> usize {
    let mut n = 1;
    if let Some(m) = row.marker {
        n += super::timestamp_len::<F>(m.timestamp) + m.ttl.map_or(0, super::ttl_len::<F>);
    }
    n += row.tombstone.map_or(0, super::tombstone_len::<F>);
    n += super::count_len::<F>(row.cells.len());
    let mut previous: Option<ColumnId> = None;
    for (&column, cell) in &row.cells {
        n += match F::LAYOUT.columns {
            Columns::Fixed => 4,
            Columns::Varint => super::leb128::len(u64::from(column)),
            Columns::VarintGaps => {
                super::leb128::len(u64::from(previous.map_or(column, |p| column - p - 1)))
            }
        };
        previous = Some(column);
        n += cell_len::<F>(cell);
    }
    n
}

/// The exact length [`put_cell`] writes.
pub fn cell_len<F: Format>(cell: &Cell) -> usize {
    1 + super::timestamp_len::<F>(cell.timestamp())
        + match cell {
            Cell::Live { value, ttl, .. } => {
                ttl.map_or(0, super::ttl_len::<F>) + super::value_len::<F>(value)
            }
            Cell::Tombstone {
                local_deletion_time,
                ..
            } => super::time_len::<F>(*local_deletion_time),
        }
}

/// The fewest bytes a cell and its column id take: the id, the kind, the
/// timestamp and the shorter of a value length and a deletion time.
const fn min_cell_len<F: Format>() -> usize {
    let value = F::LAYOUT.value_len.min_len(4);
    let deletion = F::LAYOUT.time.min_len(4);
    F::LAYOUT.columns.min_len()
        + 1
        + F::LAYOUT.timestamp.min_len(8)
        + if value < deletion { value } else { deletion }
}

/// Reads a row, checking everything [`put_row`] guarantees: known flags,
/// valid timestamps and TTLs, strictly ascending columns, known cell
/// kinds. Values (and keys) are slices of a shared input
/// ([`Reader::new_shared`]), copies otherwise.
///
/// # Errors
/// A [`DecodeError`] at the first value that is missing or invalid.
#[inline]
pub fn get_row<F: Format>(r: &mut Reader<'_>) -> Result<Row, DecodeError> {
    let bits = F::LAYOUT.row_flags;
    let flags_at = r.position();
    let flags = r.u8("row flags")?;
    if flags & !bits.known() != 0 {
        return Err(DecodeError::new(
            flags_at,
            format!(
                "invalid row flags {flags:#04x}: unknown bits (known: {:#04x})",
                bits.known()
            ),
        ));
    }
    if flags & bits.marker_ttl != 0 && flags & bits.marker == 0 {
        return Err(DecodeError::new(
            flags_at,
            format!("invalid row flags {flags:#04x}: a marker TTL without a marker"),
        ));
    }
    let mut row = Row::new();
    if flags & bits.marker != 0 {
        let timestamp = get_timestamp::<F>(r, "row marker")?;
        let ttl = if flags & bits.marker_ttl != 0 {
            Some(get_ttl::<F>(r)?)
        } else {
            None
        };
        row.marker = Some(RowMarker { timestamp, ttl });
    }
    if flags & bits.tombstone != 0 {
        row.tombstone = Some(get_tombstone::<F>(r, "row tombstone")?);
    }
    let cells = get_count::<F>(r, "cell count", min_cell_len::<F>())?;
    let mut previous: Option<ColumnId> = None;
    for _ in 0..cells {
        let column = get_column::<F>(r, previous)?;
        previous = Some(column);
        let cell = get_cell::<F>(r)?;
        row.cells.insert(column, cell);
    }
    Ok(row)
}

/// Reads a column id after `previous`.
#[inline]
fn get_column<F: Format>(
    r: &mut Reader<'_>,
    previous: Option<ColumnId>,
) -> Result<ColumnId, DecodeError> {
    let start = r.position();
    let column = match F::LAYOUT.columns {
        Columns::Fixed => r.u32("column id")?,
        Columns::Varint => r.u32_varint("column id")?,
        Columns::VarintGaps => {
            let gap = r.u32_varint("column id gap")?;
            return match previous {
                None => Ok(gap),
                Some(p) => p
                    .checked_add(1)
                    .and_then(|c| c.checked_add(gap))
                    .ok_or_else(|| DecodeError::new(start, "column id overflows u32")),
            };
        }
    };
    if previous.is_some_and(|p| column <= p) {
        return Err(DecodeError::new(
            start,
            format!("column {column} is not after the previous column"),
        ));
    }
    Ok(column)
}

/// Reads a cell.
///
/// # Errors
/// An unknown kind, or a missing or invalid timestamp, TTL, value or
/// deletion time.
#[inline]
pub fn get_cell<F: Format>(r: &mut Reader<'_>) -> Result<Cell, DecodeError> {
    let kind_at = r.position();
    Ok(match r.u8("cell kind")? {
        CELL_LIVE => {
            let ts = get_timestamp::<F>(r, "cell")?;
            Cell::live(get_value::<F>(r)?, ts)
        }
        CELL_EXPIRING => {
            let ts = get_timestamp::<F>(r, "cell")?;
            let ttl = get_ttl::<F>(r)?;
            Cell::expiring(get_value::<F>(r)?, ts, ttl)
        }
        CELL_TOMBSTONE => {
            let ts = get_timestamp::<F>(r, "cell")?;
            Cell::tombstone(ts, get_time::<F>(r, "local deletion time")?)
        }
        other => {
            return Err(DecodeError::new(
                kind_at,
                format!("unknown cell kind {other} (known: 0, 1, 2)"),
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Layout, RowFlags};
    use crate::{Timestamp, Tombstone, Ttl};

    struct Fixed;
    impl Format for Fixed {
        const LAYOUT: Layout = Layout::FIXED;
    }

    /// The sstable's choices, with a small value limit.
    struct Varint;
    impl Format for Varint {
        const LAYOUT: Layout = Layout {
            columns: Columns::VarintGaps,
            max_value_len: 16,
            row_flags: RowFlags {
                marker: 1,
                marker_ttl: 4,
                tombstone: 2,
            },
            ..Layout::VARINT
        };
    }

    fn sample() -> Row {
        let ts = Timestamp::from_micros;
        let ttl = Ttl::new(60, 1_000).unwrap();
        Row::new()
            .with_marker(RowMarker::expiring(ts(-7), ttl))
            .with_tombstone(Tombstone::new(ts(3), u32::MAX))
            .with_cell(0, Cell::live(&b"v"[..], ts(i64::MAX)))
            .with_cell(1, Cell::expiring(&b"x"[..], ts(5), ttl))
            .with_cell(300, Cell::tombstone(ts(i64::MIN + 1), 9))
            .with_cell(u32::MAX, Cell::live(&b""[..], ts(0)))
    }

    fn round_trip<F: Format>(row: &Row) -> Vec<u8> {
        let mut out = Vec::new();
        put_row::<F>(&mut out, row);
        assert_eq!(out.len(), row_len::<F>(row));
        let mut r = Reader::new(&out);
        assert_eq!(&get_row::<F>(&mut r).unwrap(), row);
        assert!(r.is_empty());
        for n in 0..out.len() {
            assert!(get_row::<F>(&mut Reader::new(&out[..n])).is_err(), "{n}");
        }
        out
    }

    #[test]
    fn rows_round_trip_in_both_layouts_with_exact_lengths() {
        for row in [sample(), Row::new()] {
            round_trip::<Fixed>(&row);
            round_trip::<Varint>(&row);
        }
    }

    #[test]
    fn bad_rows_name_the_problem() {
        let err = |bytes: &[u8]| get_row::<Varint>(&mut Reader::new(bytes)).unwrap_err();
        assert_eq!(
            err(&[0x80]).to_string(),
            "at byte 0: invalid row flags 0x80: unknown bits (known: 0x07)"
        );
        assert_eq!(
            err(&[4]).to_string(),
            "at byte 0: invalid row flags 0x04: a marker TTL without a marker"
        );
        assert_eq!(
            err(&[0, 1, 0, 7, 0, 0]).to_string(),
            "at byte 3: unknown cell kind 7 (known: 0, 1, 2)"
        );
        assert_eq!(
            err(&[0, 2, 0, 0, 0, 0]).to_string(),
            "at byte 1: cell count of 2 needs at least 8 bytes but only 4 remain"
        );
        assert!(
            err(&[0, 1, 0, 0, 0, 17])
                .detail
                .contains("exceeds the 16-byte limit")
        );
        assert!(
            err(&[
                1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0
            ])
            .detail
            .contains("row marker timestamp -9223372036854775808 is out of range")
        );
        // Columns that do not ascend, and a gap past u32::MAX.
        let mut fixed = vec![0, 2, 0, 0, 0];
        for _ in 0..2 {
            fixed.extend_from_slice(&[5, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        }
        let e = get_row::<Fixed>(&mut Reader::new(&fixed)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "at byte 22: column 5 is not after the previous column"
        );
        let gaps = [0, 2, 0xff, 0xff, 0xff, 0xff, 0x0f, 2, 0, 0, 0, 2, 0, 0];
        let e = get_row::<Varint>(&mut Reader::new(&gaps)).unwrap_err();
        assert_eq!(e.to_string(), "at byte 10: column id overflows u32");
    }
}
