//! Schema evolution: bytes of version 1 of a type read by the migration reader of version 2
//! (resolved against version 1's snapshot). What version 1 reads must migrate, to the same
//! byte; what migrates must re-serialize as version 2 and read back the same.

use typeinfo::{Compatibility, DataInputView, SnapshotRegistry, TypeInfo, TypeSerializer};

use crate::harness::{Outcome, Sub};
use crate::mutate::Nest;
use crate::targets::typed::{round_trip, SEEDS};
use crate::values::{Arb, Gen};

pub mod v1 {
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

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Widening {
        pub small: Vec<i8>,
        pub maybe: u32,
        pub by_key: std::collections::BTreeMap<u16, f32>,
    }
}

pub mod v2 {
    use typeinfo::TypeInfo;

    /// Every compatible change at once (fields widened, renamed, made optional, added,
    /// removed and reordered; the nested `Line` changed too).
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

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Line {
        pub count: u64,
        #[typeinfo(default)]
        pub label: String,
    }

    /// Variants reordered, one renamed through an alias, one added at the end.
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

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Chain {
        pub value: i64,
        pub next: Option<Box<Chain>>,
    }

    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Widening {
        pub small: Vec<i64>,
        pub maybe: Option<u64>,
        pub by_key: std::collections::BTreeMap<u32, Option<f64>>,
    }
}

impl Arb for v1::Line {
    fn arb(g: &mut Gen) -> Self {
        v1::Line {
            sku: String::arb(g),
            count: u16::arb(g),
        }
    }
}

impl Arb for v1::Order {
    fn arb(g: &mut Gen) -> Self {
        v1::Order {
            user_id: String::arb(g),
            amount: f32::arb(g),
            qty: i32::arb(g),
            coupon: String::arb(g),
            lines: Vec::arb(g),
        }
    }
}

impl Arb for v1::Status {
    fn arb(g: &mut Gen) -> Self {
        match g.rng.usize(..3) {
            0 => v1::Status::Open,
            1 => v1::Status::Paid { at: i64::arb(g) },
            _ => v1::Status::Cancelled(String::arb(g)),
        }
    }
}

impl Arb for v1::Chain {
    fn arb(g: &mut Gen) -> Self {
        let mut chain = v1::Chain {
            value: i32::arb(g),
            next: None,
        };
        for _ in 0..g.rng.usize(..20) {
            chain = v1::Chain {
                value: i32::arb(g),
                next: Some(Box::new(chain)),
            };
        }
        chain
    }
}

impl Arb for v1::Widening {
    fn arb(g: &mut Gen) -> Self {
        v1::Widening {
            small: Vec::arb(g),
            maybe: u32::arb(g),
            by_key: std::collections::BTreeMap::arb(g),
        }
    }
}

/// A sub-target reading `Old`'s bytes as `New`.
fn evolve<Old, New>(name: &str, g: &mut Gen, nests: Vec<Nest>) -> Result<Sub, String>
where
    Old: TypeInfo + Arb,
    New: TypeInfo + PartialEq,
{
    let old = typeinfo::serializer::<Old>().map_err(|e| e.to_string())?;
    let new = typeinfo::serializer::<New>().map_err(|e| e.to_string())?;
    let reader = match new.resolve(&old.snapshot(), &SnapshotRegistry::default()) {
        Compatibility::AfterMigration(reader) => reader,
        other => {
            return Err(format!(
                "{name}: expected a migration, got {:?}",
                other.verdict()
            ))
        }
    };
    let mut seeds = Vec::with_capacity(SEEDS);
    for _ in 0..SEEDS {
        seeds.push(typeinfo::to_bytes(&old, &Old::arb(g)).map_err(|e| e.to_string())?);
    }
    Ok(Sub::new(name, seeds, move |bytes| {
        let mut old_input = DataInputView::new(bytes);
        let read_old = old.deserialize(&mut old_input);
        let mut input = DataInputView::new(bytes);
        let migrated = reader.read(&mut input);
        match (&read_old, &migrated) {
            (Ok(_), Err(e)) => {
                return Err(format!("a value version 1 reads does not migrate: {e}"))
            }
            (Ok(_), Ok(_)) if old_input.position() != input.position() => {
                return Err(format!(
                    "migration stopped at byte {}, version 1's value ends at {}",
                    input.position(),
                    old_input.position()
                ))
            }
            _ => {}
        }
        match migrated {
            Ok(value) => {
                round_trip(&new, &value, "migrated")?;
                Ok(Outcome::Value)
            }
            Err(_) => Ok(Outcome::Error),
        }
    })
    .nests(nests))
}

/// Builds the sub-targets.
pub fn build(g: &mut Gen) -> Result<Vec<Sub>, String> {
    let chain_nests = vec![Nest {
        open: vec![1, 0, 0, 0, 1],
        leaf: vec![2, 0, 0, 0, 0],
        close: vec![],
    }];
    Ok(vec![
        evolve::<v1::Order, v2::Order>("Order v1 -> v2", g, Vec::new())?,
        evolve::<v1::Status, v2::Status>("Status v1 -> v2", g, Vec::new())?,
        evolve::<v1::Chain, v2::Chain>("Chain v1 -> v2", g, chain_nests)?,
        evolve::<v1::Widening, v2::Widening>("Widening v1 -> v2", g, Vec::new())?,
        evolve::<i32, Option<i64>>("i32 -> Option<i64>", g, Vec::new())?,
        evolve::<Vec<u8>, Vec<u128>>("Vec<u8> -> Vec<u128>", g, Vec::new())?,
        evolve::<Vec<Vec<f32>>, Vec<Vec<f64>>>("Vec<Vec<f32>> -> Vec<Vec<f64>>", g, Vec::new())?,
        evolve::<(u16, Option<i8>), (u64, Option<Option<i32>>)>(
            "(u16, Option<i8>) -> (u64, Option<Option<i32>>)",
            g,
            Vec::new(),
        )?,
    ])
}
