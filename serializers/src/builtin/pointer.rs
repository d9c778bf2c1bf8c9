//! `Box<T>` and `Arc<T>`: invisible in the bytes and in the snapshot, which are `T`'s.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::comparator::TypeComparator;
use crate::error::Result;
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::Compatibility;
use crate::serializer::SnapshotRegistry;
use crate::serializer::TypeSerializer;
use crate::snapshot::SerializerSnapshot;

macro_rules! pointer_impl {
    ($name:ident, $doc:literal, $ptr:ident, |$s:ident, $v:ident| $copy:expr) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name<S> {
            inner: S,
        }

        impl<S> $name<S> {
            /// A serializer of pointers to values `inner` serializes.
            pub const fn new(inner: S) -> Self {
                Self { inner }
            }
        }

        impl<T: 'static, S: TypeSerializer<T> + Clone> TypeSerializer<$ptr<T>> for $name<S> {
            #[inline]
            fn serialize(&self, value: &$ptr<T>, out: &mut DataOutputView) -> Result<()> {
                self.inner.serialize(value, out)
            }
            #[inline]
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<$ptr<T>> {
                self.inner.deserialize(input).map($ptr::new)
            }
            fn copy(&self, $v: &$ptr<T>) -> $ptr<T> {
                let $s = self;
                $copy
            }
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                self.inner.skip(input)
            }
            fn copy_serialized(
                &self,
                input: &mut DataInputView<'_>,
                out: &mut DataOutputView,
            ) -> Result<()> {
                self.inner.copy_serialized(input, out)
            }
            fn fixed_length(&self) -> Option<usize> {
                self.inner.fixed_length()
            }
            fn is_immutable(&self) -> bool {
                self.inner.is_immutable()
            }
            fn min_length(&self) -> usize {
                self.inner.min_length()
            }
            fn snapshot(&self) -> SerializerSnapshot {
                self.inner.snapshot()
            }
            fn resolve(
                &self,
                old: &SerializerSnapshot,
                registry: &SnapshotRegistry,
            ) -> Compatibility<$ptr<T>> {
                self.inner.resolve(old, registry).map($ptr::new)
            }
        }

        impl<T: 'static, C: TypeComparator<T>> TypeComparator<$ptr<T>> for DerefComparator<C> {
            fn compare(&self, a: &$ptr<T>, b: &$ptr<T>) -> Ordering {
                self.0.compare(a, b)
            }
            fn compare_serialized(
                &self,
                a: &mut DataInputView<'_>,
                b: &mut DataInputView<'_>,
            ) -> Result<Ordering> {
                self.0.compare_serialized(a, b)
            }
            fn write_normalized_key(&self, value: &$ptr<T>, out: &mut Vec<u8>) {
                self.0.write_normalized_key(value, out)
            }
            fn normalized_key_len(&self) -> Option<usize> {
                self.0.normalized_key_len()
            }
        }
    };
}

/// Orders `Box<T>` and `Arc<T>` as `T`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DerefComparator<C>(pub C);

pointer_impl!(
    BoxSerializer,
    "Serializes `Box<T>` exactly as `T`; `copy` copies the value.",
    Box,
    |s, v| Box::new(s.inner.copy(v))
);
pointer_impl!(ArcSerializer, "Serializes `Arc<T>` exactly as `T`; `copy` shares the value (values behind an `Arc` are treated as immutable).",
    Arc, |_s, v| Arc::clone(v));
