//! Derived types of every shape through the conformance harness, with fixed values and
//! with proptest-generated ones; their comparators agree with `#[derive(Ord)]`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::BTreeMap;

use proptest::prelude::*;
use typeinfo::testing::{Conformance, ConformanceError};
use typeinfo::{Comparable, KeyType, TypeDescription, TypeInfo, TypeKind};

#[derive(TypeInfo, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Named {
    id: u64,
    name: String,
    tags: Vec<String>,
    parent: Option<i32>,
}

#[derive(TypeInfo, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Tuple(i16, String, bool);

#[derive(TypeInfo, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Unit;

#[derive(TypeInfo, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Tick,
    Join { id: u32, name: String },
    Move(i64, i64),
    Nested(Named),
}

#[derive(TypeInfo, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Pair<A, B> {
    left: A,
    right: Vec<B>,
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
struct Measurement {
    sensor: String,
    value: f64,
    by_hour: BTreeMap<u8, f32>,
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
enum Tree {
    Leaf(i32),
    Node(Box<Tree>, Box<Tree>),
}

#[derive(TypeInfo, Debug, Clone, PartialEq, Default)]
struct WithSkip {
    kept: String,
    #[typeinfo(skip)]
    cache: Vec<u8>,
    #[typeinfo(default = "default_limit")]
    limit: u32,
}

fn default_limit() -> u32 {
    10
}

fn key<K: KeyType>() {}

fn key_conforms<T: KeyType + Ord + std::fmt::Debug + Sync>(
    values: Vec<T>,
) -> Result<(), ConformanceError> {
    let serializer = typeinfo::serializer::<T>().expect("derived types have serializers");
    Conformance::new(serializer, values)
        .key_type()
        .comparator(T::comparator())
        .order(Ord::cmp)
        .run()
}

fn named(id: u64, name: &str) -> Named {
    Named {
        id,
        name: name.to_owned(),
        tags: vec![name.to_owned(), String::new()],
        parent: Some(-1),
    }
}

#[test]
fn key_types_conform_and_order_like_derive_ord() -> Result<(), ConformanceError> {
    key::<Named>();
    key::<Event>();
    key::<Pair<String, u8>>();
    key_conforms(vec![
        named(1, "a"),
        named(1, "b"),
        named(0, "z"),
        Named {
            parent: None,
            ..named(1, "a")
        },
    ])?;
    key_conforms(vec![
        Tuple(-1, "x".into(), true),
        Tuple(-1, "x".into(), false),
        Tuple(7, String::new(), true),
    ])?;
    key_conforms(vec![Unit, Unit])?;
    key_conforms(vec![
        Event::Tick,
        Event::Join {
            id: 3,
            name: "ada".into(),
        },
        Event::Join {
            id: 3,
            name: "bob".into(),
        },
        Event::Move(-5, 5),
        Event::Nested(named(2, "n")),
    ])?;
    key_conforms(vec![
        Pair {
            left: "k".to_owned(),
            right: vec![1u8, 2],
        },
        Pair {
            left: "k".to_owned(),
            right: vec![],
        },
    ])
}

#[test]
fn value_types_conform() -> Result<(), ConformanceError> {
    let m = Measurement {
        sensor: "t1".into(),
        value: -2.5,
        by_hour: BTreeMap::from([(0, 1.0), (23, -0.5)]),
    };
    Conformance::new(
        typeinfo::serializer::<Measurement>().expect("serializer"),
        vec![
            m.clone(),
            Measurement {
                by_hour: BTreeMap::new(),
                ..m
            },
        ],
    )
    .comparator(Measurement::comparator())
    .run()?;
    let tree = Tree::Node(
        Box::new(Tree::Leaf(1)),
        Box::new(Tree::Node(Box::new(Tree::Leaf(2)), Box::new(Tree::Leaf(3)))),
    );
    Conformance::new(
        typeinfo::serializer::<Tree>().expect("serializer"),
        vec![Tree::Leaf(0), tree],
    )
    .run()?;
    let with_skip = WithSkip {
        kept: "k".into(),
        cache: vec![],
        limit: 3,
    };
    Conformance::new(
        typeinfo::serializer::<WithSkip>().expect("serializer"),
        vec![with_skip],
    )
    .run()
}

#[test]
fn skipped_fields_are_not_written_and_read_back_as_default() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<WithSkip>()?;
    let value = WithSkip {
        kept: "k".into(),
        cache: vec![1, 2, 3],
        limit: 3,
    };
    let bytes = typeinfo::to_bytes(&s, &value)?;
    assert_eq!(bytes, [1, b'k', 3, 0, 0, 0]);
    assert_eq!(
        typeinfo::from_bytes(&s, &bytes)?,
        WithSkip {
            cache: vec![],
            ..value
        }
    );
    Ok(())
}

#[test]
fn deserialize_into_gives_skipped_fields_their_default_as_deserialize_does() -> typeinfo::Result<()>
{
    use typeinfo::TypeSerializer;
    let s = typeinfo::serializer::<WithSkip>()?;
    let bytes = typeinfo::to_bytes(
        &s,
        &WithSkip {
            kept: "new".into(),
            cache: vec![9],
            limit: 4,
        },
    )?;
    // The reused value comes from another record: its skipped `cache` must not leak into
    // the record read now.
    let mut reuse = WithSkip {
        kept: "old".into(),
        cache: vec![1, 2, 3],
        limit: 1,
    };
    s.deserialize_into(&mut reuse, &mut typeinfo::DataInputView::new(&bytes))?;
    assert_eq!(reuse, typeinfo::from_bytes(&s, &bytes)?);
    assert_eq!(
        reuse,
        WithSkip {
            kept: "new".into(),
            cache: vec![],
            limit: 4
        }
    );

    // The same in an enum variant and with a `default = "path"` skipped field.
    let e = typeinfo::serializer::<SkipInVariant>()?;
    let bytes = typeinfo::to_bytes(&e, &SkipInVariant::Hit { id: 2, seen: 5 })?;
    let mut reuse = SkipInVariant::Hit { id: 1, seen: 99 };
    e.deserialize_into(&mut reuse, &mut typeinfo::DataInputView::new(&bytes))?;
    assert_eq!(
        reuse,
        SkipInVariant::Hit {
            id: 2,
            seen: default_limit()
        }
    );
    assert_eq!(reuse, typeinfo::from_bytes(&e, &bytes)?);
    Ok(())
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
enum SkipInVariant {
    Miss,
    Hit {
        id: u64,
        #[typeinfo(skip, default = "default_limit")]
        seen: u32,
    },
}

#[test]
fn bytes_have_no_per_field_markers() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<Event>()?;
    assert_eq!(typeinfo::to_bytes(&s, &Event::Tick)?, [0]);
    assert_eq!(
        typeinfo::to_bytes(&s, &Event::Move(1, -1))?,
        [2, 1, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255]
    );
    let t = typeinfo::serializer::<Tuple>()?;
    assert_eq!(
        typeinfo::to_bytes(&t, &Tuple(1, "a".into(), true))?,
        [1, 0, 1, b'a', 1]
    );
    Ok(())
}

#[test]
fn descriptions_describe_fields_and_key_types() {
    let d: TypeDescription = Named::description();
    assert_eq!(
        (d.name(), d.kind(), d.arity()),
        ("Named", TypeKind::Struct, 4)
    );
    let names: Vec<&str> = d.fields().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["id", "name", "tags", "parent"]);
    assert!(d.is_key_type());
    assert!(
        !Measurement::description().is_key_type(),
        "an f64 field makes a value type"
    );
    let e = Event::description();
    assert_eq!(e.kind(), TypeKind::Enum);
    assert_eq!(
        e.fields()
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>(),
        ["Tick", "Join", "Move", "Nested"]
    );
    assert_eq!(
        Tree::description().name(),
        "Tree",
        "recursive descriptions terminate"
    );
    assert_eq!(
        <Pair<String, u8>>::description().fields()[1]
            .description
            .name(),
        "Vec<u8>"
    );
}

fn named_strategy() -> impl Strategy<Value = Named> {
    (
        any::<u64>(),
        ".{0,8}",
        proptest::collection::vec(".{0,4}", 0..3),
        proptest::option::of(any::<i32>()),
    )
        .prop_map(|(id, name, tags, parent)| Named {
            id,
            name,
            tags,
            parent,
        })
}

fn event_strategy() -> impl Strategy<Value = Event> {
    prop_oneof![
        Just(Event::Tick),
        (any::<u32>(), ".{0,6}").prop_map(|(id, name)| Event::Join { id, name }),
        (any::<i64>(), any::<i64>()).prop_map(|(a, b)| Event::Move(a, b)),
        named_strategy().prop_map(Event::Nested),
    ]
}

fn tree_strategy() -> impl Strategy<Value = Tree> {
    any::<i32>()
        .prop_map(Tree::Leaf)
        .prop_recursive(4, 16, 2, |inner| {
            (inner.clone(), inner).prop_map(|(l, r)| Tree::Node(Box::new(l), Box::new(r)))
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Arbitrary values pass the harness; normalized keys, `compare_serialized` and `Ord` agree.
    #[test]
    fn arbitrary_named(values in proptest::collection::vec(named_strategy(), 1..6)) {
        key_conforms(values).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }

    #[test]
    fn arbitrary_events(values in proptest::collection::vec(event_strategy(), 1..6)) {
        key_conforms(values).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }

    #[test]
    fn arbitrary_tuples_and_pairs(a in any::<i16>(), s in ".{0,5}", b in any::<bool>(), right in proptest::collection::vec(any::<u8>(), 0..5)) {
        key_conforms(vec![Tuple(a, s.clone(), b), Tuple(a, s.clone(), !b)]).map_err(|e| TestCaseError::fail(e.to_string()))?;
        key_conforms(vec![Pair { left: s.clone(), right: right.clone() }, Pair { left: s, right }]).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }

    #[test]
    fn arbitrary_trees(values in proptest::collection::vec(tree_strategy(), 1..4)) {
        let s = typeinfo::serializer::<Tree>().map_err(|e| TestCaseError::fail(e.to_string()))?;
        Conformance::new(s, values).run().map_err(|e| TestCaseError::fail(e.to_string()))?;
    }

    #[test]
    fn arbitrary_measurements(sensor in ".{0,6}", value in any::<f64>().prop_filter("NaN never equals itself", |v| !v.is_nan()),
                              by_hour in proptest::collection::btree_map(any::<u8>(), -1e6f32..1e6, 0..4)) {
        let s = typeinfo::serializer::<Measurement>().map_err(|e| TestCaseError::fail(e.to_string()))?;
        Conformance::new(s, vec![Measurement { sensor, value, by_hour }]).comparator(Measurement::comparator())
            .run().map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}
