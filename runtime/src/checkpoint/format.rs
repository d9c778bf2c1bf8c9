//! The checkpoint format: the layout of a checkpoint directory (paths of parts, the
//! finished marks), operator parts, and `_metadata`; written down in `FORMAT.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use typeinfo::{DataInputView, DataOutputView};

use crate::checkpoint::storage::{join, Storage};
use crate::error::{Error, Result};
use crate::plan::StreamGraph;

/// The marker of a job that ran to its end (in the checkpoint root).
pub(crate) const FINISHED_FILE: &str = "_finished";

/// Where sinks leave their final parts (in the checkpoint root).
pub(crate) const FINAL_DIR: &str = "final";

/// Where source subtasks whose input ended leave their last part (in the checkpoint root).
pub(crate) const ENDED_DIR: &str = "ended";

/// The content of a subtask's `finished` mark.
pub(crate) const FINISHED_MARK: &[u8] = b"typeinfo operator subtask finished\n";

/// The completion marker of a checkpoint directory (written last).
pub const METADATA_FILE: &str = "_metadata";

const OSTATE_MAGIC: &[u8; 4] = b"TIOP";

const OSTATE_VERSION: u8 = 1;

/// The first line of `_metadata` as written today: version 2 ends with a checksum line.
const METADATA_HEADER: &str = "typeinfo checkpoint v2";

/// The first line of `_metadata` written before it had a checksum (still read).
const METADATA_HEADER_V1: &str = "typeinfo checkpoint v1";

/// The largest epoch a checkpoint may carry: a restored job continues at `epoch + 1`, and
/// epochs are timely timestamps that must never wrap.
pub(crate) const MAX_EPOCH: u64 = i64::MAX as u64;

/// The largest max parallelism (Flink's limit, the key-group count a state file can hold).
const MAX_MAX_PARALLELISM: u64 = 32_768;

/// The keyed state that holds an operator's timers in checkpoints (`FORMAT.md`): a value
/// state in the namespace `()` whose value is, per key, every timer of that key as
/// `(namespace, time, event time)` ([`TimerStateValue`]). A tool that writes a savepoint
/// for a job (typeinfo-savepoint's bootstrap, a migration from Flink) writes its timers
/// there under the name of the operator that owns them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerState {
    /// A window operator's timers (namespace: the window).
    Window,
    /// A `KeyedProcessFunction`'s timers (`KeyedStream::process`; namespace `()`).
    KeyedProcess,
    /// A user operator's timers (`transform`, keyed co- and broadcast process functions;
    /// namespace `()`).
    Operator,
}

impl TimerState {
    /// The state's name.
    pub const fn name(self) -> &'static str {
        match self {
            TimerState::Window => "window-timers",
            TimerState::KeyedProcess => "process-timers",
            TimerState::Operator => "operator-timers",
        }
    }
}

/// The value of a [`TimerState`] for one key: each timer's namespace, time, and whether it
/// is an event-time timer (`false`: processing time).
pub type TimerStateValue<N> = Vec<(N, i64, bool)>;

/// The directory name of an operator's state: `uid-<uid>` for an operator with a uid,
/// `node-<id>` otherwise. It is also the operator's key in [`Metadata::operators`].
pub fn operator_key(uid: Option<&str>, node: usize) -> String {
    match uid {
        Some(uid) => format!("uid-{uid}"),
        None => format!("node-{node}"),
    }
}

/// The name of checkpoint `epoch`'s directory (`chk-<epoch>`).
pub(crate) fn checkpoint_name(epoch: u64) -> String {
    format!("chk-{epoch}")
}

/// The name of subtask `subtask`'s file of kind `extension` (`subtask-<i>.<extension>`).
pub(crate) fn subtask_file(subtask: usize, extension: &str) -> String {
    format!("subtask-{subtask}.{extension}")
}

/// The message path of `rel` in `storage` (errors name the file, local or remote).
pub(crate) fn shown(storage: &Storage, rel: &str) -> PathBuf {
    PathBuf::from(storage.describe(rel))
}

/// The operator-local state of one subtask (a `.ostate` file, `FORMAT.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorPart {
    /// The operator's input watermark (`i64::MIN` for sources).
    pub watermark: i64,
    /// The operator's own bytes (a source's position, a generator's state, ...).
    pub data: Vec<u8>,
}

impl OperatorPart {
    fn encode(&self) -> Vec<u8> {
        let mut out = DataOutputView::new();
        out.write_bytes(OSTATE_MAGIC);
        out.write_u8(OSTATE_VERSION);
        out.write_i64(self.watermark);
        out.write_len_prefixed(&self.data);
        let crc = crc32fast::hash(out.as_slice());
        out.write_u32(crc);
        out.into_inner()
    }

    pub(crate) fn decode(path: &Path, bytes: &[u8]) -> Result<Self> {
        let corrupt = |what: String| Error::Damaged {
            path: path.display().to_string(),
            what,
        };
        if bytes.len() >= 4 && &bytes[..4] == OSTATE_MAGIC && bytes.len() < 4 + 1 + 8 + 1 + 4 {
            return Err(corrupt(format!("truncated ({} bytes)", bytes.len())));
        }
        if bytes.len() < 4 + 1 + 8 + 1 + 4 || &bytes[..4] != OSTATE_MAGIC {
            return Err(corrupt("not an operator state file".into()));
        }
        let Some((body, crc)) = bytes.split_last_chunk::<4>() else {
            return Err(corrupt("not an operator state file".into()));
        };
        if crc32fast::hash(body) != u32::from_le_bytes(*crc) {
            return Err(corrupt(
                "checksum mismatch (its bytes are not the ones written, or it is truncated)".into(),
            ));
        }
        let mut input = DataInputView::new(&body[4..]);
        let version = input.read_u8().map_err(|e| corrupt(e.to_string()))?;
        if version != OSTATE_VERSION {
            return Err(corrupt(format!(
                "version {version}, this build reads {OSTATE_VERSION}"
            )));
        }
        let watermark = input.read_i64().map_err(|e| corrupt(e.to_string()))?;
        let data = input
            .read_len_prefixed()
            .map_err(|e| corrupt(e.to_string()))?
            .to_vec();
        if !input.is_empty() {
            return Err(corrupt("bytes after the state".into()));
        }
        Ok(OperatorPart { watermark, data })
    }

    /// Writes the part as `<dir>/subtask-<i>.ostate` in `storage` (whole or not at all);
    /// returns the bytes written.
    pub(crate) fn write_to(&self, storage: &Storage, dir: &str, subtask: usize) -> Result<Vec<u8>> {
        let bytes = self.encode();
        storage.put(&join(dir, &subtask_file(subtask, "ostate")), &bytes)?;
        Ok(bytes)
    }

    /// Reads and checks the part at `rel` in `storage`.
    pub(crate) fn read_from(storage: &Storage, rel: &str) -> Result<Self> {
        Self::decode(&shown(storage, rel), &storage.read(rel)?)
    }

    /// Reads and checks the `.ostate` file at `path` (magic, version, checksum, length).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read, [`Error::Damaged`] for a damaged, truncated or
    /// foreign file.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::decode(path, &bytes)
    }
}

/// The part subtask `subtask` wrote in `dir` of `storage`, if it wrote one.
pub(crate) fn find_part_in(
    storage: &Storage,
    dir: &str,
    subtask: usize,
) -> Result<Option<OperatorPart>> {
    let rel = join(dir, &subtask_file(subtask, "ostate"));
    if !storage.exists(&rel)? {
        return Ok(None);
    }
    OperatorPart::read_from(storage, &rel).map(Some)
}

/// The operator-local part of subtask `subtask` in an operator's directory `dir`.
pub fn ostate_path(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(subtask_file(subtask, "ostate"))
}

/// The keyed state file of subtask `subtask` in an operator's directory `dir`.
pub fn kstate_path(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(subtask_file(subtask, "kstate"))
}

/// The incremental keyed-state part of subtask `subtask` in an operator's directory `dir`.
pub fn native_path(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(subtask_file(subtask, "native"))
}

/// The operator state file of subtask `subtask` in an operator's directory `dir`.
pub fn opstate_path(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(subtask_file(subtask, "opstate"))
}

/// The completion marker of a checkpoint or savepoint (`_metadata`, `FORMAT.md`): its
/// epoch, the job's max parallelism, and which operators it holds at what parallelism.
///
/// # Examples
///
/// ```no_run
/// use typeinfo_runtime::checkpoint::Metadata;
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let metadata = Metadata::read("savepoint".as_ref())?;
/// for (key, (parallelism, name)) in &metadata.operators {
///     println!("{key}: `{name}` at parallelism {parallelism}");
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// The checkpoint's epoch (a restored job continues at `epoch + 1`).
    pub epoch: u64,
    /// The job's max parallelism (the number of key groups).
    pub max_parallelism: u32,
    /// Operator key ([`operator_key`]: `uid-<uid>` or `node-<id>`) -> (parallelism, name).
    pub operators: BTreeMap<String, (u32, String)>,
}

impl Metadata {
    pub(crate) fn of(graph: &StreamGraph, epoch: u64) -> Self {
        let operators = graph
            .nodes()
            .iter()
            .map(|n| {
                (
                    operator_key(n.uid(), n.id()),
                    (n.parallelism(), n.name().to_owned()),
                )
            })
            .collect();
        Metadata {
            epoch,
            max_parallelism: graph.max_parallelism(),
            operators,
        }
    }

    /// The text of `_metadata`: a header, `epoch`, `max_parallelism`, one `operator` line per
    /// operator, and `crc32 <8 hex digits>` of every byte before that line.
    fn encode(&self) -> String {
        let mut s = format!(
            "{METADATA_HEADER}\nepoch {}\nmax_parallelism {}\n",
            self.epoch, self.max_parallelism
        );
        for (key, (p, name)) in &self.operators {
            // Names are free text for people; keep the file one operator a line.
            let name = name.replace(['\n', '\r'], " ");
            s.push_str(&format!("operator {key} {p} {name}\n"));
        }
        let crc = crc32fast::hash(s.as_bytes());
        s.push_str(&format!("crc32 {crc:08x}\n"));
        s
    }

    /// Writes `_metadata` into the directory `chk` (temporary name, sync, rename): the
    /// completion marker, so write it after every other file.
    ///
    /// # Errors
    ///
    /// [`Error::Damaged`] for metadata that would not read back (a number out of range, an
    /// operator key with a space or a line break), naming the file; an I/O error.
    pub fn write(&self, chk: &Path) -> Result<()> {
        self.write_to(&Storage::local(chk))
    }

    /// Writes `_metadata` into the checkpoint directory `chk`, as [`Metadata::write`].
    pub(crate) fn write_to(&self, chk: &Storage) -> Result<()> {
        let text = self.encode();
        // What could not be read back is refused before anything is written (operator
        // names are free text: their line breaks are written as spaces).
        Self::parse(&shown(chk, METADATA_FILE), &text)?;
        chk.put(METADATA_FILE, text.as_bytes())
    }

    /// Reads and checks `_metadata` in the directory `chk` (checksum, every number in its
    /// range).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read, [`Error::Damaged`] for a damaged, truncated
    /// or foreign file.
    pub fn read(chk: &Path) -> Result<Self> {
        Self::read_from(&Storage::local(chk))
    }

    /// Reads and checks `_metadata` in the checkpoint directory `chk`, as [`Metadata::read`].
    pub(crate) fn read_from(chk: &Storage) -> Result<Self> {
        let path = shown(chk, METADATA_FILE);
        let bytes = chk.read(METADATA_FILE)?;
        let text = String::from_utf8(bytes).map_err(|_| Error::Damaged {
            path: path.display().to_string(),
            what: "not text".into(),
        })?;
        Self::parse(&path, &text)
    }

    /// Parses the text of `_metadata` (from `path`, for messages); every number is checked
    /// against its range, and a version 2 file against its checksum.
    fn parse(path: &Path, text: &str) -> Result<Self> {
        let corrupt = |what: &str| Error::Damaged {
            path: path.display().to_string(),
            what: what.to_owned(),
        };
        let header = text.lines().next();
        let body = match header {
            Some(METADATA_HEADER) => {
                // The checksum line is the last line; it covers every byte before it.
                let trimmed = text
                    .strip_suffix('\n')
                    .ok_or_else(|| corrupt("truncated (no final newline)"))?;
                let at = trimmed
                    .rfind('\n')
                    .ok_or_else(|| corrupt("no checksum line"))?;
                let (body, last) = (&text[..at + 1], &trimmed[at + 1..]);
                let stored = last
                    .strip_prefix("crc32 ")
                    .filter(|hex| hex.len() == 8)
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .ok_or_else(|| corrupt("no checksum line"))?;
                if crc32fast::hash(body.as_bytes()) != stored {
                    return Err(corrupt(
                        "checksum mismatch (its bytes are not the ones written, or it is truncated)",
                    ));
                }
                body
            }
            Some(METADATA_HEADER_V1) => text,
            _ => return Err(corrupt("not a typeinfo checkpoint")),
        };
        let mut lines = body.lines().skip(1);
        let mut field = |name: &str, max: u64| -> Result<u64> {
            let value = lines
                .next()
                .and_then(|l| l.strip_prefix(name))
                .and_then(|l| l.strip_prefix(' '))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| corrupt(&format!("missing `{name}`")))?;
            if value > max {
                return Err(corrupt(&format!("`{name}` {value} is above {max}")));
            }
            Ok(value)
        };
        let epoch = field("epoch", MAX_EPOCH)?;
        let max_parallelism = u32::try_from(field("max_parallelism", MAX_MAX_PARALLELISM)?)
            .map_err(|_| corrupt("`max_parallelism` out of range"))?;
        if max_parallelism == 0 {
            return Err(corrupt("`max_parallelism` 0"));
        }
        let mut operators = BTreeMap::new();
        for line in lines {
            let mut parts = line.splitn(4, ' ');
            match (
                parts.next(),
                parts.next(),
                parts.next().and_then(|p| p.parse::<u32>().ok()),
                parts.next(),
            ) {
                (Some("operator"), Some(key), Some(p), Some(name))
                    // `encode` writes a `\r` of a name as a space: one that reads must be written back the same.
                    if (1..=max_parallelism).contains(&p) && !name.contains('\r') =>
                {
                    if operators
                        .insert(key.to_owned(), (p, name.to_owned()))
                        .is_some()
                    {
                        return Err(corrupt(&format!("operator `{key}` listed twice")));
                    }
                }
                _ => return Err(corrupt(&format!("bad line `{line}`"))),
            }
        }
        Ok(Metadata {
            epoch,
            max_parallelism,
            operators,
        })
    }
}

/// The epoch of a checkpoint directory's name (`chk-<epoch>`): the one place that parses it.
pub(crate) fn checkpoint_epoch(name: &str) -> Option<u64> {
    name.strip_prefix("chk-")
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<u64>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_parts_round_trip_and_refuse_damage() {
        let part = OperatorPart {
            watermark: -5,
            data: vec![1, 2, 3],
        };
        let bytes = part.encode();
        assert_eq!(OperatorPart::decode(Path::new("p"), &bytes).unwrap(), part);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(
                OperatorPart::decode(Path::new("p"), &bad).is_err(),
                "flipped byte {i}"
            );
        }
        for n in 0..bytes.len() {
            assert!(
                OperatorPart::decode(Path::new("p"), &bytes[..n]).is_err(),
                "truncated to {n}"
            );
        }
    }

    fn metadata() -> Metadata {
        Metadata {
            epoch: 41,
            max_parallelism: 128,
            operators: BTreeMap::from([
                ("uid-orders".to_owned(), (2, "orders source".to_owned())),
                ("node-3".to_owned(), (3, "window".to_owned())),
            ]),
        }
    }

    #[test]
    fn metadata_round_trips_and_every_damage_is_refused() {
        let m = metadata();
        let text = m.encode();
        assert!(
            text.starts_with("typeinfo checkpoint v2\nepoch 41\n"),
            "{text}"
        );
        assert_eq!(Metadata::parse(Path::new("m"), &text).unwrap(), m);
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            let mut bad = bytes.to_vec();
            bad[i] ^= 0x01;
            if let Ok(bad) = String::from_utf8(bad) {
                assert!(
                    Metadata::parse(Path::new("m"), &bad).is_err(),
                    "flipped byte {i}: {bad}"
                );
            }
        }
        for n in 0..bytes.len() {
            assert!(
                Metadata::parse(Path::new("m"), &text[..n]).is_err(),
                "truncated to {n}"
            );
        }
    }

    #[test]
    fn metadata_numbers_out_of_range_are_refused_not_truncated() {
        let with = |epoch: &str, maxp: &str, p: &str| {
            format!("typeinfo checkpoint v1\nepoch {epoch}\nmax_parallelism {maxp}\noperator node-0 {p} x\n")
        };
        let parse = |t: &str| Metadata::parse(Path::new("m"), t);
        assert!(
            parse(&with("7", "128", "2")).is_ok(),
            "a version 1 file still reads"
        );
        // 2^32 + 128 would truncate to 128 with `as u32`.
        assert!(parse(&with("7", "4294967424", "2")).is_err());
        assert!(parse(&with("7", "0", "1")).is_err());
        assert!(parse(&with("7", "32769", "2")).is_err());
        // `epoch + 1` must not overflow when the job continues after it.
        assert!(parse(&with(&u64::MAX.to_string(), "128", "2")).is_err());
        assert!(parse(&with(&MAX_EPOCH.to_string(), "128", "2")).is_ok());
        // An operator's parallelism is within 1..=max_parallelism (it sizes loops over parts).
        assert!(parse(&with("7", "128", "0")).is_err());
        assert!(parse(&with("7", "128", "129")).is_err());
        assert!(parse(&with("7", "128", "4294967295")).is_err());
        assert!(parse(&with("-1", "128", "2")).is_err());
    }

    #[test]
    fn the_metadata_example_of_format_md_reads() {
        let format =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/FORMAT.md")).unwrap();
        let start = format.find("typeinfo checkpoint v2\n").unwrap();
        let end = start + format[start..].find("```").unwrap();
        let m = Metadata::parse(Path::new("FORMAT.md"), &format[start..end]).unwrap();
        assert_eq!(m.epoch, 12);
        assert_eq!(m.operators.len(), 2);
        assert_eq!(m.encode(), format[start..end]);
    }
}
