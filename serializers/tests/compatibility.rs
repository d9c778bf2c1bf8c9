//! Verdicts of resolving new serializers against old snapshots, and migration of old bytes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::BTreeMap;

use typeinfo_serializers::*;

fn registry() -> SnapshotRegistry {
    SnapshotRegistry::default()
}

/// Writes `value` with `old`, resolves `new` against `old`'s snapshot, and reads the old
/// bytes back through the verdict's reader.
fn migrate<A, B>(
    old: &impl TypeSerializer<A>,
    value: &A,
    new: &impl TypeSerializer<B>,
) -> Result<(Verdict, B)>
where
    B: 'static,
{
    let bytes = to_bytes(old, value)?;
    let verdict = new.resolve(&old.snapshot(), &registry());
    let mut input = DataInputView::new(&bytes);
    let kind = verdict.verdict();
    let out = match verdict {
        Compatibility::AsIs => new.deserialize(&mut input)?,
        Compatibility::AfterMigration(reader) => reader.read(&mut input)?,
        Compatibility::Reconfigured(s) => s.deserialize(&mut input)?,
        Compatibility::Incompatible(inc) => return Err(inc.into()),
    };
    assert!(
        input.is_empty(),
        "migration left {} bytes",
        input.remaining()
    );
    Ok((kind, out))
}

fn refusal<A, B: 'static>(old: &impl TypeSerializer<A>, new: &impl TypeSerializer<B>) -> String {
    match new.resolve(&old.snapshot(), &registry()) {
        Compatibility::Incompatible(inc) => inc.to_string(),
        other => panic!("expected incompatible, got {other:?}"),
    }
}

#[test]
fn the_same_layout_is_compatible_as_is() -> Result<()> {
    assert_eq!(
        migrate(&I64Serializer, &-3, &I64Serializer)?,
        (Verdict::AsIs, -3)
    );
    let list = VecSerializer::new(StringSerializer);
    assert_eq!(
        migrate(&list, &vec!["a".to_owned()], &list)?,
        (Verdict::AsIs, vec!["a".to_owned()])
    );
    // Vec and VecDeque share a layout.
    let (verdict, deque) = migrate(
        &list,
        &vec!["a".to_owned()],
        &VecDequeSerializer::new(StringSerializer),
    )?;
    assert_eq!(
        (verdict, deque.into_iter().collect::<Vec<_>>()),
        (Verdict::AsIs, vec!["a".to_owned()])
    );
    Ok(())
}

#[test]
fn integers_and_floats_widen_after_migration() -> Result<()> {
    assert_eq!(
        migrate(&I32Serializer, &-70_000, &I64Serializer)?,
        (Verdict::AfterMigration, -70_000i64)
    );
    assert_eq!(
        migrate(&I8Serializer, &-128, &I128Serializer)?,
        (Verdict::AfterMigration, -128i128)
    );
    assert_eq!(
        migrate(&U8Serializer, &255, &U64Serializer)?,
        (Verdict::AfterMigration, 255u64)
    );
    assert_eq!(
        migrate(&U16Serializer, &65_535, &I32Serializer)?,
        (Verdict::AfterMigration, 65_535i32)
    );
    assert_eq!(
        migrate(&U32Serializer, &u32::MAX, &U64Serializer)?,
        (Verdict::AfterMigration, u32::MAX as u64)
    );
    assert_eq!(
        migrate(&F32Serializer, &1.5f32, &F64Serializer)?,
        (Verdict::AfterMigration, 1.5f64)
    );
    Ok(())
}

#[test]
fn narrowing_and_sign_changes_are_incompatible() {
    assert_eq!(refusal(&I64Serializer, &I32Serializer), "i64 -> i32");
    assert_eq!(refusal(&I32Serializer, &U64Serializer), "i32 -> u64");
    assert_eq!(refusal(&F64Serializer, &F32Serializer), "f64 -> f32");
    assert_eq!(refusal(&F64Serializer, &StringSerializer), "f64 -> String");
    assert_eq!(
        refusal(&StringSerializer, &VecSerializer::new(U8Serializer)),
        "String -> Vec<u8>"
    );
}

#[test]
fn a_value_becomes_an_option() -> Result<()> {
    let (verdict, v) = migrate(
        &StringSerializer,
        &"x".to_owned(),
        &OptionSerializer::new(StringSerializer),
    )?;
    assert_eq!(
        (verdict, v),
        (Verdict::AfterMigration, Some("x".to_owned()))
    );
    // Widening and optional at once.
    assert_eq!(
        migrate(&I16Serializer, &-2, &OptionSerializer::new(I64Serializer))?,
        (Verdict::AfterMigration, Some(-2i64))
    );
    assert_eq!(
        migrate(
            &OptionSerializer::new(I32Serializer),
            &None,
            &OptionSerializer::new(I64Serializer)
        )?,
        (Verdict::AfterMigration, None)
    );
    assert_eq!(
        refusal(&StringSerializer, &OptionSerializer::new(I64Serializer)),
        "String -> Option<i64>"
    );
    assert_eq!(
        refusal(&OptionSerializer::new(I64Serializer), &I64Serializer),
        "Option<i64> -> i64"
    );
    Ok(())
}

#[test]
fn collections_migrate_their_elements() -> Result<()> {
    let (verdict, v) = migrate(
        &VecSerializer::new(I32Serializer),
        &vec![1, -2, 3],
        &VecSerializer::new(I64Serializer),
    )?;
    assert_eq!((verdict, v), (Verdict::AfterMigration, vec![1i64, -2, 3]));

    let old = BTreeMapSerializer::new(StringSerializer, F32Serializer);
    let value: BTreeMap<String, f32> = [("a".to_owned(), 0.5), ("b".to_owned(), -1.0)].into();
    let (verdict, map): (_, BTreeMap<String, f64>) = migrate(
        &old,
        &value,
        &BTreeMapSerializer::new(StringSerializer, F64Serializer),
    )?;
    assert_eq!(verdict, Verdict::AfterMigration);
    assert_eq!(
        map,
        [("a".to_owned(), 0.5f64), ("b".to_owned(), -1.0)].into()
    );

    let (verdict, tuple) = migrate(
        &TupleSerializer((StringSerializer, I32Serializer)),
        &("k".to_owned(), 9),
        &TupleSerializer((StringSerializer, I64Serializer)),
    )?;
    assert_eq!(
        (verdict, tuple),
        (Verdict::AfterMigration, ("k".to_owned(), 9i64))
    );

    let (verdict, array) = migrate(
        &ArraySerializer::<_, 2>::new(U8Serializer),
        &[1, 2],
        &ArraySerializer::<_, 2>::new(U16Serializer),
    )?;
    assert_eq!((verdict, array), (Verdict::AfterMigration, [1u16, 2]));

    let (verdict, boxed) = migrate(&I32Serializer, &5, &BoxSerializer::new(I64Serializer))?;
    assert_eq!((verdict, boxed), (Verdict::AfterMigration, Box::new(5i64)));
    Ok(())
}

#[test]
fn incompatible_parts_are_named_by_their_path() {
    assert_eq!(
        refusal(
            &VecSerializer::new(F64Serializer),
            &VecSerializer::new(StringSerializer)
        ),
        "Vec<f64>[]: f64 -> String"
    );
    assert_eq!(
        refusal::<BTreeMap<String, i32>, BTreeMap<i32, i32>>(
            &BTreeMapSerializer::new(StringSerializer, I32Serializer),
            &BTreeMapSerializer::new(I32Serializer, I32Serializer)
        ),
        "Map<String, i32>{key}: String -> i32"
    );
    assert_eq!(
        refusal(
            &TupleSerializer((
                StringSerializer,
                VecSerializer::new(OptionSerializer::new(F64Serializer))
            )),
            &TupleSerializer((
                StringSerializer,
                VecSerializer::new(OptionSerializer::new(I64Serializer))
            )),
        ),
        "(String, Vec<Option<f64>>).1[]?: f64 -> i64"
    );
    assert_eq!(
        refusal(
            &ArraySerializer::<_, 3>::new(I32Serializer),
            &ArraySerializer::<_, 4>::new(I32Serializer)
        ),
        "[i32; 3] -> [i32; 4]"
    );
    assert_eq!(
        refusal(
            &TupleSerializer((I32Serializer,)),
            &TupleSerializer((I32Serializer, I32Serializer))
        ),
        "(i32,) -> (i32, i32)"
    );
}

#[test]
fn an_incompatibility_reads_like_a_schema_diff() {
    let inc = Incompatibility::new("f64", "String")
        .within(PathSegment::Field("amount".to_owned()))
        .in_type("Order");
    assert_eq!(inc.to_string(), "Order.amount: f64 -> String");
    assert_eq!(inc.path(), "Order.amount");
    let nested = inc
        .within(PathSegment::Field("lines".to_owned()))
        .within(PathSegment::Element)
        .in_type("Batch");
    assert_eq!(nested.path(), "Batch[].lines.amount");
    assert_eq!(
        Error::Incompatible(Box::new(nested)).to_string(),
        "Batch[].lines.amount: f64 -> String: incompatible"
    );
}

#[test]
fn corrupt_snapshots_are_refused() {
    let snapshot = TypeSerializer::<Vec<Option<String>>>::snapshot(&VecSerializer::new(
        OptionSerializer::new(StringSerializer),
    ));
    let bytes = snapshot.to_bytes().expect("shallow");
    assert_eq!(SerializerSnapshot::from_bytes(&bytes), Ok(snapshot));
    for cut in 0..bytes.len() {
        assert!(
            SerializerSnapshot::from_bytes(&bytes[..cut]).is_err(),
            "a {cut}-byte prefix was accepted"
        );
    }
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert!(
        matches!(SerializerSnapshot::from_bytes(&trailing), Err(Error::CorruptSnapshot(m)) if m.contains("trailing"))
    );
    let mut magic = bytes.clone();
    magic[0] = b'X';
    assert!(
        matches!(SerializerSnapshot::from_bytes(&magic), Err(Error::CorruptSnapshot(m)) if m.contains("magic"))
    );
    let mut version = bytes;
    version[4] = 9;
    assert!(
        matches!(SerializerSnapshot::from_bytes(&version), Err(Error::CorruptSnapshot(m)) if m.contains("envelope version"))
    );
}

#[test]
fn absurdly_deep_snapshots_are_refused() {
    let mut deep = SerializerSnapshot::new(kinds::I32, 1);
    for _ in 0..(MAX_SNAPSHOT_DEPTH + 2) {
        deep = SerializerSnapshot::new(kinds::LIST, 1).with_nested(vec![deep]);
    }
    // Too deep to read back, so refused when written ...
    assert!(matches!(deep.to_bytes(), Err(e) if e.to_string().contains("deeper")));
    // ... and refused when read, if written by other means.
    let mut out = DataOutputView::new();
    out.write_bytes(&SNAPSHOT_MAGIC);
    out.write_u8(SNAPSHOT_FORMAT_VERSION);
    for _ in 0..(MAX_SNAPSHOT_DEPTH + 2) {
        out.write_len_prefixed(b"list");
        out.write_varint(1);
        out.write_len_prefixed(&[]);
        out.write_len(1);
    }
    out.write_len_prefixed(b"i32");
    out.write_varint(1);
    out.write_len_prefixed(&[]);
    out.write_len(0);
    assert!(
        matches!(SerializerSnapshot::from_bytes(out.as_slice()), Err(Error::CorruptSnapshot(m)) if m.contains("deeper"))
    );
}

#[test]
fn unknown_kinds_and_newer_versions_are_named() {
    let unknown = SerializerSnapshot::new("com.example.money", 2);
    assert!(
        matches!(registry().restore(&unknown), Err(Error::UnknownSnapshotKind(k)) if k == "com.example.money")
    );
    let newer = SerializerSnapshot::new(kinds::STRING, 7);
    let err = registry()
        .restore(&newer)
        .expect_err("a newer version must be refused");
    assert_eq!(
        err.to_string(),
        "snapshot `string` has version 7, this code reads up to 1"
    );
}

#[test]
fn custom_kinds_restore_through_a_registered_restorer() -> Result<()> {
    let mut registry = SnapshotRegistry::new();
    // A custom kind whose bytes are those of a u32.
    registry.register("com.example.counter", |_snapshot, registry| {
        registry.restore(&SerializerSnapshot::new(kinds::U32, 1))
    });
    let restored = registry.restore(&SerializerSnapshot::new("com.example.counter", 1))?;
    let value = restored.deserialize(&mut DataInputView::new(&7u32.to_le_bytes()))?;
    assert_eq!(value, Value::U32(7));
    assert!(
        registry.knows("com.example.counter")
            && registry.knows(kinds::MAP)
            && !registry.knows("nope")
    );
    Ok(())
}

#[test]
fn restored_serializers_read_any_builtin_layout_without_the_type() -> Result<()> {
    let s = TupleSerializer((
        StringSerializer,
        OptionSerializer::new(VecSerializer::new(I16Serializer)),
    ));
    let bytes = to_bytes(&s, &("id".to_owned(), Some(vec![-1i16, 2])))?;
    let restored = registry().restore(&s.snapshot())?;
    let value = from_bytes(&restored, &bytes)?;
    assert_eq!(
        value,
        Value::Tuple(vec![
            Value::String("id".to_owned()),
            Value::Option(Some(Box::new(Value::List(vec![
                Value::I16(-1),
                Value::I16(2)
            ])))),
        ])
    );
    assert_eq!(to_bytes(&restored, &value)?, bytes);
    Ok(())
}

#[test]
fn corrupt_lengths_do_not_allocate_or_panic() {
    // A list claiming 2^62 elements in a 10-byte buffer.
    let mut out = DataOutputView::new();
    out.write_varint(1 << 62);
    let err = from_bytes(&VecSerializer::new(U64Serializer), out.as_slice())
        .expect_err("must be refused");
    assert!(matches!(err, Error::LengthTooLarge { .. }), "{err}");
    // An 11-byte varint.
    let err = DataInputView::new(&[0xff; 11])
        .read_varint()
        .expect_err("must be refused");
    assert_eq!(err, Error::VarintOverflow);
    // Invalid tags and values.
    assert!(matches!(
        from_bytes(&BoolSerializer, &[2]),
        Err(Error::InvalidBool(2))
    ));
    assert!(matches!(
        from_bytes(&CharSerializer, &0xd800u32.to_le_bytes()),
        Err(Error::InvalidChar(0xd800))
    ));
    assert!(matches!(
        from_bytes(&StringSerializer, &[2, 0xc3, 0x28]),
        Err(Error::InvalidUtf8)
    ));
    assert!(matches!(
        from_bytes(&OptionSerializer::new(U8Serializer), &[7]),
        Err(Error::InvalidTag { tag: 7, .. })
    ));
    let dup: std::result::Result<BTreeMap<u8, u8>, _> = from_bytes(
        &BTreeMapSerializer::new(U8Serializer, U8Serializer),
        &[2, 1, 0, 1, 5],
    );
    assert!(dup.is_err(), "a map with a repeated key must be refused");
}

#[test]
fn collections_longer_than_the_zero_size_cap_compare_and_migrate() -> Result<()> {
    let long = vec![7u8; MAX_ZERO_SIZED_ITEMS + 1];
    let bytes = to_bytes(&VecSerializer::new(U8Serializer), &long)?;
    let order = TypeComparator::<Vec<u8>>::compare_serialized(
        &SeqComparator::new(U8Comparator),
        &mut DataInputView::new(&bytes),
        &mut DataInputView::new(&bytes),
    )?;
    assert_eq!(order, std::cmp::Ordering::Equal);
    let (verdict, widened) = migrate(
        &VecSerializer::new(U8Serializer),
        &long,
        &VecSerializer::new(U16Serializer),
    )?;
    assert_eq!(
        (verdict, widened.len()),
        (Verdict::AfterMigration, long.len())
    );
    Ok(())
}

#[test]
fn restored_serializers_refuse_what_typed_ones_refuse() -> Result<()> {
    let decimal = registry().restore(&SerializerSnapshot::new(kinds::DECIMAL, 1))?;
    assert!(
        from_bytes(&decimal, &[0, 0]).is_err(),
        "an empty unscaled value must be refused"
    );
    let set = registry().restore(&TypeSerializer::<std::collections::BTreeSet<u8>>::snapshot(
        &BTreeSetSerializer::new(U8Serializer),
    ))?;
    assert!(
        from_bytes(&set, &[2, 1, 1]).is_err(),
        "a repeated set element must be refused"
    );
    let map = registry().restore(&TypeSerializer::<BTreeMap<u8, u8>>::snapshot(
        &BTreeMapSerializer::new(U8Serializer, U8Serializer),
    ))?;
    assert!(
        from_bytes(&map, &[2, 1, 0, 1, 5]).is_err(),
        "a repeated map key must be refused"
    );
    Ok(())
}

#[test]
fn snapshots_with_huge_minimum_lengths_do_not_overflow() -> Result<()> {
    let mut n = DataOutputView::new();
    n.write_varint(1 << 32);
    let huge_array = |element: SerializerSnapshot| {
        SerializerSnapshot::new(kinds::ARRAY, 1)
            .with_payload(n.as_slice().to_vec())
            .with_nested(vec![element])
    };
    let nested = huge_array(huge_array(SerializerSnapshot::new(kinds::U64, 1)));
    let map =
        SerializerSnapshot::new(kinds::MAP, 1).with_nested(vec![nested.clone(), nested.clone()]);
    let list_of_tuples =
        SerializerSnapshot::new(kinds::LIST, 1).with_nested(vec![SerializerSnapshot::new(
            kinds::TUPLE,
            1,
        )
        .with_nested(vec![nested.clone(), nested])]);
    for snapshot in [map, list_of_tuples] {
        let restored = registry().restore(&snapshot)?;
        assert!(from_bytes(&restored, &[1]).is_err());
        assert_eq!(
            from_bytes(&restored, &[0])?.clone(),
            if snapshot.kind() == kinds::MAP {
                Value::Map(vec![])
            } else {
                Value::List(vec![])
            }
        );
    }
    let zero_sized = huge_array(SerializerSnapshot::new(kinds::UNIT, 1));
    assert!(matches!(
        registry().restore(&zero_sized),
        Err(Error::CorruptSnapshot(_))
    ));
    Ok(())
}

#[test]
fn varints_read_narrower_varints_as_is_and_migrate_fixed_integers() -> Result<()> {
    assert_eq!(to_bytes(&VarU64Serializer, &300)?, [0xac, 0x02]);
    assert_eq!(to_bytes(&VarI32Serializer, &-1)?, [0x01]);
    assert_eq!(
        migrate(&VarU16Serializer, &300, &VarU64Serializer)?,
        (Verdict::AsIs, 300u64)
    );
    assert_eq!(
        migrate(&U32Serializer, &70_000, &VarU64Serializer)?,
        (Verdict::AfterMigration, 70_000u64)
    );
    assert_eq!(
        migrate(&I16Serializer, &-5, &VarI64Serializer)?,
        (Verdict::AfterMigration, -5i64)
    );
    assert_eq!(
        refusal(&VarU64Serializer, &VarU16Serializer),
        "u64 (varint) -> u16 (varint)"
    );
    assert_eq!(
        refusal(&U64Serializer, &VarI64Serializer),
        "u64 -> i64 (varint)"
    );
    assert!(
        matches!(
            from_bytes(&VarU16Serializer, &[0xff, 0xff, 0x04]),
            Err(Error::OutOfRange { .. })
        ),
        "70000 does not fit a u16"
    );
    Ok(())
}
