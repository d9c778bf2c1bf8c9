//! Flink's serializer snapshots (tests/golden/snapshot_*.bin, written by Flink 2.3 with
//! `TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot`) are read, and resolved
//! against the Rust serializers with typeinfo's verdicts: as is for the same layout, after
//! migration for a POJO's added or removed field or moved enum constants, incompatible with
//! the path of the change otherwise, and "Kryo state: not readable" for Kryo.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

mod common;

use typeinfo::{DataInputView, Error, TypeInfo, TypeSerializer, Verdict};
use typeinfo_flink_compat::*;

use common::{golden, Event, Order, Side};

fn snapshot(name: &str) -> FlinkSnapshot {
    let bytes = golden(&format!("snapshot_{name}"));
    let mut input = DataInputView::new(&bytes);
    let snapshot = FlinkSnapshot::read_serializer_snapshot(&mut input).expect(name);
    assert!(input.is_empty(), "{name}: {} bytes left", input.remaining());
    snapshot
}

fn as_is<T, S: TypeSerializer<T>>(name: &str, serializer: &S) {
    assert_eq!(
        resolve(&snapshot(name), serializer),
        Ok(Verdict::AsIs),
        "{name}"
    );
}

fn incompatible<T, S: TypeSerializer<T>>(name: &str, serializer: &S) -> String {
    match resolve(&snapshot(name), serializer) {
        Err(e) => e.to_string(),
        Ok(v) => panic!("{name}: {v:?}, expected incompatible"),
    }
}

#[test]
fn every_snapshot_resolves_as_is_against_its_rust_serializer() {
    as_is("int", &IntSerializer);
    as_is::<String, _>("string", &StringSerializer);
    as_is::<Instant, _>("instant", &InstantSerializer);
    as_is::<bigdecimal::BigDecimal, _>("big_decimal", &BigDecSerializer);
    as_is("int_array", &IntPrimitiveArraySerializer);
    as_is::<LocalDate, _>("local_date", &LocalDateSerializer);
    as_is::<Vec<String>, _>("list_string", &ListSerializer::new(StringSerializer));
    let map = MapSerializer::new(StringSerializer, IntSerializer);
    as_is::<Vec<(String, i32)>, _>("map_string_int", &map);
    as_is("integer_array", &GenericArraySerializer::new(IntSerializer));
    as_is("nullable_long_padded", &Nullable::padded(LongSerializer));
    as_is("enum", &Side::flink_serializer());
    let tuple2 = TupleSerializer((StringSerializer, IntSerializer));
    as_is::<(String, i32), _>("tuple2", &tuple2);
    let row = RowSerializer((StringSerializer, IntSerializer));
    as_is::<Row<(Option<String>, Option<i32>)>, _>("row", &row);
    assert_eq!(
        resolve_as::<Order>(&snapshot("pojo_order")),
        Ok(Verdict::AsIs)
    );
    assert_eq!(
        resolve_as::<Event>(&snapshot("pojo_event")),
        Ok(Verdict::AsIs)
    );
}

#[test]
fn snapshots_read_into_their_parts() {
    let order = snapshot("pojo_order");
    let SnapshotContent::Pojo {
        pojo_class, fields, ..
    } = &order.content
    else {
        panic!("{order:?}");
    };
    assert_eq!(pojo_class, "FlinkGoldens$Order");
    let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["amount", "userId"]);
    assert_eq!(
        fields[0].snapshot.as_ref().unwrap().serializer_name(),
        "DoubleSerializer"
    );
    let side = snapshot("enum");
    assert!(
        matches!(&side.content, SnapshotContent::Enum { constants, .. } if constants == &["BUY", "SELL", "HOLD"])
    );
    let padded = snapshot("nullable_long_padded");
    assert!(matches!(
        &padded.content,
        SnapshotContent::Composite {
            outer: Outer::NullPadding(8),
            ..
        }
    ));
    let tuple = snapshot("tuple2");
    assert!(
        matches!(&tuple.content, SnapshotContent::Composite { outer: Outer::TupleClass(c), nested, .. }
        if c == "org.apache.flink.api.java.tuple.Tuple2" && nested.len() == 2)
    );
    let kryo = snapshot("kryo_local_date");
    assert!(
        matches!(&kryo.content, SnapshotContent::Kryo { type_class, .. } if type_class == "java.time.LocalDate")
    );
}

/// `Order` with `amount` turned into a `String`.
#[derive(TypeInfo, Debug)]
#[typeinfo(flink_pojo = "FlinkGoldens$Order")]
struct OrderAmountString {
    #[typeinfo(flink_name = "userId")]
    user_id: String,
    amount: String,
}

/// `Order` with a field added.
#[derive(TypeInfo, Debug)]
#[typeinfo(flink_pojo = "FlinkGoldens$Order")]
struct OrderWithNote {
    #[typeinfo(flink_name = "userId")]
    user_id: String,
    amount: f64,
    note: Option<String>,
}

/// `Order` with `amount` renamed (removed and added, for Flink).
#[derive(TypeInfo, Debug)]
#[typeinfo(flink_pojo = "FlinkGoldens$Order")]
struct OrderRenamed {
    #[typeinfo(flink_name = "userId")]
    user_id: String,
    total: f64,
}

#[derive(TypeInfo, Debug, Clone)]
#[typeinfo(flink_enum = "FlinkGoldens$Side")]
enum SideReordered {
    #[typeinfo(flink_name = "SELL")]
    Sell,
    #[typeinfo(flink_name = "BUY")]
    Buy,
    #[typeinfo(flink_name = "HOLD")]
    Hold,
}

#[derive(TypeInfo, Debug, Clone)]
#[typeinfo(flink_enum = "FlinkGoldens$Side")]
enum SideExtended {
    #[typeinfo(flink_name = "BUY")]
    Buy,
    #[typeinfo(flink_name = "SELL")]
    Sell,
    #[typeinfo(flink_name = "HOLD")]
    Hold,
    #[typeinfo(flink_name = "SHORT")]
    Short,
}

#[derive(TypeInfo, Debug, Clone)]
#[typeinfo(flink_enum = "FlinkGoldens$Side")]
enum SideWithoutHold {
    #[typeinfo(flink_name = "BUY")]
    Buy,
    #[typeinfo(flink_name = "SELL")]
    Sell,
}

#[test]
fn changed_types_get_the_verdicts_flink_gives() {
    let text = resolve_as::<OrderAmountString>(&snapshot("pojo_order"))
        .unwrap_err()
        .to_string();
    assert_eq!(text, "Order.amount: Double -> String");
    let order = snapshot("pojo_order");
    assert_eq!(
        resolve_as::<OrderWithNote>(&order),
        Ok(Verdict::AfterMigration)
    );
    assert_eq!(
        resolve_as::<OrderRenamed>(&order),
        Ok(Verdict::AfterMigration)
    );
    let side = snapshot("enum");
    assert_eq!(
        resolve(&side, &SideReordered::flink_serializer()),
        Ok(Verdict::AfterMigration)
    );
    assert_eq!(
        resolve(&side, &SideExtended::flink_serializer()),
        Ok(Verdict::AsIs)
    );
    let text = incompatible("enum", &SideWithoutHold::flink_serializer());
    assert_eq!(text, "Side -> Side (constant `HOLD` removed)");
    assert_eq!(incompatible("int", &LongSerializer), "Int -> Long");
    let list = ListSerializer::new(IntSerializer);
    assert_eq!(
        incompatible::<Vec<i32>, _>("list_string", &list),
        "[]: String -> Int"
    );
    let tuple3 = TupleSerializer((StringSerializer, IntSerializer, IntSerializer));
    let text = incompatible::<(String, i32, i32), _>("tuple2", &tuple3);
    assert_eq!(text, "Tuple2<String, Int> -> Tuple3<String, Int, Int>");
    let text = incompatible("nullable_long_padded", &Nullable::new(LongSerializer));
    assert_eq!(
        text,
        "Nullable<Long> -> Nullable<Long> (null padding of 8 bytes)"
    );
}

#[test]
fn kryo_state_is_refused_plainly() {
    let text = incompatible::<LocalDate, _>("kryo_local_date", &LocalDateSerializer);
    assert_eq!(
        text,
        "Kryo(java.time.LocalDate) -> LocalDate (Kryo state: not readable: Flink serialized `java.time.LocalDate` with Kryo, a generic type)"
    );
}

const NAMES: [&str; 16] = [
    "int",
    "string",
    "instant",
    "big_decimal",
    "int_array",
    "local_date",
    "list_string",
    "map_string_int",
    "integer_array",
    "nullable_long_padded",
    "enum",
    "tuple2",
    "row",
    "pojo_order",
    "pojo_event",
    "kryo_local_date",
];

#[test]
fn every_snapshot_golden_is_read_above() {
    let mut files: Vec<String> = std::fs::read_dir(common::golden_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| {
            Some(
                n.strip_prefix("snapshot_")?
                    .strip_suffix(".bin")?
                    .to_owned(),
            )
        })
        .collect();
    files.sort();
    let mut names: Vec<&str> = NAMES.to_vec();
    names.sort_unstable();
    assert_eq!(files, names);
}

#[test]
fn damaged_snapshots_are_errors() {
    for name in NAMES {
        let bytes = golden(&format!("snapshot_{name}"));
        for cut in 0..bytes.len() {
            let r = FlinkSnapshot::read_serializer_snapshot(&mut DataInputView::new(&bytes[..cut]));
            assert!(r.is_err(), "{name}: {cut} bytes read as whole");
        }
        for i in 0..bytes.len() {
            for xor in [0x01, 0x80, 0xff] {
                let mut damaged = bytes.clone();
                damaged[i] ^= xor;
                let _ = FlinkSnapshot::read_serializer_snapshot(&mut DataInputView::new(&damaged));
            }
        }
    }
    let mut unknown = vec![0, 0, 0, 2, 0, 13];
    unknown.extend_from_slice(b"com.x.MySnap!");
    unknown.extend_from_slice(&[0, 0, 0, 1]);
    let r = FlinkSnapshot::read_serializer_snapshot(&mut DataInputView::new(&unknown));
    assert!(
        matches!(&r, Err(Error::UnknownSnapshotKind(k)) if k.starts_with("com.x.MySnap!")),
        "{r:?}"
    );
    let r = FlinkSnapshot::read_serializer_snapshot(&mut DataInputView::new(&[0, 0, 0, 1]));
    assert!(
        matches!(r, Err(Error::UnsupportedSnapshotVersion { version: 1, .. })),
        "{r:?}"
    );
}

/// Reads every value of golden `name` with `reader`.
fn read_all<T>(name: &str, reader: &typeinfo::MigrationReader<T>) -> typeinfo::Result<Vec<T>> {
    let bytes = golden(name);
    let mut input = DataInputView::new(&bytes);
    let mut out = Vec::new();
    while !input.is_empty() {
        out.push(reader.read(&mut input)?);
    }
    Ok(out)
}

fn reader<T>(c: typeinfo::Compatibility<T>) -> typeinfo::MigrationReader<T> {
    match c {
        typeinfo::Compatibility::AfterMigration(r) => r,
        other => panic!("expected after migration, got {other:?}"),
    }
}

/// `Event` keeping two of Flink's fields (the others are skipped by their old snapshots)
/// and adding one.
#[derive(TypeInfo, Debug, PartialEq)]
#[typeinfo(flink_pojo = "FlinkGoldens$Event")]
struct EventSlim {
    #[typeinfo(flink_name = "userId")]
    user_id: Option<String>,
    ts: i64,
    #[typeinfo(default)]
    region: String,
}

/// `Order` with `amount` renamed in Java, its old name kept.
#[derive(TypeInfo, Debug, PartialEq)]
#[typeinfo(flink_pojo = "FlinkGoldens$Order")]
struct OrderRenamedWithAlias {
    #[typeinfo(flink_name = "userId")]
    user_id: String,
    #[typeinfo(flink_alias = "amount")]
    total: f64,
}

/// `Order` without `amount`.
#[derive(TypeInfo, Debug, PartialEq)]
#[typeinfo(flink_pojo = "FlinkGoldens$Order")]
struct OrderUserOnly {
    #[typeinfo(flink_name = "userId")]
    user_id: String,
}

#[test]
fn added_and_removed_pojo_fields_migrate_flinks_bytes() {
    let order = snapshot("pojo_order");
    let with_note = reader(resolve_pojo::<OrderWithNote>(&order));
    let read = read_all("pojo_order", &with_note).unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(
        (read[0].user_id.as_str(), read[0].amount, &read[0].note),
        ("u1", 12.5, &None)
    );
    let user_only = reader(resolve_pojo::<OrderUserOnly>(&order));
    assert_eq!(
        read_all("pojo_order", &user_only).unwrap(),
        [OrderUserOnly {
            user_id: "u1".into()
        }]
    );
    // A renamed field without a default: Flink's state has no value for it.
    let renamed = reader(resolve_pojo::<OrderRenamed>(&order));
    let err = read_all("pojo_order", &renamed).unwrap_err().to_string();
    assert!(
        err.contains("field `total` of Flink POJO `FlinkGoldens$Order` is not in Flink's state"),
        "{err}"
    );
    let aliased = reader(resolve_pojo::<OrderRenamedWithAlias>(&order));
    let read = read_all("pojo_order", &aliased).unwrap();
    assert_eq!(
        read,
        [OrderRenamedWithAlias {
            user_id: "u1".into(),
            total: 12.5
        }]
    );
    // Twelve of Flink's fields skipped: lists, maps, a nested POJO, decimals, arrays, nulls.
    let slim = reader(resolve_pojo::<EventSlim>(&snapshot("pojo_event")));
    let events = read_all("pojo_event", &slim).unwrap();
    let expected = [
        EventSlim {
            user_id: Some("u7".into()),
            ts: 1_700_000_000_000,
            region: String::new(),
        },
        EventSlim {
            user_id: None,
            ts: 0,
            region: String::new(),
        },
    ];
    assert_eq!(events, expected);
    let incompatible = resolve_pojo::<OrderAmountString>(&order);
    assert!(matches!(
        incompatible,
        typeinfo::Compatibility::Incompatible(_)
    ));
    assert!(matches!(
        resolve_pojo::<Order>(&order),
        typeinfo::Compatibility::AsIs
    ));
}

#[test]
fn moved_enum_constants_migrate_by_name() {
    let side = snapshot("enum");
    let moved = reader(resolve_enum::<SideReordered>(&side));
    let read: Vec<String> = read_all("enum", &moved)
        .unwrap()
        .iter()
        .map(|s| format!("{s:?}"))
        .collect();
    assert_eq!(read, ["Buy", "Hold", "Sell"]);
    assert!(matches!(
        resolve_enum::<SideExtended>(&side),
        typeinfo::Compatibility::AsIs
    ));
    assert!(matches!(
        resolve_enum::<SideWithoutHold>(&side),
        typeinfo::Compatibility::Incompatible(_)
    ));
}

#[test]
fn snapshots_skip_exactly_the_values_flink_wrote() {
    let pairs = [
        "int",
        "string",
        "instant",
        "big_decimal",
        "int_array",
        "local_date",
        "list_string",
        "map_string_int",
        "integer_array",
        "nullable_long_padded",
        "enum",
        "tuple2",
        "row",
        "pojo_order",
        "pojo_event",
    ];
    for name in pairs {
        let s = snapshot(name);
        let bytes = golden(name);
        let mut input = DataInputView::new(&bytes);
        while !input.is_empty() {
            skip_value(&s, &mut input).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    let kryo = snapshot("kryo_local_date");
    let err = skip_value(&kryo, &mut DataInputView::new(&[0; 8])).unwrap_err();
    assert!(
        err.to_string().contains("Kryo state: not readable"),
        "{err}"
    );
}
