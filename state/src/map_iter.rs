//! Lazy iteration of one map state's entries under the current key and namespace.
//!
//! A backend hands out the entries one at a time: RocksDB through an iterator under the
//! composite-key prefix `[key group][key][namespace]`, the heap backend by walking a small
//! map (a sorted vector) from the last user key it returned, and a large one (a hash table)
//! over a sorted copy of its user keys. Neither materializes the values, so a map far larger
//! than memory can be read through (RocksDB), and reading a large heap map copies its keys
//! but no value ahead. TTL applies entry by entry, exactly as on the eager reads: an expired entry
//! is skipped (and removed) under `NeverReturnExpired`, and a read refreshes an entry's
//! timestamp under `OnReadAndWrite`.

use std::fmt;

use crate::error::Result;

/// The entries of a map state, read lazily in the user key's order.
///
/// Returned by [`MapState::iter`](crate::MapState::iter). It borrows the backend, so state
/// cannot change while it is alive. An item is an error when stored bytes cannot be read
/// (a corrupt entry, a backend failure); the iterator ends after the first error.
pub struct MapIter<'a, UK, UV> {
    inner: Box<dyn Iterator<Item = Result<(UK, UV)>> + 'a>,
}

impl<'a, UK, UV> MapIter<'a, UK, UV> {
    /// Wraps a backend's iterator, fused after its first error.
    pub(crate) fn new(inner: impl Iterator<Item = Result<(UK, UV)>> + 'a) -> Self {
        let mut failed = false;
        Self {
            inner: Box::new(inner.map_while(move |item| {
                if failed {
                    return None;
                }
                failed = item.is_err();
                Some(item)
            })),
        }
    }

    /// An iterator over nothing.
    pub(crate) fn empty() -> Self
    where
        UK: 'a,
        UV: 'a,
    {
        Self {
            inner: Box::new(std::iter::empty()),
        }
    }
}

impl<UK, UV> Iterator for MapIter<'_, UK, UV> {
    type Item = Result<(UK, UV)>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next()
    }
}

impl<UK, UV> fmt::Debug for MapIter<'_, UK, UV> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapIter").finish_non_exhaustive()
    }
}

/// The user keys of a map state, read lazily in their order.
///
/// Returned by [`MapState::keys`](crate::MapState::keys); as [`MapIter`].
pub struct MapKeys<'a, UK, UV> {
    entries: MapIter<'a, UK, UV>,
}

impl<'a, UK, UV> MapKeys<'a, UK, UV> {
    pub(crate) fn new(entries: MapIter<'a, UK, UV>) -> Self {
        Self { entries }
    }
}

impl<UK, UV> Iterator for MapKeys<'_, UK, UV> {
    type Item = Result<UK>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.entries.next().map(|e| e.map(|(k, _)| k))
    }
}

impl<UK, UV> fmt::Debug for MapKeys<'_, UK, UV> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapKeys").finish_non_exhaustive()
    }
}

/// The values of a map state, read lazily in their user keys' order.
///
/// Returned by [`MapState::values`](crate::MapState::values); as [`MapIter`].
pub struct MapValues<'a, UK, UV> {
    entries: MapIter<'a, UK, UV>,
}

impl<'a, UK, UV> MapValues<'a, UK, UV> {
    pub(crate) fn new(entries: MapIter<'a, UK, UV>) -> Self {
        Self { entries }
    }
}

impl<UK, UV> Iterator for MapValues<'_, UK, UV> {
    type Item = Result<UV>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.entries.next().map(|e| e.map(|(_, v)| v))
    }
}

impl<UK, UV> fmt::Debug for MapValues<'_, UK, UV> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapValues").finish_non_exhaustive()
    }
}
