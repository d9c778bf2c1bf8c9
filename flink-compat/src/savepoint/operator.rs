//! An operator state file of a savepoint (`DefaultOperatorStateBackendSnapshotStrategy`):
//! the header ([`OperatorHeader`]), then each state's partitions at the offsets the
//! metadata's handle gives: a list state's element at each offset (its value serializer's
//! bytes); a broadcast state's map at its one offset (an `int` count, then each key and
//! value by the key and value serializers). With snapshot compression on, the data after
//! the header is one snappy-framed stream whose chunks end at every offset (Flink flushes the
//! compressor to take a position), so a partition is read by uncompressing the chunks from
//! its offset on.

use std::borrow::Cow;

use typeinfo::{DataInputView, Error, Result};

use crate::java_io;
use crate::savepoint::meta_info::{BackendStateType, OperatorHeader};
use crate::savepoint::metadata::{DistributionMode, OperatorStateHandle};
use crate::savepoint::snappy;
use crate::savepoint::value::{read_value, FlinkValue};

/// One operator state of one subtask.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorStateDump {
    /// The state's name.
    pub name: String,
    /// The subtask that held it.
    pub subtask: i32,
    /// Its distribution mode.
    pub mode: DistributionMode,
    /// A list state's elements ([`FlinkValue::List`]) or a broadcast state's entries
    /// ([`FlinkValue::Map`]).
    pub value: FlinkValue,
}

/// Reads the states of an operator state handle from its stream's bytes.
///
/// # Errors
///
/// Short or corrupt bytes, an offset outside the stream, a state the header lacks, a
/// serializer that cannot be read without its Rust type (the error names the state).
pub fn read_operator_states(
    bytes: &[u8],
    handle: &OperatorStateHandle,
    subtask: i32,
) -> Result<Vec<OperatorStateDump>> {
    let mut input = DataInputView::new(bytes);
    let header = OperatorHeader::read(&mut input)?;
    let start = input.position();
    let mut out = Vec::with_capacity(handle.states.len());
    for partitions in &handle.states {
        let name = &partitions.name;
        let meta = header
            .states
            .iter()
            .chain(&header.broadcast_states)
            .find(|m| &m.name == name)
            .ok_or_else(|| {
                Error::custom(format!(
                    "operator state `{name}` is not in the file's header"
                ))
            })?;
        let at = |offset: i64| -> Result<Cow<'_, [u8]>> {
            let rest = usize::try_from(offset)
                .ok()
                .filter(|&o| o >= start)
                .and_then(|o| bytes.get(o..))
                .ok_or_else(|| {
                    Error::custom(format!(
                        "offset {offset} (from _metadata) of state `{name}` outside the file"
                    ))
                })?;
            if header.compressed {
                snappy::decompress_chunks_from(rest).map(Cow::Owned)
            } else {
                Ok(Cow::Borrowed(rest))
            }
        };
        let value = if meta.backend_type == BackendStateType::Broadcast {
            let key = meta.serializer("KEY_SERIALIZER")?;
            let value = meta.serializer("VALUE_SERIALIZER")?;
            let mut entries = Vec::new();
            for &offset in &partitions.offsets {
                let data = at(offset)?;
                let mut input = DataInputView::new(&data);
                let n = java_io::read_len(&mut input, 1)?;
                for _ in 0..n {
                    let k = read_value(key, &mut input)?;
                    entries.push((k, read_value(value, &mut input)?));
                }
            }
            FlinkValue::Map(entries)
        } else {
            let element = meta.serializer("VALUE_SERIALIZER")?;
            let items = partitions
                .offsets
                .iter()
                .map(|&offset| read_value(element, &mut DataInputView::new(&at(offset)?)))
                .collect::<Result<Vec<_>>>()
                .map_err(|e| Error::custom(format!("operator state `{name}`: {e}")))?;
            FlinkValue::List(items)
        };
        out.push(OperatorStateDump {
            name: name.clone(),
            subtask,
            mode: partitions.mode,
            value,
        });
    }
    Ok(out)
}
