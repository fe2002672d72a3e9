//! The server's schema by name: its tables and columns, and the mapping the plane writes with.
//!
//! Guarantees: every statement of the server (the store's, the demo's, the producer API's)
//! takes its table and column names from here, and the chunk table's columns from the mapping
//! [`tables`] resolves, the one the plane writes with, so a reader reads what the plane wrote.

use twoplane_core::sql::{StreamColumns, StreamTables};
use twoplane_stream::PlaneError;

/// The application's message table.
pub const MESSAGE_TABLE: &str = "messages";
/// The plane's chunk table.
pub const CHUNK_TABLE: &str = "message_chunks";
/// The message table's column that names a stream's producer (mapped with several instances).
pub const HOST_COLUMN: &str = "host";
/// The message table's cancel flag: a reader's cancel sets it, and the plane reads it back at
/// every checkpoint and stops the producer (docs/contract.md §7).
pub const CANCEL_COLUMN: &str = "cancel";
/// The column of both tables that holds a message's parts (docs/contract.md §8): the message
/// document in the message table, a parts row's frames in the chunk table.
pub const PARTS_COLUMN: &str = "parts";
/// The message table's creation order on PostgreSQL, which has no rowid.
pub const POSITION_COLUMN: &str = "position";
/// The message table's columns every version of it has, and the server needs.
pub const MESSAGE_COLUMNS: [&str; 5] = ["id", "role", "body", "status", "seq"];

/// The tables the plane writes, without the `host` column (one instance). The `cancel` column
/// and the parts columns are always mapped.
pub fn tables() -> StreamTables {
    let columns = StreamColumns {
        cancel: Some(CANCEL_COLUMN.into()),
        parts: Some(PARTS_COLUMN.into()),
        chunk_parts: Some(PARTS_COLUMN.into()),
        ..StreamColumns::default()
    };
    StreamTables { message: MESSAGE_TABLE.into(), chunks: CHUNK_TABLE.into(), columns }
}

/// The tables the plane writes with the `host` column mapped (several instances: every row
/// names its producer, which the open compare-and-swap and the sweeper rely on).
pub fn tables_with_host() -> StreamTables {
    let base = tables();
    StreamTables { columns: StreamColumns { host: Some(HOST_COLUMN.into()), ..base.columns.clone() }, ..base }
}

/// An existing message table that is not the server's is refused by name, instead of failing
/// later on the first query.
pub(crate) fn check_columns(columns: &[String]) -> Result<(), PlaneError> {
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
