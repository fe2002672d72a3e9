//! `/metrics` in the Prometheus text format, `/readyz` beside the `/healthz` liveness check, and
//! the refusal counter every route's refusals pass through.
//!
//! Why the `metrics` facade with `metrics-exporter-prometheus` rather than `prometheus-client`:
//! what an operator needs to see happens deep in the libraries (a checkpoint's latency and a seal's
//! retries in `twoplane-stream`, the Redis writer's queue and reconnects in `twoplane-redis`). With
//! the facade each of those is one macro at its call site, which costs a relaxed load while no
//! recorder is installed (the libraries' other users, the Node addon among them, pay nothing and
//! get no dependency on an exporter); with `prometheus-client` every one would be a handle threaded
//! through the plane's and the adapters' options. The binary installs the one recorder.
//!
//! Guarantees:
//! - Names follow the Prometheus conventions: the `twoplane_` prefix, `_total` on counters, base
//!   units (`_seconds`, `_bytes`); a stream id never becomes a label: every label takes values
//!   from a fixed set in the code (a refusal's `kind` is a `&'static str`, see
//!   [`crate::refusal`]).
//! - Counts this server holds itself (streams by status, readers, connection bounds in use,
//!   frames and bytes delivered) are read from their source at each scrape, so they are never out
//!   of date; what the libraries count is recorded where it happens.
//! - The recorder is process-wide (the facade has one): an embedder that runs two servers in one
//!   process sees the libraries' counters summed, and the server's own gauges from whichever
//!   scraped last.
//! - `/readyz` is `503` from the first moment of a drain and while the store does not answer a
//!   lookup within [`STORE_PROBE`]; `/healthz` stays `200` while the process runs.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use twoplane_stream::Plane;

use crate::access::Access;
use crate::conn_limits::{ConnLimits, SubscriberCaps};
use crate::http::SseStats;
use crate::refusal::RefusalKind;
use crate::store::Database;

/// How long `/readyz` waits for the store's answer before it says the store is unreachable.
pub const STORE_PROBE: Duration = Duration::from_secs(2);

/// How often the exporter folds recorded histogram samples in, so that memory stays bounded
/// between scrapes (and without any scrape at all).
const UPKEEP: Duration = Duration::from_secs(5);

/// Checkpoint latency buckets, seconds: a local SQLite answers in a millisecond, a PostgreSQL
/// across a network in tens, a store that is failing in seconds (retries included).
const CHECKPOINT_BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

/// Writes per group commit: one stream alone, up to the batch bound (1,024).
const GROUP_COMMIT_BUCKETS: [f64; 11] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0];

/// The process's recorder, installed by the first server that asks; `None` when the embedding
/// application installed a recorder of its own first (its exporter then has these metrics).
fn handle() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("twoplane_checkpoint_duration_seconds".into()),
                    &CHECKPOINT_BUCKETS,
                )
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("twoplane_group_commit_writes".into()),
                        &GROUP_COMMIT_BUCKETS,
                    )
                });
            let installed = builder.and_then(|b| b.install_recorder());
            match installed {
                Ok(handle) => {
                    describe();
                    Some(handle)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "/metrics is empty: another metrics recorder is installed");
                    None
                }
            }
        })
        .as_ref()
}

/// The HELP line of every metric (the exporter prints a described metric's HELP and TYPE).
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_gauge!(
        "twoplane_streams",
        "Streams hosted by this process, by status (live, sealing, ended and lingering)."
    );
    describe_gauge!("twoplane_undurable_units", "UTF-16 code units produced that the store has not confirmed yet.");
    describe_gauge!("twoplane_readers", "Readers connected now, by endpoint (stream: /api/stream; ui_message_stream).");
    describe_counter!(
        "twoplane_delivered_frames_total",
        "Frames (deltas and the frames around them) written to readers (/api/stream and the UI message stream)."
    );
    describe_counter!(
        "twoplane_delivered_writes_total",
        "Writes to readers (one per wakeup; a write carries one or more frames)."
    );
    describe_counter!("twoplane_delivered_bytes_total", Unit::Bytes, "Bytes of events written to readers.");
    describe_counter!(
        "twoplane_direct_handovers_total",
        "Times a caught-up reader's connection handed its subscription to its stream's writer task (each after the first follows a take-back)."
    );
    describe_counter!(
        "twoplane_direct_holds_total",
        "Times the stream's writer task found a reader's socket full and gave the rest back to the reader's connection."
    );
    describe_counter!(
        "twoplane_store_reads_total",
        "Reads of a message's rows by a reader endpoint (ui_message_stream: one per join, one more when a live leg ended short of the end)."
    );
    describe_counter!("twoplane_refusals_total", "Requests refused, by the refusal's kind.");
    describe_counter!(
        "twoplane_stale_endings_total",
        "Readers ended with stale, by cause (overflow, below_floor, fenced, relay)."
    );
    describe_histogram!(
        "twoplane_checkpoint_duration_seconds",
        Unit::Seconds,
        "Time a checkpoint round took the store, retries included."
    );
    describe_histogram!(
        "twoplane_group_commit_writes",
        "Writes (checkpoint rounds, opens, seals) committed together in one store transaction."
    );
    describe_counter!(
        "twoplane_checkpoint_failures_total",
        "Checkpoint rounds and seals that failed after their retries."
    );
    describe_counter!(
        "twoplane_seal_retries_total",
        "Seal attempts after the first (a failing store retried until the seal deadline)."
    );
    describe_gauge!(
        "twoplane_relay_queued_frames",
        "Frames handed to the Redis relay's writer that have not reached Redis yet."
    );
    describe_counter!(
        "twoplane_relay_reconnects_total",
        "Redis relay connections made again after a loss, by connection (pubsub, log_tail)."
    );
    describe_gauge!(
        "twoplane_limit_in_use",
        "How much of each connection bound is in use (per_address, per_stream: the busiest one)."
    );
    describe_gauge!("twoplane_limit_max", "Each connection bound.");
    describe_counter!(
        "twoplane_connections_refused_total",
        "Connections closed at accept: a bound was reached (refused) or a waiting one made room (evicted)."
    );
    describe_gauge!("twoplane_draining", "1 from the first moment of a drain (SIGTERM), else 0.");
}

/// What one server's scrape reads.
#[derive(Clone)]
pub struct Sources {
    pub plane: Plane,
    pub stats: Arc<SseStats>,
    pub limits: Arc<ConnLimits>,
    pub subscribers: Option<Arc<SubscriberCaps>>,
    pub max_subscribers: usize,
    pub db: Database,
}

/// Install the recorder (once per process) and start its upkeep. Call inside a tokio runtime,
/// before the plane records anything worth keeping.
pub fn install() {
    if let Some(handle) = handle() {
        static UPKEEP_STARTED: OnceLock<()> = OnceLock::new();
        UPKEEP_STARTED.get_or_init(|| {
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(UPKEEP);
                loop {
                    tick.tick().await;
                    handle.run_upkeep();
                }
            });
        });
    }
}

/// `GET /metrics` (guarded like the producer API), `GET /readyz`, `GET /healthz`.
pub fn routes(sources: Sources, access: Arc<Access>) -> Router {
    let metrics = Router::new()
        .route("/metrics", get(scrape))
        .route_layer(axum::middleware::from_fn_with_state(access, crate::access::require_producer))
        .with_state(sources.clone());
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .with_state(sources)
        .merge(metrics)
}

/// Counts every refusal that passes by its kind: the outermost layer of the server's router.
pub async fn count_refusals(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    count_refusal(&response);
    response
}

/// Count `response` if it is a refusal: [`count_refusals`]' count, for a response that did not
/// come through the router (`crate::server::Shortcut`).
pub fn count_refusal(response: &Response) {
    if let Some(RefusalKind(kind)) = response.extensions().get::<RefusalKind>() {
        metrics::counter!("twoplane_refusals_total", "kind" => *kind).increment(1);
    }
}

/// A reader of an endpoint that the server does not count itself, counted while it lives.
pub struct ReaderGauge(&'static str);

impl ReaderGauge {
    pub fn new(endpoint: &'static str) -> ReaderGauge {
        metrics::gauge!("twoplane_readers", "endpoint" => endpoint).increment(1.0);
        ReaderGauge(endpoint)
    }
}

impl Drop for ReaderGauge {
    fn drop(&mut self) {
        metrics::gauge!("twoplane_readers", "endpoint" => self.0).decrement(1.0);
    }
}

async fn scrape(State(sources): State<Sources>) -> Response {
    let Some(handle) = handle() else {
        return crate::refusal::refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "metrics_unavailable",
            "another metrics recorder is installed in this process",
        );
    };
    observe(&sources);
    let text = handle.render();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}

/// Set the gauges and counters this server holds itself, from their sources.
fn observe(s: &Sources) {
    use metrics::{counter, gauge};
    let census = s.plane.census();
    gauge!("twoplane_streams", "status" => "live").set(census.live as f64);
    gauge!("twoplane_streams", "status" => "sealing").set(census.sealing as f64);
    gauge!("twoplane_streams", "status" => "ended").set(census.ended as f64);
    gauge!("twoplane_undurable_units").set(census.undurable_units as f64);
    gauge!("twoplane_draining").set(if s.plane.is_draining() { 1.0 } else { 0.0 });

    // The resume route's readers are live readers too, counted by their own gauge.
    let ui = s.stats.ui_active.load(Ordering::SeqCst);
    gauge!("twoplane_readers", "endpoint" => "stream").set(s.stats.active().saturating_sub(ui) as f64);
    counter!("twoplane_delivered_frames_total").absolute(s.stats.frames.load(Ordering::Relaxed));
    counter!("twoplane_delivered_writes_total").absolute(s.stats.writes.load(Ordering::Relaxed));
    counter!("twoplane_delivered_bytes_total").absolute(s.stats.bytes.load(Ordering::Relaxed));
    counter!("twoplane_direct_handovers_total").absolute(s.stats.handovers.load(Ordering::Relaxed));
    counter!("twoplane_direct_holds_total").absolute(s.stats.holds.load(Ordering::Relaxed));

    let config = s.limits.config();
    let usage = s.limits.usage();
    let bound = |limit: &'static str, in_use: usize, max: usize| {
        gauge!("twoplane_limit_in_use", "limit" => limit).set(in_use as f64);
        gauge!("twoplane_limit_max", "limit" => limit).set(max as f64);
    };
    bound("connections", usage.open, config.max_connections);
    bound("waiting_heads", usage.waiting, config.max_waiting);
    bound("per_address", usage.busiest_address, config.max_per_ip);
    bound("subscribers", s.stats.active(), s.max_subscribers);
    if let Some(caps) = &s.subscribers {
        let (stream, address) = caps.busiest();
        let caps_config = caps.config();
        bound("subscribers_per_stream", stream, caps_config.per_stream);
        bound("subscribers_per_address", address, caps_config.per_ip);
    }
    counter!("twoplane_connections_refused_total", "reason" => "refused")
        .absolute(s.limits.refused.load(Ordering::Relaxed) as u64);
    counter!("twoplane_connections_refused_total", "reason" => "evicted")
        .absolute(s.limits.evicted.load(Ordering::Relaxed) as u64);
}

async fn ready(State(sources): State<Sources>) -> Response {
    // The drain first: from its first moment the load balancer must stop sending readers here,
    // even though the store may answer for a while yet.
    if sources.plane.is_draining() {
        return crate::refusal::refuse(StatusCode::SERVICE_UNAVAILABLE, "draining", "the server is shutting down");
    }
    // One indexed lookup of an id no row has: it answers only when the store does.
    let probe = crate::store::messages::one(&sources.db, "");
    match tokio::time::timeout(STORE_PROBE, probe).await {
        Ok(Ok(_)) => axum::Json(serde_json::json!({ "ready": true })).into_response(),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "readiness: the store failed");
            crate::refusal::refuse(StatusCode::SERVICE_UNAVAILABLE, "store", "the database is unavailable")
        }
        Err(_) => {
            crate::refusal::refuse(StatusCode::SERVICE_UNAVAILABLE, "store", "the database did not answer within 2 s")
        }
    }
}
