//! Flink's `BigIntSerializer` (`java.math.BigInteger`) and `BigDecSerializer`
//! (`java.math.BigDecimal`).
//!
//! `BigInteger`: an `int` that is 0 for null, 1 for `BigInteger.ZERO`, 2 for `ONE`, 3 for
//! `TEN`, else the length of `toByteArray()` (minimal two's complement, big-endian) plus
//! 4, followed by those bytes. Java takes the short forms only for the shared constants
//! (`BigInteger.valueOf` returns them; `new BigInteger("0")` is not one and is written
//! long); these serializers write the short forms for every 0, 1 and 10 and read both, so
//! a long-form 0, 1 or 10 from Java is read correctly and written back short (Flink reads
//! both the same).
//!
//! `BigDecimal`: null is the `BigInteger` null alone; otherwise the unscaled value as a
//! `BigInteger` (its 0, 1 and 10 are always Java's constants, so the bytes match Java's
//! exactly), then the `int` scale.

use bigdecimal::BigDecimal;
use num_bigint::BigInt;
use typeinfo::{DataInputView, DataOutputView, Error, Result, SerializerSnapshot, TypeSerializer};

use crate::java_io;
use crate::layout::string::null_error;
use crate::snapshot;

/// `java.math.BigInteger` (a newtype, so that it can have a `TypeInfo` and a
/// [`FlinkType`](crate::FlinkType) here).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BigInteger(pub BigInt);

fn read_big_int(input: &mut DataInputView<'_>) -> Result<Option<BigInt>> {
    let len = java_io::read_i32(input)?;
    let bytes = match len {
        0 => return Ok(None),
        1 => return Ok(Some(BigInt::from(0))),
        2 => return Ok(Some(BigInt::from(1))),
        3 => return Ok(Some(BigInt::from(10))),
        5.. => (len - 4) as usize,
        _ => {
            return Err(Error::OutOfRange {
                what: "BigInteger".to_owned(),
                detail: format!("length word {len} (a length of 0 bytes or negative)"),
            })
        }
    };
    if bytes > input.remaining() {
        return Err(Error::LengthTooLarge {
            len: bytes as u64,
            remaining: input.remaining(),
        });
    }
    Ok(Some(BigInt::from_signed_bytes_be(input.read_bytes(bytes)?)))
}

fn write_big_int(out: &mut DataOutputView, v: Option<&BigInt>) -> Result<()> {
    let Some(v) = v else {
        java_io::write_i32(out, 0);
        return Ok(());
    };
    let short = [(0, 1), (1, 2), (10, 3)]
        .into_iter()
        .find(|(n, _)| *v == BigInt::from(*n));
    if let Some((_, word)) = short {
        java_io::write_i32(out, word);
        return Ok(());
    }
    let bytes = v.to_signed_bytes_be();
    let word = i32::try_from(bytes.len())
        .ok()
        .and_then(|n| n.checked_add(4))
        .ok_or_else(|| Error::OutOfRange {
            what: "BigInteger".to_owned(),
            detail: format!("{} bytes do not fit Flink's length word", bytes.len()),
        })?;
    java_io::write_i32(out, word);
    out.write_bytes(&bytes);
    Ok(())
}

fn read_big_integer(input: &mut DataInputView<'_>) -> Result<Option<BigInteger>> {
    Ok(read_big_int(input)?.map(BigInteger))
}

fn write_big_integer(out: &mut DataOutputView, v: Option<&BigInteger>) -> Result<()> {
    write_big_int(out, v.map(|v| &v.0))
}

fn read_big_decimal(input: &mut DataInputView<'_>) -> Result<Option<BigDecimal>> {
    let Some(unscaled) = read_big_int(input)? else {
        return Ok(None);
    };
    let scale = java_io::read_i32(input)?;
    Ok(Some(BigDecimal::new(unscaled, i64::from(scale))))
}

fn write_big_decimal(out: &mut DataOutputView, v: Option<&BigDecimal>) -> Result<()> {
    let Some(v) = v else {
        return write_big_int(out, None);
    };
    let (unscaled, scale) = v.as_bigint_and_exponent();
    let scale = i32::try_from(scale).map_err(|_| Error::OutOfRange {
        what: "BigDecimal".to_owned(),
        detail: format!("scale {scale} does not fit a Java int"),
    })?;
    write_big_int(out, Some(&unscaled))?;
    java_io::write_i32(out, scale);
    Ok(())
}

nullable_layout!(
    /// `java.math.BigInteger` (`BigIntSerializer`), as [`BigInteger`].
    BigIntSerializer, BigInteger, None, read_big_integer, write_big_integer
);
nullable_layout!(
    /// `java.math.BigDecimal` (`BigDecSerializer`), as `bigdecimal::BigDecimal` (its scale
    /// kept: `12.50` is written with scale 2, as Java writes it).
    BigDecSerializer, BigDecimal, None, read_big_decimal, write_big_decimal
);
