//! Options shared by both keyed state backends.

use std::sync::Arc;

use typeinfo::SerializerConfig;

use crate::error::Result;
use crate::key_group::{validate, KeyGroupRange};
use crate::ttl::{Clock, SystemClock};

/// Where a keyed backend sits in a job: its key groups, its serializer configuration and
/// the clock of state TTL.
#[derive(Debug, Clone)]
pub struct BackendOptions {
    pub(crate) max_parallelism: u32,
    pub(crate) range: KeyGroupRange,
    pub(crate) serializer_config: SerializerConfig,
    pub(crate) clock: Arc<dyn Clock>,
}

impl BackendOptions {
    /// A backend holding `range` of `max_parallelism` key groups.
    ///
    /// # Errors
    ///
    /// A max parallelism outside `1..=32768` or a range past it.
    pub fn new(max_parallelism: u32, range: KeyGroupRange) -> Result<Self> {
        validate(max_parallelism, 1)?;
        if u32::from(range.end()) >= max_parallelism {
            return Err(crate::Error::InvalidConfig(format!(
                "key group range {}..={} exceeds max parallelism {max_parallelism}",
                range.start(),
                range.end()
            )));
        }
        Ok(Self {
            max_parallelism,
            range,
            serializer_config: SerializerConfig::default(),
            clock: Arc::new(SystemClock),
        })
    }

    /// Subtask `index` of `parallelism` in a job of `max_parallelism`.
    ///
    /// # Errors
    ///
    /// As [`KeyGroupRange::for_subtask`].
    pub fn for_subtask(max_parallelism: u32, parallelism: u32, index: u32) -> Result<Self> {
        Self::new(
            max_parallelism,
            KeyGroupRange::for_subtask(max_parallelism, parallelism, index)?,
        )
    }

    /// The serializer configuration states are created with.
    pub fn serializer_config(mut self, config: SerializerConfig) -> Self {
        self.serializer_config = config;
        self
    }

    /// The clock of state TTL.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The key group of serialized key bytes, which must be in this backend's range.
    ///
    /// # Errors
    ///
    /// [`Error::KeyGroupOutOfRange`](crate::Error::KeyGroupOutOfRange) for a key another
    /// subtask owns.
    #[inline]
    pub fn owned_key_group(&self, key_bytes: &[u8]) -> Result<u16> {
        self.owned(crate::key_group::key_group_for_bytes(
            key_bytes,
            self.max_parallelism,
        ))
    }

    /// `key_group`, a key's group computed by the caller (see
    /// [`KeyedStateBackend::set_current_key_in_group`](crate::KeyedStateBackend::set_current_key_in_group)),
    /// if this backend holds it; in debug builds also checks that it is the group of
    /// `key_bytes` when those are given.
    ///
    /// # Errors
    ///
    /// As [`owned_key_group`](Self::owned_key_group).
    #[inline]
    pub(crate) fn given_key_group(&self, key_group: u16, key_bytes: Option<&[u8]>) -> Result<u16> {
        if let Some(bytes) = key_bytes {
            debug_assert_eq!(
                key_group,
                crate::key_group::key_group_for_bytes(bytes, self.max_parallelism),
                "a key group handed to the backend that is not its key's"
            );
        }
        self.owned(key_group)
    }

    #[inline]
    fn owned(&self, key_group: u16) -> Result<u16> {
        if !self.range.contains(key_group) {
            return Err(crate::Error::KeyGroupOutOfRange {
                key_group,
                start: self.range.start(),
                end: self.range.end(),
            });
        }
        Ok(key_group)
    }

    /// The max parallelism.
    pub fn max_parallelism(&self) -> u32 {
        self.max_parallelism
    }

    /// The key groups.
    pub fn range(&self) -> KeyGroupRange {
        self.range
    }
}
