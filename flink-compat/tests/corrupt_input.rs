//! Bytes from outside: truncated, corrupt and huge-length input gives an error (naming what
//! was wrong), never a panic and never an allocation the bytes cannot back; values Flink
//! could not read back are refused at write time.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

mod common;

use proptest::prelude::*;
use typeinfo::{from_bytes, to_bytes, DataInputView, Error, TypeSerializer};
use typeinfo_flink_compat::*;

use common::{Event, Order, Side};

/// Runs `deserialize` and `skip` of `s` over `bytes`; both must return (either way).
fn survive<T, S: TypeSerializer<T>>(s: &S, bytes: &[u8]) {
    let _ = s.deserialize(&mut DataInputView::new(bytes));
    let _ = s.skip(&mut DataInputView::new(bytes));
}

#[test]
fn huge_lengths_are_errors_before_any_allocation() {
    let max = [0x7f, 0xff, 0xff, 0xff];
    let negative = [0x80, 0, 0, 0];
    for len in [max, negative] {
        assert!(from_bytes::<Vec<u8>, _>(&BytePrimitiveArraySerializer, &len).is_err());
        assert!(from_bytes::<Vec<i64>, _>(&LongPrimitiveArraySerializer, &len).is_err());
        assert!(
            from_bytes::<Vec<String>, _>(&ListSerializer::new(StringSerializer), &len).is_err()
        );
        assert!(from_bytes::<Vec<Option<String>>, _>(&StringArraySerializer, &len).is_err());
        let map = MapSerializer::new(IntSerializer, IntSerializer);
        assert!(from_bytes::<Vec<(i32, i32)>, _>(&map, &len).is_err());
        assert!(from_bytes::<BigInteger, _>(&BigIntSerializer, &len).is_err());
    }
    let r = from_bytes::<Vec<u8>, _>(&BytePrimitiveArraySerializer, &max);
    assert!(
        matches!(
            r,
            Err(Error::LengthTooLarge {
                len: 0x7fff_ffff,
                remaining: 0
            })
        ),
        "{r:?}"
    );
    let r = from_bytes::<Vec<u8>, _>(&BytePrimitiveArraySerializer, &negative);
    assert!(matches!(r, Err(Error::OutOfRange { .. })), "{r:?}");
    // A string of 2^31 - 2 units announced in five bytes.
    let string = [0xff, 0xff, 0xff, 0xff, 0x07, b'a'];
    let r = from_bytes::<String, _>(&StringSerializer, &string);
    assert!(matches!(r, Err(Error::LengthTooLarge { .. })), "{r:?}");
    let r = from_bytes::<String, _>(&StringSerializer, &[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    assert!(matches!(r, Err(Error::OutOfRange { .. })), "{r:?}");
}

#[test]
fn corrupt_bytes_are_named_errors() {
    let r = from_bytes::<bool, _>(&BooleanSerializer, &[2]);
    assert_eq!(r, Err(Error::InvalidBool(2)));
    let r = from_bytes::<char, _>(&CharSerializer, &[0xd8, 0x00]);
    assert_eq!(r, Err(Error::InvalidChar(0xd800)));
    // A lone surrogate in a string; a character varint past 16 bits.
    let r = from_bytes::<String, _>(&StringSerializer, &[2, 0x80, 0xb0, 0x03]);
    assert!(r.is_err_and(|e| e.to_string().contains("surrogate")));
    let r = from_bytes::<String, _>(&StringSerializer, &[2, 0xff, 0xff, 0x7f]);
    assert!(r.is_err_and(|e| e.to_string().contains("UTF-16 unit")));
    let r = from_bytes::<Side, _>(&Side::flink_serializer(), &[0, 0, 0, 7]);
    assert!(r.is_err_and(|e| e.to_string() == "invalid tag 7 for enum FlinkGoldens$Side"));
    for flags in [0, 3, 0x10] {
        let r = from_bytes::<Order, _>(&Order::flink_serializer(), &[flags]);
        assert!(matches!(r, Err(Error::InvalidTag { .. })), "{flags}: {r:?}");
    }
    let r = from_bytes::<LocalDate, _>(&LocalDateSerializer, &[0, 0, 7, 0xe8, 2, 30]);
    assert!(r.is_err_and(|e| e.to_string().contains("is not a date")));
    let r = from_bytes::<Instant, _>(
        &InstantSerializer,
        &[0, 0, 0, 0, 0, 0, 0, 0, 0x3b, 0x9a, 0xca, 0],
    );
    assert!(r.is_err_and(|e| e.to_string().contains("1000000000 nanoseconds")));
    let r = from_bytes::<BigInteger, _>(&BigIntSerializer, &[0, 0, 0, 4]);
    assert!(r.is_err());
    // A null where the Rust type has none.
    let r = from_bytes::<String, _>(&StringSerializer, &[0]);
    assert!(r.is_err_and(|e| e.to_string().contains("not an Option")));
    let r = from_bytes::<i32, _>(&NotNull(IntSerializer), &[1]);
    assert!(r.is_err_and(|e| e.to_string().contains("not an Option")));
    let r = from_bytes::<Vec<(i32, i32)>, _>(
        &MapSerializer::new(IntSerializer, IntSerializer),
        &[0, 0, 0, 1, 0, 0, 0, 5, 1],
    );
    assert!(r.is_err());
    let twice = [
        0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 2,
    ];
    let map = MapSerializer::new(IntSerializer, IntSerializer);
    let r = from_bytes::<std::collections::BTreeMap<i32, i32>, _>(&map, &twice);
    assert!(r.is_err_and(|e| e.to_string().contains("same key twice")));
}

#[test]
fn values_flink_could_not_read_back_are_refused_at_write_time() {
    assert!(to_bytes(&CharSerializer, &'😀')
        .is_err_and(|e| e.to_string().contains("Basic Multilingual Plane")));
    assert!(to_bytes(&SqlDateSerializer, &SqlDate(i64::MIN)).is_err());
    assert!(to_bytes(
        &InstantSerializer,
        &Instant {
            seconds: 0,
            nanos: -1
        }
    )
    .is_err());
    let bad_date = LocalDate {
        year: 2023,
        month: 2,
        day: 29,
    };
    assert!(to_bytes(&LocalDateSerializer, &bad_date).is_err());
    let bad_time = LocalTime {
        hour: 24,
        minute: 0,
        second: 0,
        nano: 0,
    };
    assert!(to_bytes(&LocalTimeSerializer, &bad_time).is_err());
    let d = bigdecimal::BigDecimal::new(1.into(), i64::from(i32::MAX) + 1);
    assert!(to_bytes(&BigDecSerializer, &d).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Random bytes never panic any reader.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        survive::<String, _>(&StringSerializer, &bytes);
        survive::<Vec<Option<String>>, _>(&StringArraySerializer, &bytes);
        survive::<Vec<u8>, _>(&BytePrimitiveArraySerializer, &bytes);
        survive::<Vec<Option<i32>>, _>(&GenericArraySerializer::new(IntSerializer), &bytes);
        survive::<Vec<Vec<Option<String>>>, _>(&Vec::<Vec<Option<String>>>::flink_serializer(), &bytes);
        survive::<Vec<(String, Option<i64>)>, _>(&MapSerializer::with_null_values(StringSerializer, LongSerializer), &bytes);
        survive::<Row<(Option<String>, Option<i32>)>, _>(&RowSerializer((StringSerializer, IntSerializer)), &bytes);
        survive::<Option<LocalDateTime>, _>(&LocalDateTimeSerializer, &bytes);
        survive::<Option<SqlTimestamp>, _>(&SqlTimestampSerializer, &bytes);
        survive::<Option<BigInteger>, _>(&BigIntSerializer, &bytes);
        survive::<Option<bigdecimal::BigDecimal>, _>(&BigDecSerializer, &bytes);
        survive::<Option<Order>, _>(&PojoSerializer::<Order>::new(), &bytes);
        survive::<Event, _>(&Event::flink_serializer(), &bytes);
        survive::<Side, _>(&Side::flink_serializer(), &bytes);
    }

    /// Flipping any byte of a real Flink value gives a value or an error, never a panic.
    #[test]
    fn flipped_golden_bytes_never_panic(at in any::<prop::sample::Index>(), xor in 1..=255_u8) {
        let mut bytes = common::golden("pojo_event");
        let i = at.index(bytes.len());
        bytes[i] ^= xor;
        survive::<Event, _>(&Event::flink_serializer(), &bytes);
    }
}
