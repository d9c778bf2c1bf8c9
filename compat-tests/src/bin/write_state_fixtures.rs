//! Writes the state golden fixtures that are missing; never overwrites one.
//!
//! ```text
//! cargo run -p typeinfo-compat-tests --bin write_state_fixtures
//! write_state_fixtures        (no arguments; --help: what it writes)
//! ```
//!
//! Writes `fixtures/v1/state/{key_groups.txt, composite_keys.txt, keyed.kstate,
//! operator.ostate}` of the `compat-tests` crate. Existing files are skipped and reported:
//! committed fixtures are never regenerated.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use typeinfo_compat_tests::golden::fixture_dir;
use typeinfo_compat_tests::state_cases::*;

fn write_if_missing(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    if path.exists() {
        println!("skipped (exists): {}", path.display());
        return Ok(());
    }
    write(path)?;
    println!("written: {}", path.display());
    Ok(())
}

fn run() -> Result<(), String> {
    let dir = fixture_dir().join(STATE_SUBDIR);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let text = |content: String| {
        move |p: &Path| {
            typeinfo_state::savepoint::write_atomically(p, content.as_bytes())
                .map_err(|e| e.to_string())
        }
    };
    write_if_missing(&dir.join("key_groups.txt"), text(key_groups_text()))?;
    write_if_missing(
        &dir.join("composite_keys.txt"),
        text(composite_keys_text().map_err(|e| e.to_string())?),
    )?;
    write_if_missing(&dir.join("keyed.kstate"), |p| {
        write_keyed_snapshot(p).map_err(|e| e.to_string())
    })?;
    write_if_missing(&dir.join("operator.ostate"), |p| {
        write_operator_snapshot(p).map_err(|e| e.to_string())
    })?;
    Ok(())
}

/// Writes the state golden fixtures that are missing (fixtures/v1/state/ of the
/// compat-tests crate: key_groups.txt, composite_keys.txt, keyed.kstate, operator.ostate);
/// never overwrites one. Takes no arguments.
#[derive(Parser, Debug)]
#[command(name = "write_state_fixtures")]
struct Cli {}

fn main() -> ExitCode {
    // `--help` prints to stdout and exits 0; any argument is a usage error (exit 2).
    let Cli {} = Cli::parse();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own checks of the definition (names, groups, defaults that parse).
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
