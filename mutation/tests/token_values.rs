//! Tokens equal Cassandra's `Murmur3Partitioner` for published keys.
//!
//! Expected values come from two public test suites that check their
//! Murmur3 token computation against Cassandra/ScyllaDB:
//!
//! * scylladb/scylla-rust-driver, `scylla/src/routing/partitioner.rs`,
//!   test `test_murmur3_partitioner` ("test", "xd", "primary_key",
//!   "kremówki"; the last has non-ASCII bytes in its tail, so it exercises
//!   Cassandra's signed-byte quirk).
//! * apache/cassandra-gocql-driver, `internal/murmur/murmur_test.go`, test
//!   `TestMurmur3H1ForCassandra` (keys of every tail length 0..=15, with
//!   tail bytes >= 0x80 such as 0xc8..0xd7).

use mutation::{PartitionKey, Token};

fn token(key: &[u8]) -> i64 {
    PartitionKey::new(key.to_vec()).unwrap().token().value()
}

#[test]
fn scylla_rust_driver_published_tokens() {
    let cases: [(&str, i64); 4] = [
        ("test", -6017608668500074083),
        ("xd", 4507812186440344727),
        ("primary_key", -1632642444691073360),
        ("kremówki", 4354931215268080151),
    ];
    for (key, expected) in cases {
        assert_eq!(token(key.as_bytes()), expected, "key {key:?}");
    }
}

#[test]
fn gocql_published_tokens_for_every_tail_length() {
    // "prefix" followed by 0x00, 0x01, ... : tail lengths 7..=15 then 0..=6.
    let prefix: Vec<u8> = b"prefix".to_vec();
    let expected_growing: [i64; 17] = [
        -5156414768376541762, // prefix\x00
        3700033067394128583,
        -3973852022020331202,
        3038655072509758878,
        -5681686890369564299,
        8960422816272944721,
        -1104872167714568090,
        -9199676315897541990,
        4847624695450664884,
        -2737291859101550625,
        -1154133289533387924,
        5781349077088505981,
        -681021187788781932,
        -3787130296809111096,
        -3115393326357146996,
        -2684252762052835206, // prefix\x00..\x0f
        -278181328349571586,  // prefix\x00..\x0f\xc8
    ];
    let growing: Vec<u8> = (0u8..=15).chain([0xc8]).collect();
    for (n, expected) in expected_growing.iter().enumerate() {
        let mut key = prefix.clone();
        key.extend_from_slice(&growing[..=n]);
        assert_eq!(token(&key), *expected, "key {key:02x?}");
    }

    // prefix2 = "prefix" \x00..\x0f \xc8 \xc9, then \xca.. appended.
    let mut prefix2 = prefix.clone();
    prefix2.extend((0u8..=15).chain([0xc8, 0xc9]));
    let expected_high: [i64; 15] = [
        -5319761130493488577, // prefix2
        -4593148434938707926, // + \xca
        -575713103357290760,
        4290743753678124926,
        9164754117279683406,
        -107668053986278786,
        64887291506465003,
        6241282934480161521,
        5150183507841894143,
        5645797256444299552,
        -908235285856554578,
        -1785405279637408062,
        5343233714768265848,
        4936964276934412722,
        2294903531026336836, // + \xca..\xd7
    ];
    for (n, expected) in expected_high.iter().enumerate() {
        let mut key = prefix2.clone();
        key.extend(0xcau8..0xca + n as u8);
        assert_eq!(token(&key), *expected, "key {key:02x?}");
    }

    let odd: &[u8] =
        b"\x00\x10C'R\x9f\xb6E\xdd\x00\xb8\x83\xec9\xaeD\x8b\xb8\x00\x00\x04\x00\x06jk\x00";
    assert_eq!(token(odd), -9223371632693506265);
}

#[test]
fn token_is_stable_and_never_the_ring_minimum() {
    for i in 0u32..2000 {
        let key = i.to_be_bytes();
        let t = Token::of_key(&key);
        assert_ne!(t, Token::MIN);
        assert_eq!(t, Token::of_key(&key));
    }
}
