//! `--demo`: a chat whose answers come from a simulated model, streamed by the plane and
//! checkpointed into SQLite.
//!
//! The message table is the application's (`messages`); the plane writes its chunk rows and the
//! final compaction into it. `GET /api/messages` is the durable view a page renders first: each
//! message's body assembled from `body` plus its chunk rows, read in one transaction so a
//! compaction (which moves chunk text into `body`) is never seen half-done. A page that finds a
//! message still `streaming` joins its stream at exactly the durable length, which is what makes
//! a reload mid-answer show every character once.

pub mod answer;

use std::path::Path;
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
use twoplane_core::sql::{quote_ident, stream_chunk_table_ddl, Dialect, StreamTables};
use twoplane_core::{assemble_durable_text, ChunkRow, Text, STREAM_STATUS_STREAMING};
use twoplane_stream::{DurableTarget, Plane, PlaneError, SqliteTarget, StreamHandle};

use answer::Rng;

/// The application's message table.
pub const MESSAGE_TABLE: &str = "messages";
/// The plane's chunk table.
pub const CHUNK_TABLE: &str = "message_chunks";
/// Prompts longer than this are refused (the page caps its input lower).
const MAX_PROMPT_CHARS: usize = 2000;

const INDEX_HTML: &str = include_str!("../../assets/index.html");
const APP_JS: &str = include_str!("../../assets/app.js");
const APP_CSS: &str = include_str!("../../assets/app.css");

/// The tables the plane writes.
pub fn tables() -> StreamTables {
    StreamTables { message: MESSAGE_TABLE.into(), chunks: CHUNK_TABLE.into(), columns: Default::default() }
}

/// The demo's database: the plane's SQLite target, whose one connection also serves the
/// demo's own reads and inserts (serialized with the checkpoints, which a demo can afford).
#[derive(Clone)]
pub struct DemoDb {
    target: Arc<SqliteTarget>,
}

/// One message as the page sees it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct MessageView {
    pub id: String,
    pub role: String,
    /// The durable text: `body` followed by the chunk rows in `seq` order.
    pub body: String,
    pub status: Option<String>,
    pub seq: i64,
}

impl DemoDb {
    /// Open or create the database at `path` and make sure the tables exist.
    pub async fn open(path: &Path) -> Result<DemoDb, String> {
        let shown = path.display().to_string();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(format!("cannot use database {shown}: the directory {} does not exist", parent.display()));
            }
        }
        if path.is_dir() {
            return Err(format!("cannot use database {shown}: it is a directory"));
        }
        let target =
            SqliteTarget::open(path, &tables()).map_err(|e| format!("cannot use database {shown}: {}", cause(&e)))?;
        let db = DemoDb { target: Arc::new(target) };
        db.target
            .with_connection(|conn| {
                let message = quote_ident(MESSAGE_TABLE)?;
                conn.execute_batch(&format!(
                    "CREATE TABLE IF NOT EXISTS {message} (id TEXT PRIMARY KEY, role TEXT, \
                     body TEXT NOT NULL DEFAULT '', status TEXT, seq INTEGER NOT NULL DEFAULT 0)"
                ))
                .map_err(store_err)?;
                for ddl in stream_chunk_table_ddl(&tables(), Dialect::Sqlite)? {
                    conn.execute(&ddl, []).map_err(store_err)?;
                }
                Ok(())
            })
            .await
            .map_err(|e| format!("cannot use database {shown}: {}", cause(&e)))?;
        Ok(db)
    }

    /// The plane's durable target.
    pub fn target(&self) -> Result<Arc<dyn DurableTarget>, String> {
        Ok(self.target.clone())
    }

    /// Mark messages an earlier process left `streaming` (it died without draining) as
    /// `interrupted`; their text stays readable from body plus chunk rows.
    pub async fn sweep_streaming(&self) -> Result<usize, String> {
        self.target
            .with_connection(|conn| {
                conn.execute("UPDATE messages SET status = 'interrupted' WHERE status = ?1", [STREAM_STATUS_STREAMING])
                    .map_err(store_err)
            })
            .await
            .map_err(|e| format!("cannot sweep unfinished messages: {}", cause(&e)))
    }

    /// Insert the user's message and an empty assistant row ready for `open`.
    pub async fn insert_exchange(&self, user: MessageView, assistant_id: String) -> Result<(), PlaneError> {
        self.target
            .with_connection(move |conn| {
                let tx = conn.transaction().map_err(store_err)?;
                tx.execute(
                    "INSERT INTO messages (id, role, body, status, seq) VALUES (?1, 'user', ?2, 'complete', ?3)",
                    rusqlite::params![user.id, user.body, user.seq],
                )
                .map_err(store_err)?;
                tx.execute(
                    "INSERT INTO messages (id, role, body, status, seq) VALUES (?1, 'assistant', '', NULL, 0)",
                    [&assistant_id],
                )
                .map_err(store_err)?;
                tx.commit().map_err(store_err)
            })
            .await
    }

    /// Insert an empty assistant row, ready for [`Plane::open`] (tests and benchmarks drive
    /// their own producers with it).
    pub async fn insert_assistant(&self, id: &str) -> Result<(), PlaneError> {
        let id = id.to_owned();
        self.target
            .with_connection(move |conn| {
                conn.execute(
                    "INSERT INTO messages (id, role, body, status, seq) VALUES (?1, 'assistant', '', NULL, 0)",
                    [&id],
                )
                .map(drop)
                .map_err(store_err)
            })
            .await
    }

    /// Every message in creation order, with durable text assembled, from one snapshot.
    pub async fn messages(&self) -> Result<Vec<MessageView>, PlaneError> {
        self.target.with_connection(|conn| read_messages(conn, None)).await
    }

    /// One message's durable view.
    pub async fn message(&self, id: String) -> Result<Option<MessageView>, PlaneError> {
        self.target.with_connection(move |conn| Ok(read_messages(conn, Some(&id))?.pop())).await
    }
}

fn read_messages(conn: &mut rusqlite::Connection, only: Option<&str>) -> Result<Vec<MessageView>, PlaneError> {
    // One transaction: body and chunk rows from the same snapshot.
    let tx = conn.transaction().map_err(store_err)?;
    let mut out = Vec::new();
    {
        let mut rows = tx
            .prepare_cached(
                "SELECT id, role, body, status, seq FROM messages WHERE (?1 IS NULL OR id = ?1) ORDER BY rowid",
            )
            .map_err(store_err)?;
        let mut chunks = tx
            .prepare_cached(r#"SELECT "seq", "text" FROM "message_chunks" WHERE "streamId" = ?1 ORDER BY "seq""#)
            .map_err(store_err)?;
        let list = rows
            .query_map([only], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, i64>(4)?,
                ))
            })
            .map_err(store_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(store_err)?;
        for (id, role, body, status, seq) in list {
            let rows = chunks
                .query_map([&id], |r| {
                    let seq: i64 = r.get(0)?;
                    let text: Option<String> = r.get(1)?;
                    Ok(ChunkRow { seq: u64::try_from(seq).unwrap_or(0), text: text.map(Text::from) })
                })
                .map_err(store_err)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(store_err)?;
            let body_text = body.map(Text::from);
            let durable = assemble_durable_text(body_text.as_ref(), &rows);
            out.push(MessageView {
                id,
                role: role.unwrap_or_default(),
                // Table text is well-formed (the plane refuses lone surrogates for tables).
                body: durable.to_string_lossy(),
                status,
                seq,
            });
        }
    }
    tx.commit().map_err(store_err)?;
    Ok(out)
}

fn store_err(e: rusqlite::Error) -> PlaneError {
    PlaneError::store("sqlite").with_source(e)
}

/// The most useful sentence in a plane error: its cause when there is one.
fn cause(e: &PlaneError) -> String {
    match std::error::Error::source(e) {
        Some(source) => source.to_string(),
        None => e.message().to_owned(),
    }
}

#[derive(Clone)]
struct DemoState {
    plane: Plane,
    db: DemoDb,
    ids: Arc<AtomicU64>,
}

/// The demo's routes: the page, the browser package, `POST /api/chat`, `GET /api/messages`.
/// The SSE endpoint is mounted separately ([`crate::http::sse_router`]).
pub fn routes(plane: Plane, db: DemoDb, package_dir: &Path) -> Router {
    let state = DemoState { plane, db, ids: Arc::new(AtomicU64::new(0)) };
    let package = tower_http::services::ServeDir::new(package_dir);
    Router::new()
        .route("/", get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }))
        .route("/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/app.css", get(|| async { asset("text/css; charset=utf-8", APP_CSS) }))
        .route("/api/chat", post(chat))
        .route("/api/messages", get(messages))
        .nest_service("/pkg/twoplane", package)
        .with_state(state)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

#[derive(Deserialize)]
struct ChatRequest {
    prompt: String,
}

#[derive(Serialize)]
struct ChatResponse {
    user: MessageView,
    assistant: MessageView,
}

#[derive(Serialize)]
struct MessagesResponse {
    messages: Vec<MessageView>,
}

fn json_error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(serde_json::json!({ "error": message.into() }))).into_response()
}

fn new_id(state: &DemoState, prefix: &str) -> String {
    // Time plus a per-process counter: unique across restarts on the same database.
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    format!("{prefix}-{ms:x}-{}", state.ids.fetch_add(1, Ordering::Relaxed))
}

async fn chat(State(state): State<DemoState>, body: Result<Json<ChatRequest>, JsonRejection>) -> Response {
    let Ok(Json(request)) = body else {
        return json_error(StatusCode::BAD_REQUEST, "expected a JSON body {\"prompt\": \"...\"}");
    };
    let prompt = request.prompt.trim().to_owned();
    if prompt.is_empty() || prompt.chars().count() > MAX_PROMPT_CHARS {
        return json_error(StatusCode::BAD_REQUEST, format!("the prompt must have 1 to {MAX_PROMPT_CHARS} characters"));
    }
    let user = MessageView {
        id: new_id(&state, "u"),
        role: "user".into(),
        seq: prompt.encode_utf16().count() as i64,
        body: prompt.clone(),
        status: Some("complete".into()),
    };
    let assistant_id = new_id(&state, "a");
    if let Err(e) = state.db.insert_exchange(user.clone(), assistant_id.clone()).await {
        tracing::error!(error = %e, "cannot store the exchange");
        return json_error(StatusCode::INTERNAL_SERVER_ERROR, "cannot store the message");
    }
    let handle = match state.plane.open(&assistant_id).await {
        Ok(handle) => handle,
        Err(e) => {
            tracing::error!(stream_id = %assistant_id, error = %e, "cannot open the answer stream");
            return json_error(StatusCode::SERVICE_UNAVAILABLE, format!("cannot start the answer: {}", e.kind()));
        }
    };
    tracing::info!(stream_id = %assistant_id, prompt_chars = prompt.chars().count(), "answer started");
    tokio::spawn(produce(handle, prompt));
    let assistant = MessageView {
        id: assistant_id,
        role: "assistant".into(),
        body: String::new(),
        status: Some(STREAM_STATUS_STREAMING.into()),
        seq: 0,
    };
    (StatusCode::CREATED, Json(ChatResponse { user, assistant })).into_response()
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

/// The simulated model: push the answer's tokens at 20 to 50 per second, then seal.
async fn produce(handle: StreamHandle, prompt: String) {
    let mut rng = Rng::new(answer::seed_of(&prompt) ^ rand_seed());
    let text = answer::compose(&prompt, &mut rng);
    let tokens = answer::tokenize(&text, &mut rng);
    let started = tokio::time::Instant::now();
    for token in &tokens {
        tokio::time::sleep(Duration::from_millis(rng.between(20, 50))).await;
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

/// Variety between two identical prompts (tests compare against the store, not a fixed text).
fn rand_seed() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}
