//! Arbitrary-precision decimals: a zigzag-varint scale, then the unscaled value as
//! length-prefixed big-endian two's-complement bytes (the form of Java's
//! `BigInteger.toByteArray`, at least one byte).
//!
//! `rust_decimal::Decimal` (feature `rust_decimal`) and `bigdecimal::BigDecimal`
//! (feature `bigdecimal`) share the layout and the snapshot, so a job can switch between
//! them; reading a value that `rust_decimal` cannot hold (over 96 bits or a scale over 28)
//! is an [`Error::OutOfRange`], never a rounded value. Decimals are not key types: `1.0`
//! and `1.00` are equal values with different bytes.

use crate::error::{Error, Result};
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::TypeSerializer;
use crate::serializer::{RestoredSerializer, SnapshotRegistry};
use crate::snapshot::{kinds, SerializerSnapshot};
use crate::value::Value;

/// The shortest big-endian two's-complement bytes of `v` (at least one byte).
pub fn i128_to_twos_complement(v: i128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    bytes[twos_complement_start(&bytes)..].to_vec()
}

/// Where the shortest two's-complement form of the big-endian `bytes` starts.
#[inline(always)]
fn twos_complement_start(bytes: &[u8; 16]) -> usize {
    let v = i128::from_be_bytes(*bytes);
    // Redundant sign bits: leading copies of the sign bit beyond the one that must stay.
    let redundant = if v < 0 {
        v.leading_ones()
    } else {
        v.leading_zeros()
    } as usize
        - 1;
    (redundant / 8).min(15)
}

/// The value of big-endian two's-complement bytes, if it fits an `i128`.
#[inline]
pub fn twos_complement_to_i128(bytes: &[u8]) -> Option<i128> {
    let (&first, rest) = bytes.split_first()?;
    if rest.len() > 15 {
        return None;
    }
    // Sign-extend the first byte, then shift the others in: no variable-length copy.
    let mut v = i128::from(first as i8);
    for &b in rest {
        v = (v << 8) | i128::from(b);
    }
    Some(v)
}

#[inline]
fn skip_decimal(input: &mut DataInputView<'_>) -> Result<()> {
    input.read_varint_signed()?;
    input.read_len_prefixed().map(|_| ())
}

#[inline]
fn read_parts<'a>(input: &mut DataInputView<'a>) -> Result<(i64, &'a [u8])> {
    let scale = input.read_varint_signed()?;
    let unscaled = input.read_len_prefixed()?;
    if unscaled.is_empty() {
        return Err(Error::OutOfRange {
            what: "Decimal".to_owned(),
            detail: "empty unscaled value".to_owned(),
        });
    }
    Ok((scale, unscaled))
}

/// Writes a scale and unscaled two's-complement bytes.
#[inline]
fn write_parts(scale: i64, unscaled: &[u8], out: &mut DataOutputView) {
    out.write_varint_signed(scale);
    out.write_len_prefixed(unscaled);
}

/// The type-free serializer of the decimal layout: the scale and the unscaled bytes.
#[derive(Debug)]
struct RestoredDecimal(SerializerSnapshot);

pub(crate) fn restore(
    snapshot: &SerializerSnapshot,
    _: &SnapshotRegistry,
) -> Result<RestoredSerializer> {
    Ok(std::sync::Arc::new(RestoredDecimal(snapshot.clone())))
}

impl TypeSerializer<Value> for RestoredDecimal {
    fn serialize(&self, value: &Value, out: &mut DataOutputView) -> Result<()> {
        match value {
            Value::Decimal { scale, unscaled } => {
                write_parts(*scale, unscaled, out);
                Ok(())
            }
            _ => Err(crate::restoring::mismatch(self, value)),
        }
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Value> {
        let (scale, unscaled) = read_parts(input)?;
        Ok(Value::Decimal {
            scale,
            unscaled: unscaled.to_vec(),
        })
    }
    fn copy(&self, value: &Value) -> Value {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        skip_decimal(input)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.0.clone()
    }
}

#[cfg_attr(
    not(any(feature = "rust_decimal", feature = "bigdecimal")),
    allow(dead_code)
)]
fn decimal_snapshot() -> SerializerSnapshot {
    SerializerSnapshot::new(kinds::DECIMAL, 1)
}

/// Serializes `rust_decimal::Decimal` as scale and unscaled two's-complement bytes.
#[cfg(feature = "rust_decimal")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RustDecimalSerializer;

/// The bytes of a `rust_decimal::Decimal`: the head (zigzag scale, unscaled length), then
/// the first `n` big-endian bytes of the word (the unscaled value's significant bytes at
/// its front).
#[cfg(feature = "rust_decimal")]
#[inline(always)]
fn rust_decimal_parts(value: &rust_decimal::Decimal) -> ([u8; 2], u128, usize) {
    // A scale is at most 28, so its zigzag varint is one byte; the unscaled value is at
    // most 13 bytes (96 bits and a sign), so its length is one byte too.
    let scale = value.scale() as i64;
    let mantissa = value.mantissa();
    let start = twos_complement_start(&mantissa.to_be_bytes());
    let n = 16 - start;
    // The significant bytes moved to the front of a 16-byte word: one fixed-size store
    // instead of a variable-length copy; the bytes past `n` are not kept.
    let front = (mantissa as u128) << (8 * start as u32);
    debug_assert!(scale < 64 && n <= 16);
    ([((scale << 1) ^ (scale >> 63)) as u8, n as u8], front, n)
}

#[cfg(feature = "rust_decimal")]
impl RustDecimalSerializer {
    /// Writes `value`, the bytes [`serialize`](TypeSerializer::serialize) appends (at most
    /// 18), through a writer into reserved room
    /// ([`DataOutputView::reserved_writer`](crate::DataOutputView::reserved_writer)): for
    /// hand-written serializers of records that hold a decimal.
    ///
    /// # Errors
    ///
    /// Less room left than the value's bytes.
    #[inline(always)]
    pub fn put(
        &self,
        value: &rust_decimal::Decimal,
        w: &mut crate::ReservedWriter<'_>,
    ) -> Result<()> {
        let (head, front, n) = rust_decimal_parts(value);
        w.put_array(head)?;
        w.put_be_prefix(front, n)
    }
}

#[cfg(feature = "rust_decimal")]
impl TypeSerializer<rust_decimal::Decimal> for RustDecimalSerializer {
    #[inline(always)]
    fn serialize(&self, value: &rust_decimal::Decimal, out: &mut DataOutputView) -> Result<()> {
        let (head, front, n) = rust_decimal_parts(value);
        out.write_fixed_prefix(&head, front, n);
        Ok(())
    }
    #[inline]
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<rust_decimal::Decimal> {
        let (scale, unscaled) = read_parts(input)?;
        let out_of_range = |detail: String| Error::OutOfRange {
            what: "rust_decimal::Decimal".to_owned(),
            detail,
        };
        let mantissa = twos_complement_to_i128(unscaled)
            .ok_or_else(|| out_of_range(format!("{}-byte unscaled value", unscaled.len())))?;
        let scale = u32::try_from(scale).map_err(|_| out_of_range(format!("scale {scale}")))?;
        rust_decimal::Decimal::try_from_i128_with_scale(mantissa, scale)
            .map_err(|e| out_of_range(format!("unscaled {mantissa} scale {scale}: {e}")))
    }
    fn copy(&self, value: &rust_decimal::Decimal) -> rust_decimal::Decimal {
        *value
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        skip_decimal(input)
    }
    fn is_immutable(&self) -> bool {
        true
    }
    fn snapshot(&self) -> SerializerSnapshot {
        decimal_snapshot()
    }
}

/// Serializes `bigdecimal::BigDecimal` as scale and unscaled two's-complement bytes.
#[cfg(feature = "bigdecimal")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BigDecimalSerializer;

#[cfg(feature = "bigdecimal")]
impl TypeSerializer<bigdecimal::BigDecimal> for BigDecimalSerializer {
    fn serialize(&self, value: &bigdecimal::BigDecimal, out: &mut DataOutputView) -> Result<()> {
        let (unscaled, scale) = value.as_bigint_and_exponent();
        write_parts(scale, &unscaled.to_signed_bytes_be(), out);
        Ok(())
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<bigdecimal::BigDecimal> {
        let (scale, unscaled) = read_parts(input)?;
        Ok(bigdecimal::BigDecimal::new(
            num_bigint::BigInt::from_signed_bytes_be(unscaled),
            scale,
        ))
    }
    fn copy(&self, value: &bigdecimal::BigDecimal) -> bigdecimal::BigDecimal {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        skip_decimal(input)
    }
    fn is_immutable(&self) -> bool {
        true
    }
    fn snapshot(&self) -> SerializerSnapshot {
        decimal_snapshot()
    }
}
