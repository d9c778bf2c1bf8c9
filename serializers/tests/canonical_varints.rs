//! Varints are read in their shortest form only: a value has one encoding, so equal values
//! have equal bytes. Before, `80 00` read as 0, and the type-free map and set readers,
//! which find a repeated key by its bytes, accepted a key written twice (once with an
//! overlong length) and built a value that could not be written back.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use typeinfo_serializers::*;

fn varint(v: u64) -> Vec<u8> {
    let mut out = DataOutputView::new();
    out.write_varint(v);
    out.into_inner()
}

/// `v` written in `extra` more bytes than it needs: continuation bits set, zero groups.
fn overlong(v: u64, extra: usize) -> Vec<u8> {
    let mut bytes = varint(v);
    let last = bytes.len() - 1;
    bytes[last] |= 0x80;
    bytes.extend(std::iter::repeat_n(0x80, extra - 1));
    bytes.push(0);
    bytes
}

fn read(bytes: &[u8]) -> Result<u64> {
    DataInputView::new(bytes).read_varint()
}

#[test]
fn overlong_varints_are_refused_at_every_length() {
    assert_eq!(read(&[0x80, 0x00]), Err(Error::NonCanonicalVarint));
    assert_eq!(read(&[0xff, 0x80, 0x00]), Err(Error::NonCanonicalVarint));
    for extra in 1..=9 {
        // Each length, with and without bytes after it (fast and slow paths).
        let bytes = overlong(1, extra);
        if bytes.len() <= 10 {
            assert_eq!(read(&bytes), Err(Error::NonCanonicalVarint), "{bytes:02x?}");
            let mut padded = bytes.clone();
            padded.extend_from_slice(&[0; 12]);
            assert_eq!(
                read(&padded),
                Err(Error::NonCanonicalVarint),
                "{padded:02x?}"
            );
        }
    }
    // The shortest forms still read, and so does the 10-byte form of a value above 2^63.
    assert_eq!(read(&[0x00]), Ok(0));
    assert_eq!(read(&[0x80, 0x01]), Ok(128));
    assert_eq!(read(&varint(u64::MAX)), Ok(u64::MAX));
    assert_eq!(
        Error::NonCanonicalVarint.to_string(),
        "variable-length integer is not in its shortest form"
    );
}

#[test]
fn a_key_repeated_with_an_overlong_length_is_refused_by_both_readers() {
    // A map of two entries whose keys are both "": once as `00`, once as `80 00`.
    let typed = BTreeMapSerializer::new(StringSerializer, U8Serializer);
    let bytes = [0x02, 0x00, 0x07, 0x80, 0x00, 0x08];
    let read: Result<BTreeMap<String, u8>> = from_bytes(&typed, &bytes);
    assert_eq!(read, Err(Error::NonCanonicalVarint));
    let snapshot = TypeSerializer::<BTreeMap<String, u8>>::snapshot(&typed);
    let restored = SnapshotRegistry::default().restore(&snapshot).unwrap();
    assert_eq!(
        from_bytes(&restored, &bytes),
        Err(Error::NonCanonicalVarint)
    );
    assert!(matches!(
        restored.skip(&mut DataInputView::new(&bytes)),
        Err(Error::NonCanonicalVarint)
    ));

    // The same for a set of strings.
    let typed = BTreeSetSerializer::new(StringSerializer);
    let bytes = [0x02, 0x00, 0x80, 0x00];
    let read: Result<BTreeSet<String>> = from_bytes(&typed, &bytes);
    assert_eq!(read, Err(Error::NonCanonicalVarint));
    let snapshot = TypeSerializer::<BTreeSet<String>>::snapshot(&typed);
    let restored = SnapshotRegistry::default().restore(&snapshot).unwrap();
    assert_eq!(
        from_bytes(&restored, &bytes),
        Err(Error::NonCanonicalVarint)
    );
}

#[test]
fn overlong_lengths_tags_and_varint_numbers_are_refused() {
    let overlong_len = [0x81, 0x00, 0x07];
    assert_eq!(
        from_bytes(&VecSerializer::new(U8Serializer), &overlong_len),
        Err(Error::NonCanonicalVarint)
    );
    assert_eq!(
        from_bytes(&VarU32Serializer, &[0x85, 0x80, 0x00]),
        Err(Error::NonCanonicalVarint)
    );
    assert_eq!(
        from_bytes(&VarI64Serializer, &[0x82, 0x00]),
        Err(Error::NonCanonicalVarint)
    );
}

proptest! {
    #[test]
    fn every_value_has_exactly_one_encoding(v in any::<u64>(), extra in 1usize..9) {
        let bytes = varint(v);
        prop_assert_eq!(read(&bytes), Ok(v));
        let long = overlong(v, extra);
        if long.len() <= 10 {
            prop_assert_eq!(read(&long), Err(Error::NonCanonicalVarint));
        } else {
            prop_assert!(read(&long).is_err());
        }
    }
}
