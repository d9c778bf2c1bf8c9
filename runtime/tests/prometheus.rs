//! The Prometheus endpoint, scraped by a real Prometheus server (Debian's `prometheus`, which
//! `./dev setup` installs; found on `PATH` or through `TYPEINFO_PROMETHEUS`), started by this
//! test on loopback with a one-second scrape interval. A keyed job at parallelism 2 with
//! checkpoints every 200 ms serves its metrics and keeps serving them for a few seconds
//! after it ends; the test then reads back, through Prometheus' HTTP API, every operator's
//! records-in counters (one series per subtask, summed) and the job's completed-checkpoint
//! count, and requires them equal to the values in the job's own result, and a records-in rate Prometheus derives from them
//! that is positive.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use typeinfo_runtime::{CheckpointConfig, StreamExecutionEnvironment};

const JOB: &str = "prometheus-test";

mod common;
use common::free_port;

/// A Prometheus server scraping `target` every second, killed when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(target: u16) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  \
                 - job_name: typeinfo\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let program =
            std::env::var_os("TYPEINFO_PROMETHEUS").unwrap_or_else(|| "prometheus".into());
        let child = Command::new(&program)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("prometheus.log")).unwrap())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {program:?} ({e}): run ./dev setup (it installs Debian's prometheus)")
            });
        let prometheus = Prometheus {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while get(port, "/-/ready").is_none_or(|(status, _)| status != 200) {
            assert!(Instant::now() < deadline, "Prometheus did not become ready");
            std::thread::sleep(Duration::from_millis(100));
        }
        prometheus
    }

    /// The value of an instant query's single result.
    fn query(&self, promql: &str) -> Option<f64> {
        let (status, body) = get(
            self.port,
            &format!("/api/v1/query?query={}", encode(promql)),
        )?;
        assert_eq!(status, 200, "{promql}: {body}");
        // `..."value":[<time>,"<value>"]...`: one series asked for.
        let at = body.find("\"value\":[")?;
        let rest = &body[at..];
        let start = rest.find(",\"")? + 2;
        let end = start + rest[start..].find('"')?;
        rest[start..end].parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Percent-encodes a query parameter.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `GET path` on loopback: (status, body), or `None` when nothing answers.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    common::http(port, "GET", path, &[], "")
}

#[test]
fn prometheus_scrapes_the_jobs_own_counts() {
    let endpoint = free_port();
    let prometheus = Prometheus::start(endpoint);
    let checkpoints = tempfile::tempdir().unwrap();
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2)
        .enable_checkpointing(CheckpointConfig::new(
            checkpoints.path(),
            Duration::from_millis(200),
        ))
        .set_metrics_address(SocketAddr::from(([127, 0, 0, 1], endpoint)))
        .set_metrics_linger(Duration::from_secs(4));
    env.from_generator(30_000, |i| {
        // About three seconds per source subtask: long enough for several scrapes and
        // checkpoints.
        if i % 10 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
        (i % 100, i)
    })
    .key_by(|r: &(u64, u64)| r.0)
    .reduce(|a, b| (a.0, a.1 + b.1))
    .add_sink(|_| {});
    let result = env.execute(JOB).unwrap();
    let checkpoints_done = result.metric("job.numCompletedCheckpoints");
    assert!(checkpoints_done >= 3, "{checkpoints_done} checkpoints");
    let scraped = prometheus
        .query(&format!(
            "typeinfo_job_num_completed_checkpoints_total{{job_name=\"{JOB}\"}}"
        ))
        .unwrap_or_else(|| {
            panic!(
                "Prometheus has no checkpoint count; its targets: {:?}",
                get(prometheus.port, "/api/v1/targets")
            )
        });
    assert_eq!(scraped as u64, checkpoints_done, "completed checkpoints");

    let records_in: Vec<(&str, u64)> = result
        .metrics
        .iter()
        .filter_map(|(name, value)| Some((name.strip_suffix(".numRecordsIn")?, *value)))
        .filter(|(operator, _)| !operator.ends_with(']'))
        .collect();
    assert!(records_in.len() >= 2, "{records_in:?}");
    for (operator, count) in records_in {
        let selector = format!(
            "typeinfo_operator_num_records_in_total{{job_name=\"{JOB}\",operator=\"{}\"}}",
            operator.replace('\\', "\\\\").replace('"', "\\\"")
        );
        // Records in are per subtask; the operator's count is their sum.
        let scraped = prometheus
            .query(&format!("sum({selector})"))
            .unwrap_or_else(|| panic!("Prometheus has {selector}"));
        assert_eq!(scraped as u64, count, "{selector}");
        let subtasks = prometheus
            .query(&format!("count({selector})"))
            .unwrap_or_else(|| panic!("Prometheus has the subtasks of {selector}"));
        assert_eq!(subtasks, 2.0, "{selector}: one series per subtask");
        let rate = prometheus
            .query(&format!("sum(rate({selector}[1m]))"))
            .unwrap_or_else(|| panic!("a rate of {selector}"));
        assert!(rate > 0.0, "{selector}: rate {rate}");
    }
}
