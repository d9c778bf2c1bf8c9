//! The error type of the byte layer.

use std::fmt;

/// Everything that can go wrong while reading or writing bytes, snapshots and verdicts.
///
/// Every read of untrusted bytes returns this error instead of panicking: short input,
/// invalid UTF-8, an unknown tag or a length that cannot fit are all reported with what
/// was expected and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The input ended before a value was complete.
    UnexpectedEof {
        /// Bytes the read needed.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// Bytes were left after a value that should have ended the input.
    TrailingBytes(usize),
    /// A variable-length integer was longer than its type allows.
    VarintOverflow,
    /// A variable-length integer was written in more bytes than its value needs (a last
    /// byte of `0x00` after a continuation byte, such as `80 00` for 0). Every value has one
    /// encoding, so that equal values have equal bytes (maps and sets compare keys by them).
    NonCanonicalVarint,
    /// A length prefix announced more elements than the remaining bytes can hold.
    LengthTooLarge {
        /// The announced length.
        len: u64,
        /// Bytes that were left.
        remaining: usize,
    },
    /// Values were nested deeper than the depth budget allows: reads (or writes) at
    /// recursion points, or snapshot envelopes, nested past the limit. The limit
    /// (`DataInputView::with_max_depth`, `SerializerConfig::with_max_depth`) bounds how
    /// deep a value from outside can be; reads grow the stack as they need
    /// ([`ensure_stack`](crate::ensure_stack)), but code that walks a value recursively
    /// (its `drop`, `clone`, `==`) needs stack per level too.
    DepthLimitExceeded {
        /// The limit that was reached.
        limit: usize,
    },
    /// A value to be written holds more elements that serialize to no bytes (`()`, a
    /// struct whose fields are all skipped) than a reader's zero-sized budget accepts
    /// (`MAX_ZERO_SIZED_ITEMS` units per value): written, it could not be read back.
    TooManyZeroSizedElements {
        /// The elements of the collection or array that did not fit.
        count: u64,
        /// The budget of one value, in units.
        budget: usize,
    },
    /// String bytes were not valid UTF-8.
    InvalidUtf8,
    /// A `char` value was not a Unicode scalar value.
    InvalidChar(u32),
    /// A `bool` byte was neither 0 nor 1.
    InvalidBool(u8),
    /// A tag byte (option, enum variant) was out of range.
    InvalidTag {
        /// What was being read (`Option`, an enum's name).
        what: String,
        /// The tag that was found.
        tag: u64,
    },
    /// A decoded value is outside the range of the target type (a nanosecond count over
    /// one second, a decimal too large for `rust_decimal`).
    OutOfRange {
        /// What was being read.
        what: String,
        /// Why the value does not fit.
        detail: String,
    },
    /// A snapshot's bytes are malformed.
    CorruptSnapshot(String),
    /// A snapshot names a kind that no registered restorer knows.
    UnknownSnapshotKind(String),
    /// A snapshot's version is newer than this code can read.
    UnsupportedSnapshotVersion {
        /// The snapshot's kind id.
        kind: String,
        /// The version found.
        version: u32,
        /// The newest version this code reads.
        supported: u32,
    },
    /// Old bytes cannot be read by the new serializer. Boxed: it is large and rare, and
    /// every `Result` of the byte layer would otherwise carry its size (on the stack of
    /// every nested read).
    Incompatible(Box<crate::Incompatibility>),
    /// A generic (serde-bridged) type was used while generic types are disabled.
    GenericTypeDisabled {
        /// The Rust type name.
        type_name: String,
    },
    /// A hand-written serializer's own error.
    Custom(String),
}

impl Error {
    /// A custom error with a message, for hand-written serializers.
    pub fn custom(message: impl fmt::Display) -> Self {
        Error::Custom(message.to_string())
    }

    pub(crate) fn eof(needed: usize, remaining: usize) -> Self {
        Error::UnexpectedEof { needed, remaining }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnexpectedEof { needed, remaining } => write!(
                f,
                "unexpected end of input: needed {needed} more bytes, {remaining} left"
            ),
            Error::TrailingBytes(n) => write!(f, "{n} trailing bytes after the value"),
            Error::VarintOverflow => f.write_str("variable-length integer overflows 64 bits"),
            Error::NonCanonicalVarint => {
                f.write_str("variable-length integer is not in its shortest form")
            }
            Error::LengthTooLarge { len, remaining } => write!(
                f,
                "length prefix {len} exceeds the {remaining} bytes left"
            ),
            Error::DepthLimitExceeded { limit } => write!(f, "nesting deeper than the depth limit of {limit}"),
            Error::TooManyZeroSizedElements { count, budget } => write!(
                f,
                "{count} more elements that serialize to no bytes than one value may hold \
                 (a budget of {budget} units per value): a reader would refuse it"
            ),
            Error::InvalidUtf8 => f.write_str("string bytes are not valid UTF-8"),
            Error::InvalidChar(v) => write!(f, "{v:#x} is not a Unicode scalar value"),
            Error::InvalidBool(b) => write!(f, "bool byte must be 0 or 1, found {b}"),
            Error::InvalidTag { what, tag } => write!(f, "invalid tag {tag} for {what}"),
            Error::OutOfRange { what, detail } => write!(f, "{what} out of range: {detail}"),
            Error::CorruptSnapshot(why) => write!(f, "corrupt serializer snapshot: {why}"),
            Error::UnknownSnapshotKind(kind) => {
                write!(f, "unknown serializer snapshot kind `{kind}`: register a restorer for it")
            }
            Error::UnsupportedSnapshotVersion { kind, version, supported } => write!(
                f,
                "snapshot `{kind}` has version {version}, this code reads up to {supported}"
            ),
            Error::Incompatible(inc) => write!(f, "{inc}: incompatible"),
            Error::GenericTypeDisabled { type_name } => write!(
                f,
                "generic type `{type_name}` is serialized through serde, but generic types are disabled"
            ),
            Error::Custom(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {}

/// The result type of the byte layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;
