//! The builder refuses a cell value or a mutation over the limits that
//! memtable, sstable and commit log all accept, and accepts data right at
//! them.

use mutation::limits::{MAX_CELL_VALUE_LEN, MAX_MUTATION_SIZE, SSTABLE_MAX_BLOCK, size_bound};
use mutation::{Cell, DecoratedKey, Error, MAX_KEY_LEN, Mutation, Timestamp};

fn ts() -> Timestamp {
    Timestamp::from_micros(1)
}

fn key() -> DecoratedKey {
    DecoratedKey::from_bytes("p").unwrap()
}

#[test]
fn a_cell_value_over_the_limit_is_refused_with_its_size() {
    let value = vec![7u8; MAX_CELL_VALUE_LEN + 1];
    let err = Mutation::builder(key())
        .cell("ck", 0, Cell::live(value, ts()))
        .build()
        .unwrap_err();
    assert!(matches!(
        err,
        Error::CellValueTooLarge { len, limit } if len == MAX_CELL_VALUE_LEN + 1 && limit == MAX_CELL_VALUE_LEN
    ));
    assert_eq!(
        err.to_string(),
        "cell value of 8388609 bytes exceeds the 8388608-byte limit"
    );
    // The static row is held to the same limit.
    let err = Mutation::builder(key())
        .static_cell(0, Cell::live(vec![0u8; MAX_CELL_VALUE_LEN + 1], ts()))
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::CellValueTooLarge { .. }), "{err}");
}

#[test]
fn a_value_at_the_limit_is_accepted() {
    let m = Mutation::builder(key())
        .cell("ck", 0, Cell::live(vec![7u8; MAX_CELL_VALUE_LEN], ts()))
        .build()
        .unwrap();
    assert!(size_bound(&m) <= MAX_MUTATION_SIZE);
}

#[test]
fn a_mutation_over_the_limit_is_refused_even_if_each_value_fits() {
    // Two values of the largest size, plus keys: over 32 MiB in total.
    let err = Mutation::builder(key())
        .cell("a", 0, Cell::live(vec![1u8; MAX_CELL_VALUE_LEN], ts()))
        .cell("b", 0, Cell::live(vec![2u8; MAX_CELL_VALUE_LEN], ts()))
        .build()
        .unwrap_err();
    let Error::MutationTooLarge { size, limit, .. } = &err else {
        panic!("unexpected {err}");
    };
    assert!(*size > MAX_MUTATION_SIZE && *limit == MAX_MUTATION_SIZE);
    assert!(
        err.to_string()
            .ends_with(&format!("exceeds the {MAX_MUTATION_SIZE}-byte limit")),
        "{err}"
    );
}

#[test]
fn shadowed_data_does_not_count() {
    // A later partition tombstone removes both values: what is kept fits.
    let m = Mutation::builder(key())
        .cell("a", 0, Cell::live(vec![1u8; MAX_CELL_VALUE_LEN], ts()))
        .cell("b", 0, Cell::live(vec![2u8; MAX_CELL_VALUE_LEN], ts()))
        .partition_tombstone(mutation::Tombstone::new(Timestamp::from_micros(2), 0))
        .build()
        .unwrap();
    assert!(m.rows().is_empty());
}

#[test]
fn the_limits_fit_the_sstable_block_with_the_largest_keys() {
    // The largest accepted mutation, with the longest keys, still encodes
    // below one sstable block, so each of its fragments does too.
    let big_key = DecoratedKey::from_bytes(vec![3u8; MAX_KEY_LEN]).unwrap();
    let m = Mutation::builder(big_key)
        .cell(
            vec![4u8; MAX_KEY_LEN],
            0,
            Cell::live(vec![5u8; MAX_CELL_VALUE_LEN], ts()),
        )
        .build()
        .unwrap();
    assert!(size_bound(&m) <= MAX_MUTATION_SIZE);
    const { assert!(MAX_MUTATION_SIZE < SSTABLE_MAX_BLOCK) };
}
