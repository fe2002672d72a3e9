//! The decisions both SQL targets make, written once: which statements a checkpoint and a seal
//! run, and what a read-back means.
//!
//! Guarantees: the open precondition refuses a missing row, a NULL or non-zero length and a row
//! another producer holds, each with a message that says what to fix; a read-back is accepted
//! only when it names a non-negative length; a text slice or body holding a lone surrogate is
//! refused before it reaches the database, while a message's parts (JSON text, whose lone
//! surrogates are escapes) always fit.

use twoplane_core::sql::{MappedSql, Statement};
use twoplane_core::STREAM_STATUS_STREAMING;

use crate::error::{PlaneError, PlaneErrorKind};
use crate::target::{utf8_for_table, AppendRequest, CloseRequest, TargetCaps, TargetMode};

/// A checkpoint's two statements: a text row, or a parts row (docs/contract.md §8).
/// What a SQL target over `sql`'s mapping can do: the table mode, with the optional columns the
/// mapping names.
pub(crate) fn caps(sql: &MappedSql) -> TargetCaps {
    TargetCaps {
        mode: TargetMode::Tables,
        has_host: sql.has_host(),
        has_cancel: sql.has_cancel(),
        has_parts: sql.has_parts(),
    }
}

pub(crate) fn append_statements(sql: &MappedSql, r: &AppendRequest<'_>) -> Result<[Statement; 2], PlaneError> {
    match r.parts {
        None => {
            let text = utf8_for_table(r.text, "a checkpoint slice")?;
            Ok(sql.append(r.stream_id, r.host_token, r.from, r.seq, &text))
        }
        Some(parts) => sql.append_parts(r.stream_id, r.host_token, r.from, r.seq, parts).ok_or_else(no_parts_columns),
    }
}

/// A chunk row read back (`DurableTarget::load`).
pub(crate) fn chunk_row(
    stream_id: &str,
    seq: i64,
    text: Option<String>,
    parts: Option<String>,
) -> Result<twoplane_core::message::MessageChunkRow, PlaneError> {
    let seq = u64::try_from(seq)
        .map_err(|_| PlaneError::store(format!("stream {stream_id}: a chunk row's seq {seq} is negative")))?;
    Ok(twoplane_core::message::MessageChunkRow {
        seq,
        text: text.as_deref().map(twoplane_core::Text::from),
        parts: parts.as_deref().map(twoplane_core::Text::from),
    })
}

/// A continuation's claim (`DurableTarget::reopen`), then the chunk row a compacted row goes back
/// to, in one transaction.
pub(crate) fn reopen_statements(
    sql: &MappedSql,
    r: &crate::target::ReopenRequest<'_>,
) -> Result<Vec<Statement>, PlaneError> {
    let mut statements = vec![sql.reopen(r.stream_id, r.host_token, r.at, r.expand.is_some())];
    if let Some(row) = r.expand {
        statements
            .push(sql.reopen_chunk(r.stream_id, r.host_token, r.at, row.text, row.parts).ok_or_else(no_parts_columns)?);
    }
    Ok(statements)
}

/// A seal's two statements (the fenced compaction, then the chunk delete) and the length it
/// writes into the row.
pub(crate) fn seal_statements(sql: &MappedSql, r: &CloseRequest<'_>) -> Result<([Statement; 2], u64), PlaneError> {
    if r.body_from != 0 {
        return Err(PlaneError::store("table mode compacts the whole body; this one was trimmed"));
    }
    match r.document {
        None => {
            let body = utf8_for_table(r.body, "the response body")?;
            let len = r.body.len() as u64;
            Ok((sql.compact(r.stream_id, r.host_token, &body, len, r.status, r.error), len))
        }
        Some(document) => {
            // The body of a message is a rendering of its text parts; the document holds every
            // unit exactly, so a lone surrogate is written as U+FFFD here rather than lose the
            // seal (docs/contract.md §8).
            let body = String::from_utf16_lossy(r.body);
            let statements = sql
                .compact_message(r.stream_id, r.host_token, &body, r.seq, document, r.status, r.error)
                .ok_or_else(no_parts_columns)?;
            Ok((statements, r.seq))
        }
    }
}

fn no_parts_columns() -> PlaneError {
    PlaneError::new(
        PlaneErrorKind::InvalidArgument,
        "this store maps no parts columns, so it cannot keep a message's parts (docs/contract.md §8)",
    )
}

/// The open probe's row: `(seq, status)`, or `None` when there is no row.
pub(crate) fn openable(stream_id: &str, row: Option<(Option<i64>, Option<String>)>) -> Result<(), PlaneError> {
    let Some((seq, status)) = row else {
        return Err(PlaneError::open_refused(format!(
            "stream {stream_id}: no message row; the application must write the message before opening its stream"
        )));
    };
    match seq {
        None => {
            return Err(PlaneError::open_refused(format!(
                "stream {stream_id}: the row's length is NULL; declare that column NOT NULL DEFAULT 0, \
                 because each checkpoint updates it only where it equals the previous length, and \
                 NULL equals nothing"
            )))
        }
        Some(0) => {}
        Some(n) => {
            return Err(PlaneError::open_refused(format!(
                "stream {stream_id}: the message row already holds {n} code units; a regeneration is a new message"
            )))
        }
    }
    if status.as_deref() == Some(STREAM_STATUS_STREAMING) {
        return Err(PlaneError::open_refused(format!(
            "stream {stream_id}: its status is already {STREAM_STATUS_STREAMING}, so a producer is \
             writing it (if that producer died, the sweeper releases the row once its lease ends)"
        )));
    }
    Ok(())
}

/// The read-back after a producer's claim of a row that goes on from `at`
/// (`DurableTarget::reopen`): the row's `seq`, `status` and `host` (`None` without a host
/// column, whose status alone is the claim).
pub(crate) fn reopened(
    stream_id: &str,
    at: u64,
    row: Option<(Option<i64>, Option<String>, Option<String>)>,
    token: &str,
    has_host: bool,
) -> Result<(), PlaneError> {
    let Some((seq, status, host)) = row else {
        return Err(PlaneError::open_refused(format!("stream {stream_id}: no message row to go on with")));
    };
    let seq = durable_len(stream_id, Some(seq))?;
    if seq != at {
        return Err(wrong_offset(stream_id, at, seq));
    }
    let streaming = status.as_deref() == Some(STREAM_STATUS_STREAMING);
    if streaming && (!has_host || host.as_deref() == Some(token)) {
        return Ok(());
    }
    if streaming {
        return Err(PlaneError::open_refused(format!(
            "stream {stream_id}: a producer on host {host:?} holds the row; this one stands down"
        )));
    }
    Err(PlaneError::store(format!("stream {stream_id}: the claim of the row did not land (its status is {status:?})")))
}

/// A producer going on from `at` where the stream stands at `seq`.
pub(crate) fn wrong_offset(stream_id: &str, at: u64, seq: u64) -> PlaneError {
    PlaneError::new(
        crate::PlaneErrorKind::WrongOffset,
        format!("stream {stream_id}: it stands at {seq}, not {at}; go on from {seq}, its durable end"),
    )
}

/// The host read-back after the open compare-and-swap.
pub(crate) fn open_winner(stream_id: &str, host: Option<String>, token: &str) -> Result<(), PlaneError> {
    if host.as_deref() == Some(token) {
        return Ok(());
    }
    Err(PlaneError::open_refused(format!(
        "stream {stream_id}: a producer on host {host:?} claimed the row first; this open stands down"
    )))
}

/// A read-back length.
pub(crate) fn durable_len(stream_id: &str, seq: Option<Option<i64>>) -> Result<u64, PlaneError> {
    match seq {
        None => Err(PlaneError::store(format!("stream {stream_id}: the read-back found no message row"))),
        Some(None) => Err(PlaneError::store(format!("stream {stream_id}: the read-back length is NULL"))),
        Some(Some(n)) => u64::try_from(n)
            .map_err(|_| PlaneError::store(format!("stream {stream_id}: the read-back length {n} is negative"))),
    }
}

/// What the read-back says about the writer's claim: the row's `status`, and its `host` (`None`
/// for `has_host` false: then the status alone is the claim).
pub(crate) struct Claim<'a> {
    pub status: Option<&'a str>,
    pub host: Option<&'a str>,
    pub has_host: bool,
}

/// Whether the row is still this writer's (`streaming`, and naming `token` when a host column
/// is mapped); the `fenced` error when it is not.
pub(crate) fn still_claimed(stream_id: &str, claim: Claim<'_>, token: &str) -> Result<(), PlaneError> {
    let status_ok = claim.status == Some(STREAM_STATUS_STREAMING);
    let host_ok = !claim.has_host || claim.host == Some(token);
    if status_ok && host_ok {
        return Ok(());
    }
    Err(fenced(stream_id, claim.status, claim.host))
}

/// A seal whose fenced update matched no row: it is this writer's own earlier attempt (its
/// acknowledgement was lost) when the row already holds exactly what the seal writes (the
/// status, the length, this host) and no chunk row is left (compaction deleted them; a sweep,
/// which may also have written `interrupted`, leaves them in place). Anything else means the
/// claim ended before the seal, and the row was left as it was.
pub(crate) fn seal_replayed(
    stream_id: &str,
    row: Option<(Option<i64>, Claim<'_>)>,
    chunks_left: bool,
    token: &str,
    status: &str,
    len: u64,
) -> Result<(), PlaneError> {
    let Some((seq, claim)) = row else {
        return Err(PlaneError::store(format!("stream {stream_id}: the seal found no message row")));
    };
    let host_ok = !claim.has_host || claim.host == Some(token);
    if !chunks_left && claim.status == Some(status) && host_ok && seq.and_then(|n| u64::try_from(n).ok()) == Some(len) {
        return Ok(());
    }
    Err(fenced(stream_id, claim.status, claim.host))
}

fn fenced(stream_id: &str, status: Option<&str>, host: Option<&str>) -> PlaneError {
    PlaneError::new(
        PlaneErrorKind::Fenced,
        format!(
            "stream {stream_id}: the store refused the write because this producer no longer holds the row \
             (status {status:?}, host {host:?}); a sweeper released it, so the store's row is the truth"
        ),
    )
}
