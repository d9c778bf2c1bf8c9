//! The conformance harness must catch broken serializers: each one here breaks one rule.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use typeinfo_serializers::testing::Conformance;
use typeinfo_serializers::*;

/// A correct `u32` serializer; the broken ones below change one method each.
#[derive(Debug, Clone, Copy, Default)]
struct Broken {
    fault: Fault,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
enum Fault {
    #[default]
    None,
    WrongFixedLength,
    TrailingByte,
    PanickingRead,
    SkipTooFar,
    ReadsPastTruncation,
    WrongCopy,
    ForeignSnapshot,
}

impl TypeSerializer<u32> for Broken {
    fn serialize(&self, value: &u32, out: &mut DataOutputView) -> Result<()> {
        out.write_u32(*value);
        if self.fault == Fault::TrailingByte {
            out.write_u8(0);
        }
        Ok(())
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<u32> {
        match self.fault {
            Fault::PanickingRead => {
                // Indexes without checking the length: panics on short input.
                let b = input.rest();
                let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                input.skip_bytes(4)?;
                Ok(v)
            }
            Fault::ReadsPastTruncation => {
                // Pads a short input with zeros instead of failing.
                let mut four = [0u8; 4];
                let rest = input.rest();
                let n = rest.len().min(4);
                four[..n].copy_from_slice(&rest[..n]);
                input.skip_bytes(n)?;
                Ok(u32::from_le_bytes(four))
            }
            _ => input.read_u32(),
        }
    }
    fn copy(&self, value: &u32) -> u32 {
        if self.fault == Fault::WrongCopy {
            value.wrapping_add(1)
        } else {
            *value
        }
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        input.skip_bytes(if self.fault == Fault::SkipTooFar {
            5
        } else {
            4
        })
    }
    fn fixed_length(&self) -> Option<usize> {
        match self.fault {
            Fault::WrongFixedLength => Some(8),
            Fault::TrailingByte => None,
            _ => Some(4),
        }
    }
    fn snapshot(&self) -> SerializerSnapshot {
        if self.fault == Fault::ForeignSnapshot {
            SerializerSnapshot::new("my.unregistered.kind", 1)
        } else {
            SerializerSnapshot::new(kinds::U32, 1)
        }
    }
}

fn check(fault: Fault) -> std::result::Result<(), typeinfo_serializers::testing::ConformanceError> {
    Conformance::new(Broken { fault }, vec![0u32, 1, 0xdead_beef, u32::MAX]).run()
}

#[test]
fn the_correct_serializer_passes() {
    assert_eq!(check(Fault::None), Ok(()));
}

#[test]
fn a_wrong_fixed_length_is_caught() {
    let err = check(Fault::WrongFixedLength).expect_err("wrong fixed length must fail");
    assert_eq!(err.check, "fixed length");
}

#[test]
fn a_trailing_byte_is_caught() {
    let err = check(Fault::TrailingByte).expect_err("trailing byte must fail");
    assert_eq!(err.check, "round trip");
    assert!(err.message.contains("trailing"), "{err}");
}

#[test]
fn a_panicking_read_is_caught() {
    let err = check(Fault::PanickingRead).expect_err("panicking read must fail");
    assert_eq!(err.check, "truncation");
    assert!(err.message.contains("panicked"), "{err}");
}

#[test]
fn a_skip_that_does_not_land_is_caught() {
    let err = check(Fault::SkipTooFar).expect_err("bad skip must fail");
    assert!(matches!(err.check, "copy serialized" | "skip"), "{err}");
}

#[test]
fn reading_a_truncated_value_is_caught() {
    let err = check(Fault::ReadsPastTruncation).expect_err("lenient read must fail");
    assert_eq!(err.check, "truncation");
}

#[test]
fn a_wrong_copy_is_caught() {
    let err = check(Fault::WrongCopy).expect_err("wrong copy must fail");
    assert_eq!(err.check, "copy");
}

#[test]
fn an_unrestorable_snapshot_is_caught() {
    let err = check(Fault::ForeignSnapshot).expect_err("unknown kind must fail");
    assert_eq!(err.check, "restored serializer");
    assert!(err.message.contains("my.unregistered.kind"), "{err}");
}

/// A comparator whose normalized keys disagree with its order.
#[derive(Debug, Clone, Copy)]
struct LittleEndianKeys;

impl TypeComparator<u32> for LittleEndianKeys {
    fn compare(&self, a: &u32, b: &u32) -> std::cmp::Ordering {
        a.cmp(b)
    }
    fn compare_serialized(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<std::cmp::Ordering> {
        Ok(a.read_u32()?.cmp(&b.read_u32()?))
    }
    fn write_normalized_key(&self, value: &u32, out: &mut Vec<u8>) {
        out.extend_from_slice(&value.to_le_bytes());
    }
    fn normalized_key_len(&self) -> Option<usize> {
        Some(4)
    }
}

#[test]
fn normalized_keys_out_of_order_are_caught() {
    let err = Conformance::new(U32Serializer, vec![1u32, 256])
        .comparator(LittleEndianKeys)
        .run()
        .expect_err("little-endian keys must fail");
    assert_eq!(err.check, "normalized key");
}

#[test]
fn a_comparator_against_the_expected_order_is_caught() {
    let err = Conformance::new(U32Serializer, vec![1u32, 2])
        .comparator(U32Comparator)
        .order(|a: &u32, b: &u32| b.cmp(a))
        .run()
        .expect_err("reversed order must fail");
    assert_eq!(err.check, "comparator");
}

#[test]
fn unequal_bytes_for_equal_keys_are_caught() {
    // Equality that ignores the sign of zero: equal values, different bytes.
    let err = Conformance::with_eq(F64Serializer, vec![0.0f64, -0.0], |a, b| a == b)
        .key_type()
        .run()
        .expect_err("-0.0 and 0.0 must not pass as a key type");
    assert_eq!(err.check, "key bytes");
}
