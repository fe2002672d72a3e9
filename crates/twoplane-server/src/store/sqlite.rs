//! The server's store on SQLite: the plane's [`SqliteTarget`], whose one connection also serves
//! the server's own statements (serialized with the checkpoints, which one machine can afford).
//!
//! Guarantees: the schema is created or upgraded in one write-locked transaction, so instances
//! sharing the file do not race; a path that cannot be a database (a missing directory, a
//! directory) is refused with a sentence naming it before SQLite is asked.

use std::path::Path;
use std::sync::Arc;

use rusqlite::Connection;
use twoplane_core::sql::{quote_ident, stream_chunk_table_ddl, Dialect, StreamTables};
use twoplane_core::{StreamStatus, STREAM_STATUS_STREAMING};
use twoplane_stream::{DurableTarget, PlaneError, SqliteTarget};

use super::{check_columns, tables, CANCEL_COLUMN, HOST_COLUMN, MESSAGE_TABLE};
use crate::error_text::cause;

/// The SQLite backend of [`super::Database`].
pub struct SqliteStore {
    target: Arc<SqliteTarget>,
}

impl SqliteStore {
    /// Open or create the database at `path`, the plane mapped with `mapping`, and create or
    /// upgrade the schema.
    pub(super) async fn open(path: &Path, mapping: &StreamTables) -> Result<SqliteStore, String> {
        let shown = path.display().to_string();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(format!("cannot use database {shown}: the directory {} does not exist", parent.display()));
            }
        }
        if path.is_dir() {
            return Err(format!("cannot use database {shown}: it is a directory"));
        }
        let target =
            SqliteTarget::open(path, mapping).map_err(|e| format!("cannot use database {shown}: {}", cause(&e)))?;
        let store = SqliteStore { target: Arc::new(target) };
        store
            .with_connection(create_schema)
            .await
            .map_err(|e| format!("cannot use database {shown}: {}", cause(&e)))?;
        Ok(store)
    }

    pub(super) fn target(&self) -> Arc<dyn DurableTarget> {
        self.target.clone()
    }

    /// Run `f` on the connection, off the async threads.
    pub async fn with_connection<R, F>(&self, f: F) -> Result<R, PlaneError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, PlaneError> + Send + 'static,
    {
        self.target.with_connection(f).await
    }

    /// See [`super::Database::sweep_streaming`].
    pub(super) async fn sweep_streaming(&self) -> Result<usize, PlaneError> {
        let sql = format!("UPDATE {} SET status = ?1 WHERE status = ?2", quote_ident(MESSAGE_TABLE)?);
        let statuses = [StreamStatus::Interrupted.as_str(), STREAM_STATUS_STREAMING];
        self.with_connection(move |conn| conn.execute(&sql, statuses).map_err(sqlite_err)).await
    }
}

/// The message table, its `host` and `cancel` columns (added to a table from before they existed) and the
/// chunk table, in one write-locked transaction so instances sharing the file do not race.
fn create_schema(conn: &mut Connection) -> Result<(), PlaneError> {
    let message = quote_ident(MESSAGE_TABLE)?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sqlite_err)?;
    tx.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {message} (id TEXT PRIMARY KEY, role TEXT, \
         body TEXT NOT NULL DEFAULT '', status TEXT, seq INTEGER NOT NULL DEFAULT 0, {} TEXT, \
         {} INTEGER NOT NULL DEFAULT 0)",
        quote_ident(HOST_COLUMN)?,
        quote_ident(CANCEL_COLUMN)?
    ))
    .map_err(sqlite_err)?;
    let columns = {
        let mut info = tx.prepare(&format!("PRAGMA table_info({message})")).map_err(sqlite_err)?;
        let names = info.query_map([], |r| r.get::<_, String>(1)).map_err(sqlite_err)?;
        names.collect::<Result<Vec<_>, _>>().map_err(sqlite_err)?
    };
    check_columns(&columns)?;
    if !columns.iter().any(|c| c == HOST_COLUMN) {
        tx.execute_batch(&format!("ALTER TABLE {message} ADD COLUMN {} TEXT", quote_ident(HOST_COLUMN)?))
            .map_err(sqlite_err)?;
    }
    if !columns.iter().any(|c| c == CANCEL_COLUMN) {
        let cancel = quote_ident(CANCEL_COLUMN)?;
        tx.execute_batch(&format!("ALTER TABLE {message} ADD COLUMN {cancel} INTEGER NOT NULL DEFAULT 0"))
            .map_err(sqlite_err)?;
    }
    for ddl in stream_chunk_table_ddl(&tables(), Dialect::Sqlite)? {
        tx.execute(&ddl, []).map_err(sqlite_err)?;
    }
    tx.commit().map_err(sqlite_err)
}

/// A SQLite failure as a plane store error (the cause kept as its source).
pub fn sqlite_err(e: rusqlite::Error) -> PlaneError {
    PlaneError::store("sqlite").with_source(e)
}

#[cfg(test)]
mod tests {
    use crate::store::Database;

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
