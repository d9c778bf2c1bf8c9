//! The serde-bridged fallback for types without a `TypeInfo` of their own.
//!
//! [`generic_type!`](crate::generic_type) gives a serde type a `TypeInfo` whose bytes are
//! a varint length and the value in [postcard](https://docs.rs/postcard)'s format
//! (chosen because its wire format is stable since 1.0, which savepoints need). Such a
//! type has no schema: its snapshot records only the type's name, any change of the type
//! is on the user, and it is never a key type. This is Flink's Kryo fallback, made
//! explicit; disable it with
//! [`SerializerConfig::disable_generic_types`](crate::SerializerConfig::disable_generic_types).
//!
//! # The name in the snapshot
//!
//! The snapshot names the type by a stable name the user gives
//! (`generic_type!(Blob, name = "com.example.Blob")`), as a derived type's
//! `#[typeinfo(name = "...")]` does: `std::any::type_name` is not stable (it changes
//! between compiler versions and when a module moves), and a changed name would refuse
//! saved state.
//!
//! A stored snapshot is compatible (as is: the bytes are postcard's either way) when the
//! name it holds is
//! - the type's name today, or one of its `alias = "..."` names (names it had before); or
//! - `std::any::type_name` of the type as this build spells it: snapshots written before
//!   stable names (typeinfo 0.1) hold that. When that spelling has changed since (the type
//!   moved, or the compiler spells it differently), add the old spelling as an alias.
//!
//! Any other name is another type, and incompatible.
//!
//! # Depth
//!
//! Postcard has no depth limit, and a serde type that recurses nests as deep as its bytes
//! say. Reads spend the depth budget of the rest of the library (the smaller of the view's
//! and the config's, [`DEFAULT_MAX_DEPTH`](crate::DEFAULT_MAX_DEPTH) by default), one level
//! per nested serde value (an element, a map key or value, an option's or a variant's
//! content), from the levels the view has left; past it the error is
//! [`Error::DepthLimitExceeded`]. Writing checks the same budget, so that a value too deep
//! to read back is refused when written.

use std::fmt;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;
use typeinfo_serializers::{
    kinds, Compatibility, DataInputView, DataOutputView, Error, Incompatibility, Result,
    SerializerSnapshot, SnapshotRegistry, TypeSerializer,
};

use crate::config::SerializerConfig;
use crate::serde_depth::{Bounded, Budget};

/// Serializes any serde type through postcard, length-prefixed so it can be skipped.
///
/// Usually made by [`generic_type!`](crate::generic_type); see the [module docs](self) for
/// the name its snapshot holds.
pub struct GenericSerializer<T> {
    name: &'static str,
    aliases: &'static [&'static str],
    /// The config's depth budget (the view's, if smaller, holds).
    max_depth: usize,
    _type: PhantomData<fn() -> T>,
}

impl<T> GenericSerializer<T> {
    /// The serializer of the type with the stable name `name`, unless `config` disables
    /// generic types.
    ///
    /// # Errors
    ///
    /// [`Error::GenericTypeDisabled`] naming `T` (its Rust type name, for the reader of the
    /// message).
    ///
    /// # Examples
    ///
    /// ```
    /// use typeinfo::{GenericSerializer, SerializerConfig, TypeSerializer};
    ///
    /// # fn main() -> typeinfo::Result<()> {
    /// let s = GenericSerializer::<(u8, String)>::new("com.example.Pair", &SerializerConfig::new())?;
    /// assert_eq!(s.snapshot().type_name(), "com.example.Pair");
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(name: &'static str, config: &SerializerConfig) -> Result<Self> {
        if config.generic_types_disabled() {
            return Err(Error::GenericTypeDisabled {
                type_name: std::any::type_name::<T>().to_owned(),
            });
        }
        Ok(Self {
            name,
            aliases: &[],
            max_depth: config.max_depth(),
            _type: PhantomData,
        })
    }

    /// Also accepts snapshots that name the type by one of `aliases` (names it had before).
    #[must_use]
    pub fn with_aliases(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }

    /// The stable name its snapshot holds.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The other names that stored snapshots may hold for this type.
    pub fn aliases(&self) -> &'static [&'static str] {
        self.aliases
    }

    /// Whether a stored snapshot holding `old` names this type (see the [module docs](self)).
    fn answers_to(&self, old: &str) -> bool {
        old == self.name || self.aliases.contains(&old) || old == std::any::type_name::<T>()
    }
}

impl<T> Clone for GenericSerializer<T> {
    fn clone(&self) -> Self {
        Self {
            name: self.name,
            aliases: self.aliases,
            max_depth: self.max_depth,
            _type: PhantomData,
        }
    }
}

impl<T> fmt::Debug for GenericSerializer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GenericSerializer<{}>({:?})",
            std::any::type_name::<T>(),
            self.name
        )
    }
}

/// The levels of nesting a serde type may fix without a byte per level (structs in
/// structs, newtypes): values encoded in fewer bytes than the levels left minus this are
/// written without a check of their depth.
const STATIC_NESTING_MARGIN: usize = 64;

/// Reads one `T` that fills `bytes` (postcard's layout), nesting at most `levels` deep
/// ([`Bounded`]: postcard has no depth limit of its own).
///
/// # Errors
///
/// [`Error::DepthLimitExceeded`] naming `limit` past `levels`; postcard's errors and
/// trailing bytes as [`Error::Custom`] naming the type.
fn read_bounded<T: DeserializeOwned>(bytes: &[u8], limit: usize, levels: usize) -> Result<T> {
    let budget = Budget::new(levels);
    let mut de = postcard::Deserializer::from_bytes(bytes);
    let value = T::deserialize(Bounded::new(&mut de, &budget));
    let value = match value {
        Ok(v) => v,
        Err(_) if budget.exceeded() => return Err(Error::DepthLimitExceeded { limit }),
        Err(e) => {
            return Err(Error::custom(format!(
                "serde cannot read `{}`: {e}",
                std::any::type_name::<T>()
            )))
        }
    };
    let rest = de.finalize().map_err(|e| Error::custom(e.to_string()))?;
    if !rest.is_empty() {
        return Err(Error::custom(format!(
            "serde left {} bytes unread in a `{}`",
            rest.len(),
            std::any::type_name::<T>()
        )));
    }
    Ok(value)
}

/// The name a serde snapshot holds, if `snapshot` is one (as every version writes it).
fn serde_name(snapshot: &SerializerSnapshot) -> Option<&str> {
    if snapshot.kind() != kinds::SERDE || snapshot.version() != 1 || !snapshot.nested().is_empty() {
        return None;
    }
    let mut input = DataInputView::new(snapshot.payload());
    let name = input.read_len_prefixed().ok()?;
    if !input.is_empty() {
        return None;
    }
    std::str::from_utf8(name).ok()
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
        // Nothing is written that cannot be read back. A level of serde data that can
        // repeat takes at least one byte (a tag or a length), so only bytes nearly as many
        // as the levels left can nest too deep (the margin covers the levels a type fixes:
        // structs in structs, newtypes); those are read back under the same budget.
        let limit = self.max_depth.min(out.max_depth());
        let levels = limit.saturating_sub(out.depth());
        if bytes.len().saturating_add(STATIC_NESTING_MARGIN) >= levels {
            read_bounded::<T>(&bytes, limit, levels)?;
        }
        out.write_len_prefixed(&bytes);
        Ok(())
    }

    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<T> {
        let limit = self.max_depth.min(input.max_depth());
        let levels = limit.saturating_sub(input.depth());
        let bytes = input.read_len_prefixed()?;
        read_bounded(bytes, limit, levels)
    }

    fn copy(&self, value: &T) -> T {
        value.clone()
    }

    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        input.read_len_prefixed().map(|_| ())
    }

    fn snapshot(&self) -> SerializerSnapshot {
        let mut payload = DataOutputView::new();
        payload.write_len_prefixed(self.name.as_bytes());
        SerializerSnapshot::new(kinds::SERDE, 1).with_payload(payload.into_inner())
    }

    fn resolve(&self, old: &SerializerSnapshot, _: &SnapshotRegistry) -> Compatibility<T> {
        let detail = match serde_name(old) {
            Some(name) if self.answers_to(name) => return Compatibility::AsIs,
            Some(name) => format!(
                "`{name}` is another type than `{}`{}: serde-bridged types cannot evolve",
                self.name,
                if self.aliases.is_empty() {
                    ""
                } else {
                    " and its aliases"
                }
            ),
            None => "serde-bridged types cannot evolve".to_owned(),
        };
        Compatibility::Incompatible(
            Incompatibility::between(old, &self.snapshot()).with_detail(detail),
        )
    }
}

/// Gives a serde type a [`TypeInfo`](crate::TypeInfo) that serializes it through serde
/// (the generic fallback), under a stable name. Requires the `serde` feature.
///
/// `generic_type!(Type, name = "...")`, with any number of `alias = "..."` after the name:
/// - `name` is what snapshots store to identify the type (as a derived type's
///   `#[typeinfo(name = "...")]`): pick one that survives moving and renaming the Rust type,
///   such as `"com.example.Legacy"`; it must not be empty;
/// - each `alias` is a name that stored snapshots may hold: an earlier `name`, or an
///   earlier spelling of `std::any::type_name`, which typeinfo 0.1 stored.
///
/// Snapshots written before stable names hold `std::any::type_name` and stay compatible
/// without an alias as long as that spelling is unchanged (the
/// [rule](crate::GenericSerializer) is in the module docs of `GenericSerializer`).
///
/// # Examples
///
/// ```
/// #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
/// struct Legacy {
///     tags: Vec<String>,
/// }
/// typeinfo::generic_type!(Legacy, name = "com.example.Legacy");
///
/// // Renamed, and moved from another crate: stored snapshots name it either way.
/// #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
/// struct Tags(Vec<String>);
/// typeinfo::generic_type!(Tags, name = "com.example.Tags", alias = "com.example.Labels", alias = "old_crate::Labels");
///
/// # fn main() -> typeinfo::Result<()> {
/// use typeinfo::{SerializerConfig, TypeInfo, TypeSerializer};
/// let serializer = Legacy::create_serializer(&SerializerConfig::new())?;
/// assert_eq!(serializer.snapshot().type_name(), "com.example.Legacy");
/// let refused = Legacy::create_serializer(&SerializerConfig::new().disable_generic_types());
/// assert!(refused.is_err_and(|e| e.to_string().contains("Legacy")));
/// # Ok(())
/// # }
/// ```
///
/// Without a name, the macro does not compile, and its error says what to write:
///
/// ```compile_fail
/// #[derive(Clone, serde::Serialize, serde::Deserialize)]
/// struct Legacy(u8);
/// typeinfo::generic_type!(Legacy);
/// ```
#[macro_export]
macro_rules! generic_type {
    ($ty:ty, name = $name:literal $(, alias = $alias:literal)* $(,)?) => {
        const _: () = ::core::assert!(!$name.is_empty(), "generic_type!: the name must not be empty");
        impl $crate::TypeInfo for $ty {
            type Serializer = $crate::GenericSerializer<$ty>;
            fn create_serializer(config: &$crate::SerializerConfig) -> $crate::Result<Self::Serializer> {
                ::core::result::Result::Ok($crate::GenericSerializer::new($name, config)?.with_aliases(&[$($alias),*]))
            }
            fn description() -> $crate::TypeDescription {
                $crate::TypeDescription::generic(::std::any::type_name::<$ty>())
            }
        }
    };
    ($ty:ty $(, $($rest:tt)*)?) => {
        ::core::compile_error!(::core::concat!(
            "generic_type! needs a stable name for `",
            ::core::stringify!($ty),
            "`, stored in snapshots instead of `std::any::type_name` (which changes between compiler versions and when a module moves): write `typeinfo::generic_type!(",
            ::core::stringify!($ty),
            ", name = \"com.example.",
            ::core::stringify!($ty),
            "\")`, one type per call"
        ));
    };
}
