//! The record in PostgreSQL: the tables applications write their sessions' events into, their
//! documented default shape, and [`PgRecord`], the [`RecordReader`] over them.
//!
//! The default shape (described in `schema.rs`, which [`RecordTables::ddl`] creates it from;
//! every name is configurable):
//!
//! ```sql
//! CREATE TABLE twoplane_relay_tenants (
//!     tenant_id  text COLLATE "C" PRIMARY KEY,
//!     generation bigint NOT NULL             -- the tenant's basin generation; a reset raises it
//! );
//! CREATE TABLE twoplane_relay_events (
//!     tenant_id  text COLLATE "C" NOT NULL,
//!     session_id text COLLATE "C" NOT NULL,
//!     seq        bigint NOT NULL,            -- dense from 0 within a session
//!     generation bigint NOT NULL,            -- the tenant's generation when the row was written
//!     body       jsonb NOT NULL,             -- the event, appended to the log as its JSON text
//!     PRIMARY KEY (tenant_id, session_id, seq)
//! );
//! ```
//!
//! Guarantees and choices:
//! - A session's log head (the next seq to allocate) is `max(seq) + 1` of its rows, and its
//!   generation that of its newest row: read from the events table itself, so applications
//!   keep no separate counter the relay could disagree with.
//! - `heads` pages in byte-wise order of (tenant, session) (`COLLATE "C"`, which the default
//!   shape gives the key columns so the primary key index serves the order).
//! - A body is read as `body::text`, the same text logical replication sends for `jsonb`, so
//!   a row re-read from the record appends exactly the bytes the live path appends.
//! - The connection is opened on first use and opened again after it fails; errors are
//!   [`RecordError::Unavailable`] and never hold the connection URL.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::Mutex;
use tokio_postgres::Client;
use twoplane_pg::PgEndpoint;

pub use crate::schema::RecordTables;
use crate::types::{LogHead, RecordError, RecordReader, RecordRow, SessionRange};

/// Reads the record back over a PostgreSQL connection.
pub struct PgRecord {
    endpoint: PgEndpoint,
    tables: RecordTables,
    client: Mutex<Option<Arc<Client>>>,
    sql: Queries,
}

struct Queries {
    read_range: String,
    heads_first: String,
    heads_after: String,
    generation: String,
}

impl PgRecord {
    /// A reader of the record at `endpoint` (its TLS as the URL's `sslmode` says). Nothing is
    /// contacted yet.
    pub fn new(endpoint: &PgEndpoint, tables: RecordTables) -> PgRecord {
        let e = tables.events_sql();
        let t = tables.tenants_sql();
        // The sessions of a page come from the primary key index in order (DISTINCT stops at
        // LIMIT); each one's newest row is then one index probe.
        let heads = |filter: &str, limit: &str| {
            format!(
                "SELECT s.tenant_id, s.session_id, h.seq + 1, h.generation FROM ( \
                 SELECT DISTINCT tenant_id COLLATE \"C\" AS tenant_id, session_id COLLATE \"C\" AS session_id \
                 FROM {e} {filter} ORDER BY 1, 2 LIMIT {limit}) s \
                 CROSS JOIN LATERAL (SELECT seq, generation FROM {e} r \
                 WHERE r.tenant_id = s.tenant_id AND r.session_id = s.session_id ORDER BY seq DESC LIMIT 1) h \
                 ORDER BY 1, 2"
            )
        };
        let sql = Queries {
            read_range: format!(
                "SELECT seq, generation, body::text FROM {e} \
                 WHERE tenant_id = $1 AND session_id = $2 AND seq >= $3 AND seq < $4 ORDER BY seq"
            ),
            heads_first: heads("", "$1"),
            heads_after: heads(
                "WHERE (tenant_id COLLATE \"C\", session_id COLLATE \"C\") > ($1 COLLATE \"C\", $2 COLLATE \"C\")",
                "$3",
            ),
            generation: format!("SELECT generation FROM {t} WHERE tenant_id = $1"),
        };
        PgRecord { endpoint: endpoint.clone(), tables, client: Mutex::new(None), sql }
    }

    pub fn tables(&self) -> &RecordTables {
        &self.tables
    }

    /// The open connection, or a new one.
    async fn client(&self) -> Result<Arc<Client>, RecordError> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            if !client.is_closed() {
                return Ok(client.clone());
            }
        }
        let client =
            self.endpoint.connect("relay-record").await.map_err(|e| RecordError::Unavailable(e.to_string()))?;
        let client = Arc::new(client);
        *slot = Some(client.clone());
        Ok(client)
    }

    /// Runs a query; after a failure the connection is dropped so the next call opens a new one.
    async fn query(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, RecordError> {
        let client = self.client().await?;
        match client.query(sql, params).await {
            Ok(rows) => Ok(rows),
            Err(error) => {
                if client.is_closed() {
                    *self.client.lock().await = None;
                }
                Err(unavailable(&error))
            }
        }
    }
}

/// PostgreSQL's own message (never the connection string, which tokio-postgres does not put in
/// its errors anyway).
pub(crate) fn db_message(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => error.to_string(),
    }
}

fn unavailable(error: &tokio_postgres::Error) -> RecordError {
    RecordError::Unavailable(db_message(error))
}

fn non_negative(value: i64, what: &str) -> Result<u64, RecordError> {
    u64::try_from(value).map_err(|_| RecordError::Invalid(format!("negative {what} {value}")))
}

fn as_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[async_trait]
impl RecordReader for PgRecord {
    async fn read_range(&self, range: SessionRange<'_>) -> Result<Vec<RecordRow>, RecordError> {
        let SessionRange { tenant_id, session_id, from, to } = range;
        if from >= to {
            return Ok(Vec::new());
        }
        let rows = self.query(&self.sql.read_range, &[&tenant_id, &session_id, &as_i64(from), &as_i64(to)]).await?;
        let tenant: Arc<str> = tenant_id.into();
        let session: Arc<str> = session_id.into();
        rows.iter()
            .map(|row| {
                Ok(RecordRow {
                    tenant_id: tenant.clone(),
                    session_id: session.clone(),
                    seq: non_negative(row.get(0), "seq")?,
                    generation: non_negative(row.get(1), "generation")?,
                    body: row.get::<_, String>(2).into(),
                })
            })
            .collect()
    }

    async fn heads(&self, after: Option<(&str, &str)>, limit: usize) -> Result<Vec<LogHead>, RecordError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = match after {
            None => self.query(&self.sql.heads_first, &[&limit]).await?,
            Some((tenant, session)) => self.query(&self.sql.heads_after, &[&tenant, &session, &limit]).await?,
        };
        rows.iter()
            .map(|row| {
                Ok(LogHead {
                    tenant_id: row.get::<_, String>(0).into(),
                    session_id: row.get::<_, String>(1).into(),
                    head: non_negative(row.get(2), "seq")?,
                    generation: non_negative(row.get(3), "generation")?,
                })
            })
            .collect()
    }

    async fn generation(&self, tenant_id: &str) -> Result<Option<u64>, RecordError> {
        let rows = self.query(&self.sql.generation, &[&tenant_id]).await?;
        rows.first().map(|row| non_negative(row.get(0), "generation")).transpose()
    }
}
