//! The std types through `TypeInfo`: descriptions, serializers from the trait, the
//! conformance harness, key types, and the serde fallback.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use typeinfo::testing::{Conformance, ConformanceError};
use typeinfo::{Error, KeyType, SerializerConfig, TypeInfo, TypeKind};

/// Runs a key type's values through the harness with the serializer and comparator its
/// `TypeInfo` gives.
fn key_conforms<T: KeyType + PartialEq + Ord + std::fmt::Debug + Sync>(
    values: Vec<T>,
) -> Result<(), ConformanceError> {
    let serializer = typeinfo::serializer::<T>().expect("std types have serializers");
    assert!(
        T::description().is_key_type(),
        "{} should describe itself as a key type",
        T::description()
    );
    Conformance::new(serializer, values)
        .key_type()
        .comparator(T::comparator())
        .order(Ord::cmp)
        .run()
}

fn value_conforms<T: TypeInfo + PartialEq + std::fmt::Debug + Sync>(
    values: Vec<T>,
) -> Result<(), ConformanceError> {
    Conformance::new(
        typeinfo::serializer::<T>().expect("std types have serializers"),
        values,
    )
    .run()
}

#[test]
fn every_std_type_conforms_through_its_type_info() -> Result<(), ConformanceError> {
    key_conforms(vec![false, true])?;
    key_conforms(vec!['a', '\u{10ffff}'])?;
    key_conforms(vec![0u8, 255])?;
    key_conforms(vec![i128::MIN, 0, i128::MAX])?;
    key_conforms(vec![(), ()])?;
    key_conforms(vec![String::new(), "x".to_owned()])?;
    key_conforms(vec![bytes::Bytes::from_static(b"\0"), bytes::Bytes::new()])?;
    key_conforms(vec![vec![1u16, 2], vec![]])?;
    key_conforms(vec![VecDeque::from(vec![-1i32]), VecDeque::new()])?;
    key_conforms(vec![[1u8; 3], [0, 9, 9]])?;
    key_conforms(vec![None, Some("s".to_owned())])?;
    key_conforms(vec![Box::new(3i64), Box::new(-3)])?;
    key_conforms(vec![Arc::new(3u64), Arc::new(4)])?;
    key_conforms(vec![(1u8, "a".to_owned(), -1i64), (1, "a".to_owned(), -2)])?;
    key_conforms(vec![
        BTreeMap::from([(1u8, "a".to_owned())]),
        BTreeMap::new(),
    ])?;
    key_conforms(vec![
        BTreeSet::from(["b".to_owned(), "a".to_owned()]),
        BTreeSet::new(),
    ])?;
    key_conforms(vec![Duration::from_millis(5), Duration::ZERO])?;
    key_conforms(vec![
        SystemTime::UNIX_EPOCH,
        SystemTime::UNIX_EPOCH + Duration::from_secs(1),
    ])?;
    value_conforms(vec![1.5f32, -0.0])?;
    value_conforms(vec![2.5f64, f64::INFINITY])?;
    value_conforms(vec![
        HashMap::from([("k".to_owned(), 1i32)]),
        HashMap::new(),
    ])?;
    value_conforms(vec![HashSet::from([1u32, 2, 3]), HashSet::new()])?;
    value_conforms(vec![rust_decimal::Decimal::new(-12345, 2)])?;
    value_conforms(vec![bigdecimal::BigDecimal::from(7)])?;
    value_conforms(vec![(
        1u8,
        2u16,
        3u32,
        4u64,
        5i8,
        6i16,
        7i32,
        8i64,
        9u128,
        10i128,
        'c',
        String::from("12"),
    )])
}

#[test]
fn descriptions_name_shape_fields_and_key_types() {
    let d = <(String, Vec<Option<i64>>, BTreeMap<String, f64>)>::description();
    assert_eq!(
        d.name(),
        "(String, Vec<Option<i64>>, BTreeMap<String, f64>)"
    );
    assert_eq!(d.kind(), TypeKind::Tuple);
    assert_eq!(d.arity(), 3);
    let names: Vec<&str> = d.fields().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["f0", "f1", "f2"]);
    assert!(!d.is_key_type(), "a map of floats is not a key type");
    assert!(<(String, Vec<Option<i64>>)>::description().is_key_type());
    assert!(!HashMap::<String, i32>::description().is_key_type());
    assert!(!HashSet::<String>::description().is_key_type());
    assert_eq!(<[f32; 3]>::description().name(), "[f32; 3]");
    assert_eq!(
        Box::<String>::description(),
        String::description(),
        "pointers are invisible"
    );
    assert_eq!(<u64>::description().arity(), 1);
    assert_eq!(Vec::<u8>::description().type_params()[0].name(), "u8");
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Legacy {
    id: u64,
    tags: Vec<String>,
}
typeinfo::generic_type!(Legacy, name = "com.example.Legacy");

#[test]
fn serde_types_are_a_generic_fallback() -> Result<(), ConformanceError> {
    let d = Legacy::description();
    assert_eq!(d.kind(), TypeKind::Generic);
    assert!(d.contains_generic() && !d.is_key_type());
    let nested = Vec::<Option<Legacy>>::description();
    assert!(nested.contains_generic());
    assert_eq!(
        nested.first_generic(),
        Some(std::any::type_name::<Legacy>())
    );

    let values = vec![
        Legacy {
            id: 1,
            tags: vec![],
        },
        Legacy {
            id: u64::MAX,
            tags: vec!["a".into(), "".into()],
        },
    ];
    value_conforms(values)
}

#[test]
fn disabled_generic_types_are_refused_with_the_type_name() {
    let config = SerializerConfig::new().disable_generic_types();
    let err = <Vec<(String, Legacy)>>::create_serializer(&config)
        .expect_err("generic types are disabled");
    assert!(
        matches!(&err, Error::GenericTypeDisabled { type_name } if type_name.ends_with("Legacy")),
        "{err}"
    );
    assert!(
        err.to_string().contains("Legacy")
            && err.to_string().contains("generic types are disabled"),
        "{err}"
    );
    // Types without a generic part are unaffected.
    assert!(<Vec<(String, u64)>>::create_serializer(&config).is_ok());
}

#[test]
fn a_changed_serde_type_is_incompatible() {
    use typeinfo::{SnapshotRegistry, TypeSerializer};
    let legacy = typeinfo::serializer::<Legacy>().expect("generic types are enabled by default");
    let other =
        typeinfo::GenericSerializer::<(u8, u8)>::new("com.example.Pair", &SerializerConfig::new())
            .expect("enabled");
    let verdict = other.resolve(&legacy.snapshot(), &SnapshotRegistry::default());
    let inc = verdict
        .incompatibility()
        .expect("another serde type is incompatible");
    assert!(inc.to_string().contains("cannot evolve"), "{inc}");
}
