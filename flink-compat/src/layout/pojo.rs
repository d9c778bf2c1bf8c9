//! Flink's `PojoSerializer`: a flags byte, then (for a value of exactly the POJO's class)
//! every field in Flink's order behind a null marker.
//!
//! The flags byte is `IS_NULL` (1) for a null POJO, `NO_SUBCLASS` (2) for a value of the
//! class itself, `IS_SUBCLASS` (4, followed by the subclass's name in `writeUTF` form and the
//! subclass serializer's bytes) or `IS_TAGGED_SUBCLASS` (8, followed by a registered
//! subclass's tag byte). Fields are ordered by their Java names (Flink's `PojoTypeInfo`
//! sorts them); each is a `boolean` null marker (`true` for null) and the field's bytes.
//!
//! A Rust struct has no subclasses: a value Flink wrote for a subclass (flags 4 or 8) is
//! refused with an error naming the subclass (or its tag), and these serializers never
//! write one.
//!
//! Derive [`FlinkPojo`] with `#[derive(TypeInfo)]` and
//! `#[typeinfo(flink_pojo = "com.example.Order")]`; `#[typeinfo(flink_name = "userId")]`
//! gives a field its Java name (default: the Rust name), `#[typeinfo(flink_with = "Path")]`
//! its serializer (a `TypeSerializer` of the field's type, or of `T` for an `Option<T>`
//! field, with `Default`), `#[typeinfo(flink_alias = "oldName")]` an earlier Java name (for
//! [`resolve_pojo`](crate::resolve_pojo)'s migration), and `#[typeinfo(skip)]` leaves it out
//! (a Java `transient` field), read back as its default.

use std::marker::PhantomData;

use typeinfo::{DataInputView, DataOutputView, Error, Result, SerializerSnapshot, TypeSerializer};

use crate::java_io;
use crate::snapshot;

/// The flag of a null POJO.
pub const IS_NULL: u8 = 1;
/// The flag of a value of the POJO's own class.
pub const NO_SUBCLASS: u8 = 2;
/// The flag of a value of a subclass, followed by its name.
pub const IS_SUBCLASS: u8 = 4;
/// The flag of a value of a registered subclass, followed by its tag.
pub const IS_TAGGED_SUBCLASS: u8 = 8;

/// A Rust struct that stands for a Java POJO (derived; see the module docs).
pub trait FlinkPojo: Sized + Send + Sync + 'static {
    /// The Java class.
    const CLASS_NAME: &'static str;
    /// The Java names of the fields, in Flink's order (sorted).
    const FIELD_NAMES: &'static [&'static str];
    /// Earlier Java names of fields (`#[typeinfo(flink_alias = "old")]`): (old, current).
    /// A migration reads an old field's bytes into the field that has its name as an alias.
    const FIELD_ALIASES: &'static [(&'static str, &'static str)] = &[];
    /// Writes every field behind its null marker, in Flink's order.
    ///
    /// # Errors
    ///
    /// A field's serializer's error.
    fn write_fields(&self, out: &mut DataOutputView) -> Result<()>;
    /// Reads every field.
    ///
    /// # Errors
    ///
    /// Short or corrupt input, or a null in a field whose Rust type is not an `Option`.
    fn read_fields(input: &mut DataInputView<'_>) -> Result<Self>;
    /// Skips every field.
    ///
    /// # Errors
    ///
    /// Short or corrupt input.
    fn skip_fields(input: &mut DataInputView<'_>) -> Result<()>;
    /// A deep copy.
    fn copy_fields(&self) -> Self;
    /// The snapshots of the fields' serializers (without the null marker), in Flink's order.
    fn field_snapshots() -> Vec<SerializerSnapshot>;
    /// Reads every field of Flink's old bytes of the POJO in the order `plan` gives, skips
    /// the ones this type dropped, and defaults the ones it added (see
    /// [`resolve_pojo`](crate::resolve_pojo)).
    ///
    /// # Errors
    ///
    /// Short or corrupt input, or a field Flink's state lacks that cannot default.
    fn read_migrating(plan: &crate::PojoMigration, input: &mut DataInputView<'_>) -> Result<Self>;
}

/// Flink's `PojoSerializer` of the POJO `T` stands for: serializes `T` and `Option<T>`
/// (a null POJO).
///
/// # Examples
///
/// ```
/// use typeinfo::{to_bytes, TypeInfo};
/// use typeinfo_flink_compat::{FlinkType, PojoSerializer};
///
/// #[derive(TypeInfo, Debug, PartialEq)]
/// #[typeinfo(flink_pojo = "com.example.Order")]
/// struct Order {
///     #[typeinfo(flink_name = "userId")]
///     user_id: String,
///     amount: f64,
/// }
///
/// # fn main() -> typeinfo::Result<()> {
/// let order = Order { user_id: "u1".into(), amount: 12.5 };
/// let bytes = to_bytes(&Order::flink_serializer(), &order)?;
/// // flags, then `amount` and `userId` (sorted), each behind a null marker.
/// assert_eq!(bytes, [2, 0, 0x40, 0x29, 0, 0, 0, 0, 0, 0, 0, 3, b'u', b'1']);
/// # Ok(())
/// # }
/// ```
pub struct PojoSerializer<T>(PhantomData<fn() -> T>);

impl<T> PojoSerializer<T> {
    /// The serializer.
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T> Default for PojoSerializer<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for PojoSerializer<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for PojoSerializer<T> {}

impl<T> std::fmt::Debug for PojoSerializer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PojoSerializer<{}>", std::any::type_name::<T>())
    }
}

/// Reads the flags byte: `false` for a null POJO, `true` when the fields follow. Flink
/// writes exactly one flag; any other byte is corrupt (Flink's reader would test its bits).
pub(crate) fn read_flags<T: FlinkPojo>(input: &mut DataInputView<'_>) -> Result<bool> {
    match input.read_u8()? {
        IS_NULL => Ok(false),
        NO_SUBCLASS => Ok(true),
        IS_SUBCLASS => {
            let name = java_io::read_utf(input)?;
            Err(Error::custom(format!(
                "Flink POJO `{}`: the value is of its subclass `{name}`, and subclasses are not supported",
                T::CLASS_NAME
            )))
        }
        IS_TAGGED_SUBCLASS => {
            let tag = input.read_u8()?;
            Err(Error::custom(format!(
                "Flink POJO `{}`: the value is of the registered subclass with tag {tag}, and registered subclasses are not supported",
                T::CLASS_NAME
            )))
        }
        flags => Err(Error::InvalidTag {
            what: format!("flags byte of Flink POJO `{}`", T::CLASS_NAME),
            tag: u64::from(flags),
        }),
    }
}

fn null_pojo<T: FlinkPojo>() -> Error {
    Error::OutOfRange {
        what: format!("Flink POJO `{}`", T::CLASS_NAME),
        detail: "null in Flink's bytes, and the Rust type is not an Option".to_owned(),
    }
}

fn pojo_snapshot<T: FlinkPojo>() -> SerializerSnapshot {
    snapshot::named(
        "PojoSerializer",
        T::CLASS_NAME,
        T::FIELD_NAMES,
        T::field_snapshots(),
    )
}

impl<T: FlinkPojo> TypeSerializer<T> for PojoSerializer<T> {
    fn serialize(&self, value: &T, out: &mut DataOutputView) -> Result<()> {
        out.write_u8(NO_SUBCLASS);
        value.write_fields(out)
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<T> {
        if !read_flags::<T>(input)? {
            return Err(null_pojo::<T>());
        }
        T::read_fields(input)
    }
    fn copy(&self, value: &T) -> T {
        value.copy_fields()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        if read_flags::<T>(input)? {
            T::skip_fields(input)?;
        }
        Ok(())
    }
    fn snapshot(&self) -> SerializerSnapshot {
        pojo_snapshot::<T>()
    }
}

impl<T: FlinkPojo> TypeSerializer<Option<T>> for PojoSerializer<T> {
    fn serialize(&self, value: &Option<T>, out: &mut DataOutputView) -> Result<()> {
        match value {
            None => {
                out.write_u8(IS_NULL);
                Ok(())
            }
            Some(v) => TypeSerializer::<T>::serialize(self, v, out),
        }
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Option<T>> {
        if !read_flags::<T>(input)? {
            return Ok(None);
        }
        T::read_fields(input).map(Some)
    }
    fn copy(&self, value: &Option<T>) -> Option<T> {
        value.as_ref().map(FlinkPojo::copy_fields)
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        TypeSerializer::<T>::skip(self, input)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        pojo_snapshot::<T>()
    }
}
