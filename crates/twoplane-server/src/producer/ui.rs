//! The AI SDK's UI message stream as a producer body (docs/ai-sdk.md, "Producing"):
//! `POST /v1/streams/{id}/ui-message-stream` with the SSE text `toUIMessageStreamResponse()`
//! sends, read as it arrives.
//!
//! Guarantees:
//! - One request is one message: the stream is opened (its row created when missing) unless this
//!   server already streams it, every chunk is mapped onto the message's parts by the core
//!   ([`twoplane_core::ui::UiIngest`]) and applied as it arrives, and the stream is sealed when the
//!   body ends: `complete`, or `cancelled` when the producer sent `abort`.
//! - A chunk that is not JSON, or that the mapping cannot place (a delta for an id no part was
//!   started with, a `start` naming another message), is `400 bad_chunk` naming the core's kind
//!   and field; what came before it stays, and the stream is sealed `error` with that message,
//!   so its readers end. The stream's status (`GET /v1/streams/{id}`, `live.refused`) repeats
//!   that refusal's kind and message while the stream is hosted here.
//! - A reader's cancel ends the request with `409 cancelled` (the producer stops its model) and
//!   the readers get `abort`; a body that breaks off (the producer went away) seals the stream
//!   `interrupted`. `[DONE]`, comments and empty events are skipped.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use twoplane_core::json::parse_value;
use twoplane_core::ui::{UiIngest, UiOp};
use twoplane_core::{SseDecoder, Text};

use super::body::TextBody;
use super::errors::ApiError;
use super::guards::{in_order, start_streaming_body};
use super::registry::{Ending, Producers, Producing};
use super::rows;

pub(super) async fn ingest(
    State(producers): State<Producers>,
    Path(id): Path<String>,
    request: Body,
) -> Result<Response, ApiError> {
    let p = open(&producers, &id).await?;
    let guard = start_streaming_body(&p, None)?;
    // A stream that goes on (the SDK's continuation of a message) is ingested as it stands.
    let mut ui = match p.handle.message().filter(|m| !m.is_empty()) {
        Some(message) => UiIngest::going_on(Text::from(id.as_str()), &message),
        None => UiIngest::new(Text::from(id.as_str()), u32::try_from(p.handle.part_count()).unwrap_or(u32::MAX)),
    };
    let mut body = TextBody::new(request, producers.limits.max_body_bytes);
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    let mut chunks = 0u64;
    let mut aborted: Option<Option<String>> = None;
    let outcome: Result<(), ApiError> = async {
        loop {
            let piece = body.next(&p).await?;
            let Some(piece) = piece else { break };
            decoder.feed(piece.text.as_bytes(), &mut events);
            for event in events.drain(..) {
                let data = event.data.trim();
                if data.is_empty() || data == "[DONE]" {
                    continue;
                }
                let chunk = parse_value(data).map_err(|e| bad_chunk(&p, chunks, &e))?;
                let ops = ui.feed(&chunk).map_err(|e| bad_chunk(&p, chunks, &e))?;
                chunks += 1;
                in_order(&p, None, || ops.into_iter().try_for_each(|op| apply(&p, op, &mut aborted)))?;
            }
            if piece.bad {
                return Err(ApiError::invalid_utf8(
                    p.handle.seq(),
                    "the chunks before the first invalid byte were applied",
                ));
            }
        }
        Ok(())
    }
    .await;
    drop(guard);
    let ending = match &outcome {
        Ok(()) => match &aborted {
            Some(reason) => Ending::Cancelled(reason.as_deref()),
            None => Ending::Done,
        },
        // A reader cancelled: the plane seals the stream `cancelled` itself.
        Err(e) if e.kind == "cancelled" => return Err(e_at(outcome.unwrap_err(), &p)),
        // The producer went away mid-body: nothing more will come.
        Err(e) if e.kind == "body_aborted" => {
            let _ = p.seal_as(Ending::Interrupted).await;
            return Err(e_at(outcome.unwrap_err(), &p));
        }
        Err(e) => {
            // Said again by the status answer: a client still sending when this answer leaves can
            // have its connection reset under it, and ask there why (docs/ai-sdk.md).
            *twoplane_runtime::lock(&p.refused) = Some((e.kind, e.message.clone()));
            Ending::Failed(&e.message)
        }
    };
    let (ended, sealed) = p.seal_as(ending).await;
    match outcome {
        Err(e) => Err(e_at(e, &p)),
        Ok(()) => {
            sealed.map_err(|e| ApiError::from_plane(&e, &id).at(&p.handle))?;
            let answer = json!({
                "status": ended.as_str(),
                "seq": p.handle.seq(),
                "durableSeq": p.handle.durable_seq(),
                "chunks": chunks,
            });
            Ok((StatusCode::OK, Json(answer)).into_response())
        }
    }
}

/// The stream `id` hosted here and open, opened now (its row created when missing) if it is not.
async fn open(producers: &Producers, id: &str) -> Result<std::sync::Arc<Producing>, ApiError> {
    if let Some(p) = producers.get(id).filter(|p| !p.handle.is_sealed()) {
        p.touch();
        return Ok(p);
    }
    rows::create_if_missing(&producers.db, id).await.map_err(|e| ApiError::store(&e))?;
    match producers.plane.open(id).await {
        Ok(handle) => {
            let p = producers.adopt(handle);
            tracing::info!(stream_id = ?p.id, "a UI message stream opened a stream");
            Ok(p)
        }
        Err(e) => Err(ApiError::from_plane(&e, id)),
    }
}

/// One operation of a chunk, applied (the caller holds `p.order`).
fn apply(p: &Producing, op: UiOp, aborted: &mut Option<Option<String>>) -> Result<(), ApiError> {
    let plane = |e: twoplane_stream::PlaneError| ApiError::from_plane(&e, &p.id).at(&p.handle);
    match op {
        UiOp::Event(event) => p.handle.event(event).map_err(plane),
        UiOp::Delta { part, text } => p.handle.push_part_units(part, text.units()).map_err(plane),
        UiOp::Abort { reason } => {
            *aborted = Some(reason.map(|r| r.to_string_lossy()));
            Ok(())
        }
    }
}

/// `400 bad_chunk` for the chunk after the first `applied` ones.
fn bad_chunk(p: &Producing, applied: u64, e: &twoplane_core::Error) -> ApiError {
    let field = e.field_name().map(|f| format!(" (field {f})")).unwrap_or_default();
    ApiError::bad_request(
        "bad_chunk",
        format!(
            "chunk {}: {}: {}{field}; the {applied} chunks before it were applied and the stream is sealed error",
            applied + 1,
            e.kind().as_str(),
            e.message()
        ),
    )
    .at(&p.handle)
}

fn e_at(e: ApiError, p: &Producing) -> ApiError {
    e.at(&p.handle)
}
