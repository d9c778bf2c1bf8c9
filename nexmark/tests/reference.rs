//! The `nexmark` binary against the independent Python reference
//! (`runtime/tests/nexmark/reference.py`): every compared query on two generated event files
//! (10,000 events on 2023-12-31, and 20,000 events across UTC midnight), at parallelism 1
//! and 2, with the heap and the RocksDB state backend; the sorted CSV rows must be equal.
//! Also the event file writer, input errors (exit 1 naming the line), usage errors (exit 2)
//! and the generator mode's last line.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const BIN: &str = env!("CARGO_BIN_EXE_nexmark");

/// The queries whose rows are compared (q12's depend on the wall clock).
const QUERIES: &[&str] = &[
    "q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q11", "q13", "q14", "q15", "q16", "q17",
    "q18", "q19", "q20", "q21", "q22",
];

fn reference_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime/tests/nexmark/reference.py")
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run nexmark")
}

/// Lines sorted by bytes (`LC_ALL=C sort`).
fn sorted_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    if lines.last().is_some_and(Vec::is_empty) {
        lines.pop();
    }
    lines.sort();
    lines
}

fn write_events(dir: &Path, name: &str, n: &str, base_time: Option<&str>) -> PathBuf {
    let path = dir.join(name);
    let mut args = vec!["--generate", n, "--write-events", path.to_str().unwrap()];
    if let Some(base) = base_time {
        args.extend(["--base-time", base]);
    }
    let out = run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

/// One query on one file in one configuration.
struct Case {
    query: &'static str,
    file: usize,
    parallelism: u32,
    state: &'static str,
}

#[test]
fn every_query_matches_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        write_events(dir.path(), "a.jsonl", "10000", None),
        write_events(dir.path(), "b.jsonl", "20000", Some("1704067199000")),
    ];
    let side = dir.path().join("side_input.txt");
    let table: String = (0..10_000).map(|k| format!("{k},{k}\n")).collect();
    std::fs::write(&side, table).unwrap();

    let mut cases = Vec::new();
    for query in QUERIES {
        for file in 0..files.len() {
            for parallelism in [1, 2] {
                for state in ["heap", "rocksdb"] {
                    cases.push(Case {
                        query,
                        file,
                        parallelism,
                        state,
                    });
                }
            }
        }
    }
    // The reference's rows per (query, file), computed once.
    let expected: Vec<Vec<Vec<Vec<u8>>>> = QUERIES
        .iter()
        .map(|q| {
            files
                .iter()
                .map(|f| {
                    let out = Command::new("python3")
                        .arg(reference_script())
                        .args(["--query", q, "--events", f.to_str().unwrap()])
                        .args(["--side-input", side.to_str().unwrap()])
                        .output()
                        .expect("run python3 reference.py");
                    assert!(
                        out.status.success(),
                        "reference {q} {}: {}",
                        f.display(),
                        String::from_utf8_lossy(&out.stderr)
                    );
                    sorted_lines(&out.stdout)
                })
                .collect()
        })
        .collect();

    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::<String>::new());
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let parallelism = case.parallelism.to_string();
                let out = run(&[
                    "--query",
                    case.query,
                    "--events",
                    files[case.file].to_str().unwrap(),
                    "--side-input",
                    side.to_str().unwrap(),
                    "--parallelism",
                    &parallelism,
                    "--state",
                    case.state,
                ]);
                let name = format!(
                    "{} on {} at parallelism {} with {}",
                    case.query,
                    files[case.file].file_name().unwrap().to_string_lossy(),
                    case.parallelism,
                    case.state
                );
                if !out.status.success() {
                    failures.lock().unwrap().push(format!(
                        "{name}: exit {:?}: {}",
                        out.status.code(),
                        String::from_utf8_lossy(&out.stderr)
                    ));
                    continue;
                }
                let want = &expected[QUERIES.iter().position(|q| *q == case.query).unwrap()]
                    [case.file];
                let got = sorted_lines(&out.stdout);
                if &got != want {
                    let at = got
                        .iter()
                        .zip(want)
                        .position(|(g, w)| g != w)
                        .unwrap_or(got.len().min(want.len()));
                    let show = |rows: &[Vec<u8>]| {
                        rows.iter()
                            .skip(at)
                            .take(3)
                            .map(|r| String::from_utf8_lossy(r).into_owned())
                            .collect::<Vec<_>>()
                            .join("\n    ")
                    };
                    failures.lock().unwrap().push(format!(
                        "{name}: {} rows, the reference has {}; first difference at sorted row {at}:\n  got:\n    {}\n  want:\n    {}",
                        got.len(),
                        want.len(),
                        show(&got),
                        show(want)
                    ));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_first_generated_line_is_formats_example() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_events(dir.path(), "e.jsonl", "3", None);
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with(
        r#"{"event_type":0,"person":{"id":1000,"name":"vicky noris","email_address":"yplkvgz@qbxfg.com","credit_card":"7878 5821 1864 2539","city":"cheyenne","state":"az","date_time":1704067195000,"extra":"lwai"#
    ), "{}", lines[0]);
    assert!(lines[1].starts_with(r#"{"event_type":1,"auction":{"id":1000,"#));
    // No temporary file is left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn bad_input_exits_1_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = write_events(dir.path(), "good.jsonl", "200", None);
    let text = std::fs::read_to_string(&good).unwrap();
    let lines: Vec<&str> = text.lines().collect();

    // Truncated in the middle of line 101.
    let truncated = dir.path().join("truncated.jsonl");
    let mut body = lines[..100].join("\n");
    body.push('\n');
    body.push_str(&lines[100][..lines[100].len() / 2]);
    std::fs::write(&truncated, body).unwrap();
    // A line that is not an event.
    let garbage = dir.path().join("garbage.jsonl");
    std::fs::write(&garbage, format!("{}\n{}\nnot json\n", lines[0], lines[1])).unwrap();
    // A decreasing timestamp.
    let late = dir.path().join("late.jsonl");
    let early = lines[0].replace("1704067195000", "1704067194000");
    std::fs::write(&late, format!("{}\n{}\n", lines[5], early)).unwrap();

    for (file, line) in [(&truncated, 101), (&garbage, 3), (&late, 2)] {
        for query in ["q0", "q3"] {
            let out = run(&["--query", query, "--events", file.to_str().unwrap()]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{query} {}: {stderr}",
                file.display()
            );
            assert!(
                stderr.contains(&format!("{}: line {line}:", file.display())),
                "{stderr}"
            );
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
    }
    let missing = dir.path().join("missing.jsonl");
    let out = run(&["--query", "q0", "--events", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.jsonl"));
    // A malformed side input.
    let side = dir.path().join("side.txt");
    std::fs::write(&side, "0,0\n1\n").unwrap();
    let out = run(&[
        "--query",
        "q13",
        "--events",
        good.to_str().unwrap(),
        "--side-input",
        side.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("side.txt: line 2:"));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["--query", "q99", "--generate", "10"][..],
        &["--query", "q6", "--generate", "10"],
        &["--query", "q10", "--generate", "10"],
        &["--query", "q23", "--generate", "10"],
        &["--query", "q0"],
        &["--query", "q0", "--generate", "ten"],
        &["--query", "q0", "--generate", "10", "--state", "disk"],
        &["--query", "q0", "--generate", "10", "--parallelism", "0"],
        &["--query", "q13", "--events", "whatever.jsonl"],
        &["--bogus", "1"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    let out = run(&["--query", "q6", "--generate", "10"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("q6 is not covered"));
}

#[test]
fn generator_mode_ends_with_the_rate() {
    for (query, parallelism) in [("q0", "1"), ("q5", "2"), ("q13", "1")] {
        let out = run(&[
            "--query",
            query,
            "--generate",
            "20000",
            "--parallelism",
            parallelism,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let last = stdout.lines().last().unwrap();
        let rate = last.strip_prefix("events_per_s=").expect("a rate line");
        assert!(rate.parse::<u64>().unwrap() > 0, "{stdout}");
    }
}
