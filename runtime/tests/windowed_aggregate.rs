//! The `windowed_aggregate` program against the reference outputs in `tests/windowed/`
//! (computed by an independent implementation of Flink's window semantics, the small cases
//! checked by hand): every case, at parallelism 1 and 2, on both state backends, and one job
//! split over two processes on loopback; and every case in batch mode (`--mode batch`) against
//! `NAME.batch.expected` (Apache Flink 2.3's output in its BATCH execution mode, reproduced by
//! `reference.py --mode batch`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The program under test, built by cargo for this test (`CARGO_BIN_EXE_*`), so a stale binary
/// from an earlier build can never stand in for it.
fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_windowed_aggregate"))
}

fn cases() -> Vec<(String, Vec<String>, String)> {
    cases_of("expected")
}

/// The cases with the expected output of `NAME.<suffix>`.
fn cases_of(suffix: &str) -> Vec<(String, Vec<String>, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/windowed");
    let mut cases = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/windowed") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "args") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let args = std::fs::read_to_string(&path)
                .unwrap()
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            let expected = std::fs::read_to_string(dir.join(format!("{name}.{suffix}"))).unwrap();
            cases.push((name, args, expected));
        }
    }
    cases.sort();
    assert!(
        cases.len() >= 15,
        "expected the reference cases in {}",
        dir.display()
    );
    cases
}

fn input(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/windowed")
        .join(format!("{name}.csv"))
        .to_string_lossy()
        .into_owned()
}

fn sorted(stdout: &[u8]) -> String {
    let text = String::from_utf8(stdout.to_vec()).expect("utf-8 output");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn run_all(state: &str) {
    run_cases(state, "streaming", cases());
}

fn run_cases(state: &str, mode: &str, cases: Vec<(String, Vec<String>, String)>) {
    let example = example();
    for (name, args, expected) in cases {
        for parallelism in ["1", "2"] {
            let out = Command::new(&example)
                .arg("--input")
                .arg(input(&name))
                .args(&args)
                .args([
                    "--parallelism",
                    parallelism,
                    "--state",
                    state,
                    "--mode",
                    mode,
                ])
                .output()
                .expect("run the example");
            assert!(
                out.status.success(),
                "{name} p={parallelism} {state} {mode}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                sorted(&out.stdout),
                expected,
                "{name} at parallelism {parallelism} on {state} in {mode} mode"
            );
        }
    }
}

#[test]
fn every_case_matches_the_reference_on_the_heap() {
    run_all("heap");
}

#[test]
fn every_case_matches_the_reference_in_rocksdb() {
    run_all("rocksdb");
}

#[test]
fn every_case_in_batch_mode_matches_flinks_batch_output() {
    // `--state` does not matter in batch mode (one key's state on the heap); both are run.
    run_cases("heap", "batch", cases_of("batch.expected"));
    run_cases("rocksdb", "batch", cases_of("batch.expected"));
}

/// Two distinct free ports on loopback (both listeners are held until both are chosen).
fn free_ports() -> (u16, u16) {
    let (a, b) = (
        TcpListener::bind("127.0.0.1:0").expect("bind"),
        TcpListener::bind("127.0.0.1:0").expect("bind"),
    );
    (
        a.local_addr().expect("addr").port(),
        b.local_addr().expect("addr").port(),
    )
}

#[test]
fn two_processes_over_loopback_give_the_output_of_one() {
    let example = example();
    for name in [
        "random_session",
        "tumbling_allowed_lateness",
        "sliding_lateness",
    ] {
        for (mode, state) in [
            ("streaming", "heap"),
            ("streaming", "rocksdb"),
            ("batch", "heap"),
        ] {
            let suffix = if mode == "batch" {
                "batch.expected"
            } else {
                "expected"
            };
            let (_, args, expected) = cases_of(suffix)
                .into_iter()
                .find(|(n, _, _)| n == name)
                .expect("case");
            let (p0, p1) = free_ports();
            let hosts = format!("127.0.0.1:{p0},127.0.0.1:{p1}");
            let children: Vec<_> = (0..2)
                .map(|process| {
                    Command::new(&example)
                        .arg("--input")
                        .arg(input(name))
                        .args(&args)
                        .args([
                            "--parallelism",
                            "2",
                            "--state",
                            state,
                            "--mode",
                            mode,
                            "--hosts",
                            &hosts,
                            "--process",
                            &process.to_string(),
                        ])
                        .env("TYPEINFO_JOB_SECRET", "the secret of this test's job")
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .expect("spawn a process")
                })
                .collect();
            let mut stdout = Vec::new();
            for child in children {
                let out = child.wait_with_output().expect("wait");
                assert!(
                    out.status.success(),
                    "{name} {state} {mode}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                stdout.extend_from_slice(&out.stdout);
            }
            assert_eq!(
                sorted(&stdout),
                expected,
                "{name} in two processes on {state} in {mode} mode"
            );
        }
    }
}

#[test]
fn malformed_input_is_refused_with_its_line_number() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.csv");
    std::fs::write(&file, "# header\na,1,2\nb,x,3\n").unwrap();
    let out = Command::new(example())
        .arg("--input")
        .arg(&file)
        .args([
            "--window",
            "tumbling:10",
            "--out-of-orderness",
            "0",
            "--allowed-lateness",
            "0",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        out.stdout.is_empty(),
        "nothing is printed before the input is checked"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.csv:3:") && err.contains("`x`"), "{err}");
}

#[test]
fn a_missing_input_file_is_a_clear_error() {
    let out = Command::new(example())
        .args([
            "--input",
            "/nonexistent/input.csv",
            "--window",
            "tumbling:10",
            "--out-of-orderness",
            "0",
            "--allowed-lateness",
            "0",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/input.csv"), "{err}");
}
