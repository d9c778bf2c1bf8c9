//! [`Lazy`]: a field serializer created on first use, for recursive types.
//!
//! It is also the recursion point of a derived type: every read, skip or write through it
//! spends one level of the view's depth budget (the smaller of the view's limit and the
//! config's [`max_depth`](SerializerConfig::max_depth)), so that hostile bytes end in
//! [`Error::DepthLimitExceeded`] rather than a stack overflow, and a value too deep to read
//! back is refused when written. Types without recursion never pass through it and spend
//! nothing.
//!
//! Each level also runs on a stack with room for it ([`ensure_stack`]): a level of a
//! derived type through collections (`Doc` in `Vec<Doc>`) takes kilobytes of stack in a
//! debug build, so that 512 of them overflowed the 2 MiB of a timely worker's thread. The
//! depth budget bounds how far a read goes; the stack grows on the heap where the thread's
//! own runs short, in every build.

use std::fmt;
use std::sync::{Arc, OnceLock};

use typeinfo_serializers::{
    ensure_stack, Compatibility, DataInputView, DataOutputView, Error, Incompatibility,
    MigrationReader, Result, SerializerSnapshot, SnapshotRegistry, TypeSerializer,
};

use crate::config::SerializerConfig;
use crate::type_info::TypeInfo;

/// The serializer of a field whose type contains the enclosing type (`Option<Box<Node>>`
/// in `Node`). Creating it eagerly would recurse forever; this creates it on first use
/// and keeps it.
pub struct Lazy<T: TypeInfo> {
    config: SerializerConfig,
    cell: Arc<OnceLock<Result<T::Serializer>>>,
}

impl<T: TypeInfo> Lazy<T> {
    /// A serializer of `T` that will be created with `config` when first used.
    ///
    /// # Errors
    ///
    /// [`Error::GenericTypeDisabled`] when `T` contains a generic type that `config`
    /// refuses: checked now, from `T`'s description, so that creation never fails later.
    pub fn new(config: &SerializerConfig) -> Result<Self> {
        if config.generic_types_disabled() {
            if let Some(generic) = T::description().first_generic() {
                return Err(Error::GenericTypeDisabled {
                    type_name: generic.to_owned(),
                });
            }
        }
        Ok(Self {
            config: config.clone(),
            cell: Arc::new(OnceLock::new()),
        })
    }

    #[inline]
    fn get(&self) -> Result<&T::Serializer> {
        self.cell
            .get_or_init(|| T::create_serializer(&self.config))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Runs `read` one nesting level down `input`.
    #[inline]
    fn read_nested<R>(
        &self,
        input: &mut DataInputView<'_>,
        read: impl FnOnce(&T::Serializer, &mut DataInputView<'_>) -> Result<R>,
    ) -> Result<R> {
        let inner = self.get()?;
        input.enter_within(self.config.max_depth())?;
        let result = ensure_stack(|| read(inner, input));
        input.leave();
        result
    }

    /// Runs `write` one nesting level down `out`.
    #[inline]
    fn write_nested(
        &self,
        out: &mut DataOutputView,
        write: impl FnOnce(&T::Serializer, &mut DataOutputView) -> Result<()>,
    ) -> Result<()> {
        let inner = self.get()?;
        out.enter_within(self.config.max_depth())?;
        let result = ensure_stack(|| write(inner, out));
        out.leave();
        result
    }
}

impl<T: TypeInfo> Clone for Lazy<T> {
    fn clone(&self) -> Self {
        Self {
            config: self.config.clone(),
            cell: Arc::clone(&self.cell),
        }
    }
}

impl<T: TypeInfo> fmt::Debug for Lazy<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lazy<{}>", std::any::type_name::<T>())
    }
}

fn unavailable<T>(e: &Error) -> SerializerSnapshot {
    // A serializer that cannot be created cannot have written bytes either; describe it
    // by name so that resolution reports it.
    SerializerSnapshot::new(
        format!("unavailable({}): {e}", std::any::type_name::<T>()),
        1,
    )
}

impl<T: TypeInfo> TypeSerializer<T> for Lazy<T> {
    #[inline]
    fn serialize(&self, value: &T, out: &mut DataOutputView) -> Result<()> {
        self.write_nested(out, |s, out| s.serialize(value, out))
    }
    #[inline]
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<T> {
        self.read_nested(input, |s, input| s.deserialize(input))
    }
    fn deserialize_into(&self, reuse: &mut T, input: &mut DataInputView<'_>) -> Result<()> {
        self.read_nested(input, |s, input| s.deserialize_into(reuse, input))
    }
    fn copy(&self, value: &T) -> T {
        match self.get() {
            Ok(s) => s.copy(value),
            // `new` checked the only reason creation fails (a disabled generic type), so
            // this cannot happen; `copy` has no error channel to report it.
            Err(e) => unreachable!(
                "the serializer of `{}` was checked at creation: {e}",
                std::any::type_name::<T>()
            ),
        }
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        self.read_nested(input, |s, input| s.skip(input))
    }
    fn copy_serialized(
        &self,
        input: &mut DataInputView<'_>,
        out: &mut DataOutputView,
    ) -> Result<()> {
        // The bytes copied are read, and spend the read's budget; the copy writes them
        // as they are.
        self.read_nested(input, |s, input| s.copy_serialized(input, out))
    }
    fn fixed_length(&self) -> Option<usize> {
        // A recursive type is never of fixed length, and asking must not recurse.
        None
    }
    fn is_immutable(&self) -> bool {
        false
    }
    fn min_length(&self) -> usize {
        // Recursive values take at least one byte (a tag or a length); asking the inner
        // serializer could recurse.
        1
    }
    fn snapshot(&self) -> SerializerSnapshot {
        match self.get() {
            Ok(s) => s.snapshot(),
            Err(e) => unavailable::<T>(&e),
        }
    }
    fn resolve(&self, old: &SerializerSnapshot, registry: &SnapshotRegistry) -> Compatibility<T> {
        // A migration (or a reconfigured serializer) reads one nesting level down, here, as
        // this serializer reads: a migrated value spends exactly the levels today's
        // serializer spends to write it, so a migration never reads what cannot be written.
        let max_depth = self.config.max_depth();
        match self.get() {
            Ok(s) => match s.resolve(old, registry) {
                Compatibility::AfterMigration(reader) => {
                    Compatibility::AfterMigration(MigrationReader::new(move |input| {
                        input.enter_within(max_depth)?;
                        let value = ensure_stack(|| reader.read(input));
                        input.leave();
                        value
                    }))
                }
                Compatibility::Reconfigured(inner) => {
                    Compatibility::Reconfigured(Arc::new(Nested { inner, max_depth }))
                }
                verdict => verdict,
            },
            Err(e) => Compatibility::Incompatible(
                Incompatibility::new(old.type_name(), std::any::type_name::<T>())
                    .with_detail(e.to_string()),
            ),
        }
    }
}

/// A reconfigured serializer of a recursive field: reads and writes one nesting level
/// down, as [`Lazy`] does.
struct Nested<T> {
    inner: Arc<dyn TypeSerializer<T>>,
    max_depth: usize,
}

impl<T> fmt::Debug for Nested<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Nested").field(&self.inner).finish()
    }
}

impl<T: 'static> TypeSerializer<T> for Nested<T> {
    fn serialize(&self, value: &T, out: &mut DataOutputView) -> Result<()> {
        out.enter_within(self.max_depth)?;
        let result = ensure_stack(|| self.inner.serialize(value, out));
        out.leave();
        result
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<T> {
        input.enter_within(self.max_depth)?;
        let result = ensure_stack(|| self.inner.deserialize(input));
        input.leave();
        result
    }
    fn copy(&self, value: &T) -> T {
        self.inner.copy(value)
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        input.enter_within(self.max_depth)?;
        let result = ensure_stack(|| self.inner.skip(input));
        input.leave();
        result
    }
    fn min_length(&self) -> usize {
        1
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.inner.snapshot()
    }
}
