//! Apache Flink savepoints through `inspect` and `dump`: a directory whose `_metadata` starts
//! with Flink's magic number is a Flink 2.3 canonical savepoint (hashmap or RocksDB backend,
//! compressed or not), read by `typeinfo-flink-compat` without a JVM. `inspect` lists its
//! operators (uid, name, operator id, parallelism) with their keyed and operator states;
//! `dump` prints one state's entries as tab-separated lines: the operator's uid, the state's
//! name and kind, then for a keyed entry its key group, key, namespace, user key (`-` when
//! none) and value, for an operator state its distribution mode, subtask and value (values as
//! Java prints them). The writing commands and `verify` take typeinfo savepoints only.

use std::io::Write;
use std::path::Path;

use typeinfo_flink_compat::savepoint::{FlinkSavepoint, OperatorDump, METADATA_MAGIC};

/// Whether `dir` (or the `_metadata` file it names) is a Flink savepoint.
pub fn is_flink_savepoint(dir: &Path) -> bool {
    let metadata = if dir.is_dir() {
        dir.join("_metadata")
    } else {
        dir.to_owned()
    };
    let mut magic = [0u8; 4];
    std::fs::File::open(metadata)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok_and(|()| i32::from_be_bytes(magic) == METADATA_MAGIC)
}

/// The operators of the Flink savepoint at `dir` and their states, as text.
///
/// # Errors
///
/// The savepoint or one of its state files is damaged, truncated or missing (named).
pub fn inspect_flink(dir: &Path) -> typeinfo::Result<String> {
    let savepoint = FlinkSavepoint::open(dir)?;
    let format = savepoint.metadata().format_type().unwrap_or("unknown");
    let mut out = format!("Flink savepoint {} ({format})\n", dir.display());
    for operator in savepoint.dump()? {
        out.push_str(&describe(&operator));
    }
    Ok(out)
}

fn describe(op: &OperatorDump) -> String {
    let uid = if op.uid.is_empty() { "-" } else { &op.uid };
    let mut out = format!(
        "operator uid {uid} name {:?} id {}: parallelism {}, max parallelism {}\n",
        op.name, op.id, op.parallelism, op.max_parallelism
    );
    for state in &op.keyed {
        out.push_str(&format!(
            "  keyed state {} ({}): {} entries\n",
            state.name,
            state.kind,
            state.entries.len()
        ));
    }
    let mut names: Vec<&str> = Vec::new();
    for state in &op.operator {
        if !names.contains(&state.name.as_str()) {
            names.push(&state.name);
        }
    }
    for name in names {
        let parts: Vec<_> = op.operator.iter().filter(|s| s.name == name).collect();
        out.push_str(&format!(
            "  operator state {name} ({:?}): {} subtask parts\n",
            parts[0].mode,
            parts.len()
        ));
    }
    out
}

/// Writes the entries of state `state` of operator `operator` (its uid, or its operator id
/// in hex) of the Flink savepoint at `dir` to `out`, a line each.
///
/// # Errors
///
/// The savepoint is damaged, the operator or the state does not exist (the ones that do are
/// named), or `out` fails.
pub fn dump_flink(
    dir: &Path,
    operator: &str,
    state: &str,
    out: &mut impl Write,
) -> typeinfo::Result<()> {
    let savepoint = FlinkSavepoint::open(dir)?;
    let ops = savepoint.dump()?;
    let Some(op) = ops
        .iter()
        .find(|o| o.uid == operator || o.id.to_string() == operator)
    else {
        let known: Vec<String> = ops
            .iter()
            .map(|o| format!("{} ({})", o.uid, o.id))
            .collect();
        return Err(typeinfo::Error::custom(format!(
            "{}: no operator `{operator}`; it has {}",
            dir.display(),
            known.join(", ")
        )));
    };
    let known = op.keyed.iter().map(|s| s.name.as_str());
    let mut known: Vec<&str> = known
        .chain(op.operator.iter().map(|s| s.name.as_str()))
        .collect();
    if !known.contains(&state) {
        known.dedup();
        return Err(typeinfo::Error::custom(format!(
            "{}: operator `{operator}` has no state `{state}`; it has {}",
            dir.display(),
            known.join(", ")
        )));
    }
    for line in op.lines() {
        if line.split('\t').nth(1) == Some(state) {
            writeln!(out, "{line}").map_err(|e| typeinfo::Error::custom(e.to_string()))?;
        }
    }
    Ok(())
}
