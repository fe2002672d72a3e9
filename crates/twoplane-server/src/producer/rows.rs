//! The producer API's own statements on the message table: create a row on request, and set the
//! cancel flag for a reader.
//!
//! Guarantees: creating is idempotent (an existing row is left exactly as it is, so a retried
//! open cannot reset a message); the cancel flag is set only on a row that is still
//! `streaming`, so a late cancel cannot mark a finished message. The statements are built for
//! the database's dialect and run through the plane's executor ([`Database::executor`]).

use twoplane_core::sql::{quote_ident, SqlValue, Statement};
use twoplane_core::STREAM_STATUS_STREAMING;
use twoplane_stream::{Cell, PlaneError};

use crate::store::{Database, CANCEL_COLUMN, MESSAGE_TABLE};

/// What a reader's cancel found.
#[derive(Debug, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The flag is set; the producer stops at its next checkpoint.
    Requested,
    /// The row exists but its stream is not live (finished, or never opened).
    NotStreaming,
    /// No row has that id.
    Unknown,
}

fn text(v: &str) -> SqlValue {
    SqlValue::Text(v.to_owned())
}

/// Insert an empty assistant row `id` unless one exists.
pub async fn create_if_missing(db: &Database, id: &str) -> Result<(), PlaneError> {
    let p = db.executor().dialect().placeholder(1);
    let sql = format!(
        "INSERT INTO {} (id, role) VALUES ({p}, 'assistant') ON CONFLICT (id) DO NOTHING",
        quote_ident(MESSAGE_TABLE)?
    );
    db.executor().execute(Statement { sql, params: vec![text(id)] }, "creating a message row").await.map(drop)
}

/// Whether a message row `id` exists.
pub async fn exists(db: &Database, id: &str) -> Result<bool, PlaneError> {
    let p = db.executor().dialect().placeholder(1);
    let sql = format!("SELECT count(*) FROM {} WHERE id = {p}", quote_ident(MESSAGE_TABLE)?);
    let rows = db.executor().read(Statement { sql, params: vec![text(id)] }, "looking a message row up").await?;
    match rows.into_iter().next().and_then(|row| row.into_iter().next()) {
        Some(Cell::Int(n)) => Ok(n > 0),
        other => Err(PlaneError::store(format!("counting message rows returned {other:?}"))),
    }
}

/// A reader's cancel: set the flag on the live row `id`.
pub async fn request_cancel(db: &Database, id: &str) -> Result<CancelOutcome, PlaneError> {
    let d = db.executor().dialect();
    let sql = format!(
        "UPDATE {} SET {} = {} WHERE id = {} AND status = {}",
        quote_ident(MESSAGE_TABLE)?,
        quote_ident(CANCEL_COLUMN)?,
        d.placeholder(1),
        d.placeholder(2),
        d.placeholder(3)
    );
    // The flag is 1 on SQLite's integer column and true on PostgreSQL's boolean one: the
    // executor binds an integer to a boolean as 0 or 1.
    let params = vec![SqlValue::Int(1), text(id), text(STREAM_STATUS_STREAMING)];
    let changed = db.executor().execute(Statement { sql, params }, "setting the cancel flag").await? > 0;
    if changed {
        Ok(CancelOutcome::Requested)
    } else if exists(db, id).await? {
        Ok(CancelOutcome::NotStreaming)
    } else {
        Ok(CancelOutcome::Unknown)
    }
}
