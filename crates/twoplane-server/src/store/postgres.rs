//! The server's store on PostgreSQL: the plane's [`PostgresTarget`] and a pool of the server's
//! own, a [`PgClient`] (the target's is private to it, and a page's read must not queue behind
//! a checkpoint anyway). Both pools hold at most `--pg-pool-size` connections.
//!
//! Guarantees: the schema ([`super::names::schema`]) is created or upgraded by the plane's runner
//! in one transaction under the advisory lock [`twoplane_stream::PG_SCHEMA_LOCK_KEY`], so
//! instances starting together do not race; a lost connection
//! is replaced on the next use (a server restart, a killed backend), so the next request after
//! a loss works again.

use std::sync::Arc;

use twoplane_core::sql::{Dialect, StreamTables};
use twoplane_stream::{migrate, DurableTarget, Executor, PgClient, PgEndpoint, PgSession, PlaneError, PostgresTarget};

use super::names::schema;
use crate::error_text::cause;

/// The PostgreSQL backend of [`super::Database`].
pub struct PostgresStore {
    target: Arc<PostgresTarget>,
    client: PgClient,
}

impl PostgresStore {
    /// Connect the plane's target (mapped with `mapping`) and the server's own connection, and
    /// create or upgrade the tables. The error is the server's sentence, or the client's.
    pub(super) async fn connect(
        endpoint: &PgEndpoint,
        pool_size: usize,
        mapping: &StreamTables,
    ) -> Result<PostgresStore, String> {
        let checkpoints = PgClient::from_endpoint(endpoint.clone(), "checkpoints", pool_size);
        let target = PostgresTarget::with_client(checkpoints, mapping).await.map_err(|e| cause(&e))?;
        let client = PgClient::from_endpoint(endpoint.clone(), "server", pool_size);
        let store = PostgresStore { target: Arc::new(target), client };
        let shapes = schema(Dialect::Postgres).map_err(|e| cause(&e))?;
        migrate(&store.executor(), shapes).await.map_err(|e| cause(&e))?;
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
