//! The durable view of the messages: each row with its text assembled from `body` and the chunk
//! rows, as the demo's page and the producer API's status read it.
//!
//! Guarantees:
//! - A read sees `body` and the chunk rows from one snapshot ([`Executor::read_snapshot`]), so
//!   a compaction (which moves chunk text into `body`) is never seen half-done.
//! - Messages come in creation order (SQLite's rowid, PostgreSQL's `position` column).
//! - The statements are built for the database's dialect and run through the plane's executor.

use std::collections::HashMap;

use serde::Serialize;
use twoplane_core::sql::{quote_ident, Dialect, SqlValue, Statement};
use twoplane_core::{assemble_durable_text, ChunkRow, Text};
use twoplane_stream::{Cell, Executor, PlaneError};

use super::database::Database;
use super::names::{tables, HOST_COLUMN, MESSAGE_TABLE, POSITION_COLUMN};

/// One message as a reader sees it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct MessageView {
    pub id: String,
    pub role: String,
    /// The durable text: `body` followed by the chunk rows in `seq` order.
    pub body: String,
    pub status: Option<String>,
    pub seq: i64,
    /// The instance that produced (or produces) it, when several share the database.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Every message in creation order, with durable text assembled, from one snapshot.
pub async fn all(db: &Database) -> Result<Vec<MessageView>, PlaneError> {
    read(db.executor(), None).await
}

/// One message's durable view.
pub async fn one(db: &Database, id: &str) -> Result<Option<MessageView>, PlaneError> {
    Ok(read(db.executor(), Some(id)).await?.pop())
}

/// The two queries of a read: the message rows, then their chunk rows ordered by stream and
/// position; `only` narrows both to one message.
fn statements(dialect: Dialect, only: Option<&str>) -> Result<Vec<Statement>, PlaneError> {
    let mapping = tables();
    let columns = mapping.columns.resolve();
    let (message, host) = (quote_ident(MESSAGE_TABLE)?, quote_ident(HOST_COLUMN)?);
    let chunks = quote_ident(&mapping.chunks)?;
    let (chunk_stream, chunk_seq, chunk_text) =
        (quote_ident(&columns.chunk_stream)?, quote_ident(&columns.chunk_seq)?, quote_ident(&columns.chunk_text)?);
    let order = match dialect {
        Dialect::Sqlite => "rowid".to_owned(),
        Dialect::Postgres => quote_ident(POSITION_COLUMN)?,
    };
    let (only_message, only_chunks, params) = match only {
        Some(id) => {
            let p = dialect.placeholder(1);
            (format!(" WHERE id = {p}"), format!(" WHERE {chunk_stream} = {p}"), vec![SqlValue::Text(id.to_owned())])
        }
        None => (String::new(), String::new(), Vec::new()),
    };
    Ok(vec![
        Statement {
            sql: format!("SELECT id, role, body, status, seq, {host} FROM {message}{only_message} ORDER BY {order}"),
            params: params.clone(),
        },
        Statement {
            sql: format!(
                "SELECT {chunk_stream}, {chunk_seq}, {chunk_text} FROM {chunks}{only_chunks} \
                 ORDER BY {chunk_stream}, {chunk_seq}"
            ),
            params,
        },
    ])
}

async fn read(executor: &Executor, only: Option<&str>) -> Result<Vec<MessageView>, PlaneError> {
    let mut results = executor.read_snapshot(statements(executor.dialect(), only)?, "reading messages").await?;
    let chunk_rows = results.pop().unwrap_or_default();
    let message_rows = results.pop().unwrap_or_default();
    let mut by_stream: HashMap<String, Vec<ChunkRow>> = HashMap::new();
    for row in chunk_rows {
        let [stream, seq, text] = cells(row, "a chunk row")?;
        let seq = required_int(seq, "chunk seq")?;
        let chunk =
            ChunkRow { seq: u64::try_from(seq).unwrap_or(0), text: text.into_text("chunk text")?.map(Text::from) };
        by_stream.entry(required_text(stream, "chunk stream")?).or_default().push(chunk);
    }
    let mut out = Vec::with_capacity(message_rows.len());
    for row in message_rows {
        let [id, role, body, status, seq, host] = cells(row, "a message row")?;
        let id = required_text(id, "id")?;
        let body = body.into_text("body")?.map(Text::from);
        let chunks = by_stream.get(&id).map(Vec::as_slice).unwrap_or_default();
        out.push(MessageView {
            role: role.into_text("role")?.unwrap_or_default(),
            // Table text is well-formed (the plane refuses lone surrogates for tables).
            body: assemble_durable_text(body.as_ref(), chunks).to_string_lossy(),
            status: status.into_text("status")?,
            seq: required_int(seq, "seq")?,
            host: host.into_text("host")?,
            id,
        });
    }
    Ok(out)
}

/// A row of the `N` columns a statement selects.
fn cells<const N: usize>(row: Vec<Cell>, what: &str) -> Result<[Cell; N], PlaneError> {
    row.try_into().map_err(|_| PlaneError::store(format!("{what} came back with the wrong number of columns")))
}

fn required_text(cell: Cell, column: &str) -> Result<String, PlaneError> {
    cell.into_text(column)?.ok_or_else(|| PlaneError::store(format!("the column {column} is NULL")))
}

fn required_int(cell: Cell, column: &str) -> Result<i64, PlaneError> {
    cell.into_int(column)?.ok_or_else(|| PlaneError::store(format!("the column {column} is NULL")))
}
