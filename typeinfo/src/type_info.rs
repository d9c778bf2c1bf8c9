//! The [`TypeInfo`], [`Comparable`] and [`KeyType`] traits.

use crate::config::SerializerConfig;
use crate::description::TypeDescription;
use typeinfo_serializers::{Result, TypeComparator, TypeSerializer};

/// A type the framework can describe and serialize: every record, key, state value and
/// accumulator is one.
///
/// Implemented here for the std types (and `bytes::Bytes`, and decimals behind features);
/// derive it for your own types, or bridge a serde type with [`generic_type!`](crate::generic_type).
///
/// # Examples
///
/// ```
/// use typeinfo::{DataInputView, DataOutputView, SerializerConfig, TypeInfo, TypeSerializer};
///
/// # fn main() -> typeinfo::Result<()> {
/// let serializer = <(String, u32)>::create_serializer(&SerializerConfig::default())?;
/// let mut out = DataOutputView::new();
/// serializer.serialize(&("ada".to_owned(), 36), &mut out)?;
/// let back = serializer.deserialize(&mut DataInputView::new(out.as_slice()))?;
/// assert_eq!(back, ("ada".to_owned(), 36));
/// # Ok(())
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no TypeInfo",
    label = "this type cannot be serialized by typeinfo",
    note = "derive it with `#[derive(TypeInfo)]`, or bridge a serde type with `typeinfo::generic_type!({Self}, name = \"...\")`"
)]
pub trait TypeInfo: Sized + Send + 'static {
    /// The serializer of this type.
    type Serializer: TypeSerializer<Self> + Clone;

    /// Creates the serializer.
    ///
    /// # Errors
    ///
    /// [`Error::GenericTypeDisabled`](crate::Error::GenericTypeDisabled) when this type,
    /// or a type inside it, is serialized through serde and `config` disables generic types.
    fn create_serializer(config: &SerializerConfig) -> Result<Self::Serializer>;

    /// The type's description.
    fn description() -> TypeDescription;
}

/// A type with a total order, a comparator over its bytes, and normalized keys.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no comparator",
    note = "comparable types are numbers, strings, bytes, time, and options, tuples, lists, arrays and ordered maps of comparable types"
)]
pub trait Comparable: TypeInfo {
    /// The comparator of this type.
    type Comparator: TypeComparator<Self> + Clone;

    /// Creates the comparator (ascending).
    fn comparator() -> Self::Comparator;
}

/// A type whose equal values always give equal bytes, so it can key state and partition
/// streams.
///
/// Floats (`0.0 == -0.0` with other bits, NaN), `HashMap` and `HashSet` (iteration order),
/// decimals (`1.0 == 1.00`) and serde-bridged types are not key types, and the compiler
/// says so where a key is required.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a key type",
    label = "keys must serialize deterministically: equal keys must give equal bytes",
    note = "floats, HashMap, HashSet, decimals and serde-bridged types are not key types; use integers, strings, bytes, or BTreeMap/BTreeSet"
)]
pub trait KeyType: Comparable {}

/// The serializer of `T` with the default configuration.
///
/// # Errors
///
/// As [`TypeInfo::create_serializer`].
///
/// # Examples
///
/// ```
/// # fn main() -> typeinfo::Result<()> {
/// let bytes = typeinfo::to_bytes(&typeinfo::serializer::<Vec<u64>>()?, &vec![1, 2])?;
/// assert_eq!(bytes.len(), 1 + 16);
/// # Ok(())
/// # }
/// ```
pub fn serializer<T: TypeInfo>() -> Result<T::Serializer> {
    T::create_serializer(&SerializerConfig::default())
}
