//! The producer API's handlers (docs/server.md, "Producer API").
//!
//! Guarantees:
//! - Every refusal is an [`ApiError`] with a stable `kind`; nothing already produced is undone
//!   by any of them.
//! - `append` checks `offset` against the produced length and pushes under the stream's lock:
//!   equal, the text is appended; behind or ahead, `409` with the current `seq`.
//! - `body` pushes each piece of a streaming body as it arrives (characters split between pieces
//!   are joined first); on a reader's cancel it stops reading and answers `409 cancelled`; on
//!   bytes that are not UTF-8 it keeps the longest valid prefix and answers `400 invalid_utf8`.
//! - `event` applies one event of a message with parts at an expected offset, checked like an
//!   append's; `events` applies a streaming body of newline-delimited events line by line as it
//!   arrives, read like `body`; a bad event stops it with `400`, the events before it kept
//!   (`events.rs`).
//! - The reader's `cancel` checks the read token before it looks anything up, so a refusal is
//!   the same `403` whether or not the stream exists.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use twoplane_stream::Position;

use super::body::TextBody;
use super::errors::ApiError;
use super::events::{self, Lines};
use super::guards::{ensure_open, in_order, push_in_order, start_streaming_body};
use super::registry::{Producers, Producing};
use super::rows::{self, CancelOutcome};
use crate::access;
use crate::store::messages;

pub(super) type Reply = Result<Response, ApiError>;

pub(super) fn router(producers: Producers) -> Router {
    let delta_limit = producers.limits.max_delta_bytes;
    let producer = Router::new()
        .route("/v1/streams/{id}", get(status))
        .route("/v1/streams/{id}/open", post(open))
        .route("/v1/streams/{id}/append", post(append).layer(DefaultBodyLimit::max(delta_limit)))
        // The streaming body counts its own bytes (against `max_body_bytes`).
        .route("/v1/streams/{id}/body", post(body).layer(DefaultBodyLimit::disable()))
        .route("/v1/streams/{id}/event", post(event).layer(DefaultBodyLimit::max(delta_limit)))
        // Counted like `body`.
        .route("/v1/streams/{id}/events", post(event_stream).layer(DefaultBodyLimit::disable()))
        // The AI SDK's UI message stream, one message per request (`ui.rs`); counted like `body`.
        .route("/v1/streams/{id}/ui-message-stream", post(super::ui::ingest).layer(DefaultBodyLimit::disable()))
        .route("/v1/streams/{id}/flush", post(flush))
        .route("/v1/streams/{id}/close", post(close))
        .route("/v1/streams/{id}/fail", post(fail))
        .route_layer(axum::middleware::from_fn_with_state(producers.access.clone(), access::require_producer));
    // Pages on allowed origins may cancel (the producer routes above never answer CORS).
    let reader = access::reader_routes(Router::new().route("/v1/streams/{id}/cancel", post(cancel)), &producers.access);
    producer.merge(reader).with_state(producers)
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct OpenOptions {
    /// Insert an empty assistant row first when none has this id.
    #[serde(default)]
    create: bool,
    /// Go on with a stream that ended (or whose producer died) from this offset, its durable end
    /// (docs/server.md, "A stream that goes on"); absent: a new stream.
    offset: Option<u64>,
}

#[derive(Deserialize)]
struct OffsetQuery {
    offset: Option<u64>,
}

/// The `?offset=` of an append or a body, or the API's own error for one that is not a
/// non-negative integer (axum's rejection would answer plain text, with no `kind`).
fn offset_query(query: Result<Query<OffsetQuery>, QueryRejection>) -> Result<Option<u64>, ApiError> {
    query.map(|Query(q)| q.offset).map_err(|e| {
        ApiError::bad_request(
            "bad_offset",
            format!("?offset= must be a whole number of UTF-16 code units, at most 2^64 - 1 ({})", e.body_text()),
        )
    })
}

/// The offset a call cannot go without: `400 missing_offset`, saying what it should be, when
/// the query had none.
fn required(offset: Option<u64>, what_it_is: &'static str) -> Result<u64, ApiError> {
    offset.ok_or_else(|| ApiError::bad_request("missing_offset", what_it_is))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FailRequest {
    message: String,
}

/// The hosted stream `id`, or why there is none: `404` without a row, `409 not_open` with one.
async fn hosted(producers: &Producers, id: &str) -> Result<Arc<Producing>, ApiError> {
    if let Some(p) = producers.get(id) {
        p.touch();
        return Ok(p);
    }
    match rows::exists(&producers.db, id).await {
        Ok(true) => Err(ApiError::not_open(id)),
        Ok(false) => Err(ApiError::unknown_stream(id)),
        Err(e) => Err(ApiError::store(&e)),
    }
}

async fn open(State(producers): State<Producers>, Path(id): Path<String>, body: Bytes) -> Reply {
    let options: OpenOptions = if body.iter().all(u8::is_ascii_whitespace) {
        OpenOptions::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request("bad_request", format!("expected {{\"create\": true|false, \"offset\": <the durable end, to go on with an ended stream>}}: {e}")))?
    };
    if options.create {
        rows::create_if_missing(&producers.db, &id).await.map_err(|e| ApiError::store(&e))?;
    }
    let opened = match options.offset {
        None => producers.plane.open(&id).await,
        Some(at) => producers.plane.reopen(&id, at).await,
    };
    match opened {
        Ok(handle) => {
            let seq = handle.seq();
            let p = producers.adopt(handle);
            tracing::info!(stream_id = ?p.id, seq, "producer opened a stream");
            Ok(Json(json!({ "streamId": p.id, "seq": seq })).into_response())
        }
        Err(e) if e.kind() == twoplane_stream::PlaneErrorKind::WrongOffset => {
            let stands =
                crate::store::messages::one(&producers.db, &id).await.ok().flatten().map(|v| v.seq.max(0) as u64);
            Err(ApiError { durable_seq: stands, ..ApiError::from_plane(&e, &id) })
        }
        Err(e) if e.kind() == twoplane_stream::PlaneErrorKind::OpenRefused => {
            match rows::exists(&producers.db, &id).await {
                Ok(false) => Err(ApiError::unknown_stream(&id)),
                Ok(true) => Err(ApiError::from_plane(&e, &id)),
                Err(e) => Err(ApiError::store(&e)),
            }
        }
        Err(e) => Err(ApiError::from_plane(&e, &id)),
    }
}

/// A body capped at `limit` bytes (axum's limit answered as our 413), or a 400 for any other
/// rejection of the body.
fn small_body(body: Result<Bytes, BytesRejection>, limit: usize, what: &str) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(limit, what)
        } else {
            ApiError::bad_request("bad_request", rejection.body_text())
        }
    })
}

async fn append(
    State(producers): State<Producers>,
    Path(id): Path<String>,
    query: Result<Query<OffsetQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let offset = offset_query(query)?;
    let body = small_body(body, producers.limits.max_delta_bytes, "an append's body")?;
    let offset = required(offset, "append needs ?offset=<the stream's length before this text, in UTF-16 code units>")?;
    append_at(&producers, &id, offset, &body).await
}

/// An append whose offset and body were read: the route's handler and the append shortcut
/// (`shortcut.rs`) both end here.
pub(super) async fn append_at(producers: &Producers, id: &str, offset: u64, body: &[u8]) -> Reply {
    let p = hosted(producers, id).await?;
    // Decoded before anything is pushed: a bad delta appends nothing at all.
    let text = std::str::from_utf8(body).map_err(|_| ApiError::invalid_utf8(p.handle.seq(), "nothing was appended"))?;
    let at = push_in_order(&p, text, Some(offset))?;
    Ok(answer_at(at))
}

async fn body(
    State(producers): State<Producers>,
    Path(id): Path<String>,
    query: Result<Query<OffsetQuery>, QueryRejection>,
    request: Body,
) -> Reply {
    let offset = offset_query(query)?;
    let p = hosted(&producers, &id).await?;
    let _guard = start_streaming_body(&p, offset)?;
    let mut body = TextBody::new(request, producers.limits.max_body_bytes);
    while let Some(piece) = body.next(&p).await? {
        push_in_order(&p, &piece.text, None)?;
        if piece.bad {
            return Err(ApiError::invalid_utf8(p.handle.seq(), "the text before the first invalid byte was appended"));
        }
    }
    Ok(appended(&p))
}

/// One event of a message with parts, at `?offset=` (the message's length before it).
async fn event(
    State(producers): State<Producers>,
    Path(id): Path<String>,
    query: Result<Query<OffsetQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let offset = offset_query(query)?;
    let body = small_body(body, producers.limits.max_delta_bytes, "an event's body")?;
    let offset = required(
        offset,
        "event needs ?offset=<the message's length before this event, in the coordinate of docs/contract.md §8>",
    )?;
    let p = hosted(&producers, &id).await?;
    // Decoded before anything is applied: a bad event changes nothing.
    let json = std::str::from_utf8(&body).map_err(|_| ApiError::invalid_utf8(p.handle.seq(), "nothing was applied"))?;
    let decoded = events::decode(json).map_err(|e| e.at(&p.handle))?;
    let part = in_order(&p, Some(offset), || events::apply(&p, decoded))?;
    Ok(applied(&p, part))
}

/// A streaming body of newline-delimited events, applied line by line as they arrive.
async fn event_stream(
    State(producers): State<Producers>,
    Path(id): Path<String>,
    query: Result<Query<OffsetQuery>, QueryRejection>,
    request: Body,
) -> Reply {
    let offset = offset_query(query)?;
    let p = hosted(&producers, &id).await?;
    let _guard = start_streaming_body(&p, offset)?;
    let mut body = TextBody::new(request, producers.limits.max_body_bytes);
    let mut lines = Lines::new(producers.limits.max_delta_bytes);
    let mut complete = Vec::new();
    loop {
        let piece = body.next(&p).await?;
        let bad = piece.as_ref().is_some_and(|piece| piece.bad);
        match &piece {
            Some(piece) => lines.feed(&piece.text, &mut complete).map_err(|e| e.at(&p.handle))?,
            None => lines.finish(&mut complete),
        }
        let first = lines.count - complete.len() as u64 + 1;
        for (i, line) in complete.drain(..).enumerate() {
            let number = first + i as u64;
            let decoded = events::decode(&line).map_err(|e| in_line(e, number).at(&p.handle))?;
            in_order(&p, None, || events::apply(&p, decoded).map_err(|e| in_line(e, number)))?;
        }
        if bad {
            return Err(ApiError::invalid_utf8(
                p.handle.seq(),
                "the events before the first invalid byte were applied",
            ));
        }
        if piece.is_none() {
            break;
        }
    }
    Ok(Json(json!({ "seq": p.handle.seq(), "durableSeq": p.handle.durable_seq(), "events": lines.count }))
        .into_response())
}

/// An event's refusal, saying which line of the stream it was (the lines before it were applied).
fn in_line(e: ApiError, line: u64) -> ApiError {
    ApiError { message: format!("line {line}: {}; the lines before it were applied", e.message), ..e }
}

/// The answer to an event taken in: as an append's, and the part it touched.
fn applied(p: &Producing, part: Option<u32>) -> Response {
    let at = p.handle.position();
    let mut body = json!({ "seq": at.seq, "durableSeq": at.durable_seq });
    if let Some(part) = part {
        body["part"] = json!(part);
    }
    Json(body).into_response()
}

/// The answer to text taken in: where the stream stands (`seq`), and how much of it the store
/// holds (`durableSeq`): a producer that keeps its text until `durableSeq` covers it can always
/// re-open and append from there.
fn appended(p: &Producing) -> Response {
    answer_at(p.handle.position())
}

/// [`appended`], from where a checked push left the stream.
fn answer_at(at: Position) -> Response {
    /// The answer's fields in the order a JSON object's keys sort (what `json!` wrote before),
    /// without building a map per append.
    #[derive(serde::Serialize)]
    struct At {
        #[serde(rename = "durableSeq")]
        durable_seq: u64,
        seq: u64,
    }
    Json(At { durable_seq: at.durable_seq, seq: at.seq }).into_response()
}

async fn flush(State(producers): State<Producers>, Path(id): Path<String>) -> Reply {
    let p = hosted(&producers, &id).await?;
    ensure_open(&p)?;
    let durable = p.handle.flush().await.map_err(|e| ApiError::from_plane(&e, &id).at(&p.handle))?;
    Ok(Json(json!({ "seq": p.handle.seq(), "durableSeq": durable })).into_response())
}

async fn seal(producers: &Producers, id: &str, error: Option<&str>) -> Reply {
    let p = hosted(producers, id).await?;
    let (ended, outcome) = p.seal(error).await;
    let (seq, durable) = (p.handle.seq(), p.handle.durable_seq());
    // Past the seal deadline: `durableSeq` is exactly the prefix the store holds.
    outcome.map_err(|e| ApiError::from_plane(&e, id).at(&p.handle))?;
    Ok(Json(json!({ "status": ended.as_str(), "seq": seq, "durableSeq": durable })).into_response())
}

async fn close(State(producers): State<Producers>, Path(id): Path<String>) -> Reply {
    seal(&producers, &id, None).await
}

async fn fail(State(producers): State<Producers>, Path(id): Path<String>, body: Bytes) -> Reply {
    let request: FailRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request("bad_request", format!("expected {{\"message\": \"...\"}}: {e}")))?;
    seal(&producers, &id, Some(&request.message)).await
}

async fn status(State(producers): State<Producers>, Path(id): Path<String>) -> Reply {
    let live = producers.get(&id).map(|p| {
        json!({
            "seq": p.handle.seq(),
            "durableSeq": p.handle.durable_seq(),
            "cancelled": p.handle.cancelled(),
            "ended": p.ended().map(|e| e.as_str()),
            "parts": p.handle.part_count(),
            "refused": twoplane_runtime::lock(&p.refused).as_ref().map(|(kind, message)| json!({ "kind": kind, "message": message })),
        })
    });
    let stored = messages::one(&producers.db, &id).await.map_err(|e| ApiError::store(&e))?;
    if live.is_none() && stored.is_none() {
        return Err(ApiError::unknown_stream(&id));
    }
    let stored = stored.map(|m| {
        let mut view = json!({ "status": m.status, "seq": m.seq, "text": m.body });
        if let Some(document) = m.document {
            // A message with parts: its durable document, as JSON text (docs/contract.md §8).
            view["document"] = json!(document);
        }
        view
    });
    Ok(Json(json!({ "streamId": id, "live": live, "stored": stored })).into_response())
}

/// A reader's cancel. The token is checked first; then the row's cancel flag is set, and the
/// plane stops the producer at its next checkpoint.
async fn cancel(State(producers): State<Producers>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(denied) = producers.access.check_read(&headers, &id) {
        tracing::debug!(reason = denied.as_str(), "cancel refused");
        return crate::http::forbidden();
    }
    match rows::request_cancel(&producers.db, &id).await {
        Ok(CancelOutcome::Requested) => {
            // The flag is set, so the host notices at its next checkpoint wherever it runs; a
            // stream hosted here stops now, text flowing or not.
            let here = producers.plane.cancel(&id);
            tracing::info!(stream_id = ?id, hosted_here = here, "a reader asked to cancel");
            (StatusCode::ACCEPTED, Json(json!({ "cancelRequested": true }))).into_response()
        }
        Ok(CancelOutcome::NotStreaming) => {
            ApiError::new(StatusCode::CONFLICT, "not_streaming", "the stream is not live").into_response()
        }
        Ok(CancelOutcome::Unknown) => ApiError::unknown_stream(&id).into_response(),
        Err(e) => ApiError::store(&e).into_response(),
    }
}
