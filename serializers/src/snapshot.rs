//! Serializer snapshots: the versioned description of a byte layout.
//!
//! A snapshot is an envelope of a kind id (which layout), a version (of that kind's
//! payload), a payload (kind-specific parameters such as an array length or a struct's
//! field names) and nested snapshots (element, field or variant serializers). It is
//! enough to read, or at least skip, bytes of the layout without the Rust type that wrote
//! them: see [`SnapshotRegistry`](crate::SnapshotRegistry). The byte form is specified in
//! `FORMAT.md`.

use crate::error::{Error, Result};
use crate::input::DataInputView;
use crate::output::DataOutputView;

/// Magic bytes that start a standalone snapshot ([`SerializerSnapshot::to_bytes`]).
pub const SNAPSHOT_MAGIC: [u8; 4] = *b"TISS";
/// Version of the standalone envelope.
pub const SNAPSHOT_FORMAT_VERSION: u8 = 1;
/// The deepest nesting a snapshot may have (the outermost snapshot is at depth 0): deeper
/// input is refused as corrupt, and writing a deeper snapshot is an error, so that every
/// snapshot written can be read back.
pub const MAX_SNAPSHOT_DEPTH: usize = 64;

/// The kind ids of the built-in layouts; each names the layout of the same name in
/// `FORMAT.md`.
#[allow(missing_docs)]
pub mod kinds {
    pub const BOOL: &str = "bool";
    pub const CHAR: &str = "char";
    pub const U8: &str = "u8";
    pub const U16: &str = "u16";
    pub const U32: &str = "u32";
    pub const U64: &str = "u64";
    pub const U128: &str = "u128";
    pub const I8: &str = "i8";
    pub const I16: &str = "i16";
    pub const I32: &str = "i32";
    pub const I64: &str = "i64";
    pub const I128: &str = "i128";
    pub const F32: &str = "f32";
    pub const F64: &str = "f64";
    pub const UNIT: &str = "unit";
    pub const STRING: &str = "string";
    pub const LIST: &str = "list";
    pub const SET: &str = "set";
    pub const MAP: &str = "map";
    pub const ARRAY: &str = "array";
    pub const OPTION: &str = "option";
    pub const TUPLE: &str = "tuple";
    pub const DURATION: &str = "duration";
    pub const SYSTEM_TIME: &str = "system_time";
    pub const DECIMAL: &str = "decimal";
    pub const STRUCT: &str = "struct";
    pub const ENUM: &str = "enum";
    pub const SERDE: &str = "serde";
    /// A reference to the enclosing struct or enum of the same name (recursive types).
    pub const RECURSIVE: &str = "recursive";

    /// Every built-in kind: the layouts this crate restores without a registered restorer
    /// (`restored` holds a restorer for each, and a test checks that the two lists agree).
    pub(crate) const BUILTIN: &[&str] = &[
        BOOL,
        CHAR,
        U8,
        U16,
        U32,
        U64,
        U128,
        I8,
        I16,
        I32,
        I64,
        I128,
        F32,
        F64,
        UNIT,
        STRING,
        LIST,
        SET,
        MAP,
        ARRAY,
        OPTION,
        TUPLE,
        DURATION,
        SYSTEM_TIME,
        DECIMAL,
        STRUCT,
        ENUM,
        SERDE,
        RECURSIVE,
        super::varint_kinds::U16,
        super::varint_kinds::U32,
        super::varint_kinds::U64,
        super::varint_kinds::I16,
        super::varint_kinds::I32,
        super::varint_kinds::I64,
    ];

    /// Whether `kind` is a built-in layout.
    pub(crate) fn is_builtin(kind: &str) -> bool {
        BUILTIN.contains(&kind)
    }
}

/// The kind ids of the varint layouts.
pub mod varint_kinds {
    /// Unsigned LEB128 of a `u16`.
    pub const U16: &str = "varint_u16";
    /// Unsigned LEB128 of a `u32`.
    pub const U32: &str = "varint_u32";
    /// Unsigned LEB128 of a `u64`.
    pub const U64: &str = "varint_u64";
    /// Zigzag LEB128 of an `i16`.
    pub const I16: &str = "varint_i16";
    /// Zigzag LEB128 of an `i32`.
    pub const I32: &str = "varint_i32";
    /// Zigzag LEB128 of an `i64`.
    pub const I64: &str = "varint_i64";
}

/// The versioned description of a serializer's byte layout.
///
/// # Examples
///
/// ```
/// use typeinfo_serializers::{SerializerSnapshot, kinds};
///
/// # fn main() -> typeinfo_serializers::Result<()> {
/// let list_of_i64 = SerializerSnapshot::new(kinds::LIST, 1)
///     .with_nested(vec![SerializerSnapshot::new(kinds::I64, 1)]);
/// let bytes = list_of_i64.to_bytes()?;
/// assert_eq!(SerializerSnapshot::from_bytes(&bytes)?, list_of_i64);
/// assert_eq!(list_of_i64.type_name(), "Vec<i64>");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SerializerSnapshot {
    kind: String,
    version: u32,
    payload: Vec<u8>,
    nested: Vec<SerializerSnapshot>,
}

impl SerializerSnapshot {
    /// A snapshot of `kind` at `version`, with no payload and no nested snapshots.
    pub fn new(kind: impl Into<String>, version: u32) -> Self {
        Self {
            kind: kind.into(),
            version,
            payload: Vec::new(),
            nested: Vec::new(),
        }
    }

    /// Sets the kind-specific payload.
    pub fn with_payload(mut self, payload: Vec<u8>) -> Self {
        self.payload = payload;
        self
    }

    /// Sets the nested snapshots (elements, fields, variants).
    pub fn with_nested(mut self, nested: Vec<SerializerSnapshot>) -> Self {
        self.nested = nested;
        self
    }

    /// The kind id: which layout this is.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The version of the kind's payload.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The kind-specific payload.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// The nested snapshots.
    pub fn nested(&self) -> &[SerializerSnapshot] {
        &self.nested
    }

    /// The nested snapshot at `index`, or a corrupt-snapshot error naming the kind.
    pub fn nested_at(&self, index: usize) -> Result<&SerializerSnapshot> {
        self.nested.get(index).ok_or_else(|| {
            Error::CorruptSnapshot(format!(
                "`{}` snapshot has {} nested snapshots, expected at least {}",
                self.kind,
                self.nested.len(),
                index + 1
            ))
        })
    }

    /// Fails unless this snapshot's version is at most `supported`.
    pub fn check_version(&self, supported: u32) -> Result<()> {
        if self.version == 0 || self.version > supported {
            return Err(Error::UnsupportedSnapshotVersion {
                kind: self.kind.clone(),
                version: self.version,
                supported,
            });
        }
        Ok(())
    }

    /// A readable name of the type this layout belongs to (`Vec<i64>`, `Order`).
    ///
    /// Used in incompatibility messages. Struct and enum snapshots carry their name in
    /// their payload; other kinds are named after the Rust types that write them.
    pub fn type_name(&self) -> String {
        let nested = |i: usize| {
            self.nested
                .get(i)
                .map_or_else(|| "?".to_owned(), |s| s.type_name())
        };
        match self.kind.as_str() {
            kinds::UNIT => "()".to_owned(),
            kinds::STRING => "String".to_owned(),
            kinds::LIST => format!("Vec<{}>", nested(0)),
            kinds::SET => format!("Set<{}>", nested(0)),
            kinds::MAP => format!("Map<{}, {}>", nested(0), nested(1)),
            kinds::OPTION => format!("Option<{}>", nested(0)),
            kinds::ARRAY => {
                let n = read_array_payload(self).unwrap_or(0);
                format!("[{}; {n}]", nested(0))
            }
            kinds::TUPLE => {
                let parts: Vec<String> = self.nested.iter().map(|s| s.type_name()).collect();
                if parts.len() == 1 {
                    format!("({},)", parts[0])
                } else {
                    format!("({})", parts.join(", "))
                }
            }
            kinds::DURATION => "Duration".to_owned(),
            varint if varint.starts_with("varint_") => {
                format!("{} (varint)", &varint["varint_".len()..])
            }
            kinds::SYSTEM_TIME => "SystemTime".to_owned(),
            kinds::DECIMAL => "Decimal".to_owned(),
            kinds::STRUCT | kinds::ENUM | kinds::SERDE | kinds::RECURSIVE => {
                DataInputView::new(&self.payload)
                    .read_len_prefixed()
                    .ok()
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .map_or_else(|| self.kind.clone(), str::to_owned)
            }
            other => other.to_owned(),
        }
    }

    /// Restores a serializer that reads, skips and copies bytes of this layout without the
    /// Rust type that wrote them (shorthand for [`SnapshotRegistry::restore`]).
    ///
    /// # Errors
    ///
    /// As [`SnapshotRegistry::restore`].
    ///
    /// [`SnapshotRegistry::restore`]: crate::SnapshotRegistry::restore
    pub fn restore_serializer(
        &self,
        registry: &crate::SnapshotRegistry,
    ) -> Result<crate::RestoredSerializer> {
        registry.restore(self)
    }

    /// How deep the nested snapshots go below this one (0 with none).
    pub fn nesting_depth(&self) -> usize {
        self.nested
            .iter()
            .map(|n| n.nesting_depth().saturating_add(1))
            .max()
            .unwrap_or(0)
    }

    /// Fails when a `recursive` snapshot refers to an enclosing struct or enum with no
    /// option, collection or enum variant in between (`struct N { next: N }`): every value
    /// of such a layout would be infinite, and reading one would never end. References to
    /// a type outside this snapshot are left to whoever holds the enclosing one.
    ///
    /// # Errors
    ///
    /// [`Error::CorruptSnapshot`] naming the type.
    pub fn check_recursion(&self) -> Result<()> {
        check_recursion(self, &mut Vec::new(), 0, false)
    }

    /// Writes the envelope (no magic header) to `out`.
    ///
    /// # Errors
    ///
    /// [`Error::DepthLimitExceeded`] for nesting deeper than [`MAX_SNAPSHOT_DEPTH`], which
    /// [`read_from`](Self::read_from) would refuse; nothing is written then.
    pub fn write_to(&self, out: &mut DataOutputView) -> Result<()> {
        if self.nesting_depth() > MAX_SNAPSHOT_DEPTH {
            return Err(Error::DepthLimitExceeded {
                limit: MAX_SNAPSHOT_DEPTH,
            });
        }
        self.write_unchecked(out);
        Ok(())
    }

    fn write_unchecked(&self, out: &mut DataOutputView) {
        out.write_len_prefixed(self.kind.as_bytes());
        out.write_varint(u64::from(self.version));
        out.write_len_prefixed(&self.payload);
        out.write_len(self.nested.len());
        for nested in &self.nested {
            nested.write_unchecked(out);
        }
    }

    /// Reads an envelope written by [`write_to`](Self::write_to).
    ///
    /// # Errors
    ///
    /// [`Error::CorruptSnapshot`] (or an end-of-input error) for malformed bytes, including
    /// nesting deeper than [`MAX_SNAPSHOT_DEPTH`] and recursion with no way out
    /// ([`check_recursion`](Self::check_recursion)).
    pub fn read_from(input: &mut DataInputView<'_>) -> Result<Self> {
        let snapshot = Self::read_at_depth(input, 0)?;
        snapshot.check_recursion()?;
        Ok(snapshot)
    }

    fn read_at_depth(input: &mut DataInputView<'_>, depth: usize) -> Result<Self> {
        if depth > MAX_SNAPSHOT_DEPTH {
            return Err(Error::CorruptSnapshot(format!(
                "nesting deeper than {MAX_SNAPSHOT_DEPTH}"
            )));
        }
        let kind = std::str::from_utf8(input.read_len_prefixed()?)
            .map_err(|_| Error::CorruptSnapshot("kind id is not UTF-8".to_owned()))?
            .to_owned();
        if kind.is_empty() {
            return Err(Error::CorruptSnapshot("empty kind id".to_owned()));
        }
        let version = u32::try_from(input.read_varint()?)
            .map_err(|_| Error::CorruptSnapshot(format!("`{kind}` version exceeds u32")))?;
        let payload = input.read_len_prefixed()?.to_vec();
        // Every nested envelope takes at least 4 bytes.
        let count = input.read_len(4)?;
        let mut nested = Vec::with_capacity(crate::capacity_for::<Self>(count, 4));
        for _ in 0..count {
            nested.push(Self::read_at_depth(input, depth + 1)?);
        }
        Ok(Self {
            kind,
            version,
            payload,
            nested,
        })
    }

    /// The standalone byte form: magic `TISS`, envelope version, then the envelope.
    ///
    /// # Errors
    ///
    /// As [`write_to`](Self::write_to): nesting deeper than [`MAX_SNAPSHOT_DEPTH`].
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = DataOutputView::with_capacity(64);
        out.write_bytes(&SNAPSHOT_MAGIC);
        out.write_u8(SNAPSHOT_FORMAT_VERSION);
        self.write_to(&mut out)?;
        Ok(out.into_inner())
    }

    /// Reads the standalone byte form; trailing bytes are an error.
    ///
    /// # Errors
    ///
    /// [`Error::CorruptSnapshot`] for a wrong magic, an unknown envelope version, malformed
    /// or trailing bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut input = DataInputView::new(bytes);
        let magic: [u8; 4] = input
            .read_array()
            .map_err(|_| Error::CorruptSnapshot("shorter than the header".to_owned()))?;
        if magic != SNAPSHOT_MAGIC {
            return Err(Error::CorruptSnapshot(format!("bad magic {magic:02x?}")));
        }
        let version = input.read_u8()?;
        if version != SNAPSHOT_FORMAT_VERSION {
            return Err(Error::CorruptSnapshot(format!(
                "unknown envelope version {version}"
            )));
        }
        let snapshot = Self::read_from(&mut input)?;
        if !input.is_empty() {
            return Err(Error::CorruptSnapshot(format!(
                "{} trailing bytes",
                input.remaining()
            )));
        }
        Ok(snapshot)
    }
}

/// Helpers to build and parse the payloads of struct, enum and serde snapshots.
pub mod payload {
    use super::*;

    /// Writes a list of names: count, then each length-prefixed.
    pub fn write_names<'a>(
        out: &mut DataOutputView,
        names: impl ExactSizeIterator<Item = &'a str>,
    ) {
        out.write_len(names.len());
        for name in names {
            out.write_len_prefixed(name.as_bytes());
        }
    }

    /// Reads one length-prefixed UTF-8 name.
    pub fn read_name(input: &mut DataInputView<'_>) -> Result<String> {
        let bytes = input.read_len_prefixed()?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| Error::CorruptSnapshot("name is not UTF-8".to_owned()))
    }

    /// Reads a list of names written by [`write_names`].
    ///
    /// # Errors
    ///
    /// Short input, a count larger than the bytes left, a name that is not UTF-8.
    pub fn read_names(input: &mut DataInputView<'_>) -> Result<Vec<String>> {
        let count = input.read_len(1)?;
        let mut names = Vec::with_capacity(crate::capacity_for::<String>(count, 1));
        for _ in 0..count {
            names.push(read_name(input)?);
        }
        Ok(names)
    }
}

/// Whether bytes of this layout can hold no value of the nested layout: an option, a
/// collection, an enum (one variant at a time), an empty array, or a kind this crate does
/// not know (a custom layout may well be a collection).
fn is_way_out(snapshot: &SerializerSnapshot) -> bool {
    match snapshot.kind() {
        kinds::OPTION | kinds::LIST | kinds::SET | kinds::MAP | kinds::ENUM => true,
        kinds::ARRAY => read_array_payload(snapshot).is_ok_and(|n| n == 0),
        kinds::STRUCT | kinds::TUPLE | kinds::RECURSIVE => false,
        other => !kinds::is_builtin(other),
    }
}

/// The name a struct, enum or recursive snapshot carries in its payload.
fn payload_name(snapshot: &SerializerSnapshot) -> Option<&str> {
    let mut input = DataInputView::new(snapshot.payload());
    input
        .read_len_prefixed()
        .ok()
        .and_then(|b| std::str::from_utf8(b).ok())
}

/// [`SerializerSnapshot::check_recursion`]: `open` holds the structs and enums enclosing
/// `snapshot` with the count of ways out above each, `ways_out` the count above `snapshot`;
/// `variant` says that `snapshot` is a variant of an enum (a struct layout that carries the
/// variant's name, not a type's: recursive references never name it, and a variant named
/// like the type it holds, `Folder(Box<Folder>)`, must not shadow that type).
fn check_recursion<'s>(
    snapshot: &'s SerializerSnapshot,
    open: &mut Vec<(&'s str, usize)>,
    ways_out: usize,
    variant: bool,
) -> Result<()> {
    let named = match snapshot.kind() {
        kinds::ENUM => true,
        kinds::STRUCT => !variant,
        _ => false,
    };
    if snapshot.kind() == kinds::RECURSIVE {
        let name = payload_name(snapshot).unwrap_or_default();
        if open
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .is_some_and(|(_, w)| *w == ways_out)
        {
            return Err(Error::CorruptSnapshot(format!(
                "recursive reference to `{name}` inside `{name}` with no option, collection or enum variant between: \
                 every value would be infinite"
            )));
        }
        return Ok(());
    }
    if named {
        open.push((payload_name(snapshot).unwrap_or_default(), ways_out));
    }
    let inner = if is_way_out(snapshot) {
        ways_out + 1
    } else {
        ways_out
    };
    let result = snapshot
        .nested
        .iter()
        .try_for_each(|n| check_recursion(n, open, inner, snapshot.kind() == kinds::ENUM));
    if named {
        open.pop();
    }
    result
}

/// The most elements an array snapshot may announce.
const MAX_ARRAY_LEN: usize = 1 << 32;

/// Writes the payload of an array snapshot: the length.
pub(crate) fn array_payload(len: usize) -> Vec<u8> {
    let mut payload = DataOutputView::new();
    payload.write_len(len);
    payload.into_inner()
}

/// Reads the length from the payload of an array snapshot.
pub(crate) fn read_array_payload(snapshot: &SerializerSnapshot) -> Result<usize> {
    let n = DataInputView::new(snapshot.payload()).read_varint()?;
    usize::try_from(n)
        .ok()
        .filter(|n| *n <= MAX_ARRAY_LEN)
        .ok_or_else(|| Error::CorruptSnapshot(format!("array length {n} too large")))
}
