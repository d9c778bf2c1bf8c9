//! Property tests for every built-in serializer: arbitrary values pass the conformance
//! harness (round trip, copy, byte-level copy, skip, truncation, snapshot, threads, equal
//! keys give equal bytes, comparator and normalized-key order), and arbitrary bytes never
//! make a reader panic.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::collection::{btree_map, btree_set, hash_map, hash_set, vec, vec_deque};
use proptest::prelude::*;
use typeinfo_serializers::testing::Conformance;
use typeinfo_serializers::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 48,
        ..ProptestConfig::default()
    }
}

/// Runs the harness and turns a broken rule into a proptest failure.
macro_rules! conforms {
    ($harness:expr) => {
        if let Err(e) = $harness.run() {
            return Err(TestCaseError::fail(e.to_string()));
        }
    };
}

/// A key type with its comparator: full harness including key bytes and `Ord`.
macro_rules! key_case {
    ($name:ident, $strategy:expr, $ser:expr, $cmp:expr) => {
        proptest! {
            #![proptest_config(config())]
            #[test]
            fn $name(values in vec($strategy, 1..8)) {
                conforms!(Conformance::new($ser, values).key_type().comparator($cmp).order(Ord::cmp));
            }
        }
    };
}

/// A type that is not a key type: round trips and the rest, no key-byte check.
macro_rules! value_case {
    ($name:ident, $strategy:expr, $ser:expr) => {
        proptest! {
            #![proptest_config(config())]
            #[test]
            fn $name(values in vec($strategy, 1..8)) {
                conforms!(Conformance::new($ser, values));
            }
        }
    };
}

key_case!(bool_values, any::<bool>(), BoolSerializer, BoolComparator);
key_case!(char_values, any::<char>(), CharSerializer, CharComparator);
key_case!(u8_values, any::<u8>(), U8Serializer, U8Comparator);
key_case!(u16_values, any::<u16>(), U16Serializer, U16Comparator);
key_case!(u32_values, any::<u32>(), U32Serializer, U32Comparator);
key_case!(u64_values, any::<u64>(), U64Serializer, U64Comparator);
key_case!(u128_values, any::<u128>(), U128Serializer, U128Comparator);
key_case!(i8_values, any::<i8>(), I8Serializer, I8Comparator);
key_case!(i16_values, any::<i16>(), I16Serializer, I16Comparator);
key_case!(i32_values, any::<i32>(), I32Serializer, I32Comparator);
key_case!(i64_values, any::<i64>(), I64Serializer, I64Comparator);
key_case!(i128_values, any::<i128>(), I128Serializer, I128Comparator);
key_case!(unit_values, Just(()), UnitSerializer, UnitComparator);
key_case!(string_values, ".{0,40}", StringSerializer, StringComparator);
key_case!(
    bytes_values,
    vec(any::<u8>(), 0..40).prop_map(bytes::Bytes::from),
    BytesSerializer,
    BytesComparator
);
key_case!(
    vec_u8_values,
    vec(any::<u8>(), 0..40),
    VecSerializer::new(U8Serializer),
    SeqComparator::new(U8Comparator)
);
key_case!(
    vec_i64_values,
    vec(any::<i64>(), 0..20),
    VecSerializer::new(I64Serializer),
    SeqComparator::new(I64Comparator)
);
key_case!(
    vec_string_values,
    vec(".{0,8}", 0..6),
    VecSerializer::new(StringSerializer),
    SeqComparator::new(StringComparator)
);
key_case!(
    deque_u16_values,
    vec_deque(any::<u16>(), 0..10),
    VecDequeSerializer::new(U16Serializer),
    SeqComparator::new(U16Comparator)
);
key_case!(
    array_i32_values,
    any::<[i32; 4]>(),
    ArraySerializer::<_, 4>::new(I32Serializer),
    ArrayComparator::new(I32Comparator)
);
key_case!(
    option_string_values,
    proptest::option::of(".{0,10}"),
    OptionSerializer::new(StringSerializer),
    OptionComparator::new(StringComparator)
);
key_case!(
    tuple_values,
    (any::<u8>(), ".{0,6}", any::<i64>()),
    TupleSerializer((U8Serializer, StringSerializer, I64Serializer)),
    TupleComparator((U8Comparator, StringComparator, I64Comparator))
);
key_case!(
    btree_map_values,
    btree_map(".{0,5}", any::<i32>(), 0..6),
    BTreeMapSerializer::new(StringSerializer, I32Serializer),
    MapComparator::new(StringComparator, I32Comparator)
);
key_case!(
    btree_set_values,
    btree_set(any::<i16>(), 0..8),
    BTreeSetSerializer::new(I16Serializer),
    SeqComparator::new(I16Comparator)
);
key_case!(
    boxed_values,
    any::<u32>().prop_map(Box::new),
    BoxSerializer::new(U32Serializer),
    DerefComparator(U32Comparator)
);
key_case!(
    duration_values,
    (any::<u64>(), 0..1_000_000_000u32).prop_map(|(s, n)| Duration::new(s, n)),
    DurationSerializer,
    DurationComparator
);
key_case!(
    system_time_values,
    system_time(),
    SystemTimeSerializer,
    SystemTimeComparator
);
key_case!(
    nested_values,
    vec(proptest::option::of((".{0,4}", any::<u64>())), 0..5),
    VecSerializer::new(OptionSerializer::new(TupleSerializer((
        StringSerializer,
        U64Serializer
    )))),
    SeqComparator::new(OptionComparator::new(TupleComparator((
        StringComparator,
        U64Comparator
    ))))
);

value_case!(
    hash_map_values,
    hash_map(any::<u16>(), ".{0,5}", 0..6),
    HashMapSerializer::new(U16Serializer, StringSerializer)
);
value_case!(
    hash_set_values,
    hash_set(".{0,5}", 0..6),
    HashSetSerializer::new(StringSerializer)
);
value_case!(
    rust_decimal_values,
    (any::<i64>(), 0..=28u32).prop_map(|(m, s)| rust_decimal::Decimal::new(m, s)),
    RustDecimalSerializer
);
value_case!(
    big_decimal_values,
    (vec(any::<u8>(), 1..40), any::<i32>())
        .prop_map(|(b, s)| { bigdecimal::BigDecimal::new(num_bigint_from(&b), s as i64) }),
    BigDecimalSerializer
);

fn num_bigint_from(bytes: &[u8]) -> bigdecimal::num_bigint::BigInt {
    bigdecimal::num_bigint::BigInt::from_signed_bytes_be(bytes)
}

fn system_time() -> impl Strategy<Value = SystemTime> {
    (any::<bool>(), 0..(1u64 << 40), 0..1_000_000_000u32).prop_map(|(before, secs, nanos)| {
        let d = Duration::new(secs, nanos);
        if before {
            UNIX_EPOCH - d
        } else {
            UNIX_EPOCH + d
        }
    })
}

proptest! {
    #![proptest_config(config())]

    /// Floats: NaN payloads and the sign of zero survive (compared by bits), and the
    /// comparator agrees with `total_cmp`.
    #[test]
    fn float_values(values in vec(any::<u64>(), 1..8)) {
        let f64s: Vec<f64> = values.iter().map(|b| f64::from_bits(*b)).collect();
        conforms!(Conformance::with_eq(F64Serializer, f64s, |a, b| a.to_bits() == b.to_bits())
            .comparator(F64Comparator).order(f64::total_cmp));
        let f32s: Vec<f32> = values.iter().map(|b| f32::from_bits(*b as u32)).collect();
        conforms!(Conformance::with_eq(F32Serializer, f32s, |a, b| a.to_bits() == b.to_bits())
            .comparator(F32Comparator).order(f32::total_cmp));
        let vecs = vec![values.iter().map(|b| f32::from_bits(*b as u32)).collect::<Vec<f32>>()];
        conforms!(Conformance::with_eq(VecSerializer::new(F32Serializer), vecs, |a, b| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
        }));
    }

    /// Arbitrary bytes: readers return errors, never panic; what they accept re-encodes
    /// to bytes that decode to the same value (decode, encode, decode).
    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..64)) {
        fn probe<T: PartialEq + std::fmt::Debug>(s: &impl TypeSerializer<T>, bytes: &[u8]) -> Result<(), TestCaseError> {
            let mut input = DataInputView::new(bytes);
            let _ = s.skip(&mut DataInputView::new(bytes));
            if let Ok(value) = s.deserialize(&mut input) {
                let again = to_bytes(s, &value).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let back = from_bytes(s, &again).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(back, value);
            }
            Ok(())
        }
        probe(&StringSerializer, &bytes)?;
        probe(&CharSerializer, &bytes)?;
        probe(&BoolSerializer, &bytes)?;
        probe(&VecSerializer::new(U64Serializer), &bytes)?;
        probe(&VecSerializer::new(StringSerializer), &bytes)?;
        probe(&OptionSerializer::new(VecSerializer::new(CharSerializer)), &bytes)?;
        probe::<BTreeMap<String, u8>>(&BTreeMapSerializer::new(StringSerializer, U8Serializer), &bytes)?;
        probe::<HashMap<u8, u8>>(&HashMapSerializer::new(U8Serializer, U8Serializer), &bytes)?;
        probe::<BTreeSet<u16>>(&BTreeSetSerializer::new(U16Serializer), &bytes)?;
        probe::<HashSet<u8>>(&HashSetSerializer::new(U8Serializer), &bytes)?;
        probe::<VecDeque<i8>>(&VecDequeSerializer::new(I8Serializer), &bytes)?;
        probe(&ArraySerializer::<_, 3>::new(StringSerializer), &bytes)?;
        probe(&TupleSerializer((BoolSerializer, StringSerializer)), &bytes)?;
        probe(&DurationSerializer, &bytes)?;
        probe(&SystemTimeSerializer, &bytes)?;
        probe(&RustDecimalSerializer, &bytes)?;
        probe(&BigDecimalSerializer, &bytes)?;
        probe(&VecSerializer::new(UnitSerializer), &bytes)?;
        // Restored serializers of every built-in layout read arbitrary bytes safely too.
        let registry = SnapshotRegistry::default();
        for snapshot in [
            TypeSerializer::<Vec<String>>::snapshot(&VecSerializer::new(StringSerializer)),
            TypeSerializer::<BTreeMap<u8, Option<char>>>::snapshot(&BTreeMapSerializer::new(U8Serializer, OptionSerializer::new(CharSerializer))),
            TypeSerializer::<SystemTime>::snapshot(&SystemTimeSerializer),
        ] {
            let restored = registry.restore(&snapshot).map_err(|e| TestCaseError::fail(e.to_string()))?;
            probe(&restored, &bytes)?;
        }
    }

    /// Arbitrary bytes as a standalone snapshot: an error or a snapshot, never a panic.
    #[test]
    fn arbitrary_snapshot_bytes_never_panic(tail in vec(any::<u8>(), 0..64)) {
        let mut bytes = b"TISS\x01".to_vec();
        bytes.extend_from_slice(&tail);
        if let Ok(snapshot) = SerializerSnapshot::from_bytes(&bytes) {
            // What was read is no deeper than the limit, so it can be written back.
            let written = snapshot.to_bytes().map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(SerializerSnapshot::from_bytes(&written), Ok(snapshot.clone()));
            let _ = SnapshotRegistry::default().restore(&snapshot);
            let _ = snapshot.type_name();
        }
    }
}
