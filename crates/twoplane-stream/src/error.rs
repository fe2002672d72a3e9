//! The plane's one error type.
//!
//! Guarantees: every failure the plane reports is a [`PlaneError`] whose [`PlaneErrorKind`] has a
//! stable snake_case name ([`PlaneErrorKind::as_str`]) that callers may match on and log; the
//! message is for humans. Errors are cheap to clone because one seal outcome is handed to every
//! caller that awaits it.

use std::fmt;
use std::sync::Arc;

/// What went wrong, as a stable machine-readable tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlaneErrorKind {
    /// The options cannot work together (or do nothing in this mode); refused at construction.
    InvalidOptions,
    /// The authorizer denied a subscription. Looks the same whether or not the stream exists.
    Forbidden,
    /// The store's settled verdict on `open`: the row is missing, already advanced, or held by
    /// another producer. Never retried.
    OpenRefused,
    /// This plane already hosts a live stream with that id.
    AlreadyOpen,
    /// The plane is draining (shutting down) and takes no new streams.
    Draining,
    /// A push or seal on a stream that is already sealed (or sealing).
    StreamClosed,
    /// Text the caller waited for did not land in the store (a flush or a seal came up short).
    NotDurable,
    /// The durable target failed (a database error, an injected fault, a callback error).
    Store,
    /// A producer going on with a stream from an offset that is not where the stream stands
    /// (its durable end in the store, or its end here). Nothing changed; the error says where it
    /// stands. Never retried.
    WrongOffset,
    /// A relay adapter failed; reported through the relay hook, never to a producer.
    Relay,
    /// An argument the plane cannot accept (an offset past 2^53 - 1, text a table cannot hold).
    InvalidArgument,
    /// The plane stopped before the operation could finish (its runtime shut down).
    Shutdown,
    /// The store refused this producer's write because its claim on the row ended: a sweeper
    /// marked the stream `interrupted` (this host's lease lapsed, say in a long pause). The stream
    /// has stopped; the store's row is the truth. Never retried.
    Fenced,
    /// A push refused because the stream already holds as much text as it may without the
    /// store confirming it (`max_undurable_chars`, `max_undurable_ms`). Nothing was appended;
    /// push the same text again after [`PlaneError::retry_after`].
    Backpressure,
}

impl PlaneErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PlaneErrorKind::InvalidOptions => "invalid_options",
            PlaneErrorKind::Forbidden => "forbidden",
            PlaneErrorKind::OpenRefused => "open_refused",
            PlaneErrorKind::AlreadyOpen => "already_open",
            PlaneErrorKind::Draining => "draining",
            PlaneErrorKind::StreamClosed => "stream_closed",
            PlaneErrorKind::NotDurable => "not_durable",
            PlaneErrorKind::Store => "store",
            PlaneErrorKind::WrongOffset => "wrong_offset",
            PlaneErrorKind::Relay => "relay",
            PlaneErrorKind::InvalidArgument => "invalid_argument",
            PlaneErrorKind::Shutdown => "shutdown",
            PlaneErrorKind::Fenced => "fenced",
            PlaneErrorKind::Backpressure => "backpressure",
        }
    }
}

impl fmt::Display for PlaneErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

type Source = Arc<dyn std::error::Error + Send + Sync>;

/// A plane error: a kind, a message, and the underlying cause when there is one.
#[derive(Clone)]
pub struct PlaneError {
    kind: PlaneErrorKind,
    message: String,
    source: Option<Source>,
    retry_after: Option<std::time::Duration>,
}

impl PlaneError {
    pub fn new(kind: PlaneErrorKind, message: impl Into<String>) -> Self {
        PlaneError { kind, message: message.into(), source: None, retry_after: None }
    }

    /// How long to wait before trying the same call again, when the plane can tell.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        self.retry_after
    }

    pub(crate) fn with_retry_after(mut self, wait: std::time::Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// Attach the cause (a driver error, a callback's error).
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    pub(crate) fn with_boxed_source(mut self, source: Box<dyn std::error::Error + Send + Sync>) -> Self {
        self.source = Some(Arc::from(source));
        self
    }

    pub fn kind(&self) -> PlaneErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn invalid_options(message: impl Into<String>) -> Self {
        PlaneError::new(PlaneErrorKind::InvalidOptions, message)
    }

    pub fn store(message: impl Into<String>) -> Self {
        PlaneError::new(PlaneErrorKind::Store, message)
    }

    pub fn open_refused(message: impl Into<String>) -> Self {
        PlaneError::new(PlaneErrorKind::OpenRefused, message)
    }

    /// The one denial message: it names only what the caller already sent, so it cannot tell
    /// an existing stream from a missing one.
    pub fn forbidden(stream_id: &str) -> Self {
        PlaneError::new(PlaneErrorKind::Forbidden, format!("stream {stream_id}: forbidden"))
    }

    /// Whether retrying the same call could change the answer (store blips yes, verdicts no).
    pub(crate) fn is_retryable(&self) -> bool {
        matches!(self.kind, PlaneErrorKind::Store | PlaneErrorKind::Relay)
    }
}

impl fmt::Display for PlaneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        if let Some(source) = &self.source {
            write!(f, " ({source})")?;
        }
        Ok(())
    }
}

impl fmt::Debug for PlaneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlaneError")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("source", &self.source.as_ref().map(|s| s.to_string()))
            .finish()
    }
}

impl std::error::Error for PlaneError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl From<twoplane_core::Error> for PlaneError {
    fn from(e: twoplane_core::Error) -> Self {
        let kind = match e.kind() {
            twoplane_core::ErrorKind::InvalidIdentifier => PlaneErrorKind::InvalidOptions,
            _ => PlaneErrorKind::InvalidArgument,
        };
        PlaneError::new(kind, e.message().to_owned()).with_source(e)
    }
}
