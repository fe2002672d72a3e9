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
use twoplane_stream::{DurableTarget, Executor, PlaneError, SqliteTarget};

use super::names::{check_columns, tables, CANCEL_COLUMN, CHUNK_TABLE, HOST_COLUMN, MESSAGE_TABLE, PARTS_COLUMN};
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

    /// The executor of the server's own statements: the plane's connection, so they are
    /// serialized with the checkpoints.
    pub fn executor(&self) -> Executor {
        Executor::Sqlite(self.target.shared())
    }
}

/// The message table, its `host`, `cancel` and `parts` columns (added to a table from before they
/// existed) and the chunk table with its `parts` column (likewise), in one write-locked
/// transaction so instances sharing the file do not race.
fn create_schema(conn: &mut Connection) -> Result<(), PlaneError> {
    let message = quote_ident(MESSAGE_TABLE)?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sqlite_err)?;
    tx.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {message} (id TEXT PRIMARY KEY, role TEXT, \
         body TEXT NOT NULL DEFAULT '', status TEXT, seq INTEGER NOT NULL DEFAULT 0, {} TEXT, \
         {} INTEGER NOT NULL DEFAULT 0, {} TEXT)",
        quote_ident(HOST_COLUMN)?,
        quote_ident(CANCEL_COLUMN)?,
        quote_ident(PARTS_COLUMN)?
    ))
    .map_err(sqlite_err)?;
    let columns = columns_of(&tx, MESSAGE_TABLE)?;
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
    if !columns.iter().any(|c| c == PARTS_COLUMN) {
        tx.execute_batch(&format!("ALTER TABLE {message} ADD COLUMN {} TEXT", quote_ident(PARTS_COLUMN)?))
            .map_err(sqlite_err)?;
    }
    for ddl in stream_chunk_table_ddl(&tables(), Dialect::Sqlite)? {
        tx.execute(&ddl, []).map_err(sqlite_err)?;
    }
    // A chunk table from before messages had parts: its rows are text rows, `parts` NULL.
    if !columns_of(&tx, CHUNK_TABLE)?.iter().any(|c| c == PARTS_COLUMN) {
        let (chunks, parts) = (quote_ident(CHUNK_TABLE)?, quote_ident(PARTS_COLUMN)?);
        tx.execute_batch(&format!("ALTER TABLE {chunks} ADD COLUMN {parts} TEXT")).map_err(sqlite_err)?;
    }
    tx.commit().map_err(sqlite_err)
}

/// The column names of `table`.
fn columns_of(conn: &Connection, table: &str) -> Result<Vec<String>, PlaneError> {
    let mut info = conn.prepare(&format!("PRAGMA table_info({})", quote_ident(table)?)).map_err(sqlite_err)?;
    let names = info.query_map([], |r| r.get::<_, String>(1)).map_err(sqlite_err)?;
    names.collect::<Result<Vec<_>, _>>().map_err(sqlite_err)
}

/// A SQLite failure as a plane store error (the cause kept as its source).
fn sqlite_err(e: rusqlite::Error) -> PlaneError {
    PlaneError::store("sqlite").with_source(e)
}
