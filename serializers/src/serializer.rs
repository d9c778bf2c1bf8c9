//! The [`TypeSerializer`] trait, the [`Compatibility`] verdict its `resolve` returns, and
//! the [`SnapshotRegistry`] it resolves against: three types that refer to each other, so
//! they live together (restoring a snapshot is in `restored`, above the built-in layouts).

use std::fmt;

use std::collections::HashMap;
use std::sync::Arc;

use crate::compatibility::{Incompatibility, MigrationReader, Verdict};
use crate::error::Result;
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::snapshot::SerializerSnapshot;
use crate::value::Value;

/// Writes and reads values of `T` as compact, self-delimiting bytes with no type metadata.
///
/// A serializer is stateless and cheap to clone; one instance may be used from many
/// threads at once. The bytes of one value can be decoded alone (no stream state), which
/// is what lets records cross network buffers and live one by one in a key-value store.
///
/// Implement it by hand when a type must control its own layout; run the result through
/// the conformance harness (`testing` feature) to check every rule below.
///
/// # Examples
///
/// ```
/// use typeinfo_serializers::{DataInputView, DataOutputView, StringSerializer, TypeSerializer};
///
/// # fn main() -> typeinfo_serializers::Result<()> {
/// let mut out = DataOutputView::new();
/// StringSerializer.serialize(&"hi".to_owned(), &mut out)?;
/// assert_eq!(out.as_slice(), &[2, b'h', b'i']);
/// let back = StringSerializer.deserialize(&mut DataInputView::new(out.as_slice()))?;
/// assert_eq!(back, "hi");
/// # Ok(())
/// # }
/// ```
pub trait TypeSerializer<T>: fmt::Debug + Send + Sync + 'static {
    /// Appends the bytes of `value` to `out`.
    ///
    /// # Errors
    ///
    /// Built-in serializers never fail; hand-written ones may (a value out of the range
    /// their layout can hold).
    fn serialize(&self, value: &T, out: &mut DataOutputView) -> Result<()>;

    /// Reads one value.
    ///
    /// # Errors
    ///
    /// Short or corrupt input.
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<T>;

    /// Reads one value into `reuse`, keeping its allocations where the type allows.
    ///
    /// # Errors
    ///
    /// Short or corrupt input; `reuse` then holds an unspecified but valid value.
    fn deserialize_into(&self, reuse: &mut T, input: &mut DataInputView<'_>) -> Result<()> {
        *reuse = self.deserialize(input)?;
        Ok(())
    }

    /// A deep copy of `value`.
    fn copy(&self, value: &T) -> T;

    /// Moves past one value without building it.
    ///
    /// # Errors
    ///
    /// Short or corrupt input.
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()>;

    /// Copies the bytes of one value from `input` to `out` without building it.
    ///
    /// # Errors
    ///
    /// Short or corrupt input; nothing is written then.
    fn copy_serialized(
        &self,
        input: &mut DataInputView<'_>,
        out: &mut DataOutputView,
    ) -> Result<()> {
        let start = input.position();
        self.skip(input)?;
        out.write_bytes(input.consumed_since(start));
        Ok(())
    }

    /// The exact byte length of every value, or `None` when it varies.
    fn fixed_length(&self) -> Option<usize> {
        None
    }

    /// Whether values are immutable, so that [`copy`](Self::copy) may share them.
    fn is_immutable(&self) -> bool {
        false
    }

    /// The snapshot of this serializer's layout.
    fn snapshot(&self) -> SerializerSnapshot;

    /// Decides whether bytes written by the serializer that took `old` can be read by this
    /// one, and how.
    ///
    /// The default accepts only an identical snapshot. Serializers whose layout can evolve
    /// (composites, widening primitives) override it.
    fn resolve(&self, old: &SerializerSnapshot, registry: &SnapshotRegistry) -> Compatibility<T> {
        let _ = registry;
        let new = self.snapshot();
        if *old == new {
            Compatibility::AsIs
        } else {
            Compatibility::Incompatible(Incompatibility::between(old, &new))
        }
    }

    /// Writes a slice of values back to back (no length). Plain-old-data serializers
    /// override this with a single copy.
    ///
    /// # Errors
    ///
    /// As [`serialize`](Self::serialize).
    #[doc(hidden)]
    fn serialize_slice(&self, values: &[T], out: &mut DataOutputView) -> Result<()> {
        if let Some(len) = self.fixed_length() {
            out.reserve(len.saturating_mul(values.len()));
        }
        for v in values {
            self.serialize(v, out)?;
        }
        Ok(())
    }

    /// Reads `len` values written back to back (the length was read and checked
    /// already) and appends them to `out`.
    ///
    /// # Errors
    ///
    /// As [`deserialize`](Self::deserialize).
    #[doc(hidden)]
    fn deserialize_append(
        &self,
        len: usize,
        input: &mut DataInputView<'_>,
        out: &mut Vec<T>,
    ) -> Result<()> {
        // At most `capacity_for` up front; the vector grows as elements are actually read.
        out.reserve(crate::capacity_for::<T>(len, self.min_length()));
        // Read through a copy of the cursor: a local that nothing else can point to stays in
        // registers, where the caller's cursor would be stored and reloaded around every
        // write into `out`.
        let mut local = input.clone();
        let result = (|| {
            for _ in 0..len {
                out.push(self.deserialize(&mut local)?);
            }
            Ok(())
        })();
        *input = local;
        result
    }

    /// Skips `len` values written back to back.
    ///
    /// # Errors
    ///
    /// As [`skip`](Self::skip).
    #[doc(hidden)]
    fn skip_many(&self, len: usize, input: &mut DataInputView<'_>) -> Result<()> {
        if let Some(size) = self.fixed_length() {
            return match size.checked_mul(len) {
                Some(total) => input.skip_bytes(total),
                None => Err(crate::Error::LengthTooLarge {
                    len: len as u64,
                    remaining: input.remaining(),
                }),
            };
        }
        for _ in 0..len {
            self.skip(input)?;
        }
        Ok(())
    }

    /// The smallest number of bytes one value takes (used to bound corrupt lengths).
    #[doc(hidden)]
    fn min_length(&self) -> usize {
        self.fixed_length().unwrap_or(1)
    }

    /// Whether [`write_fixed`](Self::write_fixed) writes values: the layout has a fixed
    /// length ([`fixed_length`](Self::fixed_length) is `Some`) and writing never fails.
    /// Primitives, arrays of them and derived structs of such fields say yes.
    #[doc(hidden)]
    fn writes_fixed(&self) -> bool {
        false
    }

    /// Writes `value` into the first [`fixed_length`](Self::fixed_length) bytes of `dst`
    /// (the same bytes [`serialize`](Self::serialize) appends), for a caller that reserved
    /// the room of a whole fixed-length record at once. Callers use it only when
    /// [`writes_fixed`](Self::writes_fixed) is true.
    ///
    /// # Errors
    ///
    /// `dst` shorter than the value, or a serializer that does not write fixed values
    /// (the default).
    #[doc(hidden)]
    fn write_fixed(&self, value: &T, dst: &mut [u8]) -> Result<()> {
        let _ = (value, dst);
        Err(crate::Error::custom(format!(
            "{self:?} does not write fixed-length values into a slice"
        )))
    }

    /// Writes `values` back to back into the start of `dst`, as
    /// [`write_fixed`](Self::write_fixed) writes one value. Plain-old-data serializers
    /// override it with one copy.
    ///
    /// # Errors
    ///
    /// As [`write_fixed`](Self::write_fixed).
    #[doc(hidden)]
    #[inline]
    fn write_fixed_slice(&self, values: &[T], dst: &mut [u8]) -> Result<()> {
        let size = match self.fixed_length() {
            Some(size) => size,
            None if values.is_empty() => return Ok(()),
            None => return self.write_fixed(&values[0], dst),
        };
        let mut dst = dst;
        for v in values {
            let (head, tail) = dst.split_at_mut_checked(size).ok_or_else(short_slot)?;
            self.write_fixed(v, head)?;
            dst = tail;
        }
        Ok(())
    }
}

/// The error of a fixed-length write into a slice too short for the value.
#[cold]
#[inline(never)]
pub(crate) fn short_slot() -> crate::Error {
    crate::Error::custom("slot too short for a fixed-length value")
}

/// A boxed or shared serializer is the serializer it points to.
macro_rules! delegate_through_pointer {
    ($($ptr:ident),*) => {$(
        impl<T, S: TypeSerializer<T> + ?Sized> TypeSerializer<T> for $ptr<S> {
            fn serialize(&self, value: &T, out: &mut DataOutputView) -> Result<()> {
                (**self).serialize(value, out)
            }
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<T> {
                (**self).deserialize(input)
            }
            fn deserialize_into(&self, reuse: &mut T, input: &mut DataInputView<'_>) -> Result<()> {
                (**self).deserialize_into(reuse, input)
            }
            fn copy(&self, value: &T) -> T {
                (**self).copy(value)
            }
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                (**self).skip(input)
            }
            fn copy_serialized(&self, input: &mut DataInputView<'_>, out: &mut DataOutputView) -> Result<()> {
                (**self).copy_serialized(input, out)
            }
            fn fixed_length(&self) -> Option<usize> {
                (**self).fixed_length()
            }
            fn is_immutable(&self) -> bool {
                (**self).is_immutable()
            }
            fn snapshot(&self) -> SerializerSnapshot {
                (**self).snapshot()
            }
            fn resolve(&self, old: &SerializerSnapshot, registry: &SnapshotRegistry) -> Compatibility<T> {
                (**self).resolve(old, registry)
            }
            fn serialize_slice(&self, values: &[T], out: &mut DataOutputView) -> Result<()> {
                (**self).serialize_slice(values, out)
            }
            fn deserialize_append(&self, len: usize, input: &mut DataInputView<'_>, out: &mut Vec<T>) -> Result<()> {
                (**self).deserialize_append(len, input, out)
            }
            fn skip_many(&self, len: usize, input: &mut DataInputView<'_>) -> Result<()> {
                (**self).skip_many(len, input)
            }
            fn min_length(&self) -> usize {
                (**self).min_length()
            }
            fn writes_fixed(&self) -> bool {
                (**self).writes_fixed()
            }
            fn write_fixed(&self, value: &T, dst: &mut [u8]) -> Result<()> {
                (**self).write_fixed(value, dst)
            }
            fn write_fixed_slice(&self, values: &[T], dst: &mut [u8]) -> Result<()> {
                (**self).write_fixed_slice(values, dst)
            }
        }
    )*};
}

delegate_through_pointer!(Box, Arc);

/// Serializes one value into a fresh buffer.
///
/// # Errors
///
/// As [`TypeSerializer::serialize`].
pub fn to_bytes<T, S: TypeSerializer<T> + ?Sized>(serializer: &S, value: &T) -> Result<Vec<u8>> {
    let mut out = DataOutputView::new();
    serializer.serialize(value, &mut out)?;
    Ok(out.into_inner())
}

/// Deserializes exactly one value from `bytes`; trailing bytes are an error.
///
/// # Errors
///
/// Short, corrupt or trailing input.
pub fn from_bytes<T, S: TypeSerializer<T> + ?Sized>(serializer: &S, bytes: &[u8]) -> Result<T> {
    let mut input = DataInputView::new(bytes);
    let value = serializer.deserialize(&mut input)?;
    if !input.is_empty() {
        return Err(crate::Error::TrailingBytes(input.remaining()));
    }
    Ok(value)
}

/// The outcome of resolving a new serializer against the snapshot of an old one.
///
/// Obtained from [`TypeSerializer::resolve`]. When the verdict is
/// [`AfterMigration`](Compatibility::AfterMigration), the carried
/// [`MigrationReader`] reads bytes of the old layout straight into today's type; the
/// caller rewrites every value with the new serializer.
pub enum Compatibility<T> {
    /// The new serializer reads the old bytes as they are.
    AsIs,
    /// Old bytes must be read with the given reader and written again with the new serializer.
    AfterMigration(MigrationReader<T>),
    /// Old bytes are readable by this reconfigured serializer, which should replace the new one.
    Reconfigured(Arc<dyn TypeSerializer<T>>),
    /// The old bytes cannot become values of the new type.
    Incompatible(Incompatibility),
}

impl<T> Compatibility<T> {
    /// The verdict without its payload.
    pub fn verdict(&self) -> Verdict {
        match self {
            Compatibility::AsIs => Verdict::AsIs,
            Compatibility::AfterMigration(_) => Verdict::AfterMigration,
            Compatibility::Reconfigured(_) => Verdict::Reconfigured,
            Compatibility::Incompatible(_) => Verdict::Incompatible,
        }
    }

    /// Whether the old bytes can be used without migration.
    pub fn is_as_is(&self) -> bool {
        self.verdict() == Verdict::AsIs
    }

    /// The incompatibility, if that is the verdict.
    pub fn incompatibility(&self) -> Option<&Incompatibility> {
        match self {
            Compatibility::Incompatible(inc) => Some(inc),
            _ => None,
        }
    }

    /// A reader of old bytes for every compatible verdict (`serializer` is the new one,
    /// used as is), or the incompatibility.
    ///
    /// # Errors
    ///
    /// The [`Incompatibility`] when the verdict is incompatible.
    pub fn into_reader<S>(self, serializer: S) -> Result<FieldReader<T, S>, Incompatibility>
    where
        S: TypeSerializer<T>,
        T: 'static,
    {
        match self {
            Compatibility::AsIs => Ok(FieldReader::Current(serializer)),
            Compatibility::AfterMigration(reader) => Ok(FieldReader::Migrating(reader)),
            Compatibility::Reconfigured(reconfigured) => {
                Ok(FieldReader::Migrating(MigrationReader::new(move |input| {
                    reconfigured.deserialize(input)
                })))
            }
            Compatibility::Incompatible(inc) => Err(inc),
        }
    }
}

impl<T: 'static> Compatibility<T> {
    /// The same verdict for a type that wraps `T` (`Box<T>`, `Some(T)`): a migration reads
    /// the old value and wraps it with `wrap`; a reconfigured serializer becomes a
    /// migration through it.
    pub fn map<U>(self, wrap: impl Fn(T) -> U + Send + Sync + 'static) -> Compatibility<U> {
        match self {
            Compatibility::AsIs => Compatibility::AsIs,
            Compatibility::AfterMigration(reader) => {
                Compatibility::AfterMigration(MigrationReader::new(move |input| {
                    reader.read(input).map(&wrap)
                }))
            }
            Compatibility::Reconfigured(serializer) => {
                Compatibility::AfterMigration(MigrationReader::new(move |input| {
                    serializer.deserialize(input).map(&wrap)
                }))
            }
            Compatibility::Incompatible(inc) => Compatibility::Incompatible(inc),
        }
    }
}

impl<T> fmt::Debug for Compatibility<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compatibility::Incompatible(inc) => f.debug_tuple("Incompatible").field(inc).finish(),
            other => fmt::Debug::fmt(&other.verdict(), f),
        }
    }
}

/// How a composite reads one of its parts from old bytes: with today's serializer when
/// the part is compatible as is, else with a migration reader.
#[derive(Debug, Clone)]
pub enum FieldReader<T, S> {
    /// The part's layout did not change.
    Current(S),
    /// The part is migrated.
    Migrating(MigrationReader<T>),
}

impl<T, S: TypeSerializer<T>> FieldReader<T, S> {
    /// Reads one value.
    ///
    /// # Errors
    ///
    /// Any read error.
    #[inline]
    pub fn read(&self, input: &mut DataInputView<'_>) -> Result<T> {
        match self {
            FieldReader::Current(s) => s.deserialize(input),
            FieldReader::Migrating(r) => r.read(input),
        }
    }

    /// Whether this part needs migration.
    pub fn is_migrating(&self) -> bool {
        match self {
            FieldReader::Current(_) => false,
            FieldReader::Migrating(_) => true,
        }
    }
}

/// A serializer restored from a snapshot: it reads (and skips and copies) bytes of the
/// snapshot's layout into dynamic [`Value`]s.
pub type RestoredSerializer = Arc<dyn TypeSerializer<Value>>;

/// Builds a [`RestoredSerializer`] from a snapshot of one kind. The registry is passed
/// so that nested snapshots can be restored too.
pub type Restorer =
    Arc<dyn Fn(&SerializerSnapshot, &SnapshotRegistry) -> Result<RestoredSerializer> + Send + Sync>;

/// Reads snapshots back by their kind id, without the Rust type that wrote them.
///
/// [`SnapshotRegistry::default`] knows every built-in kind, including the `struct` and
/// `enum` layouts the derive writes. A hand-written serializer with a layout of its own
/// registers a [`Restorer`] under its kind id.
///
/// # Examples
///
/// ```
/// use typeinfo_serializers::{DataInputView, SnapshotRegistry, TypeSerializer, Value, VecSerializer, I32Serializer, to_bytes};
///
/// # fn main() -> typeinfo_serializers::Result<()> {
/// let serializer = VecSerializer::new(I32Serializer);
/// let bytes = to_bytes(&serializer, &vec![7, -1])?;
/// let restored = SnapshotRegistry::default().restore(&serializer.snapshot())?;
/// let value = restored.deserialize(&mut DataInputView::new(&bytes))?;
/// assert_eq!(value, Value::List(vec![Value::I32(7), Value::I32(-1)]));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct SnapshotRegistry {
    pub(crate) custom: HashMap<String, Restorer>,
}

impl SnapshotRegistry {
    /// A registry of the built-in kinds.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the restorer of a custom kind; it takes precedence over a built-in kind
    /// of the same id.
    pub fn register(
        &mut self,
        kind: impl Into<String>,
        restorer: impl Fn(&SerializerSnapshot, &SnapshotRegistry) -> Result<RestoredSerializer>
            + Send
            + Sync
            + 'static,
    ) -> &mut Self {
        self.custom.insert(kind.into(), Arc::new(restorer));
        self
    }
}

impl fmt::Debug for SnapshotRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut kinds: Vec<&String> = self.custom.keys().collect();
        kinds.sort();
        f.debug_struct("SnapshotRegistry")
            .field("custom_kinds", &kinds)
            .finish()
    }
}
