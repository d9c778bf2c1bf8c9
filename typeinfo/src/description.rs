//! [`TypeDescription`]: what a type is, as the type layer sees it.

use std::fmt;

/// The shape of a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TypeKind {
    /// A number, `bool`, `char` or `()`.
    Primitive,
    /// `String`.
    String,
    /// Raw bytes (`bytes::Bytes`).
    Bytes,
    /// A list (`Vec`, `VecDeque`).
    List,
    /// A fixed-size array.
    Array,
    /// A set.
    Set,
    /// A map.
    Map,
    /// `Option<T>`.
    Option,
    /// A tuple.
    Tuple,
    /// A struct with named or positional fields.
    Struct,
    /// An enum.
    Enum,
    /// A point in time or a duration.
    Time,
    /// A decimal number.
    Decimal,
    /// A type serialized through serde (no schema, no evolution).
    Generic,
    /// A field with a hand-written serializer (`#[typeinfo(with = "...")]`).
    Custom,
}

/// A named field of a composite type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldDescription {
    /// The field's name (`f0`, `f1` for tuple elements, as in Flink).
    pub name: String,
    /// The field's type.
    pub description: TypeDescription,
}

/// A type's description: its name, shape, fields or type parameters, and whether it is a
/// key type or a generic (serde-bridged) type.
///
/// # Examples
///
/// ```
/// use typeinfo::{TypeInfo, TypeKind};
///
/// let d = <(String, Vec<i64>)>::description();
/// assert_eq!(d.name(), "(String, Vec<i64>)");
/// assert_eq!(d.kind(), TypeKind::Tuple);
/// assert_eq!(d.arity(), 2);
/// assert!(d.is_key_type());
/// assert!(!<f64>::description().is_key_type());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TypeDescription {
    name: String,
    kind: TypeKind,
    fields: Vec<FieldDescription>,
    type_params: Vec<TypeDescription>,
    key_type: bool,
    generic: bool,
}

impl TypeDescription {
    /// A type without fields or type parameters.
    pub fn atomic(name: impl Into<String>, kind: TypeKind, key_type: bool) -> Self {
        Self {
            name: name.into(),
            kind,
            fields: Vec::new(),
            type_params: Vec::new(),
            key_type,
            generic: false,
        }
    }

    /// A type with fields (a struct, a tuple, an enum's variants).
    pub fn composite(
        name: impl Into<String>,
        kind: TypeKind,
        fields: Vec<FieldDescription>,
        key_type: bool,
    ) -> Self {
        let generic = fields.iter().any(|f| f.description.contains_generic());
        Self {
            name: name.into(),
            kind,
            fields,
            type_params: Vec::new(),
            key_type,
            generic,
        }
    }

    /// A container of other types (`Vec<T>`, `Map<K, V>`, `Option<T>`).
    pub fn container(
        name: impl Into<String>,
        kind: TypeKind,
        type_params: Vec<TypeDescription>,
        key_type: bool,
    ) -> Self {
        let generic = type_params.iter().any(TypeDescription::contains_generic);
        Self {
            name: name.into(),
            kind,
            fields: Vec::new(),
            type_params,
            key_type,
            generic,
        }
    }

    /// A generic (serde-bridged) type.
    pub fn generic(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kind: TypeKind::Generic,
            fields: Vec::new(),
            type_params: Vec::new(),
            key_type: false,
            generic: true,
        }
    }

    /// The type's name (`Order`, `Vec<i64>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The type's shape.
    pub fn kind(&self) -> TypeKind {
        self.kind
    }

    /// The fields of a struct or tuple, the variants of an enum; empty otherwise.
    pub fn fields(&self) -> &[FieldDescription] {
        &self.fields
    }

    /// The type parameters of a container; empty otherwise.
    pub fn type_params(&self) -> &[TypeDescription] {
        &self.type_params
    }

    /// Flink's arity: the number of fields of a composite, 1 for anything else.
    pub fn arity(&self) -> usize {
        match self.kind {
            TypeKind::Struct | TypeKind::Tuple => self.fields.len(),
            _ => 1,
        }
    }

    /// Whether equal values always give equal bytes, so the type can key state.
    pub fn is_key_type(&self) -> bool {
        self.key_type
    }

    /// Whether this type, or any type inside it, is serialized through serde.
    pub fn contains_generic(&self) -> bool {
        self.generic
    }

    /// The first generic type inside this one, by name (itself included).
    pub fn first_generic(&self) -> Option<&str> {
        if self.kind == TypeKind::Generic {
            return Some(&self.name);
        }
        self.fields
            .iter()
            .map(|f| &f.description)
            .chain(&self.type_params)
            .find_map(TypeDescription::first_generic)
    }
}

impl fmt::Display for TypeDescription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}
