//! The server's store on SQLite: the plane's [`SqliteTarget`], whose one connection also serves
//! the server's own statements (serialized with the checkpoints, which one machine can afford).
//!
//! Guarantees: the schema ([`super::names::schema`]) is created or upgraded by the plane's runner
//! in one write-locked transaction, so instances sharing the file do not race; a path that
//! cannot be a database (a missing directory, a directory) is refused with a sentence naming it
//! before SQLite is asked.

use std::path::Path;
use std::sync::Arc;

use twoplane_core::sql::{Dialect, StreamTables};
use twoplane_stream::{migrate, DurableTarget, Executor, SqliteTarget};

use super::names::schema;
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
        let shapes = schema(Dialect::Sqlite).map_err(|e| cause(&e))?;
        migrate(&store.executor(), shapes).await.map_err(|e| format!("cannot use database {shown}: {}", cause(&e)))?;
        Ok(store)
    }

    pub(super) fn target(&self) -> Arc<dyn DurableTarget> {
        self.target.clone()
    }

    /// The executor of the server's own statements: the plane's connection, so they are
    /// serialized with the checkpoints.
    pub fn executor(&self) -> Executor {
        Executor::Sqlite(self.target.shared())
    }
}
