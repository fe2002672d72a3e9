//! The statements of a stream that goes on (docs/contract.md §9): the stored message read back,
//! and its row claimed again at its durable end.
//!
//! Guarantees:
//! - The claim is one compare-and-swap: the row goes back to `streaming` (naming the host, with
//!   its cancel flag cleared, when those columns are mapped) only where it stands exactly at the
//!   offset the producer continues from and no producer holds it (but the claiming host itself,
//!   whose own stream's seal came up short), so of two producers continuing at once one wins, and
//!   a producer at the wrong offset changes nothing; the read-back decides.
//! - A compacted row is expanded back in the same transaction: its body (and document) emptied,
//!   the message up to the offset written as one chunk row at it (fenced like a checkpoint's
//!   insert), so the row reads exactly as it did while it streamed, and the next seal compacts it
//!   again at its new end.

use super::names::Dialect;
use super::statement::{int, text, Statement};
use crate::frame::STREAM_STATUS_STREAMING;

/// The statement texts, built once with the mapping's names.
#[derive(Clone, Debug)]
pub(super) struct ReopenSql {
    pub load_row: String,
    pub load_chunks: String,
    pub claim: String,
    pub claim_expanding: String,
}

/// The quoted names the statements use.
pub(super) struct Names<'a> {
    pub message: &'a str,
    pub chunks: &'a str,
    pub key: &'a str,
    pub body: &'a str,
    pub status: &'a str,
    pub seq: &'a str,
    pub cancel: Option<&'a str>,
    pub host: Option<&'a str>,
    pub document: Option<&'a str>,
    pub chunk_stream: &'a str,
    pub chunk_seq: &'a str,
    pub chunk_text: &'a str,
    pub chunk_parts: Option<&'a str>,
}

impl ReopenSql {
    pub fn new(n: &Names<'_>, dialect: Dialect) -> ReopenSql {
        let p = |i: usize| dialect.placeholder(i);
        let (message, key, seq, status) = (n.message, n.key, n.seq, n.status);
        let document = n.document.map_or(String::new(), |d| format!(", {d} AS document"));
        let load_row = format!(
            "SELECT {seq} AS seq, {status} AS status, {} AS body{document} FROM {message} WHERE {key} = {}",
            n.body,
            p(1)
        );
        let parts = n.chunk_parts.map_or(String::new(), |c| format!(", {c} AS parts"));
        let load_chunks = format!(
            "SELECT {} AS seq, {} AS text{parts} FROM {} WHERE {} = {} ORDER BY {}",
            n.chunk_seq,
            n.chunk_text,
            n.chunks,
            n.chunk_stream,
            p(1),
            n.chunk_seq
        );
        // Parameters: `streaming`, then the host token when mapped; then the key, the offset and
        // `streaming` again (the row must not be held, unless by this very host: a stream of its
        // own whose seal came up short), and the host token again when mapped.
        let mut sets = format!("{status} = {}", p(1));
        let mut next = 2;
        if let Some(h) = n.host {
            sets.push_str(&format!(", {h} = {}", p(next)));
            next += 1;
        }
        if let Some(c) = n.cancel {
            sets.push_str(&format!(", {c} = FALSE"));
        }
        let own = n.host.map_or(String::new(), |h| format!(" OR {h} = {}", p(next + 3)));
        let guard = format!(
            "WHERE {key} = {} AND {seq} = {} AND ({status} IS NULL OR {status} <> {}{own})",
            p(next),
            p(next + 1),
            p(next + 2)
        );
        let claim = format!("UPDATE {message} SET {sets} {guard}");
        let mut expand = format!("{sets}, {} = ''", n.body);
        if let Some(d) = n.document {
            expand.push_str(&format!(", {d} = NULL"));
        }
        let claim_expanding = format!("UPDATE {message} SET {expand} {guard}");
        ReopenSql { load_row, load_chunks, claim, claim_expanding }
    }
}

impl ReopenSql {
    /// The claim's statement: `host_token` when a host column is mapped.
    pub fn claim(&self, stream_id: &str, host_token: Option<&str>, at: u64, expand: bool) -> Statement {
        let mut params = vec![text(STREAM_STATUS_STREAMING)];
        params.extend(host_token.map(text));
        params.extend([text(stream_id), int(at), text(STREAM_STATUS_STREAMING)]);
        params.extend(host_token.map(text));
        Statement { sql: if expand { self.claim_expanding.clone() } else { self.claim.clone() }, params }
    }
}
