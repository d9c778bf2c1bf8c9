//! Writing savepoints: always a new directory, never the input (Flink's `SavepointWriter`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use typeinfo_runtime::checkpoint::{self, Metadata};
use typeinfo_state::savepoint::{rewrite_max_parallelism, write_atomically};
use typeinfo_state::StateKey;

use crate::bootstrap::{BootstrappedOperator, KeyedStateBootstrap, OperatorStateBootstrap};
use crate::error::{Error, Result};
use crate::savepoint::{Operator, Savepoint};
use crate::verify::{verify_operator, Verification};

/// The largest max parallelism (the key-group count a state file can hold).
const MAX_MAX_PARALLELISM: u32 = 32_768;

/// What becomes of one operator in the written savepoint.
enum Planned {
    /// An operator of the source savepoint, as it is there.
    Existing(Operator),
    /// Keyed state bootstrapped from data.
    Bootstrapped(Box<dyn BootstrappedOperator>),
}

/// Writes a new savepoint: from an existing one with operators removed, renamed, or
/// bootstrapped, or with another max parallelism; or from nothing but bootstrapped
/// operators. The input is only read. [`write`](Self::write) builds the savepoint in a
/// temporary directory beside the output (each file written and synced, `_metadata`
/// last) and renames it into place, so the output either does not exist or is whole.
///
/// # Examples
///
/// ```no_run
/// use typeinfo_savepoint::{Savepoint, SavepointWriter};
///
/// # fn main() -> typeinfo_savepoint::Result<()> {
/// let savepoint = Savepoint::open("savepoint".as_ref())?;
/// SavepointWriter::from_savepoint(savepoint)
///     .rename_uid("minute-totals", "minute-totals-v2")?
///     .remove_operator("output")?
///     .write("savepoint-v2".as_ref())?;
/// # Ok(())
/// # }
/// ```
pub struct SavepointWriter {
    source: Option<Savepoint>,
    epoch: u64,
    max_parallelism: u32,
    /// New operator key -> what it is.
    operators: BTreeMap<String, Planned>,
}

impl std::fmt::Debug for SavepointWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ops: Vec<&String> = self.operators.keys().collect();
        f.debug_struct("SavepointWriter")
            .field("source", &self.source.as_ref().map(Savepoint::dir))
            .field("epoch", &self.epoch)
            .field("max_parallelism", &self.max_parallelism)
            .field("operators", &ops)
            .finish()
    }
}

impl SavepointWriter {
    /// A savepoint with no operators yet (epoch 0: a job restored from it continues at
    /// epoch 1) for a job of `max_parallelism` key groups.
    ///
    /// # Errors
    ///
    /// [`Error::Refused`] for a max parallelism outside `1..=32768`.
    pub fn new(max_parallelism: u32) -> Result<Self> {
        check_max_parallelism(max_parallelism)?;
        Ok(Self {
            source: None,
            epoch: 0,
            max_parallelism,
            operators: BTreeMap::new(),
        })
    }

    /// A savepoint with every operator of `savepoint`, its epoch and max parallelism.
    pub fn from_savepoint(savepoint: Savepoint) -> Self {
        let operators = savepoint
            .operators()
            .map(|op| (op.key.clone(), Planned::Existing(op)))
            .collect();
        let metadata = savepoint.metadata();
        Self {
            epoch: metadata.epoch,
            max_parallelism: metadata.max_parallelism,
            source: Some(savepoint),
            operators,
        }
    }

    /// The key of the planned operator `id` names (a uid, or a key such as `node-3`).
    fn resolve(&self, id: &str) -> Result<String> {
        let by_uid = checkpoint::operator_key(Some(id), 0);
        let found = [by_uid.as_str(), id]
            .into_iter()
            .find(|k| self.operators.contains_key(*k))
            .map(str::to_owned)
            .ok_or_else(|| {
                let known: Vec<&str> = self.operators.keys().map(String::as_str).collect();
                Error::NotFound(format!(
                    "no operator `{id}` (there are: {})",
                    known.join(", ")
                ))
            });
        found
    }

    /// Leaves out operator `id` (a uid or a key) and all its state. A job restored from
    /// the result that still has the operator starts it without state; one without it
    /// needs no `allow_non_restored_state`.
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] for an operator the savepoint does not have.
    pub fn remove_operator(&mut self, id: &str) -> Result<&mut Self> {
        let key = self.resolve(id)?;
        self.operators.remove(&key);
        Ok(self)
    }

    /// Gives operator `id` (a uid, or a key such as `node-3` for an operator without one)
    /// the uid `new_uid`: its state is restored by the operator with that uid.
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] for an unknown operator; [`Error::Refused`] for a uid that is
    /// not a plain name (empty, with whitespace, a path separator or a control
    /// character) or that another operator has.
    pub fn rename_uid(&mut self, id: &str, new_uid: &str) -> Result<&mut Self> {
        let key = self.resolve(id)?;
        let new_key = checkpoint::operator_key(Some(check_uid(new_uid)?), 0);
        if new_key == key {
            return Ok(self);
        }
        if self.operators.contains_key(&new_key) {
            return Err(Error::Refused(format!(
                "another operator already has the uid `{new_uid}`: remove it first"
            )));
        }
        if let Some(planned) = self.operators.remove(&key) {
            self.operators.insert(new_key, planned);
        }
        Ok(self)
    }

    /// Writes the keyed state of every operator under `max_parallelism` key groups: each
    /// key's key group is computed again from its stored bytes. Possible when every
    /// operator's parallelism is at most `max_parallelism` and every key and value can be
    /// read without its Rust type (checked by [`write`](Self::write), which refuses
    /// otherwise). A job restored from the result must set this max parallelism.
    ///
    /// # Errors
    ///
    /// [`Error::Refused`] for a max parallelism outside `1..=32768`.
    pub fn set_max_parallelism(&mut self, max_parallelism: u32) -> Result<&mut Self> {
        check_max_parallelism(max_parallelism)?;
        self.max_parallelism = max_parallelism;
        Ok(self)
    }

    /// Adds an operator with uid `uid` whose keyed state is `state`.
    ///
    /// # Errors
    ///
    /// [`Error::Refused`] for a uid that is not a plain name or that an operator has
    /// already (remove it first to replace its state).
    pub fn with_keyed_state<K: StateKey + 'static>(
        &mut self,
        uid: &str,
        state: KeyedStateBootstrap<K>,
    ) -> Result<&mut Self> {
        self.bootstrapped(uid, Box::new(state))
    }

    /// Adds an operator with uid `uid` that has operator state `state` and no keyed state.
    ///
    /// # Errors
    ///
    /// As [`with_keyed_state`](Self::with_keyed_state).
    pub fn with_operator_state(
        &mut self,
        uid: &str,
        state: OperatorStateBootstrap,
    ) -> Result<&mut Self> {
        self.bootstrapped(uid, Box::new(state))
    }

    fn bootstrapped(
        &mut self,
        uid: &str,
        state: Box<dyn BootstrappedOperator>,
    ) -> Result<&mut Self> {
        let key = checkpoint::operator_key(Some(check_uid(uid)?), 0);
        if self.operators.contains_key(&key) {
            return Err(Error::Refused(format!(
                "the savepoint already has an operator with uid `{uid}`: remove it first"
            )));
        }
        self.operators.insert(key, Planned::Bootstrapped(state));
        Ok(self)
    }

    /// Writes the savepoint into the new directory `out` and opens it.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] when a file of an operator it keeps is damaged (every file is
    /// read and checked first, as [`verify`](crate::verify) does);
    /// [`Error::Refused`] when `out` exists or lies inside the source savepoint, when an
    /// operator's parallelism is above the max parallelism, when a bootstrapped operator
    /// was built for another max parallelism, or when the key groups cannot be computed
    /// again for a new max parallelism; a corrupt source file; an I/O error. On any error
    /// nothing is left at `out`.
    pub fn write(&mut self, out: &Path) -> Result<Savepoint> {
        self.check(out)?;
        self.check_source()?;
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        let name = out
            .file_name()
            .ok_or_else(|| Error::Refused(format!("`{}` names no directory", out.display())))?;
        fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
        let tmp = parent.join(format!(
            ".{}.tmp-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        if tmp.exists() {
            fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        }
        let result = self.write_into(&tmp).and_then(|()| {
            fs::rename(&tmp, out).map_err(|e| Error::io(out, e))?;
            sync_dir(&parent);
            Ok(())
        });
        if let Err(e) = result {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
        Savepoint::open(out).map(|s| match &self.source {
            Some(source) => s.with_registry(source.registry().clone()),
            None => s,
        })
    }

    /// Everything that can be checked before writing.
    fn check(&self, out: &Path) -> Result<()> {
        if out.exists() {
            return Err(Error::Refused(format!(
                "`{}` exists: a savepoint is written into a new directory (the input is never modified)",
                out.display()
            )));
        }
        if let Some(source) = &self.source {
            // The nearest existing directory above `out`: the directories between it and
            // `out` would be created, inside the input if it is there.
            let existing = out
                .ancestors()
                .skip(1)
                .map(|a| {
                    if a.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        a
                    }
                })
                .find(|a| a.exists())
                .unwrap_or(Path::new("."));
            let inside = existing
                .canonicalize()
                .ok()
                .zip(source.dir().canonicalize().ok())
                .is_some_and(|(parent, src)| parent.starts_with(src));
            if inside {
                return Err(Error::Refused(format!(
                    "`{}` is inside the input savepoint {}: write it elsewhere (the input is never modified)",
                    out.display(),
                    source.dir().display()
                )));
            }
        }
        for (key, planned) in &self.operators {
            let parallelism = match planned {
                Planned::Existing(op) => op.parallelism,
                Planned::Bootstrapped(b) => {
                    match b.max_parallelism() {
                        Some(m) if m != self.max_parallelism => {
                            return Err(Error::Refused(format!(
                                "operator `{key}` was bootstrapped for max parallelism {m}, the savepoint has {}",
                                self.max_parallelism
                            )));
                        }
                        _ => {}
                    }
                    b.parallelism()
                }
            };
            if parallelism > self.max_parallelism {
                return Err(Error::Refused(format!(
                    "operator `{key}` runs at parallelism {parallelism}, above max parallelism {}: \
                     a subtask would own no key group",
                    self.max_parallelism
                )));
            }
        }
        Ok(())
    }

    /// Reads and checks every file of the source's operators that are kept, as
    /// [`verify`](crate::verify) does: a damaged file is refused, not copied.
    fn check_source(&self) -> Result<()> {
        let Some(source) = &self.source else {
            return Ok(());
        };
        let mut report = Verification::default();
        for planned in self.operators.values() {
            if let Planned::Existing(op) = planned {
                let dir = source.operator_dir(op);
                if dir.is_dir() {
                    verify_operator(source, op, &dir, &mut report)?;
                }
            }
        }
        if report.is_ok() {
            Ok(())
        } else {
            Err(Error::Corrupt(format!(
                "{} is damaged, nothing was written: {}",
                source.dir().display(),
                report.problems.join("; ")
            )))
        }
    }

    /// Writes every operator's files, then `_metadata`, into the new directory `dir`.
    fn write_into(&mut self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut operators = BTreeMap::new();
        for (key, planned) in &mut self.operators {
            let op_dir = dir.join(key);
            fs::create_dir_all(&op_dir).map_err(|e| Error::io(&op_dir, e))?;
            match planned {
                Planned::Existing(op) => {
                    let source = self.source.as_ref().ok_or_else(|| {
                        Error::Refused("an existing operator without a source".into())
                    })?;
                    copy_operator(source, op, &op_dir, self.max_parallelism)?;
                    operators.insert(key.clone(), (op.parallelism, op.name.clone()));
                }
                Planned::Bootstrapped(b) => {
                    b.write(&op_dir)?;
                    operators.insert(key.clone(), (b.parallelism(), b.name().to_owned()));
                }
            }
            sync_dir(&op_dir);
        }
        Metadata {
            epoch: self.epoch,
            max_parallelism: self.max_parallelism,
            operators,
        }
        .write(dir)?;
        Ok(())
    }
}

/// Copies the files of `op`'s subtasks from `source` into `dir`; under another max
/// parallelism, its keyed state is filed under the new key groups instead.
fn copy_operator(
    source: &Savepoint,
    op: &Operator,
    dir: &Path,
    max_parallelism: u32,
) -> Result<()> {
    let rescale = max_parallelism != source.metadata().max_parallelism;
    let src = source.operator_dir(op);
    for subtask in 0..op.parallelism as usize {
        for path in [
            checkpoint::ostate_path,
            checkpoint::kstate_path,
            checkpoint::opstate_path,
        ] {
            let from = path(&src, subtask);
            if !from.is_file() || (rescale && from == checkpoint::kstate_path(&src, subtask)) {
                continue;
            }
            let bytes = fs::read(&from).map_err(|e| Error::io(&from, e))?;
            write_atomically(&path(dir, subtask), &bytes)?;
        }
    }
    if rescale {
        let files = source.open_keyed(op)?;
        if !files.is_empty() {
            let paths: Vec<&Path> = files.iter().map(|(_, f)| f.path()).collect();
            rewrite_max_parallelism(
                &paths,
                max_parallelism,
                op.parallelism,
                source.registry(),
                |subtask| checkpoint::kstate_path(dir, subtask as usize),
            )
            .map_err(|e| match Error::from(e) {
                e @ (Error::Corrupt(_) | Error::Io { .. }) => e,
                e => Error::Refused(format!(
                    "cannot file the keyed state of operator `{}` under max parallelism {max_parallelism}: {e}",
                    op.key
                )),
            })?;
        }
    }
    Ok(())
}

fn check_max_parallelism(max_parallelism: u32) -> Result<()> {
    if (1..=MAX_MAX_PARALLELISM).contains(&max_parallelism) {
        Ok(())
    } else {
        Err(Error::Refused(format!(
            "max parallelism {max_parallelism} is outside 1..={MAX_MAX_PARALLELISM}"
        )))
    }
}

/// A uid that can name a directory and a line of `_metadata`.
fn check_uid(uid: &str) -> Result<&str> {
    let plain = !uid.is_empty()
        && uid != "."
        && uid != ".."
        && !uid
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '/' || c == '\\');
    if plain {
        Ok(uid)
    } else {
        Err(Error::Refused(format!(
            "`{uid}` is not a usable uid: it names a directory and a line of `_metadata`, so it must be non-empty, \
             without whitespace, path separators or control characters"
        )))
    }
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}
