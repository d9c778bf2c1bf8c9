//! A Flink savepoint's `_metadata` file (`Checkpoints.storeCheckpointMetadata`, metadata
//! versions 3 to 6: Flink 1.11 to 2.3), read into a [`Metadata`].
//!
//! The layout (`MetadataV2V3SerializerBase`, `MetadataV3Serializer`, `MetadataV5Serializer`):
//!
//! - the magic number `0x4960672d` and the `int` version;
//! - the `long` checkpoint id; an `int` count of master states, each the magic `0xc96b1696`,
//!   an `int` length and that many bytes (an `int` version, the name by `writeUTF`, an `int`
//!   length and the payload);
//! - an `int` count of operator states, each: (version 5 and later) its name and uid by
//!   `writeUTF` (empty when unset), the 16 bytes of its operator id, its parallelism and max
//!   parallelism (`int`s), its coordinator state (a stream handle), then an `int` count of
//!   subtask states (`-1`: the operator finished) and each subtask: its index (negative,
//!   `-(index + 1)`, for a finished subtask, which has nothing more), then the managed and
//!   the raw operator state (each an `int` 0 or 1, then the handle), the managed and the raw
//!   keyed state (a handle, `0` for none) and two `int` counts of unaligned checkpoints'
//!   channel states (always 0 in a savepoint);
//! - (version 4 and later) the checkpoint's properties in Java serialization, kept as bytes.
//!
//! A stream handle is a tag byte: 0 none; 1 inline bytes (the handle's name by `writeUTF`,
//! an `int` length and the bytes); 2 a file (a `long` size and the absolute path by
//! `writeUTF`); 6 a file relative to the savepoint directory (the path by `writeUTF`, then
//! the `long` size). A keyed state handle is a tag byte: 3, 7 (`KeyGroupsSavepointStateHandle`)
//! or 12 (with a state handle id after the stream handle) for key groups: the first key
//! group and their count (`int`s), each key group's `long` offset into the stream, the stream
//! handle. An operator state handle is the tag 4, an `int` count of states, each its name by
//! `writeUTF`, its distribution mode (a byte: 0 `SPLIT_DISTRIBUTE`, 1 `UNION`, 2
//! `BROADCAST`), an `int` count and the `long` offsets of its partitions, then the stream
//! handle. Incremental (RocksDB's native savepoints and checkpoints) and changelog handles
//! are refused with an error that names them: only canonical savepoints are read.

use typeinfo::{DataInputView, Error, Result};

use crate::java_io;
use crate::savepoint::operator_id::OperatorId;

/// The magic number a `_metadata` file starts with.
pub const METADATA_MAGIC: i32 = 0x4960_672d;
const MASTER_STATE_MAGIC: i32 = 0xc96b_1696_u32 as i32;

/// A savepoint's `_metadata`.
#[derive(Debug, Clone, PartialEq)]
pub struct Metadata {
    /// The metadata format version (6 for Flink 2.3).
    pub version: i32,
    /// The checkpoint id.
    pub checkpoint_id: i64,
    /// The master states (name, version, payload).
    pub master_states: Vec<MasterState>,
    /// The operators' states.
    pub operators: Vec<OperatorState>,
    /// The checkpoint properties in Java serialization (version 4 and later).
    pub properties: Vec<u8>,
}

/// A master hook's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterState {
    /// The hook's name.
    pub name: String,
    /// Its version.
    pub version: i32,
    /// Its bytes.
    pub payload: Vec<u8>,
}

/// One operator's state.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorState {
    /// The operator's name (version 5 and later; empty when unknown).
    pub name: String,
    /// The uid the job gave it (version 5 and later; empty when unset).
    pub uid: String,
    /// The operator id (from the uid, see [`OperatorId::from_uid`]).
    pub id: OperatorId,
    /// The parallelism it ran at.
    pub parallelism: i32,
    /// Its max parallelism (the number of key groups).
    pub max_parallelism: i32,
    /// The operator coordinator's state.
    pub coordinator: Option<StreamHandle>,
    /// Whether every subtask had finished.
    pub finished: bool,
    /// The subtasks' states.
    pub subtasks: Vec<SubtaskState>,
}

/// One subtask's state.
#[derive(Debug, Clone, PartialEq)]
pub struct SubtaskState {
    /// The subtask's index.
    pub index: i32,
    /// Whether it had finished (then it has no state).
    pub finished: bool,
    /// Managed operator state (`ListState`, union and broadcast state).
    pub managed_operator: Option<OperatorStateHandle>,
    /// Raw operator state.
    pub raw_operator: Option<OperatorStateHandle>,
    /// Managed keyed state.
    pub managed_keyed: Option<KeyGroupsHandle>,
    /// Raw keyed state.
    pub raw_keyed: Option<KeyGroupsHandle>,
}

/// Where a state's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamHandle {
    /// Inline in `_metadata` (`ByteStreamStateHandle`).
    Bytes {
        /// The handle's name (the path the bytes would have had).
        name: String,
        /// The bytes.
        data: Vec<u8>,
    },
    /// A file relative to the savepoint's directory (`RelativeFileStateHandle`).
    Relative {
        /// The path relative to the directory.
        path: String,
        /// The file's size.
        size: i64,
    },
    /// A file by its absolute path (`FileStateHandle`).
    File {
        /// The path (a URI such as `file:/...`).
        path: String,
        /// The file's size.
        size: i64,
    },
}

/// A keyed state handle of a canonical savepoint: key groups and their offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyGroupsHandle {
    /// The first key group.
    pub start_key_group: i32,
    /// Each key group's offset in the stream, from `start_key_group` on (0: no data).
    pub offsets: Vec<i64>,
    /// The stream.
    pub stream: StreamHandle,
}

/// How an operator state is redistributed on restore (`OperatorStateHandle.Mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistributionMode {
    /// Each subtask gets a share of the union of the lists (`ListState`).
    SplitDistribute,
    /// Each subtask gets the whole union (`getUnionListState`).
    Union,
    /// Each subtask's copy is the same (broadcast state).
    Broadcast,
}

/// One operator state of an [`OperatorStateHandle`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorStatePartitions {
    /// The state's name.
    pub name: String,
    /// Its distribution mode.
    pub mode: DistributionMode,
    /// The offsets of its partitions (list elements; one for a broadcast state).
    pub offsets: Vec<i64>,
}

/// An operator state handle: the states, their partitions' offsets and the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorStateHandle {
    /// The states, as Flink wrote them.
    pub states: Vec<OperatorStatePartitions>,
    /// The stream.
    pub stream: StreamHandle,
}

fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::custom(format!("corrupt _metadata: {what}"))
}

impl Metadata {
    /// Reads a `_metadata` file's bytes.
    ///
    /// # Errors
    ///
    /// A wrong magic number, a version other than 3 to 6, short or corrupt bytes, a
    /// handle of a kind a canonical savepoint does not hold (named), trailing bytes.
    pub fn read(bytes: &[u8]) -> Result<Self> {
        let mut input = DataInputView::new(bytes);
        let magic = java_io::read_i32(&mut input)?;
        if magic != METADATA_MAGIC {
            return Err(corrupt(format!(
                "magic number {magic:#010x}, not Flink's {METADATA_MAGIC:#010x}: not a Flink savepoint"
            )));
        }
        let version = java_io::read_i32(&mut input)?;
        if !(3..=6).contains(&version) {
            return Err(Error::UnsupportedSnapshotVersion {
                kind: "Flink checkpoint metadata".to_owned(),
                version: version as u32,
                supported: 6,
            });
        }
        let checkpoint_id = java_io::read_i64(&mut input)?;
        if checkpoint_id < 0 {
            return Err(corrupt(format!("checkpoint id {checkpoint_id}")));
        }
        let masters = java_io::read_len(&mut input, 8)?;
        let master_states = (0..masters)
            .map(|_| read_master_state(&mut input))
            .collect::<Result<Vec<_>>>()?;
        let count = java_io::read_len(&mut input, 26)?;
        let mut operators = Vec::with_capacity(count.min(1024));
        for _ in 0..count {
            operators.push(read_operator(&mut input, version)?);
        }
        let properties = if version >= 4 {
            input.rest().to_vec()
        } else if !input.is_empty() {
            return Err(Error::TrailingBytes(input.remaining()));
        } else {
            Vec::new()
        };
        Ok(Self {
            version,
            checkpoint_id,
            master_states,
            operators,
            properties,
        })
    }

    /// The savepoint's format as its properties name it: `Some("CANONICAL")` or
    /// `Some("NATIVE")` (`None` before version 4 or when the properties do not say).
    pub fn format_type(&self) -> Option<&'static str> {
        let has = |s: &str| self.properties.windows(s.len()).any(|w| w == s.as_bytes());
        // `SavepointFormatType`'s constant is the string right after the enum's class.
        if has("\x00\x09CANONICAL") {
            Some("CANONICAL")
        } else if has("\x00\x06NATIVE") {
            Some("NATIVE")
        } else {
            None
        }
    }

    /// The operator with this uid: by the uid stored in the metadata (version 5 and
    /// later), else by the operator id Flink derives from it.
    pub fn operator_by_uid(&self, uid: &str) -> Option<&OperatorState> {
        let id = OperatorId::from_uid(uid);
        self.operators
            .iter()
            .find(|op| op.uid == uid)
            .or_else(|| self.operators.iter().find(|op| op.id == id))
    }
}

fn read_master_state(input: &mut DataInputView<'_>) -> Result<MasterState> {
    if java_io::read_i32(input)? != MASTER_STATE_MAGIC {
        return Err(corrupt("a master state lacks its magic number"));
    }
    let len = java_io::read_len(input, 1)?;
    let mut body = DataInputView::new(input.read_bytes(len)?);
    let version = java_io::read_i32(&mut body)?;
    let name = java_io::read_utf(&mut body)?;
    let n = java_io::read_len(&mut body, 1)?;
    let payload = body.read_bytes(n)?.to_vec();
    if !body.is_empty() {
        return Err(corrupt(format!("trailing bytes in master state `{name}`")));
    }
    Ok(MasterState {
        name,
        version,
        payload,
    })
}

fn read_operator(input: &mut DataInputView<'_>, version: i32) -> Result<OperatorState> {
    let (name, uid) = if version >= 5 {
        (java_io::read_utf(input)?, java_io::read_utf(input)?)
    } else {
        (String::new(), String::new())
    };
    let id = OperatorId(input.read_array()?);
    let parallelism = java_io::read_i32(input)?;
    let max_parallelism = java_io::read_i32(input)?;
    if parallelism < 1 || !(1..=32768).contains(&max_parallelism) {
        return Err(corrupt(format!(
            "operator {id}: parallelism {parallelism}, max parallelism {max_parallelism}"
        )));
    }
    let coordinator = read_stream_handle(input)?;
    let count = java_io::read_i32(input)?;
    let finished = count < 0;
    let count = usize::try_from(count).unwrap_or(0);
    if count > input.remaining() / 4 {
        return Err(Error::LengthTooLarge {
            len: count as u64,
            remaining: input.remaining(),
        });
    }
    let mut subtasks = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        subtasks.push(read_subtask(input)?);
    }
    Ok(OperatorState {
        name,
        uid,
        id,
        parallelism,
        max_parallelism,
        coordinator,
        finished,
        subtasks,
    })
}

fn read_subtask(input: &mut DataInputView<'_>) -> Result<SubtaskState> {
    let stored = java_io::read_i32(input)?;
    if stored < 0 {
        return Ok(SubtaskState {
            index: -(stored + 1),
            finished: true,
            managed_operator: None,
            raw_operator: None,
            managed_keyed: None,
            raw_keyed: None,
        });
    }
    let managed_operator = read_optional_operator_handle(input)?;
    let raw_operator = read_optional_operator_handle(input)?;
    let managed_keyed = read_keyed_handle(input)?;
    let raw_keyed = read_keyed_handle(input)?;
    for what in ["input channel", "result subpartition"] {
        let n = java_io::read_i32(input)?;
        if n != 0 {
            return Err(Error::custom(format!(
                "subtask {stored} has {n} {what} state handles (an unaligned checkpoint): not read here"
            )));
        }
    }
    Ok(SubtaskState {
        index: stored,
        finished: false,
        managed_operator,
        raw_operator,
        managed_keyed,
        raw_keyed,
    })
}

fn read_optional_operator_handle(
    input: &mut DataInputView<'_>,
) -> Result<Option<OperatorStateHandle>> {
    match java_io::read_i32(input)? {
        0 => Ok(None),
        1 => read_operator_handle(input),
        n => Err(corrupt(format!("operator state presence flag {n}"))),
    }
}

fn read_operator_handle(input: &mut DataInputView<'_>) -> Result<Option<OperatorStateHandle>> {
    match input.read_u8()? {
        0 => return Ok(None),
        4 => {}
        tag => return Err(corrupt(format!("operator state handle tag {tag}"))),
    }
    let count = java_io::read_len(input, 7)?;
    let mut states = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let name = java_io::read_utf(input)?;
        let mode = match input.read_u8()? {
            0 => DistributionMode::SplitDistribute,
            1 => DistributionMode::Union,
            2 => DistributionMode::Broadcast,
            m => return Err(corrupt(format!("distribution mode {m} of state `{name}`"))),
        };
        let n = java_io::read_len(input, 8)?;
        let offsets = (0..n)
            .map(|_| java_io::read_i64(input))
            .collect::<Result<Vec<_>>>()?;
        states.push(OperatorStatePartitions {
            name,
            mode,
            offsets,
        });
    }
    let stream = read_stream_handle(input)?
        .ok_or_else(|| corrupt("an operator state handle without a stream"))?;
    Ok(Some(OperatorStateHandle { states, stream }))
}

fn read_keyed_handle(input: &mut DataInputView<'_>) -> Result<Option<KeyGroupsHandle>> {
    let tag = input.read_u8()?;
    match tag {
        0 => return Ok(None),
        3 | 7 | 12 => {}
        5 | 11 => {
            return Err(Error::custom(
                "an incremental RocksDB state handle (a native savepoint or a checkpoint): only canonical savepoints are read",
            ))
        }
        8..=10 | 13 | 14 => {
            return Err(Error::custom(
                "a changelog state handle (a checkpoint of the changelog backend): only canonical savepoints are read",
            ))
        }
        _ => return Err(corrupt(format!("keyed state handle tag {tag}"))),
    }
    let start_key_group = java_io::read_i32(input)?;
    let n = java_io::read_len(input, 8)?;
    if start_key_group < 0 || n == 0 || start_key_group as usize + n > 32768 {
        return Err(corrupt(format!(
            "key groups {start_key_group} + {n} outside 0..32768"
        )));
    }
    let offsets = (0..n)
        .map(|_| java_io::read_i64(input))
        .collect::<Result<Vec<_>>>()?;
    let stream = read_stream_handle(input)?
        .ok_or_else(|| corrupt("a key groups handle without a stream"))?;
    if tag == 12 {
        java_io::read_utf(input)?;
    }
    Ok(Some(KeyGroupsHandle {
        start_key_group,
        offsets,
        stream,
    }))
}

fn read_size(input: &mut DataInputView<'_>) -> Result<i64> {
    let size = java_io::read_i64(input)?;
    if size < 0 {
        return Err(corrupt(format!("state file size {size}")));
    }
    Ok(size)
}

fn read_stream_handle(input: &mut DataInputView<'_>) -> Result<Option<StreamHandle>> {
    Ok(Some(match input.read_u8()? {
        0 => return Ok(None),
        1 => {
            let name = java_io::read_utf(input)?;
            let n = java_io::read_len(input, 1)?;
            StreamHandle::Bytes {
                name,
                data: input.read_bytes(n)?.to_vec(),
            }
        }
        2 => {
            let size = read_size(input)?;
            StreamHandle::File {
                path: java_io::read_utf(input)?,
                size,
            }
        }
        6 => {
            let path = java_io::read_utf(input)?;
            StreamHandle::Relative {
                path,
                size: read_size(input)?,
            }
        }
        tag => return Err(corrupt(format!("stream state handle tag {tag}"))),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `_metadata` of one operator with one subtask whose managed keyed state handle has
    /// the tag `keyed_tag` followed by `rest`.
    fn metadata_with(keyed_tag: u8, rest: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&METADATA_MAGIC.to_be_bytes());
        b.extend_from_slice(&6i32.to_be_bytes());
        b.extend_from_slice(&7i64.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes()); // master states
        b.extend_from_slice(&1i32.to_be_bytes()); // operators
        b.extend_from_slice(&[0, 1, b'a', 0, 1, b'a']); // name, uid
        b.extend_from_slice(&OperatorId::from_uid("a").0);
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&128i32.to_be_bytes());
        b.push(0); // no coordinator state
        b.extend_from_slice(&1i32.to_be_bytes()); // subtasks
        b.extend_from_slice(&0i32.to_be_bytes()); // subtask 0
        b.extend_from_slice(&0i32.to_be_bytes()); // no managed operator state
        b.extend_from_slice(&0i32.to_be_bytes()); // no raw operator state
        b.push(keyed_tag);
        b.extend_from_slice(rest);
        b
    }

    #[test]
    fn a_savepoint_handle_with_an_inline_stream_reads() -> Result<()> {
        let mut rest = Vec::new();
        rest.extend_from_slice(&0i32.to_be_bytes()); // first key group
        rest.extend_from_slice(&1i32.to_be_bytes()); // one key group
        rest.extend_from_slice(&5i64.to_be_bytes()); // its offset
        rest.extend_from_slice(&[1, 0, 1, b'x', 0, 0, 0, 2, 9, 9]); // inline "x", 2 bytes
        rest.push(0); // no raw keyed state
        rest.extend_from_slice(&[0; 8]); // no channel state
        let metadata = Metadata::read(&metadata_with(7, &rest))?;
        assert_eq!(metadata.checkpoint_id, 7);
        let op = metadata.operator_by_uid("a").map(|op| &op.subtasks[0]);
        let keyed = op.and_then(|s| s.managed_keyed.clone());
        assert_eq!(
            keyed,
            Some(KeyGroupsHandle {
                start_key_group: 0,
                offsets: vec![5],
                stream: StreamHandle::Bytes {
                    name: "x".to_owned(),
                    data: vec![9, 9],
                },
            })
        );
        Ok(())
    }

    #[test]
    fn incremental_and_changelog_handles_are_refused_by_name() {
        for (tag, what) in [(5, "incremental"), (11, "incremental"), (14, "changelog")] {
            let err = Metadata::read(&metadata_with(tag, &[])).map(drop);
            let text = err.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(text.contains(what), "tag {tag}: {text}");
        }
    }

    #[test]
    fn unknown_versions_and_tags_are_errors() {
        let mut bytes = metadata_with(0, &[0; 9]);
        assert!(Metadata::read(&bytes).is_ok());
        bytes[7] = 9; // version 9
        assert!(matches!(
            Metadata::read(&bytes),
            Err(Error::UnsupportedSnapshotVersion { .. })
        ));
        assert!(Metadata::read(&metadata_with(99, &[])).is_err());
    }
}
