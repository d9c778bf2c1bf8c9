//! `inspect`: what a savepoint holds, operator by operator.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::path::PathBuf;

use typeinfo_runtime::checkpoint::OperatorPart;
use typeinfo_state::savepoint::SnapshotFile;
use typeinfo_state::{KeyGroupRange, OperatorStateFile, OperatorStateKind, StateKind};

use crate::error::Result;
use crate::render::{collect_definitions, type_of};
use crate::savepoint::{Operator, Savepoint};

/// What a savepoint holds: its operators with their keyed states, operator states and
/// parts, and the definitions of the types they use.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Inspection {
    /// The savepoint's directory.
    pub dir: PathBuf,
    /// Its epoch.
    pub epoch: u64,
    /// The job's max parallelism.
    pub max_parallelism: u32,
    /// Its operators, by key.
    pub operators: Vec<OperatorInspection>,
    /// The definition of every struct and enum a state uses, by name
    /// (`demo.Order { user: String, amount_cents: i32, ts: i64 }`).
    pub types: BTreeMap<String, String>,
}

/// One operator of an [`Inspection`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OperatorInspection {
    /// The operator as `_metadata` lists it.
    pub operator: Operator,
    /// Its keyed state, if it has any.
    pub keyed: Option<KeyedInspection>,
    /// Its operator states (list and broadcast), per subtask file.
    pub operator_states: Vec<OperatorStateInspection>,
    /// Its operator-local parts (`.ostate`): subtask, bytes, watermark.
    pub parts: Vec<(u32, u64, i64)>,
}

/// The keyed state of one operator.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct KeyedInspection {
    /// Its files: subtask, bytes, key groups.
    pub files: Vec<(u32, u64, KeyGroupRange)>,
    /// The key's type.
    pub key_type: String,
    /// Its states, in the order of the first file's header.
    pub states: Vec<StateInspection>,
}

/// One keyed state.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StateInspection {
    /// The state's name.
    pub name: String,
    /// Its kind.
    pub kind: StateKind,
    /// Whether its values carry a TTL timestamp.
    pub ttl: bool,
    /// The namespace's type (`()`, or a window).
    pub namespace_type: String,
    /// The value's type (list: the element's; map: the user key's and the user value's).
    pub value_types: Vec<String>,
    /// Its entries (a list counts one per key and namespace, a map one per map entry).
    pub entries: u64,
    /// The bytes of its entries.
    pub bytes: u64,
    /// Entries and bytes per key group that holds any.
    pub key_groups: BTreeMap<u16, (u64, u64)>,
}

/// One operator state of one subtask's file.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OperatorStateInspection {
    /// The subtask whose file holds it.
    pub subtask: u32,
    /// The state's name.
    pub name: String,
    /// Its kind.
    pub kind: OperatorStateKind,
    /// Its item types (list: the element's; broadcast: the key's and the value's).
    pub types: Vec<String>,
    /// How many items it holds.
    pub items: u64,
    /// The bytes of its items.
    pub bytes: usize,
}

/// Reads everything `inspect` shows: every operator's files, every keyed entry (for the
/// sizes per state and key group; each entry is read, so a damaged one is refused here
/// too).
///
/// # Errors
///
/// A corrupt, truncated or foreign file, naming it; an I/O error.
///
/// # Examples
///
/// ```no_run
/// use typeinfo_savepoint::{inspect, Savepoint};
///
/// # fn main() -> typeinfo_savepoint::Result<()> {
/// let report = inspect(&Savepoint::open("savepoint".as_ref())?)?;
/// print!("{report}");
/// # Ok(())
/// # }
/// ```
pub fn inspect(savepoint: &Savepoint) -> Result<Inspection> {
    let mut types = BTreeMap::new();
    let mut operators = Vec::new();
    for operator in savepoint.operators() {
        let files = savepoint.open_keyed(&operator)?;
        let keyed = if files.is_empty() {
            None
        } else {
            Some(inspect_keyed(savepoint, &files, &mut types)?)
        };
        let mut operator_states = Vec::new();
        for (subtask, path) in savepoint.operator_state_files(&operator) {
            let file = OperatorStateFile::open(&path)?;
            for state in file.states() {
                state
                    .serializers
                    .iter()
                    .for_each(|s| collect_definitions(s, &mut types));
                operator_states.push(OperatorStateInspection {
                    subtask,
                    name: state.name.clone(),
                    kind: state.kind,
                    types: state.serializers.iter().map(type_of).collect(),
                    items: state.items,
                    bytes: state.data_len(),
                });
            }
        }
        let mut parts = Vec::new();
        for (subtask, path) in savepoint.part_files(&operator) {
            let part = OperatorPart::read(&path)?;
            parts.push((subtask, file_len(&path)?, part.watermark));
        }
        operators.push(OperatorInspection {
            operator,
            keyed,
            operator_states,
            parts,
        });
    }
    let metadata = savepoint.metadata();
    Ok(Inspection {
        dir: savepoint.dir().to_owned(),
        epoch: metadata.epoch,
        max_parallelism: metadata.max_parallelism,
        operators,
        types,
    })
}

fn file_len(path: &std::path::Path) -> Result<u64> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| crate::Error::io(path, e))
}

fn inspect_keyed(
    savepoint: &Savepoint,
    files: &[(u32, SnapshotFile)],
    types: &mut BTreeMap<String, String>,
) -> Result<KeyedInspection> {
    let mut states: Vec<StateInspection> = Vec::new();
    let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
    let mut out_files = Vec::new();
    for (subtask, file) in files {
        let header = file.header();
        collect_definitions(&header.key, types);
        // States by name: every file of an operator normally has the same ones.
        let mut index = Vec::with_capacity(header.states.len());
        for meta in &header.states {
            collect_definitions(&meta.namespace, types);
            meta.values
                .iter()
                .for_each(|v| collect_definitions(v, types));
            let at = *by_name.entry(meta.name.clone()).or_insert_with(|| {
                states.push(StateInspection {
                    name: meta.name.clone(),
                    kind: meta.kind,
                    ttl: meta.ttl,
                    namespace_type: type_of(&meta.namespace),
                    value_types: meta.values.iter().map(type_of).collect(),
                    entries: 0,
                    bytes: 0,
                    key_groups: BTreeMap::new(),
                });
                states.len() - 1
            });
            index.push(at);
        }
        file.read_entries(savepoint.registry(), |entry| {
            let state = &mut states[index[entry.state]];
            let bytes = entry.len() as u64;
            state.entries += 1;
            state.bytes += bytes;
            let kg = state.key_groups.entry(entry.key_group).or_default();
            kg.0 += 1;
            kg.1 += bytes;
            Ok(())
        })?;
        out_files.push((*subtask, file.len(), header.range));
    }
    let key_type = files
        .first()
        .map(|(_, f)| type_of(&f.header().key))
        .unwrap_or_default();
    Ok(KeyedInspection {
        files: out_files,
        key_type,
        states,
    })
}

impl Inspection {
    /// The report as text; with `key_groups`, every key group's entries and bytes per state.
    pub fn render(&self, key_groups: bool) -> String {
        let mut s = String::new();
        let _ = self.write(&mut s, key_groups);
        s
    }

    fn write(&self, s: &mut String, key_groups: bool) -> fmt::Result {
        writeln!(
            s,
            "savepoint {}: epoch {}, max parallelism {}, {}",
            self.dir.display(),
            self.epoch,
            self.max_parallelism,
            plural(self.operators.len(), "operator")
        )?;
        for op in &self.operators {
            let o = &op.operator;
            writeln!(
                s,
                "{}  \"{}\"  parallelism {}",
                o.key, o.name, o.parallelism
            )?;
            if let Some(keyed) = &op.keyed {
                let bytes: u64 = keyed.files.iter().map(|f| f.1).sum();
                writeln!(
                    s,
                    "  keyed state: key {}, {}, {bytes} bytes",
                    keyed.key_type,
                    plural(keyed.files.len(), "file")
                )?;
                for (subtask, bytes, range) in &keyed.files {
                    writeln!(
                        s,
                        "    subtask {subtask}: key groups {}..={}, {bytes} bytes",
                        range.start(),
                        range.end()
                    )?;
                }
                for st in &keyed.states {
                    write_state(s, st, key_groups)?;
                }
            }
            for st in &op.operator_states {
                writeln!(
                    s,
                    "  operator state {} ({}) of subtask {}: {}, {} items, {} bytes",
                    st.name,
                    st.kind,
                    st.subtask,
                    st.types.join(" -> "),
                    st.items,
                    st.bytes
                )?;
            }
            if !op.parts.is_empty() {
                let bytes: u64 = op.parts.iter().map(|p| p.1).sum();
                let watermark = op.parts.iter().map(|p| p.2).min().unwrap_or(i64::MIN);
                write!(
                    s,
                    "  operator parts: {}, {bytes} bytes",
                    plural(op.parts.len(), "file")
                )?;
                if watermark > i64::MIN {
                    write!(s, ", watermark {watermark}")?;
                }
                writeln!(s)?;
            }
        }
        if !self.types.is_empty() {
            writeln!(s, "types")?;
            for def in self.types.values() {
                writeln!(s, "  {def}")?;
            }
        }
        Ok(())
    }
}

fn write_state(s: &mut String, st: &StateInspection, key_groups: bool) -> fmt::Result {
    let values = match st.kind {
        StateKind::List => format!("element {}", st.value_types.join(", ")),
        StateKind::Map => format!("map {}", st.value_types.join(" -> ")),
        _ => format!("value {}", st.value_types.join(", ")),
    };
    writeln!(
        s,
        "    {} ({}{}): namespace {}, {values}",
        st.name,
        st.kind,
        if st.ttl { ", TTL" } else { "" },
        st.namespace_type,
    )?;
    write!(
        s,
        "      {}, {} bytes, in {}",
        plural(st.entries as usize, "entry"),
        st.bytes,
        plural(st.key_groups.len(), "key group")
    )?;
    if let Some((kg, (_, bytes))) = st
        .key_groups
        .iter()
        .max_by_key(|(kg, (_, b))| (*b, u16::MAX - **kg))
    {
        write!(s, " (largest: key group {kg}, {bytes} bytes)")?;
    }
    writeln!(s)?;
    if key_groups {
        for (kg, (entries, bytes)) in &st.key_groups {
            writeln!(
                s,
                "        key group {kg}: {entries} entries, {bytes} bytes"
            )?;
        }
    }
    Ok(())
}

/// `1 file`, `2 files`, `3 entries`.
fn plural(n: usize, one: &str) -> String {
    match (n, one.strip_suffix('y')) {
        (1, _) => format!("1 {one}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {one}s"),
    }
}

impl fmt::Display for Inspection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(false))
    }
}
