//! Bytes written by Apache Flink 2.3's own serializers (tests/flink/FlinkGoldens.java,
//! committed in tests/golden/) are read into the expected Rust values and written back
//! byte for byte; skipping and copying the bytes, and every truncation, behave.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

mod common;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::str::FromStr;

use bigdecimal::BigDecimal;
use num_bigint::BigInt;
use typeinfo::{DataInputView, DataOutputView, TypeSerializer};
use typeinfo_flink_compat::*;

use common::{golden, Event, NullableOrder, Order, Side};

/// Reads every value of golden `name`, compares them with `expected` (by `eq`), writes them
/// back and compares the bytes; skips and copies them; truncated copies must fail.
fn check_by<T: Debug, S: TypeSerializer<T>>(
    name: &str,
    serializer: &S,
    expected: &[T],
    eq: impl Fn(&T, &T) -> bool,
) {
    let bytes = golden(name);
    let mut input = DataInputView::new(&bytes);
    let mut values = Vec::new();
    while !input.is_empty() {
        match serializer.deserialize(&mut input) {
            Ok(v) => values.push(v),
            Err(e) => panic!("{name}: value {} does not read: {e}", values.len()),
        }
    }
    assert_eq!(values.len(), expected.len(), "{name}: {values:?}");
    for (got, want) in values.iter().zip(expected) {
        assert!(eq(got, want), "{name}: read {got:?}, expected {want:?}");
    }
    let mut out = DataOutputView::new();
    for v in expected {
        serializer.serialize(v, &mut out).expect("serialize");
    }
    assert_eq!(
        out.as_slice(),
        &bytes[..],
        "{name}: written back differently"
    );

    let (mut input, mut copied) = (DataInputView::new(&bytes), DataOutputView::new());
    for _ in expected {
        serializer
            .copy_serialized(&mut input, &mut copied)
            .expect("copy_serialized");
    }
    assert!(input.is_empty(), "{name}: skip left bytes");
    assert_eq!(copied.as_slice(), &bytes[..], "{name}: copy of the bytes");
    for v in &values {
        assert!(eq(&serializer.copy(v), v), "{name}: copy of {v:?}");
    }
    for cut in 0..bytes.len() {
        let mut input = DataInputView::new(&bytes[..cut]);
        let all =
            (0..expected.len()).try_for_each(|_| serializer.deserialize(&mut input).map(drop));
        assert!(
            all.is_err(),
            "{name}: {cut} of {} bytes read as whole",
            bytes.len()
        );
    }
}

fn check<T: Debug + PartialEq, S: TypeSerializer<T>>(name: &str, serializer: &S, expected: &[T]) {
    check_by(name, serializer, expected, |a, b| a == b);
}

fn s(v: &str) -> String {
    v.to_owned()
}

#[test]
fn primitives() {
    check("boolean", &BooleanSerializer, &[true, false]);
    check("byte", &ByteSerializer, &[0, 127, -128, -1]);
    check("short", &ShortSerializer, &[0, -2, i16::MAX, i16::MIN]);
    check("char", &CharSerializer, &['a', 'é', '中', '\u{ffff}', '\0']);
    check(
        "int",
        &IntSerializer,
        &[0, 1, -1, i32::MIN, i32::MAX, 0x1234_5678],
    );
    check(
        "long",
        &LongSerializer,
        &[0, -1, i64::MIN, i64::MAX, 1_234_567_890_123],
    );
    let bits32 = |a: &f32, b: &f32| a.to_bits() == b.to_bits();
    let floats = [0.0, -1.5, f32::NAN, f32::INFINITY, f32::from_bits(1)];
    check_by("float", &FloatSerializer, &floats, bits32);
    let bits64 = |a: &f64, b: &f64| a.to_bits() == b.to_bits();
    let doubles = [0.0, 12.5, f64::NAN, f64::NEG_INFINITY, -0.0];
    check_by("double", &DoubleSerializer, &doubles, bits64);
    check(
        "nullable_int",
        &Nullable::new(IntSerializer),
        &[Some(7), None, Some(-7)],
    );
    check(
        "nullable_long_padded",
        &Nullable::padded(LongSerializer),
        &[Some(7_i64), None],
    );
}

#[test]
fn strings() {
    let longer: String = (0..300)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let expected = [
        Some(s("")),
        Some(s("hello")),
        Some(s("ü")),
        Some(s("中文")),
        Some(s("😀")),
        Some(s("nul\0")),
        Some(longer),
        None,
    ];
    check("string", &StringSerializer, &expected);
}

#[test]
fn arrays() {
    check(
        "byte_array",
        &BytePrimitiveArraySerializer,
        &[vec![], vec![1, 2, 253]],
    );
    check(
        "boolean_array",
        &BooleanPrimitiveArraySerializer,
        &[vec![true, false, true]],
    );
    check(
        "short_array",
        &ShortPrimitiveArraySerializer,
        &[vec![1, -1, 300]],
    );
    check(
        "char_array",
        &CharPrimitiveArraySerializer,
        &[vec![u16::from(b'x'), 0x4e2d]],
    );
    check(
        "int_array",
        &IntPrimitiveArraySerializer,
        &[vec![], vec![1, -2, 3]],
    );
    check(
        "long_array",
        &LongPrimitiveArraySerializer,
        &[vec![i64::MAX, 5]],
    );
    check(
        "float_array",
        &FloatPrimitiveArraySerializer,
        &[vec![1.5, -0.0]],
    );
    check(
        "double_array",
        &DoublePrimitiveArraySerializer,
        &[vec![12.5, -1.0]],
    );
    let strings = [vec![Some(s("a")), None, Some(s("é"))], vec![]];
    check("string_array", &StringArraySerializer, &strings);
    let integers = GenericArraySerializer::new(IntSerializer);
    check("integer_array", &integers, &[vec![Some(1), None, Some(3)]]);
}

#[test]
fn lists_and_maps() {
    let strings = ListSerializer::new(StringSerializer);
    check("list_string", &strings, &[vec![s("a"), s("bc")], vec![]]);
    check(
        "list_long",
        &ListSerializer::new(LongSerializer),
        &[vec![1_i64, -1]],
    );
    let map = MapSerializer::with_null_values(StringSerializer, IntSerializer);
    let entries = vec![(s("one"), Some(1)), (s("none"), None), (s("two"), Some(2))];
    check("map_string_int", &map, &[entries, vec![]]);
}

#[test]
fn what_type_extraction_gives_lists_and_maps() {
    // NullableSerializer(ListSerializer(NullableSerializer(String))), a null list included.
    let list = Nullable::new(ListSerializer::new(Nullable::new(StringSerializer)));
    check(
        "extracted_list_string",
        &list,
        &[Some(vec![Some(s("x")), None]), None],
    );
    let bytes = golden("extracted_list_string");
    let first = typeinfo::to_bytes(
        &Vec::<Option<String>>::flink_serializer(),
        &vec![Some(s("x")), None],
    )
    .expect("serialize");
    assert_eq!(
        first,
        bytes[..bytes.len() - 1],
        "FlinkType of Vec<Option<String>>"
    );

    // NullableSerializer(MapSerializer(NullableSerializer(String), Long)).
    let map = BTreeMap::<String, Option<i64>>::flink_serializer();
    let entries = Vec::from([(s("k"), Some(9_i64)), (s("gone"), None)]);
    let in_order = NotNull(MapSerializer::from_parts(
        NotNull(StringSerializer),
        Nullable::new(LongSerializer),
    ));
    check(
        "extracted_map_string_long",
        &in_order,
        std::slice::from_ref(&entries),
    );
    let read: BTreeMap<String, Option<i64>> =
        typeinfo::from_bytes(&map, &golden("extracted_map_string_long")).expect("BTreeMap");
    assert_eq!(read, entries.into_iter().collect());
}

#[test]
fn tuples_rows_and_enums() {
    let tuple2 = TupleSerializer((StringSerializer, IntSerializer));
    check("tuple2", &tuple2, &[(s("a"), 1), (s(""), -1)]);
    check(
        "tuple3",
        &<(i64, f64, bool)>::flink_serializer(),
        &[(5, 0.25, true)],
    );
    let row = RowSerializer((StringSerializer, IntSerializer));
    let rows = [
        Row {
            kind: RowKind::Insert,
            fields: (Some(s("a")), Some(1)),
        },
        Row {
            kind: RowKind::UpdateAfter,
            fields: (None, Some(5)),
        },
        Row {
            kind: RowKind::Delete,
            fields: (Some(s("z")), None),
        },
        Row {
            kind: RowKind::UpdateBefore,
            fields: (None, None),
        },
    ];
    check("row", &row, &rows);
    let l = LongSerializer;
    let row10 = RowSerializer((l, l, l, l, l, l, l, l, l, l));
    let rows10 = [
        Row {
            kind: RowKind::Insert,
            fields: (
                Some(0),
                None,
                Some(2),
                None,
                Some(4),
                None,
                Some(6),
                None,
                Some(8),
                None,
            ),
        },
        Row {
            kind: RowKind::Delete,
            fields: (
                None,
                Some(1),
                None,
                Some(3),
                None,
                Some(5),
                None,
                Some(7),
                None,
                Some(9),
            ),
        },
    ];
    check("row10", &row10, &rows10);
    check(
        "enum",
        &Side::flink_serializer(),
        &[Side::Buy, Side::Hold, Side::Sell],
    );
}

#[test]
fn times() {
    let instants = [
        Some(Instant {
            seconds: 1_700_000_000,
            nanos: 123_456_789,
        }),
        Some(Instant {
            seconds: 0,
            nanos: 0,
        }),
        Some(Instant {
            seconds: -5,
            nanos: 1,
        }),
        None,
    ];
    check("instant", &InstantSerializer, &instants);
    let dates = [Some(Date(1_700_000_000_000)), Some(Date(-1)), None];
    check("date", &DateSerializer, &dates);
    check(
        "sql_date",
        &SqlDateSerializer,
        &[Some(SqlDate(1_700_000_000_000)), None],
    );
    check(
        "sql_time",
        &SqlTimeSerializer,
        &[Some(SqlTime(45_296_789)), None],
    );
    let timestamps = [
        Some(SqlTimestamp {
            millis: 1_700_000_000_123,
            nanos: 123_456_789,
        }),
        Some(SqlTimestamp {
            millis: -1,
            nanos: 999_000_000,
        }),
        None,
    ];
    check("sql_timestamp", &SqlTimestampSerializer, &timestamps);
    let date = |year, month, day| LocalDate { year, month, day };
    let dates = [Some(date(2024, 2, 29)), Some(date(-5, 12, 31)), None];
    check("local_date", &LocalDateSerializer, &dates);
    let time = |hour, minute, second, nano| LocalTime {
        hour,
        minute,
        second,
        nano,
    };
    let times = [
        Some(time(23, 59, 58, 999_999_999)),
        Some(time(0, 0, 0, 0)),
        None,
    ];
    check("local_time", &LocalTimeSerializer, &times);
    let date_time = LocalDateTime {
        date: date(2024, 2, 29),
        time: time(12, 30, 15, 500),
    };
    check(
        "local_date_time",
        &LocalDateTimeSerializer,
        &[Some(date_time), None],
    );
}

#[test]
fn big_numbers() {
    let int = |v: &str| Some(BigInteger(BigInt::from_str(v).expect("BigInt")));
    let integers = [
        int("0"),
        int("1"),
        int("10"),
        int("-1"),
        int("255"),
        int("-123456789012345678901234567890"),
        None,
    ];
    check("big_integer", &BigIntSerializer, &integers);
    let dec = |v: &str| Some(BigDecimal::from_str(v).expect("BigDecimal"));
    let decimals = [
        dec("0"),
        dec("1"),
        dec("10"),
        dec("12.50"),
        dec("-3.14159"),
        dec("1E+5"),
        dec("123456789012345678901234567890.123456789"),
        None,
    ];
    // Equal in value and in scale (BigDecimal's `==` ignores the scale).
    let same = |a: &Option<BigDecimal>, b: &Option<BigDecimal>| match (a, b) {
        (Some(a), Some(b)) => a.as_bigint_and_exponent() == b.as_bigint_and_exponent(),
        _ => a.is_none() && b.is_none(),
    };
    check_by("big_decimal", &BigDecSerializer, &decimals, same);
}

fn order() -> Order {
    Order {
        user_id: s("u1"),
        amount: 12.5,
    }
}

#[test]
fn the_design_documents_order_is_14_bytes() {
    let bytes = golden("pojo_order");
    assert_eq!(bytes.len(), 14);
    assert_eq!(
        bytes,
        [2, 0, 0x40, 0x29, 0, 0, 0, 0, 0, 0, 0, 3, b'u', b'1']
    );
    check("pojo_order", &Order::flink_serializer(), &[order()]);
}

#[test]
fn pojo_nulls() {
    let nullable = NullableOrder {
        user_id: None,
        amount: -1.0,
    };
    check(
        "pojo_order_nulls",
        &PojoSerializer::<NullableOrder>::new(),
        &[None, Some(nullable)],
    );
    // The same bytes into the struct whose `userId` cannot be null: an error naming it.
    let bytes = golden("pojo_order_nulls");
    let mut input = DataInputView::new(&bytes);
    let first: Option<Order> = Order::flink_serializer()
        .deserialize(&mut input)
        .expect("null");
    assert_eq!(first, None);
    let err = TypeSerializer::<Order>::deserialize(&Order::flink_serializer(), &mut input)
        .expect_err("a null userId");
    assert!(
        err.to_string()
            .contains("field `userId` of Flink POJO `FlinkGoldens$Order`"),
        "{err}"
    );
    let err = typeinfo::from_bytes::<Order, _>(&Order::flink_serializer(), &bytes[..1])
        .expect_err("a null POJO");
    assert!(err.to_string().contains("not an Option"), "{err}");
}

#[test]
fn pojo_subclasses_are_refused_by_name() {
    let bytes = golden("pojo_order_subclass");
    assert_eq!(bytes[0], typeinfo_flink_compat::pojo::IS_SUBCLASS);
    let err = typeinfo::from_bytes::<Order, _>(&Order::flink_serializer(), &bytes)
        .expect_err("a subclass");
    let text = err.to_string();
    assert!(
        text.contains("subclass `FlinkGoldens$PriorityOrder`"),
        "{text}"
    );
    assert!(text.contains("not supported"), "{text}");
    let mut tagged = vec![typeinfo_flink_compat::pojo::IS_TAGGED_SUBCLASS, 0];
    tagged.extend_from_slice(&bytes[1..]);
    let err = typeinfo::from_bytes::<Order, _>(&Order::flink_serializer(), &tagged)
        .expect_err("a registered subclass");
    assert!(
        err.to_string().contains("registered subclass with tag 0"),
        "{err}"
    );
}

#[test]
fn pojo_with_every_kind_of_field() {
    let mut attrs = BTreeMap::new();
    attrs.insert(s("clicks"), Some(12));
    attrs.insert(s("none"), None);
    let event = Event {
        user_id: Some(s("u7")),
        ts: 1_700_000_000_000,
        count: Some(3),
        tags: Some(vec![Some(s("new")), None, Some(s("vip"))]),
        attrs: Some(attrs),
        side: Some(Side::Sell),
        at: Some(Instant {
            seconds: 1_700_000_000,
            nanos: 5,
        }),
        price: Some(BigDecimal::from_str("19.99").expect("decimal")),
        created: Some(Date(1_700_000_000_000)),
        seen: Some(SqlTimestamp {
            millis: 1_700_000_000_001,
            nanos: 1_000_000,
        }),
        payload: Some(vec![1, 2, 3]),
        scores: Some(vec![10, 20]),
        order: Some(order()),
        flag: true,
        initial: 'Z',
        cache: 0,
    };
    check(
        "pojo_event",
        &Event::flink_serializer(),
        &[event, Event::default()],
    );
    assert_eq!(
        <Event as FlinkPojo>::FIELD_NAMES,
        [
            "at", "attrs", "count", "created", "flag", "initial", "order", "payload", "price",
            "scores", "seen", "side", "tags", "ts", "userId"
        ]
    );
}

#[test]
fn every_golden_file_is_checked_above() {
    let checked = [
        "boolean",
        "byte",
        "short",
        "char",
        "int",
        "long",
        "float",
        "double",
        "nullable_int",
        "nullable_long_padded",
        "string",
        "byte_array",
        "boolean_array",
        "short_array",
        "char_array",
        "int_array",
        "long_array",
        "float_array",
        "double_array",
        "string_array",
        "integer_array",
        "list_string",
        "list_long",
        "map_string_int",
        "extracted_list_string",
        "extracted_map_string_long",
        "tuple2",
        "tuple3",
        "row",
        "row10",
        "enum",
        "instant",
        "date",
        "sql_date",
        "sql_time",
        "sql_timestamp",
        "local_date",
        "local_time",
        "local_date_time",
        "big_integer",
        "big_decimal",
        "pojo_order",
        "pojo_order_nulls",
        "pojo_order_subclass",
        "pojo_event",
    ];
    let mut files: Vec<String> = std::fs::read_dir(common::golden_dir())
        .expect("golden dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".bin").map(str::to_owned))
        .filter(|n| !n.starts_with("snapshot_")) // flink_snapshots.rs
        .collect();
    files.sort();
    let mut checked: Vec<String> = checked.iter().map(|n| (*n).to_owned()).collect();
    checked.sort();
    assert_eq!(files, checked);
}
