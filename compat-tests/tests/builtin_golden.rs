//! Reads the committed golden fixtures of every built-in serializer back with today's code.
//!
//! Fixtures live in `fixtures/v1/` and are never regenerated; see the crate's README.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::BTreeSet;

use typeinfo_compat_tests::builtin_cases;
use typeinfo_compat_tests::golden::{
    fixture_dir, Fixture, BIN_EXT, FIXTURE_DIR, SNAPSHOT_EXT, WRITE_COMMAND,
};
use typeinfo_compat_tests::state_cases::STATE_SUBDIR;
use typeinfo_compat_tests::user_types::USER_SUBDIR;

/// Every case's committed fixture decodes to its values, matches today's bytes, and its
/// snapshot resolves as is and restores a serializer that reads it.
#[test]
fn committed_fixtures_read_back() {
    let dir = fixture_dir();
    let mut failures = Vec::new();
    for case in builtin_cases() {
        let fixture = match Fixture::read(&dir, case.name()) {
            Ok(f) => f,
            Err(e) => {
                failures.push(format!("{} ({}): {e}", case.name(), case.type_name()));
                continue;
            }
        };
        let problems = case.check(&fixture);
        if !problems.is_empty() {
            let list: Vec<String> = problems.iter().map(|p| format!("  - {p}")).collect();
            failures.push(format!(
                "{} ({}):\n{}",
                case.name(),
                case.type_name(),
                list.join("\n")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of the golden cases in {FIXTURE_DIR} fail:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Today's bytes pass today's checks (independent of the files: catches a serializer that
/// does not round-trip even before its fixture is written).
#[test]
fn todays_bytes_pass_the_check() {
    let mut failures = Vec::new();
    for case in builtin_cases() {
        match case.write() {
            Ok(fixture) => {
                let problems = case.check(&fixture);
                if !problems.is_empty() {
                    failures.push(format!("{}:\n  - {}", case.name(), problems.join("\n  - ")));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", case.name())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The check has teeth: a changed byte, a missing or extra byte, or another case's
/// snapshot is reported.
#[test]
fn the_check_catches_tampered_fixtures() {
    let cases = builtin_cases();
    let find = |name: &str| {
        cases
            .iter()
            .find(|c| c.name() == name)
            .expect("a case of that name")
    };
    let (i64s, strings) = (find("i64"), find("string"));
    let good = i64s.write().expect("i64 writes");
    assert!(i64s.check(&good).is_empty());

    let mut flipped = good.clone();
    flipped.bin[3] ^= 0x01;
    assert!(
        !i64s.check(&flipped).is_empty(),
        "a flipped byte goes unnoticed"
    );

    let mut short = good.clone();
    short.bin.pop();
    assert!(
        !i64s.check(&short).is_empty(),
        "a missing byte goes unnoticed"
    );

    let mut long = good.clone();
    long.bin.push(0);
    assert!(
        !i64s.check(&long).is_empty(),
        "a trailing byte goes unnoticed"
    );

    let foreign = Fixture {
        bin: good.bin.clone(),
        snapshot: strings.write().expect("string writes").snapshot,
    };
    assert!(
        !i64s.check(&foreign).is_empty(),
        "a foreign snapshot goes unnoticed"
    );

    // Floats are compared by bits: -0.0 written where 0.0 is expected is caught.
    let f64s = find("f64");
    let mut sign = f64s.write().expect("f64 writes");
    sign.bin[7] ^= 0x80;
    assert!(
        !f64s.check(&sign).is_empty(),
        "a sign bit of 0.0 goes unnoticed"
    );
}

/// Case names are unique file stems.
#[test]
fn case_names_are_unique_file_stems() {
    let mut seen = BTreeSet::new();
    for case in builtin_cases() {
        let name = case.name();
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "case name `{name}` is not a lower-case file stem"
        );
        assert!(seen.insert(name.to_owned()), "two cases are named `{name}`");
        assert!(case.value_count() > 0, "case `{name}` has no values");
    }
}

/// Every committed fixture file belongs to a case: a case is never removed (or renamed)
/// once its fixture is committed. (The `user/` and `state/` subdirectories hold the
/// user-type and state fixtures, checked by `tests/user_types_evolution.rs` and
/// `tests/state_golden.rs`; `runtime/` holds the runtime's wire batches, checked by the
/// runtime crate's `channel` tests.)
#[test]
fn every_fixture_file_has_a_case() {
    let dir = fixture_dir();
    let names: BTreeSet<String> = builtin_cases()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "cannot list {}: {e}; write the fixtures with `{WRITE_COMMAND}`",
            dir.display()
        )
    });
    let mut orphans = Vec::new();
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir()
            && path
                .file_name()
                .is_some_and(|n| n == USER_SUBDIR || n == STATE_SUBDIR || n == "runtime")
        {
            continue;
        }
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let ext = path
            .extension()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if !(ext == BIN_EXT || ext == SNAPSHOT_EXT) || !names.contains(stem) {
            orphans.push(path.display().to_string());
        }
    }
    orphans.sort();
    assert!(
        orphans.is_empty(),
        "files in {FIXTURE_DIR} without a case in builtin_cases() (cases are never removed or renamed):\n{}",
        orphans.join("\n")
    );
}

/// A readable dump of today's bytes and snapshots: a layout change shows up as a diff of
/// `tests/snapshots/builtin_golden__hex.snap`.
#[test]
fn hex() {
    let mut dump = String::new();
    for case in builtin_cases() {
        let section = case
            .hex_dump()
            .unwrap_or_else(|e| panic!("{}: {e}", case.name()));
        dump.push_str(&section);
        dump.push('\n');
    }
    insta::assert_snapshot!("hex", dump);
}
