//! Schema evolution of derived types: each kind of change, written with the old type,
//! resolved, migrated, and every field of the result checked; incompatible changes are
//! refused from the snapshots alone, before any value is read.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use typeinfo::{
    to_bytes, Compatibility, DataInputView, SnapshotRegistry, TypeInfo, TypeSerializer, Verdict,
};

/// Writes `value` with `Old`'s serializer and reads it back as `New`.
fn migrate<Old: TypeInfo, New: TypeInfo>(value: &Old) -> typeinfo::Result<(Verdict, New)> {
    let old = typeinfo::serializer::<Old>()?;
    let new = typeinfo::serializer::<New>()?;
    let bytes = to_bytes(&old, value)?;
    let verdict = new.resolve(&old.snapshot(), &SnapshotRegistry::default());
    let kind = verdict.verdict();
    let mut input = DataInputView::new(&bytes);
    let value = match verdict {
        Compatibility::AsIs => new.deserialize(&mut input)?,
        Compatibility::AfterMigration(reader) => reader.read(&mut input)?,
        Compatibility::Reconfigured(s) => s.deserialize(&mut input)?,
        Compatibility::Incompatible(inc) => return Err(inc.into()),
    };
    assert!(
        input.is_empty(),
        "{} bytes left after migration",
        input.remaining()
    );
    Ok((kind, value))
}

/// The incompatibility of `New` with `Old`, decided from snapshots only.
fn refusal<Old: TypeInfo, New: TypeInfo>() -> String {
    let old = typeinfo::serializer::<Old>().expect("old serializer");
    let new = typeinfo::serializer::<New>().expect("new serializer");
    match new.resolve(&old.snapshot(), &SnapshotRegistry::default()) {
        Compatibility::Incompatible(inc) => inc.to_string(),
        other => panic!("expected incompatible, got {other:?}"),
    }
}

mod v1 {
    use typeinfo::TypeInfo;

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Order {
        pub user_id: String,
        pub amount: f32,
        pub qty: i32,
        pub coupon: String,
        pub lines: Vec<Line>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Line {
        pub sku: String,
        pub count: u16,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub enum Status {
        Open,
        Paid { at: i64 },
        Cancelled(String),
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Chain {
        pub value: i32,
        pub next: Option<Box<Chain>>,
    }

    pub fn order() -> Order {
        Order {
            user_id: "u-1".into(),
            amount: 12.5,
            qty: -3,
            coupon: "SPRING".into(),
            lines: vec![
                Line {
                    sku: "a".into(),
                    count: 2,
                },
                Line {
                    sku: "b".into(),
                    count: 65_535,
                },
            ],
        }
    }
}

mod v2 {
    use typeinfo::TypeInfo;

    /// Every compatible change at once: `amount` widened to f64, `qty` widened to i64 and
    /// renamed to `quantity`, `coupon` became optional, a field added with a default, one
    /// with a default function, one optional; the nested `Line` changed too; fields reordered.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Order {
        pub lines: Vec<Line>,
        #[typeinfo(alias = "qty")]
        pub quantity: i64,
        pub amount: f64,
        pub user_id: String,
        pub coupon: Option<String>,
        #[typeinfo(default)]
        pub priority: u8,
        #[typeinfo(default = "default_currency")]
        pub currency: String,
        pub note: Option<String>,
    }

    pub fn default_currency() -> String {
        "EUR".into()
    }

    /// `count` widened to u64; `sku` removed; `label` added.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Line {
        pub count: u64,
        #[typeinfo(default)]
        pub label: String,
    }

    /// Variants reordered, renamed through an alias, one added at the end.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub enum Status {
        #[typeinfo(alias = "Cancelled")]
        Voided(String),
        Open,
        Paid {
            at: i64,
            #[typeinfo(default)]
            by: String,
        },
        Refunded,
    }

    /// `value` widened to i64 inside a recursive type.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Chain {
        pub value: i64,
        pub next: Option<Box<Chain>>,
    }
}

mod incompatible {
    use typeinfo::TypeInfo;

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Order {
        pub user_id: String,
        pub amount: String,
        pub qty: i32,
        pub coupon: String,
        pub lines: Vec<super::v1::Line>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct NestedChange {
        pub user_id: String,
        pub amount: f32,
        pub qty: i32,
        pub coupon: String,
        pub lines: Vec<Line>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Line {
        pub sku: u64,
        pub count: u16,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Invoice")]
    pub struct Renamed {
        pub user_id: String,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct AddedWithoutDefault {
        pub user_id: String,
        pub amount: f32,
        pub qty: i32,
        pub coupon: String,
        pub lines: Vec<super::v1::Line>,
        pub region: u32,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Status")]
    pub enum StatusWithoutCancelled {
        Open,
        Paid { at: i64 },
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Narrowed {
        pub user_id: String,
        pub amount: f32,
        pub qty: i16,
        pub coupon: String,
        pub lines: Vec<super::v1::Line>,
    }
}

#[test]
fn the_same_type_is_compatible_as_is() -> typeinfo::Result<()> {
    let (verdict, order) = migrate::<v1::Order, v1::Order>(&v1::order())?;
    assert_eq!((verdict, order), (Verdict::AsIs, v1::order()));
    Ok(())
}

#[test]
fn every_compatible_change_migrates_and_keeps_every_field() -> typeinfo::Result<()> {
    let (verdict, order) = migrate::<v1::Order, v2::Order>(&v1::order())?;
    assert_eq!(verdict, Verdict::AfterMigration);
    assert_eq!(
        order,
        v2::Order {
            lines: vec![
                v2::Line {
                    count: 2,
                    label: String::new()
                },
                v2::Line {
                    count: 65_535,
                    label: String::new()
                }
            ],
            quantity: -3,
            amount: 12.5,
            user_id: "u-1".into(),
            coupon: Some("SPRING".into()),
            priority: 0,
            currency: "EUR".into(),
            note: None,
        }
    );
    Ok(())
}

#[test]
fn enum_variants_are_matched_by_name_and_alias() -> typeinfo::Result<()> {
    let cases = [
        (v1::Status::Open, v2::Status::Open),
        (
            v1::Status::Paid { at: 42 },
            v2::Status::Paid {
                at: 42,
                by: String::new(),
            },
        ),
        (
            v1::Status::Cancelled("fraud".into()),
            v2::Status::Voided("fraud".into()),
        ),
    ];
    for (old, expected) in cases {
        let (verdict, new) = migrate::<v1::Status, v2::Status>(&old)?;
        assert_eq!((verdict, new), (Verdict::AfterMigration, expected));
    }
    Ok(())
}

#[test]
fn recursive_types_migrate_at_every_depth() -> typeinfo::Result<()> {
    let chain = v1::Chain {
        value: 1,
        next: Some(Box::new(v1::Chain {
            value: -2,
            next: Some(Box::new(v1::Chain {
                value: 3,
                next: None,
            })),
        })),
    };
    let (verdict, migrated) = migrate::<v1::Chain, v2::Chain>(&chain)?;
    assert_eq!(verdict, Verdict::AfterMigration);
    assert_eq!(
        migrated,
        v2::Chain {
            value: 1,
            next: Some(Box::new(v2::Chain {
                value: -2,
                next: Some(Box::new(v2::Chain {
                    value: 3,
                    next: None
                }))
            }))
        }
    );
    let (verdict, same) = migrate::<v1::Chain, v1::Chain>(&chain)?;
    assert_eq!((verdict, same), (Verdict::AsIs, chain));
    Ok(())
}

#[test]
fn incompatible_changes_are_refused_with_the_path_and_both_types() {
    assert_eq!(
        refusal::<v1::Order, incompatible::Order>(),
        "Order.amount: f32 -> String"
    );
    assert_eq!(
        refusal::<v1::Order, incompatible::NestedChange>(),
        "Order.lines[].sku: String -> u64"
    );
    assert_eq!(
        refusal::<v1::Order, incompatible::Renamed>(),
        "Order -> Invoice (a different type identity)"
    );
    assert_eq!(
        refusal::<v1::Order, incompatible::AddedWithoutDefault>(),
        "Order.region: nothing -> u32 (field added without a default: add #[typeinfo(default)])"
    );
    assert_eq!(
        refusal::<v1::Status, incompatible::StatusWithoutCancelled>(),
        "Status.Cancelled: Cancelled -> nothing (variant removed; stored values may hold it)"
    );
    assert_eq!(
        refusal::<v1::Order, incompatible::Narrowed>(),
        "Order.qty: i32 -> i16"
    );
}

#[test]
fn removed_fields_of_any_layout_are_skipped_with_the_restored_serializer() -> typeinfo::Result<()> {
    #[derive(TypeInfo, Debug, PartialEq)]
    #[typeinfo(name = "Order")]
    struct OnlyUser {
        user_id: String,
    }
    let (verdict, order) = migrate::<v1::Order, OnlyUser>(&v1::order())?;
    assert_eq!(
        (verdict, order),
        (
            Verdict::AfterMigration,
            OnlyUser {
                user_id: "u-1".into()
            }
        )
    );
    Ok(())
}

#[test]
fn stored_values_can_be_read_without_the_type() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<v1::Order>()?;
    let bytes = to_bytes(&s, &v1::order())?;
    let restored = SnapshotRegistry::default().restore(&s.snapshot())?;
    let value = typeinfo::from_bytes(&restored, &bytes)?;
    assert_eq!(
        value.field("user_id"),
        Some(&typeinfo::Value::String("u-1".into()))
    );
    assert_eq!(value.field("qty"), Some(&typeinfo::Value::I32(-3)));
    Ok(())
}
