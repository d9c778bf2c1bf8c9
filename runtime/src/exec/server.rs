//! The job's HTTP server: with [`ExecutionConfig::metrics_address`](crate::ExecutionConfig::metrics_address)
//! set, each process serves, for as long as its job runs (and its
//! [`metrics_linger`](crate::ExecutionConfig::metrics_linger) after):
//! - `GET /metrics`: Prometheus' text ([`crate::exec::prometheus`]);
//! - `/jobs/...`: the REST API ([`crate::exec::rest`]);
//! - `GET /`: the web dashboard (`dashboard.html`, one page with its style and script,
//!   shipped inside the binary; no build step): the job graph (operators with their
//!   parallelism, edges with their partitioner), each operator's records per second in and
//!   out, backpressure coloured as Flink colours it (green under 10%, orange to 50%, red
//!   above) and input watermark, the checkpoint history and the exceptions, refreshed every
//!   second without reloading. Off loopback, open it as `http://host:port/#secret=<secret>`:
//!   the page sends the secret with its API calls (a fragment never reaches a server).
//!
//! `tiny_http` accepts connections and parses requests on its own threads; each request is
//! answered on a thread of its own, at most [`MAX_IN_FLIGHT`] at once (beyond: `503`), so a
//! client that sends its body slowly holds up only itself, and nothing here runs on the
//! job's workers.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::registry::Registry;

use crate::config::secret::JobSecret;
use crate::config::ExecutionConfig;
use crate::error::{Error, Result};
use crate::exec::rest::RestApi;
use crate::job::JobShared;
use crate::plan::StreamGraph;

/// Requests answered at once.
pub(crate) const MAX_IN_FLIGHT: usize = 16;

/// What the server answers.
struct Routes {
    metrics: Registry,
    rest: RestApi,
}

impl Routes {
    fn answer(&self, mut request: tiny_http::Request) {
        let path = request.url().split('?').next().unwrap_or("").to_owned();
        let response = if path == "/metrics" {
            if request.method() == &tiny_http::Method::Get {
                crate::exec::prometheus::respond(&self.metrics)
            } else {
                json(405, &serde_json::json!({ "errors": ["only GET /metrics"] }))
            }
        } else if path == "/" || path == "/index.html" {
            // The dashboard holds no data of its own: what it shows it asks of the API, with
            // the secret the page's address carries (see `dashboard.html`).
            html(DASHBOARD)
        } else if path == "/jobs" || path.starts_with("/jobs/") {
            let (status, body) = self.rest.handle(&mut request);
            json(status, &body)
        } else {
            json(
                404,
                &serde_json::json!({ "errors": [format!("unknown path {path}: /, /metrics and /jobs are served")] }),
            )
        };
        // A client that hung up is its own business.
        let _ = request.respond(response);
    }
}

/// The web dashboard: one page, its style and script inside, shipped in the binary.
const DASHBOARD: &str = include_str!("dashboard.html");

fn html(page: &str) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let response = tiny_http::Response::from_string(page);
    match tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"text/html; charset=utf-8"[..]) {
        Ok(header) => response.with_header(header),
        Err(()) => response,
    }
}

fn json(status: u16, body: &serde_json::Value) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let response = tiny_http::Response::from_string(body.to_string()).with_status_code(status);
    match tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..]) {
        Ok(header) => response.with_header(header),
        Err(()) => response,
    }
}

/// The server of one process, serving until dropped (then for its linger).
pub(crate) struct JobServer {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    linger: Duration,
}

impl JobServer {
    /// The server of `job` on this process, when its configuration names an address.
    ///
    /// # Errors
    ///
    /// The address cannot be bound.
    pub(crate) fn for_job(
        job_name: &str,
        config: &ExecutionConfig,
        job: &Arc<JobShared>,
        graph: &Arc<StreamGraph>,
    ) -> Result<Option<Self>> {
        let Some(address) = config.metrics_address else {
            return Ok(None);
        };
        let process = config.cluster.as_ref().map_or(0, |c| c.process);
        let secret = match &config.cluster {
            Some(c) => Some(c.secret.as_bytes().to_vec()),
            None => JobSecret::from_env().ok().map(|s| s.as_bytes().to_vec()),
        };
        let rest = RestApi::new(
            job_name,
            process,
            Arc::clone(job),
            Arc::clone(graph),
            config.checkpointing.as_ref().map(|c| c.dir.clone()),
            config.cluster.is_some(),
            secret,
            address.ip().is_loopback(),
        );
        let metrics =
            crate::exec::prometheus::registry(job_name, process, Arc::clone(&job.metrics));
        Self::start(address, config.metrics_linger, metrics, rest).map(Some)
    }

    /// Binds `address` and serves from a thread of its own.
    ///
    /// # Errors
    ///
    /// The address cannot be bound.
    pub(crate) fn start(
        address: SocketAddr,
        linger: Duration,
        metrics: Registry,
        rest: RestApi,
    ) -> Result<Self> {
        let server = tiny_http::Server::http(address).map_err(|e| {
            Error::Config(format!(
                "the job's HTTP server cannot listen on {address}: {e}"
            ))
        })?;
        let server = Arc::new(server);
        let serving = Arc::clone(&server);
        let routes = Arc::new(Routes { metrics, rest });
        let thread = std::thread::Builder::new()
            .name("http-server".into())
            .spawn(move || serve(&serving, &routes))
            .map_err(|e| Error::Config(format!("the job's HTTP server's thread: {e}")))?;
        Ok(JobServer {
            server,
            thread: Some(thread),
            linger,
        })
    }
}

fn serve(server: &tiny_http::Server, routes: &Arc<Routes>) {
    let in_flight = Arc::new(AtomicUsize::new(0));
    for request in server.incoming_requests() {
        if in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT {
            in_flight.fetch_sub(1, Ordering::AcqRel);
            let busy = serde_json::json!({ "errors": ["too many requests at once"] });
            let _ = request.respond(json(503, &busy));
            continue;
        }
        let routes = Arc::clone(routes);
        let done = Arc::clone(&in_flight);
        // When no thread can start the request is dropped, which closes its connection.
        let _ = std::thread::Builder::new()
            .name("http-request".into())
            .spawn(move || {
                routes.answer(request);
                done.fetch_sub(1, Ordering::AcqRel);
            })
            .map_err(|_| in_flight.fetch_sub(1, Ordering::AcqRel));
    }
}

impl Drop for JobServer {
    fn drop(&mut self) {
        if !self.linger.is_zero() {
            std::thread::sleep(self.linger);
        }
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
