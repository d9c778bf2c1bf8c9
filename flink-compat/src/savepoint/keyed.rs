//! A keyed state file of a canonical savepoint (both of Flink's backends write the same
//! format: `FullSnapshotAsyncWriter`), read into its entries.
//!
//! After the header ([`KeyedHeader`]), each key group with data starts at the offset the
//! metadata's handle gives (offset 0: no data). Its bytes (snappy-framed when the header
//! says so, each key group its own stream): a `short` state id (the state's position in
//! the header), then pairs of a key and a value, each an `int` length and that many bytes.
//! A key whose first byte has its top bit set is the last of its state in this key group
//! (the bit is cleared to read the key): a `short` follows, the next state's id or
//! `0xffff`, the end of the key group.
//!
//! The bytes of a key are RocksDB's composite key: the key group (big-endian, 1 byte when
//! max parallelism is at most 128, else 2), the key, the namespace (when both the key's
//! and the namespace's serializers have variable lengths, each is followed by its length in
//! little-endian bytes, as many as it needs), and for map state the user key. A timer (a
//! priority queue's element) is the key group and the element (`TimerSerializer`: the
//! timestamp with its sign bit flipped, the key, the namespace), with an empty value. A
//! value: the value's bytes; for list state the elements separated by a `,` byte; for map
//! state a `boolean` null marker and the value.

use typeinfo::{DataInputView, Error, Result};

use crate::flink_snapshot::read::{FlinkSnapshot, SnapshotContent};
use crate::java_io;
use crate::savepoint::meta_info::{KeyedHeader, StateMetaInfo};
use crate::savepoint::metadata::KeyGroupsHandle;
use crate::savepoint::snappy;
use crate::savepoint::value::{read_value, FlinkValue};

const END_OF_KEY_GROUP: u16 = 0xffff;
const META_DATA_FOLLOWS: u8 = 0x80;
const LIST_DELIMITER: u8 = b',';

/// One key/value pair of a keyed state file, undecoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    /// The key group whose data holds it.
    pub key_group: u32,
    /// The state's id (its position in the header).
    pub state: u16,
    /// The composite key's bytes.
    pub key: Vec<u8>,
    /// The value's bytes.
    pub value: Vec<u8>,
}

/// One entry of a keyed state, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyedEntry {
    /// Its key group.
    pub key_group: u32,
    /// The key.
    pub key: FlinkValue,
    /// The namespace (`VoidNamespace`, a window).
    pub namespace: FlinkValue,
    /// The user key of a map state's entry.
    pub user_key: Option<FlinkValue>,
    /// The value: a list state's elements as a list, a map entry's value (or null), a
    /// timer's timestamp.
    pub value: FlinkValue,
}

/// Reads the key groups of `handle` from the file's `bytes`.
///
/// # Errors
///
/// An offset outside the file, short or corrupt bytes, a state id the header lacks, a
/// corrupt snappy stream.
pub fn read_raw_entries(
    bytes: &[u8],
    handle: &KeyGroupsHandle,
    header: &KeyedHeader,
) -> Result<Vec<RawEntry>> {
    let mut starts: Vec<(usize, u32)> = Vec::new();
    for (i, &offset) in handle.offsets.iter().enumerate() {
        if offset == 0 {
            continue;
        }
        let at = usize::try_from(offset)
            .ok()
            .filter(|&at| at < bytes.len())
            .ok_or_else(|| {
                Error::custom(format!(
                    "key group offset {offset} (from _metadata) outside the file's {} bytes",
                    bytes.len()
                ))
            })?;
        starts.push((at, handle.start_key_group as u32 + i as u32));
    }
    starts.sort_unstable();
    let mut entries = Vec::new();
    for (i, &(at, key_group)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(bytes.len(), |next| next.0);
        let region = &bytes[at..end];
        let plain;
        let data = if header.compressed {
            plain = snappy::decompress_framed(region)
                .map_err(|e| Error::custom(format!("key group {key_group}: {e}")))?;
            &plain[..]
        } else {
            region
        };
        read_key_group(data, key_group, header.states.len(), &mut entries)
            .map_err(|e| Error::custom(format!("key group {key_group}: {e}")))?;
    }
    Ok(entries)
}

fn read_state_id(input: &mut DataInputView<'_>, states: usize) -> Result<Option<u16>> {
    let id = java_io::read_u16(input)?;
    if id == END_OF_KEY_GROUP {
        return Ok(None);
    }
    if usize::from(id) >= states {
        return Err(Error::custom(format!(
            "state id {id}, but the file has {states} states"
        )));
    }
    Ok(Some(id))
}

fn read_key_group(
    data: &[u8],
    key_group: u32,
    states: usize,
    entries: &mut Vec<RawEntry>,
) -> Result<()> {
    let mut input = DataInputView::new(data);
    let mut state = read_state_id(&mut input, states)?
        .ok_or_else(|| Error::custom("a key group that ends before its first state"))?;
    loop {
        let len = java_io::read_len(&mut input, 1)?;
        let mut key = input.read_bytes(len)?.to_vec();
        let len = java_io::read_len(&mut input, 0)?;
        let value = input.read_bytes(len)?.to_vec();
        let last = key.first().is_some_and(|b| b & META_DATA_FOLLOWS != 0);
        if let Some(first) = key.first_mut() {
            *first &= !META_DATA_FOLLOWS;
        }
        entries.push(RawEntry {
            key_group,
            state,
            key,
            value,
        });
        if last {
            match read_state_id(&mut input, states)? {
                Some(next) => state = next,
                None => break,
            }
        }
    }
    if !input.is_empty() {
        return Err(Error::TrailingBytes(input.remaining()));
    }
    Ok(())
}

/// Whether a serializer writes the same number of bytes for every value
/// (`TypeSerializer.getLength() >= 0`).
pub(crate) fn is_fixed_length(snapshot: &FlinkSnapshot) -> bool {
    match &snapshot.content {
        SnapshotContent::Simple { serializer } => matches!(
            serializer.as_str(),
            "BooleanSerializer"
                | "ByteSerializer"
                | "ShortSerializer"
                | "CharSerializer"
                | "IntSerializer"
                | "LongSerializer"
                | "FloatSerializer"
                | "DoubleSerializer"
                | "DateSerializer"
                | "SqlDateSerializer"
                | "SqlTimeSerializer"
                | "SqlTimestampSerializer"
                | "InstantSerializer"
                | "LocalDateSerializer"
                | "LocalTimeSerializer"
                | "LocalDateTimeSerializer"
                | "VoidNamespaceSerializer"
                | "VoidSerializer"
                | "GlobalWindowSerializer"
                | "TimeWindowSerializer"
        ),
        SnapshotContent::Enum { .. } => true,
        SnapshotContent::Composite {
            serializer, nested, ..
        } => serializer == "TupleSerializer" && nested.iter().all(is_fixed_length),
        _ => false,
    }
}

/// Skips the little-endian length bytes Flink writes after a part of an ambiguous
/// composite key, checking them against the part's length.
pub(crate) fn skip_length_bytes(input: &mut DataInputView<'_>, len: usize) -> Result<()> {
    let mut value = len;
    loop {
        if usize::from(input.read_u8()?) != value & 0xff {
            return Err(Error::custom(format!(
                "the composite key's length bytes do not match its part of {len} bytes"
            )));
        }
        value >>= 8;
        if value == 0 {
            return Ok(());
        }
    }
}

/// How to decode one state's entries.
pub(crate) struct EntryDecoder<'a> {
    pub(crate) meta: &'a StateMetaInfo,
    pub(crate) key_serializer: &'a FlinkSnapshot,
    pub(crate) prefix_bytes: usize,
}

impl EntryDecoder<'_> {
    /// Decodes one entry of the state.
    ///
    /// # Errors
    ///
    /// Short, corrupt or trailing bytes; a key group prefix that is not the key group's; a
    /// serializer that cannot be read without its Rust type.
    pub(crate) fn decode(&self, raw: &RawEntry) -> Result<KeyedEntry> {
        let mut key = DataInputView::new(&raw.key);
        let mut prefix = 0u32;
        for _ in 0..self.prefix_bytes {
            prefix = prefix << 8 | u32::from(key.read_u8()?);
        }
        if prefix != raw.key_group {
            return Err(Error::custom(format!(
                "an entry of key group {} has the key group prefix {prefix}",
                raw.key_group
            )));
        }
        let entry = match self.meta.kind() {
            "PRIORITY_QUEUE" => self.decode_timer(&mut key, raw)?,
            kind => self.decode_keyed(kind, &mut key, raw)?,
        };
        if !key.is_empty() {
            return Err(Error::custom(format!(
                "{} trailing bytes after the key",
                key.remaining()
            )));
        }
        Ok(entry)
    }

    fn decode_timer(&self, key: &mut DataInputView<'_>, raw: &RawEntry) -> Result<KeyedEntry> {
        let element = read_value(self.meta.serializer("VALUE_SERIALIZER")?, key)?;
        let parts = match element {
            FlinkValue::Tuple(parts) if parts.len() == 3 => parts,
            other => {
                return Ok(KeyedEntry {
                    key_group: raw.key_group,
                    key: FlinkValue::Null,
                    namespace: FlinkValue::Null,
                    user_key: None,
                    value: other,
                })
            }
        };
        let mut parts = parts.into_iter();
        let (Some(timestamp), Some(k), Some(namespace)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(Error::custom("a timer without its parts"));
        };
        Ok(KeyedEntry {
            key_group: raw.key_group,
            key: k,
            namespace,
            user_key: None,
            value: timestamp,
        })
    }

    fn decode_keyed(
        &self,
        kind: &str,
        key: &mut DataInputView<'_>,
        raw: &RawEntry,
    ) -> Result<KeyedEntry> {
        let namespace_serializer = self.meta.serializer("NAMESPACE_SERIALIZER")?;
        let ambiguous =
            !is_fixed_length(self.key_serializer) && !is_fixed_length(namespace_serializer);
        let start = key.position();
        let k = read_value(self.key_serializer, key)?;
        if ambiguous {
            skip_length_bytes(key, key.position() - start)?;
        }
        let start = key.position();
        let namespace = read_value(namespace_serializer, key)?;
        if ambiguous {
            skip_length_bytes(key, key.position() - start)?;
        }
        let value_serializer = self.meta.serializer("VALUE_SERIALIZER")?;
        let mut value = DataInputView::new(&raw.value);
        let (user_key, v) = match kind {
            "MAP" => {
                let (user_key_serializer, value_part) = map_parts(value_serializer)?;
                let user_key = read_value(user_key_serializer, key)?;
                let v = if java_io::read_bool(&mut value)? {
                    FlinkValue::Null
                } else {
                    read_value(value_part, &mut value)?
                };
                (Some(user_key), v)
            }
            "LIST" => (None, read_list(value_serializer, &mut value)?),
            _ => (None, read_value(value_serializer, &mut value)?),
        };
        if !value.is_empty() {
            return Err(Error::custom(format!(
                "{} trailing bytes after the value",
                value.remaining()
            )));
        }
        Ok(KeyedEntry {
            key_group: raw.key_group,
            key: k,
            namespace,
            user_key,
            value: v,
        })
    }
}

pub(crate) fn composite_part<'a>(
    snapshot: &'a FlinkSnapshot,
    name: &str,
    i: usize,
) -> Result<&'a FlinkSnapshot> {
    match &snapshot.content {
        SnapshotContent::Composite {
            serializer, nested, ..
        } if serializer == name => nested
            .get(i)
            .ok_or_else(|| Error::CorruptSnapshot(format!("{name} without part {i}"))),
        _ => Err(Error::CorruptSnapshot(format!(
            "expected a {name}, found {}",
            snapshot.serializer_name()
        ))),
    }
}

fn map_parts(snapshot: &FlinkSnapshot) -> Result<(&FlinkSnapshot, &FlinkSnapshot)> {
    Ok((
        composite_part(snapshot, "MapSerializer", 0)?,
        composite_part(snapshot, "MapSerializer", 1)?,
    ))
}

/// A list state's value: its elements, separated by a `,` byte.
fn read_list(snapshot: &FlinkSnapshot, value: &mut DataInputView<'_>) -> Result<FlinkValue> {
    let element = composite_part(snapshot, "ListSerializer", 0)?;
    let mut items = Vec::new();
    while !value.is_empty() {
        if !items.is_empty() && value.read_u8()? != LIST_DELIMITER {
            return Err(Error::custom("list state elements without their delimiter"));
        }
        items.push(read_value(element, value)?);
    }
    Ok(FlinkValue::List(items))
}
