//! The daemon's metrics in Prometheus' text format: every RPC counted by method and outcome
//! with a latency histogram ([`RpcMetricsLayer`], around the gRPC service, so stdio shims,
//! `amanctl` and the HTTP endpoint are all counted), and each loaded project's gauges (files,
//! chunks, index size, passes, vectors, embedding rate, watched directories) with the
//! daemon's own (memory, uptime).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use tonic::codegen::http;

use crate::index::progress::IndexState;
use crate::project::ProjectStatus;

/// Upper bounds (seconds) of the latency histogram's buckets.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Calls and latencies since the daemon started.
pub struct Metrics {
    started: Instant,
    calls: Mutex<BTreeMap<(String, &'static str), u64>>,
    latency: Mutex<BTreeMap<String, Histogram>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            started: Instant::now(),
            calls: Mutex::default(),
            latency: Mutex::default(),
        }
    }
}

impl Metrics {
    /// Time since the daemon started (since these metrics were made, with the server).
    pub fn uptime(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// Count one finished call of `method`.
    pub fn observe(&self, method: &str, ok: bool, seconds: f64) {
        let outcome = if ok { "ok" } else { "error" };
        *self
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((method.to_string(), outcome))
            .or_default() += 1;
        let mut latency = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        let histogram = latency.entry(method.to_string()).or_default();
        for (bound, count) in BUCKETS.iter().zip(&mut histogram.counts) {
            if seconds <= *bound {
                *count += 1;
            }
        }
        histogram.count += 1;
        histogram.sum += seconds;
    }

    /// Everything, in Prometheus' text exposition format (version 0.0.4).
    pub fn render(&self, projects: &[ProjectStatus]) -> String {
        let mut out = String::new();
        let name = "amanmcp_rpc_requests_total";
        family(
            &mut out,
            name,
            "counter",
            "Daemon calls (each MCP tool call is one) by method and outcome.",
        );
        for ((method, outcome), n) in self.calls.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = writeln!(
                out,
                "{name}{{method=\"{method}\",outcome=\"{outcome}\"}} {n}"
            );
        }
        let name = "amanmcp_rpc_duration_seconds";
        family(
            &mut out,
            name,
            "histogram",
            "Daemon call latency by method.",
        );
        for (method, h) in self
            .latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            for (bound, count) in BUCKETS.iter().zip(h.counts) {
                let _ = writeln!(
                    out,
                    "{name}_bucket{{method=\"{method}\",le=\"{bound}\"}} {count}"
                );
            }
            let _ = writeln!(
                out,
                "{name}_bucket{{method=\"{method}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(out, "{name}_sum{{method=\"{method}\"}} {}", h.sum);
            let _ = writeln!(out, "{name}_count{{method=\"{method}\"}} {}", h.count);
        }
        for (name, kind, help, value) in PROJECT_GAUGES {
            family(&mut out, name, kind, help);
            for project in projects {
                let root = label(&project.root.to_string_lossy());
                let _ = writeln!(out, "{name}{{project=\"{root}\"}} {}", value(project));
            }
        }
        let daemon: [(&str, &str, f64); 3] = [
            (
                "amanmcp_daemon_resident_bytes",
                "The daemon's resident memory.",
                resident_bytes().unwrap_or(0) as f64,
            ),
            (
                "amanmcp_daemon_uptime_seconds",
                "Seconds since the daemon started.",
                self.uptime().as_secs_f64(),
            ),
            (
                "amanmcp_projects_loaded",
                "Projects loaded now.",
                projects.len() as f64,
            ),
        ];
        for (name, help, value) in daemon {
            family(&mut out, name, "gauge", help);
            let _ = writeln!(out, "{name} {value}");
        }
        out
    }
}

type Gauge = (
    &'static str,
    &'static str,
    &'static str,
    fn(&ProjectStatus) -> f64,
);

/// Each loaded project's figures: name, type, help, value.
const PROJECT_GAUGES: [Gauge; 10] = [
    (
        "amanmcp_project_files",
        "gauge",
        "Files searchable now.",
        |p| p.files as f64,
    ),
    (
        "amanmcp_project_chunks",
        "gauge",
        "Chunks searchable now.",
        |p| p.chunks as f64,
    ),
    (
        "amanmcp_project_index_bytes",
        "gauge",
        "Size of the index on disk.",
        |p| p.index_bytes as f64,
    ),
    (
        "amanmcp_project_ready",
        "gauge",
        "1 when the project's index and vectors are complete.",
        |p| f64::from(u8::from(p.state == IndexState::Ready)),
    ),
    (
        "amanmcp_project_index_passes_total",
        "counter",
        "Indexing passes completed since the project was loaded.",
        |p| p.passes as f64,
    ),
    (
        "amanmcp_project_last_pass_seconds",
        "gauge",
        "Duration of the last indexing pass.",
        |p| p.last_pass_ms as f64 / 1000.0,
    ),
    (
        "amanmcp_project_vectors_embedded",
        "gauge",
        "Chunks with a vector.",
        |p| p.vectors.as_ref().map_or(0.0, |v| v.embedded as f64),
    ),
    (
        "amanmcp_project_vectors_pending",
        "gauge",
        "Chunks waiting for a vector.",
        |p| p.vectors.as_ref().map_or(0.0, |v| v.pending as f64),
    ),
    (
        "amanmcp_project_embedding_rate",
        "gauge",
        "Chunks embedded per second recently.",
        |p| p.vectors.as_ref().map_or(0.0, |v| v.rate),
    ),
    (
        "amanmcp_project_watched_directories",
        "gauge",
        "Directories watched for changes (0 when polling or off).",
        |p| p.watched_dirs as f64,
    ),
];

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A label value escaped as the text format asks (`\`, `"` and newlines).
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The process's resident memory, from `/proc/self/statm` (Linux) or the peak from
/// `getrusage` elsewhere.
pub fn resident_bytes() -> Option<u64> {
    if let Ok(statm) = std::fs::read_to_string("/proc/self/statm") {
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        return Some(pages * page.max(4096) as u64);
    }
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    (unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } == 0)
        .then_some(usage.ru_maxrss as u64 * if cfg!(target_os = "macos") { 1 } else { 1024 })
}

/// A tower layer that counts every gRPC call: the method from the path
/// (`/amanmcp.v1.Daemon/Search` → `Search`), the outcome from `grpc-status` in the response
/// head (tonic sends an error's status there; a success's comes later, in trailers).
#[derive(Clone)]
pub struct RpcMetricsLayer(pub Arc<Metrics>);

impl<S> tower::Layer<S> for RpcMetricsLayer {
    type Service = RpcMetricsService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RpcMetricsService {
            inner,
            metrics: self.0.clone(),
        }
    }
}

/// The service [`RpcMetricsLayer`] wraps around the gRPC server.
#[derive(Clone)]
pub struct RpcMetricsService<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, B, R> tower::Service<http::Request<B>> for RpcMetricsService<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let method = request
            .uri()
            .path()
            .rsplit('/')
            .next()
            .filter(|m| !m.is_empty() && m.len() <= 40 && m.chars().all(char::is_alphanumeric))
            .unwrap_or("other")
            .to_string();
        let metrics = self.metrics.clone();
        let started = Instant::now();
        let future = self.inner.call(request);
        Box::pin(async move {
            let result = future.await;
            let ok = result.as_ref().is_ok_and(|response| {
                response.status().is_success()
                    && response
                        .headers()
                        .get("grpc-status")
                        .is_none_or(|status| status == "0")
            });
            metrics.observe(&method, ok, started.elapsed().as_secs_f64());
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_and_latencies_render_as_prometheus_text() {
        let metrics = Metrics::default();
        metrics.observe("Search", true, 0.002);
        metrics.observe("Search", false, 0.3);
        let text = metrics.render(&[]);
        assert!(text.contains("amanmcp_rpc_requests_total{method=\"Search\",outcome=\"ok\"} 1"));
        assert!(text.contains("amanmcp_rpc_requests_total{method=\"Search\",outcome=\"error\"} 1"));
        assert!(
            text.contains("amanmcp_rpc_duration_seconds_bucket{method=\"Search\",le=\"0.0025\"} 1")
        );
        assert!(
            text.contains("amanmcp_rpc_duration_seconds_bucket{method=\"Search\",le=\"+Inf\"} 2")
        );
        assert!(text.contains("amanmcp_rpc_duration_seconds_count{method=\"Search\"} 2"));
        assert!(text.contains("# TYPE amanmcp_daemon_resident_bytes gauge"));
        assert!(resident_bytes().is_some_and(|b| b > 0));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
