//! Composite keys: `[key-group prefix][key][namespace][user key]`, built in one reused
//! buffer without allocating per call.
//!
//! The prefix is the key group, big-endian: one byte when max parallelism is at most 128,
//! else two. Keys and namespaces are written with their serializers, whose bytes are
//! self-delimiting: no encoding is a proper prefix of another, so the entries of key `a`
//! never show up in a prefix scan of key `ab` (the bytes differ at the length). User keys
//! of map state are written as normalized keys (order-preserving, prefix-free), so that a
//! prefix scan returns a map's entries in the user key's order.

use typeinfo::{DataOutputView, TypeSerializer};

use crate::error::Result;

/// The number of prefix bytes for a max parallelism: 1 up to 128, else 2.
#[inline]
pub fn key_group_prefix_len(max_parallelism: u32) -> usize {
    if max_parallelism <= 128 {
        1
    } else {
        2
    }
}

/// Builds composite keys in a reused buffer.
///
/// # Examples
///
/// ```
/// use typeinfo::{StringSerializer, UnitSerializer};
/// use typeinfo_state::CompositeKeyBuilder;
///
/// # fn main() -> typeinfo_state::Result<()> {
/// let mut builder = CompositeKeyBuilder::new(128);
/// builder.set_key(7, &"ab".to_owned(), &StringSerializer)?;
/// let key = builder.set_namespace(&(), &UnitSerializer)?;
/// assert_eq!(key, &[7, 2, b'a', b'b']);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct CompositeKeyBuilder {
    buf: DataOutputView,
    prefix_len: usize,
    key_end: usize,
    namespace_end: usize,
}

impl CompositeKeyBuilder {
    /// A builder for a job of `max_parallelism`.
    pub fn new(max_parallelism: u32) -> Self {
        Self {
            buf: DataOutputView::with_capacity(64),
            prefix_len: key_group_prefix_len(max_parallelism),
            key_end: 0,
            namespace_end: 0,
        }
    }

    #[inline]
    fn write_prefix(&mut self, key_group: u16) {
        self.buf.clear();
        if self.prefix_len == 1 {
            self.buf.write_u8(key_group as u8);
        } else {
            self.buf.write_bytes(&key_group.to_be_bytes());
        }
    }

    /// Starts a key: the key group prefix, then the key written by `serializer`.
    ///
    /// # Errors
    ///
    /// The serializer's error.
    #[inline]
    pub fn set_key<K, S: TypeSerializer<K> + ?Sized>(
        &mut self,
        key_group: u16,
        key: &K,
        serializer: &S,
    ) -> Result<()> {
        self.write_prefix(key_group);
        serializer.serialize(key, &mut self.buf)?;
        self.key_end = self.buf.len();
        self.namespace_end = self.key_end;
        Ok(())
    }

    /// Starts a key from its serialized bytes.
    #[inline]
    pub fn set_key_bytes(&mut self, key_group: u16, key_bytes: &[u8]) {
        self.write_prefix(key_group);
        self.buf.write_bytes(key_bytes);
        self.key_end = self.buf.len();
        self.namespace_end = self.key_end;
    }

    /// Sets the namespace after the current key; returns `[prefix][key][namespace]`.
    ///
    /// # Errors
    ///
    /// The serializer's error.
    #[inline]
    pub fn set_namespace<N, S: TypeSerializer<N> + ?Sized>(
        &mut self,
        namespace: &N,
        serializer: &S,
    ) -> Result<&[u8]> {
        self.buf.truncate(self.key_end);
        serializer.serialize(namespace, &mut self.buf)?;
        self.namespace_end = self.buf.len();
        Ok(self.buf.as_slice())
    }

    /// Sets the namespace from its serialized bytes; returns `[prefix][key][namespace]`.
    #[inline]
    pub fn set_namespace_bytes(&mut self, namespace_bytes: &[u8]) -> &[u8] {
        self.buf.truncate(self.key_end);
        self.buf.write_bytes(namespace_bytes);
        self.namespace_end = self.buf.len();
        self.buf.as_slice()
    }

    /// `[prefix][key]`.
    #[inline]
    pub fn key_prefix(&self) -> &[u8] {
        &self.buf.as_slice()[..self.key_end]
    }

    /// The key's serialized bytes, without the prefix.
    #[inline]
    pub fn key_bytes(&self) -> &[u8] {
        &self.buf.as_slice()[self.prefix_len..self.key_end]
    }

    /// `[prefix][key][namespace]`.
    #[inline]
    pub fn key_and_namespace(&self) -> &[u8] {
        &self.buf.as_slice()[..self.namespace_end]
    }

    /// `[prefix][key][namespace][user key]` with the user key's bytes appended.
    #[inline]
    pub fn with_user_key(&mut self, user_key: &[u8]) -> &[u8] {
        self.buf.truncate(self.namespace_end);
        self.buf.write_bytes(user_key);
        self.buf.as_slice()
    }

    /// `[prefix][key][namespace][user key]` with the user key written by `write`.
    #[inline]
    pub fn with_user_key_from(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> &[u8] {
        self.buf.truncate(self.namespace_end);
        write(self.buf.as_mut_vec());
        self.buf.as_slice()
    }

    /// The number of prefix bytes.
    pub fn prefix_len(&self) -> usize {
        self.prefix_len
    }
}
