//! The durable view of the messages: each row with its text assembled from `body` and the chunk
//! rows, as the demo's page and the producer API's status read it; a message with parts (docs/
//! contract.md §8) also with its assembled document and the rows a reader assembles it from.
//!
//! Guarantees:
//! - A read sees `body` and the chunk rows from one snapshot ([`Executor::read_snapshot`]), so
//!   a compaction (which moves chunk text into `body`) is never seen half-done.
//! - Messages come in creation order (SQLite's rowid, PostgreSQL's `position` column).
//! - The statements are built for the database's dialect and run through the plane's executor.

use std::collections::HashMap;

use serde::Serialize;
use twoplane_core::message::{assemble_durable_message, assemble_durable_message_at, Message, MessageChunkRow};
use twoplane_core::sql::{quote_ident, Dialect, SqlValue, Statement};
use twoplane_core::Text;
use twoplane_stream::{Cell, Executor, PlaneError};

use super::database::Database;
use super::names::{tables, HOST_COLUMN, MESSAGE_TABLE, PARTS_COLUMN, POSITION_COLUMN};

/// One message as a reader sees it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct MessageView {
    pub id: String,
    pub role: String,
    /// The durable text: `body` followed by the chunk rows in `seq` order; for a message with
    /// parts, the bodies of its text parts.
    pub body: String,
    pub status: Option<String>,
    /// The durable length (for a message with parts, in the coordinate of docs/contract.md §8).
    pub seq: i64,
    /// The instance that produced (or produces) it, when several share the database.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// A message with parts: its durable document (JSON text: `{"parts":[...],...}`), for
    /// display. Absent for a single text, whose view is as it always was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    /// A message with parts: the row and chunk rows as the tables hold them, which a reader
    /// assembles into the durable message it joins with (`assembleDurableMessage(rows,
    /// rows.chunks)`: a document loses which parts are still open, the rows do not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<DurableRows>,
}

/// What the tables hold of one message with parts.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct DurableRows {
    pub body: Option<String>,
    /// The stored document (written at the seal).
    pub document: Option<String>,
    pub seq: i64,
    pub chunks: Vec<ChunkView>,
}

/// One chunk row: a text row (`parts` null) or a parts row (its frames as JSON text).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ChunkView {
    pub seq: i64,
    pub text: Option<String>,
    pub parts: Option<String>,
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
    let parts = quote_ident(PARTS_COLUMN)?;
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
            sql: format!(
                "SELECT id, role, body, status, seq, {host}, {parts} FROM {message}{only_message} ORDER BY {order}"
            ),
            params: params.clone(),
        },
        Statement {
            sql: format!(
                "SELECT {chunk_stream}, {chunk_seq}, {chunk_text}, {parts} FROM {chunks}{only_chunks} \
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
    let mut by_stream: HashMap<String, Vec<ChunkView>> = HashMap::new();
    for row in chunk_rows {
        let [stream, seq, text, parts] = cells(row, "a chunk row")?;
        let chunk = ChunkView {
            seq: required_int(seq, "chunk seq")?,
            text: text.into_text("chunk text")?,
            parts: parts.into_text("chunk parts")?,
        };
        by_stream.entry(required_text(stream, "chunk stream")?).or_default().push(chunk);
    }
    let mut out = Vec::with_capacity(message_rows.len());
    for row in message_rows {
        let [id, role, body, status, seq, host, document] = cells(row, "a message row")?;
        let id = required_text(id, "id")?;
        let chunks = by_stream.remove(&id).unwrap_or_default();
        let rows = DurableRows {
            body: body.into_text("body")?,
            document: document.into_text("parts")?,
            seq: required_int(seq, "seq")?,
            chunks,
        };
        let message = assemble(&id, &rows)?;
        let structured = message.has_structure();
        out.push(MessageView {
            role: role.into_text("role")?.unwrap_or_default(),
            // Table text is well-formed (the plane refuses lone surrogates in text columns; a
            // document's are escapes).
            body: if structured { message.text_body() } else { message.parts()[0].body.clone() }.to_string_lossy(),
            status: status.into_text("status")?,
            seq: rows.seq,
            host: host.into_text("host")?,
            document: structured.then(|| message.document().to_string_lossy()),
            rows: structured.then_some(rows),
            id,
        });
    }
    Ok(out)
}

impl DurableRows {
    /// The durable message these rows hold, by the core's assembly (one rule, one place: the
    /// status route and the UI message stream route both read a stored message through it).
    pub fn assemble(&self) -> Result<Message, twoplane_core::Error> {
        let (body, document, chunks) = self.core_rows();
        assemble_durable_message(body.as_ref(), document.as_ref(), self.len(), &chunks)
    }

    /// The message as it stood at offset `at`, or `None` where the rows cannot say (inside a
    /// compacted message: `twoplane_core::message::assemble_durable_message_at`).
    pub fn assemble_at(&self, at: u64) -> Result<Option<Message>, twoplane_core::Error> {
        let (body, document, chunks) = self.core_rows();
        assemble_durable_message_at(body.as_ref(), document.as_ref(), self.len(), &chunks, at)
    }

    fn len(&self) -> u64 {
        u64::try_from(self.seq).unwrap_or(0)
    }

    fn core_rows(&self) -> (Option<Text>, Option<Text>, Vec<MessageChunkRow>) {
        let chunks = self
            .chunks
            .iter()
            .map(|c| MessageChunkRow {
                seq: u64::try_from(c.seq).unwrap_or(0),
                text: c.text.as_deref().map(Text::from),
                parts: c.parts.as_deref().map(Text::from),
            })
            .collect();
        (self.body.as_deref().map(Text::from), self.document.as_deref().map(Text::from), chunks)
    }
}

/// The durable message of one row and its chunk rows, or a store error naming the message.
fn assemble(id: &str, rows: &DurableRows) -> Result<Message, PlaneError> {
    rows.assemble().map_err(|e| PlaneError::store(format!("message {id}: its rows do not assemble: {e}")))
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
