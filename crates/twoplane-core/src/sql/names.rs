//! The names the plane's SQL is built from: the dialect, the table mapping with its defaults,
//! and the one identifier quoting, which refuses a name it cannot quote safely (see the
//! guarantees in `sql/mod.rs`).

use crate::error::{Error, ErrorKind, Result};

/// The SQL dialect: it decides the placeholder syntax and, in `schema.rs`, the column types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The `i`-th (1-based) parameter: `?1` for SQLite, `$1` for Postgres. Numbered rather than
    /// bare `?` so one statement text can refer to a parameter by position in both dialects.
    pub fn placeholder(self, i: usize) -> String {
        match self {
            Dialect::Sqlite => format!("?{i}"),
            Dialect::Postgres => format!("${i}"),
        }
    }

    /// `"sqlite"` or `"postgres"`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
        }
    }

    /// The inverse of [`Dialect::name`], for bindings that receive the dialect as a string.
    pub fn from_name(name: &str) -> Option<Dialect> {
        match name {
            "sqlite" => Some(Dialect::Sqlite),
            "postgres" => Some(Dialect::Postgres),
            _ => None,
        }
    }
}

/// Column names as the application maps them; `None` takes the default (see [`ResolvedColumns`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamColumns {
    pub key: Option<String>,
    pub body: Option<String>,
    pub status: Option<String>,
    pub seq: Option<String>,
    pub cancel: Option<String>,
    pub error: Option<String>,
    pub host: Option<String>,
    pub chunk_key: Option<String>,
    pub chunk_stream: Option<String>,
    pub chunk_seq: Option<String>,
    pub chunk_text: Option<String>,
    /// The message table's column for the stored message document (docs/contract.md §8).
    /// Naming it, together with [`StreamColumns::chunk_parts`], lets streams carry parts.
    pub parts: Option<String>,
    /// The chunk table's column for a parts row's frames (`NULL` in a text row).
    pub chunk_parts: Option<String>,
}

impl StreamColumns {
    /// The parts columns under their default name, `parts`, in both tables.
    pub fn with_parts(self) -> StreamColumns {
        StreamColumns { parts: Some("parts".into()), chunk_parts: Some("parts".into()), ..self }
    }

    /// Apply the defaults.
    pub fn resolve(&self) -> ResolvedColumns {
        let or = |v: &Option<String>, d: &str| v.clone().unwrap_or_else(|| d.to_owned());
        ResolvedColumns {
            key: or(&self.key, "id"),
            body: or(&self.body, "body"),
            status: or(&self.status, "status"),
            seq: or(&self.seq, "seq"),
            cancel: self.cancel.clone(),
            error: self.error.clone(),
            host: self.host.clone(),
            chunk_key: or(&self.chunk_key, "id"),
            chunk_stream: or(&self.chunk_stream, "streamId"),
            chunk_seq: or(&self.chunk_seq, "seq"),
            chunk_text: or(&self.chunk_text, "text"),
            parts: self.parts.clone(),
            chunk_parts: self.chunk_parts.clone(),
        }
    }
}

/// Where the plane's rows live: the application's message table and the generated chunk table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamTables {
    pub message: String,
    pub chunks: String,
    pub columns: StreamColumns,
}

/// Every column name with defaults applied. `cancel`, `error`, `host` and the two `parts` columns
/// have no default: naming one is what switches its feature on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedColumns {
    /// Message key (unique). Default `id`.
    pub key: String,
    /// Compacted response text. Default `body`.
    pub body: String,
    /// `streaming`, then the final status. Default `status`.
    pub status: String,
    /// Durable length, the compare-and-swap column. Default `seq`.
    pub seq: String,
    pub cancel: Option<String>,
    pub error: Option<String>,
    pub host: Option<String>,
    /// Chunk primary key. Default `id`.
    pub chunk_key: String,
    /// Chunk to message reference. Default `streamId`.
    pub chunk_stream: String,
    /// Where the chunk's text ends (rows are assembled in this order). Default `seq`.
    pub chunk_seq: String,
    /// The chunk's slice of text. Default `text`.
    pub chunk_text: String,
    /// The message document (message table).
    pub parts: Option<String>,
    /// A parts row's frames (chunk table).
    pub chunk_parts: Option<String>,
}

/// A name as a JSON string, for error messages: it shows quotes and control characters
/// unambiguously without pulling the Unicode tables of `{:?}` into the WebAssembly build.
pub(super) fn json_quoted(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    crate::json::write_json_string(&mut out, &name.encode_utf16().collect::<Vec<u16>>());
    out
}

/// `name` wrapped in double quotes, the identifier quoting SQLite and Postgres share.
pub fn quote_ident(name: &str) -> Result<String> {
    if name.is_empty() || name.contains('"') || name.contains('\0') {
        return Err(Error::new(
            ErrorKind::InvalidIdentifier,
            format!(
                "table or column name {} cannot be used: names must be non-empty and hold no '\"' or NUL",
                json_quoted(name)
            ),
        ));
    }
    Ok(format!("\"{name}\""))
}

impl ResolvedColumns {
    /// Every name quoted ([`quote_ident`]), the optional ones included: the statements and the
    /// table shapes are written with these, so a name is checked in one place. The first name
    /// that cannot be quoted is refused ([`ErrorKind::InvalidIdentifier`]).
    pub(super) fn quoted(&self) -> Result<ResolvedColumns> {
        let q = |name: &String| quote_ident(name);
        let opt = |name: &Option<String>| name.as_deref().map(quote_ident).transpose();
        Ok(ResolvedColumns {
            key: q(&self.key)?,
            body: q(&self.body)?,
            status: q(&self.status)?,
            seq: q(&self.seq)?,
            cancel: opt(&self.cancel)?,
            error: opt(&self.error)?,
            host: opt(&self.host)?,
            chunk_key: q(&self.chunk_key)?,
            chunk_stream: q(&self.chunk_stream)?,
            chunk_seq: q(&self.chunk_seq)?,
            chunk_text: q(&self.chunk_text)?,
            parts: opt(&self.parts)?,
            chunk_parts: opt(&self.chunk_parts)?,
        })
    }
}
