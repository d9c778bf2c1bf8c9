//! `verify`: every file's checksum and every entry readable.

use std::fmt;
use std::path::{Path, PathBuf};

use typeinfo_runtime::checkpoint::{self, OperatorPart};
use typeinfo_state::savepoint::SnapshotFile;
use typeinfo_state::{KeyGroupRange, OperatorStateFile};

use crate::error::{Error, Result};
use crate::savepoint::{Operator, Savepoint};

/// What [`verify`] found: how much it read, and every problem.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Verification {
    /// The savepoint's directory.
    pub dir: PathBuf,
    /// Files read and checked (`_metadata` included).
    pub files: u64,
    /// Keyed entries read.
    pub entries: u64,
    /// Operator state items read.
    pub items: u64,
    /// Every problem, one per file (or unexpected entry of the directory), naming it.
    pub problems: Vec<String>,
}

impl Verification {
    /// Whether every file is sound.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl fmt::Display for Verification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.problems {
            writeln!(f, "error: {p}")?;
        }
        if self.is_ok() {
            writeln!(
                f,
                "ok: {} files, {} keyed entries, {} operator state items in {}",
                self.files,
                self.entries,
                self.items,
                self.dir.display()
            )
        } else {
            writeln!(
                f,
                "{} problems in {} ({} files read)",
                self.problems.len(),
                self.dir.display(),
                self.files
            )
        }
    }
}

/// Reads every file of `savepoint` and checks it: each `.ostate`, `.kstate` and `.opstate`
/// by its checksum and layout, each keyed entry and operator state item read in full
/// without its Rust type, each key in the key group of its block, each keyed file written
/// for the savepoint's max parallelism and for its subtask's key groups; and that the
/// directory holds nothing else (no operator `_metadata` does not list, no left-over
/// temporary file). Every problem is reported, not only the first.
///
/// # Errors
///
/// Only when the directory itself cannot be listed; damaged files are
/// [`problems`](Verification::problems).
///
/// # Examples
///
/// ```no_run
/// use typeinfo_savepoint::{verify, Savepoint};
///
/// # fn main() -> typeinfo_savepoint::Result<()> {
/// let report = verify(&Savepoint::open("savepoint".as_ref())?)?;
/// print!("{report}");
/// assert!(report.is_ok());
/// # Ok(())
/// # }
/// ```
pub fn verify(savepoint: &Savepoint) -> Result<Verification> {
    let dir = savepoint.dir();
    let mut report = Verification {
        dir: dir.to_owned(),
        files: 1, // `_metadata`, checked when the savepoint was opened
        ..Verification::default()
    };
    let operators: Vec<Operator> = savepoint.operators().collect();
    for name in list(dir)? {
        let path = dir.join(&name);
        if name == checkpoint::METADATA_FILE {
            continue;
        }
        match operators.iter().find(|o| o.key == name) {
            Some(op) if path.is_dir() => verify_operator(savepoint, op, &path, &mut report)?,
            _ => report.problems.push(format!(
                "{}: unexpected {}: not an operator `_metadata` lists",
                path.display(),
                kind_of(&path)
            )),
        }
    }
    Ok(report)
}

fn kind_of(path: &Path) -> &'static str {
    if path.is_dir() {
        "directory"
    } else {
        "file"
    }
}

/// The names in a directory, sorted.
fn list(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// The subtask and extension of a file name `subtask-<i>.<ext>`.
fn subtask_file(name: &str) -> Option<(u32, &str)> {
    let (stem, ext) = name.strip_prefix("subtask-")?.split_once('.')?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stem.parse().ok()?, ext))
}

/// Checks every file in `op`'s directory `dir`, adding what is wrong to `report`.
pub(crate) fn verify_operator(
    savepoint: &Savepoint,
    op: &Operator,
    dir: &Path,
    report: &mut Verification,
) -> Result<()> {
    let max_parallelism = savepoint.metadata().max_parallelism;
    // Every subtask writes each kind of part, or none does (a bootstrapped operator has
    // no operator-local parts): one missing would silently lose that subtask's state.
    for (what, files) in [
        ("operator-local part", savepoint.part_files(op)),
        ("keyed state file", savepoint.keyed_files(op)),
    ] {
        if !files.is_empty() && files.len() < op.parallelism as usize {
            for subtask in (0..op.parallelism).filter(|s| !files.iter().any(|(f, _)| f == s)) {
                report.problems.push(format!(
                    "{}: subtask {subtask} has no {what}, while other subtasks have one",
                    dir.display()
                ));
            }
        }
    }
    for name in list(dir)? {
        let path = dir.join(&name);
        let checked = match subtask_file(&name) {
            Some((subtask, ext)) if subtask < op.parallelism && path.is_file() => match ext {
                "ostate" => OperatorPart::read(&path).map(|_| ()).map_err(Error::from),
                "kstate" => verify_keyed(savepoint, &path, op, subtask, max_parallelism, report),
                "opstate" => verify_operator_state(savepoint, &path, report),
                _ => Err(unexpected(&path, op)),
            },
            _ => Err(unexpected(&path, op)),
        };
        report.files += 1;
        if let Err(e) = checked {
            report.problems.push(e.to_string());
        }
    }
    Ok(())
}

fn unexpected(path: &Path, op: &Operator) -> Error {
    Error::Corrupt(format!(
        "{}: unexpected {}: not a part of a subtask of `{}` (parallelism {})",
        path.display(),
        kind_of(path),
        op.key,
        op.parallelism
    ))
}

fn verify_keyed(
    savepoint: &Savepoint,
    path: &Path,
    op: &Operator,
    subtask: u32,
    max_parallelism: u32,
    report: &mut Verification,
) -> Result<()> {
    let file = SnapshotFile::open(path)?;
    let header = file.header();
    if header.max_parallelism != max_parallelism {
        return Err(Error::Corrupt(format!(
            "{}: written for max parallelism {}, but `_metadata` says {max_parallelism}",
            path.display(),
            header.max_parallelism
        )));
    }
    let owned = KeyGroupRange::for_subtask(max_parallelism, op.parallelism, subtask)?;
    if header.range != owned {
        return Err(Error::Corrupt(format!(
            "{}: holds key groups {}..={}, but subtask {subtask} of {} owns {}..={}",
            path.display(),
            header.range.start(),
            header.range.end(),
            op.parallelism,
            owned.start(),
            owned.end()
        )));
    }
    let mut entries = 0;
    file.read_entries(savepoint.registry(), |_| {
        entries += 1;
        Ok(())
    })?;
    report.entries += entries;
    Ok(())
}

fn verify_operator_state(
    savepoint: &Savepoint,
    path: &Path,
    report: &mut Verification,
) -> Result<()> {
    let file = OperatorStateFile::open(path)?;
    for state in file.states() {
        report.items += file.values(state, savepoint.registry())?.len() as u64;
    }
    Ok(())
}
