//! The machinery behind the golden files: one [`Case`] per serializer and list of values,
//! the exact equality ([`Pinned`]) that tells apart what `PartialEq` calls equal but
//! writes differently, and the checks run against committed fixtures.
//!
//! The cases themselves are listed in [`crate::builtin_cases`].

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::{self, Debug, Write as _};
use std::hash::{BuildHasher, Hash};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use typeinfo::{
    DataInputView, SerializerSnapshot, SnapshotRegistry, TypeInfo, TypeSerializer, Verdict,
};

/// The directory of the current fixture set, relative to the crate root.
pub const FIXTURE_DIR: &str = "fixtures/v1";

/// Extension of the file holding the values' bytes, back to back.
pub const BIN_EXT: &str = "bin";
/// Extension of the file holding the standalone snapshot bytes.
pub const SNAPSHOT_EXT: &str = "snapshot";

/// How to write missing fixtures, quoted in failure messages.
pub const WRITE_COMMAND: &str =
    "cargo run -p typeinfo-compat-tests --bin write_fixtures -- fixtures/v1";

/// The absolute path of the current fixture set.
pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE_DIR)
}

/// The bytes of one fixture: the values' bytes back to back and the snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixture {
    /// Every value's bytes, back to back, in list order (`<name>.bin`).
    pub bin: Vec<u8>,
    /// The standalone snapshot ([`SerializerSnapshot::to_bytes`], `<name>.snapshot`).
    pub snapshot: Vec<u8>,
}

impl Fixture {
    /// Reads `<dir>/<name>.bin` and `<dir>/<name>.snapshot`.
    ///
    /// # Errors
    ///
    /// A message naming the missing or unreadable file and how to write it.
    pub fn read(dir: &Path, name: &str) -> Result<Self, String> {
        let read = |ext: &str| {
            let path = dir.join(format!("{name}.{ext}"));
            std::fs::read(&path).map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    format!(
                        "fixture {} is missing: write it with `{WRITE_COMMAND}` (run from the workspace root; \
                         it writes only missing files) and commit it",
                        path.display()
                    )
                } else {
                    format!("cannot read fixture {}: {e}", path.display())
                }
            })
        };
        Ok(Self {
            bin: read(BIN_EXT)?,
            snapshot: read(SNAPSHOT_EXT)?,
        })
    }
}

/// Equality exact enough for golden files, and whether bytes are reproducible.
pub trait Pinned {
    /// Equal and written the same: floats by bits (`-0.0`, NaN payloads), decimals by
    /// unscaled value and scale (`1.0` is not `1.00`), hash collections by content.
    fn same(&self, other: &Self) -> bool;

    /// Whether writing this value gives the same bytes every time; false for hash
    /// collections of more than one element, whose iteration order is random.
    fn deterministic(&self) -> bool {
        true
    }
}

macro_rules! pinned_by_eq {
    ($($ty:ty),* $(,)?) => {$(
        impl Pinned for $ty {
            fn same(&self, other: &Self) -> bool {
                self == other
            }
        }
    )*};
}

pinned_by_eq!(
    (),
    bool,
    char,
    u8,
    u16,
    u32,
    u64,
    u128,
    i8,
    i16,
    i32,
    i64,
    i128,
    String,
    bytes::Bytes,
    Duration,
    SystemTime
);

impl Pinned for f32 {
    fn same(&self, other: &Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

impl Pinned for f64 {
    fn same(&self, other: &Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

impl Pinned for rust_decimal::Decimal {
    fn same(&self, other: &Self) -> bool {
        self.mantissa() == other.mantissa() && self.scale() == other.scale()
    }
}

impl Pinned for bigdecimal::BigDecimal {
    fn same(&self, other: &Self) -> bool {
        self.as_bigint_and_exponent() == other.as_bigint_and_exponent()
    }
}

fn all_same<'a, T: Pinned + 'a>(
    a: impl ExactSizeIterator<Item = &'a T>,
    b: impl ExactSizeIterator<Item = &'a T>,
) -> bool {
    a.len() == b.len() && a.zip(b).all(|(x, y)| x.same(y))
}

macro_rules! pinned_seq {
    ($($coll:ident),*) => {$(
        impl<T: Pinned> Pinned for $coll<T> {
            fn same(&self, other: &Self) -> bool {
                all_same(self.iter(), other.iter())
            }
            fn deterministic(&self) -> bool {
                self.iter().all(Pinned::deterministic)
            }
        }
    )*};
}

pinned_seq!(Vec, VecDeque, BTreeSet);

impl<T: Pinned, const N: usize> Pinned for [T; N] {
    fn same(&self, other: &Self) -> bool {
        all_same(self.iter(), other.iter())
    }
    fn deterministic(&self) -> bool {
        self.iter().all(Pinned::deterministic)
    }
}

impl<T: Pinned> Pinned for Option<T> {
    fn same(&self, other: &Self) -> bool {
        match (self, other) {
            (Some(a), Some(b)) => a.same(b),
            (None, None) => true,
            _ => false,
        }
    }
    fn deterministic(&self) -> bool {
        self.as_ref().is_none_or(Pinned::deterministic)
    }
}

macro_rules! pinned_pointer {
    ($($ptr:ident),*) => {$(
        impl<T: Pinned> Pinned for $ptr<T> {
            fn same(&self, other: &Self) -> bool {
                (**self).same(other)
            }
            fn deterministic(&self) -> bool {
                (**self).deterministic()
            }
        }
    )*};
}

pinned_pointer!(Box, Arc);

impl<K: Pinned, V: Pinned> Pinned for BTreeMap<K, V> {
    fn same(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other)
                .all(|((ka, va), (kb, vb))| ka.same(kb) && va.same(vb))
    }
    fn deterministic(&self) -> bool {
        self.iter()
            .all(|(k, v)| k.deterministic() && v.deterministic())
    }
}

impl<K: Pinned + Eq + Hash, V: Pinned, H: BuildHasher> Pinned for HashMap<K, V, H> {
    fn same(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self.iter().all(|(k, v)| {
                other
                    .get_key_value(k)
                    .is_some_and(|(ko, vo)| k.same(ko) && v.same(vo))
            })
    }
    fn deterministic(&self) -> bool {
        self.len() <= 1
            && self
                .iter()
                .all(|(k, v)| k.deterministic() && v.deterministic())
    }
}

impl<T: Pinned + Eq + Hash, H: BuildHasher> Pinned for HashSet<T, H> {
    fn same(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|v| other.get(v).is_some_and(|o| v.same(o)))
    }
    fn deterministic(&self) -> bool {
        self.len() <= 1 && self.iter().all(Pinned::deterministic)
    }
}

macro_rules! pinned_tuple {
    ($($T:ident . $i:tt),+) => {
        impl<$($T: Pinned),+> Pinned for ($($T,)+) {
            fn same(&self, other: &Self) -> bool {
                true $(&& self.$i.same(&other.$i))+
            }
            fn deterministic(&self) -> bool {
                true $(&& self.$i.deterministic())+
            }
        }
    };
}

pinned_tuple!(A.0);
pinned_tuple!(A.0, B.1);
pinned_tuple!(A.0, B.1, C.2);
pinned_tuple!(A.0, B.1, C.2, D.3);
pinned_tuple!(A.0, B.1, C.2, D.3, E.4);
pinned_tuple!(A.0, B.1, C.2, D.3, E.4, F.5);
pinned_tuple!(A.0, B.1, C.2, D.3, E.4, F.5, G.6);
pinned_tuple!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7);
pinned_tuple!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8);
pinned_tuple!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9);
pinned_tuple!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10);
pinned_tuple!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11);

/// One golden case, type-erased: a name, a serializer and a fixed list of values.
pub trait GoldenCase {
    /// The file stem of the fixture (`i64`, `vec_option_tuple_string_u64`).
    fn name(&self) -> &str;

    /// The Rust type, as written in the case list.
    fn type_name(&self) -> &str;

    /// How many values the fixture holds.
    fn value_count(&self) -> usize;

    /// Today's fixture: every value's bytes back to back, and the snapshot.
    ///
    /// # Errors
    ///
    /// The serializer cannot be created or fails to write a value.
    fn write(&self) -> Result<Fixture, String>;

    /// Checks a fixture against today's code; returns every problem found (empty when all
    /// is well):
    ///
    /// - decoding the bytes gives exactly the listed values, in order, and consumes every
    ///   byte (and typed `skip` stops at the same boundaries);
    /// - today's serializer writes identical bytes for each value (except hash
    ///   collections of more than one element, compared by decoding only);
    /// - the snapshot decodes and resolves against today's serializer as
    ///   [`Verdict::AsIs`];
    /// - the registry restores the snapshot, and the restored serializer reads every
    ///   value (consuming every byte, stopping where the typed one stopped), skips to the
    ///   same boundaries, writes the values it read back to the identical bytes, and
    ///   reports the fixture's snapshot.
    fn check(&self, fixture: &Fixture) -> Vec<String>;

    /// A readable hex dump of today's snapshot and each value's bytes, for `insta`.
    ///
    /// # Errors
    ///
    /// As [`write`](Self::write).
    fn hex_dump(&self) -> Result<String, String>;
}

/// A golden case for values of `T`.
pub struct Case<T> {
    name: &'static str,
    type_name: &'static str,
    values: Vec<T>,
}

impl<T> Case<T> {
    /// A case named `name` (the file stem) over `values`, in this order.
    ///
    /// The values of a committed case never change: its fixture pins exactly them. Add a
    /// new case for new values.
    pub fn new(name: &'static str, type_name: &'static str, values: Vec<T>) -> Self {
        Self {
            name,
            type_name,
            values,
        }
    }
}

impl<T> Debug for Case<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("type", &self.type_name)
            .finish()
    }
}

/// Lower-case hex with a space between bytes.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Hex of `bytes`, 32 bytes a line, every line after the first indented by `indent`.
fn hex_lines(bytes: &[u8], indent: &str) -> String {
    if bytes.is_empty() {
        return "(empty)".to_owned();
    }
    bytes
        .chunks(32)
        .map(hex)
        .collect::<Vec<_>>()
        .join(&format!("\n{indent}"))
}

fn slice(bytes: &[u8], range: &Range<usize>) -> Vec<u8> {
    bytes[range.clone()].to_vec()
}

impl<T> GoldenCase for Case<T>
where
    T: TypeInfo + Pinned + Debug,
{
    fn name(&self) -> &str {
        self.name
    }

    fn type_name(&self) -> &str {
        self.type_name
    }

    fn value_count(&self) -> usize {
        self.values.len()
    }

    fn write(&self) -> Result<Fixture, String> {
        let serializer =
            typeinfo::serializer::<T>().map_err(|e| format!("creating the serializer: {e}"))?;
        let mut bin = Vec::new();
        for (i, value) in self.values.iter().enumerate() {
            let bytes = typeinfo::to_bytes(&serializer, value)
                .map_err(|e| format!("writing value #{i}: {e}"))?;
            bin.extend_from_slice(&bytes);
        }
        let snapshot = serializer
            .snapshot()
            .to_bytes()
            .map_err(|e| format!("writing the snapshot: {e}"))?;
        Ok(Fixture { bin, snapshot })
    }

    fn check(&self, fixture: &Fixture) -> Vec<String> {
        let mut problems = Vec::new();
        let serializer = match typeinfo::serializer::<T>() {
            Ok(s) => s,
            Err(e) => return vec![format!("creating the serializer: {e}")],
        };
        let bin = fixture.bin.as_slice();

        // The typed serializer reads exactly the listed values and every byte.
        let mut bounds: Vec<Range<usize>> = Vec::with_capacity(self.values.len());
        let mut input = DataInputView::new(bin);
        for (i, expected) in self.values.iter().enumerate() {
            let start = input.position();
            match serializer.deserialize(&mut input) {
                Ok(value) => {
                    if !value.same(expected) {
                        problems.push(format!(
                            "value #{i}: the fixture decodes to {value:?}, expected {expected:?}"
                        ));
                    }
                    bounds.push(start..input.position());
                }
                Err(e) => {
                    problems.push(format!(
                        "value #{i}: decoding the fixture failed at byte {start}: {e} (expected {expected:?})"
                    ));
                    break;
                }
            }
        }
        let typed_complete = bounds.len() == self.values.len();
        if typed_complete && !input.is_empty() {
            problems.push(format!(
                "{} trailing bytes after the {} values: {}",
                input.remaining(),
                self.values.len(),
                hex(input.rest())
            ));
        }

        // Typed skip stops at the same boundaries.
        let mut input = DataInputView::new(bin);
        for (i, range) in bounds.iter().enumerate() {
            if let Err(e) = serializer.skip(&mut input) {
                problems.push(format!("value #{i}: typed skip failed: {e}"));
                break;
            }
            if input.position() != range.end {
                problems.push(format!(
                    "value #{i}: typed skip stopped at byte {}, deserialize at byte {}",
                    input.position(),
                    range.end
                ));
                break;
            }
        }

        // Today's serializer writes identical bytes.
        for (i, (expected, range)) in self.values.iter().zip(&bounds).enumerate() {
            if !expected.deterministic() {
                continue;
            }
            match typeinfo::to_bytes(&serializer, expected) {
                Ok(today) if today == bin[range.clone()] => {}
                Ok(today) => problems.push(format!(
                    "value #{i} ({expected:?}): today's bytes differ from the fixture\n  fixture: {}\n  today:   {}",
                    hex(&bin[range.clone()]),
                    hex(&today)
                )),
                Err(e) => problems.push(format!("value #{i}: today's serializer fails to write it: {e}")),
            }
        }

        // The snapshot decodes and resolves as is.
        let snapshot = match SerializerSnapshot::from_bytes(&fixture.snapshot) {
            Ok(s) => s,
            Err(e) => {
                problems.push(format!(
                    "the snapshot does not decode: {e} (bytes {})",
                    hex(&fixture.snapshot)
                ));
                return problems;
            }
        };
        let registry = SnapshotRegistry::default();
        let compatibility = serializer.resolve(&snapshot, &registry);
        if compatibility.verdict() != Verdict::AsIs {
            problems.push(format!(
                "resolving today's serializer against the fixture's snapshot {snapshot:?} gives {compatibility:?}, expected AsIs"
            ));
        }

        // The registry restores the snapshot, and the restored serializer reads every value.
        let restored = match registry.restore(&snapshot) {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!(
                    "the registry cannot restore the snapshot {snapshot:?}: {e}"
                ));
                return problems;
            }
        };
        if restored.snapshot() != snapshot {
            problems.push(format!(
                "the restored serializer reports the snapshot {:?}, restored from {snapshot:?}",
                restored.snapshot()
            ));
        }
        let mut input = DataInputView::new(bin);
        let mut restored_complete = true;
        for i in 0..self.values.len() {
            let start = input.position();
            let value = match restored.deserialize(&mut input) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(format!(
                        "value #{i}: the restored serializer fails to read it at byte {start}: {e}"
                    ));
                    restored_complete = false;
                    break;
                }
            };
            let range = start..input.position();
            if let Some(typed) = bounds.get(i) {
                if *typed != range {
                    problems.push(format!(
                        "value #{i}: the restored serializer read bytes {range:?}, the typed one {typed:?}"
                    ));
                }
            }
            match typeinfo::to_bytes(&restored, &value) {
                Ok(again) if again == bin[range.clone()] => {}
                Ok(again) => problems.push(format!(
                    "value #{i}: the restored serializer read {value:?} but writes it back differently\n  fixture: {}\n  again:   {}",
                    hex(&slice(bin, &range)),
                    hex(&again)
                )),
                Err(e) => problems.push(format!("value #{i}: the restored serializer cannot write {value:?} back: {e}")),
            }
        }
        if restored_complete && !input.is_empty() {
            problems.push(format!(
                "the restored serializer leaves {} trailing bytes after the {} values",
                input.remaining(),
                self.values.len()
            ));
        }
        let mut input = DataInputView::new(bin);
        for (i, range) in bounds.iter().enumerate() {
            match restored.skip(&mut input) {
                Ok(()) if input.position() == range.end => {}
                Ok(()) => {
                    problems.push(format!(
                        "value #{i}: the restored skip stopped at byte {}, expected {}",
                        input.position(),
                        range.end
                    ));
                    break;
                }
                Err(e) => {
                    problems.push(format!("value #{i}: the restored skip failed: {e}"));
                    break;
                }
            }
        }
        problems
    }

    fn hex_dump(&self) -> Result<String, String> {
        let serializer =
            typeinfo::serializer::<T>().map_err(|e| format!("creating the serializer: {e}"))?;
        let mut out = String::new();
        let _ = writeln!(out, "== {} : {}", self.name, self.type_name);
        let snapshot = serializer
            .snapshot()
            .to_bytes()
            .map_err(|e| format!("writing the snapshot: {e}"))?;
        let _ = writeln!(out, "snapshot: {}", hex_lines(&snapshot, "          "));
        for (i, value) in self.values.iter().enumerate() {
            let bytes = typeinfo::to_bytes(&serializer, value)
                .map_err(|e| format!("writing value #{i}: {e}"))?;
            let prefix = format!("#{i:<2} ");
            if value.deterministic() {
                let _ = writeln!(
                    out,
                    "{prefix}{}",
                    hex_lines(&bytes, &" ".repeat(prefix.len()))
                );
            } else {
                let _ = writeln!(
                    out,
                    "{prefix}({} bytes; hash iteration order varies)",
                    bytes.len()
                );
            }
        }
        Ok(out)
    }
}
