//! [`TypeComparator`]: value order, order of serialized bytes, and normalized keys.

use std::cmp::Ordering;
use std::fmt;

use crate::error::Result;
use crate::input::DataInputView;

/// Orders values of `T`, their serialized bytes, and their normalized keys alike.
///
/// A normalized key is a byte string whose unsigned lexicographic order equals the value
/// order ([`write_normalized_key`](Self::write_normalized_key)). The encodings of the
/// built-in comparators are prefix-free (no key is a proper prefix of another), so a
/// fixed-length prefix of them, zero-padded, still orders correctly whenever it was not
/// truncated ([`put_normalized_key`](Self::put_normalized_key)). Sorters compare such
/// prefixes first and fall back to [`compare`](Self::compare) only on ties of truncated
/// keys. Wrap a comparator in [`Descending`] for the reverse order.
///
/// # Examples
///
/// ```
/// use typeinfo_serializers::{I32Comparator, TypeComparator};
///
/// let mut a = [0u8; 4];
/// let mut b = [0u8; 4];
/// assert!(I32Comparator.put_normalized_key(&-5, &mut a));
/// assert!(I32Comparator.put_normalized_key(&3, &mut b));
/// assert!(a < b);
/// ```
pub trait TypeComparator<T>: fmt::Debug + Send + Sync + 'static {
    /// Compares two values.
    fn compare(&self, a: &T, b: &T) -> Ordering;

    /// Compares two values in their serialized form, each read from its own view.
    ///
    /// The views' positions afterwards are unspecified.
    ///
    /// # Errors
    ///
    /// Short or corrupt input.
    fn compare_serialized(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<Ordering>;

    /// Appends the full, prefix-free, order-preserving encoding of `value` to `out`.
    fn write_normalized_key(&self, value: &T, out: &mut Vec<u8>);

    /// The number of bytes a normalized key needs to hold every value whole, or `None`
    /// when keys vary in length.
    fn normalized_key_len(&self) -> Option<usize>;

    /// Whether the order is descending (normalized keys are then bitwise inverted).
    fn is_descending(&self) -> bool {
        false
    }

    /// Writes the first `target.len()` bytes of the normalized key, zero-padded; returns
    /// `true` when the whole key fit (the prefix then orders exactly), `false` when it
    /// was truncated.
    fn put_normalized_key(&self, value: &T, target: &mut [u8]) -> bool {
        let mut key = Vec::with_capacity(target.len());
        self.write_normalized_key(value, &mut key);
        let n = key.len().min(target.len());
        target[..n].copy_from_slice(&key[..n]);
        let pad = if self.is_descending() { 0xff } else { 0 };
        target[n..].fill(pad);
        key.len() <= target.len()
    }
}

/// The reverse order of a comparator: compares backwards, inverts normalized keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Descending<C>(pub C);

impl<T, C: TypeComparator<T>> TypeComparator<T> for Descending<C> {
    fn compare(&self, a: &T, b: &T) -> Ordering {
        self.0.compare(a, b).reverse()
    }

    fn compare_serialized(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<Ordering> {
        self.0.compare_serialized(a, b).map(Ordering::reverse)
    }

    fn write_normalized_key(&self, value: &T, out: &mut Vec<u8>) {
        let start = out.len();
        self.0.write_normalized_key(value, out);
        for b in &mut out[start..] {
            *b = !*b;
        }
    }

    fn normalized_key_len(&self) -> Option<usize> {
        self.0.normalized_key_len()
    }

    fn is_descending(&self) -> bool {
        !self.0.is_descending()
    }
}
