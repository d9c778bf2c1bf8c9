//! The conformance harness: runs any serializer, built-in or hand-written, through the
//! rules every [`TypeSerializer`] must keep.
//!
//! Enable the `testing` feature and call [`Conformance::run`] in a test:
//!
//! ```
//! use typeinfo_serializers::testing::Conformance;
//! use typeinfo_serializers::{StringComparator, StringSerializer};
//!
//! # fn main() -> Result<(), typeinfo_serializers::testing::ConformanceError> {
//! let values = vec![String::new(), "a".to_owned(), "ab".to_owned(), "é".to_owned()];
//! Conformance::new(StringSerializer, values)
//!     .key_type()
//!     .comparator(StringComparator)
//!     .order(|a, b| a.cmp(b))
//!     .run()?;
//! # Ok(())
//! # }
//! ```
//!
//! What it checks, for every value and for the values together:
//! - a declared fixed length equals the bytes written;
//! - `copy` equals the value;
//! - each value read back alone equals it, with no trailing bytes;
//! - all values in one buffer read back in order and end exactly at the end;
//! - `deserialize_into` over a reused (different) value gives the value;
//! - `copy_serialized` writes identical bytes and ends at the next value;
//! - `skip` lands exactly at the next value;
//! - the snapshot survives its byte form, resolves against the same serializer as
//!   "compatible as is", and the serializer the registry restores from it reads, skips and
//!   rewrites every value's bytes identically;
//! - clones used from several threads at once give the same bytes and values;
//! - every truncation of every value's bytes gives an error (from `deserialize` and
//!   `skip`), never a panic and never a value;
//! - for key types: equal values (and copies) give equal bytes;
//! - for comparators: `compare`, `compare_serialized`, full normalized keys and
//!   fixed-length normalized-key prefixes (where not truncated) agree, and agree with the
//!   expected order when one is given; full keys are prefix-free.

use std::cmp::Ordering;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::comparator::TypeComparator;
use crate::compatibility::Verdict;
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::SnapshotRegistry;
use crate::serializer::TypeSerializer;
use crate::snapshot::SerializerSnapshot;

/// A broken rule: which check, which value, and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConformanceError {
    /// The check that failed (`fixed length`, `truncation`, ...).
    pub check: &'static str,
    /// The index of the value it failed on, if one.
    pub value: Option<usize>,
    /// What happened.
    pub message: String,
}

impl fmt::Display for ConformanceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(i) => write!(f, "{} (value #{i}): {}", self.check, self.message),
            None => write!(f, "{}: {}", self.check, self.message),
        }
    }
}

impl std::error::Error for ConformanceError {}

type Check = std::result::Result<(), ConformanceError>;

fn fail(check: &'static str, value: Option<usize>, message: impl Into<String>) -> ConformanceError {
    ConformanceError {
        check,
        value,
        message: message.into(),
    }
}

/// Runs `f`, turning a panic into a conformance error.
fn guard<R>(
    check: &'static str,
    value: Option<usize>,
    f: impl FnOnce() -> R,
) -> std::result::Result<R, ConformanceError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let msg = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic".to_owned());
        fail(check, value, format!("panicked: {msg}"))
    })
}

type Eq<T> = Box<dyn Fn(&T, &T) -> bool + Send + Sync>;
type Order<T> = Box<dyn Fn(&T, &T) -> Ordering + Send + Sync>;

/// The harness for one serializer and a set of values; see the [module docs](self).
pub struct Conformance<T, S> {
    serializer: S,
    values: Vec<T>,
    eq: Eq<T>,
    registry: SnapshotRegistry,
    key_type: bool,
    comparator: Option<Box<dyn TypeComparator<T>>>,
    order: Option<Order<T>>,
    key_prefix_lengths: Vec<usize>,
    threads: usize,
}

impl<T, S> fmt::Debug for Conformance<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conformance")
            .field("values", &self.values.len())
            .field("key_type", &self.key_type)
            .field("comparator", &self.comparator.is_some())
            .finish()
    }
}

impl<T, S> Conformance<T, S>
where
    T: fmt::Debug + Send + Sync + 'static,
    S: TypeSerializer<T> + Clone,
{
    /// A harness comparing values with `PartialEq`.
    pub fn new(serializer: S, values: Vec<T>) -> Self
    where
        T: PartialEq,
    {
        Self::with_eq(serializer, values, |a, b| a == b)
    }

    /// A harness comparing values with `eq` (for types without `PartialEq`, or floats where
    /// NaN must equal NaN).
    pub fn with_eq(
        serializer: S,
        values: Vec<T>,
        eq: impl Fn(&T, &T) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            serializer,
            values,
            eq: Box::new(eq),
            registry: SnapshotRegistry::default(),
            key_type: false,
            comparator: None,
            order: None,
            key_prefix_lengths: vec![1, 4, 8, 16],
            threads: 4,
        }
    }

    /// Restores snapshots through `registry` (for serializers with custom kinds).
    pub fn registry(mut self, registry: SnapshotRegistry) -> Self {
        self.registry = registry;
        self
    }

    /// Also checks that equal values give equal bytes.
    pub fn key_type(mut self) -> Self {
        self.key_type = true;
        self
    }

    /// Also checks a comparator against the serialized bytes and normalized keys.
    pub fn comparator(mut self, comparator: impl TypeComparator<T>) -> Self {
        self.comparator = Some(Box::new(comparator));
        self
    }

    /// The order the comparator must agree with (usually `Ord::cmp`).
    pub fn order(mut self, order: impl Fn(&T, &T) -> Ordering + Send + Sync + 'static) -> Self {
        self.order = Some(Box::new(order));
        self
    }

    /// Runs every check.
    ///
    /// # Errors
    ///
    /// The first broken rule.
    pub fn run(&self) -> Check {
        let encoded = self.check_each_value()?;
        self.check_stream(&encoded)?;
        self.check_snapshot(&encoded)?;
        self.check_threads(&encoded)?;
        if self.key_type {
            self.check_key_bytes(&encoded)?;
        }
        if let Some(cmp) = &self.comparator {
            self.check_comparator(cmp.as_ref(), &encoded)?;
        }
        Ok(())
    }

    fn serialize(
        &self,
        check: &'static str,
        i: usize,
        value: &T,
    ) -> std::result::Result<Vec<u8>, ConformanceError> {
        let mut out = DataOutputView::new();
        guard(check, Some(i), || {
            self.serializer.serialize(value, &mut out)
        })?
        .map_err(|e| fail(check, Some(i), format!("serialize failed: {e}")))?;
        Ok(out.into_inner())
    }

    fn check_each_value(&self) -> std::result::Result<Vec<Vec<u8>>, ConformanceError> {
        let s = &self.serializer;
        let fixed = guard("fixed length", None, || s.fixed_length())?;
        let mut all = Vec::with_capacity(self.values.len());
        for (i, value) in self.values.iter().enumerate() {
            let bytes = self.serialize("serialize", i, value)?;
            if let Some(n) = fixed {
                if bytes.len() != n {
                    return Err(fail(
                        "fixed length",
                        Some(i),
                        format!("declared {n} bytes, wrote {}", bytes.len()),
                    ));
                }
            }
            let copy = guard("copy", Some(i), || s.copy(value))?;
            if !(self.eq)(&copy, value) {
                return Err(fail(
                    "copy",
                    Some(i),
                    format!("copy {copy:?} differs from {value:?}"),
                ));
            }

            let mut input = DataInputView::new(&bytes);
            let back =
                guard("round trip", Some(i), || s.deserialize(&mut input))?.map_err(|e| {
                    fail(
                        "round trip",
                        Some(i),
                        format!("cannot read own bytes {bytes:02x?}: {e}"),
                    )
                })?;
            if !(self.eq)(&back, value) {
                return Err(fail(
                    "round trip",
                    Some(i),
                    format!("read {back:?}, wrote {value:?}"),
                ));
            }
            if !input.is_empty() {
                return Err(fail(
                    "round trip",
                    Some(i),
                    format!("{} trailing bytes after the value", input.remaining()),
                ));
            }

            // Reuse the previous value's copy (a different value) as the target.
            let prev = &self.values[if i == 0 { self.values.len() - 1 } else { i - 1 }];
            let mut reuse = s.copy(prev);
            let mut input = DataInputView::new(&bytes);
            guard("deserialize into", Some(i), || {
                s.deserialize_into(&mut reuse, &mut input)
            })?
            .map_err(|e| fail("deserialize into", Some(i), e.to_string()))?;
            if !(self.eq)(&reuse, value) || !input.is_empty() {
                return Err(fail(
                    "deserialize into",
                    Some(i),
                    format!("read {reuse:?}, wrote {value:?}"),
                ));
            }

            let mut input = DataInputView::new(&bytes);
            let mut out = DataOutputView::new();
            guard("copy serialized", Some(i), || {
                s.copy_serialized(&mut input, &mut out)
            })?
            .map_err(|e| fail("copy serialized", Some(i), e.to_string()))?;
            if out.as_slice() != bytes.as_slice() || !input.is_empty() {
                return Err(fail(
                    "copy serialized",
                    Some(i),
                    format!("copied {:02x?} from {bytes:02x?}", out.as_slice()),
                ));
            }

            for cut in 0..bytes.len() {
                let prefix = &bytes[..cut];
                let read = guard("truncation", Some(i), || {
                    s.deserialize(&mut DataInputView::new(prefix))
                })?;
                if let Ok(v) = read {
                    return Err(fail(
                        "truncation",
                        Some(i),
                        format!("{cut} of {} bytes read as {v:?}", bytes.len()),
                    ));
                }
                let skipped = guard("truncation", Some(i), || {
                    s.skip(&mut DataInputView::new(prefix))
                })?;
                if skipped.is_ok() {
                    return Err(fail(
                        "truncation",
                        Some(i),
                        format!("skip accepted {cut} of {} bytes", bytes.len()),
                    ));
                }
            }
            all.push(bytes);
        }
        Ok(all)
    }

    fn check_stream(&self, encoded: &[Vec<u8>]) -> Check {
        let s = &self.serializer;
        let mut out = DataOutputView::new();
        let mut offsets = Vec::with_capacity(encoded.len());
        for (i, v) in self.values.iter().enumerate() {
            offsets.push(out.len());
            guard("stream", Some(i), || s.serialize(v, &mut out))?
                .map_err(|e| fail("stream", Some(i), e.to_string()))?;
        }
        let buf = out.into_inner();
        let mut input = DataInputView::new(&buf);
        for (i, v) in self.values.iter().enumerate() {
            let back = guard("stream", Some(i), || s.deserialize(&mut input))?
                .map_err(|e| fail("stream", Some(i), e.to_string()))?;
            if !(self.eq)(&back, v) {
                return Err(fail(
                    "stream",
                    Some(i),
                    format!("read {back:?} in sequence, wrote {v:?}"),
                ));
            }
        }
        if !input.is_empty() {
            return Err(fail(
                "stream",
                None,
                format!("{} bytes left after all values", input.remaining()),
            ));
        }
        // Skip each value and land on the next.
        let mut input = DataInputView::new(&buf);
        for (i, &offset) in offsets.iter().enumerate().take(self.values.len()) {
            if input.position() != offset {
                return Err(fail(
                    "skip",
                    Some(i),
                    format!("at byte {}, value starts at {offset}", input.position()),
                ));
            }
            guard("skip", Some(i), || s.skip(&mut input))?
                .map_err(|e| fail("skip", Some(i), e.to_string()))?;
        }
        if !input.is_empty() {
            return Err(fail(
                "skip",
                None,
                "skipping every value did not reach the end",
            ));
        }
        // Copy every value's bytes in sequence.
        let mut input = DataInputView::new(&buf);
        let mut copied = DataOutputView::new();
        for i in 0..self.values.len() {
            guard("copy serialized", Some(i), || {
                s.copy_serialized(&mut input, &mut copied)
            })?
            .map_err(|e| fail("copy serialized", Some(i), e.to_string()))?;
        }
        if copied.as_slice() != buf.as_slice() {
            return Err(fail(
                "copy serialized",
                None,
                "copying values in sequence changed the bytes",
            ));
        }
        debug_assert_eq!(encoded.iter().map(Vec::len).sum::<usize>(), buf.len());
        Ok(())
    }

    fn check_snapshot(&self, encoded: &[Vec<u8>]) -> Check {
        let s = &self.serializer;
        let snapshot = guard("snapshot", None, || s.snapshot())?;
        let bytes = snapshot
            .to_bytes()
            .map_err(|e| fail("snapshot", None, format!("cannot write {snapshot:?}: {e}")))?;
        let back = SerializerSnapshot::from_bytes(&bytes)
            .map_err(|e| fail("snapshot", None, e.to_string()))?;
        if back != snapshot {
            return Err(fail(
                "snapshot",
                None,
                format!("{back:?} read back from {snapshot:?}"),
            ));
        }
        let verdict = guard("snapshot", None, || s.resolve(&back, &self.registry))?;
        if verdict.verdict() != Verdict::AsIs {
            return Err(fail(
                "snapshot",
                None,
                format!("resolving against its own snapshot gave {verdict:?}"),
            ));
        }
        let restored = self.registry.restore(&back).map_err(|e| {
            fail(
                "restored serializer",
                None,
                format!("cannot restore {}: {e}", back.kind()),
            )
        })?;
        if restored.fixed_length() != s.fixed_length() {
            return Err(fail(
                "restored serializer",
                None,
                format!(
                    "fixed length {:?}, serializer says {:?}",
                    restored.fixed_length(),
                    s.fixed_length()
                ),
            ));
        }
        for (i, bytes) in encoded.iter().enumerate() {
            let mut input = DataInputView::new(bytes);
            let value = guard("restored serializer", Some(i), || {
                restored.deserialize(&mut input)
            })?
            .map_err(|e| {
                fail(
                    "restored serializer",
                    Some(i),
                    format!("cannot read {bytes:02x?}: {e}"),
                )
            })?;
            if !input.is_empty() {
                return Err(fail("restored serializer", Some(i), "left trailing bytes"));
            }
            let mut out = DataOutputView::new();
            restored.serialize(&value, &mut out).map_err(|e| {
                fail(
                    "restored serializer",
                    Some(i),
                    format!("cannot write {value:?}: {e}"),
                )
            })?;
            if out.as_slice() != bytes.as_slice() {
                return Err(fail(
                    "restored serializer",
                    Some(i),
                    format!("rewrote {:02x?} as {:02x?}", bytes, out.as_slice()),
                ));
            }
            let mut input = DataInputView::new(bytes);
            restored
                .skip(&mut input)
                .map_err(|e| fail("restored serializer", Some(i), e.to_string()))?;
            if !input.is_empty() {
                return Err(fail(
                    "restored serializer",
                    Some(i),
                    "skip did not reach the end",
                ));
            }
        }
        Ok(())
    }

    fn check_threads(&self, encoded: &[Vec<u8>]) -> Check {
        let results: Vec<Check> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..self.threads)
                .map(|_| {
                    let s = self.serializer.clone();
                    scope.spawn(move || -> Check {
                        for _ in 0..4 {
                            for (i, (v, bytes)) in self.values.iter().zip(encoded).enumerate() {
                                let mut out = DataOutputView::new();
                                s.serialize(v, &mut out)
                                    .map_err(|e| fail("threads", Some(i), e.to_string()))?;
                                if out.as_slice() != bytes.as_slice() {
                                    return Err(fail(
                                        "threads",
                                        Some(i),
                                        "a clone on another thread wrote other bytes",
                                    ));
                                }
                                let back = s
                                    .deserialize(&mut DataInputView::new(bytes))
                                    .map_err(|e| fail("threads", Some(i), e.to_string()))?;
                                if !(self.eq)(&back, v) {
                                    return Err(fail(
                                        "threads",
                                        Some(i),
                                        "a clone on another thread read another value",
                                    ));
                                }
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(fail("threads", None, "a thread panicked")))
                })
                .collect()
        });
        results.into_iter().collect()
    }

    fn check_key_bytes(&self, encoded: &[Vec<u8>]) -> Check {
        for (i, a) in self.values.iter().enumerate() {
            let copy_bytes = self.serialize("key bytes", i, &self.serializer.copy(a))?;
            if copy_bytes != encoded[i] {
                return Err(fail(
                    "key bytes",
                    Some(i),
                    "a copy of the value gave other bytes",
                ));
            }
            for (j, b) in self.values.iter().enumerate().skip(i + 1) {
                if (self.eq)(a, b) && encoded[i] != encoded[j] {
                    return Err(fail(
                        "key bytes",
                        Some(i),
                        format!("equal to value #{j} but its bytes differ"),
                    ));
                }
            }
        }
        Ok(())
    }

    fn check_comparator(&self, cmp: &dyn TypeComparator<T>, encoded: &[Vec<u8>]) -> Check {
        let keys: Vec<Vec<u8>> = self
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                guard("normalized key", Some(i), || {
                    let mut k = Vec::new();
                    cmp.write_normalized_key(v, &mut k);
                    k
                })
            })
            .collect::<std::result::Result<_, _>>()?;
        if let Some(len) = cmp.normalized_key_len() {
            if let Some((i, k)) = keys.iter().enumerate().find(|(_, k)| k.len() != len) {
                return Err(fail(
                    "normalized key",
                    Some(i),
                    format!("declared {len} bytes, wrote {}", k.len()),
                ));
            }
        }
        for (i, a) in self.values.iter().enumerate() {
            if cmp.compare(a, a) != Ordering::Equal {
                return Err(fail(
                    "comparator",
                    Some(i),
                    "a value does not compare equal to itself",
                ));
            }
            for (j, b) in self.values.iter().enumerate() {
                let expected = cmp.compare(a, b);
                if let Some(order) = &self.order {
                    let want = order(a, b);
                    if want != expected {
                        return Err(fail(
                            "comparator",
                            Some(i),
                            format!("compare with #{j} gave {expected:?}, the order says {want:?}"),
                        ));
                    }
                }
                let serialized = guard("compare serialized", Some(i), || {
                    cmp.compare_serialized(
                        &mut DataInputView::new(&encoded[i]),
                        &mut DataInputView::new(&encoded[j]),
                    )
                })?
                .map_err(|e| fail("compare serialized", Some(i), e.to_string()))?;
                if serialized != expected {
                    return Err(fail(
                        "compare serialized",
                        Some(i),
                        format!("with #{j} gave {serialized:?}, compare gave {expected:?}"),
                    ));
                }
                let by_key = keys[i].cmp(&keys[j]);
                if by_key != expected {
                    return Err(fail(
                        "normalized key",
                        Some(i),
                        format!("key order with #{j} is {by_key:?}, compare gave {expected:?}"),
                    ));
                }
                if i != j
                    && keys[i].len() < keys[j].len()
                    && keys[j].starts_with(&keys[i])
                    && expected != Ordering::Equal
                {
                    return Err(fail(
                        "normalized key",
                        Some(i),
                        format!("key is a proper prefix of #{j}'s"),
                    ));
                }
                for &len in &self.key_prefix_lengths {
                    let mut ka = vec![0u8; len];
                    let mut kb = vec![0u8; len];
                    let full_a = cmp.put_normalized_key(a, &mut ka);
                    let full_b = cmp.put_normalized_key(b, &mut kb);
                    let by_prefix = ka.cmp(&kb);
                    let decided = (full_a && full_b) || by_prefix != Ordering::Equal;
                    if decided && by_prefix != expected {
                        return Err(fail(
                            "normalized key",
                            Some(i),
                            format!("{len}-byte key order with #{j} is {by_prefix:?}, compare gave {expected:?}"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}
