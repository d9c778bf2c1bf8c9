//! Flink's serializer snapshots (`TypeSerializerSnapshot`) as Flink 2.3 writes them into a
//! savepoint's metadata, read into a [`FlinkSnapshot`] tree.
//!
//! The bytes (`TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot`): an `int`
//! proxy version (2), then the versioned snapshot: the snapshot class's name (`writeUTF`), an
//! `int` version, then the class's own body:
//!
//! - serializers without configuration (`IntSerializer$IntSerializerSnapshot`, the other
//!   primitives, `String`, the time types, `BigInteger`/`BigDecimal`, primitive and `String`
//!   arrays): nothing;
//! - composites (`CompositeTypeSerializerSnapshot`: `ListSerializerSnapshot`,
//!   `MapSerializerSnapshot`, `GenericArraySerializerSnapshot`, `NullableSerializerSnapshot`,
//!   `TupleSerializerSnapshot`, `RowSerializerSnapshot`): the magic `int` 911108, the outer
//!   snapshot's `int` version and its body (the array's component class, the null padding's
//!   length, the tuple class, the row's kind flag), then the nested snapshots: the magic
//!   `int` 1333245, an `int` version (1), an `int` count, and each nested versioned snapshot;
//! - `EnumSerializerSnapshot`: the enum class, an `int` count, each constant's name;
//! - `PojoSerializerSnapshot`: the POJO class, then three `LinkedOptionalMap`s (fields and
//!   their snapshots, registered subclasses, other subclasses). A `LinkedOptionalMap` is a
//!   `long` header `0x4f2c69a3d70`, an `int` size, and per entry its name (`writeUTF`), then
//!   key and value each as a `boolean` (present) and, when present, an `int` length and that
//!   many bytes (a field's key: its declaring class and its name; a value: a versioned
//!   snapshot);
//! - `KryoSerializerSnapshot`: the generic type's class and three `LinkedOptionalMap`s of
//!   Kryo registrations, read only far enough to name them: Kryo's bytes are not readable
//!   here, and resolving such a snapshot says so.
//!
//! - the snapshots of a savepoint's namespaces and timers: `VoidNamespaceSerializer`,
//!   `TimeWindow.Serializer` and `GlobalWindow.Serializer` (no body), `TimerSerializerSnapshot`
//!   (a composite of the key's and the namespace's snapshots).
//!
//! Any other snapshot class (a user's own serializer, Avro, Scala, `Either`, `Value` types)
//! is an error that names it: its body has no length, so nothing after it can be read.

use typeinfo::{DataInputView, Error, Result, MAX_SNAPSHOT_DEPTH};

use crate::java_io;

/// The version of the proxy around a snapshot in Flink's metadata.
const PROXY_VERSION: i32 = 2;
/// `CompositeTypeSerializerSnapshot.MAGIC_NUMBER`.
const COMPOSITE_MAGIC: i32 = 911_108;
/// `NestedSerializersSnapshotDelegate.MAGIC_NUMBER`.
const NESTED_MAGIC: i32 = 1_333_245;
/// `LinkedOptionalMapSerializer.HEADER`.
const OPTIONAL_MAP_HEADER: i64 = 0x4f2_c69a_3d70;

const BASE: &str = "org.apache.flink.api.common.typeutils.base.";
const RUNTIME: &str = "org.apache.flink.api.java.typeutils.runtime.";

/// Serializers whose snapshot has no body: `<package><Name>$<Name>Snapshot`.
const SIMPLE: &[&str] = &[
    "BooleanSerializer",
    "ByteSerializer",
    "ShortSerializer",
    "CharSerializer",
    "IntSerializer",
    "LongSerializer",
    "FloatSerializer",
    "DoubleSerializer",
    "StringSerializer",
    "InstantSerializer",
    "DateSerializer",
    "SqlDateSerializer",
    "SqlTimeSerializer",
    "SqlTimestampSerializer",
    "LocalDateSerializer",
    "LocalTimeSerializer",
    "LocalDateTimeSerializer",
    "BigIntSerializer",
    "BigDecSerializer",
    "VoidSerializer",
    "array.BooleanPrimitiveArraySerializer",
    "array.BytePrimitiveArraySerializer",
    "array.CharPrimitiveArraySerializer",
    "array.DoublePrimitiveArraySerializer",
    "array.FloatPrimitiveArraySerializer",
    "array.IntPrimitiveArraySerializer",
    "array.LongPrimitiveArraySerializer",
    "array.ShortPrimitiveArraySerializer",
    "array.StringArraySerializer",
];

/// A Flink serializer snapshot: its class, its version and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlinkSnapshot {
    /// The snapshot class (`org.apache.flink.api.common.typeutils.base.IntSerializer$IntSerializerSnapshot`).
    pub class: String,
    /// The snapshot's version.
    pub version: i32,
    /// What the snapshot holds.
    pub content: SnapshotContent,
}

/// What a [`FlinkSnapshot`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotContent {
    /// A serializer without configuration, by its Flink name (`IntSerializer`,
    /// `IntPrimitiveArraySerializer`).
    Simple {
        /// The serializer's class name without its package.
        serializer: String,
    },
    /// A composite: the serializer's name, its outer configuration and its parts.
    Composite {
        /// `ListSerializer`, `MapSerializer`, `GenericArraySerializer`, `NullableSerializer`,
        /// `TupleSerializer` or `RowSerializer`.
        serializer: String,
        /// The outer snapshot's version.
        outer_version: i32,
        /// The outer configuration.
        outer: Outer,
        /// The nested snapshots (element; key and value; fields).
        nested: Vec<FlinkSnapshot>,
    },
    /// A Java enum.
    Enum {
        /// The enum class.
        enum_class: String,
        /// Its constants, by ordinal.
        constants: Vec<String>,
    },
    /// A POJO.
    Pojo {
        /// The POJO class.
        pojo_class: String,
        /// Its fields, in Flink's order (the order of their bytes).
        fields: Vec<PojoFieldSnapshot>,
        /// Registered subclasses, by class name.
        registered_subclasses: Vec<String>,
        /// Other subclasses Flink had seen, by class name.
        subclasses: Vec<String>,
    },
    /// A generic type that Flink serialized with Kryo: not readable here.
    Kryo {
        /// The generic type's class.
        type_class: String,
        /// The Kryo registrations' names.
        registrations: Vec<String>,
    },
}

/// The outer configuration of a composite snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outer {
    /// None (`ListSerializer`, `MapSerializer`).
    None,
    /// `GenericArraySerializer`: the component class.
    ComponentClass(String),
    /// `NullableSerializer`: the length of a null's padding (0: not padded).
    NullPadding(i32),
    /// `TupleSerializer`: the tuple class.
    TupleClass(String),
    /// `RowSerializer`: whether rows carry their `RowKind` (Flink 1.11 and later).
    RowKind(bool),
}

/// One field of a POJO snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PojoFieldSnapshot {
    /// The field's Java name.
    pub name: String,
    /// The class that declares it.
    pub declaring_class: String,
    /// The snapshot of its serializer (`None` when Flink wrote none: the field was gone).
    pub snapshot: Option<FlinkSnapshot>,
}

impl FlinkSnapshot {
    /// Reads a snapshot as Flink writes it into a savepoint's metadata
    /// (`TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot`).
    ///
    /// # Errors
    ///
    /// Short or corrupt input, a proxy version other than 2, nesting past
    /// [`MAX_SNAPSHOT_DEPTH`], or a snapshot class this crate does not know (named).
    pub fn read_serializer_snapshot(input: &mut DataInputView<'_>) -> Result<Self> {
        let proxy = java_io::read_i32(input)?;
        if proxy != PROXY_VERSION {
            return Err(Error::UnsupportedSnapshotVersion {
                kind: "TypeSerializerSnapshotSerializationProxy".to_owned(),
                version: proxy as u32,
                supported: PROXY_VERSION as u32,
            });
        }
        Self::read_versioned(input, 0)
    }

    /// Reads a versioned snapshot (`TypeSerializerSnapshot.writeVersionedSnapshot`): class,
    /// version, body.
    ///
    /// # Errors
    ///
    /// As [`read_serializer_snapshot`](Self::read_serializer_snapshot).
    pub fn read_versioned(input: &mut DataInputView<'_>, depth: usize) -> Result<Self> {
        if depth > MAX_SNAPSHOT_DEPTH {
            return Err(Error::DepthLimitExceeded {
                limit: MAX_SNAPSHOT_DEPTH,
            });
        }
        let class = java_io::read_utf(input)?;
        let version = java_io::read_i32(input)?;
        let content = read_content(&class, input, depth)?;
        Ok(Self {
            class,
            version,
            content,
        })
    }

    /// The Flink serializer the snapshot is of (`IntSerializer`, `PojoSerializer`,
    /// `KryoSerializer`).
    pub fn serializer_name(&self) -> &str {
        match &self.content {
            SnapshotContent::Simple { serializer }
            | SnapshotContent::Composite { serializer, .. } => {
                serializer.rsplit('.').next().unwrap_or(serializer)
            }
            SnapshotContent::Enum { .. } => "EnumSerializer",
            SnapshotContent::Pojo { .. } => "PojoSerializer",
            SnapshotContent::Kryo { .. } => "KryoSerializer",
        }
    }
}

fn corrupt(what: impl Into<String>) -> Error {
    Error::CorruptSnapshot(what.into())
}

fn read_content(
    class: &str,
    input: &mut DataInputView<'_>,
    depth: usize,
) -> Result<SnapshotContent> {
    if let Some(name) = class.strip_prefix(BASE) {
        if let Some(serializer) = SIMPLE
            .iter()
            .find(|s| name == format!("{s}${}Snapshot", s.rsplit('.').next().unwrap_or(s)))
        {
            return Ok(SnapshotContent::Simple {
                serializer: serializer
                    .rsplit('.')
                    .next()
                    .unwrap_or(serializer)
                    .to_owned(),
            });
        }
        match name {
            "ListSerializerSnapshot" => return read_composite("ListSerializer", input, depth),
            "MapSerializerSnapshot" => return read_composite("MapSerializer", input, depth),
            "GenericArraySerializerSnapshot" => {
                return read_composite("GenericArraySerializer", input, depth)
            }
            "EnumSerializer$EnumSerializerSnapshot" => return read_enum(input),
            _ => {}
        }
    }
    match class {
        "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot" => {
            return Ok(simple("VoidNamespaceSerializer"))
        }
        "org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer$TimeWindowSerializerSnapshot" => {
            return Ok(simple("TimeWindowSerializer"))
        }
        "org.apache.flink.streaming.api.windowing.windows.GlobalWindow$Serializer$GlobalWindowSerializerSnapshot" => {
            return Ok(simple("GlobalWindowSerializer"))
        }
        "org.apache.flink.streaming.api.operators.TimerSerializerSnapshot" => {
            return read_composite("TimerSerializer", input, depth)
        }
        _ => {}
    }
    match class.strip_prefix(RUNTIME) {
        Some("NullableSerializer$NullableSerializerSnapshot") => {
            read_composite("NullableSerializer", input, depth)
        }
        Some("TupleSerializerSnapshot") => read_composite("TupleSerializer", input, depth),
        Some("RowSerializer$RowSerializerSnapshot") => read_composite("RowSerializer", input, depth),
        Some("PojoSerializerSnapshot") => read_pojo(input, depth),
        Some("kryo.KryoSerializerSnapshot") => read_kryo(input),
        _ => Err(Error::UnknownSnapshotKind(format!(
            "{class} (a Flink serializer without a Rust counterpart: a custom serializer, Avro, Scala or a Value type)"
        ))),
    }
}

fn simple(serializer: &str) -> SnapshotContent {
    SnapshotContent::Simple {
        serializer: serializer.to_owned(),
    }
}

fn read_outer(serializer: &str, input: &mut DataInputView<'_>) -> Result<Outer> {
    Ok(match serializer {
        "GenericArraySerializer" => Outer::ComponentClass(java_io::read_utf(input)?),
        "NullableSerializer" => Outer::NullPadding(java_io::read_i32(input)?),
        "TupleSerializer" => Outer::TupleClass(java_io::read_utf(input)?),
        "RowSerializer" => Outer::RowKind(java_io::read_bool(input)?),
        _ => Outer::None,
    })
}

fn read_composite(
    serializer: &str,
    input: &mut DataInputView<'_>,
    depth: usize,
) -> Result<SnapshotContent> {
    if java_io::read_i32(input)? != COMPOSITE_MAGIC {
        return Err(corrupt(format!(
            "{serializer} snapshot lacks the composite magic number"
        )));
    }
    let outer_version = java_io::read_i32(input)?;
    let outer = read_outer(serializer, input)?;
    if java_io::read_i32(input)? != NESTED_MAGIC {
        return Err(corrupt(format!(
            "{serializer} snapshot lacks the nested snapshots' magic number"
        )));
    }
    let nested_version = java_io::read_i32(input)?;
    if nested_version != 1 {
        return Err(corrupt(format!(
            "nested snapshots of version {nested_version}"
        )));
    }
    // Every nested snapshot takes at least its class name's length and its version.
    let count = java_io::read_len(input, 6)?;
    let mut nested = Vec::with_capacity(count.min(64));
    for _ in 0..count {
        nested.push(FlinkSnapshot::read_versioned(input, depth + 1)?);
    }
    Ok(SnapshotContent::Composite {
        serializer: serializer.to_owned(),
        outer_version,
        outer,
        nested,
    })
}

fn read_enum(input: &mut DataInputView<'_>) -> Result<SnapshotContent> {
    let enum_class = java_io::read_utf(input)?;
    let count = java_io::read_len(input, 2)?;
    let mut constants = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        constants.push(java_io::read_utf(input)?);
    }
    Ok(SnapshotContent::Enum {
        enum_class,
        constants,
    })
}

/// One entry of a `LinkedOptionalMap`: its name, and its key's and value's bytes when
/// present.
struct OptionalEntry<'a> {
    name: String,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
}

fn read_frame<'a>(input: &mut DataInputView<'a>) -> Result<Option<&'a [u8]>> {
    if !java_io::read_bool(input)? {
        return Ok(None);
    }
    let len = java_io::read_len(input, 1)?;
    input.read_bytes(len).map(Some)
}

fn read_optional_map<'a>(input: &mut DataInputView<'a>) -> Result<Vec<OptionalEntry<'a>>> {
    if java_io::read_i64(input)? != OPTIONAL_MAP_HEADER {
        return Err(corrupt("a LinkedOptionalMap lacks its header"));
    }
    // Every entry takes at least a name's length and two flags.
    let count = java_io::read_len(input, 4)?;
    let mut entries = Vec::with_capacity(count.min(64));
    for _ in 0..count {
        let name = java_io::read_utf(input)?;
        let key = read_frame(input)?;
        let value = read_frame(input)?;
        entries.push(OptionalEntry { name, key, value });
    }
    Ok(entries)
}

/// Reads a versioned snapshot that must fill `bytes` exactly.
fn snapshot_in_frame(bytes: &[u8], depth: usize) -> Result<FlinkSnapshot> {
    let mut frame = DataInputView::new(bytes);
    let snapshot = FlinkSnapshot::read_versioned(&mut frame, depth + 1)?;
    if !frame.is_empty() {
        return Err(corrupt(format!(
            "{} trailing bytes after a nested snapshot",
            frame.remaining()
        )));
    }
    Ok(snapshot)
}

fn read_pojo(input: &mut DataInputView<'_>, depth: usize) -> Result<SnapshotContent> {
    let pojo_class = java_io::read_utf(input)?;
    let mut fields = Vec::new();
    for entry in read_optional_map(input)? {
        let declaring_class = match entry.key {
            Some(key) => {
                let mut key = DataInputView::new(key);
                let class = java_io::read_utf(&mut key)?;
                let _name = java_io::read_utf(&mut key)?;
                class
            }
            None => String::new(),
        };
        let snapshot = entry
            .value
            .map(|v| snapshot_in_frame(v, depth))
            .transpose()?;
        fields.push(PojoFieldSnapshot {
            name: entry.name,
            declaring_class,
            snapshot,
        });
    }
    let registered_subclasses = read_optional_map(input)?
        .into_iter()
        .map(|e| e.name)
        .collect();
    let subclasses = read_optional_map(input)?
        .into_iter()
        .map(|e| e.name)
        .collect();
    Ok(SnapshotContent::Pojo {
        pojo_class,
        fields,
        registered_subclasses,
        subclasses,
    })
}

fn read_kryo(input: &mut DataInputView<'_>) -> Result<SnapshotContent> {
    let type_class = java_io::read_utf(input)?;
    let registrations = read_optional_map(input)?
        .into_iter()
        .map(|e| e.name)
        .collect();
    // Default serializers and default serializer classes.
    read_optional_map(input)?;
    read_optional_map(input)?;
    Ok(SnapshotContent::Kryo {
        type_class,
        registrations,
    })
}
