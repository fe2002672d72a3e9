//! `twoplane serve`: wire the database, the plane, the live relay between instances (Redis:
//! [`LiveRelayConfig`]; not the commit-log relay of `twoplane relay`, which is [`crate::relay`]),
//! the sweeper, the routes and the listener together.
//!
//! Startup checks every piece of configuration before serving anything, so a bad `--db`, an
//! unreachable `--pg` or `--redis`, or a port in use fails at once with one sentence
//! ([`ServeError`]) instead of after the first request.
//!
//! One instance (SQLite, no relay) marks at startup every message an earlier process left
//! `streaming` as `interrupted`, as it always did. Several instances (`--pg` or `--redis`) must
//! not: another instance may be producing those rows right now. There every row names its
//! producer (the `host` column is mapped, written with this instance's host id), and a
//! [`Sweeper`] holds this host's lease, releases only this host id's leftovers at start, and
//! marks `interrupted` the rows of hosts whose lease expired. It starts before the plane can
//! open a stream.
//!
//! Shutdown (SIGTERM or Ctrl-C) drains the plane first, sealing every live stream
//! `interrupted` so readers get their `end`, and waiting (bounded) for the relay to write those
//! `end` frames out for readers on other instances; then the sweeper stops and gives its lease up;
//! only then does the listener close and open connections finish.

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use twoplane_redis::{connect_relay, RedisRelayOptions, Topology};
use twoplane_stream::{
    redact_url, PgClient, PgEndpoint, Plane, PlaneOptions, Relay, RelayErrorHook, Sweeper, SweeperHandle,
    SweeperOptions, DEFAULT_LEASE_TTL_MS, DEFAULT_PG_POOL_SIZE, DEFAULT_SWEEP_INTERVAL_MS,
};

use crate::access::Access;
use crate::assets::PackageSource;
use crate::demo::{self, Pace};
use crate::http::{sse_router, SseConfig};
use crate::server::{self, HttpConfig};
use crate::store::Database;

/// Where the durable plane lives. `Debug` shows the URL redacted.
#[derive(Clone, PartialEq, Eq)]
pub enum Store {
    /// An SQLite file (WAL mode), created when missing.
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL; the server is shared by every instance.
    Postgres(String),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Store {
    fn describe(&self) -> String {
        match self {
            Store::Sqlite(path) => format!("sqlite:{}", path.display()),
            Store::Postgres(url) => redact_url(url),
        }
    }
}

/// The live relay between instances (Redis: frames of streams hosted elsewhere). `Debug` shows the
/// URL redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct LiveRelayConfig {
    pub url: String,
    pub topology: Topology,
    /// A relayed stream silent this long ends its readers with `stale` (the adapter's
    /// `idle_timeout_ms`); `None` keeps the adapter's default.
    pub idle_ms: Option<u64>,
    /// A relayed join that receives nothing at all this long ends with `absent` (the adapter's
    /// `first_frame_timeout_ms`); `None` keeps the adapter's default.
    pub first_frame_ms: Option<u64>,
    /// Trusted CA certificates (PEM) for a `rediss://` URL; `None`: the system's roots.
    pub ca_file: Option<PathBuf>,
}

impl std::fmt::Debug for LiveRelayConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveRelayConfig")
            .field("url", &redact_url(&self.url))
            .field("topology", &self.topology)
            .field("idle_ms", &self.idle_ms)
            .field("first_frame_ms", &self.first_frame_ms)
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

/// The store [`prepare`] opens, as checked: an SQLite file, or a parsed PostgreSQL endpoint.
enum Opening<'a> {
    Sqlite(&'a Path),
    Postgres(Box<PgEndpoint>),
}

/// Everything `twoplane serve` is configured with.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub demo: bool,
    pub listen: SocketAddr,
    pub store: Store,
    /// The browser package, served at `/pkg/twoplane/` (demo only).
    pub package: PackageSource,
    pub keep_alive: Duration,
    /// The relay; `None`: readers of streams hosted elsewhere get `absent`.
    pub relay: Option<LiveRelayConfig>,
    /// This instance's host id (several instances only); `None`: [`default_host_id`].
    pub host_id: Option<String>,
    /// Lease time to live (several instances only); `None`: 15000.
    pub lease_ttl_ms: Option<u64>,
    /// Renew-and-sweep period (several instances only); `None`: 5000.
    pub sweep_interval_ms: Option<u64>,
    /// Grace period after which host-less `streaming` rows are released (several instances
    /// only); `None`: never.
    pub release_hostless_after_ms: Option<u64>,
    /// How fast the demo's model talks.
    pub demo_pace: Pace,
    /// Producer secret, read-token secret, open reads (crate::access).
    pub access: Access,
    /// Bounds of the producer API.
    pub producer_limits: crate::producer::Limits,
    /// PostgreSQL connection settings that are not in the URL.
    pub postgres: PgSettings,
    /// Whether a connection whose first request subscribes is answered by the direct SSE path
    /// (`crate::sse_conn`); `false` serves every request through hyper.
    pub direct_sse: bool,
    /// Whether per-delta appends are answered before the router (`crate::producer`'s append
    /// shortcut, [`crate::server::Shortcut`]); `false` routes them like every other request.
    pub append_shortcut: bool,
    /// The connection bounds (`None`: derived from the open-file limit, see
    /// [`crate::conn_limits::ConnLimitsConfig::for_open_files`]).
    pub conn_limits: Option<crate::conn_limits::ConnLimitsConfig>,
    /// Most subscribers of one stream, and from one address (`None`: half of the subscriber
    /// bound each, see [`crate::conn_limits::ConnLimitsConfig::subscriber_caps`]).
    pub max_subscribers_per_stream: Option<usize>,
    pub max_subscribers_per_ip: Option<usize>,
    /// How long a response may take no byte before it is dropped.
    pub write_stall: Duration,
    /// What a producer's text may wait for the store, and how long a seal and the drain try.
    pub durability: Durability,
    /// Display-rate writes: at most one write per reader per this interval, what arrives
    /// meanwhile merged into it (`PlaneOptions::write_interval_ms`); zero turns it off.
    pub write_interval: Duration,
}

/// The bounds on text the store has not confirmed (docs/server.md, "What a 200 means").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Durability {
    /// Most code units one stream holds unconfirmed; past it an append gets `503 backpressure`.
    pub max_undurable_chars: u64,
    /// How long a stream takes appends after a checkpoint the store has not answered began;
    /// past it `503 backpressure` until a checkpoint lands.
    pub max_undurable_ms: u64,
    /// How long a seal retries a failing store before the stream ends at its durable length.
    pub seal_deadline_ms: u64,
    /// How long the drain at SIGTERM waits for the seals; `None`: the seal deadline plus 1 s.
    pub drain_timeout_ms: Option<u64>,
}

impl Default for Durability {
    fn default() -> Self {
        Durability {
            max_undurable_chars: twoplane_stream::DEFAULT_MAX_UNDURABLE_CHARS,
            max_undurable_ms: twoplane_stream::DEFAULT_MAX_UNDURABLE_MS,
            seal_deadline_ms: twoplane_stream::DEFAULT_SEAL_DEADLINE_MS,
            drain_timeout_ms: None,
        }
    }
}

/// PostgreSQL settings beside the URL (the URL's `sslmode` and `sslrootcert` say the rest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgSettings {
    /// Most connections of each pool (the checkpoint writer's and the server's own); the
    /// sweeper uses one more.
    pub pool_size: usize,
    /// Trusted CA certificates (PEM), as the URL's `sslrootcert` would name them.
    pub ca_file: Option<PathBuf>,
}

impl Default for PgSettings {
    fn default() -> Self {
        PgSettings { pool_size: DEFAULT_PG_POOL_SIZE, ca_file: None }
    }
}

/// `twoplane serve`'s display-rate write interval: a 60 Hz display's frame (a page paints no
/// faster), so a model faster than that costs each reader at most about 60 writes a second.
pub const DEFAULT_WRITE_INTERVAL_MS: u64 = 16;

impl ServeConfig {
    /// One instance on `store`, listening on an ephemeral loopback port, every other setting at
    /// the default `twoplane serve` gives it: no demo, no relay, no secrets (so loopback clients
    /// only). Embedders, tests and benchmarks start here and change what they need.
    pub fn local(store: Store) -> ServeConfig {
        ServeConfig {
            demo: false,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            store,
            package: PackageSource::Embedded,
            keep_alive: Duration::from_millis(twoplane_core::sse::DEFAULT_KEEP_ALIVE_MS),
            relay: None,
            host_id: None,
            lease_ttl_ms: None,
            sweep_interval_ms: None,
            release_hostless_after_ms: None,
            demo_pace: Pace::Natural,
            access: Access::default(),
            producer_limits: crate::producer::Limits::default(),
            postgres: PgSettings::default(),
            direct_sse: true,
            append_shortcut: true,
            conn_limits: None,
            max_subscribers_per_stream: None,
            max_subscribers_per_ip: None,
            write_stall: HttpConfig::default().write_stall,
            durability: Durability::default(),
            write_interval: Duration::from_millis(DEFAULT_WRITE_INTERVAL_MS),
        }
    }

    /// Whether this instance shares its streams with others: a PostgreSQL store or a relay.
    pub fn is_shared(&self) -> bool {
        matches!(self.store, Store::Postgres(_)) || self.relay.is_some()
    }

    /// The combinations that cannot work, refused with the flag names a user typed.
    pub fn check(&self) -> Result<(), ServeError> {
        self.checked().map(drop)
    }

    /// [`ServeConfig::check`], and the store to open with its `--pg` URL parsed (the CA file
    /// read), so that starting up parses it once.
    fn checked(&self) -> Result<Opening<'_>, ServeError> {
        let bad = |m: String| Err(ServeError(m));
        if !self.is_shared() {
            let given: Vec<&str> = [
                (self.host_id.is_some(), "--host-id"),
                (self.lease_ttl_ms.is_some(), "--lease-ttl-ms"),
                (self.sweep_interval_ms.is_some(), "--sweep-interval-ms"),
                (self.release_hostless_after_ms.is_some(), "--release-hostless-after-ms"),
            ]
            .into_iter()
            .filter_map(|(set, name)| set.then_some(name))
            .collect();
            if !given.is_empty() {
                let verb = if given.len() == 1 { "applies" } else { "apply" };
                return bad(format!(
                    "{} only {verb} to several instances sharing one database: add --pg URL or --redis URL",
                    given.join(", ")
                ));
            }
        }
        if let Some(id) = &self.host_id {
            if id.trim().is_empty() || id.len() > 200 || id.chars().any(char::is_control) {
                return bad(format!(
                    "--host-id {id:?} is not usable: it must be 1 to 200 printable characters, unique among running instances"
                ));
            }
        }
        if let Some(limits) = &self.conn_limits {
            limits.check().map_err(ServeError)?;
        }
        if self.max_subscribers_per_stream == Some(0) || self.max_subscribers_per_ip == Some(0) {
            return bad("--max-subscribers-per-stream and --max-subscribers-per-ip must be at least 1".into());
        }
        let (ttl, interval) = self.lease();
        if interval == 0 {
            return bad("--sweep-interval-ms must be at least 1".into());
        }
        if interval.saturating_mul(2) > ttl {
            return bad(format!(
                "--sweep-interval-ms {interval} must be at most half of --lease-ttl-ms {ttl}: the lease is renewed once \
                 per sweep interval, and one late renewal must not let other instances take this host for dead"
            ));
        }
        if let Some(relay) = &self.relay {
            if relay.idle_ms == Some(0) || relay.first_frame_ms == Some(0) {
                return bad("--relay-idle-ms and --relay-first-frame-ms must be at least 1".into());
            }
        }
        self.access.check_listen(self.listen).map_err(ServeError)?;
        let opening = match &self.store {
            Store::Postgres(url) => Opening::Postgres(Box::new(
                PgEndpoint::parse(url, self.postgres.ca_file.as_deref())
                    .map_err(|e| ServeError(format!("--pg: {e}")))?,
            )),
            Store::Sqlite(_) if self.postgres.ca_file.is_some() => {
                return bad("--pg-ca-file applies to --pg only".into())
            }
            Store::Sqlite(path) => Opening::Sqlite(path),
        };
        if self.postgres.pool_size == 0 {
            return bad("--pg-pool-size must be at least 1".into());
        }
        Ok(opening)
    }

    /// The lease time to live and the sweep interval, defaults applied.
    fn lease(&self) -> (u64, u64) {
        (self.lease_ttl_ms.unwrap_or(DEFAULT_LEASE_TTL_MS), self.sweep_interval_ms.unwrap_or(DEFAULT_SWEEP_INTERVAL_MS))
    }
}

/// A host id unique among running processes: `<hostname>-<pid>-<random>`. Readable in the
/// `host` column (which machine, which process), and unique even when a pid is reused.
pub fn default_host_id() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    // RandomState is seeded from the OS per process: randomness without a dependency.
    let mut h = RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    format!("{hostname}-{}-{:08x}", std::process::id(), h.finish() as u32)
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

/// Resolves on SIGTERM or Ctrl-C (SIGINT), whose handlers it installs when called.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    // The handlers are installed here, when this is called, not when the future is first
    // polled: `run` polls it only once it serves, after the `listening` line, and a SIGTERM sent
    // as soon as that line appears (a supervisor's, a test's) would otherwise meet the default
    // action and kill the process instead of draining it. Call it inside the runtime.
    #[cfg(unix)]
    let handlers = {
        use tokio::signal::unix::{signal, SignalKind};
        signal(SignalKind::terminate()).and_then(|term| Ok((term, signal(SignalKind::interrupt())?)))
    };
    async move {
        #[cfg(unix)]
        match handlers {
            Ok((mut term, mut int)) => {
                tokio::select! {
                    _ = term.recv() => tracing::info!(signal = "SIGTERM", "shutting down"),
                    _ = int.recv() => tracing::info!(signal = "SIGINT", "shutting down"),
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch SIGTERM; only Ctrl-C stops the server");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// A server that is bound and ready, before it starts serving (tests bind port 0 and read
/// [`Running::addr`]).
pub struct Running {
    pub addr: SocketAddr,
    pub plane: Plane,
    pub stats: Arc<crate::http::SseStats>,
    /// This instance's host id when it shares its database (`None`: one instance).
    pub host_id: Option<String>,
    sweeper: Option<SweeperHandle>,
    listener: tokio::net::TcpListener,
    router: Router,
    http: HttpConfig,
    subscriber_caps: crate::conn_limits::SubscriberCapsConfig,
}

/// Open the database, connect the relay, bind the listener, start the sweeper and build the
/// plane; fails with a readable sentence.
pub async fn prepare(config: &ServeConfig) -> Result<Running, ServeError> {
    let opening = config.checked()?;
    let shared = config.is_shared();
    let db = match &opening {
        Opening::Sqlite(path) => Database::open_sqlite(path, shared).await,
        Opening::Postgres(endpoint) => Database::open_postgres(endpoint, config.postgres.pool_size).await,
    }
    .map_err(ServeError)?;
    if !shared {
        let swept = db.sweep_streaming().await.map_err(ServeError)?;
        if swept > 0 {
            tracing::warn!(count = swept, "messages left streaming by an earlier run were marked interrupted");
        }
    }
    // One hook for every relay failure, whether the plane saw it (publish, attach, frames) or
    // the adapter's background writer did after `publish` returned.
    let relay_hook: RelayErrorHook = Arc::new(|info, error| {
        tracing::warn!(stream_id = ?info.stream_id, phase = info.phase.as_str(), error = %error, "relay error");
    });
    let relay = match &config.relay {
        Some(relay) => Some(connect_redis(relay, relay_hook.clone()).await?),
        None => None,
    };
    let listener = server::bind(config.listen).await.map_err(ServeError)?;
    let addr = listener.local_addr().map_err(|e| ServeError(format!("cannot read the listening address: {e}")))?;

    let host_id = shared.then(|| config.host_id.clone().unwrap_or_else(default_host_id));
    // Before the plane exists, so it is covered from its first stream: the lease is taken and
    // this host id's leftovers from an earlier process are released.
    let sweeper = match &host_id {
        Some(id) => Some(start_sweeper(config, &opening, &db, id).await?),
        None => None,
    };
    let mut options = PlaneOptions::default().with_authorizer(config.access.authorizer());
    options.host_id = host_id.clone();
    options.max_undurable_chars = config.durability.max_undurable_chars;
    options.max_undurable_ms = config.durability.max_undurable_ms;
    options.seal_deadline_ms = config.durability.seal_deadline_ms;
    options.drain_seal_ms = config.durability.drain_timeout_ms;
    options.write_interval_ms = config.write_interval.as_millis().try_into().unwrap_or(u64::MAX);
    let (cancel_hook, cancels) = crate::producer::cancel_feed();
    options.on_cancel = Some(cancel_hook);
    if let Some(relay) = relay {
        options.relay = Some(relay);
        options.on_relay_error = Some(relay_hook);
    }
    let target = db.target();
    let plane = match Plane::new(options, target) {
        Ok(plane) => plane,
        Err(e) => {
            if let Some(sweeper) = sweeper {
                let _ = sweeper.stop(true).await;
            }
            return Err(ServeError(format!("cannot build the stream plane: {e}")));
        }
    };
    let conn_limits = config
        .conn_limits
        .unwrap_or_else(|| crate::conn_limits::ConnLimitsConfig::for_open_files(crate::server::open_file_limit()));
    let mut caps = conn_limits.subscriber_caps();
    caps.per_stream = config.max_subscribers_per_stream.unwrap_or(caps.per_stream);
    caps.per_ip = config.max_subscribers_per_ip.unwrap_or(caps.per_ip);
    let sse = SseConfig {
        keep_alive: config.keep_alive,
        max_subscribers: Some(conn_limits.max_subscribers()),
        subscriber_caps: Some(crate::conn_limits::SubscriberCaps::new(caps)),
        ..SseConfig::default()
    };
    let reader_caps = sse.subscriber_caps.clone();
    let max_subscribers = conn_limits.max_subscribers();
    let ui_sse = sse.clone();
    let (sse_routes, stats) = sse_router(plane.clone(), sse);
    let sse_routes = crate::access::reader_routes(sse_routes, &config.access);
    let (producer_routes, append_shortcut) = crate::producer::routes(
        plane.clone(),
        db.clone(),
        Arc::new(config.access.clone()),
        config.producer_limits.clone(),
        cancels,
    );
    let ui_routes =
        crate::ui_stream::routes(plane.clone(), db.clone(), Arc::new(config.access.clone()), ui_sse, stats.clone());
    let limits = crate::conn_limits::ConnLimits::new(conn_limits);
    crate::metrics::install();
    let probes = crate::metrics::Sources {
        plane: plane.clone(),
        stats: stats.clone(),
        limits: limits.clone(),
        subscribers: reader_caps.clone(),
        max_subscribers,
        db: db.clone(),
    };
    let mut router = Router::new()
        .merge(crate::metrics::routes(probes, Arc::new(config.access.clone())))
        .merge(sse_routes)
        .merge(producer_routes)
        .merge(ui_routes);
    if config.demo {
        if let Some(problem) = config.package.problem() {
            // The page would otherwise fail in the browser's console, where nobody looks.
            tracing::warn!("the chat page will not load: {problem}");
        }
        router = router.merge(demo::routes(plane.clone(), db.clone(), &config.package, config.demo_pace));
    }
    // A path or method no route has is a refusal like any other (JSON with a kind); a handler
    // that panics answers `500 internal` instead of dropping the connection. Outermost, the
    // refusal counter, so that every refusal is counted whichever route (or layer) answered it.
    //
    // The three wrap the router once, as one service, rather than through `Router::layer`, which
    // wraps every route in each of them: a request then cloned its route's whole stack of boxed
    // layers (two dozen allocations per request, a tenth of the server's user instructions on a
    // request per delta; callgrind). Wrapped once, a request clones the router's `Arc`.
    let routes = router.fallback(crate::refusal::not_found);
    let router = Router::new().fallback_service(
        tower::ServiceBuilder::new()
            .layer(axum::middleware::from_fn(crate::metrics::count_refusals))
            .layer(axum::middleware::from_fn(crate::refusal::method_not_allowed))
            .layer(tower_http::catch_panic::CatchPanicLayer::custom(crate::refusal::panicked))
            .service(routes),
    );
    let http = HttpConfig {
        direct_sse_path: config.direct_sse.then(|| crate::http::STREAM_PATH.to_owned()),
        conn_limits,
        limits: Some(limits),
        write_stall: config.write_stall,
        shortcut: config.append_shortcut.then_some(append_shortcut),
        ..HttpConfig::default()
    };
    Ok(Running { addr, plane, stats, host_id, sweeper, listener, router, http, subscriber_caps: caps })
}

async fn connect_redis(relay: &LiveRelayConfig, hook: RelayErrorHook) -> Result<Arc<dyn Relay>, ServeError> {
    let mut options = RedisRelayOptions { on_error: Some(hook), ..RedisRelayOptions::default() };
    if let Some(ms) = relay.idle_ms {
        options.idle_timeout_ms = ms;
    }
    if let Some(ms) = relay.first_frame_ms {
        options.first_frame_timeout_ms = ms;
    }
    options.tls_ca_file = relay.ca_file.clone();
    // The adapter's errors show the URL only through redact_url (crates/twoplane-redis).
    connect_relay(&relay.url, relay.topology, options, None)
        .await
        .map_err(|e| ServeError(format!("cannot start the Redis relay: {e}")))
}

async fn start_sweeper(
    config: &ServeConfig,
    opening: &Opening<'_>,
    db: &Database,
    host_id: &str,
) -> Result<SweeperHandle, ServeError> {
    let (lease_ttl_ms, interval_ms) = config.lease();
    let options = SweeperOptions {
        lease_ttl_ms,
        interval_ms,
        release_hostless_after_ms: config.release_hostless_after_ms,
        ..SweeperOptions::new(host_id)
    };
    let tables = db.tables();
    let sweeper = match opening {
        Opening::Sqlite(path) => Sweeper::sqlite(path, &tables, options),
        Opening::Postgres(endpoint) => {
            let db = PgClient::from_endpoint(PgEndpoint::clone(endpoint), "sweeper", 1);
            Sweeper::postgres_with(db, &tables, options).await
        }
    }
    .map_err(|e| ServeError(format!("cannot start the host lease sweeper: {e}")))?;
    sweeper.start().await.map_err(|e| ServeError(format!("cannot take the host lease: {e}")))
}

impl Running {
    /// Serve until `shutdown` resolves; then drain the plane, give the lease up, and close.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
        let plane = self.plane.clone();
        let sweeper = self.sweeper;
        let drained = async move {
            shutdown.await;
            let report = plane.drain().await;
            tracing::info!(sealed = report.sealed.len(), failed = report.failed.len(), "stream plane drained");
            for (id, e) in &report.failed {
                tracing::warn!(stream_id = ?id, error = %e, "a stream's final seal did not land");
            }
            // The drain waited for the relay to write out the `end` frames it queued, so readers
            // on other instances end now rather than `stale` after their idle timeout.
            match &report.relay_flush {
                Some(Ok(())) => tracing::info!("relay queue written out"),
                Some(Err(e)) => tracing::warn!(error = %e, "readers on other instances may end stale"),
                None => {}
            }
            // After the drain, so nothing of this host is left streaming when the lease goes; a
            // seal that failed above is released by the next sweep of any instance.
            if let Some(sweeper) = sweeper {
                match sweeper.stop(true).await {
                    Ok(()) => tracing::info!("host lease released"),
                    Err(e) => tracing::warn!(error = %e, "cannot release the host lease; it will expire on its own"),
                }
            }
        };
        server::serve(self.listener, self.router, self.http, drained)
            .await
            .map_err(|e| ServeError(format!("the server stopped: {e}")))
    }
}

/// `twoplane serve`.
pub async fn run(config: ServeConfig, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
    // Before the limits are derived from it: connections are most of what the process opens.
    let (before, now) = crate::server::raise_open_file_limit();
    let running = prepare(&config).await?;
    let limits = running.http.conn_limits;
    tracing::info!(
        open_files = now,
        raised_from = before,
        max_connections = limits.max_connections,
        per_address = limits.max_per_ip,
        waiting_heads = limits.max_waiting,
        subscribers = limits.max_subscribers(),
        subscribers_per_stream = running.subscriber_caps.per_stream,
        subscribers_per_ip = running.subscriber_caps.per_ip,
        reserved = limits.reserved,
        "connection limits"
    );
    // Before the `listening` line: supervisors and tests wait for that line and may stop reading
    // the log there.
    for line in config.access.describe(running.addr) {
        tracing::info!("{line}");
    }
    tracing::info!(
        addr = %running.addr,
        url = %format!("http://{}/", running.addr),
        store = %config.store.describe(),
        relay = %config.relay.as_ref().map_or("none", |r| r.topology.as_str()),
        host = %running.host_id.as_deref().unwrap_or("-"),
        demo = config.demo,
        "listening"
    );
    running.serve(shutdown).await?;
    tracing::info!("stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_passwords() {
        let store = Store::Postgres("postgresql://u:hunter22@h/db".into());
        assert_eq!(format!("{store:?}"), "postgresql://u:***@h/db");
        let relay = LiveRelayConfig {
            url: "redis://:hunter22@h/".into(),
            topology: Topology::Log,
            idle_ms: None,
            first_frame_ms: None,
            ca_file: None,
        };
        assert!(!format!("{relay:?}").contains("hunter22"));
        let command = crate::relay::RelayCommand {
            pg: "postgresql://u:hunter22@h/db".into(),
            pg_ca_file: None,
            log: crate::relay::LogTarget::Redis("redis://:hunter22@h/".into()),
            source: Default::default(),
            status_listen: None,
        };
        assert!(!format!("{command:?}").contains("hunter22"));
        // An S2 token may be the URL's user, which no password rule would hide.
        let s2 = crate::relay::LogTarget::S2("https://hunter22@aws.s2.dev".into(), Default::default());
        assert_eq!(format!("{s2:?}"), r#"S2("https://aws.s2.dev", S2Options { ca_file: None, basin_url: None })"#);
    }
}
