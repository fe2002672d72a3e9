//! The producer API's own statements on the message table: create a row on request, and set the
//! cancel flag for a reader.
//!
//! Guarantees: creating is idempotent (an existing row is left exactly as it is, so a retried
//! open cannot reset a message); the cancel flag is set only on a row that is still
//! `streaming`, so a late cancel cannot mark a finished message.

use twoplane_core::sql::quote_ident;
use twoplane_core::STREAM_STATUS_STREAMING;
use twoplane_stream::PlaneError;

use crate::store::postgres::pg_err;
use crate::store::sqlite::sqlite_err;
use crate::store::{Backend, Database, CANCEL_COLUMN, MESSAGE_TABLE};

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

/// Insert an empty assistant row `id` unless one exists.
pub async fn create_if_missing(db: &Database, id: &str) -> Result<(), PlaneError> {
    let message = quote_ident(MESSAGE_TABLE)?;
    let id = id.to_owned();
    match db.backend() {
        Backend::Sqlite(store) => {
            let sql = format!("INSERT INTO {message} (id, role) VALUES (?1, 'assistant') ON CONFLICT (id) DO NOTHING");
            store.with_connection(move |conn| conn.execute(&sql, [id]).map(drop).map_err(sqlite_err)).await
        }
        Backend::Postgres(store) => {
            let sql = format!("INSERT INTO {message} (id, role) VALUES ($1, 'assistant') ON CONFLICT (id) DO NOTHING");
            let session = store.session().await?;
            session.client().execute(&sql, &[&id]).await.map(drop).map_err(pg_err)
        }
    }
}

/// Whether a message row `id` exists.
pub async fn exists(db: &Database, id: &str) -> Result<bool, PlaneError> {
    let message = quote_ident(MESSAGE_TABLE)?;
    let id = id.to_owned();
    match db.backend() {
        Backend::Sqlite(store) => {
            let sql = format!("SELECT count(*) FROM {message} WHERE id = ?1");
            store
                .with_connection(move |conn| conn.query_row(&sql, [id], |r| r.get::<_, i64>(0)).map_err(sqlite_err))
                .await
                .map(|n| n > 0)
        }
        Backend::Postgres(store) => {
            let sql = format!("SELECT count(*) FROM {message} WHERE id = $1");
            let session = store.session().await?;
            let row = session.client().query_one(&sql, &[&id]).await.map_err(pg_err)?;
            Ok(row.get::<_, i64>(0) > 0)
        }
    }
}

/// A reader's cancel: set the flag on the live row `id`.
pub async fn request_cancel(db: &Database, id: &str) -> Result<CancelOutcome, PlaneError> {
    let (message, cancel) = (quote_ident(MESSAGE_TABLE)?, quote_ident(CANCEL_COLUMN)?);
    let changed = match db.backend() {
        Backend::Sqlite(store) => {
            let sql = format!("UPDATE {message} SET {cancel} = 1 WHERE id = ?1 AND status = ?2");
            let id = id.to_owned();
            store
                .with_connection(move |conn| {
                    conn.execute(&sql, rusqlite::params![id, STREAM_STATUS_STREAMING]).map_err(sqlite_err)
                })
                .await?
                > 0
        }
        Backend::Postgres(store) => {
            let sql = format!("UPDATE {message} SET {cancel} = true WHERE id = $1 AND status = $2");
            let session = store.session().await?;
            session.client().execute(&sql, &[&id, &STREAM_STATUS_STREAMING]).await.map_err(pg_err)? > 0
        }
    };
    if changed {
        Ok(CancelOutcome::Requested)
    } else if exists(db, id).await? {
        Ok(CancelOutcome::NotStreaming)
    } else {
        Ok(CancelOutcome::Unknown)
    }
}
