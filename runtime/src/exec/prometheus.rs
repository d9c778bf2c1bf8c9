//! The Prometheus endpoint: with [`ExecutionConfig::metrics_address`](crate::ExecutionConfig::metrics_address)
//! set, each process serves `GET /metrics` in the OpenMetrics text format (which Prometheus
//! scrapes) for as long as its job runs, and for
//! [`metrics_linger`](crate::ExecutionConfig::metrics_linger) after it ends, so that a scrape
//! sees the final values. The text is written by `prometheus-client`; the server is the
//! job's HTTP server ([`crate::exec::server`]), which also serves the REST API.
//!
//! Every runtime metric (see [`crate::metrics`]) is there, named after Prometheus'
//! conventions from the runtime's (Flink's) name: `typeinfo_operator_<name in snake case>`
//! for an operator's (counters get `_total`), `typeinfo_job_<name>` for the job's, with the
//! records in and out per subtask (an operator's total is their `sum by (operator)`; the
//! runtime's `<op>.numRecordsIn` total is not exported beside them), and the
//! labels `job_name` (the job's name, as Flink's Prometheus reporter names it: Prometheus
//! keeps `job` for its scrape job), `process` (this process's index), `operator` and, for
//! per-subtask gauges and histograms, `subtask`. A histogram is a family of gauges per
//! statistic (`..._count`, `_min`, `_max`, `_mean`, `_p50`, `_p99`). For example:
//!
//! | runtime (Flink) name | Prometheus name |
//! |---|---|
//! | `<op>[i].numRecordsIn` | `typeinfo_operator_num_records_in_total{operator="<op>",subtask="i"}` |
//! | `<op>[i].numRecordsOut` | `typeinfo_operator_num_records_out_total{operator,subtask}` |
//! | `<op>[i].currentInputWatermark` | `typeinfo_operator_current_input_watermark{subtask="i"}` |
//! | `<op>[i].watermarkLag` | `typeinfo_operator_watermark_lag` |
//! | `<op>[i].busyTimeMsPerSecond` | `typeinfo_operator_busy_time_ms_per_second` |
//! | `<op>[i].backPressuredTimeMsPerSecond` | `typeinfo_operator_back_pressured_time_ms_per_second` |
//! | `<op>.stateSizeBytes` | `typeinfo_operator_state_size_bytes` |
//! | `job.numCompletedCheckpoints` | `typeinfo_job_num_completed_checkpoints_total` |
//! | `job.lastCheckpointDurationMs` | `typeinfo_job_last_checkpoint_duration_ms` |
//! | a user's counter `<op>.myCount` | `typeinfo_operator_my_count_total` |
//!
//! `GET /metrics` is read-only and unauthenticated, as Prometheus exporters are: bind the
//! server to loopback or a private network (the REST API beside it asks for the job's secret
//! off loopback, see [`crate::exec::rest`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::metrics::MetricRegistry;

/// `numRecordsIn` → `num_records_in` (Prometheus' names are snake case).
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            out.push('_');
        }
    }
    out
}

type Labels = Vec<(String, String)>;

/// Where a runtime metric goes: its family's name and its labels beyond job and process.
fn place(name: &str) -> (String, Labels) {
    let Some((scope, metric)) = name.rsplit_once('.') else {
        return (format!("typeinfo_{}", snake(name)), Vec::new());
    };
    if scope == "job" {
        return (format!("typeinfo_job_{}", snake(metric)), Vec::new());
    }
    let family = format!("typeinfo_operator_{}", snake(metric));
    // `<op>[<subtask>]` for gauges and histograms.
    if let Some((operator, rest)) = scope.rsplit_once('[') {
        if let Some(subtask) = rest
            .strip_suffix(']')
            .filter(|s| s.parse::<usize>().is_ok())
        {
            return (
                family,
                vec![
                    ("operator".to_owned(), operator.to_owned()),
                    ("subtask".to_owned(), subtask.to_owned()),
                ],
            );
        }
    }
    (family, vec![("operator".to_owned(), scope.to_owned())])
}

/// The operator counters that are sums of per-subtask counters (`<op>.<m>` beside
/// `<op>[i].<m>`): a count kept per subtask is exported per subtask only (`sum by
/// (operator)` gives the operator's), so that a family never holds a sum beside its parts.
fn summed_counters(counters: &BTreeMap<String, u64>) -> std::collections::BTreeSet<String> {
    counters
        .keys()
        .filter_map(|name| {
            let (scope, metric) = name.rsplit_once('.')?;
            let (operator, _) = scope.rsplit_once('[')?;
            Some(format!("{operator}.{metric}"))
        })
        .collect()
}

/// The job's metrics, read at each scrape.
#[derive(Debug)]
struct JobCollector {
    job: String,
    process: usize,
    registry: Arc<MetricRegistry>,
}

impl Collector for JobCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::result::Result<(), std::fmt::Error> {
        let metrics = self.registry.snapshot();
        let base = |mut labels: Labels| -> Labels {
            labels.insert(0, ("process".to_owned(), self.process.to_string()));
            labels.insert(0, ("job_name".to_owned(), self.job.clone()));
            labels
        };
        let summed = summed_counters(&metrics.counters);
        let mut counters: BTreeMap<String, Vec<(Labels, u64)>> = BTreeMap::new();
        for (name, value) in &metrics.counters {
            if summed.contains(name) {
                continue;
            }
            let (family, labels) = place(name);
            counters
                .entry(family)
                .or_default()
                .push((base(labels), *value));
        }
        let mut gauges: BTreeMap<String, Vec<(Labels, i64)>> = BTreeMap::new();
        for (name, value) in &metrics.gauges {
            let (family, labels) = place(name);
            gauges
                .entry(family)
                .or_default()
                .push((base(labels), *value));
        }
        for (name, s) in &metrics.histograms {
            let (family, labels) = place(name);
            let labels = base(labels);
            for (stat, value) in [
                ("count", i64::try_from(s.count).unwrap_or(i64::MAX)),
                ("min", s.min),
                ("max", s.max),
                ("mean", s.mean.round() as i64),
                ("p50", s.p50),
                ("p99", s.p99),
            ] {
                gauges
                    .entry(format!("{family}_{stat}"))
                    .or_default()
                    .push((labels.clone(), value));
            }
        }
        for (family, series) in &counters {
            let mut metric = encoder.encode_descriptor(
                family,
                "a typeinfo-runtime counter",
                None,
                ConstCounter::new(0u64).metric_type(),
            )?;
            for (labels, value) in series {
                ConstCounter::new(*value).encode(metric.encode_family(labels)?)?;
            }
        }
        for (family, series) in &gauges {
            let mut metric = encoder.encode_descriptor(
                family,
                "a typeinfo-runtime gauge",
                None,
                ConstGauge::new(0i64).metric_type(),
            )?;
            for (labels, value) in series {
                ConstGauge::new(*value).encode(metric.encode_family(labels)?)?;
            }
        }
        Ok(())
    }
}

/// The registry `/metrics` encodes: the job's metrics, read at each scrape.
pub(crate) fn registry(job: &str, process: usize, metrics: Arc<MetricRegistry>) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(JobCollector {
        job: job.to_owned(),
        process,
        registry: metrics,
    }));
    registry
}

/// The answer to `GET /metrics`: the registry in the OpenMetrics text format.
pub(crate) fn respond(registry: &Registry) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, registry) {
        Ok(()) => {
            let response = tiny_http::Response::from_string(text);
            match tiny_http::Header::from_bytes(
                &b"Content-Type"[..],
                &b"application/openmetrics-text; version=1.0.0; charset=utf-8"[..],
            ) {
                Ok(header) => response.with_header(header),
                Err(()) => response,
            }
        }
        Err(_) => tiny_http::Response::from_string("encoding failed").with_status_code(500),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_prometheus_conventions() {
        assert_eq!(snake("numRecordsIn"), "num_records_in");
        assert_eq!(
            snake("backPressuredTimeMsPerSecond"),
            "back_pressured_time_ms_per_second"
        );
        assert_eq!(
            place("Window(Tumbling).numRecordsIn"),
            (
                "typeinfo_operator_num_records_in".to_owned(),
                vec![("operator".to_owned(), "Window(Tumbling)".to_owned())]
            )
        );
        assert_eq!(
            place("Sink: out[1].currentInputWatermark"),
            (
                "typeinfo_operator_current_input_watermark".to_owned(),
                vec![
                    ("operator".to_owned(), "Sink: out".to_owned()),
                    ("subtask".to_owned(), "1".to_owned())
                ]
            )
        );
        assert_eq!(
            place("job.numCompletedCheckpoints"),
            (
                "typeinfo_job_num_completed_checkpoints".to_owned(),
                Vec::new()
            )
        );
    }
}
