//! Types and helpers the tests share: the Rust counterparts of FlinkGoldens.java's classes,
//! and the golden files.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bigdecimal::BigDecimal;
use typeinfo::TypeInfo;
use typeinfo_flink_compat::{
    BytePrimitiveArraySerializer, Date, Instant, IntPrimitiveArraySerializer, SqlTimestamp,
};

/// The design documents' example (`FlinkGoldens.Order`).
#[derive(TypeInfo, Debug, Clone, PartialEq)]
#[typeinfo(flink_pojo = "FlinkGoldens$Order")]
pub struct Order {
    #[typeinfo(flink_name = "userId")]
    pub user_id: String,
    pub amount: f64,
}

/// `FlinkGoldens.Order` with the field Java may leave null as an `Option`.
#[derive(TypeInfo, Debug, Clone, PartialEq)]
#[typeinfo(flink_pojo = "FlinkGoldens$Order")]
pub struct NullableOrder {
    #[typeinfo(flink_name = "userId")]
    pub user_id: Option<String>,
    pub amount: f64,
}

/// `FlinkGoldens.Side`.
#[derive(TypeInfo, Debug, Clone, Copy, PartialEq, Eq)]
#[typeinfo(flink_enum = "FlinkGoldens$Side")]
pub enum Side {
    #[typeinfo(flink_name = "BUY")]
    Buy,
    #[typeinfo(flink_name = "SELL")]
    Sell,
    #[typeinfo(flink_name = "HOLD")]
    Hold,
}

/// `FlinkGoldens.Event`: a field of every kind type extraction gives a POJO field.
#[derive(TypeInfo, Debug, Clone, PartialEq, Default)]
#[typeinfo(flink_pojo = "FlinkGoldens$Event")]
pub struct Event {
    #[typeinfo(flink_name = "userId")]
    pub user_id: Option<String>,
    pub ts: i64,
    pub count: Option<i32>,
    pub tags: Option<Vec<Option<String>>>,
    pub attrs: Option<BTreeMap<String, Option<i64>>>,
    pub side: Option<Side>,
    pub at: Option<Instant>,
    pub price: Option<BigDecimal>,
    pub created: Option<Date>,
    pub seen: Option<SqlTimestamp>,
    #[typeinfo(flink_with = "BytePrimitiveArraySerializer")]
    pub payload: Option<Vec<u8>>,
    #[typeinfo(flink_with = "IntPrimitiveArraySerializer")]
    pub scores: Option<Vec<i32>>,
    pub order: Option<Order>,
    pub flag: bool,
    pub initial: char,
    /// Not part of the POJO (a Java `transient` field).
    #[typeinfo(skip)]
    pub cache: u32,
}

/// The folder of the committed golden files.
pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The bytes of one golden file.
pub fn golden(name: &str) -> Vec<u8> {
    let path = golden_dir().join(format!("{name}.bin"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A savepoint's dump as sorted lines; map and broadcast entries, whose order is a hash
/// map's, sorted inside their line too.
pub fn sorted_lines(
    savepoint: &typeinfo_flink_compat::savepoint::FlinkSavepoint,
) -> typeinfo::Result<Vec<String>> {
    let mut lines = Vec::new();
    for op in savepoint.dump()? {
        let mut op_lines = op.lines();
        for state in &op.operator {
            if let typeinfo_flink_compat::savepoint::FlinkValue::Map(entries) = &state.value {
                let mut sorted = entries.clone();
                sorted.sort_by_key(|(k, _)| k.to_string());
                let line = format!(
                    "{}\t{}",
                    state.name,
                    typeinfo_flink_compat::savepoint::FlinkValue::Map(sorted)
                );
                op_lines.retain(|l| !l.contains(&format!("\t{}\t", state.name)));
                op_lines.push(line);
            }
        }
        lines.extend(op_lines);
    }
    lines.sort();
    Ok(lines)
}

/// Whether Flink can be run here (`java`, `javac` and Flink 2.3's jars in `$FLINK_BENCH_DIR`,
/// default `~/.cache/flink-bench`, which `./dev setup` fetches). Without them a test that
/// compares the committed files with what Flink writes says so and passes, unless
/// `FLINK_COMPAT_REQUIRE_FLINK=1` (what `./dev test` sets), which makes it fail.
pub fn flink_available() -> bool {
    let jars = std::env::var_os("FLINK_BENCH_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/flink-bench")))
        .unwrap_or_default()
        .join("x/pyflink/lib/flink-dist-2.3.0.jar");
    let has = |tool: &str| {
        std::process::Command::new(tool)
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if has("java") && has("javac") && jars.is_file() {
        return true;
    }
    let why = format!(
        "skipped: needs java, javac and {} (`./dev setup` fetches them)",
        jars.display()
    );
    assert!(
        std::env::var("FLINK_COMPAT_REQUIRE_FLINK").as_deref() != Ok("1"),
        "{why}"
    );
    eprintln!("{why}");
    false
}
