//! The server's schema by name: its tables and columns, and the mapping the plane writes with.
//!
//! Guarantees: every statement of the server (the store's, the demo's, the producer API's)
//! takes its table and column names from here, and the chunk table's columns from the mapping
//! [`tables`] resolves, the one the plane writes with, so a reader reads what the plane wrote.

use twoplane_core::sql::{
    owned_message_table, stream_chunk_table, Dialect, OwnedColumns, StreamColumns, StreamTables, TableShape,
};
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
/// The message table's column of who wrote the message (`user`, `assistant`).
pub const ROLE_COLUMN: &str = "role";

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

/// The server's tables as the core describes them (`twoplane_core::sql::TableShape`), in the
/// order the store creates them: the message table (with the `host` column, always in the
/// schema, and the `cancel` and `parts` columns, each added to a table from before them) and the
/// chunk table the plane writes. A store runs these and writes no DDL of its own; an existing
/// message table that lacks one of its first columns is refused by name, not altered.
pub fn schema(dialect: Dialect) -> Result<Vec<TableShape>, PlaneError> {
    let owned = OwnedColumns { role: ROLE_COLUMN, position: POSITION_COLUMN };
    Ok(vec![owned_message_table(&tables_with_host(), owned, dialect)?, stream_chunk_table(&tables(), dialect)?])
}
