//! `typeinfo-savepoint`: inspect, dump, verify and rewrite typeinfo savepoints.
//!
//! ```text
//! typeinfo-savepoint inspect DIR [--key-groups]
//! typeinfo-savepoint dump DIR --operator UID --state NAME
//! typeinfo-savepoint verify DIR
//! typeinfo-savepoint remove-operator DIR --operator UID --output NEW_DIR
//! typeinfo-savepoint rename-uid DIR --operator UID --to NEW_UID --output NEW_DIR
//! typeinfo-savepoint set-max-parallelism DIR --max-parallelism N --output NEW_DIR
//! typeinfo-savepoint help [COMMAND]      (or --help after any command)
//! ```
//!
//! Exit status: 0 on success, 1 when the savepoint is refused (corrupt, truncated, foreign,
//! or the request cannot be carried out), 2 for a usage error (clap's message and usage on
//! stderr).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use typeinfo_savepoint::{dump, flink, inspect, verify, Savepoint, SavepointWriter};

/// What every command's `DIR` and `UID` are, and the exit statuses (after the help).
const AFTER_HELP: &str = "\
DIR is a savepoint, a checkpoint (chk-N) or a checkpoint directory (its latest completed
checkpoint); `inspect` and `dump` also read an Apache Flink 2.3 canonical savepoint (its
operators and states; `dump` prints a state's entries as tab-separated lines). UID is an operator's uid, or its key as `_metadata` lists it (node-3).
The writing commands write a new savepoint, never modifying DIR.

Exit status: 0 on success, 1 when the savepoint or the request is refused, 2 for a usage
error.";

/// Inspect, dump, verify and rewrite typeinfo savepoints.
#[derive(Parser, Debug)]
#[command(
    name = "typeinfo-savepoint",
    after_help = AFTER_HELP,
    subcommand_required = true,
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Every command: a repeated flag takes its last value (`args_override_self`), as before clap.
#[derive(Subcommand, Debug)]
enum Command {
    /// Operators, their keyed states and operator states
    ///
    /// Operators, keyed states (kinds, types, TTL, entries and bytes per key group),
    /// operator states and parts.
    #[command(args_override_self = true, after_help = AFTER_HELP)]
    Inspect {
        /// The savepoint, checkpoint or checkpoint directory
        dir: PathBuf,
        /// List every key group
        #[arg(long)]
        key_groups: bool,
    },
    /// The state's entries as JSON lines, read without the job's types
    #[command(args_override_self = true, after_help = AFTER_HELP)]
    Dump {
        /// The savepoint, checkpoint or checkpoint directory
        dir: PathBuf,
        /// The operator: its uid, or its key in `_metadata`
        #[arg(long, value_name = "UID", allow_hyphen_values = true)]
        operator: String,
        /// The state's name
        #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
        state: String,
    },
    /// Every file's checksum, every entry readable; exit 1 on any problem
    #[command(args_override_self = true, after_help = AFTER_HELP)]
    Verify {
        /// The savepoint, checkpoint or checkpoint directory
        dir: PathBuf,
    },
    /// Write a new savepoint without the operator
    #[command(args_override_self = true, after_help = AFTER_HELP)]
    RemoveOperator {
        /// The savepoint, checkpoint or checkpoint directory
        dir: PathBuf,
        /// The operator to remove: its uid, or its key in `_metadata`
        #[arg(long, value_name = "UID", allow_hyphen_values = true)]
        operator: String,
        /// The new savepoint's directory (must not exist)
        #[arg(long, value_name = "NEW_DIR")]
        output: PathBuf,
    },
    /// Write a new savepoint with the operator under another uid
    #[command(args_override_self = true, after_help = AFTER_HELP)]
    RenameUid {
        /// The savepoint, checkpoint or checkpoint directory
        dir: PathBuf,
        /// The operator to rename: its uid, or its key in `_metadata`
        #[arg(long, value_name = "UID", allow_hyphen_values = true)]
        operator: String,
        /// Its new uid
        #[arg(long, value_name = "NEW_UID", allow_hyphen_values = true)]
        to: String,
        /// The new savepoint's directory (must not exist)
        #[arg(long, value_name = "NEW_DIR")]
        output: PathBuf,
    },
    /// Write a new savepoint with another max parallelism (key groups recomputed)
    #[command(args_override_self = true, after_help = AFTER_HELP)]
    SetMaxParallelism {
        /// The savepoint, checkpoint or checkpoint directory
        dir: PathBuf,
        /// The new max parallelism (the number of key groups)
        #[arg(long, value_name = "N")]
        max_parallelism: u32,
        /// The new savepoint's directory (must not exist)
        #[arg(long, value_name = "NEW_DIR")]
        output: PathBuf,
    },
}

/// A refusal (exit 1); usage errors (exit 2) are clap's.
struct Refused(String);

impl From<typeinfo_savepoint::Error> for Refused {
    fn from(e: typeinfo_savepoint::Error) -> Self {
        Refused(e.to_string())
    }
}

/// `inspect` and `dump` of an Apache Flink savepoint (see [`flink`]); `None` for every
/// other command or directory.
fn run_flink(command: &Command) -> Option<Result<(), Refused>> {
    let refused = |e: typeinfo::Error| Refused(e.to_string());
    match command {
        Command::Inspect { dir, .. } if flink::is_flink_savepoint(dir) => Some(
            flink::inspect_flink(dir)
                .map(|text| print!("{text}"))
                .map_err(refused),
        ),
        Command::Dump {
            dir,
            operator,
            state,
        } if flink::is_flink_savepoint(dir) => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            Some(flink::dump_flink(dir, operator, state, &mut out).map_err(refused))
        }
        _ => None,
    }
}

fn run(command: Command) -> Result<(), Refused> {
    if let Some(done) = run_flink(&command) {
        return done;
    }
    match command {
        Command::Inspect { dir, key_groups } => {
            print!("{}", inspect(&Savepoint::open(&dir)?)?.render(key_groups));
            Ok(())
        }
        Command::Dump {
            dir,
            operator,
            state,
        } => {
            let savepoint = Savepoint::open(&dir)?;
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            dump(&savepoint, &operator, &state, &mut out)?;
            Ok(())
        }
        Command::Verify { dir } => {
            let report = verify(&Savepoint::open(&dir)?)?;
            if report.is_ok() {
                print!("{report}");
                Ok(())
            } else {
                eprint!("{report}");
                Err(Refused(format!(
                    "{} is damaged: {} problems",
                    report.dir.display(),
                    report.problems.len()
                )))
            }
        }
        Command::RemoveOperator {
            dir,
            operator,
            output,
        } => {
            let written = SavepointWriter::from_savepoint(Savepoint::open(&dir)?)
                .remove_operator(&operator)?
                .write(&output)?;
            println!(
                "wrote {} without operator `{operator}`",
                written.dir().display()
            );
            Ok(())
        }
        Command::RenameUid {
            dir,
            operator,
            to,
            output,
        } => {
            let written = SavepointWriter::from_savepoint(Savepoint::open(&dir)?)
                .rename_uid(&operator, &to)?
                .write(&output)?;
            println!(
                "wrote {} with operator `{operator}` as uid `{to}`",
                written.dir().display()
            );
            Ok(())
        }
        Command::SetMaxParallelism {
            dir,
            max_parallelism,
            output,
        } => {
            let written = SavepointWriter::from_savepoint(Savepoint::open(&dir)?)
                .set_max_parallelism(max_parallelism)?
                .write(&output)?;
            println!(
                "wrote {} with max parallelism {max_parallelism}",
                written.dir().display()
            );
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    // `--help` and `help` print to stdout and exit 0; a usage error exits 2.
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Refused(message)) => {
            eprintln!("typeinfo-savepoint: {message}");
            ExitCode::from(1)
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
