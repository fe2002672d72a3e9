//! The AI SDK's resume route, served from a twoplane stream (docs/ai-sdk.md, "Resuming"):
//! `GET /v1/streams/{id}/ui-message-stream[?from=N]`, a drop-in for the `GET {api}/{chatId}/stream`
//! that `useChat({ resume: true })` asks, which the `twoplane/ai-sdk` transport asks with the
//! offset of the message it already holds.
//!
//! Guarantees:
//! - `204` when the message has no stream (no row, or a row no stream ever opened); otherwise the
//!   UI message stream's headers and a body of `data: <chunk>` events: `start` (the message id),
//!   the compacted replay of the message so far (per part its start, one delta with its body,
//!   its end if it ended, in the original order), the live tail as it is produced, the end (a
//!   `finish`, an `abort` for a cancelled stream, an `error` for a failed one), and `[DONE]`.
//!   Chunks are the core's (`twoplane_core::ui`): this module only moves them.
//! - Chunks go in groups (the replay, one frame's chunks, the end), and the last event of each
//!   group carries `id:` the message's length (docs/contract.md §8) the group brings the reader
//!   to; the others carry none, so a `Last-Event-ID` is always a whole group's. With `?from=N`,
//!   the replay is cut in two: the chunks that rebuild the message at `N` (what the reader holds;
//!   the group ends with `id: N`), then the ones that bring it to the message so far (`id` past
//!   `N`): a reader skips the first group's callbacks and delivers nothing twice. From the store
//!   the same cut is made wherever the rows can say what the message was at `N` (a sealed
//!   document keeps the order of its runs and events); a message compacted without that order
//!   (by an older version) is known only whole, and is then one group at its length.
//! - One reader path: a reader here is a plane subscription like a reader of `/api/stream`, read
//!   as UI events instead of frames (`Plane::subscribe_ui`), in the same response body
//!   ([`crate::http`]'s `SseBody`): the same admission (the server-wide bound and the caps per
//!   stream and per address, counted together with `/api/stream`'s readers), the same refusals,
//!   keep-alive, write-stall limit, direct path and hand-off to the stream's writer tasks. A
//!   hosted stream encodes each frame once for all its UI readers.
//! - The store is read once at the join (the row says whether there is anything to resume, and
//!   answers a stream that ended and is not hosted here), and again only when the live leg ends
//!   short of the stream's end (a reader that overflowed, a producer fenced off, a relayed stream
//!   whose host went away): then what the store holds beyond what the reader has is sent, and the
//!   reader follows the stream live again from there, or ends as the row says. A live reader is
//!   woken by the plane and never polls the store; a stream nobody serves any more ends the
//!   response (without `[DONE]`) after a few tries. Nothing is sent twice: each step sends only
//!   what takes the reader from what it was sent to what is there now.
//! - Read tokens as for every reader (`?token=` or the header), checked once per request: first,
//!   before the query or the row is looked at (a refusal is the same `403` whatever they are),
//!   by the plane's authorizer, whose proof the join takes instead of asking again. Each
//!   continuation of a long response is a new request: it checks again where it joins the plane
//!   (an end the store answers joins nothing). Whether the plane or the store answers is decided
//!   once per request too, on one lookup of the plane (`Leg::next`, for both).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;
use twoplane_core::message::{assemble_durable_message_at, Message};
use twoplane_core::ui::UiEvents;
use twoplane_core::{StreamStatus, Text};
use twoplane_stream::{Plane, PlaneErrorKind, Subscription, UiOutcome};

use crate::access::Access;
use crate::http::{
    Continuation, Continue, HttpCaller, SseBody, SseConfig, SseStats, RESUME_PATH_HEAD, RESUME_PATH_TAIL,
};
use crate::refusal::refuse;
use crate::store::{messages, Database, MessageView};

/// The headers of a UI message stream response, as the AI SDK's own `createUIMessageStreamResponse`
/// sends them.
const UI_HEADERS: [(&str, &str); 5] = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("connection", "keep-alive"),
    ("x-vercel-ai-ui-message-stream", "v1"),
    ("x-accel-buffering", "no"),
];

/// Continuations in a row that brought the reader nothing before its response ends (a stream
/// whose store row says streaming while no instance serves it), and the pause before each.
const IDLE_CONTINUATIONS: u32 = 4;
const IDLE_PAUSE: Duration = Duration::from_millis(500);

#[derive(Clone)]
struct UiState {
    plane: Plane,
    db: Database,
    /// The SSE endpoint's settings and counters: its bounds and keep-alive are this route's too.
    sse: SseConfig,
    stats: Arc<SseStats>,
}

#[derive(Deserialize)]
struct FromQuery {
    from: Option<u64>,
    /// The reader replays what it holds itself (its transport kept a snapshot): send only what
    /// follows `from`, without `start` and the message there.
    /// `0` or `1`; anything else is refused (`invalid_tail`) rather than read as either.
    #[serde(default)]
    tail: Option<String>,
}

/// The resume route, as a reader route (read tokens, pages on allowed origins), admitting its
/// readers under the SSE endpoint's bounds and counting them among its live readers (`stats`).
pub fn routes(plane: Plane, db: Database, access: Arc<Access>, sse: SseConfig, stats: Arc<SseStats>) -> Router {
    let state = UiState { plane, db, sse, stats };
    let routes =
        Router::new().route(&format!("{RESUME_PATH_HEAD}{{id}}{RESUME_PATH_TAIL}"), get(resume)).with_state(state);
    crate::access::reader_routes(routes, &access)
}

async fn resume(
    State(state): State<UiState>,
    Path(id): Path<String>,
    query: Result<Query<FromQuery>, axum::extract::rejection::QueryRejection>,
    request: axum::extract::Request,
) -> Response {
    let caller = HttpCaller { headers: request.headers().clone() };
    // The request's one token check, before anything else is looked at (so a refusal is the
    // same 403 whatever the query or the row): the plane's authorizer, whose proof the join
    // below takes instead of asking again.
    let asked_from = query.as_ref().ok().and_then(|q| q.from).unwrap_or(0);
    let authorized = match state.plane.authorize_read(&caller, &id, asked_from).await {
        Ok(authorized) => authorized,
        Err(e) if e.kind() == PlaneErrorKind::Forbidden => return crate::http::forbidden(),
        Err(e) => {
            tracing::warn!(stream_id = ?id, error = %e, "ui-message-stream: subscribe failed");
            return refuse(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "the stream plane is unavailable");
        }
    };
    let Ok(Query(query)) = query else {
        return refuse(StatusCode::BAD_REQUEST, "invalid_from", "?from= must be a whole number of code units");
    };
    let from = query.from.unwrap_or(0);
    let tail = match query.tail.as_deref() {
        None | Some("0") => false,
        Some("1") => from > 0,
        Some(_) => return refuse(StatusCode::BAD_REQUEST, "invalid_tail", "?tail= is 0 or 1"),
    };
    let view = match read_row(&state.db, &id).await {
        Ok(view) => view,
        Err(e) => {
            tracing::warn!(stream_id = ?id, error = %e, "ui-message-stream: store error");
            return refuse(StatusCode::SERVICE_UNAVAILABLE, "store", "the database is unavailable");
        }
    };
    // No row, or a row no stream ever opened: nothing to resume.
    let Some(view) = view.filter(|v| v.status.is_some() || v.seq > 0) else {
        return StatusCode::NO_CONTENT.into_response();
    };
    let pass = match crate::http::admit(&state.sse, &state.stats, &id, &request) {
        Ok(pass) => pass,
        Err(reached) => return crate::http::too_many_subscribers(reached),
    };
    let leg = Leg { id: &id, view: &view, at: from, started: tail, first: true };
    let subscription = match leg.next(&state.plane, Checked::Done(authorized)).await {
        Ok(Continuation { subscription: Some(subscription), .. }) => subscription,
        Ok(Continuation { bytes, subscription: None }) => Subscription::ui_fixed(bytes),
        // The proof is for this stream: no join refuses it.
        Err(e) if e.kind() == PlaneErrorKind::Forbidden => return crate::http::forbidden(),
        Err(e) => {
            tracing::warn!(stream_id = ?id, error = %e, "ui-message-stream: subscribe failed");
            return refuse(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "the stream plane is unavailable");
        }
    };
    let resume = UiContinue {
        plane: state.plane.clone(),
        db: state.db.clone(),
        caller,
        id: id.clone(),
        started: tail,
        idle: 0,
        last: None,
    };
    let body = SseBody::new(subscription, &state.sse, state.stats.clone())
        .admitted(pass)
        .counted_as_ui(crate::metrics::ReaderGauge::new("ui_message_stream"))
        .continued_by(Box::new(resume));
    crate::http::handoff_response(body, &UI_HEADERS)
}

/// Whether a leg's reader was checked: by the request already (its proof), or not yet (the
/// caller to ask the plane's authorizer about, once, where the leg joins the plane).
enum Checked<'a> {
    Done(twoplane_stream::Authorized),
    Ask(&'a HttpCaller),
}

impl Checked<'_> {
    async fn proof(
        self,
        plane: &Plane,
        id: &str,
        at: u64,
    ) -> Result<twoplane_stream::Authorized, twoplane_stream::PlaneError> {
        match self {
            Checked::Done(authorized) => Ok(authorized),
            Checked::Ask(caller) => plane.authorize_read(caller, id, at).await,
        }
    }
}

/// One leg of a reader's response, from the row the request read (`view`): the one place that
/// decides between the plane and the store, on one lookup of the plane.
struct Leg<'a> {
    id: &'a str,
    view: &'a MessageView,
    /// What the reader holds, and whether the response has its `start`.
    at: u64,
    started: bool,
    /// The response's first leg (a new request), not a continuation.
    first: bool,
}

impl Leg<'_> {
    /// A stream hosted here is joined live. One that is not is the store's: a first leg takes
    /// the store's answer only when the row says the stream ended (answered from the row
    /// without asking the relay, and waiting for it), a continuation takes what the store holds
    /// beyond what the reader has, and the end when the row says it ended. A leg the store did
    /// not end follows the stream through the relay. The reader is checked (`checked`) before
    /// any join, and only there: an end the store answers joins nothing.
    async fn next(self, plane: &Plane, checked: Checked<'_>) -> Result<Continuation, twoplane_stream::PlaneError> {
        let Leg { id, view, mut at, mut started, first } = self;
        if let Some(hosted) = plane.hosted_ui(id) {
            let subscription = hosted.join(checked.proof(plane, id, at).await?, at, !started)?;
            return Ok(Continuation { bytes: Bytes::new(), subscription: Some(subscription) });
        }
        let mut out = String::new();
        let text_id = Text::from(id);
        if first && stored(view).sealed.is_some() {
            // A tail only where the rows can say what the message was at `at`; otherwise the
            // whole replay (with its `start`, which the SDK rebuilds from).
            let held = (started && held_at(view, at).is_some()).then_some(at);
            from_store(&text_id, view, at, held, &mut out);
            return Ok(Continuation { bytes: Bytes::from(out), subscription: None });
        }
        if !first {
            let held = started.then_some(at);
            let (ended, events) = from_store(&text_id, view, at, held, &mut out);
            if ended {
                return Ok(Continuation { bytes: Bytes::from(out), subscription: None });
            }
            if !out.is_empty() {
                started = true;
                at = events.at();
            }
        }
        let subscription = plane.relayed_ui(checked.proof(plane, id, at).await?, at, !started).await;
        Ok(Continuation { bytes: Bytes::from(out), subscription: Some(subscription) })
    }
}

/// How a UI reader's response goes on after its live leg ended short of the stream's end.
struct UiContinue {
    plane: Plane,
    db: Database,
    caller: HttpCaller,
    id: String,
    /// The response has its `start` (a leg handed the reader its replay).
    started: bool,
    /// Continuations in a row that moved the reader nowhere.
    idle: u32,
    last: Option<u64>,
}

impl Continue for UiContinue {
    fn next(&mut self, outcome: UiOutcome) -> Pin<Box<dyn Future<Output = Option<Continuation>> + Send>> {
        self.started |= outcome.started;
        self.idle = if self.last == Some(outcome.at) { self.idle + 1 } else { 0 };
        self.last = Some(outcome.at);
        if self.idle >= IDLE_CONTINUATIONS {
            tracing::debug!(stream_id = ?self.id, at = outcome.at, "ui-message-stream: nobody serves the stream; the response ends");
            return Box::pin(async { None });
        }
        let (plane, db, caller, id, started, idle) =
            (self.plane.clone(), self.db.clone(), self.caller.clone(), self.id.clone(), self.started, self.idle);
        Box::pin(async move {
            if idle > 0 {
                tokio::time::sleep(IDLE_PAUSE * idle).await;
            }
            let view = read_row(&db, &id).await.ok().flatten()?;
            // A new request of the response: its reader is checked again where it joins.
            let leg = Leg { id: &id, view: &view, at: outcome.at, started, first: false };
            leg.next(&plane, Checked::Ask(&caller)).await.ok()
        })
    }
}

/// The store's answer to a reader that holds the message at `from`, by the core's rule
/// ([`UiEvents`]): with `held` `None` (a new response), `start` and the message there, then the
/// rest of the stored message; with `held` (a response under way, whose reader holds `held`),
/// only the rest, when the rows can say what the message was there. Then, when the row says the
/// stream ended, its end chunks and `[DONE]`. Returns whether it ended, and what the reader then
/// holds.
fn from_store(id: &Text, view: &MessageView, from: u64, held: Option<u64>, out: &mut String) -> (bool, UiEvents) {
    let stored = stored(view);
    let whole = stored.message.unwrap_or_default();
    let mut events = match held {
        // Cut only where the reader lacks something: a reader at or past the end takes the whole
        // message in one group, and its rows are not assembled a second time. The reader holds
        // all of it (or claims more), or the message was compacted without its spans and is
        // known only whole: one group at its length (docs/server.md says what that costs).
        None => match (from < whole.len()).then(|| held_at(view, from)).flatten() {
            Some(at_from) => UiEvents::join(out, id, at_from, Some(&whole), true),
            None => UiEvents::join(out, id, whole, None, true),
        },
        Some(at) => match (whole.len() > at).then(|| held_at(view, at)).flatten() {
            Some(had) => UiEvents::join(out, id, had, Some(&whole), false),
            // The reader holds the whole message already (it missed only the end): nothing to
            // write, but the end below closes what the message left open and carries its
            // length, as the live end would.
            None => UiEvents::holding(id, whole),
        },
    };
    let ended = stored.sealed.is_some();
    if let Some(status) = stored.sealed {
        events.end(out, status, None);
    }
    (ended, events)
}

/// The message's row and chunk rows, counted (`twoplane_store_reads_total`): a live reader's
/// only read is its join's.
async fn read_row(db: &Database, id: &str) -> Result<Option<MessageView>, twoplane_stream::PlaneError> {
    metrics::counter!("twoplane_store_reads_total", "reader" => "ui_message_stream").increment(1);
    messages::one(db, id).await
}

/// What the store holds of a message.
struct Stored {
    message: Option<Message>,
    sealed: Option<StreamStatus>,
}

/// The stored message of a view and how its row ended (`None`: still streaming).
fn stored(view: &MessageView) -> Stored {
    Stored { message: assembled(view), sealed: view.status.as_deref().and_then(status_of) }
}

/// A stored status other than `streaming`.
fn status_of(status: &str) -> Option<StreamStatus> {
    StreamStatus::ALL.into_iter().find(|s| s.as_str() == status)
}

/// The durable message of a view as it stood at `at` (what a reader holding `at` holds), where
/// the rows can say: a text-only message at any offset, a message with parts wherever its chunk
/// rows reach (not inside a compacted one).
fn held_at(view: &MessageView, at: u64) -> Option<Message> {
    match &view.rows {
        // A single text, already joined with its chunk rows: the core's assembly of a body alone.
        None => assemble_durable_message_at(Some(&Text::from(view.body.as_str())), None, 0, &[], at).ok().flatten(),
        Some(rows) => rows.assemble_at(at).ok().flatten(),
    }
}

/// The durable message of a view: its rows assembled, or its text (a single-text message).
fn assembled(view: &MessageView) -> Option<Message> {
    match &view.rows {
        None => Some(Message::from_text(Text::from(view.body.as_str()))),
        Some(rows) => rows.assemble().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed_text(body: &str) -> MessageView {
        MessageView {
            id: "m1".into(),
            role: "assistant".into(),
            body: body.into(),
            status: Some("complete".into()),
            seq: body.len() as i64,
            host: None,
            document: None,
            rows: None,
        }
    }

    /// The `id:` of the last event before `[DONE]`.
    fn last_id(out: &str) -> Option<u64> {
        out.lines().filter_map(|l| l.strip_prefix("id: ")).next_back().and_then(|v| v.trim().parse().ok())
    }

    #[test]
    fn a_continuation_that_missed_only_the_end_gets_the_end_at_the_messages_length() {
        let view = sealed_text("hello");
        let id = Text::from("m1");
        // What a response under way gets when it holds the whole message and the end came
        // while it was away: the same end a reader joining fresh at the end gets.
        let mut continued = String::new();
        let (ended, _) = from_store(&id, &view, 5, Some(5), &mut continued);
        assert!(ended);
        let mut fresh = String::new();
        from_store(&id, &view, 0, None, &mut fresh);
        assert_eq!(last_id(&continued), Some(5), "the end group carries the message's length: {continued:?}");
        assert!(continued.contains("text-end"), "the open text part is closed: {continued:?}");
        assert!(fresh.ends_with(&continued), "the end a fresh reader gets: {fresh:?} against {continued:?}");
    }
}
