//! Serializers restored from snapshots of the built-in layouts, reading into [`Value`].
//!
//! # One codec per layout
//!
//! This module knows no byte of any layout. Each built-in layout is owned by its module
//! under [`builtin`](crate::builtin) (its length prefixes, tags, capacity rules and
//! checks), and the type-free reader of a layout is either the typed serializer itself
//! over `Value`'s parts ([`AsValue`]: a `string` is the [`StringSerializer`]), or a small
//! restored serializer the owning module writes with the same functions its typed
//! serializer calls (lists and options, on the path of every level of a recursive value;
//! sets and maps, whose `Value`s are lists; arrays and tuples of runtime length; `SystemTime` and decimals, whose `Value`s are their parts; structs, enums and
//! recursive references in [`record`](crate::builtin::record)). A check added to a layout
//! holds on both paths.
//!
//! # Bounds
//!
//! The restored reader is bounded as the typed one is (see the
//! [`DataInputView`](crate::DataInputView) docs): lengths by the bytes left and the
//! zero-sized budget (one unit per element, as the typed reader spends), capacity reserved
//! up front by [`capacity_for`](crate::capacity_for), and recursion by the depth budget,
//! spent by the `recursive` layout. A snapshot comes from outside, so it also chooses how
//! many layouts a level of recursion passes through (a derived type: two to four; a crafted
//! snapshot: up to the 64 levels of an envelope). A `recursive` reference therefore spends
//! one level per [`LAYOUTS_PER_LEVEL`](crate::LAYOUTS_PER_LEVEL) layouts between it and the
//! type it names (at least one: derived types spend one, as their typed serializers do), so
//! that the `Value` it builds is never more than `LAYOUTS_PER_LEVEL × max_depth` layouts
//! deep, and each level runs on a stack with room for it
//! ([`ensure_stack`](crate::ensure_stack)), so that no build and no thread overflows before
//! the budget ends a read. Lists and options, which a level of a recursive value passes
//! through, have readers of their own (one frame each). A snapshot whose recursion has no
//! way out (`struct N { next: N }`) is refused as corrupt
//! ([`SerializerSnapshot::check_recursion`]).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::builtin::primitive::*;
use crate::builtin::{array, decimal, list, map, option, record, set, time, tuple, varint};
use crate::error::{Error, Result};
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::restoring::{mismatch, RestoreLevel};
use crate::serializer::TypeSerializer;
use crate::serializer::{RestoredSerializer, SnapshotRegistry};
use crate::snapshot::{kinds, SerializerSnapshot};
use crate::value::Value;
use crate::{
    DurationSerializer, StringSerializer, VarI16Serializer, VarI32Serializer, VarI64Serializer,
    VarU16Serializer, VarU32Serializer, VarU64Serializer, VecSerializer,
};

/// A typed serializer of `T` as a serializer of the [`Value`] that holds a `T`: `wrap`
/// makes the value, `unwrap` finds the `T` in one.
pub(crate) struct AsValue<S, T> {
    inner: S,
    wrap: fn(T) -> Value,
    unwrap: fn(&Value) -> Option<&T>,
    snapshot: SerializerSnapshot,
    _t: PhantomData<fn() -> T>,
}

impl<S: fmt::Debug, T> fmt::Debug for AsValue<S, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AsValue").field(&self.inner).finish()
    }
}

/// A restored serializer that reads and writes with the typed serializer `inner`.
fn as_value<S: TypeSerializer<T>, T: 'static>(
    inner: S,
    snapshot: &SerializerSnapshot,
    wrap: fn(T) -> Value,
    unwrap: fn(&Value) -> Option<&T>,
) -> RestoredSerializer {
    Arc::new(AsValue {
        inner,
        wrap,
        unwrap,
        snapshot: snapshot.clone(),
        _t: PhantomData,
    })
}

impl<S: TypeSerializer<T>, T: 'static> TypeSerializer<Value> for AsValue<S, T> {
    fn serialize(&self, value: &Value, out: &mut DataOutputView) -> Result<()> {
        match (self.unwrap)(value) {
            Some(v) => self.inner.serialize(v, out),
            None => Err(mismatch(&self.inner, value)),
        }
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Value> {
        // A match, not `map`: a level of a recursive value passes here (options, lists),
        // and a debug build keeps the temporaries of `map` apart.
        match self.inner.deserialize(input) {
            Ok(v) => Ok((self.wrap)(v)),
            Err(e) => Err(e),
        }
    }
    fn copy(&self, value: &Value) -> Value {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        self.inner.skip(input)
    }
    fn copy_serialized(
        &self,
        input: &mut DataInputView<'_>,
        out: &mut DataOutputView,
    ) -> Result<()> {
        self.inner.copy_serialized(input, out)
    }
    fn fixed_length(&self) -> Option<usize> {
        self.inner.fixed_length()
    }
    fn min_length(&self) -> usize {
        self.inner.min_length()
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.snapshot.clone()
    }
}

/// Restores the serializer of one built-in kind.
type Restore = fn(&SerializerSnapshot, &SnapshotRegistry) -> Result<RestoredSerializer>;

/// A restorer of a layout whose `Value` variant holds the typed serializer's value.
macro_rules! typed {
    ($ser:expr, $variant:ident) => {
        (|s, _| {
            Ok(as_value($ser, s, Value::$variant, |v| match v {
                Value::$variant(x) => Some(x),
                _ => None,
            }))
        }) as Restore
    };
}

/// Every built-in kind and its restorer: the one list of them.
const BUILTIN: &[(&str, Restore)] = &[
    (kinds::BOOL, typed!(BoolSerializer, Bool)),
    (kinds::CHAR, typed!(CharSerializer, Char)),
    (kinds::U8, typed!(U8Serializer, U8)),
    (kinds::U16, typed!(U16Serializer, U16)),
    (kinds::U32, typed!(U32Serializer, U32)),
    (kinds::U64, typed!(U64Serializer, U64)),
    (kinds::U128, typed!(U128Serializer, U128)),
    (kinds::I8, typed!(I8Serializer, I8)),
    (kinds::I16, typed!(I16Serializer, I16)),
    (kinds::I32, typed!(I32Serializer, I32)),
    (kinds::I64, typed!(I64Serializer, I64)),
    (kinds::I128, typed!(I128Serializer, I128)),
    (kinds::F32, typed!(F32Serializer, F32)),
    (kinds::F64, typed!(F64Serializer, F64)),
    (kinds::UNIT, |s, _| {
        Ok(as_value(
            UnitSerializer,
            s,
            |()| Value::Unit,
            |v| matches!(v, Value::Unit).then_some(&()),
        ))
    }),
    (kinds::STRING, typed!(StringSerializer, String)),
    (kinds::LIST, list::restore),
    (kinds::SET, set::restore),
    (kinds::MAP, map::restore),
    (kinds::ARRAY, array::restore),
    (kinds::OPTION, option::restore),
    (kinds::TUPLE, tuple::restore),
    (kinds::DURATION, typed!(DurationSerializer, Duration)),
    (kinds::SYSTEM_TIME, time::restore_system_time),
    (kinds::DECIMAL, decimal::restore),
    (kinds::STRUCT, record::restore_struct),
    (kinds::ENUM, record::restore_enum),
    // The serde bridge writes its bytes as a `Vec<u8>` is written: a length, then the bytes.
    (
        kinds::SERDE,
        typed!(VecSerializer::new(U8Serializer), Opaque),
    ),
    (kinds::RECURSIVE, record::restore_recursive),
    (varint::varint_kinds::U16, typed!(VarU16Serializer, U16)),
    (varint::varint_kinds::U32, typed!(VarU32Serializer, U32)),
    (varint::varint_kinds::U64, typed!(VarU64Serializer, U64)),
    (varint::varint_kinds::I16, typed!(VarI16Serializer, I16)),
    (varint::varint_kinds::I32, typed!(VarI32Serializer, I32)),
    (varint::varint_kinds::I64, typed!(VarI64Serializer, I64)),
];

pub(crate) fn restore_builtin(
    snapshot: &SerializerSnapshot,
    registry: &SnapshotRegistry,
) -> Result<Option<RestoredSerializer>> {
    let Some((_, restore)) = BUILTIN.iter().find(|(k, _)| *k == snapshot.kind()) else {
        return Ok(None);
    };
    snapshot.check_version(1)?;
    restore(snapshot, registry).map(Some)
}

impl SnapshotRegistry {
    /// Whether a restorer for `kind` is known.
    pub fn knows(&self, kind: &str) -> bool {
        self.custom.contains_key(kind) || kinds::is_builtin(kind)
    }

    /// Restores a serializer for the layout `snapshot` describes.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownSnapshotKind`] when no restorer knows the kind,
    /// [`Error::UnsupportedSnapshotVersion`] for a newer version than this code reads,
    /// [`Error::CorruptSnapshot`] for a malformed payload.
    pub fn restore(&self, snapshot: &SerializerSnapshot) -> Result<RestoredSerializer> {
        // How deep in the snapshot this layout is: a recursive reference spends the depth
        // budget by the layouts between it and the type it refers to.
        let _level = RestoreLevel::enter();
        if let Some(restorer) = self.custom.get(snapshot.kind()) {
            return restorer(snapshot, self);
        }
        restore_builtin(snapshot, self)?
            .ok_or_else(|| Error::UnknownSnapshotKind(snapshot.kind().to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_restorers_are_those_of_the_built_in_kinds() {
        let mut restorers: Vec<&str> = BUILTIN.iter().map(|(k, _)| *k).collect();
        let mut builtin: Vec<&str> = kinds::BUILTIN.to_vec();
        restorers.sort_unstable();
        builtin.sort_unstable();
        assert_eq!(restorers, builtin);
    }
}
