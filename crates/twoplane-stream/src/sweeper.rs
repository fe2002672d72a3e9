//! Host leases and the sweeper: several instances sharing one database release the streams of an
//! instance that died.
//!
//! A producer that dies without sealing (SIGKILL, a lost machine) leaves its message rows
//! `streaming` forever: readers that fell back to the store wait for a seal that never comes.
//! Every instance therefore holds a lease, a row `(host, expires_at)` in a lease table of the
//! shared database ([`DEFAULT_HOST_LEASE_TABLE`]), renewed on every tick; and every instance runs
//! the sweep, which marks `interrupted` each `streaming` row whose `host` column names a host
//! whose lease has expired. After the sweep the row says `interrupted` and its body plus its
//! chunk rows assemble to the durable prefix (the sweep changes the status only), so readers
//! converge on the store.
//!
//! Guarantees:
//! - Only rows whose status is exactly `streaming` change, and only their status; rows of hosts
//!   whose lease is live, and rows of hosts that never took a lease, are never touched (the SQL
//!   is the core's [`HostLeaseSql`]; expiry is judged by the database's clock).
//! - [`Sweeper::start`] takes the lease (and, by default, releases rows a previous process with
//!   the same host id left `streaming`) before it returns, so a plane opened afterwards is
//!   covered from its first stream; then one task renews the lease and sweeps every
//!   `interval_ms`. Store errors are logged and retried on the next tick, never fatal.
//! - Options that cannot work are refused at construction: a lease that would expire before the
//!   next renewal is a self-inflicted outage.
//! - Host-less `streaming` rows (an older single-instance run wrote them, or a plane without a
//!   host column) are left alone by default, since a live lease-less producer may own them. With
//!   [`SweeperOptions::release_hostless_after_ms`] every tick adopts them under a fresh
//!   pseudo-host whose lease ends that long after (by the database's clock), so the ordinary
//!   sweep releases them once the grace period is over ([`HostLeaseSql::adopt_hostless`]).
//!
//! Fencing: the sweep ends a producer's claim on its row (status off `streaming`), and every
//! later checkpoint, chunk insert and seal of that producer is conditional on the claim
//! (docs/contract.md §6), so the database refuses them and the producer stops with `fenced`.
//! The row keeps exactly what it held at the sweep.
//!
//! The sweep filters on the status and host columns; on a large message table give it an index,
//! for example a partial one: `CREATE INDEX ... ON messages (host) WHERE status = 'streaming'`.
//!
//! Deployment rules that follow: every instance that produces streams on the shared database
//! passes its plane's host token ([`crate::Plane::host_token`]) as the sweeper's `host_id`, and
//! host ids are unique among running processes (the host token is the fencing token: two
//! processes with one id would pass each other's fence). The lease time to live should exceed
//! any pause a healthy process can take (a long stall, a database failover): an instance whose
//! lease lapses while it still runs has its streams released under it; they end for its readers
//! with `stale`, and readers everywhere converge on the store's `interrupted` row.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio_util::sync::{CancellationToken, DropGuard};
use twoplane_core::sql::{Dialect, HostLeaseSql, MappedSql, StreamTables};

pub use twoplane_core::sql::DEFAULT_HOST_LEASE_TABLE;

use crate::error::PlaneError;
use crate::exec::{Executor, Rows};
use crate::pg_client::PgClient;
use crate::schema::migrate;
use crate::sqlite_shared::SqliteShared;

/// Default lease time to live: 15 s.
pub const DEFAULT_LEASE_TTL_MS: u64 = 15_000;
/// Default period of the renew-and-sweep tick: 5 s (three renewals per lease).
pub const DEFAULT_SWEEP_INTERVAL_MS: u64 = 5_000;
/// Default time an expired lease row is kept once nothing of its host is streaming: one day.
pub const DEFAULT_LEASE_RETENTION_MS: u64 = 24 * 60 * 60 * 1000;

/// Called with the keys of the rows a sweep released (a diagnostic, or a way to tell relayed
/// readers; a panicking hook is contained).
pub type SweptHook = Arc<dyn Fn(&[String]) + Send + Sync>;

/// Everything configurable about a sweeper. Build with [`SweeperOptions::new`] and struct update
/// syntax.
#[derive(Clone)]
pub struct SweeperOptions {
    /// This instance's host id: the token its plane writes into the `host` column.
    pub host_id: String,
    /// The lease table. Default [`DEFAULT_HOST_LEASE_TABLE`].
    pub lease_table: String,
    /// How long a renewal keeps the lease. Default 15000; at least twice `interval_ms`.
    pub lease_ttl_ms: u64,
    /// Period of the renew-and-sweep tick. Default 5000.
    pub interval_ms: u64,
    /// How long an expired lease row is kept after its host's last streaming row is gone.
    pub retention_ms: u64,
    /// At start, mark `interrupted` the rows this host id still holds as `streaming`: they were
    /// left by a previous process with the same id (this one has opened nothing yet). Default
    /// true; turn it off only if the plane may open streams before the sweeper starts.
    pub release_leftovers_on_start: bool,
    /// Release `streaming` rows whose host column is NULL once they have been seen for this
    /// long (milliseconds, by the database's clock). Default `None`: never, because such a row
    /// may belong to a live producer that takes no part in leasing; set it only when every
    /// producer on the database leases, and make it longer than any answer takes.
    pub release_hostless_after_ms: Option<u64>,
    pub on_swept: Option<SweptHook>,
}

impl SweeperOptions {
    pub fn new(host_id: impl Into<String>) -> SweeperOptions {
        SweeperOptions {
            host_id: host_id.into(),
            lease_table: DEFAULT_HOST_LEASE_TABLE.to_owned(),
            lease_ttl_ms: DEFAULT_LEASE_TTL_MS,
            interval_ms: DEFAULT_SWEEP_INTERVAL_MS,
            retention_ms: DEFAULT_LEASE_RETENTION_MS,
            release_leftovers_on_start: true,
            release_hostless_after_ms: None,
            on_swept: None,
        }
    }

    fn check(&self) -> Result<(), PlaneError> {
        if self.host_id.is_empty() {
            return Err(PlaneError::invalid_options(
                "the sweeper's host_id is empty: it must be the plane's host token",
            ));
        }
        if self.interval_ms == 0 {
            return Err(PlaneError::invalid_options("the sweeper's interval_ms must be at least 1"));
        }
        if self.lease_ttl_ms < self.interval_ms.saturating_mul(2) {
            return Err(PlaneError::invalid_options(format!(
                "lease_ttl_ms {} is shorter than two sweeper ticks ({} ms each): one late renewal would let \
                 other instances release this host's live streams",
                self.lease_ttl_ms, self.interval_ms
            )));
        }
        Ok(())
    }
}

impl std::fmt::Debug for SweeperOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SweeperOptions")
            .field("host_id", &self.host_id)
            .field("lease_table", &self.lease_table)
            .field("lease_ttl_ms", &self.lease_ttl_ms)
            .field("interval_ms", &self.interval_ms)
            .field("retention_ms", &self.retention_ms)
            .field("release_leftovers_on_start", &self.release_leftovers_on_start)
            .field("release_hostless_after_ms", &self.release_hostless_after_ms)
            .field("on_swept", &self.on_swept.is_some())
            .finish()
    }
}

/// Renews this host's lease and releases the rows of dead hosts. Cheap to clone.
#[derive(Clone)]
pub struct Sweeper {
    inner: Arc<Inner>,
}

struct Inner {
    /// Its own connection: a sweep must not queue behind the plane's checkpoints, nor they
    /// behind it.
    db: Executor,
    lease: HostLeaseSql,
    mapped: MappedSql,
    options: SweeperOptions,
}

/// What an error of a lease statement says it was doing.
const LEASE_WORK: &str = "running a lease statement";

impl Sweeper {
    /// A sweeper on PostgreSQL (its own connection, re-established after a loss). `tables` is the
    /// plane's mapping; its `host` column must be mapped.
    pub async fn postgres(url: &str, tables: &StreamTables, options: SweeperOptions) -> Result<Sweeper, PlaneError> {
        Sweeper::postgres_with(PgClient::with_pool_size(url, "sweeper", 1), tables, options).await
    }

    /// [`postgres`](Sweeper::postgres) through a client the caller built (its TLS settings); the
    /// sweeper uses one connection of it at a time.
    pub async fn postgres_with(
        db: PgClient,
        tables: &StreamTables,
        options: SweeperOptions,
    ) -> Result<Sweeper, PlaneError> {
        let (lease, mapped) = statements(tables, &options, Dialect::Postgres)?;
        drop(db.lock().await.map_err(pg_err("connecting"))?);
        Ok(Sweeper { inner: Arc::new(Inner { db: Executor::Postgres(Box::new(db)), lease, mapped, options }) })
    }

    /// A sweeper on a SQLite database file (its own connection; several processes on one machine
    /// may share the file).
    pub fn sqlite(
        path: impl AsRef<Path>,
        tables: &StreamTables,
        options: SweeperOptions,
    ) -> Result<Sweeper, PlaneError> {
        let (lease, mapped) = statements(tables, &options, Dialect::Sqlite)?;
        let conn = Connection::open(path).map_err(sqlite_err("opening the database"))?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(sqlite_err("setting the busy timeout"))?;
        let db = Executor::Sqlite(SqliteShared::new(conn));
        Ok(Sweeper { inner: Arc::new(Inner { db, lease, mapped, options }) })
    }

    pub fn options(&self) -> &SweeperOptions {
        &self.inner.options
    }

    /// Create the lease table if it does not exist (the core's shape, through the one runner:
    /// under the schema lock, so instances starting together do not race PostgreSQL's two-step
    /// `CREATE TABLE IF NOT EXISTS`).
    pub async fn create_lease_table(&self) -> Result<(), PlaneError> {
        migrate(&self.inner.db, vec![self.inner.lease.table().clone()]).await
    }

    /// Renew (or take) this host's lease for `lease_ttl_ms`.
    pub async fn heartbeat(&self) -> Result<(), PlaneError> {
        let o = &self.inner.options;
        self.inner.db.execute(self.inner.lease.heartbeat(&o.host_id, o.lease_ttl_ms), LEASE_WORK).await.map(drop)
    }

    /// Mark `interrupted` the `streaming` rows of every host whose lease expired; returns their
    /// keys.
    pub async fn sweep(&self) -> Result<Vec<String>, PlaneError> {
        keys(self.inner.db.query(self.inner.lease.sweep_expired(), "sweeping").await?)
    }

    /// With [`SweeperOptions::release_hostless_after_ms`] set: put every host-less `streaming`
    /// row under a fresh pseudo-host whose lease ends after the grace period, so a later
    /// [`Sweeper::sweep`] releases it; returns how many rows were adopted (0 when the option is
    /// unset). One transaction: a row never holds a pseudo-host without its lease.
    pub async fn adopt_hostless(&self) -> Result<u64, PlaneError> {
        let Some(grace_ms) = self.inner.options.release_hostless_after_ms else {
            return Ok(0);
        };
        let marker = hostless_marker(&self.inner.options.host_id);
        let [rows, lease] = self.inner.lease.adopt_hostless(&marker, grace_ms);
        let changed = self.inner.db.transact(vec![rows, lease], "adopting host-less rows").await?;
        Ok(changed[0])
    }

    /// Mark `interrupted` the rows this host id holds as `streaming` (what [`Sweeper::start`] does
    /// first, by default); returns how many changed. Only safe while this process hosts nothing.
    pub async fn release_leftovers(&self) -> Result<u64, PlaneError> {
        match self.inner.mapped.sweep_interrupted(&self.inner.options.host_id) {
            Some(statement) => self.inner.db.execute(statement, LEASE_WORK).await,
            None => Ok(0),
        }
    }

    /// Give the lease up (after the plane drained): the next sweep anywhere releases whatever
    /// this host still holds.
    pub async fn release(&self) -> Result<(), PlaneError> {
        self.inner.db.execute(self.inner.lease.release(&self.inner.options.host_id), LEASE_WORK).await.map(drop)
    }

    /// Delete lease rows of hosts long dead (see [`SweeperOptions::retention_ms`]).
    pub async fn prune(&self) -> Result<u64, PlaneError> {
        self.inner.db.execute(self.inner.lease.prune(self.inner.options.retention_ms), LEASE_WORK).await
    }

    /// Create the lease table, release this host id's leftovers (unless turned off), take the
    /// lease, sweep once, then renew and sweep every `interval_ms` on a spawned task until the
    /// handle is stopped or dropped. Call it before the plane opens its first stream.
    pub async fn start(self) -> Result<SweeperHandle, PlaneError> {
        self.create_lease_table().await?;
        if self.inner.options.release_leftovers_on_start {
            let n = self.release_leftovers().await?;
            if n > 0 {
                tracing::info!(host = %self.inner.options.host_id, rows = n, "released streams a previous process left open");
            }
        }
        self.heartbeat().await?;
        self.sweep_and_report().await;
        let stop = CancellationToken::new();
        let task = tokio::spawn(self.clone().run(stop.clone()));
        Ok(SweeperHandle { sweeper: self, stop: stop.drop_guard(), task })
    }

    async fn run(self, stop: CancellationToken) {
        let o = &self.inner.options;
        let interval = Duration::from_millis(o.interval_ms);
        let ttl = Duration::from_millis(o.lease_ttl_ms);
        let mut renewed = Instant::now();
        let mut lapse_reported = false;
        let mut pruned = Instant::now();
        loop {
            tokio::select! {
                // Stopped, or the handle dropped (its guard cancels): stop either way.
                () = stop.cancelled() => return,
                _ = tokio::time::sleep(interval) => {}
            }
            match self.heartbeat().await {
                Ok(()) => {
                    renewed = Instant::now();
                    lapse_reported = false;
                }
                Err(e) => {
                    tracing::warn!(host = %o.host_id, error = %e, "lease renewal failed");
                    if renewed.elapsed() >= ttl && !lapse_reported {
                        lapse_reported = true;
                        tracing::error!(
                            host = %o.host_id,
                            "the lease has lapsed: other instances may mark this host's live streams interrupted"
                        );
                    }
                }
            }
            self.sweep_and_report().await;
            // Pruning is housekeeping: once an hour (or per retention, if shorter) is plenty.
            let prune_every = Duration::from_millis(o.retention_ms.clamp(o.interval_ms, 3_600_000));
            if pruned.elapsed() >= prune_every {
                pruned = Instant::now();
                if let Err(e) = self.prune().await {
                    tracing::warn!(error = %e, "pruning old leases failed");
                }
            }
        }
    }

    async fn sweep_and_report(&self) {
        match self.adopt_hostless().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                rows = n,
                grace_ms = ?self.inner.options.release_hostless_after_ms,
                "streaming rows without a host: released after the grace period unless sealed first"
            ),
            Err(e) => tracing::warn!(error = %e, "adopting host-less rows failed"),
        }
        match self.sweep().await {
            Ok(keys) if keys.is_empty() => {}
            Ok(keys) => {
                tracing::info!(streams = ?keys, "released the streams of dead hosts (marked interrupted)");
                if let Some(hook) = &self.inner.options.on_swept {
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&keys))).is_err() {
                        tracing::error!("on_swept panicked");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "sweep failed"),
        }
    }
}

impl std::fmt::Debug for Sweeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sweeper").field("options", &self.inner.options).finish()
    }
}

/// The running sweeper. Dropping it stops the task without giving the lease up (it then expires
/// on its own); [`SweeperHandle::stop`] can give it up at once.
pub struct SweeperHandle {
    sweeper: Sweeper,
    /// Cancels the task's token when the handle is stopped or dropped.
    stop: DropGuard,
    task: tokio::task::JoinHandle<()>,
}

impl SweeperHandle {
    pub fn sweeper(&self) -> &Sweeper {
        &self.sweeper
    }

    /// Stop renewing and sweeping; with `release`, give the lease up too (do that after the plane
    /// drained, so nothing of this host is left streaming).
    pub async fn stop(self, release: bool) -> Result<(), PlaneError> {
        let SweeperHandle { sweeper, stop, task } = self;
        drop(stop);
        let _ = task.await;
        if release {
            sweeper.release().await?;
        }
        Ok(())
    }
}

fn statements(
    tables: &StreamTables,
    options: &SweeperOptions,
    dialect: Dialect,
) -> Result<(HostLeaseSql, MappedSql), PlaneError> {
    options.check()?;
    let lease = HostLeaseSql::new(tables, &options.lease_table, dialect)?;
    let mapped = MappedSql::new(tables, dialect)?;
    Ok((lease, mapped))
}

/// A pseudo-host name no process uses: unique per call (this host id, the time, a counter), so
/// each adoption gets a lease of its own and never inherits an older, already expired one.
fn hostless_marker(host_id: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
    format!("twoplane-hostless:{host_id}:{nanos:x}:{}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

fn sqlite_err(context: &str) -> impl FnOnce(rusqlite::Error) -> PlaneError + '_ {
    move |e| PlaneError::store(format!("sqlite: {context}")).with_source(e)
}

fn pg_err<E: std::error::Error + Send + Sync + 'static>(context: &str) -> impl FnOnce(E) -> PlaneError + '_ {
    move |e| PlaneError::store(format!("postgres: {context}")).with_source(e)
}

/// The released rows' keys as text, whatever the application's key column type (text or
/// integer).
fn keys(rows: Rows) -> Result<Vec<String>, PlaneError> {
    rows.into_iter()
        .map(|row| match row.into_iter().next() {
            Some(key) => Ok(key.into_key()),
            None => Err(PlaneError::store("the sweep returned a row without its key")),
        })
        .collect()
}
