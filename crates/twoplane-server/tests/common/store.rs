//! What a scenario reads of a message straight from PostgreSQL (the `messages` row and its
//! `message_chunks` rows, docs/contract.md §6), and the checks every scenario makes of it.
//!
//! Guarantees: [`stored_row`] returns the chunk rows in `seq` order and an error, not a panic,
//! naming the message when a query fails; [`tiled_text`] reports every way the rows fail to tile
//! the text (as failures naming the message) and still returns the text they assemble.
#![allow(dead_code)] // each test binary uses a different part of `common`

use twoplane_core::Text;

/// A message row and its chunk rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRow {
    pub body: String,
    pub seq: i64,
    pub status: Option<String>,
    pub host: Option<String>,
    /// (seq, text) in `seq` order.
    pub chunks: Vec<(i64, String)>,
}

pub async fn stored_row(client: &tokio_postgres::Client, id: &str) -> Result<StoredRow, String> {
    let row = client
        .query_one("SELECT body, seq, status, host FROM messages WHERE id = $1", &[&id])
        .await
        .map_err(|e| format!("reading message {id}: {e}"))?;
    let chunks = client
        .query(r#"SELECT "seq", "text" FROM "message_chunks" WHERE "streamId" = $1 ORDER BY "seq""#, &[&id])
        .await
        .map_err(|e| format!("reading the chunks of {id}: {e}"))?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    Ok(StoredRow { body: row.get(0), seq: row.get(1), status: row.get(2), host: row.get(3), chunks })
}

/// The text of message `id`, body then chunk rows. The chunk rows must tile the text after the
/// body exactly: each starts where the previous ended (no overlap: nothing duplicated; no hole:
/// nothing lost) and its `seq` names its end; the row's `seq` column names the whole length.
/// Each breach is pushed onto `failures`.
pub fn tiled_text(id: &str, row: &StoredRow, failures: &mut Vec<String>) -> Text {
    let mut text = Text::from(row.body.as_str());
    for (seq, chunk) in &row.chunks {
        let start = text.len() as i64;
        let len = Text::from(chunk.as_str()).len() as i64;
        if *seq != start + len {
            failures.push(format!("{id}: a chunk row ending at {seq} holds {len} units after {start}"));
        }
        text.push_str(chunk);
    }
    if row.seq != text.len() as i64 {
        failures.push(format!("{id}: the seq column says {} but body plus chunks hold {}", row.seq, text.len()));
    }
    text
}

/// Whether `a` is a prefix of `of`, in UTF-16 code units.
pub fn is_prefix(a: &Text, of: &Text) -> bool {
    a.len() <= of.len() && a.units() == &of.units()[..a.len()]
}
