//! What the typed state handles do: each method takes the backend (`&mut B`) and the
//! namespace, under the backend's current key. Apart from the handles' definitions
//! (`descriptor.rs`), so that the backend trait and the descriptors do not import each other.

use crate::backend::KeyedStateBackend;
use crate::descriptor::{
    AggregatingState, ListState, MapKey, MapState, ReducingState, StateKey, StateNamespace,
    StateValue, ValueState,
};
use crate::error::Result;
use crate::map_iter::{MapIter, MapKeys, MapValues};

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

    /// Changes the value of the current key in `namespace` where it is: `modify` gets the
    /// value (or the descriptor's default) to change in place and returns `None`, or gets
    /// `None` when there is neither and returns the value to store (or `None` to store
    /// nothing). On the heap backend the live value changes, with one probe and no copy;
    /// RocksDB reads and writes it, as [`value`](Self::value) and [`update`](Self::update)
    /// would.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn modify<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        mut modify: impl FnMut(Option<&mut V>) -> Option<V>,
    ) -> Result<()> {
        if self.default.is_some() {
            return match self.value(backend, namespace)? {
                Some(mut v) => {
                    modify(Some(&mut v));
                    backend.value_put(self.id, namespace, v)
                }
                None => match modify(None) {
                    Some(v) => backend.value_put(self.id, namespace, v),
                    None => Ok(()),
                },
            };
        }
        backend.value_update(self.id, namespace, &mut modify)
    }

    /// Removes the value of the current key in `namespace` and returns it (`None` when
    /// there was none; the descriptor's default is not made). On the heap backend the
    /// stored value itself, with one probe and no copy.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn take<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Option<V>> {
        backend.value_take(self.id, namespace)
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

    /// Shows each element of the current key's list in `namespace` to `visit`, in order,
    /// without copying the list on the heap backend (Flink's heap `ListState.get()` returns
    /// its own list the same way); RocksDB reads the elements as [`get`](Self::get) does.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn for_each<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        mut visit: impl FnMut(&V),
    ) -> Result<()> {
        backend.list_for_each(self.id, namespace, &mut visit)
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

    /// Appends every element of `values`, in their order, in one access of the backend
    /// (Flink's `addAll`). Nothing changes when `values` is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use typeinfo_state::{BackendOptions, HeapKeyedStateBackend, KeyGroupRange, KeyedStateBackend, ListStateDescriptor};
    ///
    /// # fn main() -> typeinfo_state::Result<()> {
    /// let mut backend = HeapKeyedStateBackend::<String>::new(BackendOptions::new(128, KeyGroupRange::all(128))?)?;
    /// let events = backend.list_state::<(), u32>(&ListStateDescriptor::new("events"))?;
    /// backend.set_current_key(&"ada".to_owned())?;
    /// events.add(&mut backend, &(), 1)?;
    /// events.add_all(&mut backend, &(), [2, 3])?;
    /// assert_eq!(events.get(&mut backend, &())?, vec![1, 2, 3]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn add_all<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        values: impl IntoIterator<Item = V>,
    ) -> Result<()> {
        let values: Vec<V> = values.into_iter().collect();
        if values.is_empty() {
            return Ok(());
        }
        backend.list_add_all(self.id, namespace, values)
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

    /// Sets the value of every key of `entries`, in their order (a later entry of an equal
    /// key wins), as [`put`](Self::put) one by one would. RocksDB writes them in batches of
    /// bounded size, so `entries` may be larger than memory; a failure part way leaves the
    /// entries before it written (as Flink's `putAll`).
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn put_all<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        entries: impl IntoIterator<Item = (UK, UV)>,
    ) -> Result<()> {
        backend.map_put_all::<N, UK, UV>(self.id, namespace, &mut entries.into_iter())
    }

    /// Every entry, in the user key's order, read lazily: the map is never materialized
    /// (RocksDB iterates under the key and namespace's prefix; the heap backend walks its
    /// ordered map). Expired entries are skipped as [`entries`](Self::entries) skips them.
    ///
    /// # Examples
    ///
    /// ```
    /// use typeinfo_state::{BackendOptions, HeapKeyedStateBackend, KeyGroupRange, KeyedStateBackend, MapStateDescriptor};
    ///
    /// # fn main() -> typeinfo_state::Result<()> {
    /// let mut backend = HeapKeyedStateBackend::<String>::new(BackendOptions::new(128, KeyGroupRange::all(128))?)?;
    /// let prices = backend.map_state::<(), u32, u64>(&MapStateDescriptor::new("prices"))?;
    /// backend.set_current_key(&"ada".to_owned())?;
    /// prices.put_all(&mut backend, &(), [(3, 30), (1, 10), (2, 20)])?;
    /// let mut total = 0;
    /// for entry in prices.iter(&mut backend, &())? {
    ///     let (_day, price) = entry?;
    ///     total += price;
    /// }
    /// assert_eq!(total, 60);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// No current key; a backend error. Each item is an error when its stored bytes cannot
    /// be read; iteration ends after it.
    pub fn iter<'a, K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &'a mut B,
        namespace: &N,
    ) -> Result<MapIter<'a, UK, UV>> {
        backend.map_iter(self.id, namespace)
    }

    /// Every user key, in order, read lazily as [`iter`](Self::iter) reads.
    ///
    /// # Errors
    ///
    /// As [`iter`](Self::iter).
    pub fn keys<'a, K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &'a mut B,
        namespace: &N,
    ) -> Result<MapKeys<'a, UK, UV>> {
        Ok(MapKeys::new(self.iter(backend, namespace)?))
    }

    /// Every value, in the order of its user key, read lazily as [`iter`](Self::iter) reads.
    ///
    /// # Errors
    ///
    /// As [`iter`](Self::iter).
    pub fn values<'a, K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &'a mut B,
        namespace: &N,
    ) -> Result<MapValues<'a, UK, UV>> {
        Ok(MapValues::new(self.iter(backend, namespace)?))
    }

    /// Every entry, in the user key's order, collected into a vector: this materializes the
    /// map; prefer [`iter`](Self::iter) for maps that may be large.
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

    /// Whether the map has no (unexpired) entry; reads at most up to the first live entry.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn is_empty<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<bool> {
        match self.iter(backend, namespace)?.next() {
            None => Ok(true),
            Some(Ok(_)) => Ok(false),
            Some(Err(e)) => Err(e),
        }
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
        self.add_is_first(backend, namespace, value).map(drop)
    }

    /// Reduces `value` into the state; `true` when it is the first value (the namespace held
    /// none). A window operator registers a window's timers once, at its first element.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn add_is_first<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        value: V,
    ) -> Result<bool> {
        let (next, first) = match backend.value_get::<N, V>(self.id, namespace)? {
            Some(current) => ((self.reduce)(&current, &value), false),
            None => (value, true),
        };
        backend.value_put(self.id, namespace, next)?;
        Ok(first)
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
        self.add_is_first(backend, namespace, value).map(drop)
    }

    /// Adds `value` to the accumulator; `true` when the accumulator was created for it (the
    /// namespace held none). A window operator registers a window's timers once, at its first
    /// element.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn add_is_first<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        value: &In,
    ) -> Result<bool> {
        let mut first = false;
        backend.value_update::<N, Acc>(self.id, namespace, &mut |acc| match acc {
            Some(acc) => {
                self.function.add(value, acc);
                None
            }
            None => {
                first = true;
                let mut acc = self.function.create_accumulator();
                self.function.add(value, &mut acc);
                Some(acc)
            }
        })?;
        Ok(first)
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
