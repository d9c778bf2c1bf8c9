//! [`SnapshotRegistry`]: restores serializers from snapshots by kind id.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::restored::restore_builtin;
use crate::serializer::TypeSerializer;
use crate::snapshot::SerializerSnapshot;
use crate::value::Value;

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
    custom: HashMap<String, Restorer>,
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

    /// Whether a restorer for `kind` is known.
    pub fn knows(&self, kind: &str) -> bool {
        self.custom.contains_key(kind) || crate::restored::is_builtin_kind(kind)
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
        let _level = crate::restored::RestoreLevel::enter();
        if let Some(restorer) = self.custom.get(snapshot.kind()) {
            return restorer(snapshot, self);
        }
        restore_builtin(snapshot, self)?
            .ok_or_else(|| Error::UnknownSnapshotKind(snapshot.kind().to_owned()))
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
