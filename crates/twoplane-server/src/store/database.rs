//! [`Database`]: the server's store, whichever backend holds it.
//!
//! Guarantees:
//! - The tables are created when missing, and creation is safe when several instances start at
//!   once (each backend says how: [`super::sqlite`], [`super::postgres`]).
//! - The `host` column is always in the schema but mapped for the plane only when asked
//!   ([`Database::tables`]): a single instance keeps the behaviour it always had.
//! - The server's own statements run through [`Database::executor`], built for its dialect
//!   ([`Executor::dialect`]), the same executor the plane's statements use.

use std::path::Path;
use std::sync::Arc;

use twoplane_core::sql::{quote_ident, SqlValue, Statement, StreamTables};
use twoplane_core::{StreamStatus, STREAM_STATUS_STREAMING};
use twoplane_stream::{DurableTarget, Executor, PgEndpoint, PlaneError};

use super::names::{tables, tables_with_host, MESSAGE_TABLE};
use super::postgres::PostgresStore;
use super::sqlite::SqliteStore;
use crate::error_text::cause;

/// The server's database. Cheap to clone.
#[derive(Clone)]
pub struct Database {
    backend: Backend,
    /// Runs the server's own statements: on SQLite the plane's connection, on PostgreSQL the
    /// server's pool.
    executor: Executor,
    host_mapped: bool,
}

/// Which database holds the tables.
#[derive(Clone)]
enum Backend {
    Sqlite(Arc<SqliteStore>),
    Postgres(Arc<PostgresStore>),
}

impl Database {
    /// Open or create the SQLite database at `path` for one instance (the `host` column is
    /// not mapped).
    pub async fn open(path: &Path) -> Result<Database, String> {
        Database::open_sqlite(path, false).await
    }

    /// Open or create the SQLite database at `path`; `map_host` maps the `host` column (several
    /// instances on one machine sharing the file).
    pub async fn open_sqlite(path: &Path, map_host: bool) -> Result<Database, String> {
        let mapping = if map_host { tables_with_host() } else { tables() };
        let store = SqliteStore::open(path, &mapping).await?;
        let executor = store.executor();
        Ok(Database { backend: Backend::Sqlite(Arc::new(store)), executor, host_mapped: map_host })
    }

    /// Connect to PostgreSQL at `endpoint` (pools of at most `pool_size` connections), create the
    /// tables when missing, and map the `host` column (several instances share the server).
    pub async fn open_postgres(endpoint: &PgEndpoint, pool_size: usize) -> Result<Database, String> {
        let store = PostgresStore::connect(endpoint, pool_size, &tables_with_host())
            .await
            .map_err(|e| format!("cannot use PostgreSQL: {e}"))?;
        let executor = store.executor();
        Ok(Database { backend: Backend::Postgres(Arc::new(store)), executor, host_mapped: true })
    }

    /// Runs the server's own statements (build them for [`Executor::dialect`]).
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The plane's durable target.
    pub fn target(&self) -> Arc<dyn DurableTarget> {
        match &self.backend {
            Backend::Sqlite(s) => s.target(),
            Backend::Postgres(p) => p.target(),
        }
    }

    /// The mapping the target was built with (the sweeper needs the same one).
    pub fn tables(&self) -> StreamTables {
        if self.host_mapped {
            tables_with_host()
        } else {
            tables()
        }
    }

    /// One instance only: mark every message an earlier process left `streaming` (it died
    /// without draining) as `interrupted`; their text stays readable from body plus chunk rows.
    /// With several instances this would cut live streams of the others, so on PostgreSQL it is
    /// refused: there the sweeper releases a dead host's rows (and, at start, this host's own).
    pub async fn sweep_streaming(&self) -> Result<usize, String> {
        match &self.backend {
            Backend::Sqlite(_) => {
                self.sweep_all_streaming().await.map_err(|e| format!("cannot sweep unfinished messages: {}", cause(&e)))
            }
            Backend::Postgres(_) => Err("several instances share PostgreSQL: unfinished messages are released per \
                                         host by the sweeper, never all at once"
                .into()),
        }
    }

    async fn sweep_all_streaming(&self) -> Result<usize, PlaneError> {
        let d = self.executor.dialect();
        let sql = format!(
            "UPDATE {} SET status = {} WHERE status = {}",
            quote_ident(MESSAGE_TABLE)?,
            d.placeholder(1),
            d.placeholder(2)
        );
        let params = vec![
            SqlValue::Text(StreamStatus::Interrupted.as_str().to_owned()),
            SqlValue::Text(STREAM_STATUS_STREAMING.to_owned()),
        ];
        let changed = self.executor.execute(Statement { sql, params }, "sweeping unfinished messages").await?;
        Ok(changed as usize)
    }
}

#[cfg(test)]
mod tests {
    //! The SQLite schema's upgrades and refusals, seen through [`Database`], the way the server
    //! opens it.
    use super::Database;

    #[tokio::test]
    async fn an_old_table_gains_its_host_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE messages (id TEXT PRIMARY KEY, role TEXT, body TEXT NOT NULL DEFAULT '', \
                 status TEXT, seq INTEGER NOT NULL DEFAULT 0)",
            )
            .unwrap();
        }
        Database::open_sqlite(&path, true).await.unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        let host: i64 = conn
            .query_row("SELECT count(*) FROM pragma_table_info('messages') WHERE name = 'host'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(host, 1);
        drop(conn);
        // Opening it again (a second instance) finds the column and changes nothing.
        Database::open_sqlite(&path, true).await.unwrap();
    }

    #[tokio::test]
    async fn a_foreign_message_table_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("foreign.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch("CREATE TABLE messages (id TEXT PRIMARY KEY, text TEXT)").unwrap();
        }
        let err = Database::open(&path).await.err().unwrap();
        assert!(err.contains("lacks the column(s) role, body, status, seq"), "{err}");
    }

    #[tokio::test]
    async fn a_restart_marks_leftover_streams_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sweep.db");
        let db = Database::open(&path).await.unwrap();
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(
                "INSERT INTO messages (id, role, status) VALUES ('a', 'assistant', 'streaming'), \
                 ('b', 'assistant', 'complete')",
            )
            .unwrap();
        }
        assert_eq!(db.sweep_streaming().await.unwrap(), 1);
        let conn = rusqlite::Connection::open(&path).unwrap();
        let status: String = conn.query_row("SELECT status FROM messages WHERE id = 'a'", [], |r| r.get(0)).unwrap();
        assert_eq!(status, "interrupted");
    }
}
