//! Reading a keyed state as Rust types the user names, with the migration restore does.

use typeinfo::{
    Compatibility, DataInputView, SerializerConfig, SerializerSnapshot, SnapshotRegistry, TypeInfo,
    TypeSerializer,
};
use typeinfo_state::savepoint::{StoredEntry, StoredValue};
use typeinfo_state::StateKind;

use crate::error::{Error, Result};
use crate::savepoint::Savepoint;

/// Reads one stored part as a `T`.
type PartReader<T> = Box<dyn Fn(&[u8]) -> typeinfo::Result<T>>;

/// A reader of the stored layout `stored` as today's `T`: as it is, through a migration,
/// or through a reconfigured serializer, as restore would read it.
fn part_reader<T: TypeInfo + 'static>(
    stored: &SerializerSnapshot,
    registry: &SnapshotRegistry,
    state: &str,
    part: &'static str,
) -> Result<PartReader<T>> {
    let serializer = T::create_serializer(&SerializerConfig::default())?;
    let whole = |input: &mut DataInputView<'_>, value: T| {
        if input.is_empty() {
            Ok(value)
        } else {
            Err(typeinfo::Error::TrailingBytes(input.remaining()))
        }
    };
    Ok(match serializer.resolve(stored, registry) {
        Compatibility::AsIs => Box::new(move |bytes| {
            let mut input = DataInputView::new(bytes);
            let value = serializer.deserialize(&mut input)?;
            whole(&mut input, value)
        }),
        Compatibility::AfterMigration(reader) => Box::new(move |bytes| {
            let mut input = DataInputView::new(bytes);
            let value = reader.read(&mut input)?;
            whole(&mut input, value)
        }),
        Compatibility::Reconfigured(reconfigured) => Box::new(move |bytes| {
            let mut input = DataInputView::new(bytes);
            let value = reconfigured.deserialize(&mut input)?;
            whole(&mut input, value)
        }),
        Compatibility::Incompatible(incompatibility) => {
            return Err(Error::State(typeinfo_state::Error::IncompatibleState {
                state: state.to_owned(),
                part,
                incompatibility: Box::new(incompatibility),
            }))
        }
    })
}

impl Savepoint {
    /// The entries of value, reducing or aggregating state `state` of `operator` (a uid or
    /// a key), read as `(key, namespace, value)`; an aggregating state's value is its
    /// accumulator. Each stored type is resolved against the given one as restore resolves
    /// it: read as it is, migrated (a field added, renamed, widened), or refused as
    /// incompatible, naming the state, the part and the change.
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] for an unknown operator or state; [`Error::Refused`] for a state
    /// of another kind; [`Error::State`] for an incompatible type; a corrupt file.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use typeinfo_savepoint::Savepoint;
    ///
    /// # fn main() -> typeinfo_savepoint::Result<()> {
    /// let savepoint = Savepoint::open("savepoint".as_ref())?;
    /// let counts: Vec<(String, (), u64)> = savepoint.read_value_state("counter", "count")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn read_value_state<K, N, V>(&self, operator: &str, state: &str) -> Result<Vec<(K, N, V)>>
    where
        K: TypeInfo + 'static,
        N: TypeInfo + 'static,
        V: TypeInfo + 'static,
    {
        self.read_typed(operator, state, StateKind::Value, |meta, registry| {
            let value = part_reader::<V>(&meta.values[0], registry, &meta.name, "value")?;
            Ok(move |entry: &StoredEntry<'_>| match &entry.value {
                StoredValue::Single { value: v, .. } => value(v.bytes).map(Some),
                _ => Ok(None),
            })
        })
    }

    /// The entries of list state `state` of `operator`, read as `(key, namespace,
    /// elements)`; types are resolved as by [`read_value_state`](Self::read_value_state).
    ///
    /// # Errors
    ///
    /// As [`read_value_state`](Self::read_value_state).
    pub fn read_list_state<K, N, V>(
        &self,
        operator: &str,
        state: &str,
    ) -> Result<Vec<(K, N, Vec<V>)>>
    where
        K: TypeInfo + 'static,
        N: TypeInfo + 'static,
        V: TypeInfo + 'static,
    {
        self.read_typed(operator, state, StateKind::List, |meta, registry| {
            let element = part_reader::<V>(&meta.values[0], registry, &meta.name, "value")?;
            Ok(move |entry: &StoredEntry<'_>| match &entry.value {
                StoredValue::List(elements) => elements
                    .iter()
                    .map(|(_, e)| element(e.bytes))
                    .collect::<typeinfo::Result<Vec<V>>>()
                    .map(Some),
                _ => Ok(None),
            })
        })
    }

    /// The entries of map state `state` of `operator`, one per map entry, read as `(key,
    /// namespace, user key, user value)`; types are resolved as by
    /// [`read_value_state`](Self::read_value_state).
    ///
    /// # Errors
    ///
    /// As [`read_value_state`](Self::read_value_state).
    pub fn read_map_state<K, N, UK, UV>(
        &self,
        operator: &str,
        state: &str,
    ) -> Result<Vec<(K, N, UK, UV)>>
    where
        K: TypeInfo + 'static,
        N: TypeInfo + 'static,
        UK: TypeInfo + 'static,
        UV: TypeInfo + 'static,
    {
        let entries = self.read_typed(operator, state, StateKind::Map, |meta, registry| {
            let user_key = part_reader::<UK>(&meta.values[0], registry, &meta.name, "user key")?;
            let user_value =
                part_reader::<UV>(&meta.values[1], registry, &meta.name, "user value")?;
            Ok(move |entry: &StoredEntry<'_>| match &entry.value {
                StoredValue::MapEntry {
                    user_key: uk,
                    value: uv,
                    ..
                } => Ok(Some((user_key(uk.bytes)?, user_value(uv.bytes)?))),
                _ => Ok(None),
            })
        })?;
        Ok(entries
            .into_iter()
            .map(|(k, n, (uk, uv))| (k, n, uk, uv))
            .collect())
    }

    /// Reads every entry of `state` (of the layout `kind`) as typed values: `value` makes,
    /// per file, the reader of an entry's value part from the stored state's metadata.
    fn read_typed<K, N, V, R>(
        &self,
        operator: &str,
        state: &str,
        kind: StateKind,
        value: impl Fn(&typeinfo_state::StateMeta, &SnapshotRegistry) -> Result<R>,
    ) -> Result<Vec<(K, N, V)>>
    where
        K: TypeInfo + 'static,
        N: TypeInfo + 'static,
        R: Fn(&StoredEntry<'_>) -> typeinfo::Result<Option<V>>,
    {
        let op = self.operator(operator)?;
        let files = self.open_keyed(&op)?;
        let mut found = false;
        let mut out = Vec::new();
        for (_, file) in &files {
            let header = file.header();
            let Some(index) = header.states.iter().position(|s| s.name == state) else {
                continue;
            };
            found = true;
            let meta = &header.states[index];
            if meta.kind.layout() != kind {
                let reader = match meta.kind.layout() {
                    StateKind::List => "read_list_state",
                    StateKind::Map => "read_map_state",
                    _ => "read_value_state",
                };
                return Err(Error::Refused(format!(
                    "state `{state}` of operator `{}` is a {} state: read it with `{reader}`",
                    op.key, meta.kind
                )));
            }
            let registry = self.registry();
            let key = part_reader::<K>(&header.key, registry, state, "key")?;
            let namespace = part_reader::<N>(&meta.namespace, registry, state, "namespace")?;
            let value = value(meta, registry)?;
            let path = file.path().to_owned();
            file.read_entries(registry, |entry| {
                if entry.state != index {
                    return Ok(());
                }
                let typed = (|| {
                    Ok::<_, typeinfo::Error>(match value(&entry)? {
                        Some(v) => {
                            Some((key(entry.key.bytes)?, namespace(entry.namespace.bytes)?, v))
                        }
                        None => None,
                    })
                })()
                .map_err(|e| typeinfo_state::Error::CorruptSavepoint {
                    path: path.clone(),
                    detail: format!(
                        "state `{state}`: an entry does not read as the given types: {e}"
                    ),
                })?;
                out.extend(typed);
                Ok(())
            })?;
        }
        if !found {
            return Err(Error::NotFound(format!(
                "operator `{}` has no keyed state `{state}` (it has: {})",
                op.key,
                crate::dump::state_names(self, &op)?.join(", ")
            )));
        }
        Ok(out)
    }
}
