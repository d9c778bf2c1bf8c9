//! Flink's `EnumSerializer` (Java enums): the constant's ordinal as an `int`.
//!
//! Derive [`FlinkEnum`] for a fieldless Rust enum with
//! `#[derive(TypeInfo)] #[typeinfo(flink_enum = "com.example.Side")]`: the variants are the
//! Java constants in declaration order (`#[typeinfo(flink_name = "BUY")]` renames one).

use std::marker::PhantomData;

use typeinfo::{DataInputView, DataOutputView, Error, Result, SerializerSnapshot, TypeSerializer};

use crate::java_io;
use crate::snapshot;

/// A Rust enum that stands for a Java enum.
pub trait FlinkEnum: Clone + Send + Sync + 'static {
    /// The Java class.
    const CLASS_NAME: &'static str;
    /// The Java constants' names, by ordinal.
    const CONSTANTS: &'static [&'static str];
    /// The ordinal of `self`.
    fn ordinal(&self) -> i32;
    /// The value of an ordinal, `None` past the last one.
    fn from_ordinal(ordinal: i32) -> Option<Self>;
}

/// Flink's `EnumSerializer` for the Java enum `E` stands for.
pub struct EnumSerializer<E>(PhantomData<fn() -> E>);

impl<E> EnumSerializer<E> {
    /// The serializer.
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<E> Default for EnumSerializer<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Clone for EnumSerializer<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for EnumSerializer<E> {}

impl<E> std::fmt::Debug for EnumSerializer<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EnumSerializer<{}>", std::any::type_name::<E>())
    }
}

impl<E: FlinkEnum> TypeSerializer<E> for EnumSerializer<E> {
    fn serialize(&self, value: &E, out: &mut DataOutputView) -> Result<()> {
        java_io::write_i32(out, value.ordinal());
        Ok(())
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<E> {
        let ordinal = java_io::read_i32(input)?;
        E::from_ordinal(ordinal).ok_or_else(|| Error::InvalidTag {
            what: format!("enum {}", E::CLASS_NAME),
            tag: ordinal as u32 as u64,
        })
    }
    fn copy(&self, value: &E) -> E {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        self.deserialize(input).map(drop)
    }
    fn fixed_length(&self) -> Option<usize> {
        Some(4)
    }
    fn is_immutable(&self) -> bool {
        true
    }
    fn snapshot(&self) -> SerializerSnapshot {
        snapshot::named("EnumSerializer", E::CLASS_NAME, E::CONSTANTS, Vec::new())
    }
}
