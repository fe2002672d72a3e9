//! The plane's statements on the application's message table and the chunk table
//! (docs/contract.md §6): open, checkpoint, close (compaction), read-back and the sweep of
//! interrupted streams. The guarantees are the module's (see `sql/mod.rs`).
//!
//! Fencing (docs/contract.md §6): every write a producer makes after its open (the checkpoint's
//! compare-and-swap, its chunk insert and the compaction) also requires the row to be
//! `streaming` and, when a host column is mapped, to name the writer's host token. A sweep ends
//! the claim by moving the status off `streaming`, so from then on the database itself refuses
//! the old producer's writes; nothing but a new open can make the row `streaming` again.

use super::names::{quote_ident, Dialect, ResolvedColumns, StreamTables};
use super::reopen::{Names, ReopenSql};
use super::statement::{int, text, SqlValue, Statement};
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
    /// `append_cas` answering with the `probe_state` columns of the row it changed.
    append_cas_returning: String,
    compact_update: String,
    compact_delete: String,
    probe_chunk: String,
    probe_state: String,
    sweep: Option<String>,
    /// The parts row insert and the message compaction, when both parts columns are named.
    parts: Option<PartsSql>,
    /// A stream that goes on (`reopen.rs`).
    reopen: ReopenSql,
}

/// The statements of messages with parts (docs/contract.md §8).
#[derive(Clone, Debug)]
struct PartsSql {
    append_insert: String,
    compact_update: String,
}

impl MappedSql {
    pub fn new(tables: &StreamTables, dialect: Dialect) -> Result<MappedSql> {
        let p = |i: usize| dialect.placeholder(i);
        let c = tables.columns.resolve();
        let (message, chunks) = (quote_ident(&tables.message)?, quote_ident(&tables.chunks)?);
        let ResolvedColumns {
            key,
            body,
            status,
            seq,
            cancel,
            error,
            host,
            chunk_key,
            chunk_stream,
            chunk_seq,
            chunk_text,
            parts,
            chunk_parts,
        } = c.quoted()?;
        let (doc_column, chunk_parts) = match (parts, chunk_parts) {
            (Some(d), Some(p)) => (Some(d), Some(p)),
            (None, None) => (None, None),
            _ => {
                return Err(crate::error::Error::new(
                    crate::error::ErrorKind::InvalidArgument,
                    "name both parts columns (the message table's and the chunk table's) or neither",
                ))
            }
        };

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

        // The fence, appended to every producer write's WHERE clause from parameter `at` on:
        // the row is still claimed (`streaming`) and, with a host column, claimed by this writer.
        let fence = |at: usize| match &host {
            Some(h) => format!("{status} = {} AND {h} = {}", p(at), p(at + 1)),
            None => format!("{status} = {}", p(at)),
        };
        // The compare-and-swap runs first: in PostgreSQL it takes the row's lock, so a sweep
        // either committed before it (and the fence refuses it) or waits until this checkpoint
        // has committed (and then releases the row with this chunk in it).
        let append_cas = format!(
            "UPDATE {message} SET {seq} = {} WHERE {key} = {} AND {seq} = {} AND {}",
            p(1),
            p(2),
            p(3),
            fence(4)
        );
        // The insert lands only where the row now stands at this slice's end, still fenced:
        // that is, where the compare-and-swap just applied, or where an earlier attempt whose
        // acknowledgement was lost applied it (the chunk id is the same, so ON CONFLICT absorbs
        // it). A retry with a lagging `from` finds the row elsewhere and inserts nothing, so an
        // overlapping chunk can never land under a different id.
        // `columns` take the first `values` parameters; the row's key, length and fence follow.
        let insert = |columns: &str, values: usize| {
            let selected = (1..=values).map(p).collect::<Vec<_>>().join(", ");
            format!(
                "INSERT INTO {chunks} ({columns}) SELECT {selected} WHERE EXISTS (SELECT 1 FROM {message} \
                 WHERE {key} = {} AND {seq} = {} AND {}) ON CONFLICT DO NOTHING",
                p(values + 1),
                p(values + 2),
                fence(values + 3)
            )
        };
        let text_columns = format!("{chunk_key}, {chunk_stream}, {chunk_seq}, {chunk_text}");
        let append_insert = insert(&text_columns, 4);

        let mut sets = format!("{body} = {}, {seq} = {}, {status} = {}", p(1), p(2), p(3));
        let mut next = 4;
        if let Some(e) = &error {
            sets.push_str(&format!(", {e} = {}", p(next)));
            next += 1;
        }
        let compact_update = format!("UPDATE {message} SET {sets} WHERE {key} = {} AND {}", p(next), fence(next + 1));
        // A message's compaction also writes its document, as the last value before the key.
        let parts = match (&doc_column, &chunk_parts) {
            (Some(doc), Some(chunk_parts)) => Some(PartsSql {
                append_insert: insert(&format!("{text_columns}, {chunk_parts}"), 5),
                compact_update: format!(
                    "UPDATE {message} SET {sets}, {doc} = {} WHERE {key} = {} AND {}",
                    p(next),
                    p(next + 1),
                    fence(next + 2)
                ),
            }),
            _ => None,
        };
        let compact_delete = format!("DELETE FROM {chunks} WHERE {chunk_stream} = {}", p(1));
        let probe_chunk = format!("SELECT 1 FROM {chunks} WHERE {chunk_stream} = {} LIMIT 1", p(1));

        // Columns in a fixed order: seq, cancel (when mapped), status, host (when mapped).
        let mut probe_cols = format!("{seq} AS seq");
        if let Some(k) = &cancel {
            probe_cols.push_str(&format!(", {k} AS cancel"));
        }
        probe_cols.push_str(&format!(", {status} AS status"));
        if let Some(h) = &host {
            probe_cols.push_str(&format!(", {h} AS host"));
        }
        let probe_state = format!("SELECT {probe_cols} FROM {message} WHERE {key} = {}", p(1));
        // Both dialects have RETURNING (SQLite since 3.35): a compare-and-swap that applied says
        // where the row stands in the same statement, so a checkpoint needs no read-back.
        let append_cas_returning = format!("{append_cas} RETURNING {probe_cols}");

        let reopen = ReopenSql::new(
            &Names {
                message: &message,
                chunks: &chunks,
                key: &key,
                body: &body,
                status: &status,
                seq: &seq,
                cancel: cancel.as_deref(),
                host: host.as_deref(),
                document: doc_column.as_deref(),
                chunk_stream: &chunk_stream,
                chunk_seq: &chunk_seq,
                chunk_text: &chunk_text,
                chunk_parts: chunk_parts.as_deref(),
            },
            dialect,
        );

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
            append_cas_returning,
            compact_update,
            compact_delete,
            probe_chunk,
            probe_state,
            sweep,
            parts,
            reopen,
        })
    }

    /// The stored row, one parameter (the stream id): `seq`, `status`, `body`, and `document`
    /// when the parts columns are named (a stream that goes on, `reopen.rs`).
    pub fn load_row(&self) -> String {
        self.reopen.load_row.clone()
    }

    /// The stream's chunk rows in `seq` order, one parameter (the stream id): `seq`, `text`, and
    /// `parts` when the parts columns are named.
    pub fn load_chunks(&self) -> String {
        self.reopen.load_chunks.clone()
    }

    /// The claim of a row that goes on from `at` (`reopen.rs`); with `expand`, the row was
    /// compacted and is emptied for the chunk row [`MappedSql::reopen_chunk`] writes.
    pub fn reopen(&self, stream_id: &str, host_token: &str, at: u64, expand: bool) -> Statement {
        self.reopen.claim(stream_id, self.has_host().then_some(host_token), at, expand)
    }

    /// The chunk row that holds a compacted message up to `at` once its row was claimed again:
    /// part 0 text (`parts` `None`), or a parts row. It lands only where the claim did (the row
    /// at `at`, `streaming`, naming this host). `None` for a parts row without parts columns.
    pub fn reopen_chunk(
        &self,
        stream_id: &str,
        host_token: &str,
        at: u64,
        chunk_text: &str,
        parts: Option<&str>,
    ) -> Option<Statement> {
        let [_, insert] = match parts {
            None => self.append(stream_id, host_token, at, at, chunk_text),
            Some(parts) => self.append_parts(stream_id, host_token, at, at, parts)?,
        };
        Some(insert)
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

    /// One checkpoint, to run in one transaction and in this order: the fenced compare-and-swap
    /// of the message's `seq` from `from` to `seq`, then the chunk insert, which lands only where
    /// the row now stands at `seq` and is still claimed by `host_token` (the token is unused
    /// without a host column). Whether it applied is decided by [`MappedSql::probe_state`]
    /// afterwards, never assumed; the read-back also tells a fenced writer (status no longer
    /// `streaming`, or another host) from a lost acknowledgement.
    pub fn append(&self, stream_id: &str, host_token: &str, from: u64, seq: u64, chunk_text: &str) -> [Statement; 2] {
        let mut cas = vec![int(seq), text(stream_id), int(from)];
        cas.extend(self.fence_params(host_token));
        let mut insert = vec![
            SqlValue::Text(stream_chunk_id(stream_id, seq)),
            text(stream_id),
            int(seq),
            text(chunk_text),
            text(stream_id),
            int(seq),
        ];
        insert.extend(self.fence_params(host_token));
        [
            Statement { sql: self.append_cas.clone(), params: cas },
            Statement { sql: self.append_insert.clone(), params: insert },
        ]
    }

    /// Whether both parts columns are named, so streams may carry parts (docs/contract.md §8).
    pub fn has_parts(&self) -> bool {
        self.parts.is_some()
    }

    /// A checkpoint whose slice is a parts row: as [`MappedSql::append`], the chunk's text empty
    /// and `parts` (the slice's frames as JSON) in the chunk table's parts column. `None` when the
    /// parts columns are not named.
    pub fn append_parts(
        &self,
        stream_id: &str,
        host_token: &str,
        from: u64,
        seq: u64,
        parts: &str,
    ) -> Option<[Statement; 2]> {
        let sql = self.parts.as_ref()?;
        let [cas, _] = self.append(stream_id, host_token, from, seq, "");
        let mut insert = vec![
            SqlValue::Text(stream_chunk_id(stream_id, seq)),
            text(stream_id),
            int(seq),
            text(""),
            text(parts),
            text(stream_id),
            int(seq),
        ];
        insert.extend(self.fence_params(host_token));
        Some([cas, Statement { sql: sql.append_insert.clone(), params: insert }])
    }

    /// The seal of a message with parts: as [`MappedSql::compact`] (`body` the text parts'
    /// bodies, `len` the message's length in the coordinate), and the message document in the
    /// message table's parts column. `None` when the parts columns are not named.
    #[allow(clippy::too_many_arguments)]
    pub fn compact_message(
        &self,
        stream_id: &str,
        host_token: &str,
        body: &str,
        len: u64,
        document: &str,
        status: StreamStatus,
        error: Option<&str>,
    ) -> Option<[Statement; 2]> {
        let sql = self.parts.as_ref()?;
        let [update, delete] = self.compact(stream_id, host_token, body, len, status, error);
        let mut params = update.params;
        // The compaction's parameters end with the key and the fence; the document goes before.
        let tail = params.split_off(params.len() - 1 - self.fence_params(host_token).len());
        params.push(text(document));
        params.extend(tail);
        Some([Statement { sql: sql.compact_update.clone(), params }, delete])
    }

    /// The fence's parameters: `streaming`, then the host token when a host column is mapped.
    fn fence_params(&self, host_token: &str) -> Vec<SqlValue> {
        let mut params = vec![text(STREAM_STATUS_STREAMING)];
        if self.has_host() {
            params.push(text(host_token));
        }
        params
    }

    /// The seal, to run in one transaction: write the whole body, `seq` = its UTF-16 length, the
    /// status (and the error, NULL when there is none, if an error column is mapped), fenced
    /// like a checkpoint; then delete the stream's chunk rows. The caller runs the delete only
    /// when the update changed exactly one row and rolls back otherwise: a fenced seal must not
    /// touch the row or its chunks. Since the body is written whole, a checkpoint that failed
    /// earlier is made good here as well.
    ///
    /// `body_len_utf16` is passed rather than derived because the caller holds the produced text
    /// as UTF-16 and already knows its length; `body` is its UTF-8 form for the driver.
    pub fn compact(
        &self,
        stream_id: &str,
        host_token: &str,
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
        params.extend(self.fence_params(host_token));
        [
            Statement { sql: self.compact_update.clone(), params },
            Statement { sql: self.compact_delete.clone(), params: vec![text(stream_id)] },
        ]
    }

    /// Whether any chunk row of the stream is left, one parameter (the stream id): one row if so.
    /// A seal whose fenced update matched nothing asks it to tell its own earlier compaction (no
    /// chunks left) from a sweep (which leaves them).
    pub fn probe_chunk(&self) -> String {
        self.probe_chunk.clone()
    }

    /// The checkpoint read-back, one parameter (the stream id), columns in this order: `seq`
    /// (the only confirmation an append applied), `cancel` when mapped, `status`, and `host`
    /// when mapped (the last two tell whether the writer is still the row's claimant).
    pub fn probe_state(&self) -> String {
        self.probe_state.clone()
    }

    /// A checkpoint's statements ([`MappedSql::append`] or [`MappedSql::append_parts`]) with the
    /// compare-and-swap answering the [`MappedSql::probe_state`] columns of the row it changed:
    /// one row when it applied (the row is this writer's and stands at the slice's end), none
    /// when it did not (then only a read-back can say why).
    pub fn returning(&self, [cas, insert]: [Statement; 2]) -> [Statement; 2] {
        [Statement { sql: self.append_cas_returning.clone(), params: cas.params }, insert]
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
