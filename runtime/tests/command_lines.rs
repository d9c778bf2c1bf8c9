//! Every program of the runtime answers `--help` with its flags and their defaults, and an
//! unknown flag or a bad value with clap's clear error and exit status 2.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::process::Command;

const PROGRAMS: [(&str, &str); 7] = [
    ("connectors", env!("CARGO_BIN_EXE_connectors")),
    ("orders_per_minute", env!("CARGO_BIN_EXE_orders_per_minute")),
    ("pending_timers", env!("CARGO_BIN_EXE_pending_timers")),
    ("slow_consumer", env!("CARGO_BIN_EXE_slow_consumer")),
    ("sort_records", env!("CARGO_BIN_EXE_sort_records")),
    ("two_inputs", env!("CARGO_BIN_EXE_two_inputs")),
    (
        "windowed_aggregate",
        env!("CARGO_BIN_EXE_windowed_aggregate"),
    ),
];

#[test]
fn every_program_answers_help_and_refuses_unknown_flags() {
    for (name, path) in PROGRAMS {
        let help = Command::new(path).arg("--help").output().unwrap();
        let text = String::from_utf8_lossy(&help.stdout);
        assert!(help.status.success(), "{name} --help failed");
        assert!(text.contains("Usage:"), "{name} --help: {text}");
        let bad = Command::new(path).arg("--no-such-flag").output().unwrap();
        assert_eq!(bad.status.code(), Some(2), "{name} --no-such-flag");
        assert!(
            String::from_utf8_lossy(&bad.stderr).contains("--no-such-flag"),
            "{name}: the error names the flag"
        );
    }
}

#[test]
fn help_shows_defaults_and_bad_values_are_named() {
    let (_, path) = PROGRAMS[1];
    let help = Command::new(path).args(["run", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("[default: heap]") && text.contains("--quiet"),
        "{text}"
    );
    let bad = Command::new(path)
        .args(["run", "--orders", "many", "--output", "x"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("'many'") && err.contains("--orders"), "{err}");
}
