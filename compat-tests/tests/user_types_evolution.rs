//! Reads the committed v1 fixtures of the user types (`fixtures/v1/user/`) with today's
//! versions of those types (`src/user_types.rs`: v2, v3, ...).
//!
//! Every test reads the committed files; none re-creates v1 bytes. For each version:
//! the fixture's snapshot is resolved against today's serializer and the verdict asserted;
//! for a compatible verdict every stored value is read (migrated) and compared, every
//! field, with the expected value written out here; for an incompatible one the verdict is
//! asserted before any value is read and the message is pinned with `insta`
//! (`tests/snapshots/user_types_evolution__*.snap`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

use typeinfo::{
    Compatibility, DataInputView, SerializerSnapshot, SnapshotRegistry, TypeInfo, TypeSerializer,
    Value, Verdict,
};
use typeinfo_compat_tests::golden::{Fixture, BIN_EXT, SNAPSHOT_EXT, WRITE_COMMAND};
use typeinfo_compat_tests::user_types::{
    user_cases, user_fixture_dir, v1, v10, v11, v12, v13, v14, v15, v16, v17, v2, v3, v4, v5, v6,
    v7, v8, v9,
};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn s(v: &str) -> String {
    v.to_owned()
}

/// A committed user fixture: its decoded snapshot and its bytes.
struct Stored {
    snapshot: SerializerSnapshot,
    bin: Vec<u8>,
}

/// Reads `fixtures/v1/user/<name>.{bin,snapshot}`.
fn stored(name: &str) -> Stored {
    let fixture = Fixture::read(&user_fixture_dir(), name).unwrap_or_else(|e| panic!("{e}"));
    let snapshot = SerializerSnapshot::from_bytes(&fixture.snapshot)
        .unwrap_or_else(|e| panic!("fixtures/v1/user/{name}.snapshot does not decode: {e}"));
    Stored {
        snapshot,
        bin: fixture.bin,
    }
}

/// Equal by `PartialEq`, and by `Debug`, which tells apart what `PartialEq` calls equal
/// (`-0.0` and `0.0`).
fn assert_same<T: Debug + PartialEq>(what: &str, actual: &T, expected: &T) {
    assert_eq!(actual, expected, "{what}");
    assert_eq!(
        format!("{actual:?}"),
        format!("{expected:?}"),
        "{what} (compared by Debug: float signs)"
    );
}

/// Reads the committed fixture `name` with today's type `T`: resolves `T`'s serializer
/// against the fixture's snapshot and asserts `verdict`; reads exactly `expected.len()`
/// values with the verdict's reader (migrating if need be), consuming every byte, and
/// compares each, every field, with `expected`. Each migrated value also survives a round
/// trip through today's serializer (what a restore writes back).
#[track_caller]
fn assert_reads<T>(name: &str, verdict: Verdict, expected: &[T])
where
    T: TypeInfo + Debug + PartialEq,
{
    let type_name = std::any::type_name::<T>();
    let stored = stored(name);
    let serializer = typeinfo::serializer::<T>().expect("today's serializer");
    let compatibility = serializer.resolve(&stored.snapshot, &SnapshotRegistry::default());
    assert_eq!(
        compatibility.verdict(),
        verdict,
        "fixture `{name}` read as `{type_name}`: {compatibility:?} (old snapshot {:?})",
        stored.snapshot
    );
    let reader = compatibility
        .into_reader(serializer.clone())
        .expect("a compatible verdict has a reader");
    let mut input = DataInputView::new(&stored.bin);
    for (i, expected) in expected.iter().enumerate() {
        let start = input.position();
        let actual = reader.read(&mut input).unwrap_or_else(|e| {
            panic!(
                "fixture `{name}` as `{type_name}`: value #{i} fails to read at byte {start}: {e}"
            )
        });
        assert_same(
            &format!("fixture `{name}` as `{type_name}`, value #{i}"),
            &actual,
            expected,
        );
        let bytes = typeinfo::to_bytes(&serializer, &actual)
            .expect("today's serializer writes the migrated value");
        let again = typeinfo::from_bytes(&serializer, &bytes)
            .expect("today's serializer reads its own bytes");
        assert_same(
            &format!("fixture `{name}` as `{type_name}`, value #{i}, written again"),
            &again,
            expected,
        );
    }
    assert!(
        input.is_empty(),
        "fixture `{name}` as `{type_name}`: {} bytes left after the {} expected values",
        input.remaining(),
        expected.len()
    );
}

/// Resolves today's `T` against the committed fixture `name`, asserts the verdict is
/// incompatible (no value is read) and returns the message.
#[track_caller]
fn incompatibility<T: TypeInfo>(name: &str) -> String {
    let type_name = std::any::type_name::<T>();
    let stored = stored(name);
    let serializer = typeinfo::serializer::<T>().expect("today's serializer");
    let compatibility = serializer.resolve(&stored.snapshot, &SnapshotRegistry::default());
    let Compatibility::Incompatible(inc) = compatibility else {
        panic!(
            "fixture `{name}` read as `{type_name}`: expected Incompatible, got {compatibility:?}"
        );
    };
    // Reading is refused too: the error carries the same incompatibility.
    let refused = serializer
        .resolve(&stored.snapshot, &SnapshotRegistry::default())
        .into_reader(serializer.clone());
    assert_eq!(refused.err().as_ref(), Some(&inc));
    inc.to_string()
}

fn line_item(sku: &str, qty: i32) -> v1::LineItem {
    v1::LineItem { sku: s(sku), qty }
}

// ---------------------------------------------------------------------------------------
// v1: the committed fixtures themselves
// ---------------------------------------------------------------------------------------

/// Every user case's committed fixture passes the golden check: decodes to the v1 values,
/// today's bytes are identical, the snapshot resolves as is, the registry restores it and
/// the restored serializer reads, skips and writes back every value.
#[test]
fn committed_user_fixtures_pass_the_golden_check() {
    let dir = user_fixture_dir();
    let mut failures = Vec::new();
    for case in user_cases() {
        match Fixture::read(&dir, case.name()) {
            Ok(fixture) => {
                let problems = case.check(&fixture);
                if !problems.is_empty() {
                    failures.push(format!(
                        "{} ({}):\n  - {}",
                        case.name(),
                        case.type_name(),
                        problems.join("\n  - ")
                    ));
                }
            }
            Err(e) => failures.push(format!("{} ({}): {e}", case.name(), case.type_name())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The unchanged v1 types read their own fixtures as is, giving the v1 values.
#[test]
fn v1_reads_its_fixtures_as_is() {
    assert_reads("line_item", Verdict::AsIs, &v1::line_items());
    assert_reads("order", Verdict::AsIs, &v1::orders());
    assert_reads("address", Verdict::AsIs, &v1::addresses());
    assert_reads("customer", Verdict::AsIs, &v1::customers());
    assert_reads("payment", Verdict::AsIs, &v1::payments());
    assert_reads("envelope_order", Verdict::AsIs, &v1::envelope_orders());
}

fn vs(v: &str) -> Value {
    Value::String(s(v))
}

fn vsome(v: Value) -> Value {
    Value::Option(Some(Box::new(v)))
}

fn vstruct(name: &str, fields: Vec<(&str, Value)>) -> Value {
    Value::Struct {
        name: s(name).into(),
        fields: fields.into_iter().map(|(n, v)| (s(n).into(), v)).collect(),
    }
}

fn venum(index: u32, variant: &str, fields: Vec<(&str, Value)>) -> Value {
    Value::Enum {
        name: s("Payment").into(),
        index,
        variant: s(variant).into(),
        fields: fields.into_iter().map(|(n, v)| (s(n).into(), v)).collect(),
    }
}

fn vline(sku: &str, qty: i32) -> Value {
    vstruct("LineItem", vec![("sku", vs(sku)), ("qty", Value::I32(qty))])
}

fn vaddress(street: &str, city: &str, zip: Option<&str>) -> Value {
    let zip = Value::Option(zip.map(|z| Box::new(vs(z))));
    vstruct(
        "Address",
        vec![("street", vs(street)), ("city", vs(city)), ("zip", zip)],
    )
}

fn vorders() -> Vec<Value> {
    vec![
        vstruct(
            "Order",
            vec![
                ("id", Value::U64(1)),
                ("user_id", vs("u-1")),
                ("amount", Value::F32(19.99)),
                ("note", vsome(vs("leave at door"))),
                ("tags", Value::List(vec![vs("gift"), vs("express")])),
                (
                    "items",
                    Value::List(vec![vline("A-1", 2), vline("B-7", -3)]),
                ),
            ],
        ),
        vstruct(
            "Order",
            vec![
                ("id", Value::U64(u64::MAX)),
                ("user_id", vs("")),
                ("amount", Value::F32(-0.0)),
                ("note", Value::Option(None)),
                ("tags", Value::List(vec![])),
                ("items", Value::List(vec![])),
            ],
        ),
        vstruct(
            "Order",
            vec![
                ("id", Value::U64(0)),
                ("user_id", vs("ü-42")),
                ("amount", Value::F32(f32::INFINITY)),
                ("note", vsome(vs(""))),
                ("tags", Value::List(vec![vs("")])),
                ("items", Value::List(vec![vline("", i32::MIN)])),
            ],
        ),
    ]
}

/// The serializer restored from each v1 snapshot (`SnapshotRegistry::default()`, no Rust
/// type) reads every stored value into the expected `Value` tree, consuming every byte.
#[test]
fn restored_serializers_read_every_v1_fixture_into_values() {
    let orders = vorders();
    let expected: Vec<(&str, Vec<Value>)> = vec![
        (
            "line_item",
            vec![
                vline("A-1", 2),
                vline("", i32::MIN),
                vline("ünï-€-😀", i32::MAX),
            ],
        ),
        ("order", orders.clone()),
        (
            "address",
            vec![
                vaddress("1 Main St", "Springfield", Some("12345")),
                vaddress("", "Zürich", None),
            ],
        ),
        (
            "customer",
            vec![
                vstruct(
                    "Customer",
                    vec![
                        ("name", vs("Ada")),
                        (
                            "address",
                            vaddress("1 Main St", "Springfield", Some("12345")),
                        ),
                        (
                            "prefs",
                            Value::Map(vec![
                                (vs("lang"), Value::I16(1)),
                                (vs("theme"), Value::I16(-2)),
                            ]),
                        ),
                    ],
                ),
                vstruct(
                    "Customer",
                    vec![
                        ("name", vs("")),
                        ("address", vaddress("", "", None)),
                        ("prefs", Value::Map(vec![])),
                    ],
                ),
                vstruct(
                    "Customer",
                    vec![
                        ("name", vs("Bob")),
                        ("address", vaddress("Bahnhofstr. 1", "Zürich", Some("8001"))),
                        (
                            "prefs",
                            Value::Map(vec![
                                (vs("a"), Value::I16(i16::MIN)),
                                (vs("z"), Value::I16(i16::MAX)),
                            ]),
                        ),
                    ],
                ),
            ],
        ),
        (
            "payment",
            vec![
                venum(0, "Cash", vec![]),
                venum(
                    1,
                    "Card",
                    vec![("last4", Value::U16(4242)), ("network", vs("visa"))],
                ),
                venum(
                    2,
                    "Voucher",
                    vec![("0", vs("SPRING")), ("1", Value::I32(500))],
                ),
                venum(
                    1,
                    "Card",
                    vec![("last4", Value::U16(u16::MAX)), ("network", vs(""))],
                ),
                venum(
                    2,
                    "Voucher",
                    vec![("0", vs("")), ("1", Value::I32(i32::MIN))],
                ),
            ],
        ),
        (
            "envelope_order",
            vec![
                vstruct(
                    "Envelope",
                    vec![("seq", Value::U64(0)), ("body", orders[0].clone())],
                ),
                vstruct(
                    "Envelope",
                    vec![("seq", Value::U64(u64::MAX)), ("body", orders[1].clone())],
                ),
            ],
        ),
    ];
    let case_names: BTreeSet<String> = user_cases().iter().map(|c| c.name().to_owned()).collect();
    let checked: BTreeSet<String> = expected.iter().map(|(n, _)| s(n)).collect();
    assert_eq!(
        checked, case_names,
        "every user fixture has its expected Values here"
    );

    let registry = SnapshotRegistry::default();
    for (name, values) in expected {
        let stored = stored(name);
        let restored = registry
            .restore(&stored.snapshot)
            .unwrap_or_else(|e| panic!("`{name}` does not restore: {e}"));
        let mut input = DataInputView::new(&stored.bin);
        for (i, expected) in values.iter().enumerate() {
            let value = restored
                .deserialize(&mut input)
                .unwrap_or_else(|e| panic!("`{name}` value #{i}: {e}"));
            assert_same(&format!("`{name}` value #{i} as Value"), &value, expected);
        }
        assert!(
            input.is_empty(),
            "`{name}`: {} bytes left after {} values",
            input.remaining(),
            values.len()
        );
    }
}

/// Every file in `fixtures/v1/user/` belongs to a user case (cases are never removed or
/// renamed), and every case has both files.
#[test]
fn every_user_fixture_file_has_a_case() {
    let dir = user_fixture_dir();
    let names: BTreeSet<String> = user_cases().iter().map(|c| c.name().to_owned()).collect();
    let mut seen = BTreeSet::new();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "cannot list {}: {e}; write the fixtures with `{WRITE_COMMAND}`",
            dir.display()
        )
    });
    let mut orphans = Vec::new();
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        let ext = path
            .extension()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if (ext == BIN_EXT || ext == SNAPSHOT_EXT) && names.contains(&stem) {
            seen.insert(format!("{stem}.{ext}"));
        } else {
            orphans.push(path.display().to_string());
        }
    }
    assert!(
        orphans.is_empty(),
        "files in {} without a user case:\n{}",
        dir.display(),
        orphans.join("\n")
    );
    let missing: Vec<String> = names
        .iter()
        .flat_map(|n| [format!("{n}.{BIN_EXT}"), format!("{n}.{SNAPSHOT_EXT}")])
        .filter(|f| !seen.contains(f))
        .collect();
    assert!(
        missing.is_empty(),
        "missing user fixtures {missing:?}: write them with `{WRITE_COMMAND}`"
    );
}

/// A readable dump of today's v1 bytes and snapshots: a layout change of derived types
/// shows up as a diff of `tests/snapshots/user_types_evolution__user_hex.snap`.
#[test]
fn user_hex() {
    let mut dump = String::new();
    for case in user_cases() {
        dump.push_str(
            &case
                .hex_dump()
                .unwrap_or_else(|e| panic!("{}: {e}", case.name())),
        );
        dump.push('\n');
    }
    insta::assert_snapshot!("user_hex", dump);
}

// ---------------------------------------------------------------------------------------
// v2: identical schema
// ---------------------------------------------------------------------------------------

#[test]
fn v2_identical_schema_reads_as_is() {
    use v2::{Client, Message, OrderLine, PaymentMethod, PostalAddress, PurchaseOrder};

    assert_reads(
        "line_item",
        Verdict::AsIs,
        &[
            OrderLine {
                sku: s("A-1"),
                qty: 2,
            },
            OrderLine {
                sku: s(""),
                qty: i32::MIN,
            },
            OrderLine {
                sku: s("ünï-€-😀"),
                qty: i32::MAX,
            },
        ],
    );
    let orders = [
        PurchaseOrder {
            id: 1,
            user_id: s("u-1"),
            amount: 19.99,
            note: Some(s("leave at door")),
            tags: vec![s("gift"), s("express")],
            items: vec![
                OrderLine {
                    sku: s("A-1"),
                    qty: 2,
                },
                OrderLine {
                    sku: s("B-7"),
                    qty: -3,
                },
            ],
        },
        PurchaseOrder {
            id: u64::MAX,
            user_id: s(""),
            amount: -0.0,
            note: None,
            tags: vec![],
            items: vec![],
        },
        PurchaseOrder {
            id: 0,
            user_id: s("ü-42"),
            amount: f32::INFINITY,
            note: Some(s("")),
            tags: vec![s("")],
            items: vec![OrderLine {
                sku: s(""),
                qty: i32::MIN,
            }],
        },
    ];
    assert_reads("order", Verdict::AsIs, &orders);
    assert_reads(
        "address",
        Verdict::AsIs,
        &[
            PostalAddress {
                street: s("1 Main St"),
                city: s("Springfield"),
                zip: Some(s("12345")),
            },
            PostalAddress {
                street: s(""),
                city: s("Zürich"),
                zip: None,
            },
        ],
    );
    assert_reads(
        "customer",
        Verdict::AsIs,
        &[
            Client {
                name: s("Ada"),
                address: PostalAddress {
                    street: s("1 Main St"),
                    city: s("Springfield"),
                    zip: Some(s("12345")),
                },
                prefs: BTreeMap::from([(s("lang"), 1), (s("theme"), -2)]),
            },
            Client {
                name: s(""),
                address: PostalAddress {
                    street: s(""),
                    city: s(""),
                    zip: None,
                },
                prefs: BTreeMap::new(),
            },
            Client {
                name: s("Bob"),
                address: PostalAddress {
                    street: s("Bahnhofstr. 1"),
                    city: s("Zürich"),
                    zip: Some(s("8001")),
                },
                prefs: BTreeMap::from([(s("a"), i16::MIN), (s("z"), i16::MAX)]),
            },
        ],
    );
    assert_reads(
        "payment",
        Verdict::AsIs,
        &[
            PaymentMethod::Cash,
            PaymentMethod::Card {
                last4: 4242,
                network: s("visa"),
            },
            PaymentMethod::Voucher(s("SPRING"), 500),
            PaymentMethod::Card {
                last4: u16::MAX,
                network: s(""),
            },
            PaymentMethod::Voucher(s(""), i32::MIN),
        ],
    );
    let [first, second, _] = orders;
    assert_reads(
        "envelope_order",
        Verdict::AsIs,
        &[
            Message {
                seq: 0,
                body: first,
            },
            Message {
                seq: u64::MAX,
                body: second,
            },
        ],
    );
}

// ---------------------------------------------------------------------------------------
// v3: fields added
// ---------------------------------------------------------------------------------------

#[test]
fn v3_added_fields_take_their_defaults() {
    use v3::{Address, Customer, Envelope, Order, Payment};

    let orders = [
        Order {
            id: 1,
            priority: 0,
            user_id: s("u-1"),
            amount: 19.99,
            currency: s("EUR"),
            note: Some(s("leave at door")),
            tags: vec![s("gift"), s("express")],
            items: vec![line_item("A-1", 2), line_item("B-7", -3)],
            coupon: None,
            cached_total_cents: 0,
        },
        Order {
            id: u64::MAX,
            priority: 0,
            user_id: s(""),
            amount: -0.0,
            currency: s("EUR"),
            note: None,
            tags: vec![],
            items: vec![],
            coupon: None,
            cached_total_cents: 0,
        },
        Order {
            id: 0,
            priority: 0,
            user_id: s("ü-42"),
            amount: f32::INFINITY,
            currency: s("EUR"),
            note: Some(s("")),
            tags: vec![s("")],
            items: vec![line_item("", i32::MIN)],
            coupon: None,
            cached_total_cents: 0,
        },
    ];
    assert_reads("order", Verdict::AfterMigration, &orders);
    assert_reads(
        "customer",
        Verdict::AfterMigration,
        &[
            Customer {
                email: None,
                name: s("Ada"),
                address: Address {
                    street: s("1 Main St"),
                    city: s("Springfield"),
                    zip: Some(s("12345")),
                },
                prefs: BTreeMap::from([(s("lang"), 1), (s("theme"), -2)]),
                vip: false,
            },
            Customer {
                email: None,
                name: s(""),
                address: Address {
                    street: s(""),
                    city: s(""),
                    zip: None,
                },
                prefs: BTreeMap::new(),
                vip: false,
            },
            Customer {
                email: None,
                name: s("Bob"),
                address: Address {
                    street: s("Bahnhofstr. 1"),
                    city: s("Zürich"),
                    zip: Some(s("8001")),
                },
                prefs: BTreeMap::from([(s("a"), i16::MIN), (s("z"), i16::MAX)]),
                vip: false,
            },
        ],
    );
    assert_reads(
        "payment",
        Verdict::AfterMigration,
        &[
            Payment::Cash,
            Payment::Card {
                last4: 4242,
                holder: None,
                network: s("visa"),
            },
            Payment::Voucher(s("SPRING"), 500, s("legacy")),
            Payment::Card {
                last4: u16::MAX,
                holder: None,
                network: s(""),
            },
            Payment::Voucher(s(""), i32::MIN, s("legacy")),
        ],
    );
    let [first, second, _] = orders;
    assert_reads(
        "envelope_order",
        Verdict::AfterMigration,
        &[
            Envelope {
                seq: 0,
                attempts: 1,
                body: first,
            },
            Envelope {
                seq: u64::MAX,
                attempts: 1,
                body: second,
            },
        ],
    );
}

// ---------------------------------------------------------------------------------------
// v4: fields removed
// ---------------------------------------------------------------------------------------

#[test]
fn v4_removed_fields_are_skipped() {
    use v4::{Address, Customer, Envelope, Order, Payment};

    let orders = [
        Order {
            id: 1,
            user_id: s("u-1"),
            amount: 19.99,
        },
        Order {
            id: u64::MAX,
            user_id: s(""),
            amount: -0.0,
        },
        Order {
            id: 0,
            user_id: s("ü-42"),
            amount: f32::INFINITY,
        },
    ];
    assert_reads("order", Verdict::AfterMigration, &orders);
    assert_reads(
        "address",
        Verdict::AfterMigration,
        &[
            Address {
                city: s("Springfield"),
            },
            Address { city: s("Zürich") },
        ],
    );
    assert_reads(
        "customer",
        Verdict::AfterMigration,
        &[
            Customer { name: s("Ada") },
            Customer { name: s("") },
            Customer { name: s("Bob") },
        ],
    );
    assert_reads(
        "payment",
        Verdict::AfterMigration,
        &[
            Payment::Cash,
            Payment::Card { last4: 4242 },
            Payment::Voucher(s("SPRING")),
            Payment::Card { last4: u16::MAX },
            Payment::Voucher(s("")),
        ],
    );
    let [first, second, _] = orders;
    assert_reads(
        "envelope_order",
        Verdict::AfterMigration,
        &[
            Envelope {
                seq: 0,
                body: first,
            },
            Envelope {
                seq: u64::MAX,
                body: second,
            },
        ],
    );
}

// ---------------------------------------------------------------------------------------
// v5: fields reordered
// ---------------------------------------------------------------------------------------

#[test]
fn v5_reordered_fields_are_matched_by_name() {
    use v5::{Address, Customer, Envelope, LineItem, Order, Payment};

    assert_reads(
        "line_item",
        Verdict::AfterMigration,
        &[
            LineItem {
                qty: 2,
                sku: s("A-1"),
            },
            LineItem {
                qty: i32::MIN,
                sku: s(""),
            },
            LineItem {
                qty: i32::MAX,
                sku: s("ünï-€-😀"),
            },
        ],
    );
    let orders = [
        Order {
            items: vec![
                LineItem {
                    qty: 2,
                    sku: s("A-1"),
                },
                LineItem {
                    qty: -3,
                    sku: s("B-7"),
                },
            ],
            amount: 19.99,
            note: Some(s("leave at door")),
            id: 1,
            tags: vec![s("gift"), s("express")],
            user_id: s("u-1"),
        },
        Order {
            items: vec![],
            amount: -0.0,
            note: None,
            id: u64::MAX,
            tags: vec![],
            user_id: s(""),
        },
        Order {
            items: vec![LineItem {
                qty: i32::MIN,
                sku: s(""),
            }],
            amount: f32::INFINITY,
            note: Some(s("")),
            id: 0,
            tags: vec![s("")],
            user_id: s("ü-42"),
        },
    ];
    assert_reads("order", Verdict::AfterMigration, &orders);
    assert_reads(
        "customer",
        Verdict::AfterMigration,
        &[
            Customer {
                prefs: BTreeMap::from([(s("lang"), 1), (s("theme"), -2)]),
                address: Address {
                    street: s("1 Main St"),
                    city: s("Springfield"),
                    zip: Some(s("12345")),
                },
                name: s("Ada"),
            },
            Customer {
                prefs: BTreeMap::new(),
                address: Address {
                    street: s(""),
                    city: s(""),
                    zip: None,
                },
                name: s(""),
            },
            Customer {
                prefs: BTreeMap::from([(s("a"), i16::MIN), (s("z"), i16::MAX)]),
                address: Address {
                    street: s("Bahnhofstr. 1"),
                    city: s("Zürich"),
                    zip: Some(s("8001")),
                },
                name: s("Bob"),
            },
        ],
    );
    assert_reads(
        "payment",
        Verdict::AfterMigration,
        &[
            Payment::Cash,
            Payment::Card {
                network: s("visa"),
                last4: 4242,
            },
            Payment::Voucher(s("SPRING"), 500),
            Payment::Card {
                network: s(""),
                last4: u16::MAX,
            },
            Payment::Voucher(s(""), i32::MIN),
        ],
    );
    let [first, second, _] = orders;
    assert_reads(
        "envelope_order",
        Verdict::AfterMigration,
        &[
            Envelope {
                body: first,
                seq: 0,
            },
            Envelope {
                body: second,
                seq: u64::MAX,
            },
        ],
    );
}

// ---------------------------------------------------------------------------------------
// v6: renamed through alias
// ---------------------------------------------------------------------------------------

#[test]
fn v6_renamed_fields_and_variant_are_read_through_aliases() {
    use v6::{Address, Customer, Envelope, Order, Payment};

    let orders = [
        Order {
            id: 1,
            customer_id: s("u-1"),
            total: 19.99,
            note: Some(s("leave at door")),
            labels: vec![s("gift"), s("express")],
            items: vec![line_item("A-1", 2), line_item("B-7", -3)],
        },
        Order {
            id: u64::MAX,
            customer_id: s(""),
            total: -0.0,
            note: None,
            labels: vec![],
            items: vec![],
        },
        Order {
            id: 0,
            customer_id: s("ü-42"),
            total: f32::INFINITY,
            note: Some(s("")),
            labels: vec![s("")],
            items: vec![line_item("", i32::MIN)],
        },
    ];
    assert_reads("order", Verdict::AfterMigration, &orders);
    assert_reads(
        "customer",
        Verdict::AfterMigration,
        &[
            Customer {
                full_name: s("Ada"),
                address: Address {
                    street: s("1 Main St"),
                    city: s("Springfield"),
                    zip: Some(s("12345")),
                },
                prefs: BTreeMap::from([(s("lang"), 1), (s("theme"), -2)]),
            },
            Customer {
                full_name: s(""),
                address: Address {
                    street: s(""),
                    city: s(""),
                    zip: None,
                },
                prefs: BTreeMap::new(),
            },
            Customer {
                full_name: s("Bob"),
                address: Address {
                    street: s("Bahnhofstr. 1"),
                    city: s("Zürich"),
                    zip: Some(s("8001")),
                },
                prefs: BTreeMap::from([(s("a"), i16::MIN), (s("z"), i16::MAX)]),
            },
        ],
    );
    assert_reads(
        "payment",
        Verdict::AfterMigration,
        &[
            Payment::Cash,
            Payment::Card {
                last4: 4242,
                scheme: s("visa"),
            },
            Payment::GiftCard(s("SPRING"), 500),
            Payment::Card {
                last4: u16::MAX,
                scheme: s(""),
            },
            Payment::GiftCard(s(""), i32::MIN),
        ],
    );
    let [first, second, _] = orders;
    assert_reads(
        "envelope_order",
        Verdict::AfterMigration,
        &[
            Envelope {
                seq: 0,
                body: first,
            },
            Envelope {
                seq: u64::MAX,
                body: second,
            },
        ],
    );
}

// ---------------------------------------------------------------------------------------
// v7, v8: variants added
// ---------------------------------------------------------------------------------------

#[test]
fn v7_variant_added_at_the_end_migrates() {
    use v7::Payment;

    assert_reads(
        "payment",
        Verdict::AfterMigration,
        &[
            Payment::Cash,
            Payment::Card {
                last4: 4242,
                network: s("visa"),
            },
            Payment::Voucher(s("SPRING"), 500),
            Payment::Card {
                last4: u16::MAX,
                network: s(""),
            },
            Payment::Voucher(s(""), i32::MIN),
        ],
    );
}

#[test]
fn v8_variant_added_first_and_variants_reordered_migrates_by_name() {
    use v8::Payment;

    assert_reads(
        "payment",
        Verdict::AfterMigration,
        &[
            Payment::Cash,
            Payment::Card {
                last4: 4242,
                network: s("visa"),
            },
            Payment::Voucher(s("SPRING"), 500),
            Payment::Card {
                last4: u16::MAX,
                network: s(""),
            },
            Payment::Voucher(s(""), i32::MIN),
        ],
    );
}

// ---------------------------------------------------------------------------------------
// v9: widening
// ---------------------------------------------------------------------------------------

#[test]
fn v9_widened_fields_migrate() {
    use v9::{Address, Customer, Envelope, LineItem, Order, Payment};

    assert_reads(
        "line_item",
        Verdict::AfterMigration,
        &[
            LineItem {
                sku: s("A-1"),
                qty: 2,
            },
            LineItem {
                sku: s(""),
                qty: -2_147_483_648,
            },
            LineItem {
                sku: s("ünï-€-😀"),
                qty: 2_147_483_647,
            },
        ],
    );
    let orders = [
        Order {
            id: 1,
            user_id: Some(s("u-1")),
            // 19.99f32 widened exactly: the f64 nearest to 19.99 is another number.
            amount: 19.989_999_771_118_164,
            note: Some(s("leave at door")),
            tags: vec![Some(s("gift")), Some(s("express"))],
            items: vec![
                LineItem {
                    sku: s("A-1"),
                    qty: 2,
                },
                LineItem {
                    sku: s("B-7"),
                    qty: -3,
                },
            ],
        },
        Order {
            id: u64::MAX,
            user_id: Some(s("")),
            amount: -0.0,
            note: None,
            tags: vec![],
            items: vec![],
        },
        Order {
            id: 0,
            user_id: Some(s("ü-42")),
            amount: f64::INFINITY,
            note: Some(s("")),
            tags: vec![Some(s(""))],
            items: vec![LineItem {
                sku: s(""),
                qty: -2_147_483_648,
            }],
        },
    ];
    assert_reads("order", Verdict::AfterMigration, &orders);
    assert_reads(
        "address",
        Verdict::AfterMigration,
        &[
            Address {
                street: s("1 Main St"),
                city: Some(s("Springfield")),
                zip: Some(s("12345")),
            },
            Address {
                street: s(""),
                city: Some(s("Zürich")),
                zip: None,
            },
        ],
    );
    assert_reads(
        "customer",
        Verdict::AfterMigration,
        &[
            Customer {
                name: s("Ada"),
                address: Address {
                    street: s("1 Main St"),
                    city: Some(s("Springfield")),
                    zip: Some(s("12345")),
                },
                prefs: BTreeMap::from([(s("lang"), 1), (s("theme"), -2)]),
            },
            Customer {
                name: s(""),
                address: Address {
                    street: s(""),
                    city: Some(s("")),
                    zip: None,
                },
                prefs: BTreeMap::new(),
            },
            Customer {
                name: s("Bob"),
                address: Address {
                    street: s("Bahnhofstr. 1"),
                    city: Some(s("Zürich")),
                    zip: Some(s("8001")),
                },
                prefs: BTreeMap::from([(s("a"), -32_768), (s("z"), 32_767)]),
            },
        ],
    );
    assert_reads(
        "payment",
        Verdict::AfterMigration,
        &[
            Payment::Cash,
            Payment::Card {
                last4: 4242,
                network: Some(s("visa")),
            },
            Payment::Voucher(s("SPRING"), 500),
            Payment::Card {
                last4: 65_535,
                network: Some(s("")),
            },
            Payment::Voucher(s(""), -2_147_483_648),
        ],
    );
    let [first, second, _] = orders;
    assert_reads(
        "envelope_order",
        Verdict::AfterMigration,
        &[
            Envelope {
                seq: 0,
                body: first,
            },
            Envelope {
                seq: u64::MAX,
                body: second,
            },
        ],
    );
}

// ---------------------------------------------------------------------------------------
// v10: only nested types changed
// ---------------------------------------------------------------------------------------

#[test]
fn v10_nested_changes_migrate_the_enclosing_types() {
    use v10::{Address, Customer, Envelope, LineItem, Order};

    assert_reads(
        "line_item",
        Verdict::AfterMigration,
        &[
            LineItem {
                code: s("A-1"),
                qty: 2,
                unit_price_cents: 0,
            },
            LineItem {
                code: s(""),
                qty: i32::MIN,
                unit_price_cents: 0,
            },
            LineItem {
                code: s("ünï-€-😀"),
                qty: i32::MAX,
                unit_price_cents: 0,
            },
        ],
    );
    let orders = [
        Order {
            id: 1,
            user_id: s("u-1"),
            amount: 19.99,
            note: Some(s("leave at door")),
            tags: vec![s("gift"), s("express")],
            items: vec![
                LineItem {
                    code: s("A-1"),
                    qty: 2,
                    unit_price_cents: 0,
                },
                LineItem {
                    code: s("B-7"),
                    qty: -3,
                    unit_price_cents: 0,
                },
            ],
        },
        Order {
            id: u64::MAX,
            user_id: s(""),
            amount: -0.0,
            note: None,
            tags: vec![],
            items: vec![],
        },
        Order {
            id: 0,
            user_id: s("ü-42"),
            amount: f32::INFINITY,
            note: Some(s("")),
            tags: vec![s("")],
            items: vec![LineItem {
                code: s(""),
                qty: i32::MIN,
                unit_price_cents: 0,
            }],
        },
    ];
    assert_reads("order", Verdict::AfterMigration, &orders);
    assert_reads(
        "address",
        Verdict::AfterMigration,
        &[
            Address {
                street: s("1 Main St"),
                city: s("Springfield"),
                country: s("CH"),
            },
            Address {
                street: s(""),
                city: s("Zürich"),
                country: s("CH"),
            },
        ],
    );
    assert_reads(
        "customer",
        Verdict::AfterMigration,
        &[
            Customer {
                name: s("Ada"),
                address: Address {
                    street: s("1 Main St"),
                    city: s("Springfield"),
                    country: s("CH"),
                },
                prefs: BTreeMap::from([(s("lang"), 1), (s("theme"), -2)]),
            },
            Customer {
                name: s(""),
                address: Address {
                    street: s(""),
                    city: s(""),
                    country: s("CH"),
                },
                prefs: BTreeMap::new(),
            },
            Customer {
                name: s("Bob"),
                address: Address {
                    street: s("Bahnhofstr. 1"),
                    city: s("Zürich"),
                    country: s("CH"),
                },
                prefs: BTreeMap::from([(s("a"), i16::MIN), (s("z"), i16::MAX)]),
            },
        ],
    );
    let [first, second, _] = orders;
    assert_reads(
        "envelope_order",
        Verdict::AfterMigration,
        &[
            Envelope {
                seq: 0,
                body: first,
            },
            Envelope {
                seq: u64::MAX,
                body: second,
            },
        ],
    );
}

// ---------------------------------------------------------------------------------------
// v11 .. v16: incompatible changes
// ---------------------------------------------------------------------------------------

#[test]
fn v11_field_type_changed_is_incompatible() {
    insta::assert_snapshot!("v11_order", incompatibility::<v11::Order>("order"));
    insta::assert_snapshot!(
        "v11_envelope_order",
        incompatibility::<v11::Envelope<v11::Order>>("envelope_order")
    );
}

#[test]
fn v12_different_type_identity_is_incompatible() {
    insta::assert_snapshot!("v12_order", incompatibility::<v12::Order>("order"));
    insta::assert_snapshot!(
        "v12_envelope_order",
        incompatibility::<v12::Envelope<v12::Order>>("envelope_order")
    );
    insta::assert_snapshot!("v12_address", incompatibility::<v12::Address>("address"));
    insta::assert_snapshot!("v12_customer", incompatibility::<v12::Customer>("customer"));
    insta::assert_snapshot!("v12_payment", incompatibility::<v12::Payment>("payment"));
}

#[test]
fn v13_removed_variant_is_incompatible() {
    insta::assert_snapshot!("v13_payment", incompatibility::<v13::Payment>("payment"));
}

#[test]
fn v14_field_added_without_default_is_incompatible() {
    insta::assert_snapshot!("v14_order", incompatibility::<v14::Order>("order"));
    insta::assert_snapshot!(
        "v14_envelope_order",
        incompatibility::<v14::Envelope<v14::Order>>("envelope_order")
    );
    insta::assert_snapshot!("v14_address", incompatibility::<v14::Address>("address"));
    insta::assert_snapshot!("v14_customer", incompatibility::<v14::Customer>("customer"));
    insta::assert_snapshot!("v14_payment", incompatibility::<v14::Payment>("payment"));
}

#[test]
fn v15_narrowing_and_nested_type_changes_are_incompatible() {
    insta::assert_snapshot!(
        "v15_line_item",
        incompatibility::<v15::LineItem>("line_item")
    );
    insta::assert_snapshot!("v15_order", incompatibility::<v15::Order>("order"));
    insta::assert_snapshot!(
        "v15_envelope_order",
        incompatibility::<v15::Envelope<v15::Order>>("envelope_order")
    );
    insta::assert_snapshot!("v15_customer", incompatibility::<v15::Customer>("customer"));
    insta::assert_snapshot!("v15_payment", incompatibility::<v15::Payment>("payment"));
}

#[test]
fn v16_reversed_widenings_are_incompatible() {
    insta::assert_snapshot!("v16_order", incompatibility::<v16::Order>("order"));
    insta::assert_snapshot!(
        "v16_envelope_order",
        incompatibility::<v16::Envelope<v16::Order>>("envelope_order")
    );
    insta::assert_snapshot!("v16_payment", incompatibility::<v16::Payment>("payment"));
}

/// A struct that became an enum of the same name (or back) is incompatible, and the
/// message says which kind became which.
#[test]
fn v17_struct_became_enum_is_incompatible() {
    for message in [
        incompatibility::<v17::Order>("order"),
        incompatibility::<v17::Payment>("payment"),
        incompatibility::<v1::Envelope<v17::Order>>("envelope_order"),
    ] {
        assert!(
            message.contains("struct") && message.contains("enum"),
            "the message does not name both kinds: {message}"
        );
    }
    insta::assert_snapshot!("v17_order", incompatibility::<v17::Order>("order"));
    insta::assert_snapshot!("v17_payment", incompatibility::<v17::Payment>("payment"));
    insta::assert_snapshot!(
        "v17_envelope_order",
        incompatibility::<v1::Envelope<v17::Order>>("envelope_order")
    );
}
