//! Every serializer round-trips any value: the bytes read back to the value, `skip` and
//! `copy_serialized` cover exactly the value's bytes, a declared fixed length holds, equal
//! values give equal bytes, and every truncation is an error, never a panic.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

mod common;

use std::collections::BTreeMap;
use std::fmt::Debug;

use bigdecimal::BigDecimal;
use num_bigint::BigInt;
use proptest::prelude::*;
use typeinfo::{from_bytes, to_bytes, DataInputView, DataOutputView, TypeSerializer};
use typeinfo_flink_compat::*;

use common::{NullableOrder, Order, Side};

fn roundtrip_by<T: Debug, S: TypeSerializer<T>>(s: &S, v: &T, eq: impl Fn(&T, &T) -> bool) {
    let bytes = to_bytes(s, v).expect("serialize");
    let back: T = from_bytes(s, &bytes).expect("deserialize");
    assert!(eq(&back, v), "read {back:?}, wrote {v:?}");
    assert_eq!(
        to_bytes(s, &s.copy(v)).expect("copy"),
        bytes,
        "copy of {v:?}"
    );
    if let Some(len) = s.fixed_length() {
        assert_eq!(bytes.len(), len, "fixed length of {v:?}");
    }
    let mut input = DataInputView::new(&bytes);
    s.skip(&mut input).expect("skip");
    assert!(input.is_empty(), "skip of {v:?}");
    let (mut input, mut out) = (DataInputView::new(&bytes), DataOutputView::new());
    s.copy_serialized(&mut input, &mut out)
        .expect("copy_serialized");
    assert_eq!(out.as_slice(), &bytes[..]);
    // Every truncation of short values, about 64 of longer ones.
    let step = (bytes.len() / 64).max(1);
    for cut in (0..bytes.len()).step_by(step) {
        assert!(
            from_bytes::<T, S>(s, &bytes[..cut]).is_err(),
            "{cut} bytes of {v:?}"
        );
        assert!(
            s.skip(&mut DataInputView::new(&bytes[..cut])).is_err(),
            "skip of {cut} bytes"
        );
    }
}

fn roundtrip<T: Debug + PartialEq, S: TypeSerializer<T>>(s: &S, v: &T) {
    roundtrip_by(s, v, |a, b| a == b);
}

fn bmp_char() -> impl Strategy<Value = char> {
    any::<char>().prop_filter("one UTF-16 unit", |c| u32::from(*c) <= 0xffff)
}

fn instant() -> impl Strategy<Value = Instant> {
    (any::<i64>(), 0..1_000_000_000_i32).prop_map(|(seconds, nanos)| Instant { seconds, nanos })
}

fn local_date() -> impl Strategy<Value = LocalDate> {
    (-999_999_999..=999_999_999_i32, 1..=12_u8, 1..=28_u8)
        .prop_map(|(year, month, day)| LocalDate { year, month, day })
}

fn local_time() -> impl Strategy<Value = LocalTime> {
    (0..24_u8, 0..60_u8, 0..60_u8, 0..1_000_000_000_i32).prop_map(|(hour, minute, second, nano)| {
        LocalTime {
            hour,
            minute,
            second,
            nano,
        }
    })
}

fn big_int() -> impl Strategy<Value = BigInt> {
    prop_oneof![
        any::<i64>().prop_map(BigInt::from),
        proptest::collection::vec(any::<u8>(), 1..40)
            .prop_map(|b| BigInt::from_signed_bytes_be(&b)),
    ]
}

fn side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::Buy), Just(Side::Sell), Just(Side::Hold)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn primitives(b in any::<bool>(), i8v in any::<i8>(), i16v in any::<i16>(), c in bmp_char(),
                  i in any::<i32>(), l in any::<i64>(), f in any::<f32>(), d in any::<f64>()) {
        roundtrip(&BooleanSerializer, &b);
        roundtrip(&ByteSerializer, &i8v);
        roundtrip(&ShortSerializer, &i16v);
        roundtrip(&CharSerializer, &c);
        roundtrip(&IntSerializer, &i);
        roundtrip(&LongSerializer, &l);
        // Every NaN is written as Java's canonical NaN.
        roundtrip_by(&FloatSerializer, &f, |a, b| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
        roundtrip_by(&DoubleSerializer, &d, |a, b| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
        roundtrip(&Nullable::new(IntSerializer), &Some(i));
        roundtrip(&Nullable::padded(LongSerializer), &None::<i64>);
        roundtrip(&Nullable::padded(LongSerializer), &Some(l));
    }

    #[test]
    fn strings(s in any::<String>(), o in proptest::option::of(any::<String>())) {
        roundtrip(&StringSerializer, &s);
        roundtrip(&StringSerializer, &o);
        prop_assert_eq!(to_bytes(&StringSerializer, &s)?, to_bytes(&StringSerializer, &s.clone())?);
    }

    #[test]
    fn arrays(bytes in any::<Vec<u8>>(), ints in any::<Vec<i32>>(), units in any::<Vec<u16>>(),
              bools in any::<Vec<bool>>(), shorts in any::<Vec<i16>>(), longs in any::<Vec<i64>>(),
              doubles in any::<Vec<f64>>(), floats in any::<Vec<f32>>(),
              strings in any::<Vec<Option<String>>>(), objects in any::<Vec<Option<i64>>>()) {
        roundtrip(&BytePrimitiveArraySerializer, &bytes);
        roundtrip(&IntPrimitiveArraySerializer, &ints);
        roundtrip(&CharPrimitiveArraySerializer, &units);
        roundtrip(&BooleanPrimitiveArraySerializer, &bools);
        roundtrip(&ShortPrimitiveArraySerializer, &shorts);
        roundtrip(&LongPrimitiveArraySerializer, &longs);
        let bits64 = |a: &Vec<f64>, b: &Vec<f64>| a.iter().map(|v| v.to_bits()).eq(b.iter().map(|v| if v.is_nan() { f64::NAN.to_bits() } else { v.to_bits() }));
        roundtrip_by(&DoublePrimitiveArraySerializer, &doubles, bits64);
        let bits32 = |a: &Vec<f32>, b: &Vec<f32>| a.iter().map(|v| v.to_bits()).eq(b.iter().map(|v| if v.is_nan() { f32::NAN.to_bits() } else { v.to_bits() }));
        roundtrip_by(&FloatPrimitiveArraySerializer, &floats, bits32);
        roundtrip(&StringArraySerializer, &strings);
        roundtrip(&GenericArraySerializer::new(LongSerializer), &objects);
    }

    #[test]
    fn lists_and_maps(list in any::<Vec<String>>(), entries in any::<Vec<(String, Option<i32>)>>(),
                      tree in any::<BTreeMap<i64, Option<String>>>(), nested in any::<Vec<Vec<Option<i32>>>>()) {
        roundtrip(&ListSerializer::new(StringSerializer), &list);
        roundtrip(&MapSerializer::with_null_values(StringSerializer, IntSerializer), &entries);
        roundtrip(&BTreeMap::<i64, Option<String>>::flink_serializer(), &tree);
        roundtrip(&Vec::<Vec<Option<i32>>>::flink_serializer(), &nested);
        // A HashMap's bytes follow its iteration order, which differs between maps of equal
        // contents: its values round-trip, its bytes are not compared.
        let hash: std::collections::HashMap<i64, Option<String>> = tree.clone().into_iter().collect();
        let serializer = MapSerializer::with_null_values(LongSerializer, StringSerializer);
        let back: std::collections::HashMap<i64, Option<String>> =
            from_bytes(&serializer, &to_bytes(&serializer, &hash)?)?;
        prop_assert_eq!(back, hash);
    }

    #[test]
    fn tuples_and_rows(t in any::<(String, i32, bool)>(), kind in 0..4_u8,
                       fields in any::<(Option<String>, Option<i64>, Option<bool>)>(),
                       wide in any::<(Option<i32>, Option<i32>, Option<i32>, Option<i32>, Option<i32>, Option<i32>, Option<i32>, Option<i32>, Option<i32>)>()) {
        roundtrip(&<(String, i32, bool)>::flink_serializer(), &t);
        let kind = RowKind::from_byte_value(kind).expect("kind");
        let row = RowSerializer((StringSerializer, LongSerializer, BooleanSerializer));
        roundtrip(&row, &Row { kind, fields });
        let i = IntSerializer;
        roundtrip(&RowSerializer((i, i, i, i, i, i, i, i, i)), &Row { kind, fields: wide });
    }

    #[test]
    fn times(at in instant(), millis in any::<i64>().prop_filter("not null", |m| *m != i64::MIN),
             nanos in 0..1_000_000_000_i32, date in local_date(), time in local_time()) {
        roundtrip(&InstantSerializer, &at);
        roundtrip(&InstantSerializer, &Some(at));
        roundtrip(&DateSerializer, &Date(millis));
        roundtrip(&SqlDateSerializer, &Some(SqlDate(millis)));
        roundtrip(&SqlTimeSerializer, &SqlTime(millis));
        roundtrip(&SqlTimestampSerializer, &SqlTimestamp { millis, nanos });
        roundtrip(&LocalDateSerializer, &date);
        roundtrip(&LocalTimeSerializer, &Some(time));
        roundtrip(&LocalDateTimeSerializer, &LocalDateTime { date, time });
        roundtrip(&LocalDateTimeSerializer, &None::<LocalDateTime>);
    }

    #[test]
    fn big_numbers(v in big_int(), scale in any::<i32>()) {
        roundtrip(&BigIntSerializer, &BigInteger(v.clone()));
        roundtrip(&BigIntSerializer, &Some(BigInteger(v.clone())));
        let d = BigDecimal::new(v, i64::from(scale));
        roundtrip_by(&BigDecSerializer, &d, |a, b| a.as_bigint_and_exponent() == b.as_bigint_and_exponent());
    }

    #[test]
    fn pojos_and_enums(user_id in any::<String>(), amount in any::<f64>().prop_filter("not NaN", |a| !a.is_nan()),
                       maybe in proptest::option::of(any::<String>()), s in side()) {
        let order = Order { user_id, amount };
        roundtrip(&Order::flink_serializer(), &order);
        roundtrip(&PojoSerializer::<Order>::new(), &Some(order));
        roundtrip(&PojoSerializer::<Order>::new(), &None::<Order>);
        roundtrip(&NullableOrder::flink_serializer(), &NullableOrder { user_id: maybe, amount });
        roundtrip(&Side::flink_serializer(), &s);
    }
}
