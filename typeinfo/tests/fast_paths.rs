//! The hidden fast paths and their `unsafe` blocks: the fixed-length write of derived
//! structs (`DataOutputView::append_with`, `write_fixed`), the in-place append of derived
//! enums (`__private::append_built`), short string copies, the varint slow path and the
//! decimal's fixed-size store. Each is checked for the same bytes as the plain path, round
//! trips, and an error (never a panic) on every truncated input.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use proptest::prelude::*;
use rust_decimal::Decimal;
use typeinfo::testing::Conformance;
use typeinfo::{DataInputView, DataOutputView, TypeInfo, TypeSerializer};

#[derive(TypeInfo, Debug, Clone, PartialEq)]
struct Inner {
    a: u16,
    flag: bool,
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
struct Fixed {
    byte: u8,
    big: i64,
    v: [f32; 3],
    c: char,
    inner: Inner,
    nested: [[u8; 2]; 2],
    unit: (),
    wide: u128,
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
enum Ev {
    Join { id: u32, name: String },
    Leave(u32),
    Tick,
    Fixed(Fixed),
}

fn fixed(seed: u64) -> Fixed {
    Fixed {
        byte: seed as u8,
        big: -(seed as i64) * 7919,
        v: [seed as f32, -1.5, f32::MAX],
        c: char::from_u32(0x41 + (seed % 26) as u32).unwrap(),
        inner: Inner {
            a: (seed * 31) as u16,
            flag: seed % 2 == 0,
        },
        nested: [[1, 2], [seed as u8, 4]],
        unit: (),
        wide: u128::MAX - u128::from(seed),
    }
}

/// The bytes of `Fixed` written field by field with the plain writers.
fn fixed_by_hand(f: &Fixed) -> Vec<u8> {
    let mut out = DataOutputView::new();
    out.write_u8(f.byte);
    out.write_i64(f.big);
    for x in f.v {
        out.write_f32(x);
    }
    out.write_u32(f.c as u32);
    out.write_u16(f.inner.a);
    out.write_bool(f.inner.flag);
    for row in f.nested {
        out.write_bytes(&row);
    }
    out.write_u128(f.wide);
    out.into_inner()
}

/// Every strict prefix of `bytes` is an error, never a panic.
fn truncations_fail<T: std::fmt::Debug, S: TypeSerializer<T>>(ser: &S, bytes: &[u8]) {
    for cut in 0..bytes.len() {
        let mut input = DataInputView::new(&bytes[..cut]);
        assert!(
            ser.deserialize(&mut input).is_err(),
            "prefix of {cut} of {} bytes was accepted",
            bytes.len()
        );
    }
}

#[test]
fn fixed_struct_writes_the_plain_layout_in_one_slot() {
    let ser = typeinfo::serializer::<Fixed>().unwrap();
    assert!(ser.writes_fixed());
    assert_eq!(ser.fixed_length(), Some(1 + 8 + 12 + 4 + 3 + 4 + 16));
    for seed in 0..20 {
        let value = fixed(seed);
        // Appended after other bytes, into a buffer that must grow, and into a reused one.
        for capacity in [0, 5, 256] {
            let mut out = DataOutputView::with_capacity(capacity);
            out.write_u8(0xEE);
            ser.serialize(&value, &mut out).unwrap();
            let mut expected = vec![0xEE];
            expected.extend(fixed_by_hand(&value));
            assert_eq!(out.as_slice(), expected.as_slice());
        }
        let bytes = typeinfo::to_bytes(&ser, &value).unwrap();
        assert_eq!(typeinfo::from_bytes(&ser, &bytes).unwrap(), value);
        truncations_fail(&ser, &bytes);
    }
    Conformance::new(ser, (0..5).map(fixed).collect())
        .run()
        .unwrap();
}

#[test]
fn write_fixed_refuses_a_short_slot_and_non_fixed_serializers() {
    let ser = typeinfo::serializer::<Fixed>().unwrap();
    let mut short = vec![0u8; ser.fixed_length().unwrap() - 1];
    assert!(ser.write_fixed(&fixed(1), &mut short).is_err());
    let mut exact = vec![0u8; ser.fixed_length().unwrap()];
    ser.write_fixed(&fixed(1), &mut exact).unwrap();
    assert_eq!(exact, fixed_by_hand(&fixed(1)));

    let strings = typeinfo::serializer::<String>().unwrap();
    assert!(!strings.writes_fixed());
    assert!(strings.write_fixed(&"x".to_owned(), &mut [0u8; 8]).is_err());
    let events = typeinfo::serializer::<Ev>().unwrap();
    assert!(!events.writes_fixed());

    let arrays = typeinfo::serializer::<[u32; 3]>().unwrap();
    assert!(arrays.writes_fixed());
    assert!(arrays.write_fixed(&[1, 2, 3], &mut [0u8; 11]).is_err());
    let mut slot = [0u8; 12];
    arrays.write_fixed(&[1, 2, 3], &mut slot).unwrap();
    assert_eq!(slot, [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]);
}

fn events(seed: u64) -> Vec<Ev> {
    (0..seed % 7)
        .map(|i| match (seed + i) % 4 {
            0 => Ev::Join {
                id: (seed * 1000 + i) as u32,
                name: "n".repeat((i * 5) as usize),
            },
            1 => Ev::Leave(u32::MAX - i as u32),
            2 => Ev::Tick,
            _ => Ev::Fixed(fixed(seed + i)),
        })
        .collect()
}

#[test]
fn vectors_of_enums_round_trip_and_refuse_truncation() {
    let ser = typeinfo::serializer::<Vec<Ev>>().unwrap();
    for seed in 0..40 {
        let value = events(seed);
        let bytes = typeinfo::to_bytes(&ser, &value).unwrap();
        assert_eq!(typeinfo::from_bytes(&ser, &bytes).unwrap(), value);
        truncations_fail(&ser, &bytes);
        // Into a reused vector with other contents; the cursor ends after the value.
        let mut reuse = events(seed + 3);
        let mut doubled = bytes.clone();
        doubled.extend_from_slice(&bytes);
        let mut input = DataInputView::new(&doubled);
        ser.deserialize_into(&mut reuse, &mut input).unwrap();
        assert_eq!(reuse, value);
        assert_eq!(input.position(), bytes.len());
    }
    // An unknown tag in the middle of the list is an error.
    let mut bytes = typeinfo::to_bytes(&ser, &vec![Ev::Tick, Ev::Tick]).unwrap();
    *bytes.last_mut().unwrap() = 9;
    assert!(typeinfo::from_bytes(&ser, &bytes).is_err());
    Conformance::new(ser, (0..6).map(events).collect())
        .run()
        .unwrap();
}

#[test]
fn strings_of_every_short_length_keep_their_layout() {
    let ser = typeinfo::serializer::<String>().unwrap();
    for len in 0..=40 {
        let s: String = (0..len)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let mut out = DataOutputView::with_capacity(1);
        out.write_u8(7);
        ser.serialize(&s, &mut out).unwrap();
        let mut expected = vec![7, len as u8];
        expected.extend_from_slice(s.as_bytes());
        assert_eq!(out.as_slice(), expected.as_slice(), "length {len}");
        assert_eq!(
            ser.deserialize(&mut DataInputView::new(&out.as_slice()[1..]))
                .unwrap(),
            s
        );
    }
}

#[test]
fn varints_of_every_width_round_trip() {
    let ser = typeinfo::VarU64Serializer;
    let mut values = vec![0, 1, 127, 128, 16_383, 16_384, u64::MAX];
    values.extend((1..64).map(|b| 1u64 << b));
    values.extend((1..64).map(|b| (1u64 << b) - 1));
    for v in values {
        let bytes = typeinfo::to_bytes(&ser, &v).unwrap();
        assert_eq!(typeinfo::from_bytes(&ser, &bytes).unwrap(), v);
        truncations_fail(&ser, &bytes);
        // With padding after the value (the eight-byte load) and without.
        let mut padded = bytes.clone();
        padded.extend_from_slice(&[0xFF; 12]);
        let mut input = DataInputView::new(&padded);
        assert_eq!(ser.deserialize(&mut input).unwrap(), v);
        assert_eq!(input.position(), bytes.len());
    }
    // Eleven continuation bytes overflow, padded or not.
    assert!(typeinfo::from_bytes(&ser, &[0xFF; 11]).is_err());
    assert!(typeinfo::from_bytes(
        &ser,
        &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02]
    )
    .is_err());
}

#[test]
fn decimals_keep_the_scale_and_shortest_twos_complement_layout() {
    let ser = typeinfo::RustDecimalSerializer;
    let mut values = vec![
        Decimal::ZERO,
        Decimal::ONE,
        Decimal::NEGATIVE_ONE,
        Decimal::MAX,
        Decimal::MIN,
    ];
    for scale in [0u32, 1, 5, 27, 28] {
        for m in [
            1i64,
            -1,
            127,
            128,
            -128,
            -129,
            255,
            65_535,
            i64::MAX,
            i64::MIN + 1,
        ] {
            values.push(Decimal::new(m, scale));
        }
    }
    for d in values {
        let mut out = DataOutputView::new();
        ser.serialize(&d, &mut out).unwrap();
        let mut expected = DataOutputView::new();
        expected.write_varint_signed(i64::from(d.scale()));
        expected.write_len_prefixed(&typeinfo::builtin::decimal::i128_to_twos_complement(
            d.mantissa(),
        ));
        assert_eq!(out.as_slice(), expected.as_slice(), "{d}");
        assert_eq!(typeinfo::from_bytes(&ser, out.as_slice()).unwrap(), d);
        truncations_fail(&ser, out.as_slice());
    }
}

fn fixed_strategy() -> impl Strategy<Value = Fixed> {
    (
        any::<u8>(),
        any::<i64>(),
        any::<[f32; 3]>(),
        any::<char>(),
        any::<u16>(),
        any::<bool>(),
        any::<[[u8; 2]; 2]>(),
        any::<u128>(),
    )
        .prop_map(|(byte, big, v, c, a, flag, nested, wide)| Fixed {
            byte,
            big,
            v,
            c,
            inner: Inner { a, flag },
            nested,
            unit: (),
            wide,
        })
}

fn event_strategy() -> impl Strategy<Value = Ev> {
    prop_oneof![
        (any::<u32>(), ".{0,20}").prop_map(|(id, name)| Ev::Join { id, name }),
        any::<u32>().prop_map(Ev::Leave),
        Just(Ev::Tick),
        fixed_strategy().prop_map(Ev::Fixed),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_fixed_structs_match_the_plain_layout(value in fixed_strategy()) {
        let ser = typeinfo::serializer::<Fixed>().unwrap();
        let bytes = typeinfo::to_bytes(&ser, &value).unwrap();
        prop_assert_eq!(&bytes, &fixed_by_hand(&value));
        let back = typeinfo::from_bytes(&ser, &bytes).unwrap();
        // Compare through the bytes: NaN floats are not equal to themselves.
        prop_assert_eq!(typeinfo::to_bytes(&ser, &back).unwrap(), bytes);
    }

    #[test]
    fn arbitrary_event_lists_round_trip(values in proptest::collection::vec(event_strategy(), 0..8)) {
        let ser = typeinfo::serializer::<Vec<Ev>>().unwrap();
        let bytes = typeinfo::to_bytes(&ser, &values).unwrap();
        let back = typeinfo::from_bytes(&ser, &bytes).unwrap();
        prop_assert_eq!(typeinfo::to_bytes(&ser, &back).unwrap(), bytes.clone());
        truncations_fail(&ser, &bytes);
    }
}

// ---------------------------------------------------------------------------------------
// The reserved writer (`DataOutputView::reserved_writer`), the in-place append of derived
// structs (`__private::append_each`), the three-byte varint read.
// ---------------------------------------------------------------------------------------

#[derive(TypeInfo, Debug, Clone, PartialEq)]
struct Player {
    #[typeinfo(with = "typeinfo::VarU32Serializer")]
    id: u32,
    pos: [f32; 3],
    #[typeinfo(with = "typeinfo::OptionSerializer<typeinfo::VarU16Serializer>")]
    health: Option<u16>,
    inventory: Vec<Inner>,
    name: String,
}

fn players(seed: u64) -> Vec<Player> {
    (0..seed % 6)
        .map(|i| Player {
            id: (seed * 7919 + i * 131) as u32,
            pos: [seed as f32, -(i as f32), 0.5],
            health: if (seed + i) % 3 == 0 {
                None
            } else {
                Some((seed * 97 + i) as u16)
            },
            inventory: (0..(seed + i) % 4)
                .map(|k| Inner {
                    a: (k * 300) as u16,
                    flag: k % 2 == 1,
                })
                .collect(),
            name: "p".repeat(((seed + i) % 20) as usize),
        })
        .collect()
}

#[test]
fn vectors_of_structs_round_trip_and_refuse_truncation() {
    let ser = typeinfo::serializer::<Vec<Player>>().unwrap();
    let fixed_ser = typeinfo::serializer::<Vec<Fixed>>().unwrap();
    for seed in 0..40 {
        let value = players(seed);
        let bytes = typeinfo::to_bytes(&ser, &value).unwrap();
        assert_eq!(typeinfo::from_bytes(&ser, &bytes).unwrap(), value);
        truncations_fail(&ser, &bytes);
        // Into a reused vector with other contents; the cursor ends after the value.
        let mut reuse = players(seed + 1);
        let mut doubled = bytes.clone();
        doubled.extend_from_slice(&bytes);
        let mut input = DataInputView::new(&doubled);
        ser.deserialize_into(&mut reuse, &mut input).unwrap();
        assert_eq!(reuse, value);
        assert_eq!(input.position(), bytes.len());

        // Fixed-length elements: each element's bytes taken at once.
        let fixed_values: Vec<Fixed> = (0..seed % 5).map(fixed).collect();
        let bytes = typeinfo::to_bytes(&fixed_ser, &fixed_values).unwrap();
        assert_eq!(
            typeinfo::from_bytes(&fixed_ser, &bytes).unwrap(),
            fixed_values
        );
        truncations_fail(&fixed_ser, &bytes);
    }
    // A corrupt element (an `Option` tag of 2) in the middle of the list is an error.
    let value = vec![
        Player {
            id: 1,
            pos: [0.0; 3],
            health: None,
            inventory: vec![],
            name: String::new(),
        },
        Player {
            id: 2,
            pos: [0.0; 3],
            health: None,
            inventory: vec![],
            name: String::new(),
        },
    ];
    let mut bytes = typeinfo::to_bytes(&ser, &value).unwrap();
    let tag_of_second = bytes.len() - 3;
    assert_eq!(bytes[tag_of_second], 0);
    bytes[tag_of_second] = 2;
    assert!(typeinfo::from_bytes(&ser, &bytes).is_err());
    Conformance::new(ser, (0..6).map(players).collect())
        .run()
        .unwrap();
}

#[test]
fn arrays_round_trip_and_refuse_truncation() {
    let ser = typeinfo::serializer::<[f32; 3]>().unwrap();
    let bytes = typeinfo::to_bytes(&ser, &[1.0, -2.5, 3.25]).unwrap();
    assert_eq!(bytes.len(), 12);
    let mut padded = bytes.clone();
    padded.push(0xAB);
    let mut input = DataInputView::new(&padded);
    assert_eq!(ser.deserialize(&mut input).unwrap(), [1.0, -2.5, 3.25]);
    assert_eq!(input.position(), 12);
    truncations_fail(&ser, &bytes);
    // Elements of no fixed length.
    let strings = typeinfo::serializer::<[String; 2]>().unwrap();
    let value = ["ab".to_owned(), String::new()];
    let bytes = typeinfo::to_bytes(&strings, &value).unwrap();
    assert_eq!(typeinfo::from_bytes(&strings, &bytes).unwrap(), value);
    truncations_fail(&strings, &bytes);
}

#[test]
fn three_byte_varints_read_inline_and_refuse_truncation() {
    for v in [16_384u64, 16_385, 1_000_000, (1 << 21) - 1, 1 << 21] {
        let mut out = DataOutputView::new();
        out.write_varint(v);
        let bytes = out.into_inner();
        for pad in [0usize, 1, 8] {
            let mut padded = bytes.clone();
            padded.extend(std::iter::repeat_n(0x80, pad));
            let mut input = DataInputView::new(&padded);
            assert_eq!(input.read_varint().unwrap(), v);
            assert_eq!(input.position(), bytes.len());
            assert_eq!(input.remaining(), pad);
        }
        for cut in 0..bytes.len() {
            assert!(DataInputView::new(&bytes[..cut]).read_varint().is_err());
        }
    }
}

/// The bytes of every `put_*` of the reserved writer, written with the plain writers.
fn reserved_by_hand(prefix: &[u8], s: &str, v: u64, d: &Decimal) -> Vec<u8> {
    let mut out = DataOutputView::new();
    out.write_bytes(prefix);
    out.write_u8(0xA5);
    out.write_u16(0x1234);
    out.write_u32(0xDEAD_BEEF);
    out.write_u64(v);
    out.write_i64(-(v as i64));
    out.write_f32(1.5);
    out.write_f64(-2.25);
    out.write_varint(v);
    out.write_varint_signed(-(v as i64));
    out.write_len_prefixed(s.as_bytes());
    out.write_bytes(s.as_bytes());
    typeinfo::RustDecimalSerializer
        .serialize(d, &mut out)
        .unwrap();
    out.into_inner()
}

fn put_all(
    w: &mut typeinfo::ReservedWriter<'_>,
    s: &str,
    v: u64,
    d: &Decimal,
) -> typeinfo::Result<()> {
    w.put_u8(0xA5)?;
    w.put_u16(0x1234)?;
    w.put_u32(0xDEAD_BEEF)?;
    w.put_u64(v)?;
    w.put_i64(-(v as i64))?;
    w.put_f32(1.5)?;
    w.put_f64(-2.25)?;
    w.put_varint(v)?;
    w.put_varint_signed(-(v as i64))?;
    w.put_len_prefixed(s.as_bytes())?;
    w.put_bytes(s.as_bytes())?;
    typeinfo::RustDecimalSerializer.put(d, w)
}

#[test]
fn reserved_writer_writes_the_plain_layout() {
    let decimals = [
        Decimal::ZERO,
        Decimal::NEGATIVE_ONE,
        Decimal::MAX,
        Decimal::MIN,
        Decimal::new(-129, 3),
        Decimal::new(65_535, 28),
    ];
    let mut at = 0;
    for len in 0..=40 {
        let s: String = (0..len)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        for v in [0u64, 127, 128, 1 << 20, u64::MAX] {
            let d = &decimals[at % decimals.len()];
            at += 1;
            // Appended after other bytes, into a buffer that must grow, and into a large one.
            for capacity in [0, 3, 512] {
                let mut out = DataOutputView::with_capacity(capacity);
                out.write_bytes(b"xyz");
                let max = 1 + 2 + 4 + 8 + 8 + 4 + 8 + 10 + 10 + 10 + 2 * s.len() + 18;
                let mut w = out.reserved_writer(max);
                put_all(&mut w, &s, v, d).unwrap();
                w.finish();
                assert_eq!(
                    out.as_slice(),
                    reserved_by_hand(b"xyz", &s, v, d).as_slice(),
                    "{len} {v} {d}"
                );
            }
        }
    }
}

#[test]
fn reserved_writer_refuses_writes_past_its_room() {
    let s = "symbol";
    for d in [Decimal::ZERO, Decimal::MAX, Decimal::new(-129, 3)] {
        for v in [0u64, 300, u64::MAX] {
            let full = reserved_by_hand(b"", s, v, &d);
            // Every room short of the whole: an error, never a panic, and nothing appended
            // without `finish`; what fitted is appended with it, a prefix of the layout.
            for room in 0..full.len() {
                let mut out = DataOutputView::with_capacity(4096);
                out.write_u8(9);
                let mut w = out.reserved_writer(room);
                assert!(put_all(&mut w, s, v, &d).is_err(), "room {room}");
                assert!(w.remaining() <= room);
                // Dropped without `finish`: nothing may be appended.
                #[allow(clippy::drop_non_drop)]
                drop(w);
                assert_eq!(out.as_slice(), &[9]);

                let mut w = out.reserved_writer(room);
                let _ = put_all(&mut w, s, v, &d);
                w.finish();
                assert_eq!(out.as_slice()[0], 9);
                let written = &out.as_slice()[1..];
                assert!(written.len() <= room);
                assert_eq!(written, &full[..written.len()]);
            }
            let mut out = DataOutputView::new();
            let mut w = out.reserved_writer(full.len());
            put_all(&mut w, s, v, &d).unwrap();
            assert_eq!(w.remaining(), 0);
            w.finish();
            assert_eq!(out.as_slice(), full.as_slice());
        }
    }
    // The decimal's word with less than 16 bytes of room, but enough for its bytes.
    for d in [Decimal::ONE, Decimal::MAX, Decimal::MIN] {
        let mut expected = DataOutputView::new();
        typeinfo::RustDecimalSerializer
            .serialize(&d, &mut expected)
            .unwrap();
        let mut out = DataOutputView::new();
        let mut w = out.reserved_writer(expected.len());
        typeinfo::RustDecimalSerializer.put(&d, &mut w).unwrap();
        w.finish();
        assert_eq!(out.as_slice(), expected.as_slice(), "{d}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_reserved_writes_match_the_plain_layout(s in ".{0,40}", v in any::<u64>(), m in any::<i64>(), scale in 0u32..=28, room in 0usize..200) {
        let d = Decimal::new(m, scale);
        let full = reserved_by_hand(b"", &s, v, &d);
        let mut out = DataOutputView::new();
        let mut w = out.reserved_writer(room);
        let result = put_all(&mut w, &s, v, &d);
        prop_assert_eq!(result.is_ok(), room >= full.len());
        w.finish();
        prop_assert_eq!(out.as_slice(), &full[..out.len()]);
    }

    #[test]
    fn arbitrary_player_lists_round_trip(seed in 0u64..1000, cut in any::<prop::sample::Index>()) {
        let ser = typeinfo::serializer::<Vec<Player>>().unwrap();
        let value = players(seed);
        let bytes = typeinfo::to_bytes(&ser, &value).unwrap();
        prop_assert_eq!(typeinfo::from_bytes(&ser, &bytes).unwrap(), value);
        let cut = cut.index(bytes.len().max(1));
        prop_assert!(typeinfo::from_bytes(&ser, &bytes[..cut.min(bytes.len().saturating_sub(1))]).is_err() || bytes.is_empty());
    }
}
