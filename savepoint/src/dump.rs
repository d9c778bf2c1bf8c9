//! `dump`: the entries of one state as JSON lines, read without their Rust types.

use std::io::Write;

use typeinfo_state::savepoint::{StoredEntry, StoredValue};
use typeinfo_state::{OperatorStateFile, OperatorStateKind};

use crate::error::{Error, Result};
use crate::json::{write_string, write_value};
use crate::savepoint::{Operator, Savepoint};

/// Writes the entries of state `state` of operator `operator` (a uid, or a key such as
/// `node-3`) to `out` as JSON lines, read through the serializers restored from the
/// savepoint's snapshots (no Rust types needed); returns how many lines it wrote. The JSON
/// form of values is described in the [`json`](crate::json) module.
///
/// A keyed state writes one line per entry:
///
/// ```text
/// {"key_group":7,"key":"ada","namespace":null,"value":{"orders":3}}            value, reducing, aggregating
/// {"key_group":7,"key":"ada","namespace":null,"value":[1,2,3]}                  list (its elements)
/// {"key_group":7,"key":"ada","namespace":null,"user_key":"x","value":5}         map (one line per map entry)
/// ```
///
/// with `"ttl"` (the last-access time in ms, for a list one per element) when the state
/// has a TTL. An operator state writes one line per item: `{"subtask":0,"value":...}`
/// for a list, `{"subtask":0,"key":...,"value":...}` for a broadcast state.
///
/// # Errors
///
/// [`Error::NotFound`] for an unknown operator or state (listing those there are); a
/// corrupt file; a serializer kind the savepoint's registry does not know; an error
/// writing to `out`.
///
/// # Examples
///
/// ```no_run
/// use typeinfo_savepoint::{dump, Savepoint};
///
/// # fn main() -> typeinfo_savepoint::Result<()> {
/// let savepoint = Savepoint::open("savepoint".as_ref())?;
/// let lines = dump(&savepoint, "minute-totals", "window-contents", &mut std::io::stdout())?;
/// eprintln!("{lines} entries");
/// # Ok(())
/// # }
/// ```
pub fn dump(
    savepoint: &Savepoint,
    operator: &str,
    state: &str,
    out: &mut dyn Write,
) -> Result<u64> {
    let op = savepoint.operator(operator)?;
    let files = savepoint.open_keyed(&op)?;
    let mut lines = 0u64;
    let mut found = false;
    let mut line = String::new();
    for (_, file) in &files {
        let Some(index) = file.header().states.iter().position(|s| s.name == state) else {
            continue;
        };
        found = true;
        let mut write_error = None;
        let read = file.read_entries(savepoint.registry(), |entry| {
            if entry.state == index {
                line.clear();
                entry_json(&entry, &mut line);
                if let Err(e) = write_line(out, &line) {
                    // Stops the reading; the error is reported below as what it is.
                    write_error = Some(e);
                    return Err(typeinfo_state::Error::InvalidConfig("output closed".into()));
                }
                lines += 1;
            }
            Ok(())
        });
        if let Some(e) = write_error {
            return Err(Error::io("(output)", e));
        }
        read?;
    }
    for (subtask, path) in savepoint.operator_state_files(&op) {
        let file = OperatorStateFile::open(&path)?;
        for stored in file.states().iter().filter(|s| s.name == state) {
            found = true;
            for item in file.values(stored, savepoint.registry())? {
                line.clear();
                line.push_str(&format!("{{\"subtask\":{subtask}"));
                if stored.kind == OperatorStateKind::Broadcast {
                    field(&mut line, "key", item.first());
                    field(&mut line, "value", item.get(1));
                } else {
                    field(&mut line, "value", item.first());
                }
                line.push('}');
                write_line(out, &line).map_err(|e| Error::io("(output)", e))?;
                lines += 1;
            }
        }
    }
    if !found {
        return Err(Error::NotFound(format!(
            "operator `{}` has no state `{state}` (it has: {})",
            op.key,
            state_names(savepoint, &op)?.join(", ")
        )));
    }
    out.flush().map_err(|e| Error::io("(output)", e))?;
    Ok(lines)
}

fn write_line(out: &mut dyn Write, line: &str) -> std::io::Result<()> {
    out.write_all(line.as_bytes())?;
    out.write_all(b"\n")
}

fn field(line: &mut String, name: &str, value: Option<&typeinfo::Value>) {
    line.push(',');
    write_string(name, line);
    line.push(':');
    match value {
        Some(v) => write_value(v, line),
        None => line.push_str("null"),
    }
}

/// The names of every keyed and operator state of `operator`.
pub(crate) fn state_names(savepoint: &Savepoint, operator: &Operator) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for (_, file) in savepoint.open_keyed(operator)? {
        for s in &file.header().states {
            if !names.contains(&s.name) {
                names.push(s.name.clone());
            }
        }
    }
    for (_, path) in savepoint.operator_state_files(operator) {
        for s in OperatorStateFile::open(&path)?.states() {
            if !names.contains(&s.name) {
                names.push(s.name.clone());
            }
        }
    }
    Ok(names)
}

/// One keyed entry as a JSON object.
fn entry_json(entry: &StoredEntry<'_>, line: &mut String) {
    line.push_str(&format!("{{\"key_group\":{}", entry.key_group));
    field(line, "key", Some(&entry.key.value));
    field(line, "namespace", Some(&entry.namespace.value));
    match &entry.value {
        StoredValue::Single { ttl, value } => {
            field(line, "value", Some(&value.value));
            if let Some(ttl) = ttl {
                line.push_str(&format!(",\"ttl\":{ttl}"));
            }
        }
        StoredValue::List(elements) => {
            let values: Vec<typeinfo::Value> =
                elements.iter().map(|(_, e)| e.value.clone()).collect();
            field(line, "value", Some(&typeinfo::Value::List(values)));
            if elements.iter().any(|(ttl, _)| ttl.is_some()) {
                let ttls: Vec<String> = elements
                    .iter()
                    .map(|(ttl, _)| ttl.map_or_else(|| "null".to_owned(), |t| t.to_string()))
                    .collect();
                line.push_str(&format!(",\"ttl\":[{}]", ttls.join(",")));
            }
        }
        StoredValue::MapEntry {
            user_key,
            ttl,
            value,
        } => {
            field(line, "user_key", Some(&user_key.value));
            field(line, "value", Some(&value.value));
            if let Some(ttl) = ttl {
                line.push_str(&format!(",\"ttl\":{ttl}"));
            }
        }
        // `StoredValue` is non-exhaustive: a kind added later is named, not dropped.
        other => field(
            line,
            "value",
            Some(&typeinfo::Value::String(format!("{other:?}"))),
        ),
    }
    line.push('}');
}
