//! Entry points for the fuzz suite (the `fuzz/` crate): thin wrappers over the decoders of
//! bytes that come from outside the process (batches from peers, operator parts and
//! `_metadata` of checkpoints). They add no logic of their own. Not a public API.

use std::path::{Path, PathBuf};

use timely::dataflow::channels::ContainerBytes;

use crate::checkpoint;
use crate::checkpoint::format::{Metadata, OperatorPart};
use crate::checkpoint::restore::Restore;
use crate::error::Result;
use crate::operator::element::{Batch, Msg};
use crate::types::Data;

/// One element of a batch: a record (its event timestamp is `i64::MIN` when it has none),
/// a watermark, or an idle marker.
#[derive(Debug, Clone, PartialEq)]
pub enum Element<T> {
    /// A record.
    Record {
        /// Its event timestamp.
        ts: i64,
        /// The record.
        value: T,
    },
    /// A watermark of a sending subtask.
    Watermark {
        /// The sender.
        from: u32,
        /// The watermark.
        watermark: i64,
    },
    /// A sending subtask went idle.
    Idle {
        /// The sender.
        from: u32,
    },
}

fn serializer<T: Data>() -> std::sync::Arc<T::Serializer> {
    #[allow(clippy::expect_used)] // the fuzz suite's types all have default serializers
    std::sync::Arc::new(
        T::create_serializer(&typeinfo::SerializerConfig::default())
            .expect("a serializer with the default config"),
    )
}

/// The bytes timely sends to another process for a batch of `elements` (length word, body,
/// padding).
pub fn batch_to_wire<T: Data>(elements: Vec<Element<T>>) -> Vec<u8> {
    let msgs = elements
        .into_iter()
        .map(|e| match e {
            Element::Record { ts, value } => Msg::Record {
                ts,
                value,
                key_group: None,
            },
            Element::Watermark { from, watermark } => Msg::Watermark { from, watermark },
            Element::Idle { from } => Msg::Idle { from },
        })
        .collect();
    let mut bytes = Vec::new();
    Batch::with_serializer(msgs, serializer::<T>()).into_bytes(&mut bytes);
    bytes
}

/// Decodes bytes received from another process as timely hands them to a batch: the
/// elements, or the error message and record count the receiving operator fails with.
///
/// # Errors
///
/// The bytes are not a batch of `T`.
pub fn batch_from_wire<T: Data>(
    bytes: &[u8],
) -> std::result::Result<Vec<Element<T>>, (String, i64)> {
    let mut batch = <Batch<T> as ContainerBytes>::from_bytes(
        timely::bytes::arc::BytesMut::from(bytes.to_vec()).freeze(),
    );
    // What the receiving operator does with the bytes (with its input serializer).
    let count = timely::container::Accountable::record_count(&batch);
    if let Err(message) = batch.decode_received(&serializer::<T>()) {
        return Err((message, count));
    }
    Ok(batch
        .msgs
        .into_iter()
        .map(|m| match m {
            Msg::Record { ts, value, .. } => Element::Record { ts, value },
            Msg::Watermark { from, watermark } => Element::Watermark { from, watermark },
            Msg::Idle { from } => Element::Idle { from },
        })
        .collect())
}

/// Writes the operator part of `subtask` into the operator directory `dir`; returns its path.
///
/// # Errors
///
/// An I/O error.
pub fn write_operator_part(
    dir: &Path,
    subtask: usize,
    watermark: i64,
    data: Vec<u8>,
) -> Result<PathBuf> {
    OperatorPart { watermark, data }.write_to(
        &crate::checkpoint::storage::Storage::local(dir),
        "",
        subtask,
    )?;
    Ok(checkpoint::ostate_path(dir, subtask))
}

/// Reads an operator part file: its watermark and the operator's bytes.
///
/// # Errors
///
/// An I/O error; a corrupt file.
pub fn read_operator_part(path: &Path) -> Result<(i64, Vec<u8>)> {
    let part = OperatorPart::read(path)?;
    Ok((part.watermark, part.data))
}

/// An operator in `_metadata`: its key (`uid-...` or `node-...`), parallelism and name.
pub type MetadataOperator = (String, u32, String);

/// Writes the `_metadata` of a checkpoint directory `chk`.
///
/// # Errors
///
/// An I/O error.
pub fn write_metadata(
    chk: &Path,
    epoch: u64,
    max_parallelism: u32,
    operators: &[MetadataOperator],
) -> Result<()> {
    let operators = operators
        .iter()
        .map(|(key, p, name)| (key.clone(), (*p, name.clone())))
        .collect();
    Metadata {
        epoch,
        max_parallelism,
        operators,
    }
    .write(chk)
}

/// Reads the `_metadata` of `chk`: epoch, max parallelism and operators.
///
/// # Errors
///
/// An I/O error; a corrupt file.
pub fn read_metadata(chk: &Path) -> Result<(u64, u32, Vec<MetadataOperator>)> {
    let m = Metadata::read(chk)?;
    Ok((
        m.epoch,
        m.max_parallelism,
        m.operators
            .into_iter()
            .map(|(key, (p, name))| (key, p, name))
            .collect(),
    ))
}

/// What a restore from `path` (a checkpoint root, one checkpoint or a savepoint) reads
/// before any state: `_metadata`, then, for every operator it names, the operator parts
/// (watermark and bytes) and the paths of the keyed state files.
///
/// # Errors
///
/// As a job's restore: a missing or corrupt `_metadata` or operator part.
#[allow(clippy::type_complexity)]
pub fn restore_inputs(path: &Path) -> Result<Vec<(String, Vec<(i64, Vec<u8>)>, Vec<PathBuf>)>> {
    let (dir, metadata) = checkpoint::locate(path)?;
    let restore = Restore {
        dir: crate::checkpoint::storage::Storage::local(dir),
        metadata,
    };
    let mut out = Vec::new();
    for key in restore.metadata.operators.keys() {
        let parts = restore
            .parts(key)?
            .into_iter()
            .map(|p| (p.watermark, p.data))
            .collect();
        let files = restore
            .fetch(key)?
            .keyed
            .into_iter()
            .map(|f| match f {
                crate::checkpoint::native_part::KeyedFile::Full(path)
                | crate::checkpoint::native_part::KeyedFile::Native { part: path, .. } => path,
            })
            .collect();
        out.push((key.clone(), parts, files));
    }
    Ok(out)
}

/// Decodes an incremental keyed-state part (`.native`) as a restore does.
///
/// # Errors
///
/// [`crate::error::Error::Damaged`] for bytes that are not a whole part.
pub fn read_native_part(bytes: &[u8]) -> Result<crate::checkpoint::native_part::NativePart> {
    crate::checkpoint::native_part::NativePart::decode(Path::new("input.native"), bytes)
}

/// The bytes of an incremental keyed-state part.
pub fn native_part_bytes(part: &crate::checkpoint::native_part::NativePart) -> Vec<u8> {
    part.encode()
}

/// A part of private files `(name, bytes)` and shared ones `(name, object, size, crc)`.
#[allow(clippy::type_complexity)]
pub fn native_part(
    private: Vec<(String, Vec<u8>)>,
    shared: Vec<(String, String, u64, u32)>,
    uploaded_bytes: u64,
) -> crate::checkpoint::native_part::NativePart {
    crate::checkpoint::native_part::NativePart::of(
        private,
        shared
            .into_iter()
            .map(|(name, object, bytes, crc)| {
                (
                    name,
                    crate::checkpoint::native_part::SharedObject { object, bytes, crc },
                )
            })
            .collect(),
        uploaded_bytes,
    )
}
