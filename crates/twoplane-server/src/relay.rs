//! `twoplane relay`: runs the commit-log relay of `twoplane-relay` as a process: committed rows of
//! the record in PostgreSQL (read through a logical replication slot) into per-session logs in
//! S2 or Redis Streams.
//!
//! Guarantees: logs go through `tracing`; `GET /status` (on `--status-listen`) answers the
//! relay's [`RelayStatus`] as JSON plus the log store's kind, and never a URL or a credential;
//! SIGTERM (or Ctrl-C) stops it gracefully: the status server stops, then the relay releases the
//! slot and lets in-flight appends finish. Several processes may run at once: one holds the slot,
//! the others wait for it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use twoplane_relay::pg_record::{PgRecord, RecordTables};
use twoplane_relay::pg_source::{PgSource, PgSourceConfig};
use twoplane_relay::redis_log::{RedisLog, RedisLogOptions};
use twoplane_relay::s2::{S2LogStore, S2Options};
use twoplane_relay::{LogError, LogStore, Relay, RelayOptions, RelayStatus};
use twoplane_stream::{PgEndpoint, PgFailure};

/// Where the logs go. `Debug` shows URLs redacted.
#[derive(Clone)]
pub enum LogTarget {
    /// An S2 endpoint (`http://host:port` or `https://...`, see `twoplane_relay::s2`) and how to
    /// reach it.
    S2(String, S2Options),
    /// A Redis server (`redis://host:port/`): Redis Streams, see `twoplane_relay::redis_log`.
    Redis(String),
}

/// Everything `twoplane relay` needs. `Debug` shows URLs redacted.
#[derive(Clone)]
pub struct RelayCommand {
    pub pg: String,
    /// Trusted CA certificates for PostgreSQL over TLS (like the URL's `sslrootcert`).
    pub pg_ca_file: Option<PathBuf>,
    pub log: LogTarget,
    pub source: PgSourceConfig,
    pub status_listen: Option<SocketAddr>,
}

impl std::fmt::Debug for LogTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // The token may be the URL's user (`https://TOKEN@host`), which redact_url keeps.
            LogTarget::S2(url, options) => f.debug_tuple("S2").field(&S2LogStore::shown(url)).field(options).finish(),
            LogTarget::Redis(url) => f.debug_tuple("Redis").field(&twoplane_stream::redact_url(url)).finish(),
        }
    }
}

impl std::fmt::Debug for RelayCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayCommand")
            .field("pg", &twoplane_stream::redact_url(&self.pg))
            .field("pg_ca_file", &self.pg_ca_file)
            .field("log", &self.log)
            .field("source", &self.source)
            .field("status_listen", &self.status_listen)
            .finish()
    }
}

#[derive(Serialize)]
struct StatusBody {
    #[serde(flatten)]
    status: RelayStatus,
    /// `s2` or `redis`.
    log_store: &'static str,
}

struct StatusState {
    relay: Arc<Relay>,
    log_store: &'static str,
}

async fn status(State(state): State<Arc<StatusState>>) -> Json<StatusBody> {
    Json(StatusBody { status: state.relay.status(), log_store: state.log_store })
}

/// Runs the relay until `shutdown` resolves, then stops it gracefully. Errors are the ones a
/// user can fix (a bad URL or slot name, a port in use), as one line each.
pub async fn run(command: RelayCommand, shutdown: impl std::future::Future<Output = ()>) -> Result<(), String> {
    let (log, kind): (Arc<dyn LogStore>, &'static str) = match &command.log {
        LogTarget::S2(url, options) => {
            let store = S2LogStore::with_options(url, options).map_err(|e| format!("--s2: {e}"))?;
            // A certificate that does not verify or a refused token will not fix itself: say so
            // now and stop, rather than retry it forever in the log. An unreachable store may
            // come up later, and the relay waits for it as it always has.
            match store.check().await {
                Err(LogError::Rejected(e)) => return Err(format!("--s2 {}: {e}", store.endpoint())),
                Err(LogError::Unavailable(e)) if e.starts_with("TLS failed") => {
                    return Err(format!("--s2 {}: {e}", store.endpoint()))
                }
                Err(e) => {
                    tracing::warn!(endpoint = store.endpoint(), error = %e, "S2 not reachable yet; the relay retries")
                }
                Ok(()) => {}
            }
            (Arc::new(store), "s2")
        }
        LogTarget::Redis(url) => {
            let store = RedisLog::connect(url, RedisLogOptions::default())
                .await
                // Named by its redacted URL (which server); the store's message may quote the URL
                // too, and must not carry its password into a log.
                .map_err(|e| {
                    let shown = twoplane_stream::redact_url(url);
                    format!("--redis {shown}: {}", e.to_string().replace(url.as_str(), &shown))
                })?;
            (Arc::new(store), "redis")
        }
    };
    let tables: RecordTables = command.source.tables.clone();
    let endpoint = PgEndpoint::parse(&command.pg, command.pg_ca_file.as_deref()).map_err(|e| format!("--pg: {e}"))?;
    let source = PgSource::new(&endpoint, command.source.clone()).map_err(|e| format!("--pg: {e}"))?;
    // The same for PostgreSQL: TLS, authentication and settings are the operator's to fix.
    match endpoint.connect("relay-check").await {
        Ok(_) => {}
        Err(e) if matches!(e.failure(), PgFailure::Tls | PgFailure::Auth | PgFailure::Config) => {
            return Err(format!("--pg: {e}"))
        }
        Err(e) => tracing::warn!(error = %e, "PostgreSQL not reachable yet; the relay retries"),
    }
    let record = Arc::new(PgRecord::new(&endpoint, tables));

    // Bind before starting, so a port in use is reported and nothing has been touched yet.
    let listener = match command.status_listen {
        Some(addr) => {
            Some(tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?)
        }
        None => None,
    };

    let relay = Arc::new(Relay::start(Box::new(source), record, log, RelayOptions::default()));
    tracing::info!(
        slot = %command.source.slot,
        publication = %command.source.publication,
        log_store = kind,
        "relay started"
    );

    let (stop_http, http_stopped) = tokio::sync::oneshot::channel::<()>();
    let server = listener.map(|listener| {
        if let Ok(addr) = listener.local_addr() {
            tracing::info!(%addr, "status at GET /status");
        }
        let app = Router::new()
            .route("/status", get(status))
            .with_state(Arc::new(StatusState { relay: relay.clone(), log_store: kind }));
        tokio::spawn(async move {
            let served = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = http_stopped.await;
            });
            if let Err(e) = served.await {
                tracing::warn!(error = %e, "status server failed");
            }
        })
    });

    shutdown.await;
    let _ = stop_http.send(());
    if let Some(server) = server {
        let _ = server.await;
    }
    match Arc::try_unwrap(relay) {
        Ok(relay) => relay.stop().await,
        // Only the status server shares it, and it has ended; kept as a safe fallback.
        Err(_) => tracing::warn!("status server still holds the relay; exiting without a graceful stop"),
    }
    Ok(())
}
