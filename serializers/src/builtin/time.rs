//! `Duration` and `SystemTime`: seconds, then nanoseconds within the second.
//!
//! `Duration` is `u64` seconds and `u32` nanoseconds, little-endian (12 bytes).
//! `SystemTime` is `i64` seconds since the UNIX epoch (floored, negative before 1970) and
//! `u32` nanoseconds (12 bytes). Nanoseconds of 10^9 or more are refused.

use std::cmp::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::comparator::TypeComparator;
use crate::error::{Error, Result};
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::TypeSerializer;
use crate::serializer::{RestoredSerializer, SnapshotRegistry};
use crate::snapshot::{kinds, SerializerSnapshot};
use crate::value::Value;

const NANOS_PER_SEC: u32 = 1_000_000_000;

fn read_nanos(input: &mut DataInputView<'_>, what: &str) -> Result<u32> {
    let nanos = input.read_u32()?;
    if nanos >= NANOS_PER_SEC {
        return Err(Error::OutOfRange {
            what: what.to_owned(),
            detail: format!("{nanos} nanoseconds"),
        });
    }
    Ok(nanos)
}

fn read_duration(input: &mut DataInputView<'_>) -> Result<Duration> {
    let secs = input.read_u64()?;
    Ok(Duration::new(secs, read_nanos(input, "Duration")?))
}

/// The `(seconds, nanoseconds)` of a point in time, seconds floored.
fn split_time(t: &SystemTime) -> (i64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            if d.subsec_nanos() == 0 {
                (-(d.as_secs() as i64), 0)
            } else {
                (-(d.as_secs() as i64) - 1, NANOS_PER_SEC - d.subsec_nanos())
            }
        }
    }
}

/// Reads the seconds and nanoseconds of a `SystemTime`, nanoseconds checked.
fn read_time_parts(input: &mut DataInputView<'_>) -> Result<(i64, u32)> {
    let secs = input.read_i64()?;
    Ok((secs, read_nanos(input, "SystemTime")?))
}

/// Writes the seconds and nanoseconds of a `SystemTime`.
fn write_time_parts(secs: i64, nanos: u32, out: &mut DataOutputView) {
    out.write_i64(secs);
    out.write_u32(nanos);
}

fn read_time(input: &mut DataInputView<'_>) -> Result<SystemTime> {
    let (secs, nanos) = read_time_parts(input)?;
    let base = if secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_secs(secs as u64))
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))
    };
    base.and_then(|t| t.checked_add(Duration::from_nanos(nanos as u64)))
        .ok_or_else(|| Error::OutOfRange {
            what: "SystemTime".to_owned(),
            detail: format!("{secs} seconds from the UNIX epoch"),
        })
}

/// Serializes `Duration` as `u64` seconds and `u32` nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DurationSerializer;

impl TypeSerializer<Duration> for DurationSerializer {
    fn serialize(&self, value: &Duration, out: &mut DataOutputView) -> Result<()> {
        out.write_u64(value.as_secs());
        out.write_u32(value.subsec_nanos());
        Ok(())
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Duration> {
        read_duration(input)
    }
    fn copy(&self, value: &Duration) -> Duration {
        *value
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        input.skip_bytes(12)
    }
    fn fixed_length(&self) -> Option<usize> {
        Some(12)
    }
    fn is_immutable(&self) -> bool {
        true
    }
    fn snapshot(&self) -> SerializerSnapshot {
        SerializerSnapshot::new(kinds::DURATION, 1)
    }
}

/// Orders durations; the normalized key is seconds and nanoseconds, big-endian.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DurationComparator;

impl TypeComparator<Duration> for DurationComparator {
    fn compare(&self, a: &Duration, b: &Duration) -> Ordering {
        a.cmp(b)
    }
    fn compare_serialized(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<Ordering> {
        Ok(read_duration(a)?.cmp(&read_duration(b)?))
    }
    fn write_normalized_key(&self, value: &Duration, out: &mut Vec<u8>) {
        out.extend_from_slice(&value.as_secs().to_be_bytes());
        out.extend_from_slice(&value.subsec_nanos().to_be_bytes());
    }
    fn normalized_key_len(&self) -> Option<usize> {
        Some(12)
    }
}

/// Serializes `SystemTime` as `i64` seconds since the UNIX epoch and `u32` nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SystemTimeSerializer;

impl TypeSerializer<SystemTime> for SystemTimeSerializer {
    fn serialize(&self, value: &SystemTime, out: &mut DataOutputView) -> Result<()> {
        let (secs, nanos) = split_time(value);
        write_time_parts(secs, nanos, out);
        Ok(())
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<SystemTime> {
        read_time(input)
    }
    fn copy(&self, value: &SystemTime) -> SystemTime {
        *value
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        input.skip_bytes(12)
    }
    fn fixed_length(&self) -> Option<usize> {
        Some(12)
    }
    fn is_immutable(&self) -> bool {
        true
    }
    fn snapshot(&self) -> SerializerSnapshot {
        SerializerSnapshot::new(kinds::SYSTEM_TIME, 1)
    }
}

/// Orders points in time; the normalized key is sign-flipped seconds and nanoseconds,
/// big-endian.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SystemTimeComparator;

impl TypeComparator<SystemTime> for SystemTimeComparator {
    fn compare(&self, a: &SystemTime, b: &SystemTime) -> Ordering {
        a.cmp(b)
    }
    fn compare_serialized(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<Ordering> {
        Ok(read_time(a)?.cmp(&read_time(b)?))
    }
    fn write_normalized_key(&self, value: &SystemTime, out: &mut Vec<u8>) {
        let (secs, nanos) = split_time(value);
        out.extend_from_slice(&((secs as u64) ^ (1 << 63)).to_be_bytes());
        out.extend_from_slice(&nanos.to_be_bytes());
    }
    fn normalized_key_len(&self) -> Option<usize> {
        Some(12)
    }
}

/// The type-free serializer of the `SystemTime` layout: its seconds and nanoseconds.
#[derive(Debug)]
struct RestoredSystemTime(SerializerSnapshot);

pub(crate) fn restore_system_time(
    snapshot: &SerializerSnapshot,
    _: &SnapshotRegistry,
) -> Result<RestoredSerializer> {
    Ok(std::sync::Arc::new(RestoredSystemTime(snapshot.clone())))
}

impl TypeSerializer<Value> for RestoredSystemTime {
    fn serialize(&self, value: &Value, out: &mut DataOutputView) -> Result<()> {
        match value {
            Value::SystemTime { secs, nanos } => {
                write_time_parts(*secs, *nanos, out);
                Ok(())
            }
            _ => Err(crate::restoring::mismatch(self, value)),
        }
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Value> {
        let (secs, nanos) = read_time_parts(input)?;
        Ok(Value::SystemTime { secs, nanos })
    }
    fn copy(&self, value: &Value) -> Value {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        SystemTimeSerializer.skip(input)
    }
    fn fixed_length(&self) -> Option<usize> {
        SystemTimeSerializer.fixed_length()
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.0.clone()
    }
}
