//! Checks every worked example of `FORMAT.md` against the real serializers, snapshots and
//! comparators.
//!
//! Each example is checked twice: the bytes the code writes must equal the hex given
//! here, and that hex must appear, in backticks, in `FORMAT.md` (so the document and
//! this test cannot drift apart). Hex is lowercase, two digits per byte, one space
//! between bytes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use typeinfo_serializers::*;

const FORMAT_MD: &str = include_str!("../FORMAT.md");

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn unhex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).expect("hex byte"))
        .collect()
}

/// Asserts that `actual` is `expected` and that `expected` appears in `FORMAT.md`.
#[track_caller]
fn check(what: &str, actual: &[u8], expected: &str) {
    assert_eq!(
        hex(actual),
        expected,
        "{what}: bytes differ from the documented example"
    );
    if !expected.is_empty() {
        assert!(
            FORMAT_MD.contains(&format!("`{expected}`")),
            "{what}: `{expected}` does not appear in FORMAT.md"
        );
    }
}

/// Serializes `value`, checks the bytes, and reads them back to `value`.
#[track_caller]
fn check_value<T: PartialEq + std::fmt::Debug, S: TypeSerializer<T>>(
    what: &str,
    s: &S,
    value: &T,
    expected: &str,
) {
    let bytes = to_bytes(s, value).expect("serialize");
    check(what, &bytes, expected);
    let back = from_bytes(s, &bytes).expect("read back");
    assert_eq!(&back, value, "{what}: read back a different value");
    // `skip` ends exactly after the value.
    let mut input = DataInputView::new(&bytes);
    s.skip(&mut input).expect("skip");
    assert!(input.is_empty(), "{what}: skip did not consume the value");
}

fn snapshot_of<T, S: TypeSerializer<T>>(s: &S) -> SerializerSnapshot {
    s.snapshot()
}

/// The envelope of a snapshot, without the standalone header.
fn envelope(snapshot: &SerializerSnapshot) -> Vec<u8> {
    let mut out = DataOutputView::new();
    snapshot.write_to(&mut out).expect("shallow snapshot");
    out.into_inner()
}

/// Checks the envelope of a snapshot and that it reads back.
#[track_caller]
fn check_envelope(what: &str, snapshot: &SerializerSnapshot, expected: &str) {
    let bytes = envelope(snapshot);
    check(what, &bytes, expected);
    let back =
        SerializerSnapshot::read_from(&mut DataInputView::new(&bytes)).expect("read envelope");
    assert_eq!(&back, snapshot);
}

fn key<T, C: TypeComparator<T>>(c: &C, value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    c.write_normalized_key(value, &mut out);
    out
}

fn varint(v: u64) -> Vec<u8> {
    let mut out = DataOutputView::new();
    out.write_varint(v);
    out.into_inner()
}

fn zigzag(v: i64) -> Vec<u8> {
    let mut out = DataOutputView::new();
    out.write_varint_signed(v);
    out.into_inner()
}

// ---------------------------------------------------------------------------------------
// 1. Conventions
// ---------------------------------------------------------------------------------------

#[test]
fn varints() {
    check("varint 0", &varint(0), "00");
    check("varint 127", &varint(127), "7f");
    check("varint 128", &varint(128), "80 01");
    check("varint 300", &varint(300), "ac 02");
    check("varint 16384", &varint(16384), "80 80 01");
    check(
        "varint u64::MAX",
        &varint(u64::MAX),
        "ff ff ff ff ff ff ff ff ff 01",
    );

    for (bytes, value) in [
        ("00", 0u64),
        ("7f", 127),
        ("80 01", 128),
        ("ac 02", 300),
        ("ff ff ff ff ff ff ff ff ff 01", u64::MAX),
    ] {
        let data = unhex(bytes);
        let mut input = DataInputView::new(&data);
        assert_eq!(input.read_varint().unwrap(), value);
        assert!(input.is_empty());
    }
    // The tenth byte may only be 0x00 or 0x01.
    let ten_02 = unhex("ff ff ff ff ff ff ff ff ff 02");
    assert!(FORMAT_MD.contains("`ff ff ff ff ff ff ff ff ff 02`"));
    assert_eq!(
        DataInputView::new(&ten_02).read_varint(),
        Err(Error::VarintOverflow)
    );
    let eleven = unhex("ff ff ff ff ff ff ff ff ff 81 00");
    assert!(FORMAT_MD.contains("`ff ff ff ff ff ff ff ff ff 81 00`"));
    assert_eq!(
        DataInputView::new(&eleven).read_varint(),
        Err(Error::VarintOverflow)
    );
    // A truncated varint is an end-of-input error.
    assert!(matches!(
        DataInputView::new(&unhex("80")).read_varint(),
        Err(Error::UnexpectedEof { .. })
    ));
    // Non-minimal encodings are refused on read (writers never produce them): one value,
    // one encoding.
    for overlong in ["80 00", "ac 82 00"] {
        assert_eq!(
            DataInputView::new(&unhex(overlong)).read_varint(),
            Err(Error::NonCanonicalVarint)
        );
        assert!(FORMAT_MD.contains(&format!("`{overlong}`")));
    }
}

#[test]
fn zigzag_varints() {
    check("zigzag 0", &zigzag(0), "00");
    check("zigzag -1", &zigzag(-1), "01");
    check("zigzag 1", &zigzag(1), "02");
    check("zigzag -2", &zigzag(-2), "03");
    check("zigzag 2", &zigzag(2), "04");
    check("zigzag -64", &zigzag(-64), "7f");
    check("zigzag 64", &zigzag(64), "80 01");
    check(
        "zigzag i64::MIN",
        &zigzag(i64::MIN),
        "ff ff ff ff ff ff ff ff ff 01",
    );
    for v in [0i64, -1, 1, -64, 64, i64::MIN, i64::MAX] {
        assert_eq!(
            DataInputView::new(&zigzag(v)).read_varint_signed().unwrap(),
            v
        );
    }
}

#[test]
fn length_guard() {
    // A `Vec<u32>` announcing 3 elements with only 8 bytes left is refused before reading.
    let data = unhex("03 01 00 00 00 02 00 00 00");
    assert!(FORMAT_MD.contains("`03 01 00 00 00 02 00 00 00`"));
    assert_eq!(
        from_bytes(&VecSerializer::new(U32Serializer), &data),
        Err(Error::LengthTooLarge {
            len: 3,
            remaining: 8
        })
    );
    // Zero-sized elements: at most 2^18 per read.
    assert_eq!(MAX_ZERO_SIZED_ITEMS, 1 << 18);
    assert!(FORMAT_MD.contains("`MAX_ZERO_SIZED_ITEMS` = 2^18 = 262 144 units"));
    let ok = varint(1 << 18);
    assert_eq!(
        from_bytes(&VecSerializer::new(UnitSerializer), &ok)
            .unwrap()
            .len(),
        1 << 18
    );
    let too_many = varint((1 << 18) + 1);
    assert!(matches!(
        from_bytes(&VecSerializer::new(UnitSerializer), &too_many),
        Err(Error::LengthTooLarge { .. })
    ));
}

#[test]
fn trailing_bytes_are_refused_by_from_bytes() {
    assert!(from_bytes(&U8Serializer, &[1, 2]).is_err());
}

// ---------------------------------------------------------------------------------------
// 2. Value layouts
// ---------------------------------------------------------------------------------------

#[test]
fn primitives() {
    check_value("bool false", &BoolSerializer, &false, "00");
    check_value("bool true", &BoolSerializer, &true, "01");
    check_value("char €", &CharSerializer, &'€', "ac 20 00 00");
    check_value("u8 200", &U8Serializer, &200u8, "c8");
    check_value("u16", &U16Serializer, &0x1234u16, "34 12");
    check_value("u32", &U32Serializer, &0x1234_5678u32, "78 56 34 12");
    check_value(
        "u64",
        &U64Serializer,
        &0x0102_0304_0506_0708u64,
        "08 07 06 05 04 03 02 01",
    );
    check_value(
        "u128",
        &U128Serializer,
        &1u128,
        "01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
    );
    check_value("i8 -2", &I8Serializer, &-2i8, "fe");
    check_value("i16 -2", &I16Serializer, &-2i16, "fe ff");
    check_value("i32 -2", &I32Serializer, &-2i32, "fe ff ff ff");
    check_value("i64 -2", &I64Serializer, &-2i64, "fe ff ff ff ff ff ff ff");
    check_value(
        "i128 -2",
        &I128Serializer,
        &-2i128,
        "fe ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff",
    );
    check_value("f32 1.5", &F32Serializer, &1.5f32, "00 00 c0 3f");
    check_value(
        "f64 -2.5",
        &F64Serializer,
        &-2.5f64,
        "00 00 00 00 00 00 04 c0",
    );
    check_value("unit", &UnitSerializer, &(), "");

    // NaN payloads are kept bit for bit.
    let nan = f64::from_bits(0x7ff8_0000_0000_0001);
    let bytes = to_bytes(&F64Serializer, &nan).unwrap();
    check("f64 NaN payload", &bytes, "01 00 00 00 00 00 f8 7f");
    assert_eq!(
        from_bytes(&F64Serializer, &bytes).unwrap().to_bits(),
        nan.to_bits()
    );

    // Fixed lengths.
    assert_eq!(
        TypeSerializer::<bool>::fixed_length(&BoolSerializer),
        Some(1)
    );
    assert_eq!(
        TypeSerializer::<char>::fixed_length(&CharSerializer),
        Some(4)
    );
    assert_eq!(
        TypeSerializer::<u128>::fixed_length(&U128Serializer),
        Some(16)
    );
    assert_eq!(TypeSerializer::<()>::fixed_length(&UnitSerializer), Some(0));
}

#[test]
fn primitive_rejections() {
    assert_eq!(
        from_bytes(&BoolSerializer, &unhex("02")),
        Err(Error::InvalidBool(2))
    );
    assert!(FORMAT_MD.contains("`02`"));
    // A surrogate is not a char.
    assert_eq!(
        from_bytes(&CharSerializer, &unhex("00 d8 00 00")),
        Err(Error::InvalidChar(0xd800))
    );
    assert!(FORMAT_MD.contains("`00 d8 00 00`"));
    assert_eq!(
        from_bytes(&CharSerializer, &unhex("00 00 11 00")),
        Err(Error::InvalidChar(0x110000))
    );
    assert!(FORMAT_MD.contains("`00 00 11 00`"));
    // Short input.
    assert_eq!(
        from_bytes(&U32Serializer, &unhex("01 02 03")),
        Err(Error::UnexpectedEof {
            needed: 4,
            remaining: 3
        })
    );
}

#[test]
fn strings_and_bytes() {
    check_value("String empty", &StringSerializer, &String::new(), "00");
    check_value(
        "String hé",
        &StringSerializer,
        &"hé".to_owned(),
        "03 68 c3 a9",
    );
    // Invalid UTF-8 is refused.
    assert_eq!(
        from_bytes(&StringSerializer, &unhex("01 ff")),
        Err(Error::InvalidUtf8)
    );
    assert!(FORMAT_MD.contains("`01 ff`"));

    check_value(
        "Vec<u8>",
        &VecSerializer::new(U8Serializer),
        &vec![1u8, 2, 3],
        "03 01 02 03",
    );
    check_value(
        "Bytes",
        &BytesSerializer,
        &bytes::Bytes::from_static(&[1, 2, 3]),
        "03 01 02 03",
    );
    // Same snapshot.
    assert_eq!(
        snapshot_of::<bytes::Bytes, _>(&BytesSerializer),
        snapshot_of::<Vec<u8>, _>(&VecSerializer::new(U8Serializer))
    );
}

#[test]
fn lists() {
    check_value(
        "Vec<u16>",
        &VecSerializer::new(U16Serializer),
        &vec![1u16, 256],
        "02 01 00 00 01",
    );
    check_value(
        "VecDeque<u16>",
        &VecDequeSerializer::new(U16Serializer),
        &VecDeque::from(vec![1u16, 256]),
        "02 01 00 00 01",
    );
    check_value(
        "Vec<String>",
        &VecSerializer::new(StringSerializer),
        &vec!["a".to_owned(), "bc".to_owned()],
        "02 01 61 02 62 63",
    );
    check_value(
        "Vec<u16> empty",
        &VecSerializer::new(U16Serializer),
        &Vec::<u16>::new(),
        "00",
    );
    // A VecDeque whose ring buffer wraps still writes front to back.
    let mut dq = VecDeque::with_capacity(2);
    dq.push_back(256u16);
    dq.push_front(1u16);
    check_value(
        "VecDeque<u16> wrapped",
        &VecDequeSerializer::new(U16Serializer),
        &dq,
        "02 01 00 00 01",
    );
}

#[test]
fn sets() {
    let s = BTreeSetSerializer::new(U16Serializer);
    check_value(
        "BTreeSet<u16>",
        &s,
        &BTreeSet::from([3u16, 1]),
        "02 01 00 03 00",
    );
    check_value(
        "HashSet<u8>",
        &HashSetSerializer::new(U8Serializer),
        &HashSet::from([7u8]),
        "01 07",
    );
    // Unsorted bytes are accepted into a BTreeSet.
    assert_eq!(
        from_bytes(&s, &unhex("02 03 00 01 00")).unwrap(),
        BTreeSet::from([1u16, 3])
    );
    assert!(FORMAT_MD.contains("`02 03 00 01 00`"));
    // Duplicates are refused, for both set types.
    let dup = unhex("02 01 00 01 00");
    assert!(FORMAT_MD.contains("`02 01 00 01 00`"));
    assert!(from_bytes(&s, &dup).is_err());
    assert!(from_bytes::<HashSet<u16>, _>(&HashSetSerializer::new(U16Serializer), &dup).is_err());
    // The two set serializers read each other's bytes.
    let hs: HashSet<u16> = from_bytes(
        &HashSetSerializer::new(U16Serializer),
        &unhex("02 01 00 03 00"),
    )
    .unwrap();
    assert_eq!(hs, HashSet::from([1, 3]));
}

#[test]
fn maps() {
    let m = BTreeMapSerializer::new(StringSerializer, U8Serializer);
    let hm = HashMapSerializer::new(StringSerializer, U8Serializer);
    check_value(
        "BTreeMap<String, u8>",
        &m,
        &BTreeMap::from([("b".to_owned(), 2u8), ("a".to_owned(), 1u8)]),
        "02 01 61 01 01 62 02",
    );
    check_value(
        "HashMap<String, u8>",
        &hm,
        &HashMap::from([("a".to_owned(), 1u8)]),
        "01 01 61 01",
    );
    // A repeated key is refused.
    let dup = unhex("02 01 61 01 01 61 02");
    assert!(FORMAT_MD.contains("`02 01 61 01 01 61 02`"));
    assert!(from_bytes(&m, &dup).is_err());
    assert!(from_bytes(&hm, &dup).is_err());
}

#[test]
fn arrays() {
    check_value(
        "[u16; 3]",
        &ArraySerializer::<_, 3>::new(U16Serializer),
        &[1u16, 2, 3],
        "01 00 02 00 03 00",
    );
    check_value(
        "[String; 2]",
        &ArraySerializer::<_, 2>::new(StringSerializer),
        &["a".to_owned(), String::new()],
        "01 61 00",
    );
    check_value(
        "[u8; 0]",
        &ArraySerializer::<_, 0>::new(U8Serializer),
        &[0u8; 0],
        "",
    );
}

#[test]
fn options() {
    let s = OptionSerializer::new(U16Serializer);
    check_value("Option<u16> None", &s, &None, "00");
    check_value("Option<u16> Some(5)", &s, &Some(5u16), "01 05 00");
    check_value(
        "Option<Option<u8>> Some(None)",
        &OptionSerializer::new(OptionSerializer::new(U8Serializer)),
        &Some(None),
        "01 00",
    );
    assert_eq!(
        from_bytes(&s, &unhex("02 05 00")),
        Err(Error::InvalidTag {
            what: "Option".to_owned(),
            tag: 2
        })
    );
    assert!(FORMAT_MD.contains("`02 05 00`"));
}

#[test]
fn tuples_and_pointers() {
    check_value(
        "(u8, String, bool)",
        &TupleSerializer((U8Serializer, StringSerializer, BoolSerializer)),
        &(7u8, "x".to_owned(), true),
        "07 01 78 01",
    );
    check_value(
        "(u32,)",
        &TupleSerializer((U32Serializer,)),
        &(1u32,),
        "01 00 00 00",
    );
    check_value(
        "Box<u32>",
        &BoxSerializer::new(U32Serializer),
        &Box::new(1u32),
        "01 00 00 00",
    );
    check_value(
        "Arc<String>",
        &ArcSerializer::new(StringSerializer),
        &Arc::new("a".to_owned()),
        "01 61",
    );
    assert_eq!(
        snapshot_of::<Box<u32>, _>(&BoxSerializer::new(U32Serializer)),
        snapshot_of::<u32, _>(&U32Serializer)
    );
}

#[test]
fn time() {
    check_value(
        "Duration 1.5 s",
        &DurationSerializer,
        &Duration::new(1, 500_000_000),
        "01 00 00 00 00 00 00 00 00 65 cd 1d",
    );
    check_value(
        "SystemTime +1_700_000_000 s 250 ns",
        &SystemTimeSerializer,
        &(UNIX_EPOCH + Duration::new(1_700_000_000, 250)),
        "00 f1 53 65 00 00 00 00 fa 00 00 00",
    );
    check_value(
        "SystemTime -1.5 s",
        &SystemTimeSerializer,
        &(UNIX_EPOCH - Duration::new(1, 500_000_000)),
        "fe ff ff ff ff ff ff ff 00 65 cd 1d",
    );
    check_value(
        "SystemTime -1 s",
        &SystemTimeSerializer,
        &(UNIX_EPOCH - Duration::from_secs(1)),
        "ff ff ff ff ff ff ff ff 00 00 00 00",
    );
    // Nanoseconds of 10^9 or more are refused.
    let bad = unhex("00 00 00 00 00 00 00 00 00 ca 9a 3b");
    assert!(FORMAT_MD.contains("`00 00 00 00 00 00 00 00 00 ca 9a 3b`"));
    assert!(matches!(
        from_bytes(&DurationSerializer, &bad),
        Err(Error::OutOfRange { .. })
    ));
    assert!(matches!(
        from_bytes(&SystemTimeSerializer, &bad),
        Err(Error::OutOfRange { .. })
    ));
}

#[test]
fn decimals() {
    let d = |s: &str| rust_decimal::Decimal::from_str(s).unwrap();
    let b = |s: &str| bigdecimal::BigDecimal::from_str(s).unwrap();
    check_value(
        "rust_decimal 123.45",
        &RustDecimalSerializer,
        &d("123.45"),
        "04 02 30 39",
    );
    check_value(
        "bigdecimal 123.45",
        &BigDecimalSerializer,
        &b("123.45"),
        "04 02 30 39",
    );
    check_value(
        "rust_decimal -1.5",
        &RustDecimalSerializer,
        &d("-1.5"),
        "02 01 f1",
    );
    check_value(
        "bigdecimal -1.5",
        &BigDecimalSerializer,
        &b("-1.5"),
        "02 01 f1",
    );
    check_value(
        "rust_decimal 1.28",
        &RustDecimalSerializer,
        &d("1.28"),
        "04 02 00 80",
    );
    check_value(
        "bigdecimal 1.28",
        &BigDecimalSerializer,
        &b("1.28"),
        "04 02 00 80",
    );
    check_value(
        "rust_decimal 0",
        &RustDecimalSerializer,
        &d("0"),
        "00 01 00",
    );
    check_value("bigdecimal 0", &BigDecimalSerializer, &b("0"), "00 01 00");
    // Trailing zeros are kept: 1.50 is not 1.5 in bytes.
    check_value(
        "rust_decimal 1.50",
        &RustDecimalSerializer,
        &d("1.50"),
        "04 02 00 96",
    );
    // A negative scale (bigdecimal only): 12 * 10^2.
    let twelve_hundred = bigdecimal::BigDecimal::new(num_bigint::BigInt::from(12), -2);
    check_value(
        "bigdecimal 12e2",
        &BigDecimalSerializer,
        &twelve_hundred,
        "03 01 0c",
    );
    // ... which rust_decimal cannot hold.
    assert!(matches!(
        from_bytes(&RustDecimalSerializer, &unhex("03 01 0c")),
        Err(Error::OutOfRange { .. })
    ));
    // An empty unscaled value is refused by both.
    assert!(FORMAT_MD.contains("`00 00`"));
    assert!(from_bytes(&RustDecimalSerializer, &unhex("00 00")).is_err());
    assert!(from_bytes(&BigDecimalSerializer, &unhex("00 00")).is_err());
    // Same snapshot.
    assert_eq!(
        snapshot_of::<rust_decimal::Decimal, _>(&RustDecimalSerializer),
        snapshot_of::<bigdecimal::BigDecimal, _>(&BigDecimalSerializer)
    );
}

// ---------------------------------------------------------------------------------------
// Struct, enum and serde layouts (through the serializers restored from their snapshots).
// ---------------------------------------------------------------------------------------

fn names_payload(name: &str, names: &[&str]) -> Vec<u8> {
    let mut out = DataOutputView::new();
    out.write_len_prefixed(name.as_bytes());
    payload::write_names(&mut out, names.iter().copied());
    out.into_inner()
}

fn point_snapshot() -> SerializerSnapshot {
    SerializerSnapshot::new(kinds::STRUCT, 1)
        .with_payload(names_payload("Point", &["x", "y"]))
        .with_nested(vec![
            snapshot_of::<i32, _>(&I32Serializer),
            snapshot_of::<i32, _>(&I32Serializer),
        ])
}

fn shape_snapshot() -> SerializerSnapshot {
    let empty = SerializerSnapshot::new(kinds::STRUCT, 1).with_payload(names_payload("Empty", &[]));
    let circle = SerializerSnapshot::new(kinds::STRUCT, 1)
        .with_payload(names_payload("Circle", &["r"]))
        .with_nested(vec![snapshot_of::<u32, _>(&U32Serializer)]);
    SerializerSnapshot::new(kinds::ENUM, 1)
        .with_payload(names_payload("Shape", &["Empty", "Circle"]))
        .with_nested(vec![empty, circle])
}

fn blob_snapshot() -> SerializerSnapshot {
    let mut p = DataOutputView::new();
    p.write_len_prefixed(b"app::Blob");
    SerializerSnapshot::new(kinds::SERDE, 1).with_payload(p.into_inner())
}

#[test]
fn struct_layout() {
    let restored = SnapshotRegistry::default()
        .restore(&point_snapshot())
        .unwrap();
    let point = Value::Struct {
        name: "Point".into(),
        fields: vec![("x".into(), Value::I32(1)), ("y".into(), Value::I32(-1))],
    };
    check_value(
        "struct Point { x: 1, y: -1 }",
        &restored,
        &point,
        "01 00 00 00 ff ff ff ff",
    );
    assert_eq!(restored.fixed_length(), Some(8));
}

#[test]
fn enum_layout() {
    let restored = SnapshotRegistry::default()
        .restore(&shape_snapshot())
        .unwrap();
    let empty = Value::Enum {
        name: "Shape".into(),
        index: 0,
        variant: "Empty".into(),
        fields: vec![],
    };
    let circle = Value::Enum {
        name: "Shape".into(),
        index: 1,
        variant: "Circle".into(),
        fields: vec![("r".into(), Value::U32(10))],
    };
    check_value("Shape::Empty", &restored, &empty, "00");
    check_value(
        "Shape::Circle { r: 10 }",
        &restored,
        &circle,
        "01 0a 00 00 00",
    );
    assert_eq!(
        from_bytes(&restored, &unhex("02")),
        Err(Error::InvalidTag {
            what: "Shape".to_owned(),
            tag: 2
        })
    );
}

#[test]
fn serde_layout() {
    let restored = SnapshotRegistry::default()
        .restore(&blob_snapshot())
        .unwrap();
    // postcard of `Blob { a: 300u32, b: true }` is `ac 02 01` (varint u32, bool byte).
    check_value(
        "serde Blob",
        &restored,
        &Value::Opaque(vec![0xac, 0x02, 0x01]),
        "03 ac 02 01",
    );
}

// ---------------------------------------------------------------------------------------
// 3. Snapshots
// ---------------------------------------------------------------------------------------

#[test]
fn snapshot_standalone_vec_i64() {
    let s = snapshot_of::<Vec<i64>, _>(&VecSerializer::new(I64Serializer));
    let bytes = s.to_bytes().unwrap();
    check(
        "snapshot of Vec<i64>",
        &bytes,
        "54 49 53 53 01 04 6c 69 73 74 01 00 01 03 69 36 34 01 00 00",
    );
    assert_eq!(SerializerSnapshot::from_bytes(&bytes).unwrap(), s);
    assert_eq!(SNAPSHOT_MAGIC, *b"TISS");
    assert_eq!(SNAPSHOT_FORMAT_VERSION, 1);
    assert_eq!(s.type_name(), "Vec<i64>");

    // Wrong magic, unknown envelope version, trailing bytes.
    let mut bad = bytes.clone();
    bad[0] = b'X';
    assert!(SerializerSnapshot::from_bytes(&bad).is_err());
    let mut bad = bytes.clone();
    bad[4] = 2;
    assert!(SerializerSnapshot::from_bytes(&bad).is_err());
    let mut bad = bytes.clone();
    bad.push(0);
    assert!(SerializerSnapshot::from_bytes(&bad).is_err());
}

#[test]
fn snapshot_envelopes() {
    check_envelope(
        "bool",
        &snapshot_of::<bool, _>(&BoolSerializer),
        "04 62 6f 6f 6c 01 00 00",
    );
    check_envelope(
        "unit",
        &snapshot_of::<(), _>(&UnitSerializer),
        "04 75 6e 69 74 01 00 00",
    );
    check_envelope(
        "u32 (also Box<u32>)",
        &snapshot_of::<Box<u32>, _>(&BoxSerializer::new(U32Serializer)),
        "03 75 33 32 01 00 00",
    );
    check_envelope(
        "string",
        &snapshot_of::<String, _>(&StringSerializer),
        "06 73 74 72 69 6e 67 01 00 00",
    );
    check_envelope(
        "Bytes = list<u8>",
        &snapshot_of::<bytes::Bytes, _>(&BytesSerializer),
        "04 6c 69 73 74 01 00 01 02 75 38 01 00 00",
    );
    check_envelope(
        "set<u16>",
        &snapshot_of::<BTreeSet<u16>, _>(&BTreeSetSerializer::new(U16Serializer)),
        "03 73 65 74 01 00 01 03 75 31 36 01 00 00",
    );
    check_envelope(
        "map<string, u64>",
        &snapshot_of::<BTreeMap<String, u64>, _>(&BTreeMapSerializer::new(
            StringSerializer,
            U64Serializer,
        )),
        "03 6d 61 70 01 00 02 06 73 74 72 69 6e 67 01 00 00 03 75 36 34 01 00 00",
    );
    check_envelope(
        "array [u16; 3]",
        &snapshot_of::<[u16; 3], _>(&ArraySerializer::<_, 3>::new(U16Serializer)),
        "05 61 72 72 61 79 01 01 03 01 03 75 31 36 01 00 00",
    );
    check_envelope(
        "array [u8; 300]",
        &snapshot_of::<[u8; 300], _>(&ArraySerializer::<_, 300>::new(U8Serializer)),
        "05 61 72 72 61 79 01 02 ac 02 01 02 75 38 01 00 00",
    );
    check_envelope(
        "option<string>",
        &snapshot_of::<Option<String>, _>(&OptionSerializer::new(StringSerializer)),
        "06 6f 70 74 69 6f 6e 01 00 01 06 73 74 72 69 6e 67 01 00 00",
    );
    check_envelope(
        "tuple (u8, bool)",
        &snapshot_of::<(u8, bool), _>(&TupleSerializer((U8Serializer, BoolSerializer))),
        "05 74 75 70 6c 65 01 00 02 02 75 38 01 00 00 04 62 6f 6f 6c 01 00 00",
    );
    check_envelope(
        "duration",
        &snapshot_of::<Duration, _>(&DurationSerializer),
        "08 64 75 72 61 74 69 6f 6e 01 00 00",
    );
    check_envelope(
        "system_time",
        &snapshot_of::<std::time::SystemTime, _>(&SystemTimeSerializer),
        "0b 73 79 73 74 65 6d 5f 74 69 6d 65 01 00 00",
    );
    check_envelope(
        "decimal",
        &snapshot_of::<rust_decimal::Decimal, _>(&RustDecimalSerializer),
        "07 64 65 63 69 6d 61 6c 01 00 00",
    );
    check_envelope(
        "struct Point",
        &point_snapshot(),
        "06 73 74 72 75 63 74 01 0b 05 50 6f 69 6e 74 02 01 78 01 79 02 03 69 33 32 01 00 00 03 69 33 32 01 00 00",
    );
    check_envelope(
        "enum Shape",
        &shape_snapshot(),
        "04 65 6e 75 6d 01 14 05 53 68 61 70 65 02 05 45 6d 70 74 79 06 43 69 72 63 6c 65 02 \
         06 73 74 72 75 63 74 01 07 05 45 6d 70 74 79 00 00 \
         06 73 74 72 75 63 74 01 0a 06 43 69 72 63 6c 65 01 01 72 01 03 75 33 32 01 00 00",
    );
    check_envelope(
        "serde app::Blob",
        &blob_snapshot(),
        "05 73 65 72 64 65 01 0a 09 61 70 70 3a 3a 42 6c 6f 62 00",
    );

    // Every kind id of the built-in layouts.
    let all = [
        kinds::BOOL,
        kinds::CHAR,
        kinds::U8,
        kinds::U16,
        kinds::U32,
        kinds::U64,
        kinds::U128,
        kinds::I8,
        kinds::I16,
        kinds::I32,
        kinds::I64,
        kinds::I128,
        kinds::F32,
        kinds::F64,
        kinds::UNIT,
        kinds::STRING,
        kinds::LIST,
        kinds::SET,
        kinds::MAP,
        kinds::ARRAY,
        kinds::OPTION,
        kinds::TUPLE,
        kinds::DURATION,
        kinds::SYSTEM_TIME,
        kinds::DECIMAL,
        kinds::STRUCT,
        kinds::ENUM,
        kinds::SERDE,
    ];
    for kind in all {
        assert!(
            FORMAT_MD.contains(&format!("`{kind}`")),
            "kind `{kind}` is not documented"
        );
    }

    // Readable type names.
    assert_eq!(point_snapshot().type_name(), "Point");
    assert_eq!(shape_snapshot().type_name(), "Shape");
    assert_eq!(blob_snapshot().type_name(), "app::Blob");
    assert_eq!(
        snapshot_of::<[u16; 3], _>(&ArraySerializer::<_, 3>::new(U16Serializer)).type_name(),
        "[u16; 3]"
    );
    assert_eq!(
        snapshot_of::<(u32,), _>(&TupleSerializer((U32Serializer,))).type_name(),
        "(u32,)"
    );
}

#[test]
fn snapshot_reading_rules() {
    // An empty kind id is refused.
    assert!(SerializerSnapshot::read_from(&mut DataInputView::new(&unhex("00 01 00 00"))).is_err());
    assert!(FORMAT_MD.contains("`00 01 00 00`"));
    // Version 0 and versions newer than the reader are refused when restoring.
    let v0 = SerializerSnapshot::new(kinds::U8, 0);
    assert!(matches!(
        SnapshotRegistry::default().restore(&v0),
        Err(Error::UnsupportedSnapshotVersion { .. })
    ));
    let v2 = SerializerSnapshot::new(kinds::U8, 2);
    assert!(matches!(
        SnapshotRegistry::default().restore(&v2),
        Err(Error::UnsupportedSnapshotVersion { .. })
    ));
    // Unknown kinds are refused when restoring, not when reading the envelope.
    let custom = SerializerSnapshot::new("my_layout", 3);
    let bytes = custom.to_bytes().unwrap();
    assert_eq!(SerializerSnapshot::from_bytes(&bytes).unwrap(), custom);
    assert!(matches!(
        SnapshotRegistry::default().restore(&custom),
        Err(Error::UnknownSnapshotKind(_))
    ));
    // Nesting: 64 levels below the root are read, 65 are refused.
    let nest = |levels: usize| {
        let mut s = SerializerSnapshot::new(kinds::U8, 1);
        for _ in 0..levels {
            s = SerializerSnapshot::new(kinds::OPTION, 1).with_nested(vec![s]);
        }
        s
    };
    assert_eq!(MAX_SNAPSHOT_DEPTH, 64);
    assert!(SerializerSnapshot::from_bytes(&nest(64).to_bytes().unwrap()).is_ok());
    // 65 levels are refused when written (they would not read back) and when read
    // (`restored_reader_limits.rs` writes such bytes by hand).
    assert!(nest(65).to_bytes().is_err());
}

// ---------------------------------------------------------------------------------------
// 4. Normalized keys
// ---------------------------------------------------------------------------------------

#[test]
fn normalized_keys_of_primitives() {
    check("key u16", &key(&U16Comparator, &0x1234u16), "12 34");
    check(
        "key u64 1",
        &key(&U64Comparator, &1u64),
        "00 00 00 00 00 00 00 01",
    );
    check("key i8 -2", &key(&I8Comparator, &-2i8), "7e");
    check("key i32 -2", &key(&I32Comparator, &-2i32), "7f ff ff fe");
    check("key i32 5", &key(&I32Comparator, &5i32), "80 00 00 05");
    check(
        "key i128 -2",
        &key(&I128Comparator, &-2i128),
        "7f ff ff ff ff ff ff ff ff ff ff ff ff ff ff fe",
    );
    check("key f32 1.5", &key(&F32Comparator, &1.5f32), "bf c0 00 00");
    check(
        "key f32 -1.5",
        &key(&F32Comparator, &-1.5f32),
        "40 3f ff ff",
    );
    check("key f32 0.0", &key(&F32Comparator, &0.0f32), "80 00 00 00");
    check(
        "key f32 -0.0",
        &key(&F32Comparator, &-0.0f32),
        "7f ff ff ff",
    );
    check(
        "key f64 -2.5",
        &key(&F64Comparator, &-2.5f64),
        "3f fb ff ff ff ff ff ff",
    );
    check(
        "key f64 NaN",
        &key(&F64Comparator, &f64::NAN),
        "ff f8 00 00 00 00 00 00",
    );
    check("key bool false", &key(&BoolComparator, &false), "00");
    check("key bool true", &key(&BoolComparator, &true), "01");
    check("key char €", &key(&CharComparator, &'€'), "00 00 20 ac");
    check("key unit", &key(&UnitComparator, &()), "");
    assert_eq!(
        TypeComparator::<i32>::normalized_key_len(&I32Comparator),
        Some(4)
    );
    assert_eq!(
        TypeComparator::<()>::normalized_key_len(&UnitComparator),
        Some(0)
    );
}

#[test]
fn normalized_keys_of_strings_and_bytes() {
    check(
        "key String empty",
        &key(&StringComparator, &String::new()),
        "00",
    );
    check(
        "key String hé",
        &key(&StringComparator, &"hé".to_owned()),
        "69 c4 aa 00",
    );
    check(
        "key Bytes 00 61",
        &key(&BytesComparator, &bytes::Bytes::from_static(&[0x00, 0x61])),
        "00 ff 61 00 00",
    );
    check(
        "key Bytes empty",
        &key(&BytesComparator, &bytes::Bytes::new()),
        "00 00",
    );
}

#[test]
fn normalized_keys_of_composites() {
    let opt = OptionComparator::new(U8Comparator);
    check("key Option None", &key(&opt, &None), "00");
    check("key Option Some(7)", &key(&opt, &Some(7u8)), "01 07");
    check(
        "key Vec<u8> [1, 2]",
        &key(&SeqComparator::new(U8Comparator), &vec![1u8, 2]),
        "01 01 01 02 00",
    );
    check(
        "key Vec<u8> []",
        &key(&SeqComparator::new(U8Comparator), &Vec::<u8>::new()),
        "00",
    );
    check(
        "key VecDeque<u8> [1, 2]",
        &key(
            &SeqComparator::new(U8Comparator),
            &VecDeque::from(vec![1u8, 2]),
        ),
        "01 01 01 02 00",
    );
    check(
        "key BTreeSet<u16>",
        &key(
            &SeqComparator::new(U16Comparator),
            &BTreeSet::from([3u16, 1]),
        ),
        "01 00 01 01 00 03 00",
    );
    check(
        "key BTreeMap<String, u8>",
        &key(
            &MapComparator::new(StringComparator, U8Comparator),
            &BTreeMap::from([("a".to_owned(), 1u8), ("b".to_owned(), 2u8)]),
        ),
        "01 62 00 01 01 63 00 02 00",
    );
    check(
        "key [u8; 3]",
        &key(&ArrayComparator::new(U8Comparator), &[1u8, 2, 3]),
        "01 02 03",
    );
    check(
        "key (u8, String)",
        &key(
            &TupleComparator((U8Comparator, StringComparator)),
            &(7u8, "x".to_owned()),
        ),
        "07 79 00",
    );
    check(
        "key Box<u16>",
        &key(&DerefComparator(U16Comparator), &Box::new(0x1234u16)),
        "12 34",
    );
    check(
        "key Duration 1.5 s",
        &key(&DurationComparator, &Duration::new(1, 500_000_000)),
        "00 00 00 00 00 00 00 01 1d cd 65 00",
    );
    check(
        "key SystemTime -1.5 s",
        &key(
            &SystemTimeComparator,
            &(UNIX_EPOCH - Duration::new(1, 500_000_000)),
        ),
        "7f ff ff ff ff ff ff fe 1d cd 65 00",
    );
}

#[test]
fn normalized_keys_descending_and_prefixes() {
    check(
        "key desc i32 -2",
        &key(&Descending(I32Comparator), &-2i32),
        "80 00 00 01",
    );
    check(
        "key desc String hé",
        &key(&Descending(StringComparator), &"hé".to_owned()),
        "96 3b 55 ff",
    );
    check(
        "key (u8, desc String)",
        &key(
            &TupleComparator((U8Comparator, Descending(StringComparator))),
            &(7u8, "x".to_owned()),
        ),
        "07 86 ff",
    );

    let hé = "hé".to_owned();
    let mut six = [0xaau8; 6];
    assert!(StringComparator.put_normalized_key(&hé, &mut six));
    check("6-byte prefix of hé", &six, "69 c4 aa 00 00 00");
    let mut two = [0xaau8; 2];
    assert!(!StringComparator.put_normalized_key(&hé, &mut two));
    check("2-byte prefix of hé", &two, "69 c4");
    let mut four = [0u8; 4];
    assert!(Descending(StringComparator).put_normalized_key(&"a".to_owned(), &mut four));
    check("4-byte descending prefix of a", &four, "9d ff ff ff");
}

// ---------------------------------------------------------------------------------------
// 5. Compatibility
// ---------------------------------------------------------------------------------------

fn resolve<T: 'static, S: TypeSerializer<T>>(
    new: &S,
    old: &SerializerSnapshot,
) -> Compatibility<T> {
    new.resolve(old, &SnapshotRegistry::default())
}

fn migrate<T: 'static, S: TypeSerializer<T>>(new: &S, old: &SerializerSnapshot, bytes: &str) -> T {
    match resolve(new, old) {
        Compatibility::AfterMigration(reader) => {
            let data = unhex(bytes);
            let mut input = DataInputView::new(&data);
            let v = reader.read(&mut input).expect("migrate");
            assert!(input.is_empty());
            v
        }
        other => panic!("expected a migration, got {other:?}"),
    }
}

#[test]
fn widening() {
    let snap = |k: &str| SerializerSnapshot::new(k, 1);
    // Same kind and version: as is.
    assert_eq!(
        resolve(&I32Serializer, &snap(kinds::I32)).verdict(),
        Verdict::AsIs
    );
    // Every listed widening migrates; the documented example.
    assert_eq!(
        migrate(&I64Serializer, &snap(kinds::I32), "fe ff ff ff"),
        -2i64
    );
    assert_eq!(migrate(&I16Serializer, &snap(kinds::U8), "c8"), 200i16);
    assert_eq!(
        migrate(&F64Serializer, &snap(kinds::F32), "00 00 c0 3f"),
        1.5f64
    );

    // The full widening table, as documented.
    let ints = [
        kinds::U8,
        kinds::U16,
        kinds::U32,
        kinds::U64,
        kinds::U128,
        kinds::I8,
        kinds::I16,
        kinds::I32,
        kinds::I64,
        kinds::I128,
    ];
    fn verdicts<T: 'static, S: TypeSerializer<T>>(s: &S, olds: &[&str]) -> Vec<Verdict> {
        olds.iter()
            .map(|k| resolve(s, &SerializerSnapshot::new(*k, 1)).verdict())
            .collect()
    }
    use Verdict::{AfterMigration as M, AsIs as A, Incompatible as X};
    //                                     u8 u16 u32 u64 u128 i8 i16 i32 i64 i128
    assert_eq!(
        verdicts(&U8Serializer, &ints),
        [A, X, X, X, X, X, X, X, X, X]
    );
    assert_eq!(
        verdicts(&U16Serializer, &ints),
        [M, A, X, X, X, X, X, X, X, X]
    );
    assert_eq!(
        verdicts(&U32Serializer, &ints),
        [M, M, A, X, X, X, X, X, X, X]
    );
    assert_eq!(
        verdicts(&U64Serializer, &ints),
        [M, M, M, A, X, X, X, X, X, X]
    );
    assert_eq!(
        verdicts(&U128Serializer, &ints),
        [M, M, M, M, A, X, X, X, X, X]
    );
    assert_eq!(
        verdicts(&I8Serializer, &ints),
        [X, X, X, X, X, A, X, X, X, X]
    );
    assert_eq!(
        verdicts(&I16Serializer, &ints),
        [M, X, X, X, X, M, A, X, X, X]
    );
    assert_eq!(
        verdicts(&I32Serializer, &ints),
        [M, M, X, X, X, M, M, A, X, X]
    );
    assert_eq!(
        verdicts(&I64Serializer, &ints),
        [M, M, M, X, X, M, M, M, A, X]
    );
    assert_eq!(
        verdicts(&I128Serializer, &ints),
        [M, M, M, M, X, M, M, M, M, A]
    );
    assert_eq!(
        verdicts(&F64Serializer, &[kinds::F32, kinds::F64, kinds::I32]),
        [M, A, X]
    );
    assert_eq!(
        verdicts(&F32Serializer, &[kinds::F32, kinds::F64, kinds::I16]),
        [A, X, X]
    );
    assert_eq!(verdicts(&BoolSerializer, &[kinds::BOOL, kinds::U8]), [A, X]);
    assert_eq!(
        verdicts(&CharSerializer, &[kinds::CHAR, kinds::U32]),
        [A, X]
    );
    assert_eq!(
        verdicts(&StringSerializer, &[kinds::STRING, kinds::CHAR]),
        [A, X]
    );
    // A version other than 1 neither matches nor widens.
    assert_eq!(
        resolve(&I64Serializer, &SerializerSnapshot::new(kinds::I64, 2)).verdict(),
        Verdict::Incompatible
    );
    assert_eq!(
        resolve(&I64Serializer, &SerializerSnapshot::new(kinds::I32, 2)).verdict(),
        Verdict::Incompatible
    );

    // The incompatibility names both types.
    let inc = resolve(&I32Serializer, &snap(kinds::I64));
    assert_eq!(inc.incompatibility().unwrap().to_string(), "i64 -> i32");
}

#[test]
fn option_and_composites() {
    let snap = |k: &str| SerializerSnapshot::new(k, 1);
    // T -> Option<T>: old values read as Some.
    assert_eq!(
        migrate(&OptionSerializer::new(U8Serializer), &snap(kinds::U8), "07"),
        Some(7u8)
    );
    // ... combined with widening.
    assert_eq!(
        migrate(
            &OptionSerializer::new(I64Serializer),
            &snap(kinds::I32),
            "fe ff ff ff"
        ),
        Some(-2i64)
    );
    // Option<T> -> Option<wider T> reads the tag, then widens.
    let old_opt_i32 = snapshot_of::<Option<i32>, _>(&OptionSerializer::new(I32Serializer));
    assert_eq!(
        migrate(
            &OptionSerializer::new(I64Serializer),
            &old_opt_i32,
            "01 fe ff ff ff"
        ),
        Some(-2i64)
    );
    assert_eq!(
        migrate(&OptionSerializer::new(I64Serializer), &old_opt_i32, "00"),
        None
    );
    // Not the other way round.
    let old_opt_u8 = snapshot_of::<Option<u8>, _>(&OptionSerializer::new(U8Serializer));
    assert_eq!(
        resolve(&U8Serializer, &old_opt_u8).verdict(),
        Verdict::Incompatible
    );
    assert_eq!(
        resolve(&OptionSerializer::new(I32Serializer), &snap(kinds::I64))
            .incompatibility()
            .unwrap()
            .to_string(),
        "i64 -> Option<i32>"
    );

    // Composites migrate through their parts.
    let old_vec = snapshot_of::<Vec<i32>, _>(&VecSerializer::new(I32Serializer));
    assert_eq!(
        migrate(
            &VecSerializer::new(I64Serializer),
            &old_vec,
            "02 01 00 00 00 fe ff ff ff"
        ),
        vec![1i64, -2]
    );
    let old_strings = snapshot_of::<Vec<String>, _>(&VecSerializer::new(StringSerializer));
    let vec_inc = resolve(&VecSerializer::new(I32Serializer), &old_strings);
    let inc = vec_inc.incompatibility().unwrap();
    assert_eq!((inc.old_type(), inc.new_type()), ("String", "i32"));
    assert!(inc.path().ends_with("[]"), "path {}", inc.path());
    let old_tuple =
        snapshot_of::<(i32, String), _>(&TupleSerializer((I32Serializer, StringSerializer)));
    assert_eq!(
        resolve(
            &TupleSerializer((I64Serializer, StringSerializer)),
            &old_tuple
        )
        .verdict(),
        Verdict::AfterMigration
    );
    let old_arr = snapshot_of::<[u16; 2], _>(&ArraySerializer::<_, 2>::new(U16Serializer));
    assert_eq!(
        resolve(&ArraySerializer::<_, 2>::new(U32Serializer), &old_arr).verdict(),
        Verdict::AfterMigration
    );
    assert_eq!(
        resolve(&ArraySerializer::<_, 3>::new(U16Serializer), &old_arr).verdict(),
        Verdict::Incompatible
    );
    // Bytes and Vec<u8> read each other's bytes as is.
    let bytes_snap = snapshot_of::<bytes::Bytes, _>(&BytesSerializer);
    assert_eq!(
        resolve(&VecSerializer::new(U8Serializer), &bytes_snap).verdict(),
        Verdict::AsIs
    );
    // Box/Arc are transparent.
    assert_eq!(
        migrate(
            &BoxSerializer::new(I64Serializer),
            &snap(kinds::I32),
            "fe ff ff ff"
        ),
        Box::new(-2i64)
    );
}
