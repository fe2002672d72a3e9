//! The producer API's errors: an HTTP status and a JSON body `{"kind", "message", "seq"?,
//! "durableSeq"?}` whose `kind` is a stable snake_case name clients match on (docs/server.md
//! lists them).
//!
//! Guarantees: every refusal of the producer API goes through [`ApiError`], so every one has a
//! `kind`; `seq` and `durableSeq` are present whenever the stream is hosted here, so a client
//! always learns where the stream stands (the offset to retry from) and which prefix the store
//! holds; a refusal that is worth retrying as it is (`backpressure`) carries `Retry-After`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use twoplane_stream::{PlaneError, PlaneErrorKind};

/// One refusal.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
    /// The stream's produced length (UTF-16 code units), when it is hosted here.
    pub seq: Option<u64>,
    /// How much of it the store holds, when it is hosted here.
    pub durable_seq: Option<u64>,
    /// Seconds to wait before sending the same request again.
    pub retry_after: Option<u64>,
}

#[derive(Serialize)]
struct Body<'a> {
    kind: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    #[serde(rename = "durableSeq", skip_serializing_if = "Option::is_none")]
    durable_seq: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, kind, message: message.into(), seq: None, durable_seq: None, retry_after: None }
    }

    pub fn with_seq(mut self, seq: u64) -> ApiError {
        self.seq = Some(seq);
        self
    }

    pub fn unknown_stream(id: &str) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "unknown_stream", format!("no message row has the id {id:?}"))
    }

    pub fn not_open(id: &str) -> ApiError {
        ApiError::new(
            StatusCode::CONFLICT,
            "not_open",
            format!("stream {id:?} is not open on this server (open it first, on the server you append to)"),
        )
    }

    pub fn cancelled(id: &str, seq: u64) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "cancelled", format!("a reader cancelled stream {id:?}; stop producing"))
            .with_seq(seq)
    }

    pub fn closed(id: &str, seq: u64) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "stream_closed", format!("stream {id:?} is sealed; it takes no more text"))
            .with_seq(seq)
    }

    pub fn invalid_utf8(seq: u64, kept: &str) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_utf8", format!("the body is not valid UTF-8: {kept}"))
            .with_seq(seq)
    }

    pub fn too_large(limit: usize, what: &str) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", format!("{what} is over the limit of {limit} bytes"))
    }

    pub fn bad_request(kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, kind, message)
    }

    /// Where the stream stands: produced and durable lengths.
    pub fn at(self, handle: &twoplane_stream::StreamHandle) -> ApiError {
        self.at_position(handle.position())
    }

    /// Where the stream stands, as a checked push read it.
    pub fn at_position(self, at: twoplane_stream::Position) -> ApiError {
        ApiError { seq: Some(at.seq), durable_seq: Some(at.durable_seq), ..self }
    }

    /// A plane error of stream `id` (add where it stands with [`at`](ApiError::at)).
    pub fn from_plane(e: &PlaneError, id: &str) -> ApiError {
        match e.kind() {
            // Where the stream stands is the caller's to add (`at`).
            PlaneErrorKind::StreamClosed => ApiError { seq: None, ..ApiError::closed(id, 0) },
            PlaneErrorKind::AlreadyOpen => ApiError::new(StatusCode::CONFLICT, "already_open", e.message()),
            PlaneErrorKind::OpenRefused => ApiError::new(StatusCode::CONFLICT, "open_refused", e.message()),
            // A stream going on from where it does not stand: the caller adds where it does.
            PlaneErrorKind::WrongOffset => ApiError::new(StatusCode::CONFLICT, "wrong_offset", e.message()),
            // Another instance released the row (this one's lease lapsed): the row is the truth.
            PlaneErrorKind::Fenced => ApiError::new(StatusCode::CONFLICT, "fenced", e.message()),
            PlaneErrorKind::Draining => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "draining", e.message()),
            PlaneErrorKind::NotDurable => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "not_durable", e.message()),
            // Nothing was appended: the same request, later, is the retry.
            PlaneErrorKind::Backpressure => ApiError {
                retry_after: Some(e.retry_after().map_or(1, |d| d.as_secs_f64().ceil().max(1.0) as u64)),
                ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "backpressure", e.message())
            },
            PlaneErrorKind::InvalidArgument => ApiError::new(StatusCode::BAD_REQUEST, "invalid_argument", e.message()),
            kind => {
                tracing::warn!(stream_id = ?id, error = %e, "producer API: plane error");
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, kind.as_str(), e.message())
            }
        }
    }

    /// A store failure outside the plane (the row lookups of this API).
    pub fn store(e: &PlaneError) -> ApiError {
        tracing::warn!(error = %e, "producer API: store error");
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "store", "the database is unavailable")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body { kind: self.kind, message: &self.message, seq: self.seq, durable_seq: self.durable_seq };
        let mut response = crate::refusal::mark((self.status, Json(body)).into_response(), self.kind);
        if let Some(secs) = self.retry_after {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(secs));
        }
        response
    }
}
