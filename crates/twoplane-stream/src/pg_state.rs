//! The store's word on a message row as PostgreSQL returns it (the `probe_state` columns, from a
//! read-back or from the append's `RETURNING`), for the target and its group commit alike.
//!
//! Guarantees: a length is accepted only when it is a non-negative integer of any width; the
//! cancel cell is read with JavaScript's truthiness, whatever its type; an acknowledgement is
//! given only while the row still names this writer's claim (else `fenced`).

use tokio_postgres::Row;
use twoplane_core::sql::MappedSql;

use crate::error::PlaneError;
use crate::exec::{pg_cell, pg_int};
use crate::target::AppendAck;
use crate::verdict;

pub(crate) fn db_err<E: std::error::Error + Send + Sync + 'static>(context: &str) -> impl FnOnce(E) -> PlaneError + '_ {
    move |e| PlaneError::store(format!("postgres: {context}")).with_source(e)
}

/// JavaScript-style truthiness of the cancel cell.
fn truthy_cell(row: &Row, idx: usize) -> Result<bool, tokio_postgres::Error> {
    pg_cell(row, idx).map(|cell| cell.truthy())
}

/// A row's `seq`, `status` and `host` (`None` without a host column).
pub(crate) type RowClaim = (Option<i64>, Option<String>, Option<String>);

/// A row of the `probe_state` columns (seq, cancel when mapped, status, host when mapped), read
/// back or returned by the append's compare-and-swap: the acknowledgement, and the row's claim;
/// `None` when there is no row.
pub(crate) fn state_of(
    sql: &MappedSql,
    stream_id: &str,
    row: Option<&Row>,
) -> Result<(AppendAck, Option<RowClaim>), PlaneError> {
    let Some(r) = row else {
        return Ok((AppendAck { durable_seq: verdict::durable_len(stream_id, None)?, cancel_requested: false }, None));
    };
    let seq = pg_int(r, 0).map_err(db_err("reading the length column"))?;
    let cancel = if sql.has_cancel() { truthy_cell(r, 1).map_err(db_err("reading the cancel column"))? } else { false };
    let status_at = if sql.has_cancel() { 2 } else { 1 };
    let status = r.try_get::<_, Option<String>>(status_at).map_err(db_err("reading the status column"))?;
    let host = if sql.has_host() {
        r.try_get::<_, Option<String>>(status_at + 1).map_err(db_err("reading the host column"))?
    } else {
        None
    };
    let ack = AppendAck { durable_seq: verdict::durable_len(stream_id, Some(seq))?, cancel_requested: cancel };
    Ok((ack, Some((seq, status, host))))
}

/// An acknowledgement whose row still names this writer's claim, or the `fenced` error.
pub(crate) fn claimed_ack(
    sql: &MappedSql,
    stream_id: &str,
    token: &str,
    (ack, row): (AppendAck, Option<RowClaim>),
) -> Result<AppendAck, PlaneError> {
    if let Some((_, status, host)) = &row {
        let claim = verdict::Claim { status: status.as_deref(), host: host.as_deref(), has_host: sql.has_host() };
        verdict::still_claimed(stream_id, claim, token)?;
    }
    Ok(ack)
}
