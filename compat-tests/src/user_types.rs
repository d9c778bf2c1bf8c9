//! Golden files for USER types: structs and enums with `#[derive(TypeInfo)]`.
//!
//! - [`v1`]: version 1 of a small shop schema and a fixed list of values per type. Its
//!   bytes and snapshots are committed in `fixtures/v1/user/` ([`user_cases`] lists them;
//!   the writer `src/bin/write_fixtures.rs` writes the missing ones, never overwrites).
//! - [`v2`] .. [`v17`]: "today's" versions of the same types, each one evolution of v1.
//!   `tests/user_types_evolution.rs` reads the committed v1 fixtures with each of them and
//!   checks the verdict, and every field of every migrated value.
//!
//! | version | change | verdict |
//! |---|---|---|
//! | [`v2`] | identical schema, Rust identifiers renamed (stable `name` kept) | as is |
//! | [`v3`] | fields added: `default`, `default = "path"`, an `Option` without attribute, a `skip` field, in a struct, a struct variant, a tuple variant and a generic struct | after migration |
//! | [`v4`] | fields removed (of scalar, `Option`, `Vec`, `Vec` of structs, struct and map types; in a struct, struct variant and tuple variant) | after migration |
//! | [`v5`] | fields reordered | after migration |
//! | [`v6`] | fields and a variant renamed through `alias` | after migration |
//! | [`v7`] | enum variant added at the end | after migration |
//! | [`v8`] | enum variant added first, the others reordered | after migration |
//! | [`v9`] | widening: `i32 -> i64`, `u16 -> u64`, `i16 -> i64`, `f32 -> f64`, `String -> Option<String>` (also inside a `Vec`) | after migration |
//! | [`v10`] | only nested types changed: `LineItem` in `Order`'s `Vec`, `Address` in `Customer`, `Order` in `Envelope<Order>` | after migration |
//! | [`v11`] | a field's type changed: `amount: f32 -> String` | incompatible |
//! | [`v12`] | a different type identity (`name` changed), also of a nested type and an enum | incompatible |
//! | [`v13`] | an enum variant removed | incompatible |
//! | [`v14`] | a field added without a default (struct, struct variant, nested struct) | incompatible |
//! | [`v15`] | narrowing and type changes inside a `Vec`, a variant and a map value | incompatible |
//! | [`v16`] | `Option<String> -> String`, `u16 -> u8` | incompatible |
//! | [`v17`] | a struct became an enum and an enum a struct, same stable names | incompatible |
//!
//! The rule of the built-in fixtures applies: the committed v1 files are never regenerated,
//! and [`v1`] (types and values) never changes. New versions are added as new modules.

use std::path::{Path, PathBuf};

use crate::golden::{Case, GoldenCase, Pinned, FIXTURE_DIR};

/// The subdirectory of a fixture set holding the user-type fixtures.
pub const USER_SUBDIR: &str = "user";

/// The absolute path of the user-type fixtures of the current set (`fixtures/v1/user`).
pub fn user_fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(FIXTURE_DIR)
        .join(USER_SUBDIR)
}

/// Every user-type golden case: the v1 types and their fixed values, in a fixed order.
///
/// A committed case never changes: not its name, type, values nor their order.
pub fn user_cases() -> Vec<Box<dyn GoldenCase>> {
    vec![
        Box::new(Case::new("line_item", "v1::LineItem", v1::line_items())),
        Box::new(Case::new("order", "v1::Order", v1::orders())),
        Box::new(Case::new("address", "v1::Address", v1::addresses())),
        Box::new(Case::new("customer", "v1::Customer", v1::customers())),
        Box::new(Case::new("payment", "v1::Payment", v1::payments())),
        Box::new(Case::new(
            "envelope_order",
            "v1::Envelope<v1::Order>",
            v1::envelope_orders(),
        )),
    ]
}

fn s(v: &str) -> String {
    v.to_owned()
}

/// Version 1, as committed in `fixtures/v1/user/`. Never changes.
pub mod v1 {
    use std::collections::BTreeMap;

    use typeinfo::TypeInfo;

    use super::s;

    /// One line of an order.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "LineItem")]
    pub struct LineItem {
        pub sku: String,
        pub qty: i32,
    }

    /// An order: strings, a float, an option, vectors and a vector of nested structs.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub id: u64,
        pub user_id: String,
        pub amount: f32,
        pub note: Option<String>,
        pub tags: Vec<String>,
        pub items: Vec<LineItem>,
    }

    /// A postal address.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Address")]
    pub struct Address {
        pub street: String,
        pub city: String,
        pub zip: Option<String>,
    }

    /// A customer: a nested struct and a map.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Customer")]
    pub struct Customer {
        pub name: String,
        pub address: Address,
        pub prefs: BTreeMap<String, i16>,
    }

    /// A payment: a unit, a struct and a tuple variant.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum Payment {
        Cash,
        Card { last4: u16, network: String },
        Voucher(String, i32),
    }

    /// A generic struct, stored as `Envelope<Order>`.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Envelope")]
    pub struct Envelope<T> {
        pub seq: u64,
        pub body: T,
    }

    /// The values of `fixtures/v1/user/line_item.*`.
    pub fn line_items() -> Vec<LineItem> {
        vec![
            LineItem {
                sku: s("A-1"),
                qty: 2,
            },
            LineItem {
                sku: s(""),
                qty: i32::MIN,
            },
            LineItem {
                sku: s("ünï-€-😀"),
                qty: i32::MAX,
            },
        ]
    }

    /// The values of `fixtures/v1/user/order.*`.
    pub fn orders() -> Vec<Order> {
        vec![
            Order {
                id: 1,
                user_id: s("u-1"),
                amount: 19.99,
                note: Some(s("leave at door")),
                tags: vec![s("gift"), s("express")],
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
                    sku: s(""),
                    qty: i32::MIN,
                }],
            },
        ]
    }

    /// The values of `fixtures/v1/user/address.*`.
    pub fn addresses() -> Vec<Address> {
        vec![
            Address {
                street: s("1 Main St"),
                city: s("Springfield"),
                zip: Some(s("12345")),
            },
            Address {
                street: s(""),
                city: s("Zürich"),
                zip: None,
            },
        ]
    }

    /// The values of `fixtures/v1/user/customer.*`.
    pub fn customers() -> Vec<Customer> {
        vec![
            Customer {
                name: s("Ada"),
                address: Address {
                    street: s("1 Main St"),
                    city: s("Springfield"),
                    zip: Some(s("12345")),
                },
                prefs: BTreeMap::from([(s("lang"), 1), (s("theme"), -2)]),
            },
            Customer {
                name: s(""),
                address: Address {
                    street: s(""),
                    city: s(""),
                    zip: None,
                },
                prefs: BTreeMap::new(),
            },
            Customer {
                name: s("Bob"),
                address: Address {
                    street: s("Bahnhofstr. 1"),
                    city: s("Zürich"),
                    zip: Some(s("8001")),
                },
                prefs: BTreeMap::from([(s("a"), i16::MIN), (s("z"), i16::MAX)]),
            },
        ]
    }

    /// The values of `fixtures/v1/user/payment.*`: every variant.
    pub fn payments() -> Vec<Payment> {
        vec![
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
        ]
    }

    /// The values of `fixtures/v1/user/envelope_order.*`.
    pub fn envelope_orders() -> Vec<Envelope<Order>> {
        let orders = orders();
        vec![
            Envelope {
                seq: 0,
                body: orders[0].clone(),
            },
            Envelope {
                seq: u64::MAX,
                body: orders[1].clone(),
            },
        ]
    }
}

// Exact equality for the golden check (floats by bits), field by field; the destructuring
// makes a field added to a v1 type (which must never happen) a compile error here.

impl Pinned for v1::LineItem {
    fn same(&self, other: &Self) -> bool {
        let Self { sku, qty } = self;
        sku.same(&other.sku) && qty.same(&other.qty)
    }
}

impl Pinned for v1::Order {
    fn same(&self, other: &Self) -> bool {
        let Self {
            id,
            user_id,
            amount,
            note,
            tags,
            items,
        } = self;
        id.same(&other.id)
            && user_id.same(&other.user_id)
            && amount.same(&other.amount)
            && note.same(&other.note)
            && tags.same(&other.tags)
            && items.same(&other.items)
    }
}

impl Pinned for v1::Address {
    fn same(&self, other: &Self) -> bool {
        let Self { street, city, zip } = self;
        street.same(&other.street) && city.same(&other.city) && zip.same(&other.zip)
    }
}

impl Pinned for v1::Customer {
    fn same(&self, other: &Self) -> bool {
        let Self {
            name,
            address,
            prefs,
        } = self;
        name.same(&other.name) && address.same(&other.address) && prefs.same(&other.prefs)
    }
}

impl Pinned for v1::Payment {
    fn same(&self, other: &Self) -> bool {
        use v1::Payment::{Card, Cash, Voucher};
        match (self, other) {
            (Cash, Cash) => true,
            (
                Card {
                    last4: a,
                    network: b,
                },
                Card {
                    last4: c,
                    network: d,
                },
            ) => a.same(c) && b.same(d),
            (Voucher(a, b), Voucher(c, d)) => a.same(c) && b.same(d),
            _ => false,
        }
    }
}

impl<T: Pinned> Pinned for v1::Envelope<T> {
    fn same(&self, other: &Self) -> bool {
        let Self { seq, body } = self;
        seq.same(&other.seq) && body.same(&other.body)
    }
    fn deterministic(&self) -> bool {
        self.body.deterministic()
    }
}

/// Identical schema: every Rust identifier renamed, every stable `name` kept. As is.
pub mod v2 {
    use std::collections::BTreeMap;

    use typeinfo::TypeInfo;

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "LineItem")]
    pub struct OrderLine {
        pub sku: String,
        pub qty: i32,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct PurchaseOrder {
        pub id: u64,
        pub user_id: String,
        pub amount: f32,
        pub note: Option<String>,
        pub tags: Vec<String>,
        pub items: Vec<OrderLine>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Address")]
    pub struct PostalAddress {
        pub street: String,
        pub city: String,
        pub zip: Option<String>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Customer")]
    pub struct Client {
        pub name: String,
        pub address: PostalAddress,
        pub prefs: BTreeMap<String, i16>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum PaymentMethod {
        Cash,
        Card { last4: u16, network: String },
        Voucher(String, i32),
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Envelope")]
    pub struct Message<B> {
        pub seq: u64,
        pub body: B,
    }
}

/// Fields added: with `#[typeinfo(default)]`, with `default = "path"`, an `Option` without
/// attribute, and a `skip` field (no part of the schema), at the start, middle and end;
/// in a struct, a struct variant, a tuple variant and the generic struct.
pub mod v3 {
    use std::collections::BTreeMap;

    use typeinfo::TypeInfo;

    pub use super::v1::{Address, LineItem};

    /// The value of `Order.currency` for orders stored without one.
    pub fn default_currency() -> String {
        "EUR".to_owned()
    }

    /// The value of `Envelope.attempts` for envelopes stored without one.
    pub fn default_attempts() -> u32 {
        1
    }

    /// The value of the third field of `Payment::Voucher` for vouchers stored without one.
    pub fn default_voucher_issuer() -> String {
        "legacy".to_owned()
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub id: u64,
        #[typeinfo(default)]
        pub priority: u8,
        pub user_id: String,
        pub amount: f32,
        #[typeinfo(default = "default_currency")]
        pub currency: String,
        pub note: Option<String>,
        pub tags: Vec<String>,
        pub items: Vec<LineItem>,
        pub coupon: Option<String>,
        #[typeinfo(skip)]
        pub cached_total_cents: u64,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Customer")]
    pub struct Customer {
        pub email: Option<String>,
        pub name: String,
        pub address: Address,
        pub prefs: BTreeMap<String, i16>,
        #[typeinfo(default)]
        pub vip: bool,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum Payment {
        Cash,
        Card {
            last4: u16,
            holder: Option<String>,
            network: String,
        },
        Voucher(
            String,
            i32,
            #[typeinfo(default = "default_voucher_issuer")] String,
        ),
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Envelope")]
    pub struct Envelope<T> {
        pub seq: u64,
        #[typeinfo(default = "default_attempts")]
        pub attempts: u32,
        pub body: T,
    }
}

/// Fields removed: from a struct (an `Option` and a `Vec` in the middle, a `Vec` of
/// structs at the end), a struct-typed field and a map field, fields of a struct used
/// alone, from a struct variant and from a tuple variant. Removed fields are skipped with
/// the serializer restored from their old snapshot.
pub mod v4 {
    use typeinfo::TypeInfo;

    pub use super::v1::Envelope;

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub id: u64,
        pub user_id: String,
        pub amount: f32,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Address")]
    pub struct Address {
        pub city: String,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Customer")]
    pub struct Customer {
        pub name: String,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum Payment {
        Cash,
        Card { last4: u16 },
        Voucher(String),
    }
}

/// Fields reordered, in every struct and the struct variant.
pub mod v5 {
    use std::collections::BTreeMap;

    use typeinfo::TypeInfo;

    pub use super::v1::Address;

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "LineItem")]
    pub struct LineItem {
        pub qty: i32,
        pub sku: String,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub items: Vec<LineItem>,
        pub amount: f32,
        pub note: Option<String>,
        pub id: u64,
        pub tags: Vec<String>,
        pub user_id: String,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Customer")]
    pub struct Customer {
        pub prefs: BTreeMap<String, i16>,
        pub address: Address,
        pub name: String,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum Payment {
        Cash,
        Card { network: String, last4: u16 },
        Voucher(String, i32),
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Envelope")]
    pub struct Envelope<T> {
        pub body: T,
        pub seq: u64,
    }
}

/// Fields and a variant renamed through `alias` (one field with two aliases, the old name
/// second).
pub mod v6 {
    use std::collections::BTreeMap;

    use typeinfo::TypeInfo;

    pub use super::v1::{Address, Envelope, LineItem};

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub id: u64,
        #[typeinfo(alias = "buyer", alias = "user_id")]
        pub customer_id: String,
        #[typeinfo(alias = "amount")]
        pub total: f32,
        pub note: Option<String>,
        #[typeinfo(alias = "tags")]
        pub labels: Vec<String>,
        pub items: Vec<LineItem>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Customer")]
    pub struct Customer {
        #[typeinfo(alias = "name")]
        pub full_name: String,
        pub address: Address,
        pub prefs: BTreeMap<String, i16>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum Payment {
        Cash,
        Card {
            last4: u16,
            #[typeinfo(alias = "network")]
            scheme: String,
        },
        #[typeinfo(alias = "Voucher")]
        GiftCard(String, i32),
    }
}

/// An enum variant added at the end.
pub mod v7 {
    use typeinfo::TypeInfo;

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum Payment {
        Cash,
        Card { last4: u16, network: String },
        Voucher(String, i32),
        BankTransfer { iban: String },
    }
}

/// An enum variant added first and the old variants reordered: every stored tag moves.
pub mod v8 {
    use typeinfo::TypeInfo;

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum Payment {
        Crypto { coin: String },
        Voucher(String, i32),
        Cash,
        Card { last4: u16, network: String },
    }
}

/// Widening: `i32 -> i64`, `u16 -> u64`, `i16 -> i64` (map values), `f32 -> f64`,
/// `String -> Option<String>` (also as a `Vec`'s element and in a variant).
pub mod v9 {
    use std::collections::BTreeMap;

    use typeinfo::TypeInfo;

    pub use super::v1::Envelope;

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "LineItem")]
    pub struct LineItem {
        pub sku: String,
        pub qty: i64,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub id: u64,
        pub user_id: Option<String>,
        pub amount: f64,
        pub note: Option<String>,
        pub tags: Vec<Option<String>>,
        pub items: Vec<LineItem>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Address")]
    pub struct Address {
        pub street: String,
        pub city: Option<String>,
        pub zip: Option<String>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Customer")]
    pub struct Customer {
        pub name: String,
        pub address: Address,
        pub prefs: BTreeMap<String, i64>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum Payment {
        Cash,
        Card { last4: u64, network: Option<String> },
        Voucher(String, i64),
    }
}

/// Only nested types changed: `LineItem` (renamed field, added field) inside `Order`'s
/// `Vec`, `Address` (removed field, added field with a default path) inside `Customer`,
/// and so `Order` inside the unchanged generic `Envelope<Order>`.
pub mod v10 {
    use std::collections::BTreeMap;

    use typeinfo::TypeInfo;

    pub use super::v1::Envelope;

    /// The value of `Address.country` for addresses stored without one.
    pub fn default_country() -> String {
        "CH".to_owned()
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "LineItem")]
    pub struct LineItem {
        #[typeinfo(alias = "sku")]
        pub code: String,
        pub qty: i32,
        #[typeinfo(default)]
        pub unit_price_cents: u32,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub id: u64,
        pub user_id: String,
        pub amount: f32,
        pub note: Option<String>,
        pub tags: Vec<String>,
        pub items: Vec<LineItem>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Address")]
    pub struct Address {
        pub street: String,
        pub city: String,
        #[typeinfo(default = "default_country")]
        pub country: String,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Customer")]
    pub struct Customer {
        pub name: String,
        pub address: Address,
        pub prefs: BTreeMap<String, i16>,
    }
}

/// Incompatible: a field's type changed, `amount: f32 -> String`.
pub mod v11 {
    use typeinfo::TypeInfo;

    pub use super::v1::{Envelope, LineItem};

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub id: u64,
        pub user_id: String,
        pub amount: String,
        pub note: Option<String>,
        pub tags: Vec<String>,
        pub items: Vec<LineItem>,
    }
}

/// Incompatible: a different type identity (the stable `name` changed), for a struct, a
/// nested struct and an enum; the fields are unchanged.
pub mod v12 {
    use std::collections::BTreeMap;

    use typeinfo::TypeInfo;

    pub use super::v1::{Envelope, LineItem};

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "PurchaseOrder")]
    pub struct Order {
        pub id: u64,
        pub user_id: String,
        pub amount: f32,
        pub note: Option<String>,
        pub tags: Vec<String>,
        pub items: Vec<LineItem>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "PostalAddress")]
    pub struct Address {
        pub street: String,
        pub city: String,
        pub zip: Option<String>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Customer")]
    pub struct Customer {
        pub name: String,
        pub address: Address,
        pub prefs: BTreeMap<String, i16>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "PaymentMethod")]
    pub enum Payment {
        Cash,
        Card { last4: u16, network: String },
        Voucher(String, i32),
    }
}

/// Incompatible: an enum variant removed (`Voucher`).
pub mod v13 {
    use typeinfo::TypeInfo;

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum Payment {
        Cash,
        Card { last4: u16, network: String },
    }
}

/// Incompatible: a field added without a default, in a struct, a struct variant and a
/// nested struct.
pub mod v14 {
    use std::collections::BTreeMap;

    use typeinfo::TypeInfo;

    pub use super::v1::{Envelope, LineItem};

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub id: u64,
        pub user_id: String,
        pub amount: f32,
        pub note: Option<String>,
        pub tags: Vec<String>,
        pub items: Vec<LineItem>,
        pub warehouse: String,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Address")]
    pub struct Address {
        pub street: String,
        pub city: String,
        pub zip: Option<String>,
        pub country: String,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Customer")]
    pub struct Customer {
        pub name: String,
        pub address: Address,
        pub prefs: BTreeMap<String, i16>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum Payment {
        Cash,
        Card {
            last4: u16,
            network: String,
            cvv: u16,
        },
        Voucher(String, i32),
    }
}

/// Incompatible: narrowing `i32 -> i16` inside `Order`'s `Vec<LineItem>`, a variant's
/// field `u16 -> String`, a map value `i16 -> String`.
pub mod v15 {
    use std::collections::BTreeMap;

    use typeinfo::TypeInfo;

    pub use super::v1::{Address, Envelope};

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "LineItem")]
    pub struct LineItem {
        pub sku: String,
        pub qty: i16,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub id: u64,
        pub user_id: String,
        pub amount: f32,
        pub note: Option<String>,
        pub tags: Vec<String>,
        pub items: Vec<LineItem>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Customer")]
    pub struct Customer {
        pub name: String,
        pub address: Address,
        pub prefs: BTreeMap<String, String>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum Payment {
        Cash,
        Card { last4: String, network: String },
        Voucher(String, i32),
    }
}

/// Incompatible: the reverse of widenings, `Option<String> -> String` and `u16 -> u8`.
pub mod v16 {
    use typeinfo::TypeInfo;

    pub use super::v1::{Envelope, LineItem};

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub id: u64,
        pub user_id: String,
        pub amount: f32,
        pub note: String,
        pub tags: Vec<String>,
        pub items: Vec<LineItem>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub enum Payment {
        Cash,
        Card { last4: u8, network: String },
        Voucher(String, i32),
    }
}

/// Incompatible: the kind changed under the same stable name, a struct became an enum and
/// an enum a struct.
pub mod v17 {
    use typeinfo::TypeInfo;

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub enum Order {
        Placed { id: u64 },
        Cancelled,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Payment")]
    pub struct Payment {
        pub method: String,
    }
}
