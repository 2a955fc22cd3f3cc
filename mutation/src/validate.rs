//! Checking the ordering invariants of a fragment stream.

use std::borrow::Borrow;

use crate::{DecoratedKey, Error, Fragment, FragmentReader, PartitionRange, Position, Tombstone};

#[derive(Debug)]
enum State {
    /// Between partitions (or before the first).
    Between,
    /// Inside a partition.
    Inside {
        key: DecoratedKey,
        /// Last clustering position seen; `None` right after the start.
        last: Option<Position>,
        /// Whether a static row or clustering fragment was seen.
        past_static: bool,
        /// The range tombstone in effect.
        active: Option<Tombstone>,
    },
}

/// Checks that a fragment stream obeys the ordering rules described on
/// [`Fragment`], one fragment at a time, and reports the first violation
/// with its index and partition.
///
/// ```
/// use mutation::{DecoratedKey, Fragment, StreamValidator};
/// let key = DecoratedKey::from_bytes("k").unwrap();
/// let mut v = StreamValidator::new();
/// v.check(&Fragment::PartitionStart { key, tombstone: None }).unwrap();
/// assert!(v.finish().is_err()); // the partition was never closed
/// ```
#[derive(Debug)]
pub struct StreamValidator {
    index: u64,
    state: State,
    last_key: Option<DecoratedKey>,
    range: Option<PartitionRange>,
}

impl Default for StreamValidator {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamValidator {
    /// A validator at the start of a stream.
    pub fn new() -> Self {
        Self {
            index: 0,
            state: State::Between,
            last_key: None,
            range: None,
        }
    }

    /// Number of fragments accepted so far.
    pub fn fragments_checked(&self) -> u64 {
        self.index
    }

    fn violation(&self, detail: String) -> Error {
        let partition = match &self.state {
            State::Inside { key, .. } => key.to_string(),
            State::Between => "none".to_owned(),
        };
        Error::InvalidStream {
            index: self.index,
            partition,
            detail,
        }
    }

    /// Checks the next fragment.
    ///
    /// # Errors
    /// [`Error::InvalidStream`] naming the fragment's index, its partition
    /// and what is wrong. The validator's state is unchanged by a rejected
    /// fragment.
    pub fn check(&mut self, fragment: &Fragment) -> Result<(), Error> {
        self.check_inner(fragment)?;
        self.index += 1;
        Ok(())
    }

    fn check_inner(&mut self, fragment: &Fragment) -> Result<(), Error> {
        match fragment {
            Fragment::PartitionStart { key, tombstone } => {
                if let State::Inside { .. } = self.state {
                    return Err(self.violation(format!(
                        "partition start {key} before the current partition ended"
                    )));
                }
                if let Some(last) = &self.last_key
                    && key <= last
                {
                    return Err(self.violation(format!(
                        "partition {key} does not come after the previous partition {last}"
                    )));
                }
                if let Some(range) = &self.range
                    && !range.contains(key)
                {
                    return Err(self.violation(format!(
                        "partition {key} lies outside the range {range} fast-forwarded to"
                    )));
                }
                if let Some(t) = tombstone
                    && let Err(e) = t.timestamp.check("partition tombstone")
                {
                    return Err(self.violation(e.to_string()));
                }
                self.last_key = Some(key.clone());
                self.state = State::Inside {
                    key: key.clone(),
                    last: None,
                    past_static: false,
                    active: None,
                };
                Ok(())
            }
            Fragment::StaticRow(row) => {
                let State::Inside { past_static, .. } = &self.state else {
                    return Err(self.violation("static row outside a partition".to_owned()));
                };
                if *past_static {
                    return Err(self.violation(
                        "static row after a static or clustering fragment of the same partition"
                            .to_owned(),
                    ));
                }
                if let Err(e) = row.validate() {
                    return Err(self.violation(format!("static row: {e}")));
                }
                if let State::Inside { past_static, .. } = &mut self.state {
                    *past_static = true;
                }
                Ok(())
            }
            Fragment::ClusteringRow { key, row } => {
                let pos = Position::At(key.clone());
                self.check_position(fragment, &pos)?;
                if let Err(e) = row.validate() {
                    return Err(self.violation(format!("clustering row {key}: {e}")));
                }
                self.advance(pos, None);
                Ok(())
            }
            Fragment::RangeTombstoneChange {
                position,
                tombstone,
            } => {
                if position.is_row() {
                    return Err(self.violation(format!(
                        "range tombstone change at a row position ({position})"
                    )));
                }
                self.check_position(fragment, position)?;
                if let Some(t) = tombstone
                    && let Err(e) = t.timestamp.check("range tombstone")
                {
                    return Err(self.violation(e.to_string()));
                }
                self.advance(position.clone(), Some(*tombstone));
                Ok(())
            }
            Fragment::PartitionEnd => {
                let State::Inside { active, .. } = &self.state else {
                    return Err(self.violation("partition end outside a partition".to_owned()));
                };
                if let Some(t) = active {
                    return Err(self.violation(format!(
                        "partition ends with the range tombstone {t:?} still open"
                    )));
                }
                self.state = State::Between;
                Ok(())
            }
        }
    }

    fn check_position(&self, fragment: &Fragment, pos: &Position) -> Result<(), Error> {
        let State::Inside { last, .. } = &self.state else {
            return Err(self.violation(format!("{} outside a partition", fragment.kind())));
        };
        if let Some(last) = last
            && pos <= last
        {
            return Err(self.violation(format!(
                "{} at {pos} does not come after the previous position {last}",
                fragment.kind()
            )));
        }
        Ok(())
    }

    fn advance(&mut self, pos: Position, change: Option<Option<Tombstone>>) {
        if let State::Inside {
            last,
            past_static,
            active,
            ..
        } = &mut self.state
        {
            *last = Some(pos);
            *past_static = true;
            if let Some(t) = change {
                *active = t;
            }
        }
    }

    /// Checks the end of the stream.
    ///
    /// # Errors
    /// [`Error::InvalidStream`] if a partition is still open.
    pub fn finish(&self) -> Result<(), Error> {
        match &self.state {
            State::Between => Ok(()),
            State::Inside { .. } => {
                Err(self.violation("stream ended inside a partition".to_owned()))
            }
        }
    }

    /// Records a fast-forward: the current partition (if any) is abandoned,
    /// and later partitions must lie in `range` (and still come after every
    /// partition seen).
    pub fn fast_forwarded(&mut self, range: &PartitionRange) {
        self.state = State::Between;
        self.range = Some(range.clone());
    }

    /// Records a `next_partition()`: the current partition (if any) is
    /// abandoned.
    pub fn skipped_partition(&mut self) {
        self.state = State::Between;
    }
}

/// Checks a whole stream, including that it does not end inside a
/// partition.
///
/// # Errors
/// [`Error::InvalidStream`] describing the first violation.
pub fn validate_stream<F: Borrow<Fragment>>(
    fragments: impl IntoIterator<Item = F>,
) -> Result<(), Error> {
    let mut v = StreamValidator::new();
    for f in fragments {
        v.check(f.borrow())?;
    }
    v.finish()
}

/// Wraps a reader and validates everything it produces: the first
/// violation is returned as an [`Error::InvalidStream`] instead of the
/// fragment, and the end of the stream is checked too.
#[derive(Debug)]
pub struct ValidatingReader<R> {
    inner: R,
    validator: StreamValidator,
}

impl<R: FragmentReader> ValidatingReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            validator: StreamValidator::new(),
        }
    }

    /// The wrapped reader.
    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: FragmentReader> FragmentReader for ValidatingReader<R> {
    fn next(&mut self) -> Result<Option<Fragment>, Error> {
        match self.inner.next()? {
            Some(f) => {
                self.validator.check(&f)?;
                Ok(Some(f))
            }
            None => {
                self.validator.finish()?;
                Ok(None)
            }
        }
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), Error> {
        self.validator.fast_forwarded(&range);
        self.inner.fast_forward_to(range)
    }

    fn next_partition(&mut self) -> Result<(), Error> {
        self.validator.skipped_partition();
        self.inner.next_partition()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClusteringKey, Row, Timestamp};

    fn dk(s: &str) -> DecoratedKey {
        DecoratedKey::from_bytes(s.as_bytes().to_vec()).unwrap()
    }

    fn ck(s: &str) -> ClusteringKey {
        ClusteringKey::new(s.as_bytes().to_vec()).unwrap()
    }

    fn start(k: &DecoratedKey) -> Fragment {
        Fragment::PartitionStart {
            key: k.clone(),
            tombstone: None,
        }
    }

    fn row(k: &str) -> Fragment {
        Fragment::ClusteringRow {
            key: ck(k),
            row: Row::new(),
        }
    }

    #[test]
    fn reports_first_violation_with_index() {
        let k = dk("p");
        let stream = vec![start(&k), row("b"), row("a"), Fragment::PartitionEnd];
        let err = validate_stream(&stream).unwrap_err();
        match err {
            Error::InvalidStream { index, detail, .. } => {
                assert_eq!(index, 2);
                assert!(detail.contains("does not come after"), "{detail}");
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn rejects_unclosed_range_tombstone_and_row_positions() {
        let k = dk("p");
        let t = Some(crate::Tombstone::new(Timestamp::from_micros(1), 0));
        let open = vec![
            start(&k),
            Fragment::RangeTombstoneChange {
                position: Position::BeforeAll,
                tombstone: t,
            },
            Fragment::PartitionEnd,
        ];
        assert!(validate_stream(&open).is_err());
        let at_row = vec![
            start(&k),
            Fragment::RangeTombstoneChange {
                position: Position::At(ck("a")),
                tombstone: t,
            },
        ];
        assert!(validate_stream(&at_row).is_err());
    }

    #[test]
    fn rejects_out_of_order_partitions_and_misplaced_fragments() {
        let (a, b) = (dk("a"), dk("b"));
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        let ok = vec![
            start(&lo),
            Fragment::PartitionEnd,
            start(&hi),
            Fragment::PartitionEnd,
        ];
        assert!(validate_stream(&ok).is_ok());
        let bad = vec![
            start(&hi),
            Fragment::PartitionEnd,
            start(&lo),
            Fragment::PartitionEnd,
        ];
        assert!(validate_stream(&bad).is_err());
        let dup = vec![
            start(&lo),
            Fragment::PartitionEnd,
            start(&lo),
            Fragment::PartitionEnd,
        ];
        assert!(validate_stream(&dup).is_err());
        assert!(validate_stream([row("a")]).is_err());
        assert!(validate_stream([Fragment::PartitionEnd]).is_err());
        let late_static = vec![
            start(&lo),
            row("a"),
            Fragment::StaticRow(Row::new()),
            Fragment::PartitionEnd,
        ];
        assert!(validate_stream(&late_static).is_err());
        assert!(validate_stream([start(&lo)]).is_err());
    }
}
