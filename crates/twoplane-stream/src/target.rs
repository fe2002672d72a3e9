//! The durable seam: what the plane needs from wherever checkpoints land.
//!
//! Guarantees the plane relies on, and every implementation here keeps:
//! - `append` is idempotent under replay and under a stale `from` (a retried or re-covering
//!   slice never duplicates text), and its [`AppendAck::durable_seq`] is the store's own word
//!   on the durable length, read back after the write, never an echo of the request;
//! - `close` writes the whole body (or, for a trimming callback, the outstanding tail) and is a
//!   whole-row overwrite, so retrying it is safe;
//! - an error of kind [`PlaneErrorKind::OpenRefused`](crate::PlaneErrorKind::OpenRefused) is a
//!   settled verdict (not retried); every other error may be a blip and is retried;
//! - table targets fence every write after the open (docs/contract.md §6): once a sweep moved the
//!   row off `streaming` (or another host holds it), `append` and `close` change nothing and
//!   answer [`PlaneErrorKind::Fenced`](crate::PlaneErrorKind::Fenced), also a settled verdict.
//!
//! Texts cross this seam as UTF-16 code units, so a callback target sees exactly what was
//! produced; table targets convert to UTF-8 and refuse text that holds a lone surrogate.

use async_trait::async_trait;
use twoplane_core::StreamStatus;

use crate::error::PlaneError;

/// Which persistence model a target implements; it decides which options make sense.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetMode {
    /// Mapped tables: compaction writes the whole body, so the plane keeps all produced text.
    Tables,
    /// An application callback: it may opt into trimming (`retain_chars`).
    Callback,
}

/// What a target can do, read once at plane construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetCaps {
    pub mode: TargetMode,
    /// A `host` column is mapped: the open write is a compare-and-swap on the host token.
    pub has_host: bool,
    /// A `cancel` column is mapped: every read-back reports it.
    pub has_cancel: bool,
    /// The target stores messages with parts (docs/contract.md §8): parts rows in its chunks and
    /// the message document at the seal (table targets: both parts columns are mapped).
    pub has_parts: bool,
}

/// The store's answer to an append: the durable length it read back, and the cancel flag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppendAck {
    pub durable_seq: u64,
    pub cancel_requested: bool,
}

/// The open write: flip the row to `streaming` (claiming it with `host_token` when a host
/// column is mapped).
#[derive(Clone, Copy, Debug)]
pub struct OpenRequest<'a> {
    pub stream_id: &'a str,
    pub host_token: &'a str,
}

/// One checkpoint: the slice `from..seq` of the produced message. A slice that is part 0 text
/// in the shorthand (always, for a single-text stream) is `text`, with `text.len() == seq -
/// from` and `parts` `None`; any other slice is a parts row (docs/contract.md §8): `text` empty
/// and `parts` the JSON array of its frames. `host_token` is the producer's claim (see
/// [`OpenRequest`]): a table target writes only while the row is `streaming` and names it, and
/// answers [`PlaneErrorKind::Fenced`](crate::PlaneErrorKind::Fenced) otherwise.
#[derive(Clone, Copy, Debug)]
pub struct AppendRequest<'a> {
    pub stream_id: &'a str,
    pub host_token: &'a str,
    pub from: u64,
    pub seq: u64,
    pub text: &'a [u16],
    pub parts: Option<&'a str>,
}

/// The seal. `body` is the retained text starting at `body_from` (0, and the whole response,
/// unless a callback-mode plane trims with `retain_chars`); `seq == body_from + body.len()`.
/// For a message with parts, `document` is the stored message document (docs/contract.md §8),
/// `body` the text parts' bodies concatenated and `body_from` 0, and `seq` the message's length
/// in the coordinate. `from` is the durable length the plane believed at the seal.
/// `host_token`: the claim, fenced as in [`AppendRequest`].
#[derive(Clone, Copy, Debug)]
pub struct CloseRequest<'a> {
    pub stream_id: &'a str,
    pub host_token: &'a str,
    pub from: u64,
    pub seq: u64,
    pub body: &'a [u16],
    pub body_from: u64,
    pub document: Option<&'a str>,
    pub status: StreamStatus,
    pub error: Option<&'a str>,
}

/// Where checkpoints land. Implementations: [`crate::SqliteTarget`], [`crate::PostgresTarget`],
/// [`crate::CallbackTarget`], the in-memory model `MemoryTarget` and the fault injector
/// `FaultyTarget` (both test support, behind the `testing` feature).
#[async_trait]
pub trait DurableTarget: Send + Sync + 'static {
    fn caps(&self) -> TargetCaps;

    /// The read-only precondition, checked once per open (never retried: re-deciding it per
    /// attempt would let a lost acknowledgement of the open write refuse its own success).
    async fn check_openable(&self, stream_id: &str) -> Result<(), PlaneError> {
        let _ = stream_id;
        Ok(())
    }

    /// Mark the stream live. Retried, so it must be idempotent for the same token.
    async fn open(&self, request: OpenRequest<'_>) -> Result<(), PlaneError>;

    /// Write one slice and read the durable length back.
    async fn append(&self, request: AppendRequest<'_>) -> Result<AppendAck, PlaneError>;

    /// Seal: compaction in table mode.
    async fn close(&self, request: CloseRequest<'_>) -> Result<(), PlaneError>;

    /// The store's durable length, to resynchronize after a failed append (whose commit may
    /// have landed with its acknowledgement lost). `Ok(None)`: this target has no readable
    /// authority.
    async fn probe_durable_seq(&self, stream_id: &str) -> Result<Option<u64>, PlaneError>;

    /// The stored message, read back for a producer that goes on with it (docs/contract.md §9):
    /// `None` when there is no row. The row and its chunk rows must come from one snapshot (a
    /// claim by another host turns the row's body into a chunk row; read apart, the text would
    /// be there twice). The default: this target cannot read its messages back, so its streams
    /// cannot go on.
    async fn load(&self, stream_id: &str) -> Result<Option<StoredMessage>, PlaneError> {
        let _ = stream_id;
        Err(cannot_go_on())
    }

    /// Claim the row again at its durable end `at` (docs/contract.md §9): back to `streaming`
    /// for this producer, only where the row stands at `at` and no producer holds it; a
    /// compacted row is expanded back into the chunk row `request.expand` holds. Retried, so it
    /// must be idempotent for the same token; the read-back decides (another producer holds it,
    /// or the row is elsewhere: [`crate::PlaneErrorKind::WrongOffset`]).
    async fn reopen(&self, request: ReopenRequest<'_>) -> Result<(), PlaneError> {
        let _ = request;
        Err(cannot_go_on())
    }
}

fn cannot_go_on() -> PlaneError {
    PlaneError::new(
        crate::PlaneErrorKind::InvalidArgument,
        "this plane's store cannot read its messages back, so a stream cannot go on (use a table target)",
    )
}

/// A message row and its chunk rows as the store holds them (see [`DurableTarget::load`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredMessage {
    /// The durable length.
    pub seq: u64,
    pub status: Option<String>,
    pub body: Option<String>,
    /// The document of a compacted message with parts.
    pub document: Option<String>,
    pub chunks: Vec<twoplane_core::message::MessageChunkRow>,
}

/// A producer's claim of a row that goes on from `at` (see [`DurableTarget::reopen`]).
#[derive(Clone, Copy, Debug)]
pub struct ReopenRequest<'a> {
    pub stream_id: &'a str,
    pub host_token: &'a str,
    pub at: u64,
    /// For a compacted row: the message up to `at` as one chunk row (part 0 `text`, or `parts`
    /// JSON), which replaces the row's body and document.
    pub expand: Option<ExpandRow<'a>>,
}

/// The chunk row a compacted message goes back to (see [`ReopenRequest::expand`]).
#[derive(Clone, Copy, Debug)]
pub struct ExpandRow<'a> {
    pub text: &'a str,
    pub parts: Option<&'a str>,
}

/// Convert a slice to UTF-8 for a table, refusing a lone surrogate (databases reject or mangle
/// them, and a silent U+FFFD would break P).
pub(crate) fn utf8_for_table(units: &[u16], what: &str) -> Result<String, PlaneError> {
    String::from_utf16(units).map_err(|_| {
        PlaneError::new(
            crate::PlaneErrorKind::InvalidArgument,
            format!("{what} holds an unpaired UTF-16 surrogate, which a SQL text column cannot store"),
        )
    })
}

/// JavaScript-style truthiness of a text cell (the `cancel` column may be text).
pub(crate) fn text_is_truthy(s: &str) -> bool {
    !s.is_empty()
}
