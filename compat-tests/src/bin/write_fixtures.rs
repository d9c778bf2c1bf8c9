//! Writes the golden fixtures that are missing; never overwrites one.
//!
//! ```text
//! cargo run -p typeinfo-compat-tests --bin write_fixtures -- fixtures/v1
//! write_fixtures DIR        (write_fixtures --help: the usage)
//! ```
//!
//! A relative directory is taken relative to the `compat-tests` crate (not the current
//! directory), so the command above works from anywhere in the workspace. For each case of
//! `builtin_cases()` it writes `<dir>/<name>.bin` (the values' bytes, back to back) and
//! `<dir>/<name>.snapshot` (the standalone snapshot), and for each case of `user_cases()`
//! (the v1 user types of `src/user_types.rs`) the same two files in `<dir>/user/`; each
//! file to a temporary name, synced, then renamed into place. Files that exist are skipped
//! and reported: committed fixtures are never regenerated. A case whose freshly written
//! bytes fail the golden check (a serializer bug) is not written at all.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use typeinfo_compat_tests::golden::{GoldenCase, BIN_EXT, SNAPSHOT_EXT};
use typeinfo_compat_tests::user_types::USER_SUBDIR;
use typeinfo_compat_tests::{builtin_cases, user_cases};

enum Outcome {
    Written,
    Skipped,
}

/// Writes `bytes` to `path` unless it exists: a temporary file in the same directory,
/// synced, then renamed over nothing.
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<Outcome> {
    if path.try_exists()? {
        return Ok(Outcome::Skipped);
    }
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .expect("fixture paths have a UTF-8 file name");
    let tmp = path.with_file_name(format!(".{file_name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        // Checked again right before the rename, which would replace an existing file.
        if path.try_exists()? {
            return Ok(Outcome::Skipped);
        }
        fs::rename(&tmp, path)?;
        Ok(Outcome::Written)
    })();
    if !matches!(result, Ok(Outcome::Written)) {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Files written, skipped and failed.
#[derive(Default)]
struct Counts {
    written: usize,
    skipped: usize,
    failed: usize,
}

fn run(dir: &Path) -> Result<bool, String> {
    let mut counts = Counts::default();
    write_cases(dir, builtin_cases(), &mut counts)?;
    write_cases(&dir.join(USER_SUBDIR), user_cases(), &mut counts)?;
    // Make the entry of a newly created `user/` durable too.
    sync_dir(dir)?;
    let Counts {
        written,
        skipped,
        failed,
    } = counts;
    println!("{written} written, {skipped} skipped (already there), {failed} failed");
    Ok(failed == 0)
}

/// Writes the missing fixtures of `cases` into `dir`.
fn write_cases(
    dir: &Path,
    cases: Vec<Box<dyn GoldenCase>>,
    counts: &mut Counts,
) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let Counts {
        written,
        skipped,
        failed,
    } = counts;
    for case in cases {
        let fixture = match case.write() {
            Ok(f) => f,
            Err(e) => {
                eprintln!("FAILED {}: {e}", case.name());
                *failed += 1;
                continue;
            }
        };
        let problems = case.check(&fixture);
        if !problems.is_empty() {
            eprintln!(
                "FAILED {}: today's bytes fail the golden check, not writing them:",
                case.name()
            );
            for p in problems {
                eprintln!("  - {p}");
            }
            *failed += 1;
            continue;
        }
        for (ext, bytes) in [(BIN_EXT, &fixture.bin), (SNAPSHOT_EXT, &fixture.snapshot)] {
            let path = dir.join(format!("{}.{ext}", case.name()));
            match write_new(&path, bytes) {
                Ok(Outcome::Written) => {
                    println!("wrote   {} ({} bytes)", path.display(), bytes.len());
                    *written += 1;
                }
                Ok(Outcome::Skipped) => {
                    println!(
                        "skipped {} (exists; committed fixtures are never regenerated)",
                        path.display()
                    );
                    *skipped += 1;
                }
                Err(e) => {
                    eprintln!("FAILED {}: {e}", path.display());
                    *failed += 1;
                }
            }
        }
    }
    // Make the renames durable.
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), String> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("cannot sync directory {}: {e}", dir.display()))
}

/// Writes the golden fixtures that are missing (built-in cases into DIR, the user types'
/// into DIR/user); never overwrites one.
#[derive(Parser, Debug)]
#[command(name = "write_fixtures")]
struct Cli {
    /// The fixture directory (e.g. fixtures/v1); a relative one is relative to the
    /// compat-tests crate, not to the current directory
    #[arg(value_name = "DIR")]
    dir: PathBuf,
}

fn main() -> ExitCode {
    // `--help` prints to stdout and exits 0; clap's usage errors exit 2.
    let Cli { dir } = Cli::parse();
    let dir = if dir.is_absolute() {
        dir
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)
    };
    println!("fixture directory: {}", dir.display());
    match run(&dir) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
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
