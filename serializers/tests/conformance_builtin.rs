//! Every built-in serializer through the conformance harness, with hand-picked edge values
//! and, where the type has one, its comparator.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use typeinfo_serializers::testing::{Conformance, ConformanceError};
use typeinfo_serializers::*;

type R = Result<(), ConformanceError>;

#[test]
fn integers() -> R {
    Conformance::new(U8Serializer, vec![0u8, 1, 127, 128, 255])
        .key_type()
        .comparator(U8Comparator)
        .order(Ord::cmp)
        .run()?;
    Conformance::new(U16Serializer, vec![0u16, 1, 255, 256, u16::MAX])
        .key_type()
        .comparator(U16Comparator)
        .order(Ord::cmp)
        .run()?;
    Conformance::new(U32Serializer, vec![0u32, 7, 1 << 31, u32::MAX])
        .key_type()
        .comparator(U32Comparator)
        .order(Ord::cmp)
        .run()?;
    Conformance::new(U64Serializer, vec![0u64, 42, 1 << 40, u64::MAX])
        .key_type()
        .comparator(U64Comparator)
        .order(Ord::cmp)
        .run()?;
    Conformance::new(
        U128Serializer,
        vec![0u128, 1, u64::MAX as u128 + 1, u128::MAX],
    )
    .key_type()
    .comparator(U128Comparator)
    .order(Ord::cmp)
    .run()?;
    Conformance::new(I8Serializer, vec![i8::MIN, -1, 0, 1, i8::MAX])
        .key_type()
        .comparator(I8Comparator)
        .order(Ord::cmp)
        .run()?;
    Conformance::new(I16Serializer, vec![i16::MIN, -300, 0, 300, i16::MAX])
        .key_type()
        .comparator(I16Comparator)
        .order(Ord::cmp)
        .run()?;
    Conformance::new(I32Serializer, vec![i32::MIN, -1, 0, 1, i32::MAX])
        .key_type()
        .comparator(I32Comparator)
        .order(Ord::cmp)
        .run()?;
    Conformance::new(I64Serializer, vec![i64::MIN, -1, 0, 1, i64::MAX])
        .key_type()
        .comparator(I64Comparator)
        .order(Ord::cmp)
        .run()?;
    Conformance::new(I128Serializer, vec![i128::MIN, -1, 0, 1, i128::MAX])
        .key_type()
        .comparator(I128Comparator)
        .order(Ord::cmp)
        .run()
}

#[test]
fn floats_compare_by_total_order() -> R {
    let bits_eq32 = |a: &f32, b: &f32| a.to_bits() == b.to_bits();
    let bits_eq64 = |a: &f64, b: &f64| a.to_bits() == b.to_bits();
    Conformance::with_eq(
        F32Serializer,
        vec![
            f32::NEG_INFINITY,
            -1.5,
            -0.0,
            0.0,
            f32::MIN_POSITIVE,
            3.25,
            f32::INFINITY,
            f32::NAN,
        ],
        bits_eq32,
    )
    .comparator(F32Comparator)
    .order(f32::total_cmp)
    .run()?;
    Conformance::with_eq(
        F64Serializer,
        vec![
            f64::NEG_INFINITY,
            -1e300,
            -0.0,
            0.0,
            1e-300,
            f64::INFINITY,
            -f64::NAN,
        ],
        bits_eq64,
    )
    .comparator(F64Comparator)
    .order(f64::total_cmp)
    .run()
}

#[test]
fn bool_char_unit() -> R {
    Conformance::new(BoolSerializer, vec![false, true])
        .key_type()
        .comparator(BoolComparator)
        .order(Ord::cmp)
        .run()?;
    Conformance::new(
        CharSerializer,
        vec!['\0', 'a', 'é', '\u{ffff}', '\u{10ffff}'],
    )
    .key_type()
    .comparator(CharComparator)
    .order(Ord::cmp)
    .run()?;
    Conformance::new(UnitSerializer, vec![(), ()])
        .key_type()
        .comparator(UnitComparator)
        .order(Ord::cmp)
        .run()
}

fn strings() -> Vec<String> {
    vec![
        String::new(),
        "\0".into(),
        "a".into(),
        "a\0".into(),
        "ab".into(),
        "é".into(),
        "z".repeat(200),
        "日本".into(),
    ]
}

#[test]
fn string_and_bytes() -> R {
    Conformance::new(StringSerializer, strings())
        .key_type()
        .comparator(StringComparator)
        .order(Ord::cmp)
        .run()?;
    Conformance::new(StringSerializer, strings())
        .key_type()
        .comparator(Descending(StringComparator))
        .order(|a, b| b.cmp(a))
        .run()?;
    let raw: Vec<bytes::Bytes> = vec![
        vec![],
        vec![0],
        vec![0, 0],
        vec![0, 1],
        vec![1],
        vec![255; 300],
    ]
    .into_iter()
    .map(bytes::Bytes::from)
    .collect();
    Conformance::new(BytesSerializer, raw)
        .key_type()
        .comparator(BytesComparator)
        .order(Ord::cmp)
        .run()?;
    let vecs: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0, 0], vec![1, 2, 3], vec![9; 200]];
    Conformance::new(VecSerializer::new(U8Serializer), vecs)
        .key_type()
        .comparator(SeqComparator::new(U8Comparator))
        .order(Ord::cmp)
        .run()
}

#[test]
fn sequences() -> R {
    let u64s = vec![
        vec![],
        vec![0u64],
        vec![1, 2, 3],
        (0..100).map(|i| i * 1_000_000_007).collect(),
    ];
    Conformance::new(VecSerializer::new(U64Serializer), u64s)
        .key_type()
        .comparator(SeqComparator::new(U64Comparator))
        .order(Ord::cmp)
        .run()?;
    let f32s = vec![vec![], vec![1.5f32, -2.0], vec![0.0; 17]];
    Conformance::new(VecSerializer::new(F32Serializer), f32s).run()?;
    let nested = vec![
        vec![],
        vec![vec![]],
        vec![vec!["a".to_owned()], vec![]],
        vec![vec!["a".to_owned(), "b".to_owned()]],
    ];
    Conformance::new(
        VecSerializer::new(VecSerializer::new(StringSerializer)),
        nested,
    )
    .key_type()
    .comparator(SeqComparator::new(SeqComparator::new(StringComparator)))
    .order(Ord::cmp)
    .run()?;
    let deques: Vec<VecDeque<i32>> = vec![VecDeque::new(), VecDeque::from(vec![1, -1]), {
        let mut d = VecDeque::with_capacity(4);
        d.push_back(2);
        d.push_front(1);
        d
    }];
    Conformance::new(VecDequeSerializer::new(I32Serializer), deques)
        .key_type()
        .comparator(SeqComparator::new(I32Comparator))
        .order(Ord::cmp)
        .run()?;
    let units = vec![vec![], vec![(); 3]];
    Conformance::new(VecSerializer::new(UnitSerializer), units)
        .key_type()
        .run()
}

#[test]
fn arrays() -> R {
    Conformance::new(
        ArraySerializer::<_, 3>::new(F32Serializer),
        vec![[0.0f32; 3], [1.0, -2.0, 3.5]],
    )
    .run()?;
    Conformance::new(
        ArraySerializer::<_, 2>::new(StringSerializer),
        vec![[String::new(), "x".into()], ["a".into(), String::new()]],
    )
    .key_type()
    .comparator(ArrayComparator::new(StringComparator))
    .order(Ord::cmp)
    .run()?;
    Conformance::new(ArraySerializer::<_, 0>::new(U64Serializer), vec![[], []])
        .key_type()
        .run()
}

#[test]
fn options_and_pointers() -> R {
    Conformance::new(
        OptionSerializer::new(I64Serializer),
        vec![None, Some(-1), Some(0), Some(i64::MAX)],
    )
    .key_type()
    .comparator(OptionComparator::new(I64Comparator))
    .order(Ord::cmp)
    .run()?;
    Conformance::new(
        OptionSerializer::new(OptionSerializer::new(StringSerializer)),
        vec![None, Some(None), Some(Some("a".to_owned()))],
    )
    .key_type()
    .comparator(OptionComparator::new(OptionComparator::new(
        StringComparator,
    )))
    .order(Ord::cmp)
    .run()?;
    Conformance::new(
        BoxSerializer::new(I32Serializer),
        vec![Box::new(1), Box::new(-5)],
    )
    .key_type()
    .comparator(DerefComparator(I32Comparator))
    .order(Ord::cmp)
    .run()?;
    Conformance::new(
        ArcSerializer::new(StringSerializer),
        vec![Arc::new("shared".to_owned()), Arc::new(String::new())],
    )
    .key_type()
    .comparator(DerefComparator(StringComparator))
    .order(Ord::cmp)
    .run()
}

#[test]
fn tuples() -> R {
    Conformance::new(TupleSerializer((I32Serializer,)), vec![(1,), (-1,)])
        .key_type()
        .comparator(TupleComparator((I32Comparator,)))
        .order(Ord::cmp)
        .run()?;
    Conformance::new(
        TupleSerializer((StringSerializer, U64Serializer)),
        vec![("a".into(), 2), ("a".into(), 1), (String::new(), 9)],
    )
    .key_type()
    .comparator(TupleComparator((StringComparator, U64Comparator)))
    .order(Ord::cmp)
    .run()?;
    let s12 = TupleSerializer((
        U8Serializer,
        U16Serializer,
        U32Serializer,
        U64Serializer,
        I8Serializer,
        I16Serializer,
        I32Serializer,
        I64Serializer,
        BoolSerializer,
        CharSerializer,
        StringSerializer,
        UnitSerializer,
    ));
    let c12 = TupleComparator((
        U8Comparator,
        U16Comparator,
        U32Comparator,
        U64Comparator,
        I8Comparator,
        I16Comparator,
        I32Comparator,
        I64Comparator,
        BoolComparator,
        CharComparator,
        StringComparator,
        UnitComparator,
    ));
    Conformance::new(
        s12,
        vec![
            (
                1,
                2,
                3,
                4,
                -5,
                -6,
                -7,
                -8,
                true,
                'x',
                "twelve".to_owned(),
                (),
            ),
            (0, 0, 0, 0, 0, 0, 0, 0, false, 'a', String::new(), ()),
        ],
    )
    .key_type()
    .comparator(c12)
    .order(Ord::cmp)
    .run()
}

#[test]
fn maps_and_sets() -> R {
    let btree: Vec<BTreeMap<String, i32>> = vec![
        BTreeMap::new(),
        [("a".to_owned(), 1)].into(),
        [("a".to_owned(), 1), ("b".to_owned(), -2)].into(),
        [("b".to_owned(), 0)].into(),
    ];
    Conformance::new(
        BTreeMapSerializer::new(StringSerializer, I32Serializer),
        btree,
    )
    .key_type()
    .comparator(MapComparator::new(StringComparator, I32Comparator))
    .order(Ord::cmp)
    .run()?;
    let hash: Vec<HashMap<u32, String>> = vec![
        HashMap::new(),
        [(1, "one".to_owned())].into(),
        [(1, "x".to_owned()), (2, "y".to_owned()), (3, String::new())].into(),
    ];
    Conformance::new(
        HashMapSerializer::new(U32Serializer, StringSerializer),
        hash,
    )
    .run()?;
    let bset: Vec<BTreeSet<i64>> = vec![BTreeSet::new(), [1].into(), [1, 2].into(), [3, -1].into()];
    Conformance::new(BTreeSetSerializer::new(I64Serializer), bset)
        .key_type()
        .comparator(SeqComparator::new(I64Comparator))
        .order(Ord::cmp)
        .run()?;
    let hset: Vec<HashSet<String>> = vec![
        HashSet::new(),
        ["a".to_owned(), "b".to_owned(), "c".to_owned()].into(),
    ];
    Conformance::new(HashSetSerializer::new(StringSerializer), hset).run()
}

#[test]
fn time() -> R {
    let durations = vec![
        Duration::ZERO,
        Duration::new(1, 5),
        Duration::new(u64::MAX, 999_999_999),
    ];
    Conformance::new(DurationSerializer, durations)
        .key_type()
        .comparator(DurationComparator)
        .order(Ord::cmp)
        .run()?;
    let times = vec![
        UNIX_EPOCH,
        UNIX_EPOCH + Duration::new(1_700_000_000, 123),
        UNIX_EPOCH - Duration::new(86_400, 0),
        UNIX_EPOCH - Duration::new(1, 1),
    ];
    Conformance::new(SystemTimeSerializer, times)
        .key_type()
        .comparator(SystemTimeComparator)
        .order(Ord::cmp)
        .run()
}

#[test]
fn decimals() -> R {
    use std::str::FromStr;
    let rd: Vec<rust_decimal::Decimal> = [
        "0",
        "-1",
        "123.4500",
        "-79228162514264337593543950335",
        "0.0000000000000000000000000001",
    ]
    .iter()
    .map(|s| rust_decimal::Decimal::from_str(s).expect("valid decimal literal"))
    .collect();
    Conformance::new(RustDecimalSerializer, rd).run()?;
    let bd: Vec<bigdecimal::BigDecimal> = [
        "0",
        "-1",
        "123.4500",
        "-340282366920938463463374607431768211457.5",
        "1e-40",
    ]
    .iter()
    .map(|s| bigdecimal::BigDecimal::from_str(s).expect("valid decimal literal"))
    .collect();
    Conformance::new(BigDecimalSerializer, bd).run()
}

#[test]
fn varints() -> R {
    Conformance::new(VarU16Serializer, vec![0u16, 127, 128, 300, u16::MAX])
        .key_type()
        .run()?;
    Conformance::new(VarU32Serializer, vec![0u32, 127, 128, 1 << 21, u32::MAX])
        .key_type()
        .run()?;
    Conformance::new(VarU64Serializer, vec![0u64, 127, 128, 1 << 35, u64::MAX])
        .key_type()
        .run()?;
    Conformance::new(
        VarI16Serializer,
        vec![0i16, -64, 63, -65, 64, i16::MIN, i16::MAX],
    )
    .key_type()
    .run()?;
    Conformance::new(VarI32Serializer, vec![0i32, -1, 1, i32::MIN, i32::MAX])
        .key_type()
        .run()?;
    Conformance::new(VarI64Serializer, vec![0i64, -1, 1, i64::MIN, i64::MAX])
        .key_type()
        .run()
}
