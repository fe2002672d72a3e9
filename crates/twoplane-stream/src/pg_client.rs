//! A bounded pool of PostgreSQL connections that opens them on first use and replaces the ones
//! that broke.
//!
//! Guarantees: at most `size` connections are open at once (deadpool-postgres); each
//! [`PgSession`] has one of them to itself until it is dropped, so statements sent through a
//! session never interleave with another's; a connection whose socket closed is discarded when
//! it comes back to the pool or is next taken, and a new one is opened in its place (nothing is
//! retried here: the caller decides, with its own [`crate::Backoff`], and twoplane's statements
//! are idempotent); statements prepared through [`PgSession::prepare_cached`] are kept per
//! connection and forgotten with it. Connections are secured as the URL's `sslmode` says
//! ([`crate::PgEndpoint`]); a failure to connect is a [`PgConnectError`] that names the server
//! and the cause and never holds the password.

use deadpool_postgres::{Connect, Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod};
use futures::future::BoxFuture;
use tokio_postgres::{Client, Statement};

use twoplane_pg::{PgConnectError, PgEndpoint, PgFailure};

/// How many connections a pool holds at most when the caller does not say.
pub const DEFAULT_PG_POOL_SIZE: usize = 4;

/// A pool of reconnecting PostgreSQL connections (see the module guarantees). Cloning shares the
/// pool.
#[derive(Clone)]
pub struct PgClient {
    /// Names these connections in the logs ("checkpoints", "sweeper", ...).
    name: &'static str,
    /// The pool, or why the URL could not be used (reported by every [`PgClient::lock`]).
    pool: Result<(Pool, PgEndpoint), PgConnectError>,
}

/// One connection taken from the pool; it goes back when dropped.
pub struct PgSession {
    object: Object,
}

impl PgClient {
    /// A pool of [`DEFAULT_PG_POOL_SIZE`] connections. Does not connect yet: the first
    /// [`lock`](PgClient::lock) does.
    pub fn new(url: &str, name: &'static str) -> PgClient {
        PgClient::with_pool_size(url, name, DEFAULT_PG_POOL_SIZE)
    }

    /// A pool of at most `size` connections (at least one).
    pub fn with_pool_size(url: &str, name: &'static str, size: usize) -> PgClient {
        let pool = PgEndpoint::parse(url, None).map(|endpoint| (build_pool(&endpoint, name, size), endpoint));
        PgClient { name, pool }
    }

    /// A pool on an endpoint already parsed (with its TLS settings).
    pub fn from_endpoint(endpoint: PgEndpoint, name: &'static str, size: usize) -> PgClient {
        PgClient { name, pool: Ok((build_pool(&endpoint, name, size), endpoint)) }
    }

    /// The endpoint, or why the URL is unusable.
    pub fn endpoint(&self) -> Result<&PgEndpoint, &PgConnectError> {
        self.pool.as_ref().map(|(_, endpoint)| endpoint)
    }

    /// The most connections this pool opens.
    pub fn max_size(&self) -> usize {
        self.pool.as_ref().map_or(0, |(pool, _)| pool.status().max_size)
    }

    /// A connection of the pool, opened (again) when none is idle and fewer than the maximum are
    /// open; waits for one to come back when all are in use.
    pub async fn lock(&self) -> Result<PgSession, PgConnectError> {
        let (pool, endpoint) = self.pool.as_ref().map_err(Clone::clone)?;
        match pool.get().await {
            Ok(object) => Ok(PgSession { object }),
            Err(PoolError::Backend(e)) => {
                let error = endpoint.error(&e);
                tracing::debug!(connection = self.name, error = %error, "postgres connection failed");
                Err(error)
            }
            Err(other) => Err(PgConnectError::new(endpoint.server(), PgFailure::Other, other.to_string())),
        }
    }
}

/// The pool's connector: every connection is opened by [`PgEndpoint`] (its TLS, its session
/// settings, its log line when the connection ends).
struct EndpointConnect {
    endpoint: PgEndpoint,
    name: &'static str,
}

impl Connect for EndpointConnect {
    fn connect(
        &self,
        _config: &tokio_postgres::Config,
    ) -> BoxFuture<'_, Result<(Client, tokio::task::JoinHandle<()>), tokio_postgres::Error>> {
        Box::pin(self.endpoint.open(self.name))
    }
}

fn build_pool(endpoint: &PgEndpoint, name: &'static str, size: usize) -> Pool {
    // `Fast`: a connection is checked with `is_closed` when it is taken; a server restart closes
    // every socket, so that is what catches a lost connection (a query on a half-dead one fails
    // and the caller's retry gets a fresh one).
    let manager = Manager::from_connect(
        endpoint.config().clone(),
        EndpointConnect { endpoint: endpoint.clone(), name },
        ManagerConfig { recycling_method: RecyclingMethod::Fast },
    );
    Pool::builder(manager)
        .max_size(size.max(1))
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .build()
        .expect("a pool with a runtime and no hooks always builds")
}

impl PgSession {
    pub fn client(&self) -> &Client {
        &self.object
    }

    /// Mutable, for transactions.
    pub fn client_mut(&mut self) -> &mut Client {
        &mut self.object
    }

    /// `sql` prepared on this connection, once.
    pub async fn prepare_cached(&mut self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        self.object.prepare_cached(sql).await
    }
}
