//! [`SerializerConfig`]: how serializers are created.

/// Options that decide how serializers are created, fixed when a job's graph is built.
///
/// # Examples
///
/// ```
/// use typeinfo::SerializerConfig;
///
/// let config = SerializerConfig::new().disable_generic_types();
/// assert!(config.generic_types_disabled());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SerializerConfig {
    generic_types_disabled: bool,
}

impl SerializerConfig {
    /// The default configuration: generic (serde-bridged) types allowed, as in Flink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Refuses generic (serde-bridged) types: creating their serializer fails with
    /// [`Error::GenericTypeDisabled`](crate::Error::GenericTypeDisabled) naming the type.
    /// Use it to make sure every record type has a real, evolvable `TypeInfo`.
    pub fn disable_generic_types(mut self) -> Self {
        self.generic_types_disabled = true;
        self
    }

    /// Sets whether generic types are refused.
    pub fn with_generic_types_disabled(mut self, disabled: bool) -> Self {
        self.generic_types_disabled = disabled;
        self
    }

    /// Whether generic types are refused.
    pub fn generic_types_disabled(&self) -> bool {
        self.generic_types_disabled
    }
}
