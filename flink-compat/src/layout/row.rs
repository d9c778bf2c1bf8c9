//! Flink's `RowSerializer` (`org.apache.flink.types.Row`), as Flink 2.3 writes a
//! position-based row: a bit mask, then every non-null field in order.
//!
//! The mask has `2 + arity` bits, most significant bit of each byte first, the last byte
//! padded with zeros: the first two bits are the `RowKind`'s byte value (bit 0 its low bit,
//! bit 1 its high bit), then one bit per field that is set when the field is null. A
//! `Row<F>` holds a tuple `F` of `Option`s, one per field; its serializer
//! [`RowSerializer`] holds the tuple of the fields' serializers (up to 12 fields).
//! Rows with named fields (`Row.withNames`) are not covered.

use typeinfo::{DataInputView, DataOutputView, Error, Result};

/// The change a row stands for (Flink's `RowKind`, by its byte value).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RowKind {
    /// `+I` (0).
    #[default]
    Insert,
    /// `-U` (1).
    UpdateBefore,
    /// `+U` (2).
    UpdateAfter,
    /// `-D` (3).
    Delete,
}

impl RowKind {
    /// Flink's `RowKind.toByteValue()`.
    pub fn to_byte_value(self) -> u8 {
        match self {
            RowKind::Insert => 0,
            RowKind::UpdateBefore => 1,
            RowKind::UpdateAfter => 2,
            RowKind::Delete => 3,
        }
    }

    /// Flink's `RowKind.fromByteValue()`; `None` past 3.
    pub fn from_byte_value(b: u8) -> Option<Self> {
        match b {
            0 => Some(RowKind::Insert),
            1 => Some(RowKind::UpdateBefore),
            2 => Some(RowKind::UpdateAfter),
            3 => Some(RowKind::Delete),
            _ => None,
        }
    }
}

/// A Flink `Row`: its kind and its fields, a tuple of `Option`s (null fields are `None`).
///
/// # Examples
///
/// ```
/// use typeinfo::to_bytes;
/// use typeinfo_flink_compat::{IntSerializer, Row, RowKind, RowSerializer, StringSerializer};
///
/// # fn main() -> typeinfo::Result<()> {
/// let row = Row { kind: RowKind::UpdateAfter, fields: (None::<String>, Some(5)) };
/// let bytes = to_bytes(&RowSerializer((StringSerializer, IntSerializer)), &row)?;
/// // mask 0b01_10_0000: kind 2 (bits 0 and 1 read 0, 1), field 0 null.
/// assert_eq!(bytes, [0b0110_0000, 0, 0, 0, 5]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Row<F> {
    /// The row's kind.
    pub kind: RowKind,
    /// The fields, a tuple of `Option`s.
    pub fields: F,
}

/// Flink's `RowSerializer`: `S` is the tuple of the fields' serializers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowSerializer<S>(pub S);

/// The mask's bits: the kind's two, then one per field.
fn mask_bits(kind: RowKind, nulls: &[bool]) -> impl Iterator<Item = bool> + '_ {
    let b = kind.to_byte_value();
    [b & 1 != 0, b & 2 != 0]
        .into_iter()
        .chain(nulls.iter().copied())
}

/// Writes the mask of a row (`MaskUtils.writeMask`).
pub(crate) fn write_mask(out: &mut DataOutputView, kind: RowKind, nulls: &[bool]) {
    let mut byte = 0u8;
    let mut used = 0;
    for bit in mask_bits(kind, nulls) {
        byte = (byte << 1) | u8::from(bit);
        used += 1;
        if used == 8 {
            out.write_u8(byte);
            byte = 0;
            used = 0;
        }
    }
    if used > 0 {
        out.write_u8(byte << (8 - used));
    }
}

/// Reads the mask of a row into `nulls` and returns the kind.
pub(crate) fn read_mask(input: &mut DataInputView<'_>, nulls: &mut [bool]) -> Result<RowKind> {
    let bits = nulls.len() + 2;
    let bytes = input.read_bytes(bits.div_ceil(8))?;
    let bit = |i: usize| bytes[i / 8] & (0x80 >> (i % 8)) != 0;
    for (i, null) in nulls.iter_mut().enumerate() {
        *null = bit(i + 2);
    }
    let kind = u8::from(bit(0)) | (u8::from(bit(1)) << 1);
    RowKind::from_byte_value(kind).ok_or_else(|| Error::InvalidTag {
        what: "RowKind".to_owned(),
        tag: u64::from(kind),
    })
}
