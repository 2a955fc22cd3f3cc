//! `Mutation::encode`/`decode`: every generated mutation survives the round
//! trip unchanged, with `encoded_len` exact; arbitrary bytes and damaged
//! encodings decode to an error or a canonical mutation, never a panic;
//! `decode_shared` (the zero-copy decode) agrees with `decode` on all of it.

use mutation::testing::arb_mutation;
use mutation::{Error, Mutation};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn encode_then_decode_is_identity(m in arb_mutation()) {
        let bytes = m.encode();
        prop_assert_eq!(bytes.len(), m.encoded_len());
        prop_assert_eq!(Mutation::decode(&bytes).unwrap(), m);
    }

    #[test]
    fn decode_shared_agrees_with_decode(
        m in arb_mutation(),
        at in any::<prop::sample::Index>(),
        xor in 0u8..=255,
    ) {
        let mut bytes = m.encode();
        let i = at.index(bytes.len());
        bytes[i] ^= xor;
        let shared = bytes::Bytes::from(bytes.clone());
        match (Mutation::decode(&bytes), Mutation::decode_shared(&shared)) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            (a, b) => prop_assert!(false, "decode {:?} but decode_shared {:?}", a, b),
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        match Mutation::decode(&bytes) {
            Ok(m) => prop_assert_eq!(Mutation::decode(&m.encode()).unwrap(), m),
            Err(e) => prop_assert!(matches!(e, Error::Decode { .. }), "{}", e),
        }
    }

    #[test]
    fn damaged_encodings_never_panic(
        m in arb_mutation(),
        at in any::<prop::sample::Index>(),
        xor in 1u8..=255,
        cut in any::<prop::sample::Index>(),
    ) {
        let original = m.encode();
        // A strict prefix of a valid encoding is never valid: the decoder
        // needs exactly the bytes the full decode consumed.
        let n = cut.index(original.len());
        prop_assert!(Mutation::decode(&original[..n]).is_err());
        let mut bytes = original;
        let i = at.index(bytes.len());
        bytes[i] ^= xor;
        if let Ok(back) = Mutation::decode(&bytes) {
            prop_assert_eq!(Mutation::decode(&back.encode()).unwrap(), back);
        }
    }
}
