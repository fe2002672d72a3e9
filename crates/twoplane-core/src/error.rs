//! The one error type of the kernel. Every failure that crosses a boundary is an [`Error`] with a
//! stable snake_case [`ErrorKind`]; bindings copy `kind().as_str()` onto their JavaScript errors,
//! so the strings below are part of the public contract and never change meaning.

use std::fmt;

/// What went wrong, as a stable machine-readable tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The input is not well-formed JSON (or not UTF-8 where bytes were given).
    InvalidJson,
    /// A required field is absent.
    MissingField,
    /// A field is present but has the wrong JSON type or an illegal value.
    InvalidField,
    /// An offset is not an integer in `0..=2^53-1`.
    InvalidOffset,
    /// The `type` of a frame is not one of the six known types.
    UnknownFrameType,
    /// A chunk whose text length (UTF-16) differs from `seq - from`.
    ChunkSpan,
    /// A status string outside `complete|cancelled|error|interrupted`.
    InvalidStatus,
    /// A table or column name that cannot be quoted (it contains `"`), or is empty.
    InvalidIdentifier,
    /// An argument outside what the function accepts (a range past the end of a text, ...).
    InvalidArgument,
    /// A method called in a state that does not allow it.
    InvalidState,
    /// A URL that must be absolute is relative (it has no scheme).
    InvalidUrl,
}

impl ErrorKind {
    /// The stable snake_case name carried as `.kind` on JavaScript errors.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidJson => "invalid_json",
            ErrorKind::MissingField => "missing_field",
            ErrorKind::InvalidField => "invalid_field",
            ErrorKind::InvalidOffset => "invalid_offset",
            ErrorKind::UnknownFrameType => "unknown_frame_type",
            ErrorKind::ChunkSpan => "chunk_span",
            ErrorKind::InvalidStatus => "invalid_status",
            ErrorKind::InvalidIdentifier => "invalid_identifier",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::InvalidState => "invalid_state",
            ErrorKind::InvalidUrl => "invalid_url",
        }
    }

    /// Every kind, for tests and for bindings that export the list.
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::InvalidJson,
        ErrorKind::MissingField,
        ErrorKind::InvalidField,
        ErrorKind::InvalidOffset,
        ErrorKind::UnknownFrameType,
        ErrorKind::ChunkSpan,
        ErrorKind::InvalidStatus,
        ErrorKind::InvalidIdentifier,
        ErrorKind::InvalidArgument,
        ErrorKind::InvalidState,
        ErrorKind::InvalidUrl,
    ];
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A kernel error: a kind, a human message, and the field it concerns when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    field: Option<&'static str>,
    message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, field: None, message: message.into() }
    }

    /// An error about one named field; the message names it too, so logs need no extra context.
    pub fn field(kind: ErrorKind, field: &'static str, message: impl Into<String>) -> Self {
        Error { kind, field: Some(field), message: message.into() }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The field the error concerns (`"seq"`, `"text"`, ...), if any.
    pub fn field_name(&self) -> Option<&'static str> {
        self.field
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;
