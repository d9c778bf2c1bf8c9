//! Enums with explicit discriminants: `#[derive(Ord)]` orders them by discriminant value,
//! not by declaration, and so must the derived comparator, its normalized keys and
//! `compare_serialized`; the bytes keep the declaration index as the tag.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::cmp::Ordering;

use proptest::prelude::*;
use typeinfo::testing::{Conformance, ConformanceError};
use typeinfo::{Comparable, DataInputView, KeyType, TypeComparator, TypeInfo};

/// Declared out of order: `Ord` gives `Low < Mid < High`.
#[derive(TypeInfo, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Priority {
    High = 10,
    Low = 1,
    Mid = 5,
}

/// Negative, implicit (`C` is `-1`, `E` is `2`) and computed discriminants, variants with
/// fields.
const BASE: i16 = 100;

#[derive(TypeInfo, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i16)]
enum Level {
    A { note: String } = 3,
    B(u8) = -2,
    C,
    D = BASE * 2,
    E(i32, bool) = 1 + 1,
}

/// A `u64` discriminant above `i64::MAX`: ordering must not go through a narrower or
/// signed type.
#[derive(TypeInfo, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u64)]
enum Wide {
    Top = u64::MAX,
    Bottom = 0,
    Middle(u8) = 1 << 63,
}

fn key<K: KeyType>() {}

fn normalized_key<T: Comparable>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    T::comparator().write_normalized_key(value, &mut out);
    out
}

/// Every pair of `values`: `compare`, normalized keys and `compare_serialized` agree with `Ord`.
fn agrees_with_ord<T: Comparable + Ord + std::fmt::Debug>(values: &[T]) -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<T>()?;
    let c = T::comparator();
    for a in values {
        for b in values {
            let want = a.cmp(b);
            assert_eq!(c.compare(a, b), want, "compare({a:?}, {b:?})");
            let (ka, kb) = (normalized_key(a), normalized_key(b));
            // Normalized keys order like the values; a key that is a prefix of the other
            // cannot happen for a complete key.
            assert_eq!(
                ka.cmp(&kb),
                want,
                "normalized keys of {a:?} ({ka:02x?}) and {b:?} ({kb:02x?})"
            );
            let (ba, bb) = (typeinfo::to_bytes(&s, a)?, typeinfo::to_bytes(&s, b)?);
            let got =
                c.compare_serialized(&mut DataInputView::new(&ba), &mut DataInputView::new(&bb))?;
            assert_eq!(got, want, "compare_serialized({a:?}, {b:?})");
        }
    }
    Ok(())
}

#[test]
fn fieldless_enum_orders_by_discriminant() -> typeinfo::Result<()> {
    key::<Priority>();
    assert!(
        Priority::Low < Priority::Mid && Priority::Mid < Priority::High,
        "the order of derive(Ord)"
    );
    agrees_with_ord(&[Priority::High, Priority::Low, Priority::Mid])?;
    let c = Priority::comparator();
    assert_eq!(
        c.compare(&Priority::High, &Priority::Low),
        Ordering::Greater
    );
    Ok(())
}

#[test]
fn the_tag_in_the_bytes_stays_the_declaration_index() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<Priority>()?;
    assert_eq!(typeinfo::to_bytes(&s, &Priority::High)?, [0]);
    assert_eq!(typeinfo::to_bytes(&s, &Priority::Low)?, [1]);
    assert_eq!(typeinfo::to_bytes(&s, &Priority::Mid)?, [2]);
    let l = typeinfo::serializer::<Level>()?;
    assert_eq!(typeinfo::to_bytes(&l, &Level::B(7))?, [1, 7]);
    assert_eq!(typeinfo::to_bytes(&l, &Level::D)?, [3]);
    Ok(())
}

#[test]
fn normalized_keys_of_variants_keep_their_length() {
    // One byte per variant tag, as for enums without discriminants.
    assert_eq!(normalized_key(&Priority::High).len(), 1);
    assert_eq!(normalized_key(&Priority::Low), [0]);
    assert_eq!(normalized_key(&Priority::Mid), [1]);
    assert_eq!(normalized_key(&Priority::High), [2]);
}

#[test]
fn an_invalid_tag_in_compare_serialized_is_an_error() {
    let c = Priority::comparator();
    let got = c.compare_serialized(&mut DataInputView::new(&[0]), &mut DataInputView::new(&[9]));
    assert!(
        matches!(got, Err(typeinfo::Error::InvalidTag { tag: 9, .. })),
        "{got:?}"
    );
}

#[test]
fn unsigned_discriminants_above_the_signed_range_order_by_value() -> typeinfo::Result<()> {
    key::<Wide>();
    agrees_with_ord(&[Wide::Top, Wide::Bottom, Wide::Middle(0), Wide::Middle(9)])
}

fn level_strategy() -> impl Strategy<Value = Level> {
    prop_oneof![
        ".{0,4}".prop_map(|note| Level::A { note }),
        any::<u8>().prop_map(Level::B),
        Just(Level::C),
        Just(Level::D),
        (any::<i32>(), any::<bool>()).prop_map(|(a, b)| Level::E(a, b)),
    ]
}

fn level_conforms(values: Vec<Level>) -> Result<(), ConformanceError> {
    let s = typeinfo::serializer::<Level>().expect("derived types have serializers");
    Conformance::new(s, values)
        .key_type()
        .comparator(Level::comparator())
        .order(Ord::cmp)
        .run()
}

#[test]
fn every_variant_of_an_enum_with_fields_orders_by_discriminant() -> typeinfo::Result<()> {
    key::<Level>();
    let all = [
        Level::A { note: "x".into() },
        Level::B(1),
        Level::C,
        Level::D,
        Level::E(-1, true),
    ];
    agrees_with_ord(&all)?;
    level_conforms(all.to_vec()).map_err(|e| typeinfo::Error::custom(e.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_levels_agree_with_ord(values in proptest::collection::vec(level_strategy(), 1..8)) {
        agrees_with_ord(&values).map_err(|e| TestCaseError::fail(e.to_string()))?;
        level_conforms(values).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}
