//! `typeinfo-savepoint`: inspect, dump, verify and rewrite typeinfo savepoints.
//!
//! Exit status: 0 on success, 1 when the savepoint is refused (corrupt, truncated, foreign,
//! or the request cannot be carried out), 2 for a usage error.

use std::path::PathBuf;
use std::process::ExitCode;

use typeinfo_savepoint::{dump, inspect, verify, Savepoint, SavepointWriter};

const USAGE: &str = "\
usage:
  typeinfo-savepoint inspect DIR [--key-groups]
      operators, keyed states (kinds, types, TTL, entries and bytes per key group),
      operator states and parts; --key-groups lists every key group
  typeinfo-savepoint dump DIR --operator UID --state NAME
      the state's entries as JSON lines, read without the job's types
  typeinfo-savepoint verify DIR
      every file's checksum, every entry readable; exit 1 on any problem
  typeinfo-savepoint remove-operator DIR --operator UID --output NEW_DIR
  typeinfo-savepoint rename-uid DIR --operator UID --to NEW_UID --output NEW_DIR
  typeinfo-savepoint set-max-parallelism DIR --max-parallelism N --output NEW_DIR
      write a new savepoint (never modifying DIR)

DIR is a savepoint, a checkpoint (chk-N) or a checkpoint directory (its latest completed
checkpoint). UID is an operator's uid, or its key as `_metadata` lists it (node-3).";

/// A usage error (exit 2) or a refusal (exit 1).
enum Failure {
    Usage(String),
    Refused(String),
}

impl From<typeinfo_savepoint::Error> for Failure {
    fn from(e: typeinfo_savepoint::Error) -> Self {
        Failure::Refused(e.to_string())
    }
}

/// The arguments after the command: one positional directory and `--flag value` pairs.
struct Args {
    dir: PathBuf,
    flags: Vec<(String, Option<String>)>,
}

impl Args {
    /// Parses `args`; `valued` are the flags that take a value, `switches` those that do not.
    fn parse(args: &[String], valued: &[&str], switches: &[&str]) -> Result<Self, Failure> {
        let mut dir = None;
        let mut flags = Vec::new();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            if valued.contains(&arg.as_str()) {
                let value = it
                    .next()
                    .ok_or_else(|| Failure::Usage(format!("{arg} needs a value")))?;
                flags.push((arg.clone(), Some(value.clone())));
            } else if switches.contains(&arg.as_str()) {
                flags.push((arg.clone(), None));
            } else if arg.starts_with("--") {
                return Err(Failure::Usage(format!("unknown option {arg}")));
            } else if dir.is_none() {
                dir = Some(PathBuf::from(arg));
            } else {
                return Err(Failure::Usage(format!("unexpected argument `{arg}`")));
            }
        }
        Ok(Self {
            dir: dir.ok_or_else(|| Failure::Usage("missing the savepoint directory".into()))?,
            flags,
        })
    }

    fn value(&self, flag: &str) -> Result<&str, Failure> {
        self.flags
            .iter()
            .rev()
            .find(|(f, _)| f == flag)
            .and_then(|(_, v)| v.as_deref())
            .ok_or_else(|| Failure::Usage(format!("missing {flag}")))
    }

    fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|(f, _)| f == flag)
    }

    fn open(&self) -> Result<Savepoint, Failure> {
        Ok(Savepoint::open(&self.dir)?)
    }
}

fn run(args: &[String]) -> Result<(), Failure> {
    let Some(command) = args.first() else {
        return Err(Failure::Usage("missing a command".into()));
    };
    let rest = &args[1..];
    match command.as_str() {
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        "inspect" => {
            let a = Args::parse(rest, &[], &["--key-groups"])?;
            print!("{}", inspect(&a.open()?)?.render(a.has("--key-groups")));
            Ok(())
        }
        "dump" => {
            let a = Args::parse(rest, &["--operator", "--state"], &[])?;
            let (operator, state) = (a.value("--operator")?, a.value("--state")?);
            let savepoint = a.open()?;
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            dump(&savepoint, operator, state, &mut out)?;
            Ok(())
        }
        "verify" => {
            let a = Args::parse(rest, &[], &[])?;
            let report = verify(&a.open()?)?;
            if report.is_ok() {
                print!("{report}");
                Ok(())
            } else {
                eprint!("{report}");
                Err(Failure::Refused(format!(
                    "{} is damaged: {} problems",
                    report.dir.display(),
                    report.problems.len()
                )))
            }
        }
        "remove-operator" => {
            let a = Args::parse(rest, &["--operator", "--output"], &[])?;
            let (operator, output) = (a.value("--operator")?, a.value("--output")?);
            let written = SavepointWriter::from_savepoint(a.open()?)
                .remove_operator(operator)?
                .write(output.as_ref())?;
            println!(
                "wrote {} without operator `{operator}`",
                written.dir().display()
            );
            Ok(())
        }
        "rename-uid" => {
            let a = Args::parse(rest, &["--operator", "--to", "--output"], &[])?;
            let (operator, to, output) = (
                a.value("--operator")?,
                a.value("--to")?,
                a.value("--output")?,
            );
            let written = SavepointWriter::from_savepoint(a.open()?)
                .rename_uid(operator, to)?
                .write(output.as_ref())?;
            println!(
                "wrote {} with operator `{operator}` as uid `{to}`",
                written.dir().display()
            );
            Ok(())
        }
        "set-max-parallelism" => {
            let a = Args::parse(rest, &["--max-parallelism", "--output"], &[])?;
            let (max, output) = (a.value("--max-parallelism")?, a.value("--output")?);
            let max: u32 = max
                .parse()
                .map_err(|e| Failure::Usage(format!("--max-parallelism `{max}`: {e}")))?;
            let written = SavepointWriter::from_savepoint(a.open()?)
                .set_max_parallelism(max)?
                .write(output.as_ref())?;
            println!(
                "wrote {} with max parallelism {max}",
                written.dir().display()
            );
            Ok(())
        }
        other => Err(Failure::Usage(format!("unknown command `{other}`"))),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Refused(message)) => {
            eprintln!("typeinfo-savepoint: {message}");
            ExitCode::from(1)
        }
        Err(Failure::Usage(message)) => {
            eprintln!("typeinfo-savepoint: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
