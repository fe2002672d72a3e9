//! `--demo`: a chat whose answers come from a simulated model, streamed by the plane and
//! checkpointed into SQLite or PostgreSQL.
//!
//! The message table is the application's (`messages`); the plane writes its chunk rows and the
//! final compaction into it. `GET /api/messages` is the durable view a page renders first: each
//! message's body assembled from `body` plus its chunk rows, read from one snapshot so a
//! compaction (which moves chunk text into `body`) is never seen half-done. A page that finds a
//! message still `streaming` joins its stream at exactly the durable length, which is what makes
//! a reload mid-answer show every character once.
//!
//! With several instances on one PostgreSQL, `POST /api/chat` starts the answer on the instance
//! that received it, and `GET /api/messages` and `GET /api/stream` work on every instance (the
//! view reads the shared store; the stream comes through the relay). An answer is a pure
//! function of its prompt and seed ([`answer::answer_text`]); the request may name the seed, so
//! a test knows the produced text without asking the producer.

pub mod answer;
mod db;

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use twoplane_core::{Text, STREAM_STATUS_STREAMING};
use twoplane_stream::{Plane, StreamHandle};

use crate::assets::PackageSource;
use crate::store::Database;

pub use crate::store::MessageView;
pub use db::DemoDb;

/// Prompts longer than this are refused (the page caps its input lower).
const MAX_PROMPT_CHARS: usize = 2000;

const INDEX_HTML: &str = include_str!("../../assets/index.html");
const APP_JS: &str = include_str!("../../assets/app.js");
const APP_CSS: &str = include_str!("../../assets/app.css");

/// How fast the simulated model emits tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Pace {
    /// 20 to 50 tokens per second, like a hosted model on a good day.
    #[default]
    Natural,
    /// About this many tokens per second (each gap drawn between half and one and a half of the
    /// mean): tests slow an answer down so that something can happen in its middle.
    TokensPerSecond(u32),
}

impl Pace {
    /// The gap before the next token, drawn from the answer's generator.
    fn gap(self, rng: &mut answer::Rng) -> Duration {
        match self {
            Pace::Natural => Duration::from_millis(rng.between(20, 50)),
            Pace::TokensPerSecond(n) => {
                let mean_us = 1_000_000 / u64::from(n.max(1));
                Duration::from_micros(rng.between(mean_us / 2, mean_us + mean_us / 2))
            }
        }
    }
}

#[derive(Clone)]
struct DemoState {
    plane: Plane,
    db: DemoDb,
    pace: Pace,
    ids: Arc<IdSource>,
}

/// Message ids: unique across restarts on one database and across instances sharing it.
struct IdSource {
    /// Random per process: two instances that create a message in the same millisecond with the
    /// same counter value still differ.
    tag: u32,
    counter: AtomicU64,
}

impl IdSource {
    fn new() -> IdSource {
        // RandomState is seeded from the OS per process: randomness without a dependency.
        let mut h = RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        IdSource { tag: h.finish() as u32, counter: AtomicU64::new(0) }
    }

    fn next(&self, prefix: &str) -> String {
        let ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        format!("{prefix}-{ms:x}-{:08x}-{}", self.tag, self.counter.fetch_add(1, Ordering::Relaxed))
    }
}

/// The demo's routes: the page, the browser package, `POST /api/chat`, `GET /api/messages`.
/// The SSE endpoint is mounted separately ([`crate::http::sse_router`]).
pub fn routes(plane: Plane, db: Database, package: &PackageSource, pace: Pace) -> Router {
    let state = DemoState { plane, db: DemoDb::new(db), pace, ids: Arc::new(IdSource::new()) };
    Router::new()
        .route("/", get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }))
        .route("/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/app.css", get(|| async { asset("text/css; charset=utf-8", APP_CSS) }))
        .route("/api/chat", post(chat))
        .route("/api/messages", get(messages))
        .nest("/pkg/twoplane", package.router())
        .with_state(state)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

#[derive(Deserialize)]
struct ChatRequest {
    prompt: String,
    /// The answer's seed; a random one when missing. The answer is
    /// [`answer::answer_text`]`(prompt, seed)`.
    seed: Option<u64>,
}

#[derive(Serialize)]
struct ChatResponse {
    user: MessageView,
    assistant: MessageView,
    /// The seed the answer is produced from (so any answer can be reproduced).
    seed: u64,
}

#[derive(Serialize)]
struct MessagesResponse {
    messages: Vec<MessageView>,
}

fn json_error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(serde_json::json!({ "error": message.into() }))).into_response()
}

async fn chat(State(state): State<DemoState>, body: Result<Json<ChatRequest>, JsonRejection>) -> Response {
    let Ok(Json(request)) = body else {
        return json_error(
            StatusCode::BAD_REQUEST,
            "expected a JSON body {\"prompt\": \"...\"} (and optionally \"seed\": a non-negative integer)",
        );
    };
    let prompt = request.prompt.trim().to_owned();
    if prompt.is_empty() || prompt.chars().count() > MAX_PROMPT_CHARS {
        return json_error(StatusCode::BAD_REQUEST, format!("the prompt must have 1 to {MAX_PROMPT_CHARS} characters"));
    }
    let seed = request.seed.unwrap_or_else(rand_seed);
    let user = MessageView {
        id: state.ids.next("u"),
        role: "user".into(),
        seq: prompt.encode_utf16().count() as i64,
        body: prompt.clone(),
        status: Some("complete".into()),
        host: None,
        document: None,
        rows: None,
    };
    let assistant_id = state.ids.next("a");
    if let Err(e) = state.db.insert_exchange(user.clone(), assistant_id.clone()).await {
        tracing::error!(error = %e, "cannot store the exchange");
        return json_error(StatusCode::INTERNAL_SERVER_ERROR, "cannot store the message");
    }
    let handle = match state.plane.open(&assistant_id).await {
        Ok(handle) => handle,
        Err(e) => {
            tracing::error!(stream_id = ?assistant_id, error = %e, "cannot open the answer stream");
            return json_error(StatusCode::SERVICE_UNAVAILABLE, format!("cannot start the answer: {}", e.kind()));
        }
    };
    tracing::info!(stream_id = ?assistant_id, prompt_chars = prompt.chars().count(), seed, "answer started");
    tokio::spawn(produce(handle, prompt, seed, state.pace));
    let host = state.db.database().tables().columns.host.map(|_| state.plane.host_token().to_owned());
    let assistant = MessageView {
        id: assistant_id,
        role: "assistant".into(),
        body: String::new(),
        status: Some(STREAM_STATUS_STREAMING.into()),
        seq: 0,
        host,
        document: None,
        rows: None,
    };
    (StatusCode::CREATED, Json(ChatResponse { user, assistant, seed })).into_response()
}

async fn messages(State(state): State<DemoState>) -> Response {
    match state.db.messages().await {
        Ok(messages) => Json(MessagesResponse { messages }).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "cannot read messages");
            json_error(StatusCode::INTERNAL_SERVER_ERROR, "cannot read messages")
        }
    }
}

/// The answer to `prompt` with `seed` as the simulated model emits it: each token with the gap
/// slept before it. A pure function, and the one place the schedule is drawn: `produce`
/// follows it, and a test sums the gaps to know the least time an answer takes (sleeps never
/// end early), so it can kill or restart something while the answer is certainly still running.
pub fn script(prompt: &str, seed: u64, pace: Pace) -> Vec<(Duration, Text)> {
    // The text is drawn first from the generator ([`answer::answer_text`] draws exactly the
    // same); the cuts and the gaps come after, so they cannot change it.
    let mut rng = answer::rng_for(prompt, seed);
    let text = answer::compose(prompt, &mut rng);
    let tokens = answer::tokenize(&text, &mut rng);
    tokens.into_iter().map(|token| (pace.gap(&mut rng), token)).collect()
}

/// The simulated model: push the answer's tokens at `pace`, then seal.
async fn produce(handle: StreamHandle, prompt: String, seed: u64, pace: Pace) {
    let tokens = script(&prompt, seed, pace);
    let started = tokio::time::Instant::now();
    for (gap, token) in &tokens {
        tokio::time::sleep(*gap).await;
        if handle.is_sealed() {
            // Drained (shutdown) or cancelled: the seal already ended the stream.
            tracing::info!(stream_id = handle.stream_id(), "answer stopped early");
            return;
        }
        if let Err(e) = handle.push_units(token.units()) {
            tracing::warn!(stream_id = handle.stream_id(), error = %e, "push refused; stopping the answer");
            return;
        }
    }
    match handle.close().await {
        Ok(()) => tracing::info!(
            stream_id = handle.stream_id(),
            tokens = tokens.len(),
            code_units = handle.seq(),
            ms = started.elapsed().as_millis() as u64,
            "answer complete"
        ),
        Err(e) => tracing::warn!(stream_id = handle.stream_id(), error = %e, "answer sealed but the seal did not land"),
    }
}

/// Variety between two identical prompts when the request names no seed. Kept below 2^53 so
/// that a page (JavaScript numbers) can send it back unchanged.
fn rand_seed() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish() & ((1 << 53) - 1)
}
