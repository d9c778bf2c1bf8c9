//! What the typed state handles do: each method takes the backend (`&mut B`) and the
//! namespace, under the backend's current key. Apart from the handles' definitions
//! (`descriptor.rs`), so that the backend trait and the descriptors do not import each other.

use crate::backend::KeyedStateBackend;
use crate::descriptor::{
    AggregatingState, ListState, MapKey, MapState, ReducingState, StateKey, StateNamespace,
    StateValue, ValueState,
};
use crate::error::Result;

impl<N: StateNamespace, V: StateValue> ValueState<N, V> {
    /// The value of the current key in `namespace`, or the descriptor's default.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn value<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Option<V>> {
        match backend.value_get::<N, V>(self.id, namespace)? {
            Some(v) => Ok(Some(v)),
            None => Ok(match &self.default {
                Some(d) => Some(backend.copy_value::<V>(self.id, d)?),
                None => None,
            }),
        }
    }

    /// Sets the value of the current key in `namespace`.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn update<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        value: V,
    ) -> Result<()> {
        backend.value_put(self.id, namespace, value)
    }

    /// Removes the value of the current key in `namespace`.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    pub fn clear<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<()> {
        backend.clear(self.id, namespace)
    }
}

impl<N: StateNamespace, V: StateValue> ListState<N, V> {
    /// The elements of the current key in `namespace` (empty when none).
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn get<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Vec<V>> {
        backend.list_get(self.id, namespace)
    }

    /// Appends an element.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn add<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        value: V,
    ) -> Result<()> {
        backend.list_add(self.id, namespace, value)
    }

    /// Replaces the elements.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn update<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        values: Vec<V>,
    ) -> Result<()> {
        backend.list_update(self.id, namespace, values)
    }

    /// Removes every element.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    pub fn clear<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<()> {
        backend.clear(self.id, namespace)
    }

    /// Appends the elements of `sources` to `target` and clears the sources (merging windows).
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn merge_namespaces<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        target: &N,
        sources: &[N],
    ) -> Result<()> {
        let mut merged = Vec::new();
        for source in sources.iter().filter(|s| *s != target) {
            merged.extend(backend.list_get::<N, V>(self.id, source)?);
            backend.clear(self.id, source)?;
        }
        if merged.is_empty() {
            return Ok(());
        }
        let mut values = backend.list_get::<N, V>(self.id, target)?;
        values.extend(merged);
        backend.list_update(self.id, target, values)
    }
}

impl<N: StateNamespace, UK: MapKey, UV: StateValue> MapState<N, UK, UV> {
    /// The value of `key`.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn get<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        key: &UK,
    ) -> Result<Option<UV>> {
        backend.map_get(self.id, namespace, key)
    }

    /// Sets the value of `key`.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn put<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        key: UK,
        value: UV,
    ) -> Result<()> {
        backend.map_put(self.id, namespace, key, value)
    }

    /// Removes `key`.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    pub fn remove<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        key: &UK,
    ) -> Result<()> {
        backend.map_remove::<N, UK, UV>(self.id, namespace, key)
    }

    /// Whether `key` has a value.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn contains<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        key: &UK,
    ) -> Result<bool> {
        Ok(self.get(backend, namespace, key)?.is_some())
    }

    /// Every entry, in the user key's order.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn entries<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Vec<(UK, UV)>> {
        backend.map_entries(self.id, namespace)
    }

    /// Whether the map is empty.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn is_empty<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<bool> {
        Ok(self.entries(backend, namespace)?.is_empty())
    }

    /// Removes every entry.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    pub fn clear<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<()> {
        backend.clear(self.id, namespace)
    }
}

impl<N: StateNamespace, V: StateValue> ReducingState<N, V> {
    /// The reduced value.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn get<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Option<V>> {
        backend.value_get(self.id, namespace)
    }

    /// Reduces `value` into the state.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn add<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        value: V,
    ) -> Result<()> {
        let next = match backend.value_get::<N, V>(self.id, namespace)? {
            Some(current) => (self.reduce)(&current, &value),
            None => value,
        };
        backend.value_put(self.id, namespace, next)
    }

    /// Removes the value.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    pub fn clear<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<()> {
        backend.clear(self.id, namespace)
    }

    /// Reduces the values of `sources` into `target` and clears the sources.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn merge_namespaces<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        target: &N,
        sources: &[N],
    ) -> Result<()> {
        let mut merged = backend.value_get::<N, V>(self.id, target)?;
        for source in sources.iter().filter(|s| *s != target) {
            if let Some(v) = backend.value_get::<N, V>(self.id, source)? {
                merged = Some(match merged {
                    Some(m) => (self.reduce)(&m, &v),
                    None => v,
                });
                backend.clear(self.id, source)?;
            }
        }
        match merged {
            Some(m) => backend.value_put(self.id, target, m),
            None => Ok(()),
        }
    }
}

impl<N: StateNamespace, In, Acc: StateValue, Out> AggregatingState<N, In, Acc, Out> {
    /// The result of the accumulator, if there is one.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn get<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Option<Out>> {
        Ok(backend
            .value_get::<N, Acc>(self.id, namespace)?
            .map(|acc| self.function.get_result(&acc)))
    }

    /// The accumulator itself.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn accumulator<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Option<Acc>> {
        backend.value_get::<N, Acc>(self.id, namespace)
    }

    /// Adds `value` to the accumulator (creating it first if needed).
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn add<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        value: &In,
    ) -> Result<()> {
        backend.value_update::<N, Acc>(self.id, namespace, &mut |acc| match acc {
            Some(acc) => {
                self.function.add(value, acc);
                None
            }
            None => {
                let mut acc = self.function.create_accumulator();
                self.function.add(value, &mut acc);
                Some(acc)
            }
        })
    }

    /// Removes the accumulator.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    pub fn clear<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<()> {
        backend.clear(self.id, namespace)
    }

    /// Merges the accumulators of `sources` into `target` and clears the sources.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn merge_namespaces<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        target: &N,
        sources: &[N],
    ) -> Result<()> {
        let mut merged = backend.value_get::<N, Acc>(self.id, target)?;
        for source in sources.iter().filter(|s| *s != target) {
            if let Some(acc) = backend.value_get::<N, Acc>(self.id, source)? {
                merged = Some(match merged {
                    Some(m) => self.function.merge(m, acc),
                    None => acc,
                });
                backend.clear(self.id, source)?;
            }
        }
        match merged {
            Some(m) => backend.value_put(self.id, target, m),
            None => Ok(()),
        }
    }
}
