//! `twoplane serve`: wire the database, the plane, the routes and the listener together.
//!
//! Startup checks every piece of configuration before serving anything, so a bad `--db` or a
//! port in use fails at once with one sentence ([`ServeError`]) instead of after the first
//! request. Shutdown (SIGTERM or Ctrl-C) drains the plane first, sealing every live stream
//! `interrupted` so readers get their `end`, and only then closes the listener and lets open
//! connections finish.

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use twoplane_stream::{AllowAll, Plane, PlaneOptions};

use crate::demo::{self, DemoDb};
use crate::http::{sse_router, SseConfig};
use crate::server::{self, HttpConfig};

/// Everything `twoplane serve` is configured with.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub demo: bool,
    pub listen: SocketAddr,
    pub db: PathBuf,
    /// The `npm/twoplane` directory, served at `/pkg/twoplane/` (demo only).
    pub package_dir: PathBuf,
    pub keep_alive: Duration,
}

/// A configuration or startup failure, phrased for the person who typed the command.
#[derive(Debug)]
pub struct ServeError(pub String);

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServeError {}

/// `npm/twoplane` in the source tree this crate was built from.
pub fn default_package_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../npm/twoplane");
    dir.canonicalize().unwrap_or(dir)
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => tracing::info!(signal = "SIGTERM", "shutting down"),
                    _ = tokio::signal::ctrl_c() => tracing::info!(signal = "SIGINT", "shutting down"),
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch SIGTERM; only Ctrl-C stops the server");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A server that is bound and ready, before it starts serving (tests bind port 0 and read
/// [`Running::addr`]).
pub struct Running {
    pub addr: SocketAddr,
    pub plane: Plane,
    pub stats: Arc<crate::http::SseStats>,
    listener: tokio::net::TcpListener,
    router: Router,
}

/// Open the database, build the plane and bind the listener; fails with a readable sentence.
pub async fn prepare(config: &ServeConfig) -> Result<Running, ServeError> {
    let db = DemoDb::open(&config.db).await.map_err(ServeError)?;
    let swept = db.sweep_streaming().await.map_err(ServeError)?;
    if swept > 0 {
        tracing::warn!(count = swept, "messages left streaming by an earlier run were marked interrupted");
    }
    let target = db.target().map_err(ServeError)?;
    let options = PlaneOptions::default().with_authorizer(Arc::new(AllowAll));
    let plane = Plane::new(options, target).map_err(|e| ServeError(format!("cannot build the stream plane: {e}")))?;
    let sse = SseConfig { keep_alive: config.keep_alive, ..SseConfig::default() };
    let (sse_routes, stats) = sse_router(plane.clone(), sse);
    let mut router = Router::new().route("/healthz", get(|| async { "ok\n" })).merge(sse_routes);
    if config.demo {
        check_package_dir(&config.package_dir);
        router = router.merge(demo::routes(plane.clone(), db.clone(), &config.package_dir));
    }
    let listener = server::bind(config.listen).await.map_err(ServeError)?;
    let addr = listener.local_addr().map_err(|e| ServeError(format!("cannot read the listening address: {e}")))?;
    Ok(Running { addr, plane, stats, listener, router })
}

impl Running {
    /// Serve until `shutdown` resolves; then drain the plane and close.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
        let plane = self.plane.clone();
        let drained = async move {
            shutdown.await;
            let report = plane.drain().await;
            tracing::info!(sealed = report.sealed.len(), failed = report.failed.len(), "stream plane drained");
            for (id, e) in &report.failed {
                tracing::warn!(stream_id = %id, error = %e, "a stream's final seal did not land");
            }
        };
        server::serve(self.listener, self.router, HttpConfig::default(), drained)
            .await
            .map_err(|e| ServeError(format!("the server stopped: {e}")))
    }
}

/// `twoplane serve`.
pub async fn run(config: ServeConfig, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
    let running = prepare(&config).await?;
    tracing::info!(
        addr = %running.addr,
        url = %format!("http://{}/", running.addr),
        db = %config.db.display(),
        demo = config.demo,
        "listening"
    );
    if !config.demo {
        tracing::info!("no producer runs in this process without --demo: subscribers get `absent` until one does");
    }
    running.serve(shutdown).await?;
    tracing::info!("stopped");
    Ok(())
}

/// The demo page imports the browser package from this directory; say plainly when it is not
/// there (the page would otherwise fail in the browser console, where nobody looks).
fn check_package_dir(dir: &Path) {
    let entry = dir.join("src/index.browser.js");
    let wasm = dir.join("wasm");
    if !entry.is_file() {
        tracing::warn!(dir = %dir.display(), "the browser package is missing: the chat page will not load (pass --assets DIR)");
    } else if !wasm.is_dir() {
        tracing::warn!(dir = %dir.display(), "the browser package has no wasm build: run scripts/build-wasm.sh");
    }
}
