//! Apache Flink's byte layouts (`typeinfo-flink-compat`): values, serializer snapshots and
//! savepoints as Flink 2.3 writes them, from outside (a Flink savepoint's state files and
//! metadata).
//! The seeds are the golden files Flink itself wrote (`flink-compat/tests/golden`), so the
//! mutations start from real Flink bytes.
//!
//! Values: every value a file holds is read in turn with its Flink serializer; each that
//! reads must be skipped and copied to the same byte, copied equal, and written back into
//! bytes that read back the same (the typed checks of [`crate::targets::typed`], without the
//! type-free reader: Flink's layouts have none). Snapshots: a snapshot that reads is resolved
//! against the Rust serializers of its golden's type (as is, migrated with a POJO's or an
//! enum's migration reader reading values, or incompatible with a message), without a panic.
//! Savepoints: one file of a savepoint Flink wrote (its `_metadata` or a state file) is
//! corrupted, the others left whole; the savepoint is opened and every operator dumped.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::PathBuf;

use bigdecimal::BigDecimal;
use typeinfo::TypeSerializer;
use typeinfo::{from_bytes, to_bytes, Compatibility, DataInputView, DataOutputView, TypeInfo};
use typeinfo_flink_compat::{
    resolve, resolve_enum, resolve_pojo, BigDecSerializer, BooleanSerializer, ByteSerializer,
    CharSerializer, DoubleSerializer, FlinkSnapshot, FlinkType, GenericArraySerializer,
    InstantSerializer, IntSerializer, ListSerializer, LongSerializer, MapSerializer, Nullable,
    RowSerializer, ShortSerializer, StringArraySerializer, StringSerializer, TupleSerializer,
};

use crate::harness::{Outcome, Sub};
use crate::targets::typed::{hex, round_trip, same};
use crate::values::Gen;

/// At most this many values are read from one input (a golden file holds a handful).
const MAX_VALUES: usize = 64;

/// `FlinkGoldens.Order`, the design documents' 14-byte example.
#[derive(TypeInfo, Debug, Clone, PartialEq)]
#[typeinfo(flink_pojo = "FlinkGoldens$Order")]
struct Order {
    #[typeinfo(flink_name = "userId")]
    user_id: Option<String>,
    amount: f64,
}

/// `FlinkGoldens.Side`.
#[derive(TypeInfo, Debug, Clone, Copy, PartialEq, Eq)]
#[typeinfo(flink_enum = "FlinkGoldens$Side")]
enum Side {
    #[typeinfo(flink_name = "BUY")]
    Buy,
    #[typeinfo(flink_name = "SELL")]
    Sell,
    #[typeinfo(flink_name = "HOLD")]
    Hold,
}

/// The golden files of `typeinfo-flink-compat`, written by Flink 2.3.
fn golden(name: &str) -> Result<Vec<u8>, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../flink-compat/tests/golden")
        .join(format!("{name}.bin"));
    std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The typed checks of one value at `bytes[start..]` that `s` read up to `end`.
fn check_value<T: PartialEq, S: TypeSerializer<T>>(
    s: &S,
    value: &T,
    bytes: &[u8],
    start: usize,
    end: usize,
) -> Result<(), String> {
    let mut skip = DataInputView::new(&bytes[start..]);
    match s.skip(&mut skip) {
        Ok(()) if start + skip.position() == end => {}
        Ok(()) => return Err("skip stopped elsewhere than deserialize".to_owned()),
        Err(e) => return Err(format!("skip failed where deserialize read a value: {e}")),
    }
    let (mut input, mut copied) = (DataInputView::new(&bytes[start..]), DataOutputView::new());
    match s.copy_serialized(&mut input, &mut copied) {
        Ok(())
            if copied.as_slice() == &bytes[start..end]
                || to_bytes(s, value).is_ok_and(|b| b == copied.as_slice()) => {}
        Ok(()) => {
            return Err(format!(
                "copy_serialized wrote {} for the value's bytes {}",
                hex(copied.as_slice()),
                hex(&bytes[start..end])
            ))
        }
        Err(e) => {
            return Err(format!(
                "copy_serialized failed where deserialize read: {e}"
            ))
        }
    }
    if !same(s, &s.copy(value), value) {
        return Err("copy of a value is not equal to it".to_owned());
    }
    round_trip(s, value, "flink")
}

/// A sub-target reading the values of golden `name` with `s`.
fn values<T, S>(name: &str, s: S) -> Result<Sub, String>
where
    T: PartialEq + 'static,
    S: TypeSerializer<T> + 'static,
{
    let seeds = vec![golden(name)?];
    Ok(Sub::new(name, seeds, move |bytes| {
        let mut input = DataInputView::new(bytes);
        let mut read = 0;
        while !input.is_empty() && read < MAX_VALUES {
            let start = input.position();
            let Ok(value) = s.deserialize(&mut input) else {
                return Ok(if read == 0 {
                    Outcome::Error
                } else {
                    Outcome::Value
                });
            };
            check_value(&s, &value, bytes, start, input.position())?;
            read += 1;
        }
        Ok(Outcome::Value)
    }))
}

/// A sub-target reading golden snapshot `name` and resolving it with `check`.
fn snapshot(
    name: &str,
    check: impl Fn(&FlinkSnapshot) -> Result<(), String> + 'static,
) -> Result<Sub, String> {
    let seeds = vec![golden(&format!("snapshot_{name}"))?];
    Ok(Sub::new(format!("snapshot_{name}"), seeds, move |bytes| {
        let mut input = DataInputView::new(bytes);
        match FlinkSnapshot::read_serializer_snapshot(&mut input) {
            Ok(snapshot) => {
                // A message is built for whatever it names (corrupt names included).
                let _ = format!("{snapshot:?}");
                check(&snapshot)?;
                Ok(Outcome::Value)
            }
            Err(e) => {
                let _ = e.to_string();
                Ok(Outcome::Error)
            }
        }
    }))
}

/// Resolves `snapshot` against `s`; the verdict or the incompatibility's message.
fn resolves<T, S: TypeSerializer<T>>(snapshot: &FlinkSnapshot, s: &S) -> Result<(), String> {
    match resolve(snapshot, s) {
        Ok(_) => Ok(()),
        Err(inc) => {
            let _ = inc.to_string();
            Ok(())
        }
    }
}

/// What a migration reader of `compatibility` reads of the values in `seed`, round-tripped.
fn migrates<T: PartialEq + 'static, S: TypeSerializer<T>>(
    compatibility: Compatibility<T>,
    s: &S,
    seed: &[u8],
) -> Result<(), String> {
    let read = |f: &dyn Fn(&mut DataInputView<'_>) -> typeinfo::Result<T>| {
        let mut input = DataInputView::new(seed);
        for _ in 0..MAX_VALUES {
            match f(&mut input) {
                Ok(v) => round_trip(s, &v, "migrated")?,
                Err(_) => break,
            }
        }
        Ok(())
    };
    match compatibility {
        Compatibility::AsIs => read(&|i| s.deserialize(i)),
        Compatibility::AfterMigration(reader) => read(&|i| reader.read(i)),
        Compatibility::Reconfigured(r) => read(&|i| r.deserialize(i)),
        Compatibility::Incompatible(inc) => {
            let _ = inc.to_string();
            Ok(())
        }
    }
}

/// The value sub-targets: one per golden file of a serializer a job's state commonly holds.
fn value_subs() -> Result<Vec<Sub>, String> {
    Ok(vec![
        values("boolean", BooleanSerializer)?,
        values("byte", ByteSerializer)?,
        values("short", ShortSerializer)?,
        values("char", CharSerializer)?,
        values("int", IntSerializer)?,
        values("long", LongSerializer)?,
        values("double", DoubleSerializer)?,
        values::<String, _>("string", StringSerializer)?,
        values::<Vec<Option<String>>, _>("string_array", StringArraySerializer)?,
        values("integer_array", GenericArraySerializer::new(IntSerializer))?,
        values::<Vec<String>, _>("list_string", ListSerializer::new(StringSerializer))?,
        values::<Vec<(String, Option<i32>)>, _>(
            "map_string_int",
            MapSerializer::with_null_values(StringSerializer, IntSerializer),
        )?,
        values::<Option<Vec<Option<String>>>, _>(
            "extracted_list_string",
            Nullable::new(ListSerializer::new(Nullable::new(StringSerializer))),
        )?,
        values::<BTreeMap<String, Option<i64>>, _>(
            "extracted_map_string_long",
            BTreeMap::<String, Option<i64>>::flink_serializer(),
        )?,
        values::<(String, i32), _>("tuple2", TupleSerializer((StringSerializer, IntSerializer)))?,
        values::<typeinfo_flink_compat::Row<(Option<String>, Option<i32>)>, _>(
            "row",
            RowSerializer((StringSerializer, IntSerializer)),
        )?,
        values::<typeinfo_flink_compat::Instant, _>("instant", InstantSerializer)?,
        values::<BigDecimal, _>("big_decimal", BigDecSerializer)?,
        values::<Side, _>("enum", Side::flink_serializer())?,
        values::<Order, _>("pojo_order", Order::flink_serializer())?,
        values::<Option<Order>, _>("pojo_order_nulls", Order::flink_serializer())?,
        values("nullable_long_padded", Nullable::padded(LongSerializer))?,
    ])
}

/// The committed Flink savepoint `name` (written by Flink 2.3's own job): its files, by name.
fn savepoint_files(name: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../flink-compat/tests/savepoints")
        .join(name);
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let bytes = std::fs::read(entry.path()).map_err(|e| e.to_string())?;
        files.push((name, bytes));
    }
    files.sort();
    Ok(files)
}

/// A sub-target that corrupts file `victim` of Flink savepoint `name` (the others whole):
/// each case writes the savepoint into a scratch directory with the mutated file, opens it
/// and dumps every operator; an error is fine, a panic is not, and what reads must print.
fn savepoint_sub(name: &str, victim: usize) -> Result<Sub, String> {
    let files = savepoint_files(name)?;
    let (victim_name, seed) = files
        .get(victim)
        .map(|(n, b)| (n.clone(), b.clone()))
        .ok_or_else(|| format!("savepoint {name} has no file {victim}"))?;
    let label = if victim_name == "_metadata" {
        "_metadata".to_owned()
    } else {
        format!("file{victim}")
    };
    Ok(Sub::new(
        format!("savepoint_{name}_{label}"),
        vec![seed],
        move |bytes| {
            let dir = crate::targets::scratch_dir()?;
            for (file, content) in &files {
                let content = if *file == victim_name { bytes } else { content };
                std::fs::write(dir.path().join(file), content).map_err(|e| e.to_string())?;
            }
            let Ok(savepoint) = typeinfo_flink_compat::savepoint::FlinkSavepoint::open(dir.path())
            else {
                return Ok(Outcome::Error);
            };
            match savepoint.dump() {
                Ok(operators) => {
                    for op in &operators {
                        let _ = op.lines();
                    }
                    Ok(Outcome::Value)
                }
                Err(e) => {
                    let _ = e.to_string();
                    Ok(Outcome::Error)
                }
            }
        },
    ))
}

/// Builds the sub-targets.
pub fn build(_g: &mut Gen) -> Result<Vec<Sub>, String> {
    let mut subs = value_subs()?;
    // Every file of a hashmap savepoint and of a snappy-compressed RocksDB one.
    for name in ["hashmap", "rocksdb_snappy"] {
        for victim in 0..savepoint_files(name)?.len() {
            subs.push(savepoint_sub(name, victim)?);
        }
    }
    let orders = golden("pojo_order")?;
    subs.push(snapshot("pojo_order", move |s| {
        let order = Order::flink_serializer();
        migrates(resolve_pojo::<Order>(s), &order, &orders)
    })?);
    let sides = golden("enum")?;
    subs.push(snapshot("enum", move |s| {
        migrates(resolve_enum::<Side>(s), &Side::flink_serializer(), &sides)
    })?);
    subs.push(snapshot("string", |s| {
        resolves::<String, _>(s, &StringSerializer)
    })?);
    subs.push(snapshot("int", |s| resolves(s, &IntSerializer))?);
    subs.push(snapshot("list_string", |s| {
        resolves::<Vec<String>, _>(s, &ListSerializer::new(StringSerializer))
    })?);
    subs.push(snapshot("map_string_int", |s| {
        resolves::<Vec<(String, i32)>, _>(s, &MapSerializer::new(StringSerializer, IntSerializer))
    })?);
    subs.push(snapshot("tuple2", |s| {
        resolves::<(String, i32), _>(s, &TupleSerializer((StringSerializer, IntSerializer)))
    })?);
    subs.push(snapshot("kryo_local_date", |s| {
        resolves(s, &IntSerializer)
    })?);
    // The design's example must decode as 14 bytes (a guard on the seed itself).
    let order: Order = from_bytes(&Order::flink_serializer(), &golden("pojo_order")?)
        .map_err(|e| format!("pojo_order: {e}"))?;
    if order.user_id.as_deref() != Some("u1") {
        return Err(format!("pojo_order reads as {order:?}"));
    }
    Ok(subs)
}
