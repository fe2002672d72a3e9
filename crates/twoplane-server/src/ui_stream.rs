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
//!   the same cut is made wherever the rows can say what the message was at `N`; a message
//!   compacted at its end is known only whole, and is then one group at its length.
//! - A stream that ended, or that no instance serves live any more, is read from the store (the
//!   row and its chunk rows, for as long as the row exists) and ended as the row says; a stream
//!   the store shows still streaming is polled until it ends. Nothing is sent twice: each step
//!   sends only what takes the reader from what it was sent to what is there now.
//! - Bounded like every reader: the subscriber caps per stream and per address, a bounded
//!   channel to the socket (a reader that stops reading stops its task at the next send), a
//!   keep-alive comment every 15 s, read tokens as for every reader (`?token=` or the header).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;
use tokio::sync::mpsc;
use twoplane_core::json::JsonValue;
use twoplane_core::sse::KEEP_ALIVE_COMMENT;
use twoplane_core::message::{assemble_durable_message_at, Message, MessageFrame};
use twoplane_core::ui::UiEgress;
use twoplane_core::{StreamStatus, Text};
use twoplane_stream::{Plane, Subscription};

use crate::access::Access;
use crate::http::{ActiveReader, HttpCaller, SseConfig, SseStats};
use crate::refusal::refuse;
use crate::store::{messages, Database, MessageView};

/// How often a stream the store shows streaming, and no instance serves live, is read again.
const STORE_POLL: Duration = Duration::from_millis(500);

#[derive(Clone)]
struct UiState {
    plane: Plane,
    db: Database,
    access: Arc<Access>,
    /// The SSE endpoint's settings and counters: its bounds and keep-alive are this route's too.
    sse: SseConfig,
    stats: Arc<SseStats>,
}

#[derive(Deserialize)]
struct FromQuery {
    from: Option<u64>,
}

/// The route's path, `/v1/streams/{id}/ui-message-stream`, with its `{id}` segment.
const PATH_HEAD: &str = "/v1/streams/";
const PATH_TAIL: &str = "/ui-message-stream";

/// Whether a request target (`path[?query]`) is this route's: what the accept loop's direct SSE
/// path (`crate::sse_conn`) takes besides the SSE endpoint, so both kinds of reader are served
/// the same way.
pub(crate) fn is_resume_target(target: &str) -> bool {
    let path = target.split_once('?').map_or(target, |(path, _)| path);
    path.strip_prefix(PATH_HEAD)
        .and_then(|rest| rest.strip_suffix(PATH_TAIL))
        .is_some_and(|id| !id.is_empty() && !id.contains('/'))
}

/// The resume route, as a reader route (read tokens, pages on allowed origins), admitting its
/// readers under the SSE endpoint's bounds and counting them among its live readers (`stats`).
pub fn routes(plane: Plane, db: Database, access: Arc<Access>, sse: SseConfig, stats: Arc<SseStats>) -> Router {
    let state = UiState { plane, db, access: access.clone(), sse, stats };
    let routes = Router::new().route(&format!("{PATH_HEAD}{{id}}{PATH_TAIL}"), get(resume)).with_state(state);
    crate::access::reader_routes(routes, &access)
}

async fn resume(
    State(state): State<UiState>,
    Path(id): Path<String>,
    query: Result<Query<FromQuery>, axum::extract::rejection::QueryRejection>,
    request: axum::extract::Request,
) -> Response {
    let headers = request.headers().clone();
    if state.access.check_read(&headers, &id).is_err() {
        return crate::http::forbidden();
    }
    let Ok(Query(query)) = query else {
        return refuse(StatusCode::BAD_REQUEST, "invalid_from", "?from= must be a whole number of code units");
    };
    let view = match messages::one(&state.db, &id).await {
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
        Err(refused) => return refused,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let caller = HttpCaller { headers };
    tokio::spawn(async move {
        let _pass = pass;
        let _active = ActiveReader::new(state.stats.clone());
        let _reader = crate::metrics::ReaderGauge::new("ui_message_stream");
        let quiet = state.sse.keep_alive.max(Duration::from_millis(1));
        let mut reader =
            UiReader { id: Text::from(id.as_str()), id_str: id, caller, tx, egress: UiEgress::new(), quiet };
        let gone = reader.tx.clone();
        // A reader that hangs up ends the task at once (not at its next write), and with it its
        // places under the bounds.
        tokio::select! {
            _ = reader.serve(&state, query.from.unwrap_or(0), view) => {}
            () = gone.closed() => {}
        }
    });
    let body = Body::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|bytes| (Ok::<_, std::convert::Infallible>(bytes), rx))
    }));
    let mut response = body.into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
    h.insert("x-vercel-ai-ui-message-stream", HeaderValue::from_static("v1"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// One reader's task: what it was sent, and where its bytes go.
struct UiReader {
    id: Text,
    id_str: String,
    /// Who asked (the plane's authorizer reads its token again for every subscription).
    caller: HttpCaller,
    tx: mpsc::Sender<Bytes>,
    egress: UiEgress,
    /// How long it waits for a frame before a keep-alive (the SSE endpoint's interval).
    quiet: Duration,
}

/// The reader went away (its connection closed): its task stops.
struct Gone;

/// What a reader's task does next.
enum Next {
    /// Follow a live subscription.
    Follow(Subscription),
    /// Read the store (the live leg ended or never was).
    Store,
    /// The stream's end was sent.
    Done,
}

impl UiReader {
    async fn serve(&mut self, state: &UiState, from: u64, view: MessageView) -> Result<(), Gone> {
        let mut next = self.start(state, from, view).await?;
        loop {
            next = match next {
                Next::Follow(sub) => self.follow(state, sub).await?,
                Next::Store => self.store_step(state).await?,
                Next::Done => return Ok(()),
            };
        }
    }

    /// The first answer: the replay of the live stream, or of the store.
    async fn start(&mut self, state: &UiState, from: u64, view: MessageView) -> Result<Next, Gone> {
        let sealed = view.status.as_deref().is_some_and(|s| s != twoplane_core::STREAM_STATUS_STREAMING);
        // A sealed stream no longer hosted here is the store's: no relay is asked (and waited for).
        if !sealed || state.plane.is_hosted(&self.id_str) {
            match state.plane.subscribe(&self.caller, &self.id_str, 0).await {
                Ok(mut sub) => {
                    // The first frame says whether a live stream answers, and how long it is.
                    let first = tokio::time::timeout(self.quiet, sub.next()).await.ok().flatten();
                    if let Some(MessageFrame::Open { seq, .. }) = first.as_deref() {
                        return match self.join(&mut sub, from, *seq).await? {
                            None => Ok(Next::Follow(sub)),
                            Some(end) => self.finish(state, &end).await,
                        };
                    }
                }
                Err(e) => {
                    tracing::debug!(stream_id = ?self.id_str, error = %e, "ui-message-stream: no live subscription")
                }
            }
        }
        // Not live here or anywhere the relay reaches, or already ended: the store, cut at what
        // the reader holds where the rows can say what that was.
        let stored = stored(&view);
        let whole = stored.message.unwrap_or_default();
        // Cut only where the reader lacks something: a reader at or past the end takes the whole
        // message in one group, and its rows are not assembled a second time.
        let held = if from < whole.len() { held_at(&view, from) } else { None };
        match held {
            Some(held) => {
                let chunks = self.egress.replay(&self.id, held);
                self.send(&chunks, from).await?;
                let rest = self.egress.advance_to(whole);
                let at = self.egress.message().len();
                self.send(&rest, at).await?;
            }
            // The reader holds all of it (or claims more), or the message was compacted and is
            // known only whole: one group at its length (docs/server.md says what that costs).
            None => {
                let chunks = self.egress.replay(&self.id, whole);
                let at = self.egress.message().len();
                self.send(&chunks, at).await?;
            }
        }
        match stored.sealed {
            Some(status) => self.end(status, None).await,
            None => Ok(Next::Store),
        }
    }

    /// The replay of the message so far: the frames up to `target` (the produced length at the
    /// join) folded, sent as the message at `from` and then the rest. Returns the terminal frame
    /// when the stream ended within them.
    async fn join(
        &mut self,
        sub: &mut Subscription,
        from: u64,
        target: u64,
    ) -> Result<Option<Arc<MessageFrame>>, Gone> {
        let held_at = from.min(target);
        let mut message = Message::new();
        let mut held: Option<Message> = (held_at == 0).then(Message::new);
        let mut end = None;
        while message.len() < target {
            let Some(frame) = tokio::time::timeout(self.quiet, sub.next()).await.ok().flatten() else { break };
            if frame.is_terminal() {
                end = Some(frame);
                break;
            }
            let (before, after) = frame.cut_at(held_at);
            for piece in before.into_iter().chain(after) {
                if message.apply(&piece).is_err() {
                    continue;
                }
                if held.is_none() && message.len() >= held_at {
                    held = Some(message.clone());
                }
            }
        }
        let held = held.unwrap_or_else(|| message.clone());
        let chunks = self.egress.replay(&self.id, held);
        self.send(&chunks, held_at).await?;
        let rest = self.egress.advance_to(message);
        let at = self.egress.message().len();
        self.send(&rest, at).await?;
        Ok(end)
    }

    /// The live tail, until the stream ends (or no live leg serves it any more: the store).
    async fn follow(&mut self, state: &UiState, mut sub: Subscription) -> Result<Next, Gone> {
        loop {
            match tokio::time::timeout(self.quiet, sub.next()).await {
                Err(_) => self.keep_alive().await?,
                Ok(None) => return Ok(Next::Store),
                Ok(Some(frame)) => match &*frame {
                    MessageFrame::End { .. } | MessageFrame::Stale { .. } | MessageFrame::Absent => {
                        return self.finish(state, &frame).await;
                    }
                    MessageFrame::Chunk { .. } | MessageFrame::Event { .. } => {
                        let at = frame.span().map_or(0, |(_, seq)| seq);
                        match self.egress.frame(&frame) {
                            Ok(chunks) => self.send(&chunks, at).await?,
                            // A frame the message's rules refuse (a relay's doing): the store decides.
                            Err(_) => return Ok(Next::Store),
                        }
                    }
                    MessageFrame::Open { .. } | MessageFrame::Durable { .. } => {}
                },
            }
        }
    }

    /// A terminal frame: `end` as it says (with what the store holds beyond what the live leg
    /// delivered: a seal writes the whole message); `stale` or `absent` send the reader to the
    /// store.
    async fn finish(&mut self, state: &UiState, frame: &MessageFrame) -> Result<Next, Gone> {
        let MessageFrame::End { status, error, .. } = frame else { return Ok(Next::Store) };
        if let Ok(Some(view)) = messages::one(&state.db, &self.id_str).await {
            if let Some(stored) = assembled(&view).filter(|m| m.len() > self.egress.message().len()) {
                let chunks = self.egress.advance_to(stored);
                let at = self.egress.message().len();
                self.send(&chunks, at).await?;
            }
        }
        self.end(*status, error.as_ref()).await
    }

    /// Read the store and send what it adds; end as its row says, or, while it streams, follow it
    /// live again from what the reader holds (polling while no instance serves it).
    async fn store_step(&mut self, state: &UiState) -> Result<Next, Gone> {
        let view = match messages::one(&state.db, &self.id_str).await {
            Ok(Some(view)) => view,
            // The row went away, or the store cannot be read: end as interrupted.
            _ => return self.end(StreamStatus::Interrupted, None).await,
        };
        let stored = stored(&view);
        if let Some(m) = stored.message.filter(|m| m.len() > self.egress.message().len()) {
            let chunks = self.egress.advance_to(m);
            let at = self.egress.message().len();
            self.send(&chunks, at).await?;
        }
        if let Some(status) = stored.sealed {
            return self.end(status, None).await;
        }
        let from = self.egress.message().len();
        if let Ok(mut sub) = state.plane.subscribe(&self.caller, &self.id_str, from).await {
            if let Ok(Some(first)) = tokio::time::timeout(self.quiet, sub.next()).await {
                if matches!(&*first, MessageFrame::Open { .. }) {
                    return Ok(Next::Follow(sub));
                }
            }
        }
        tokio::time::sleep(STORE_POLL).await;
        self.keep_alive().await?;
        Ok(Next::Store)
    }

    async fn end(&mut self, status: StreamStatus, error: Option<&Text>) -> Result<Next, Gone> {
        let chunks = self.egress.end(status, error);
        let at = self.egress.message().len();
        self.send(&chunks, at).await?;
        self.write(Bytes::from_static(b"data: [DONE]\n\n")).await?;
        Ok(Next::Done)
    }

    async fn keep_alive(&mut self) -> Result<(), Gone> {
        self.write(Bytes::from_static(KEEP_ALIVE_COMMENT.as_bytes())).await
    }

    /// Send chunks as events, the last with `id: at`: the group is whole only at its last event,
    /// so only there may a reader's `Last-Event-ID` (and the transport's held offset) move; a
    /// connection broken inside the group resumes from the group before and loses nothing.
    async fn send(&mut self, chunks: &[JsonValue], at: u64) -> Result<(), Gone> {
        let Some((last, before)) = chunks.split_last() else { return Ok(()) };
        let mut out = String::new();
        for c in before {
            out.push_str("data: ");
            out.push_str(&c.to_json());
            out.push_str("\n\n");
        }
        out.push_str("id: ");
        out.push_str(&at.to_string());
        out.push_str("\ndata: ");
        out.push_str(&last.to_json());
        out.push_str("\n\n");
        self.write(Bytes::from(out)).await
    }

    async fn write(&mut self, bytes: Bytes) -> Result<(), Gone> {
        self.tx.send(bytes).await.map_err(|_| Gone)
    }
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
    use super::is_resume_target;

    #[test]
    fn the_direct_path_takes_exactly_this_routes_targets() {
        assert!(is_resume_target("/v1/streams/m1/ui-message-stream"));
        assert!(is_resume_target("/v1/streams/a%2Fb/ui-message-stream?from=12"));
        assert!(!is_resume_target("/v1/streams//ui-message-stream"));
        assert!(!is_resume_target("/v1/streams/a/b/ui-message-stream"));
        assert!(!is_resume_target("/v1/streams/m1/ui-message-streams"));
        assert!(!is_resume_target("/v1/streams/m1/append"));
        assert!(!is_resume_target("/v2/streams/m1/ui-message-stream"));
    }
}
