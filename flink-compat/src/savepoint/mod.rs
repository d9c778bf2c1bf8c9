//! Flink savepoints (Flink 2.3's canonical format, from the hashmap and the RocksDB backend,
//! uncompressed or with snapshot compression): the `_metadata` file, keyed state files
//! and operator state files, read into a type-free dump.
//!
//! ```no_run
//! use typeinfo_flink_compat::savepoint::FlinkSavepoint;
//!
//! # fn main() -> typeinfo::Result<()> {
//! let savepoint = FlinkSavepoint::open("/savepoints/savepoint-1a2b3c-4d5e6f")?;
//! for operator in savepoint.dump()? {
//!     for state in &operator.keyed {
//!         for entry in &state.entries {
//!             println!("{} {} {} {} = {}", operator.uid, state.name, entry.key, entry.namespace, entry.value);
//!         }
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! - [`Metadata`] reads `_metadata` (operators by id with their uid, parallelism and max
//!   parallelism; subtasks with their keyed state handles and key group offsets, and their
//!   operator state handles with partition offsets and distribution modes; inline,
//!   relative and absolute stream handles). [`OperatorId::from_uid`] computes the id Flink
//!   gives a uid.
//! - [`KeyedHeader`] and [`OperatorHeader`] read the state files' headers (each state's
//!   name, kind and serializer snapshots); [`read_raw_entries`] and [`read_operator_states`]
//!   their data; [`FlinkSavepoint::dump`] decodes every entry by the snapshots
//!   ([`FlinkValue`]): keyed value, list, map, reducing and aggregating state, window
//!   contents under their `TimeWindow` namespaces, timers (event and processing time, a
//!   timer's value is its timestamp), operator list and union state, broadcast state.
//!
//! Not read: RocksDB's native savepoints and incremental checkpoints (their handles are
//! refused by name), changelog and unaligned checkpoints, Kryo-serialized values and
//! serializers without a Rust counterpart (an error naming the state and the class).
//!
//! Every error of a file names it (`…/_metadata: corrupt _metadata: …`); reads are bounded
//! by the bytes there are and never panic.

pub(crate) mod keyed;
pub(crate) mod meta_info;
pub(crate) mod metadata;
pub(crate) mod operator;
pub(crate) mod operator_id;
pub(crate) mod snappy;
pub(crate) mod typed;
pub(crate) mod value;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use typeinfo::{DataInputView, Error, Result};

pub use keyed::{read_raw_entries, KeyedEntry, RawEntry};
pub use meta_info::{BackendStateType, KeyedHeader, OperatorHeader, StateMetaInfo};
pub use metadata::{
    DistributionMode, KeyGroupsHandle, MasterState, Metadata, OperatorState, OperatorStateHandle,
    OperatorStatePartitions, StreamHandle, SubtaskState, METADATA_MAGIC,
};
pub use operator::{read_operator_states, OperatorStateDump};
pub use operator_id::OperatorId;
pub use typed::{RawKeyedState, TypedEntry};
pub use value::{read_value, FlinkValue};

/// A Flink savepoint directory and its `_metadata`.
#[derive(Debug, Clone)]
pub struct FlinkSavepoint {
    dir: PathBuf,
    metadata: Metadata,
}

/// One keyed state of an operator, over all its subtasks.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyedStateDump {
    /// The state's name.
    pub name: String,
    /// Its kind: `VALUE`, `LIST`, `MAP`, `REDUCING`, `AGGREGATING`, `PRIORITY_QUEUE` (timers).
    pub kind: String,
    /// Its meta info (serializer snapshots).
    pub meta: StateMetaInfo,
    /// Its entries, by subtask, then key group, as Flink wrote them.
    pub entries: Vec<KeyedEntry>,
}

/// Everything one operator's state holds.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorDump {
    /// The operator's uid (empty when the metadata does not name it).
    pub uid: String,
    /// Its name.
    pub name: String,
    /// Its id.
    pub id: OperatorId,
    /// Its parallelism.
    pub parallelism: i32,
    /// Its max parallelism.
    pub max_parallelism: i32,
    /// Its keyed states.
    pub keyed: Vec<KeyedStateDump>,
    /// Its operator states, per subtask.
    pub operator: Vec<OperatorStateDump>,
}

impl OperatorDump {
    /// The keyed state of this name.
    pub fn keyed_state(&self, name: &str) -> Option<&KeyedStateDump> {
        self.keyed.iter().find(|s| s.name == name)
    }

    /// The dump as text, a line per entry, tab-separated: the operator's uid (or id when
    /// it has none), the state's name and kind, then for a keyed entry its key group, key,
    /// namespace, user key (`-` when none) and value, for an operator state its subtask,
    /// distribution mode and value. Lines are in the order of the bytes.
    pub fn lines(&self) -> Vec<String> {
        let owner = if self.uid.is_empty() {
            self.id.to_string()
        } else {
            self.uid.clone()
        };
        let mut lines = Vec::new();
        for state in &self.keyed {
            for e in &state.entries {
                let user_key = e
                    .user_key
                    .as_ref()
                    .map_or("-".to_owned(), ToString::to_string);
                lines.push(format!(
                    "{owner}\t{}\t{}\t{}\t{}\t{}\t{user_key}\t{}",
                    state.name, state.kind, e.key_group, e.key, e.namespace, e.value
                ));
            }
        }
        for state in &self.operator {
            lines.push(format!(
                "{owner}\t{}\t{:?}\t{}\t{}",
                state.name, state.mode, state.subtask, state.value
            ));
        }
        lines
    }
}

fn in_file(path: &Path, e: Error) -> Error {
    Error::custom(format!("{}: {e}", path.display()))
}

impl FlinkSavepoint {
    /// Opens a savepoint: its directory, or its `_metadata` file.
    ///
    /// # Errors
    ///
    /// The `_metadata` file cannot be read or is not a Flink savepoint's (the error names it).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let (dir, file) = if path.is_dir() {
            (path.to_path_buf(), path.join("_metadata"))
        } else {
            let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            (dir, path.to_path_buf())
        };
        let bytes = std::fs::read(&file)
            .map_err(|e| in_file(&file, Error::custom(format!("cannot read: {e}"))))?;
        let metadata = Metadata::read(&bytes).map_err(|e| in_file(&file, e))?;
        Ok(Self { dir, metadata })
    }

    /// The savepoint's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its `_metadata`.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Where a stream handle's bytes are, for errors.
    pub fn handle_path(&self, handle: &StreamHandle) -> PathBuf {
        match handle {
            StreamHandle::Bytes { name, .. } => {
                self.dir.join(format!("_metadata (inline state {name})"))
            }
            StreamHandle::Relative { path, .. } => self.dir.join(path),
            StreamHandle::File { path, .. } => {
                let local = path.strip_prefix("file:").unwrap_or(path);
                let local = Path::new(local.trim_start_matches("//"));
                match local.file_name() {
                    Some(name) if !local.exists() => self.dir.join(name),
                    _ => local.to_path_buf(),
                }
            }
        }
    }

    /// A stream handle's bytes: inline, or read from its file (an absolute path that no
    /// longer exists is looked for in the savepoint's directory, where a moved savepoint
    /// keeps it).
    ///
    /// # Errors
    ///
    /// The file cannot be read, or is shorter than the handle says (the error names it).
    pub fn stream_bytes<'a>(&self, handle: &'a StreamHandle) -> Result<Cow<'a, [u8]>> {
        let (path, size) = match handle {
            StreamHandle::Bytes { data, .. } => return Ok(Cow::Borrowed(data)),
            StreamHandle::Relative { size, .. } | StreamHandle::File { size, .. } => {
                (self.handle_path(handle), *size)
            }
        };
        let bytes = std::fs::read(&path)
            .map_err(|e| in_file(&path, Error::custom(format!("cannot read: {e}"))))?;
        if (bytes.len() as u64) < size as u64 {
            return Err(in_file(
                &path,
                Error::custom(format!(
                    "the file has {} bytes, the metadata says {size}",
                    bytes.len()
                )),
            ));
        }
        Ok(Cow::Owned(bytes))
    }

    /// One keyed state of the operator with this uid, over all its subtasks, undecoded:
    /// read it into Rust types with [`RawKeyedState::values`], [`lists`](RawKeyedState::lists)
    /// or [`maps`](RawKeyedState::maps).
    ///
    /// # Errors
    ///
    /// No operator with this uid, no state of this name, a state file that cannot be read
    /// or is corrupt (the error names it).
    pub fn keyed_state(&self, uid: &str, state: &str) -> Result<RawKeyedState> {
        let op = self.metadata.operator_by_uid(uid).ok_or_else(|| {
            Error::custom(format!("no operator with uid `{uid}` in the savepoint"))
        })?;
        let prefix_bytes = if op.max_parallelism <= 128 { 1 } else { 2 };
        let mut found: Option<RawKeyedState> = None;
        for handle in op.subtasks.iter().filter_map(|s| s.managed_keyed.as_ref()) {
            let path = self.handle_path(&handle.stream);
            let bytes = self.stream_bytes(&handle.stream)?;
            let read = || -> Result<Option<RawKeyedState>> {
                let header = KeyedHeader::read(&mut DataInputView::new(&bytes))?;
                let Some(id) = header.states.iter().position(|m| m.name == state) else {
                    return Ok(None);
                };
                let mut entries = read_raw_entries(&bytes, handle, &header)?;
                entries.retain(|e| usize::from(e.state) == id);
                Ok(Some(RawKeyedState {
                    meta: header.states[id].clone(),
                    key_serializer: header.key_serializer,
                    prefix_bytes,
                    entries,
                }))
            };
            match (read().map_err(|e| in_file(&path, e))?, &mut found) {
                (Some(part), Some(all)) => all.entries.extend(part.entries),
                (Some(part), None) => found = Some(part),
                (None, _) => {}
            }
        }
        found.ok_or_else(|| Error::custom(format!("operator `{uid}` has no keyed state `{state}`")))
    }

    /// Reads and decodes every operator's state.
    ///
    /// # Errors
    ///
    /// As [`dump_operator`](Self::dump_operator).
    pub fn dump(&self) -> Result<Vec<OperatorDump>> {
        self.metadata
            .operators
            .iter()
            .map(|op| self.dump_operator(op))
            .collect()
    }

    /// Reads and decodes one operator's state.
    ///
    /// # Errors
    ///
    /// A state file that cannot be read or is corrupt, a value that cannot be read without
    /// its Rust type (Kryo, a custom serializer): the error names the file and the state.
    pub fn dump_operator(&self, op: &OperatorState) -> Result<OperatorDump> {
        let mut dump = OperatorDump {
            uid: op.uid.clone(),
            name: op.name.clone(),
            id: op.id,
            parallelism: op.parallelism,
            max_parallelism: op.max_parallelism,
            keyed: Vec::new(),
            operator: Vec::new(),
        };
        let prefix_bytes = if op.max_parallelism <= 128 { 1 } else { 2 };
        for subtask in &op.subtasks {
            for handle in [&subtask.managed_operator, &subtask.raw_operator]
                .into_iter()
                .flatten()
            {
                let bytes = self.stream_bytes(&handle.stream)?;
                let states = read_operator_states(&bytes, handle, subtask.index)
                    .map_err(|e| in_file(&self.handle_path(&handle.stream), e))?;
                dump.operator.extend(states);
            }
            if let Some(handle) = &subtask.managed_keyed {
                let path = self.handle_path(&handle.stream);
                let bytes = self.stream_bytes(&handle.stream)?;
                dump_keyed(&bytes, handle, prefix_bytes, &mut dump.keyed)
                    .map_err(|e| in_file(&path, e))?;
            }
        }
        Ok(dump)
    }
}

fn dump_keyed(
    bytes: &[u8],
    handle: &KeyGroupsHandle,
    prefix_bytes: usize,
    out: &mut Vec<KeyedStateDump>,
) -> Result<()> {
    let header = KeyedHeader::read(&mut DataInputView::new(bytes))?;
    let raw = read_raw_entries(bytes, handle, &header)?;
    let mut positions = Vec::with_capacity(header.states.len());
    for meta in &header.states {
        let at = match out.iter().position(|s| s.name == meta.name) {
            Some(at) => at,
            None => {
                out.push(KeyedStateDump {
                    name: meta.name.clone(),
                    kind: meta.kind().to_owned(),
                    meta: meta.clone(),
                    entries: Vec::new(),
                });
                out.len() - 1
            }
        };
        positions.push(at);
    }
    for entry in &raw {
        let meta = &header.states[usize::from(entry.state)];
        let decoder = keyed::EntryDecoder {
            meta,
            key_serializer: &header.key_serializer,
            prefix_bytes,
        };
        let decoded = decoder.decode(entry).map_err(|e| {
            Error::custom(format!(
                "state `{}` ({}), key group {}: {e}",
                meta.name,
                meta.kind(),
                entry.key_group
            ))
        })?;
        out[positions[usize::from(entry.state)]]
            .entries
            .push(decoded);
    }
    Ok(())
}
