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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SerializerConfig {
    generic_types_disabled: bool,
    max_depth: usize,
}

impl Default for SerializerConfig {
    fn default() -> Self {
        Self {
            generic_types_disabled: false,
            max_depth: crate::DEFAULT_MAX_DEPTH,
        }
    }
}

impl SerializerConfig {
    /// The default configuration: generic (serde-bridged) types allowed, as in Flink, and
    /// recursive values nested at most [`DEFAULT_MAX_DEPTH`](crate::DEFAULT_MAX_DEPTH)
    /// levels deep.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets how deep values of recursive types may nest: reading or writing a value whose
    /// recursive fields nest deeper is an
    /// [`Error::DepthLimitExceeded`](crate::Error::DepthLimitExceeded) naming the limit
    /// (default [`DEFAULT_MAX_DEPTH`](crate::DEFAULT_MAX_DEPTH)). A view
    /// ([`DataInputView::with_max_depth`](crate::DataInputView::with_max_depth)) has a
    /// limit of its own; the smaller one holds. Reads and writes run each level on a stack
    /// with room for it ([`ensure_stack`](crate::ensure_stack)), so a higher limit costs
    /// memory rather than a stack overflow; but code that walks a value recursively (its
    /// `drop`, `clone`, `==`) takes stack per level too: raise the limit only where the
    /// values may be that deep.
    ///
    /// # Examples
    ///
    /// ```
    /// use typeinfo::SerializerConfig;
    ///
    /// let config = SerializerConfig::new().with_max_depth(64);
    /// assert_eq!(config.max_depth(), 64);
    /// ```
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// How deep values of recursive types may nest.
    pub fn max_depth(&self) -> usize {
        self.max_depth
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
