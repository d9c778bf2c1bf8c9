//! What resolving a serializer against an old snapshot can find: the verdicts without
//! their payload, the readers that migrate old bytes, and the incompatibilities. The
//! [`Compatibility`](crate::Compatibility) verdict itself lives beside the
//! [`TypeSerializer`](crate::TypeSerializer) trait, whose `resolve` returns it and whose
//! serializers it carries.

use std::fmt;
use std::sync::Arc;

use crate::error::Result;
use crate::input::DataInputView;
use crate::snapshot::SerializerSnapshot;

/// The verdict of a [`Compatibility`](crate::Compatibility) without its payload, for reports and assertions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Compatible as is.
    AsIs,
    /// Compatible after migration.
    AfterMigration,
    /// Compatible with a reconfigured serializer.
    Reconfigured,
    /// Incompatible.
    Incompatible,
}

/// A function that reads a value of `T` from old bytes.
type ReadFn<T> = dyn Fn(&mut DataInputView<'_>) -> Result<T> + Send + Sync;

/// Reads a value of today's type from bytes written in an older layout.
pub struct MigrationReader<T> {
    read: Arc<ReadFn<T>>,
}

impl<T> MigrationReader<T> {
    /// Wraps a reading function.
    pub fn new(read: impl Fn(&mut DataInputView<'_>) -> Result<T> + Send + Sync + 'static) -> Self {
        Self {
            read: Arc::new(read),
        }
    }

    /// Reads one value of the old layout as today's type.
    ///
    /// # Errors
    ///
    /// Any read error of the old layout.
    #[inline]
    pub fn read(&self, input: &mut DataInputView<'_>) -> Result<T> {
        (self.read)(input)
    }
}

impl<T> Clone for MigrationReader<T> {
    fn clone(&self) -> Self {
        Self {
            read: Arc::clone(&self.read),
        }
    }
}

impl<T> fmt::Debug for MigrationReader<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MigrationReader")
    }
}

/// One step of the path to an incompatible part of a type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathSegment {
    /// A named field (`.amount`) or an enum variant.
    Field(String),
    /// A positional field or tuple element (`.0`).
    Index(usize),
    /// The elements of a list, set or array (`[]`).
    Element,
    /// The keys of a map (`{key}`).
    MapKey,
    /// The values of a map (`{}`).
    MapValue,
    /// The content of an `Option` (`?`).
    Some,
}

/// Why old bytes cannot be read as the new type, and where.
///
/// Displays as `Order.amount: f64 -> String`: the outermost named type, the path to the
/// part that changed, the old type and the new type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Incompatibility {
    root: Option<String>,
    path: Vec<PathSegment>,
    old_type: String,
    new_type: String,
    detail: Option<String>,
}

impl Incompatibility {
    /// An incompatibility between an old and a new type at the root.
    pub fn new(old_type: impl Into<String>, new_type: impl Into<String>) -> Self {
        Self {
            root: None,
            path: Vec::new(),
            old_type: old_type.into(),
            new_type: new_type.into(),
            detail: None,
        }
    }

    /// The incompatibility of an old snapshot with a new one, named by their types.
    pub fn between(old: &SerializerSnapshot, new: &SerializerSnapshot) -> Self {
        Self::new(old.type_name(), new.type_name())
    }

    /// Adds an explanation (`variant removed`).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Puts this incompatibility inside `segment` of the enclosing type.
    pub fn within(mut self, segment: PathSegment) -> Self {
        self.path.insert(0, segment);
        self
    }

    /// Names the enclosing type (outermost call wins, giving `Order.amount`).
    pub fn in_type(mut self, type_name: impl Into<String>) -> Self {
        self.root = Some(type_name.into());
        self
    }

    /// The path to the changed part, as displayed (`Order.lines[].qty`).
    pub fn path(&self) -> String {
        let mut s = self.root.clone().unwrap_or_default();
        for seg in &self.path {
            match seg {
                PathSegment::Field(name) => {
                    if !s.is_empty() {
                        s.push('.');
                    }
                    s.push_str(name);
                }
                PathSegment::Index(i) => {
                    if !s.is_empty() {
                        s.push('.');
                    }
                    s.push_str(&i.to_string());
                }
                PathSegment::Element => s.push_str("[]"),
                PathSegment::MapKey => s.push_str("{key}"),
                PathSegment::MapValue => s.push_str("{}"),
                PathSegment::Some => s.push('?'),
            }
        }
        s
    }

    /// The old type's name.
    pub fn old_type(&self) -> &str {
        &self.old_type
    }

    /// The new type's name.
    pub fn new_type(&self) -> &str {
        &self.new_type
    }

    /// The explanation, if any.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }
}

impl fmt::Display for Incompatibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path();
        if !path.is_empty() {
            write!(f, "{path}: ")?;
        }
        write!(f, "{} -> {}", self.old_type, self.new_type)?;
        if let Some(detail) = &self.detail {
            write!(f, " ({detail})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Incompatibility {}

impl From<Incompatibility> for crate::Error {
    fn from(inc: Incompatibility) -> Self {
        crate::Error::Incompatible(Box::new(inc))
    }
}
