//! The single list of golden cases for the built-in serializers.
//!
//! Each line is one fixture: a file stem, a type and its fixed values. The writer
//! (`src/bin/write_fixtures.rs`) writes `<name>.bin` and `<name>.snapshot` for each; the
//! test (`tests/builtin_golden.rs`) reads them back.
//!
//! Rules:
//! - a committed case never changes: not its name, type, values nor their order (its
//!   fixture pins exactly them). For new values or types, add a new line with a new name;
//! - hash collections write in random iteration order: their byte-compared values hold at
//!   most one element; larger ones are compared by decoding only (see
//!   [`Pinned::deterministic`](crate::golden::Pinned::deterministic)).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bigdecimal::BigDecimal;
use bytes::Bytes;
use rust_decimal::Decimal;

use crate::golden::{Case, GoldenCase};

/// The six varint serializers, opted into per field with `with` (they are not the
/// default layout of any type, so a struct carries them into a golden case).
#[derive(typeinfo::TypeInfo, Debug, Clone, PartialEq)]
#[typeinfo(name = "VarintFields")]
pub struct VarintFields {
    #[typeinfo(with = "typeinfo::VarU16Serializer")]
    pub u16: u16,
    #[typeinfo(with = "typeinfo::VarU32Serializer")]
    pub u32: u32,
    #[typeinfo(with = "typeinfo::VarU64Serializer")]
    pub u64: u64,
    #[typeinfo(with = "typeinfo::VarI16Serializer")]
    pub i16: i16,
    #[typeinfo(with = "typeinfo::VarI32Serializer")]
    pub i32: i32,
    #[typeinfo(with = "typeinfo::VarI64Serializer")]
    pub i64: i64,
}

impl crate::golden::Pinned for VarintFields {
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

fn varints(u: u64, i: i64) -> VarintFields {
    VarintFields {
        u16: u as u16,
        u32: u as u32,
        u64: u,
        i16: i as i16,
        i32: i as i32,
        i64: i,
    }
}

/// One line per case: `"name" => Type: [values...]`.
macro_rules! cases {
    ($($name:literal => $ty:ty : [$($value:expr),* $(,)?];)*) => {
        vec![$(
            Box::new(Case::<$ty>::new($name, stringify!($ty), vec![$($value),*])) as Box<dyn GoldenCase>
        ),*]
    };
}

fn s(v: &str) -> String {
    v.to_owned()
}

/// A string of `len` ASCII bytes (`len` picks the width of its varint length).
fn ascii(len: usize) -> String {
    (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect()
}

fn big(v: &str) -> BigDecimal {
    BigDecimal::from_str(v).expect("a valid BigDecimal literal")
}

fn after_epoch(secs: u64, nanos: u32) -> SystemTime {
    UNIX_EPOCH + Duration::new(secs, nanos)
}

fn before_epoch(secs: u64, nanos: u32) -> SystemTime {
    UNIX_EPOCH - Duration::new(secs, nanos)
}

/// Every built-in serializer's golden case, in a fixed order.
pub fn builtin_cases() -> Vec<Box<dyn GoldenCase>> {
    cases! {
        // Primitives.
        "bool" => bool: [false, true];
        "char" => char: ['\0', 'a', 'é', '€', '😀', char::MAX];
        "u8" => u8: [0, 1, 0x7f, 0x80, u8::MAX];
        "u16" => u16: [0, 1, 0x1234, 0x8000, u16::MAX];
        "u32" => u32: [0, 1, 0x1234_5678, 0x8000_0000, u32::MAX];
        "u64" => u64: [0, 1, 0x0123_4567_89ab_cdef, 1 << 63, u64::MAX];
        "u128" => u128: [0, 1, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210, 1 << 127, u128::MAX];
        "i8" => i8: [0, 1, -1, i8::MIN, i8::MAX];
        "i16" => i16: [0, 1, -1, 0x1234, i16::MIN, i16::MAX];
        "i32" => i32: [0, 1, -1, 0x1234_5678, i32::MIN, i32::MAX];
        "i64" => i64: [0, 1, -1, 0x0123_4567_89ab_cdef, i64::MIN, i64::MAX];
        "i128" => i128: [0, 1, -1, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210, i128::MIN, i128::MAX];
        "f32" => f32: [
            0.0, -0.0, 1.0, -1.5, 0.1, f32::MIN_POSITIVE, f32::from_bits(1), f32::MAX, f32::MIN,
            f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::from_bits(0xffc0_0000), f32::from_bits(0x7fc0_1234),
        ];
        "f64" => f64: [
            0.0, -0.0, 1.0, -1.5, 0.1, f64::MIN_POSITIVE, f64::from_bits(1), f64::MAX, f64::MIN,
            f64::INFINITY, f64::NEG_INFINITY, f64::NAN, f64::from_bits(0xfff8_0000_0000_0000),
            f64::from_bits(0x7ff8_0000_0000_1234),
        ];
        "unit" => (): [(), ()];

        // Strings and bytes.
        "string" => String: [
            s(""), s("a"), s("hello, world"), s("a\0b"), s("héllo wörld"), s("日本語"), s("😀 emoji"),
            ascii(127), ascii(128), ascii(200),
        ];
        "vec_u8" => Vec<u8>: [vec![], vec![0], vec![1, 2, 3, 0xff], (0..=255).collect()];
        "bytes" => Bytes: [Bytes::new(), Bytes::from_static(b"\x00\x01\xff"), Bytes::from_static(b"hello"), Bytes::from(vec![7; 130])];

        // Sequences and arrays.
        "vec_u64" => Vec<u64>: [vec![], vec![0], vec![1, u64::MAX, 42]];
        "vec_string" => Vec<String>: [vec![], vec![s("")], vec![s("a"), s("bc"), s("日本")]];
        "vecdeque_i32" => VecDeque<i32>: [VecDeque::new(), VecDeque::from([-1, 0, 1, i32::MIN, i32::MAX])];
        "array_f32_3" => [f32; 3]: [[0.0, -0.0, 1.5], [f32::INFINITY, f32::NEG_INFINITY, f32::NAN]];
        "array_string_2" => [String; 2]: [[s(""), s("")], [s("a"), s("日本語")]];

        // Options, tuples, pointers.
        "option_i64" => Option<i64>: [None, Some(0), Some(-1), Some(i64::MAX)];
        "option_string" => Option<String>: [None, Some(s("")), Some(s("x")), Some(s("日本"))];
        "tuple1" => (i32,): [(0,), (-7,)];
        "tuple2" => (String, u64): [(s(""), 0), (s("ada"), 36)];
        "tuple3" => (bool, i16, String): [(false, 0, s("")), (true, -2, s("é"))];
        "tuple12" => (u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, bool, String): [
            (0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, false, s("")),
            (1, 2, 3, 4, -5, -6, -7, -8, 9.5, -10.25, true, s("twelve")),
        ];
        "box_i32" => Box<i32>: [Box::new(0), Box::new(-5), Box::new(i32::MAX)];
        "arc_string" => Arc<String>: [Arc::new(s("")), Arc::new(s("shared"))];

        // Maps and sets. Hash collections: byte-compared values have at most one element.
        "hashmap_string_i64" => HashMap<String, i64>: [
            HashMap::new(), HashMap::from([(s("a"), 1)]), HashMap::from([(s("日本"), i64::MIN)]),
        ];
        "hashmap_string_i64_many" => HashMap<String, i64>: [
            HashMap::from([(s("a"), 1), (s("b"), -2), (s("c"), i64::MAX)]),
        ];
        "hashmap_u8_bool" => HashMap<u8, bool>: [HashMap::new(), HashMap::from([(7, true)])];
        "btreemap_string_i32" => BTreeMap<String, i32>: [
            BTreeMap::new(), BTreeMap::from([(s("a"), 1)]),
            BTreeMap::from([(s("b"), -2), (s("a"), 1), (s("日本"), i32::MAX)]),
        ];
        "hashset_u32" => HashSet<u32>: [HashSet::new(), HashSet::from([7]), HashSet::from([u32::MAX])];
        "hashset_u32_many" => HashSet<u32>: [HashSet::from([1, 2, 3, u32::MAX])];
        "btreeset_string" => BTreeSet<String>: [BTreeSet::new(), BTreeSet::from([s("c"), s("a"), s("b"), s("")])];

        // Time.
        "duration" => Duration: [
            Duration::ZERO, Duration::from_nanos(1), Duration::new(1, 500_000_000), Duration::from_secs(86_400),
            Duration::MAX,
        ];
        "system_time" => SystemTime: [
            UNIX_EPOCH, after_epoch(0, 1), after_epoch(1_700_000_000, 123_456_789), before_epoch(1, 0),
            before_epoch(0, 500_000_000), before_epoch(0, 1), before_epoch(3_155_760_000, 250_000_000),
        ];

        // Decimals.
        "rust_decimal" => Decimal: [
            Decimal::ZERO, Decimal::ONE, Decimal::NEGATIVE_ONE, Decimal::new(12_345, 2), Decimal::new(-12_345, 2),
            Decimal::new(10, 1), Decimal::new(100, 2), Decimal::new(1, 28), Decimal::new(-1, 28),
            Decimal::from_i128_with_scale(79_228_162_514_264_337_593_543_950_335, 28), Decimal::MAX, Decimal::MIN,
        ];
        "bigdecimal" => BigDecimal: [
            big("0"), big("1"), big("-1"), big("123.45"), big("-123.45"), big("1.0"), big("1.00"), big("1e5"),
            big("127"), big("128"), big("-128"), big("-129"),
            big("340282366920938463463374607431768211456"),
            big("-123456789012345678901234567890123456789012345678901234567890.123456789"),
            big("0.000000000000000000000000000000000000000000000000001"),
        ];

        // Nested.
        "vec_option_tuple_string_u64" => Vec<Option<(String, u64)>>: [
            vec![], vec![None], vec![Some((s("a"), 1)), None, Some((s(""), u64::MAX))],
        ];
        "btreemap_string_vec_f64" => BTreeMap<String, Vec<f64>>: [
            BTreeMap::new(),
            BTreeMap::from([(s("a"), vec![]), (s("b"), vec![1.0, -0.0, f64::NAN, f64::NEG_INFINITY])]),
        ];

        // Varint fields (opt-in per field).
        "varint_fields" => VarintFields: [
            varints(0, 0), varints(127, -64), varints(128, 64), varints(300, -300), varints(65_535, 32_767),
            VarintFields { u16: u16::MAX, u32: u32::MAX, u64: u64::MAX, i16: i16::MIN, i32: i32::MIN, i64: i64::MIN },
        ];
    }
}
