//! The serde-bridged fallback for types without a `TypeInfo` of their own.
//!
//! [`generic_type!`](crate::generic_type) gives a serde type a `TypeInfo` whose bytes are
//! a varint length and the value in [postcard](https://docs.rs/postcard)'s format
//! (chosen because its wire format is stable since 1.0, which savepoints need). Such a
//! type has no schema: its snapshot records only the type's name, any change of the type
//! is on the user, and it is never a key type. This is Flink's Kryo fallback, made
//! explicit; disable it with
//! [`SerializerConfig::disable_generic_types`](crate::SerializerConfig::disable_generic_types).

use std::fmt;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;
use typeinfo_serializers::{
    kinds, Compatibility, DataInputView, DataOutputView, Error, Incompatibility, Result,
    SerializerSnapshot, SnapshotRegistry, TypeSerializer,
};

use crate::config::SerializerConfig;

/// Serializes any serde type through postcard, length-prefixed so it can be skipped.
pub struct GenericSerializer<T> {
    _type: PhantomData<fn() -> T>,
}

impl<T> GenericSerializer<T> {
    /// The serializer, unless `config` disables generic types.
    ///
    /// # Errors
    ///
    /// [`Error::GenericTypeDisabled`] naming `T`.
    pub fn new(config: &SerializerConfig) -> Result<Self> {
        if config.generic_types_disabled() {
            return Err(Error::GenericTypeDisabled {
                type_name: std::any::type_name::<T>().to_owned(),
            });
        }
        Ok(Self { _type: PhantomData })
    }
}

impl<T> Clone for GenericSerializer<T> {
    fn clone(&self) -> Self {
        Self { _type: PhantomData }
    }
}

impl<T> fmt::Debug for GenericSerializer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GenericSerializer<{}>", std::any::type_name::<T>())
    }
}

fn snapshot_of<T>() -> SerializerSnapshot {
    let mut payload = DataOutputView::new();
    payload.write_len_prefixed(std::any::type_name::<T>().as_bytes());
    SerializerSnapshot::new(kinds::SERDE, 1).with_payload(payload.into_inner())
}

impl<T: Serialize + DeserializeOwned + Clone + Send + 'static> TypeSerializer<T>
    for GenericSerializer<T>
{
    fn serialize(&self, value: &T, out: &mut DataOutputView) -> Result<()> {
        let bytes = postcard::to_allocvec(value).map_err(|e| {
            Error::custom(format!(
                "serde cannot write `{}`: {e}",
                std::any::type_name::<T>()
            ))
        })?;
        out.write_len_prefixed(&bytes);
        Ok(())
    }

    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<T> {
        let bytes = input.read_len_prefixed()?;
        let (value, rest) = postcard::take_from_bytes(bytes).map_err(|e| {
            Error::custom(format!(
                "serde cannot read `{}`: {e}",
                std::any::type_name::<T>()
            ))
        })?;
        if !rest.is_empty() {
            return Err(Error::custom(format!(
                "serde left {} bytes unread in a `{}`",
                rest.len(),
                std::any::type_name::<T>()
            )));
        }
        Ok(value)
    }

    fn copy(&self, value: &T) -> T {
        value.clone()
    }

    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        input.read_len_prefixed().map(|_| ())
    }

    fn snapshot(&self) -> SerializerSnapshot {
        snapshot_of::<T>()
    }

    fn resolve(&self, old: &SerializerSnapshot, _: &SnapshotRegistry) -> Compatibility<T> {
        let new = self.snapshot();
        if *old == new {
            Compatibility::AsIs
        } else {
            Compatibility::Incompatible(
                Incompatibility::between(old, &new)
                    .with_detail("serde-bridged types cannot evolve"),
            )
        }
    }
}

/// Gives serde types a [`TypeInfo`](crate::TypeInfo) that serializes them through serde
/// (the generic fallback). Requires the `serde` feature.
///
/// # Examples
///
/// ```
/// #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
/// struct Legacy {
///     tags: Vec<String>,
/// }
/// typeinfo::generic_type!(Legacy);
///
/// # fn main() -> typeinfo::Result<()> {
/// use typeinfo::{SerializerConfig, TypeInfo};
/// assert!(Legacy::create_serializer(&SerializerConfig::new()).is_ok());
/// let refused = Legacy::create_serializer(&SerializerConfig::new().disable_generic_types());
/// assert!(refused.unwrap_err().to_string().contains("Legacy"));
/// # Ok(())
/// # }
/// ```
#[macro_export]
macro_rules! generic_type {
    ($($ty:ty),+ $(,)?) => {$(
        impl $crate::TypeInfo for $ty {
            type Serializer = $crate::GenericSerializer<$ty>;
            fn create_serializer(config: &$crate::SerializerConfig) -> $crate::Result<Self::Serializer> {
                $crate::GenericSerializer::new(config)
            }
            fn description() -> $crate::TypeDescription {
                $crate::TypeDescription::generic(::std::any::type_name::<$ty>())
            }
        }
    )+};
}
