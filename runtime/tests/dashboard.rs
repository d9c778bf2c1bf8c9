//! The web dashboard in a real headless browser (Debian's `chromium`, which `./dev setup`
//! installs; found on `PATH` or through `TYPEINFO_CHROMIUM`). The main demo's job
//! (`orders_per_minute`, parallelism 2, checkpoints every 200 ms) serves on every address,
//! so the page is opened with the job's secret in its fragment. Chromium loads the page,
//! runs its script for a few seconds of the page's time (`--virtual-time-budget`; every
//! refresh asks the running job over real HTTP) and prints the document as the script left
//! it (`--dump-dom`). The test requires a box for every operator of the demo's plan (as the
//! REST API reports it), a records-per-second figure that took at least two values while
//! the page ran (the page keeps the figures it showed in each box's `data-rates`), and a
//! completed checkpoint in the history; then it saves a screenshot
//! (`$CARGO_TARGET_TMPDIR/dashboard.png`; with `TYPEINFO_SCREENSHOT_TO` set, there too: the
//! README's `docs/dashboard.png` was made so).
//!
//! Chromium is driven by its own command line (`--dump-dom`, `--screenshot`), which runs the
//! page in the same headless browser the DevTools protocol would, without a WebSocket client
//! in this test.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

const SECRET: &str = "dashboard-test-secret-0123456789abcdef";

use common::free_port;

fn chromium() -> std::ffi::OsString {
    std::env::var_os("TYPEINFO_CHROMIUM").unwrap_or_else(|| "chromium".into())
}

/// Chromium, headless, on `url` with `args`: its standard output.
fn browse(url: &str, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {:?} ({e}): run ./dev setup (it installs Debian's chromium)",
                chromium()
            )
        });
    assert!(out.status.success(), "chromium failed on {url}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `GET path` with the secret: the JSON answer.
fn get(port: u16, path: &str) -> serde_json::Value {
    let auth = [format!("Authorization: Bearer {SECRET}")];
    let (_, body) = common::http(port, "GET", path, &auth, "").unwrap();
    serde_json::from_str(&body).unwrap()
}

/// The values of attribute `name` in `html`, in document order.
fn attributes<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let key = format!("{name}=\"");
    html.match_indices(&key)
        .map(|(at, _)| {
            let rest = &html[at + key.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect()
}

/// What the page says in its problem line (empty when it reached the job).
fn problem(html: &str) -> &str {
    let start = html.find("id=\"problem\"").unwrap();
    let text = &html[start..];
    let open = text.find('>').unwrap() + 1;
    &text[open..open + text[open..].find('<').unwrap()]
}

#[test]
fn the_dashboard_shows_the_demos_plan_live_rates_and_checkpoints() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let port = free_port();
    let mut job = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_orders_per_minute")))
        .args([
            "run",
            "--version",
            "1",
            "--orders",
            "200000",
            "--orders-per-second",
            "2000",
        ])
        .args(["--parallelism", "2", "--state", "heap", "--output"])
        .arg(w.join("output"))
        .args(["--checkpoint-interval-ms", "200", "--checkpoint-dir"])
        .arg(w.join("checkpoints"))
        .args(["--metrics-port", &port.to_string()])
        .env("TYPEINFO_JOB_SECRET", SECRET)
        .env_remove("TYPEINFO_JOB_SECRET_FILE")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !common::has_completed_checkpoint(&w.join("checkpoints"))
        || TcpStream::connect(("127.0.0.1", port)).is_err()
    {
        assert!(Instant::now() < deadline, "the job did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{port}/#secret={SECRET}");

    let dom = browse(&url, &["--virtual-time-budget=6000", "--dump-dom"]);
    let jid = get(port, "/jobs")["jobs"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let plan = get(port, &format!("/jobs/{jid}/plan"));
    let mut want: Vec<&str> = plan["plan"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["operator"].as_str().unwrap())
        .collect();
    want.sort_unstable();
    let mut shown = attributes(&dom, "data-operator");
    shown.sort_unstable();
    assert_eq!(shown, want, "a box for every operator of the plan");
    assert!(want.len() >= 4, "the demo's plan: {want:?}");
    let changed = attributes(&dom, "data-rates").iter().any(|rates| {
        let mut values: Vec<&str> = rates.split(',').filter(|v| !v.is_empty()).collect();
        values.dedup();
        values.len() >= 2
    });
    assert!(
        changed,
        "no records/s figure changed while the page ran: {:?}",
        attributes(&dom, "data-rates")
    );
    assert!(
        dom.contains("class=\"checkpoint\""),
        "no checkpoint in the history"
    );
    assert!(
        dom.contains(">COMPLETED<"),
        "no completed checkpoint in the history"
    );
    assert_eq!(problem(&dom), "", "the page could not ask the job");

    // Without the secret the page can ask nothing (the server is not on loopback).
    let refused = browse(
        &format!("http://127.0.0.1:{port}/"),
        &["--virtual-time-budget=2000", "--dump-dom"],
    );
    assert!(
        problem(&refused).contains("401"),
        "the API answered without the secret: {:?}",
        problem(&refused)
    );

    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    let _ = std::fs::remove_file(&shot);
    browse(
        &url,
        &[
            "--window-size=1300,620",
            "--virtual-time-budget=4000",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "a screenshot"
    );
    if let Some(to) = std::env::var_os("TYPEINFO_SCREENSHOT_TO") {
        std::fs::write(to, &png).unwrap();
    }
    let _ = job.kill();
    let _ = job.wait();
}
