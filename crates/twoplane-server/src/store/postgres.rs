//! The server's store on PostgreSQL: the plane's [`PostgresTarget`] and a pool of the server's
//! own, a [`PgClient`] (the target's is private to it, and a page's read must not queue behind
//! a checkpoint anyway). Both pools hold at most `--pg-pool-size` connections.
//!
//! Guarantees: the message table is created or upgraded in one transaction under the advisory
//! lock [`PG_SCHEMA_LOCK_KEY`], so instances starting together do not race; a lost connection
//! is replaced on the next use (a server restart, a killed backend), so the next request after
//! a loss works again.

use std::sync::Arc;

use tokio_postgres::Client;
use twoplane_core::sql::{quote_ident, Dialect, SqlValue, StreamTables};
use twoplane_stream::{
    DurableTarget, Executor, PgClient, PgEndpoint, PgExec, PgSession, PlaneError, PostgresTarget, PG_SCHEMA_LOCK_KEY,
};

use super::names::{check_columns, CANCEL_COLUMN, HOST_COLUMN, MESSAGE_TABLE, PARTS_COLUMN, POSITION_COLUMN};
use crate::error_text::{cause, pg_cause};

/// The PostgreSQL backend of [`super::Database`].
pub struct PostgresStore {
    target: Arc<PostgresTarget>,
    client: PgClient,
}

impl PostgresStore {
    /// Connect the plane's target (mapped with `mapping`) and the server's own connection, and
    /// create the tables when missing. The error is the server's sentence, or the client's.
    pub(super) async fn connect(
        endpoint: &PgEndpoint,
        pool_size: usize,
        mapping: &StreamTables,
    ) -> Result<PostgresStore, String> {
        let checkpoints = PgClient::from_endpoint(endpoint.clone(), "checkpoints", pool_size);
        let target = PostgresTarget::with_client(checkpoints, mapping).await.map_err(|e| cause(&e))?;
        let client = PgClient::from_endpoint(endpoint.clone(), "server", pool_size);
        let store = PostgresStore { target: Arc::new(target), client };
        {
            let mut session = store.session().await.map_err(|e| cause(&e))?;
            create_schema(session.client_mut()).await?;
        }
        store.target.create_chunk_table().await.map_err(|e| cause(&e))?;
        Ok(store)
    }

    pub(super) fn target(&self) -> Arc<dyn DurableTarget> {
        self.target.clone()
    }

    /// A connection of the server's pool, opened (again) when none is idle.
    pub async fn session(&self) -> Result<PgSession, PlaneError> {
        self.client.lock().await.map_err(|e| PlaneError::store("postgres").with_source(e))
    }

    /// The executor of the server's own statements: the server's pool.
    pub fn executor(&self) -> Executor {
        Executor::Postgres(Box::new(self.client.clone()))
    }
}

/// The message table on PostgreSQL. `position` orders it (PostgreSQL has no rowid). The chunk
/// table comes from [`PostgresTarget::create_chunk_table`].
async fn create_schema(client: &mut Client) -> Result<(), String> {
    let ident = |name: &str| quote_ident(name).map_err(|e| e.to_string());
    let (message, host, position) = (ident(MESSAGE_TABLE)?, ident(HOST_COLUMN)?, ident(POSITION_COLUMN)?);
    let cancel = ident(CANCEL_COLUMN)?;
    // A table from before messages had parts gets its `parts` column from the plane's migration
    // (`PostgresTarget::create_chunk_table`), which runs next.
    let parts = ident(PARTS_COLUMN)?;
    let tx = client.transaction().await.map_err(|e| pg_cause(&e))?;
    tx.batch_execute(&format!("SELECT pg_advisory_xact_lock({PG_SCHEMA_LOCK_KEY})")).await.map_err(|e| pg_cause(&e))?;
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {message} ({position} bigserial, id text PRIMARY KEY, role text, \
         body text NOT NULL DEFAULT '', status text, seq bigint NOT NULL DEFAULT 0, {host} text, \
         {cancel} boolean NOT NULL DEFAULT false, {parts} text)"
    ))
    .await
    .map_err(|e| pg_cause(&e))?;
    let columns_of = tx
        .prepare(&format!(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = {}",
            Dialect::Postgres.placeholder(1)
        ))
        .await
        .map_err(|e| pg_cause(&e))?;
    let rows = tx.rows(&columns_of, &[SqlValue::Text(MESSAGE_TABLE.to_owned())]).await.map_err(|e| pg_cause(&e))?;
    let columns: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    check_columns(&columns).map_err(|e| e.message().to_owned())?;
    if !columns.iter().any(|c| c == POSITION_COLUMN) {
        return Err(format!(
            "the table {MESSAGE_TABLE} exists but has no {POSITION_COLUMN} column (it is not one that twoplane serve created)"
        ));
    }
    if !columns.iter().any(|c| c == HOST_COLUMN) {
        tx.batch_execute(&format!("ALTER TABLE {message} ADD COLUMN {host} text")).await.map_err(|e| pg_cause(&e))?;
    }
    if !columns.iter().any(|c| c == CANCEL_COLUMN) {
        tx.batch_execute(&format!("ALTER TABLE {message} ADD COLUMN {cancel} boolean NOT NULL DEFAULT false"))
            .await
            .map_err(|e| pg_cause(&e))?;
    }
    tx.commit().await.map_err(|e| pg_cause(&e))
}
