//! `set_max_open_files(0)` is refused with `Error::InvalidOption`, naming
//! the option and what is accepted, and leaves the capacity unchanged.
//!
//! The capacity is process-wide, so this is the only test in this binary.

use sstable::Error;

#[test]
fn zero_capacity_is_refused_and_changes_nothing() {
    assert_eq!(sstable::max_open_files(), sstable::DEFAULT_MAX_OPEN_FILES);
    let err = sstable::set_max_open_files(0).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidOption {
                name: "max_open_files",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "invalid option max_open_files = 0: at least 1"
    );
    assert_eq!(sstable::max_open_files(), sstable::DEFAULT_MAX_OPEN_FILES);
    sstable::set_max_open_files(1).unwrap();
    assert_eq!(sstable::max_open_files(), 1);
}
