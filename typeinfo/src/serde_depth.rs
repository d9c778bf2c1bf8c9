//! A depth budget for serde deserializers that have none (postcard's): [`Bounded`] wraps a
//! deserializer so that every nested value (an element, a key or value of a map, the
//! content of an option, a newtype or an enum variant, not the variant's identifier)
//! spends one level of a budget, ends
//! in an error past it, and runs on a stack with room for it
//! ([`ensure_stack`](typeinfo_serializers::ensure_stack)).
//!
//! A serde type that recurses (`enum Json { Array(Vec<Json>), .. }`) nests as deep as its
//! bytes say, one byte per level; without a budget a few kilobytes of a peer's batch
//! overflowed the stack. The wrapper forwards every call unchanged and adds nothing but the
//! count, so the bytes read are postcard's as before.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, Visitor};
use typeinfo_serializers::ensure_stack;

/// The levels a read may still nest, shared by every wrapper of one read.
pub(crate) struct Budget {
    left: Cell<usize>,
    exceeded: Cell<bool>,
}

impl Budget {
    /// A budget of `levels` nested values.
    pub(crate) fn new(levels: usize) -> Self {
        Self {
            left: Cell::new(levels),
            exceeded: Cell::new(false),
        }
    }

    /// Whether a read ran out of levels (its error is then the depth limit's).
    pub(crate) fn exceeded(&self) -> bool {
        self.exceeded.get()
    }

    /// Runs `f`, the read of one nested value, one level down.
    fn nest<T, E: de::Error>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let left = self.left.get();
        if left == 0 {
            self.exceeded.set(true);
            return Err(E::custom("nesting deeper than the depth limit"));
        }
        self.left.set(left - 1);
        let result = ensure_stack(f);
        self.left.set(left);
        result
    }
}

/// A deserializer whose nested values spend `budget`.
pub(crate) struct Bounded<'b, D> {
    de: D,
    budget: &'b Budget,
}

impl<'b, D> Bounded<'b, D> {
    pub(crate) fn new(de: D, budget: &'b Budget) -> Self {
        Self { de, budget }
    }
}

/// A visitor, seed or access whose nested deserializers spend `budget`.
struct Wrap<'b, X> {
    inner: X,
    budget: &'b Budget,
}

impl<'b, X> Wrap<'b, X> {
    fn new(inner: X, budget: &'b Budget) -> Self {
        Self { inner, budget }
    }
}

macro_rules! forward_deserialize {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.de.$method($($arg,)* Wrap::new(visitor, self.budget))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Bounded<'_, D> {
    type Error = D::Error;

    forward_deserialize! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty);)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit! {
        visit_bool(bool);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_i64(i64);
        visit_i128(i128);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_u64(u64);
        visit_u128(u128);
        visit_f32(f32);
        visit_f64(f64);
        visit_char(char);
        visit_str(&str);
        visit_borrowed_str(&'de str);
        visit_string(String);
        visit_bytes(&[u8]);
        visit_borrowed_bytes(&'de [u8]);
        visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let budget = self.budget;
        budget.nest(|| self.inner.visit_some(Bounded::new(d, budget)))
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let budget = self.budget;
        budget.nest(|| self.inner.visit_newtype_struct(Bounded::new(d, budget)))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_seq(Wrap::new(seq, self.budget))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(Wrap::new(map, self.budget))
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_enum(Wrap::new(data, self.budget))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Wrap<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let budget = self.budget;
        budget.nest(|| self.inner.deserialize(Bounded::new(d, budget)))
    }
}

impl<'de, A: de::SeqAccess<'de>> de::SeqAccess<'de> for Wrap<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.inner.next_element_seed(Wrap::new(seed, self.budget))
    }
    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for Wrap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.inner.next_key_seed(Wrap::new(seed, self.budget))
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.inner.next_value_seed(Wrap::new(seed, self.budget))
    }
    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'b, 'de, A: de::EnumAccess<'de>> de::EnumAccess<'de> for Wrap<'b, A> {
    type Error = A::Error;
    type Variant = Wrap<'b, A::Variant>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), A::Error> {
        // The variant's identifier is a leaf: it spends nothing; its content does.
        let (value, variant) = self.inner.variant_seed(seed)?;
        Ok((value, Wrap::new(variant, self.budget)))
    }
}

impl<'de, A: de::VariantAccess<'de>> de::VariantAccess<'de> for Wrap<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.inner
            .newtype_variant_seed(Wrap::new(seed, self.budget))
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        let budget = self.budget;
        budget.nest(|| self.inner.tuple_variant(len, Wrap::new(visitor, budget)))
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        let budget = self.budget;
        budget.nest(|| {
            self.inner
                .struct_variant(fields, Wrap::new(visitor, budget))
        })
    }
}
