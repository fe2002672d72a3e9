//! The plane's statements on the application's message table and the chunk table
//! (docs/contract.md §6): open, checkpoint, close (compaction), read-back and the sweep of
//! interrupted streams. The guarantees are the module's (see `sql/mod.rs`).

use super::{int, quote_ident, text, Dialect, ResolvedColumns, SqlValue, Statement, StreamTables};
use crate::error::Result;
use crate::frame::{StreamStatus, STREAM_STATUS_STREAMING};
use crate::splice::stream_chunk_id;

/// The plane's statements for one table mapping and dialect.
///
/// Every statement text depends only on the mapping, so all of them are built (and every name
/// checked) once, in [`MappedSql::new`]; the methods only attach parameters.
#[derive(Clone, Debug)]
pub struct MappedSql {
    dialect: Dialect,
    columns: ResolvedColumns,
    probe_open: String,
    mark_streaming: String,
    probe_host: Option<String>,
    append_insert: String,
    append_cas: String,
    compact_update: String,
    compact_delete: String,
    probe_state: String,
    sweep: Option<String>,
}

impl MappedSql {
    pub fn new(tables: &StreamTables, dialect: Dialect) -> Result<MappedSql> {
        let c = tables.columns.resolve();
        let p = |i: usize| dialect.placeholder(i);
        let opt = |name: &Option<String>| name.as_deref().map(quote_ident).transpose();

        let message = quote_ident(&tables.message)?;
        let chunks = quote_ident(&tables.chunks)?;
        let key = quote_ident(&c.key)?;
        let body = quote_ident(&c.body)?;
        let status = quote_ident(&c.status)?;
        let seq = quote_ident(&c.seq)?;
        let cancel = opt(&c.cancel)?;
        let error = opt(&c.error)?;
        let host = opt(&c.host)?;
        let chunk_key = quote_ident(&c.chunk_key)?;
        let chunk_stream = quote_ident(&c.chunk_stream)?;
        let chunk_seq = quote_ident(&c.chunk_seq)?;
        let chunk_text = quote_ident(&c.chunk_text)?;

        let probe_open = format!("SELECT {seq} AS seq, {status} AS status FROM {message} WHERE {key} = {}", p(1));

        // With a host column the open write is the compare-and-swap half of the single-flight
        // guard: it claims the row only while no producer holds it, and the host read-back names
        // the winner. A NULL status counts as free (no comparison matches NULL, so it is named).
        // Without one the open probe has already checked the row, so a plain update follows.
        let mark_streaming = match &host {
            Some(h) => format!(
                "UPDATE {message} SET {status} = {}, {h} = {} WHERE {key} = {} AND ({status} IS NULL OR {status} <> {})",
                p(1),
                p(2),
                p(3),
                p(4)
            ),
            None => format!("UPDATE {message} SET {status} = {} WHERE {key} = {}", p(1), p(2)),
        };
        let probe_host = host.as_ref().map(|h| format!("SELECT {h} AS host FROM {message} WHERE {key} = {}", p(1)));

        // The insert carries the same `seq = from` guard as the compare-and-swap. After a commit
        // whose acknowledgement was lost, the retry's `from` lags the row; unguarded, it would
        // land an overlapping chunk under a different id, which ON CONFLICT cannot absorb.
        let append_insert = format!(
            "INSERT INTO {chunks} ({chunk_key}, {chunk_stream}, {chunk_seq}, {chunk_text}) \
             SELECT {}, {}, {}, {} WHERE EXISTS (SELECT 1 FROM {message} WHERE {key} = {} AND {seq} = {}) \
             ON CONFLICT DO NOTHING",
            p(1),
            p(2),
            p(3),
            p(4),
            p(5),
            p(6)
        );
        let append_cas = format!("UPDATE {message} SET {seq} = {} WHERE {key} = {} AND {seq} = {}", p(1), p(2), p(3));

        let mut sets = format!("{body} = {}, {seq} = {}, {status} = {}", p(1), p(2), p(3));
        let mut next = 4;
        if let Some(e) = &error {
            sets.push_str(&format!(", {e} = {}", p(next)));
            next += 1;
        }
        let compact_update = format!("UPDATE {message} SET {sets} WHERE {key} = {}", p(next));
        let compact_delete = format!("DELETE FROM {chunks} WHERE {chunk_stream} = {}", p(1));

        let probe_state = match &cancel {
            Some(k) => format!("SELECT {seq} AS seq, {k} AS cancel FROM {message} WHERE {key} = {}", p(1)),
            None => format!("SELECT {seq} AS seq FROM {message} WHERE {key} = {}", p(1)),
        };

        let sweep = host
            .as_ref()
            .map(|h| format!("UPDATE {message} SET {status} = {} WHERE {h} = {} AND {status} = {}", p(1), p(2), p(3)));

        Ok(MappedSql {
            dialect,
            columns: c,
            probe_open,
            mark_streaming,
            probe_host,
            append_insert,
            append_cas,
            compact_update,
            compact_delete,
            probe_state,
            sweep,
        })
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The resolved column names this SQL was built from.
    pub fn columns(&self) -> &ResolvedColumns {
        &self.columns
    }

    pub fn has_cancel(&self) -> bool {
        self.columns.cancel.is_some()
    }

    pub fn has_host(&self) -> bool {
        self.columns.host.is_some()
    }

    /// The open probe, one parameter (the stream id): the row's `seq` and `status`. The row must
    /// exist with `seq = 0` and not be streaming; regenerating is a new message, never a resume.
    pub fn probe_open(&self) -> String {
        self.probe_open.clone()
    }

    /// The open write: status to `streaming` (and the host token, conditionally, when a host
    /// column is mapped; `host_token` is unused otherwise).
    pub fn mark_streaming(&self, stream_id: &str, host_token: &str) -> Statement {
        let streaming = text(STREAM_STATUS_STREAMING);
        let params = if self.has_host() {
            vec![streaming.clone(), text(host_token), text(stream_id), streaming]
        } else {
            vec![streaming, text(stream_id)]
        };
        Statement { sql: self.mark_streaming.clone(), params }
    }

    /// The read-back of the open compare-and-swap (one parameter, the stream id), or `None` when
    /// no host column is mapped.
    pub fn probe_host(&self) -> Option<String> {
        self.probe_host.clone()
    }

    /// One checkpoint, to run in one transaction: the guarded chunk insert, then the
    /// compare-and-swap of the message's `seq` from `from` to `seq`. Whether it applied is
    /// decided by [`MappedSql::probe_state`] afterwards, never assumed.
    pub fn append(&self, stream_id: &str, from: u64, seq: u64, chunk_text: &str) -> [Statement; 2] {
        [
            Statement {
                sql: self.append_insert.clone(),
                params: vec![
                    SqlValue::Text(stream_chunk_id(stream_id, seq)),
                    text(stream_id),
                    int(seq),
                    text(chunk_text),
                    text(stream_id),
                    int(from),
                ],
            },
            Statement { sql: self.append_cas.clone(), params: vec![int(seq), text(stream_id), int(from)] },
        ]
    }

    /// The seal, to run in one transaction: write the whole body, `seq` = its UTF-16 length, the
    /// status (and the error, NULL when there is none, if an error column is mapped), then delete
    /// the stream's chunk rows. Since the body is written whole, a checkpoint that failed earlier is
    /// made good here as well.
    ///
    /// `body_len_utf16` is passed rather than derived because the caller holds the produced text
    /// as UTF-16 and already knows its length; `body` is its UTF-8 form for the driver.
    pub fn compact(
        &self,
        stream_id: &str,
        body: &str,
        body_len_utf16: u64,
        status: StreamStatus,
        error: Option<&str>,
    ) -> [Statement; 2] {
        let mut params = vec![text(body), int(body_len_utf16), text(status.as_str())];
        if self.columns.error.is_some() {
            params.push(error.map_or(SqlValue::Null, text));
        }
        params.push(text(stream_id));
        [
            Statement { sql: self.compact_update.clone(), params },
            Statement { sql: self.compact_delete.clone(), params: vec![text(stream_id)] },
        ]
    }

    /// The checkpoint read-back, one parameter (the stream id): `seq` (the only confirmation an
    /// append applied), plus `cancel` when mapped.
    pub fn probe_state(&self) -> String {
        self.probe_state.clone()
    }

    /// For a sweeper that outlived a crashed host: mark every row that `host` still holds as
    /// `streaming` as `interrupted`. `None` without a host column, since then there is no way to
    /// tell whose rows are whose. The chunk rows are left alone: body plus chunks still assemble
    /// to the durable prefix.
    pub fn sweep_interrupted(&self, host: &str) -> Option<Statement> {
        self.sweep.as_ref().map(|sql| Statement {
            sql: sql.clone(),
            params: vec![text(StreamStatus::Interrupted.as_str()), text(host), text(STREAM_STATUS_STREAMING)],
        })
    }
}
