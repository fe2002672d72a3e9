//! The server's store: the application's message table and the plane's chunk table, on SQLite
//! (one process, or a few on one machine sharing the file) or on PostgreSQL (several instances
//! sharing one server). `twoplane serve` runs on it with or without `--demo`.
//!
//! Guarantees:
//! - The table names and the server's own column names are the constants below; the server's
//!   statements (the store's and the demo's) take them from here, and the chunk table's columns
//!   from the mapping [`tables`] resolves, the one the plane writes with.
//! - The tables are created when missing, and creation is safe when several instances start at
//!   once: on PostgreSQL under the advisory lock [`twoplane_stream::PG_SCHEMA_LOCK_KEY`], on
//!   SQLite in an immediate (write-locked) transaction. A message table from an earlier version
//!   gains its `host` column; one that lacks what the server needs is refused with a sentence
//!   naming it.
//! - The `host` column is always in the schema but mapped for the plane only when asked
//!   ([`Database::tables`]): a single instance keeps the behaviour it always had.
//!
//! Each backend's statements are written once, in [`sqlite`] and [`postgres`]; [`Database`]
//! only picks the backend.

pub mod postgres;
pub mod sqlite;

use std::path::Path;
use std::sync::Arc;

use twoplane_core::sql::{StreamColumns, StreamTables};
use twoplane_stream::{DurableTarget, PgEndpoint, PlaneError};

use crate::error_text::cause;
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

/// The application's message table.
pub const MESSAGE_TABLE: &str = "messages";
/// The plane's chunk table.
pub const CHUNK_TABLE: &str = "message_chunks";
/// The message table's column that names a stream's producer (mapped with several instances).
pub const HOST_COLUMN: &str = "host";
/// The message table's cancel flag: a reader's cancel sets it, and the plane reads it back at
/// every checkpoint and stops the producer (docs/contract.md §7).
pub const CANCEL_COLUMN: &str = "cancel";
/// The message table's creation order on PostgreSQL, which has no rowid.
pub const POSITION_COLUMN: &str = "position";
/// The message table's columns every version of it has, and the server needs.
pub const MESSAGE_COLUMNS: [&str; 5] = ["id", "role", "body", "status", "seq"];

/// The tables the plane writes, without the `host` column (one instance). The `cancel` column
/// is always mapped.
pub fn tables() -> StreamTables {
    let columns = StreamColumns { cancel: Some(CANCEL_COLUMN.into()), ..StreamColumns::default() };
    StreamTables { message: MESSAGE_TABLE.into(), chunks: CHUNK_TABLE.into(), columns }
}

/// The tables the plane writes with the `host` column mapped (several instances: every row
/// names its producer, which the open compare-and-swap and the sweeper rely on).
pub fn tables_with_host() -> StreamTables {
    let base = tables();
    StreamTables { columns: StreamColumns { host: Some(HOST_COLUMN.into()), ..base.columns.clone() }, ..base }
}

/// The server's database. Cheap to clone.
#[derive(Clone)]
pub struct Database {
    backend: Backend,
    host_mapped: bool,
}

/// Which database, for code that writes its own statements per backend (the demo's).
#[derive(Clone)]
pub enum Backend {
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
        Ok(Database { backend: Backend::Sqlite(Arc::new(store)), host_mapped: map_host })
    }

    /// Connect to PostgreSQL at `endpoint` (pools of at most `pool_size` connections), create the
    /// tables when missing, and map the `host` column (several instances share the server).
    pub async fn open_postgres(endpoint: &PgEndpoint, pool_size: usize) -> Result<Database, String> {
        let store = PostgresStore::connect(endpoint, pool_size, &tables_with_host())
            .await
            .map_err(|e| format!("cannot use PostgreSQL: {e}"))?;
        Ok(Database { backend: Backend::Postgres(Arc::new(store)), host_mapped: true })
    }

    /// The backend, for statements written per backend.
    pub fn backend(&self) -> &Backend {
        &self.backend
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
            Backend::Sqlite(s) => {
                s.sweep_streaming().await.map_err(|e| format!("cannot sweep unfinished messages: {}", cause(&e)))
            }
            Backend::Postgres(_) => Err("several instances share PostgreSQL: unfinished messages are released per \
                                         host by the sweeper, never all at once"
                .into()),
        }
    }
}

/// An existing message table that is not the server's is refused by name, instead of failing
/// later on the first query.
fn check_columns(columns: &[String]) -> Result<(), PlaneError> {
    let missing: Vec<&str> = MESSAGE_COLUMNS.into_iter().filter(|want| !columns.iter().any(|c| c == want)).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(PlaneError::store(format!(
            "the table {MESSAGE_TABLE} exists but lacks the column(s) {} (it is not one that twoplane serve created)",
            missing.join(", ")
        )))
    }
}
