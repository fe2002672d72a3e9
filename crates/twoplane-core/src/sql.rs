//! The durable plane's SQL (docs/contract.md §6), for SQLite and Postgres, in one place.
//!
//! Guarantees:
//! - Every identifier is double-quoted, and a name that cannot be quoted safely (one holding `"`
//!   or NUL, or an empty one) is refused with [`ErrorKind::InvalidIdentifier`] instead of escaped:
//!   names come from the application's configuration, where a quote character is a typo to
//!   report at startup, not something to paper over with escaping.
//! - [`MappedSql::new`] checks every name once; after that no method can fail, so a checkpoint
//!   never discovers a bad mapping halfway through a stream.
//! - Values never appear in SQL text: they travel as numbered parameters ([`SqlValue`]).
//! - Every statement is idempotent under replay (a chunk id is deterministic and the insert is
//!   guarded by the same `seq = from` predicate as the compare-and-swap), so a commit whose
//!   acknowledgement was lost can simply be retried; the read-back decides what happened.
//! - The optional `cancel`, `error` and `host` columns appear in SQL only when they are named.

use crate::error::{Error, ErrorKind, Result};
use crate::frame::{StreamStatus, STREAM_STATUS_STREAMING};
use crate::splice::stream_chunk_id;

/// The SQL dialect: it decides the placeholder syntax and the chunk table's column types.
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

    fn text_type(self) -> &'static str {
        match self {
            Dialect::Sqlite => "TEXT",
            Dialect::Postgres => "text",
        }
    }

    fn int_type(self) -> &'static str {
        match self {
            Dialect::Sqlite => "INTEGER",
            Dialect::Postgres => "bigint",
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
}

impl StreamColumns {
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

/// Every column name with defaults applied. `cancel`, `error` and `host` have no default: naming
/// one is what switches its feature on.
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
}

/// A name as a JSON string, for error messages: it shows quotes and control characters
/// unambiguously without pulling the Unicode tables of `{:?}` into the WebAssembly build.
fn json_quoted(name: &str) -> String {
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

/// The chunk table's migration: the table, then its `(stream, seq)` index, which serves both
/// reading a stream's chunks in order and compaction's delete by stream.
pub fn stream_chunk_table_ddl(tables: &StreamTables, dialect: Dialect) -> Result<Vec<String>> {
    let c = tables.columns.resolve();
    let chunks = quote_ident(&tables.chunks)?;
    let index = quote_ident(&format!("{}_stream_seq", tables.chunks))?;
    let (key, stream, seq, text) = (
        quote_ident(&c.chunk_key)?,
        quote_ident(&c.chunk_stream)?,
        quote_ident(&c.chunk_seq)?,
        quote_ident(&c.chunk_text)?,
    );
    let (t, i) = (dialect.text_type(), dialect.int_type());
    Ok(vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {chunks} ({key} {t} PRIMARY KEY, {stream} {t} NOT NULL, \
             {seq} {i} NOT NULL, {text} {t} NOT NULL)"
        ),
        format!("CREATE INDEX IF NOT EXISTS {index} ON {chunks} ({stream}, {seq})"),
    ])
}

/// One bound parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SqlValue {
    Text(String),
    Int(i64),
    Null,
}

/// A statement and its parameters, in placeholder order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub sql: String,
    pub params: Vec<SqlValue>,
}

/// An offset as a parameter. Offsets are at most 2^53 - 1, so they fit; anything larger (which no
/// valid frame carries) saturates rather than wrapping into a negative number.
fn int(v: u64) -> SqlValue {
    SqlValue::Int(i64::try_from(v).unwrap_or(i64::MAX))
}

fn text(v: &str) -> SqlValue {
    SqlValue::Text(v.to_owned())
}

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

/// The default name of the liveness lease table ([`HostLeaseSql`]).
pub const DEFAULT_HOST_LEASE_TABLE: &str = "twoplane_hosts";

/// The database clock in milliseconds since the Unix epoch, as an SQL expression. The lease is
/// judged by the shared database's clock, never a process's, so instances whose clocks disagree
/// still agree on which leases are live. SQLite computes it from `julianday` (available in every
/// SQLite, unlike `unixepoch`); Postgres from the current transaction's timestamp.
fn now_ms(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
        Dialect::Postgres => "CAST(EXTRACT(EPOCH FROM now()) * 1000 AS bigint)",
    }
}

/// The liveness lease of producer hosts, for several instances sharing one database.
///
/// Every instance upserts a row `(host, expires_at)` in the lease table on a period shorter than
/// the lease's time to live ([`HostLeaseSql::heartbeat`]); a sweeper that any instance runs marks
/// `interrupted` every `streaming` message row whose host's lease has expired
/// ([`HostLeaseSql::sweep_expired`]), which releases the stream of a host that died without
/// sealing it: readers converge on the store, where the row now says `interrupted` and body plus
/// chunks assemble to the durable prefix (the chunk rows are left alone, as in
/// [`MappedSql::sweep_interrupted`]).
///
/// Guarantees:
/// - Only rows whose status is exactly `streaming` change, and only their status: a sealed row
///   is never touched, and neither are `body`, `seq` or the chunk rows.
/// - A row is swept only when its host HAS a lease row and that lease has expired. A host with no
///   lease row at all (a producer that does not take part in leasing) is never judged dead, so
///   one lease-less instance sharing the database cannot have its streams cut by the others.
/// - Expiry is judged by the database's clock (see `now_ms`), in milliseconds.
/// - Like [`MappedSql`], every name is checked once in [`HostLeaseSql::new`]; the methods cannot
///   fail and values always travel as parameters.
#[derive(Clone, Debug)]
pub struct HostLeaseSql {
    dialect: Dialect,
    ddl: String,
    heartbeat: String,
    release: String,
    sweep: String,
    prune: String,
}

impl HostLeaseSql {
    /// Build the lease statements for the message table of `tables` (whose `host` column must be
    /// mapped: it is how a row names its producer) and the lease table `lease_table`
    /// (conventionally [`DEFAULT_HOST_LEASE_TABLE`]).
    pub fn new(tables: &StreamTables, lease_table: &str, dialect: Dialect) -> Result<HostLeaseSql> {
        let c = tables.columns.resolve();
        let host_column = c.host.as_deref().ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                "a host lease needs the message table's host column mapped: without it no row says which \
                 instance produces it",
            )
        })?;
        let p = |i: usize| dialect.placeholder(i);
        let now = now_ms(dialect);
        let message = quote_ident(&tables.message)?;
        let key = quote_ident(&c.key)?;
        let status = quote_ident(&c.status)?;
        let host = quote_ident(host_column)?;
        let lease = quote_ident(lease_table)?;
        let (t, i) = (dialect.text_type(), dialect.int_type());

        let ddl = format!("CREATE TABLE IF NOT EXISTS {lease} (\"host\" {t} PRIMARY KEY, \"expires_at\" {i} NOT NULL)");
        // An upsert, so the first heartbeat and every later one are the same statement; retrying
        // it is harmless (the newest expiry wins).
        let heartbeat = format!(
            "INSERT INTO {lease} (\"host\", \"expires_at\") VALUES ({}, {now} + {}) \
             ON CONFLICT (\"host\") DO UPDATE SET \"expires_at\" = excluded.\"expires_at\"",
            p(1),
            p(2)
        );
        // Expire rather than delete: a deleted lease would make the host unknown, and an unknown
        // host's rows are never swept (see the guarantees), so anything it left streaming would
        // stay streaming forever.
        let release = format!("UPDATE {lease} SET \"expires_at\" = 0 WHERE \"host\" = {}", p(1));
        // One statement, so a row is judged and changed atomically: no host can heartbeat between
        // the check and the write and still lose its row. RETURNING names the streams released
        // (SQLite has it since 3.35; the bundled one is newer).
        let sweep = format!(
            "UPDATE {message} SET {status} = {} WHERE {status} = {} AND {host} IN \
             (SELECT \"host\" FROM {lease} WHERE \"expires_at\" <= {now}) RETURNING {key}",
            p(1),
            p(2)
        );
        // Forget hosts that died long ago, but only once none of their rows is streaming (their
        // lease row is what lets the sweep release those rows).
        let prune = format!(
            "DELETE FROM {lease} WHERE \"expires_at\" < {now} - {} AND NOT EXISTS \
             (SELECT 1 FROM {message} WHERE {message}.{host} = {lease}.\"host\" AND {message}.{status} = {})",
            p(1),
            p(2)
        );
        Ok(HostLeaseSql { dialect, ddl, heartbeat, release, sweep, prune })
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The lease table's migration: `CREATE TABLE IF NOT EXISTS <lease> ("host" text PRIMARY
    /// KEY, "expires_at" bigint NOT NULL)` (SQLite: `TEXT`, `INTEGER`); `expires_at` is in
    /// milliseconds since the Unix epoch by the database's clock.
    pub fn ddl(&self) -> Vec<String> {
        vec![self.ddl.clone()]
    }

    /// Renew (or take) `host`'s lease until `ttl_ms` from now.
    pub fn heartbeat(&self, host: &str, ttl_ms: u64) -> Statement {
        Statement { sql: self.heartbeat.clone(), params: vec![text(host), int(ttl_ms)] }
    }

    /// Give `host`'s lease up now (a clean shutdown, after the plane drained): anything it still
    /// holds as `streaming` is released by the next sweep.
    pub fn release(&self, host: &str) -> Statement {
        Statement { sql: self.release.clone(), params: vec![text(host)] }
    }

    /// Mark `interrupted` every `streaming` row whose host's lease has expired. It returns one
    /// row per released stream: its key.
    pub fn sweep_expired(&self) -> Statement {
        Statement {
            sql: self.sweep.clone(),
            params: vec![text(StreamStatus::Interrupted.as_str()), text(STREAM_STATUS_STREAMING)],
        }
    }

    /// Delete lease rows expired for more than `retention_ms` whose host holds no `streaming`
    /// row any more.
    pub fn prune(&self, retention_ms: u64) -> Statement {
        Statement { sql: self.prune.clone(), params: vec![int(retention_ms), text(STREAM_STATUS_STREAMING)] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables() -> StreamTables {
        StreamTables { message: "messages".into(), chunks: "chunks".into(), columns: StreamColumns::default() }
    }

    fn full_tables() -> StreamTables {
        StreamTables {
            message: "msg".into(),
            chunks: "msg_chunks".into(),
            columns: StreamColumns {
                key: Some("uid".into()),
                body: Some("content".into()),
                status: Some("state".into()),
                seq: Some("len".into()),
                cancel: Some("stop".into()),
                error: Some("err".into()),
                host: Some("owner".into()),
                chunk_key: Some("cid".into()),
                chunk_stream: Some("message_uid".into()),
                chunk_seq: Some("end_at".into()),
                chunk_text: Some("slice".into()),
            },
        }
    }

    fn t(s: &str) -> SqlValue {
        SqlValue::Text(s.into())
    }

    #[test]
    fn placeholders_and_names() {
        assert_eq!(Dialect::Sqlite.placeholder(1), "?1");
        assert_eq!(Dialect::Postgres.placeholder(12), "$12");
        for d in [Dialect::Sqlite, Dialect::Postgres] {
            assert_eq!(Dialect::from_name(d.name()), Some(d));
        }
        assert_eq!(Dialect::from_name("mysql"), None);
    }

    #[test]
    fn ddl_with_default_columns() {
        assert_eq!(
            stream_chunk_table_ddl(&tables(), Dialect::Sqlite).unwrap(),
            vec![
                r#"CREATE TABLE IF NOT EXISTS "chunks" ("id" TEXT PRIMARY KEY, "streamId" TEXT NOT NULL, "seq" INTEGER NOT NULL, "text" TEXT NOT NULL)"#,
                r#"CREATE INDEX IF NOT EXISTS "chunks_stream_seq" ON "chunks" ("streamId", "seq")"#,
            ]
        );
        assert_eq!(
            stream_chunk_table_ddl(&tables(), Dialect::Postgres).unwrap(),
            vec![
                r#"CREATE TABLE IF NOT EXISTS "chunks" ("id" text PRIMARY KEY, "streamId" text NOT NULL, "seq" bigint NOT NULL, "text" text NOT NULL)"#,
                r#"CREATE INDEX IF NOT EXISTS "chunks_stream_seq" ON "chunks" ("streamId", "seq")"#,
            ]
        );
    }

    #[test]
    fn ddl_with_mapped_columns() {
        assert_eq!(
            stream_chunk_table_ddl(&full_tables(), Dialect::Postgres).unwrap(),
            vec![
                r#"CREATE TABLE IF NOT EXISTS "msg_chunks" ("cid" text PRIMARY KEY, "message_uid" text NOT NULL, "end_at" bigint NOT NULL, "slice" text NOT NULL)"#,
                r#"CREATE INDEX IF NOT EXISTS "msg_chunks_stream_seq" ON "msg_chunks" ("message_uid", "end_at")"#,
            ]
        );
    }

    #[test]
    fn bad_identifiers_are_refused() {
        assert_eq!(quote_ident("a b").unwrap(), "\"a b\"");
        for bad in ["a\"b", "", "x\0y"] {
            let err = quote_ident(bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidIdentifier);
            assert!(err.message().contains(&json_quoted(bad)), "{}", err.message());
        }
        let mut bad_table = tables();
        bad_table.chunks = "ch\"unks".into();
        assert_eq!(
            stream_chunk_table_ddl(&bad_table, Dialect::Sqlite).unwrap_err().kind(),
            ErrorKind::InvalidIdentifier
        );
        assert_eq!(MappedSql::new(&bad_table, Dialect::Sqlite).unwrap_err().kind(), ErrorKind::InvalidIdentifier);
        let mut bad_column = tables();
        bad_column.columns.chunk_text = Some("te\"xt".into());
        assert_eq!(
            stream_chunk_table_ddl(&bad_column, Dialect::Sqlite).unwrap_err().kind(),
            ErrorKind::InvalidIdentifier
        );
        // Optional columns are checked up front too, even though they are used only sometimes.
        for set in [
            |c: &mut StreamColumns| c.cancel = Some("c\"".into()),
            |c: &mut StreamColumns| c.error = Some("".into()),
            |c: &mut StreamColumns| c.host = Some("h\"".into()),
            |c: &mut StreamColumns| c.key = Some("k\"".into()),
        ] {
            let mut tb = tables();
            set(&mut tb.columns);
            let err = MappedSql::new(&tb, Dialect::Postgres).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidIdentifier);
        }
        let mut bad_message = tables();
        bad_message.message = String::new();
        assert!(MappedSql::new(&bad_message, Dialect::Sqlite).is_err());
    }

    #[test]
    fn resolved_defaults() {
        let c = StreamColumns::default().resolve();
        assert_eq!(
            (c.key.as_str(), c.body.as_str(), c.status.as_str(), c.seq.as_str()),
            ("id", "body", "status", "seq")
        );
        assert_eq!(
            (c.chunk_key.as_str(), c.chunk_stream.as_str(), c.chunk_seq.as_str(), c.chunk_text.as_str()),
            ("id", "streamId", "seq", "text")
        );
        assert_eq!((c.cancel, c.error, c.host), (None, None, None));
        let sql = MappedSql::new(&tables(), Dialect::Sqlite).unwrap();
        assert!(!sql.has_cancel() && !sql.has_host());
        assert_eq!(sql.columns().chunk_stream, "streamId");
        assert_eq!(sql.dialect(), Dialect::Sqlite);
    }

    #[test]
    fn statements_with_default_columns_sqlite() {
        let sql = MappedSql::new(&tables(), Dialect::Sqlite).unwrap();
        assert_eq!(sql.probe_open(), r#"SELECT "seq" AS seq, "status" AS status FROM "messages" WHERE "id" = ?1"#);
        assert_eq!(
            sql.mark_streaming("m1", "host-a"),
            Statement {
                sql: r#"UPDATE "messages" SET "status" = ?1 WHERE "id" = ?2"#.into(),
                params: vec![t("streaming"), t("m1")],
            }
        );
        assert_eq!(sql.probe_host(), None);
        let [insert, cas] = sql.append("m1", 5, 9, "abcd");
        assert_eq!(
            insert,
            Statement {
                sql: r#"INSERT INTO "chunks" ("id", "streamId", "seq", "text") SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM "messages" WHERE "id" = ?5 AND "seq" = ?6) ON CONFLICT DO NOTHING"#.into(),
                params: vec![t("m1:9"), t("m1"), SqlValue::Int(9), t("abcd"), t("m1"), SqlValue::Int(5)],
            }
        );
        assert_eq!(
            cas,
            Statement {
                sql: r#"UPDATE "messages" SET "seq" = ?1 WHERE "id" = ?2 AND "seq" = ?3"#.into(),
                params: vec![SqlValue::Int(9), t("m1"), SqlValue::Int(5)],
            }
        );
        let [update, delete] = sql.compact("m1", "hello😀", 7, StreamStatus::Complete, Some("ignored: no column"));
        assert_eq!(
            update,
            Statement {
                sql: r#"UPDATE "messages" SET "body" = ?1, "seq" = ?2, "status" = ?3 WHERE "id" = ?4"#.into(),
                params: vec![t("hello😀"), SqlValue::Int(7), t("complete"), t("m1")],
            }
        );
        assert_eq!(
            delete,
            Statement { sql: r#"DELETE FROM "chunks" WHERE "streamId" = ?1"#.into(), params: vec![t("m1")] }
        );
        assert_eq!(sql.probe_state(), r#"SELECT "seq" AS seq FROM "messages" WHERE "id" = ?1"#);
        assert_eq!(sql.sweep_interrupted("host-a"), None);
    }

    #[test]
    fn statements_with_every_column_postgres() {
        let sql = MappedSql::new(&full_tables(), Dialect::Postgres).unwrap();
        assert!(sql.has_cancel() && sql.has_host());
        assert_eq!(sql.probe_open(), r#"SELECT "len" AS seq, "state" AS status FROM "msg" WHERE "uid" = $1"#);
        assert_eq!(
            sql.mark_streaming("m1", "host-a"),
            Statement {
                sql: r#"UPDATE "msg" SET "state" = $1, "owner" = $2 WHERE "uid" = $3 AND ("state" IS NULL OR "state" <> $4)"#.into(),
                params: vec![t("streaming"), t("host-a"), t("m1"), t("streaming")],
            }
        );
        assert_eq!(sql.probe_host().as_deref(), Some(r#"SELECT "owner" AS host FROM "msg" WHERE "uid" = $1"#));
        let [insert, cas] = sql.append("m1", 0, 3, "abc");
        assert_eq!(
            insert.sql,
            r#"INSERT INTO "msg_chunks" ("cid", "message_uid", "end_at", "slice") SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM "msg" WHERE "uid" = $5 AND "len" = $6) ON CONFLICT DO NOTHING"#
        );
        assert_eq!(insert.params, vec![t("m1:3"), t("m1"), SqlValue::Int(3), t("abc"), t("m1"), SqlValue::Int(0)]);
        assert_eq!(cas.sql, r#"UPDATE "msg" SET "len" = $1 WHERE "uid" = $2 AND "len" = $3"#);
        assert_eq!(cas.params, vec![SqlValue::Int(3), t("m1"), SqlValue::Int(0)]);

        let [update, delete] = sql.compact("m1", "abc", 3, StreamStatus::Error, Some("boom"));
        assert_eq!(
            update.sql,
            r#"UPDATE "msg" SET "content" = $1, "len" = $2, "state" = $3, "err" = $4 WHERE "uid" = $5"#
        );
        assert_eq!(update.params, vec![t("abc"), SqlValue::Int(3), t("error"), t("boom"), t("m1")]);
        assert_eq!(delete.sql, r#"DELETE FROM "msg_chunks" WHERE "message_uid" = $1"#);
        assert_eq!(delete.params, vec![t("m1")]);
        // No error: the mapped column is cleared with NULL, not left as it was.
        let [update, _] = sql.compact("m1", "", 0, StreamStatus::Cancelled, None);
        assert_eq!(update.params, vec![t(""), SqlValue::Int(0), t("cancelled"), SqlValue::Null, t("m1")]);

        assert_eq!(sql.probe_state(), r#"SELECT "len" AS seq, "stop" AS cancel FROM "msg" WHERE "uid" = $1"#);
        assert_eq!(
            sql.sweep_interrupted("host-a"),
            Some(Statement {
                sql: r#"UPDATE "msg" SET "state" = $1 WHERE "owner" = $2 AND "state" = $3"#.into(),
                params: vec![t("interrupted"), t("host-a"), t("streaming")],
            })
        );
    }

    #[test]
    fn optional_columns_are_independent() {
        // Only `error` mapped: compaction numbers the key after it; nothing else changes.
        let mut tb = tables();
        tb.columns.error = Some("error".into());
        let sql = MappedSql::new(&tb, Dialect::Sqlite).unwrap();
        let [update, _] = sql.compact("s", "x", 1, StreamStatus::Interrupted, None);
        assert_eq!(
            update.sql,
            r#"UPDATE "messages" SET "body" = ?1, "seq" = ?2, "status" = ?3, "error" = ?4 WHERE "id" = ?5"#
        );
        assert_eq!(update.params, vec![t("x"), SqlValue::Int(1), t("interrupted"), SqlValue::Null, t("s")]);
        assert_eq!(sql.probe_state(), r#"SELECT "seq" AS seq FROM "messages" WHERE "id" = ?1"#);
        assert!(sql.probe_host().is_none());

        // Only `cancel` mapped.
        let mut tb = tables();
        tb.columns.cancel = Some("cancel".into());
        let sql = MappedSql::new(&tb, Dialect::Sqlite).unwrap();
        assert_eq!(sql.probe_state(), r#"SELECT "seq" AS seq, "cancel" AS cancel FROM "messages" WHERE "id" = ?1"#);
        let [update, _] = sql.compact("s", "x", 1, StreamStatus::Complete, Some("e"));
        assert_eq!(update.params.len(), 4);

        // Only `host` mapped, SQLite placeholders.
        let mut tb = tables();
        tb.columns.host = Some("host".into());
        let sql = MappedSql::new(&tb, Dialect::Sqlite).unwrap();
        assert_eq!(
            sql.mark_streaming("s", "tok").sql,
            r#"UPDATE "messages" SET "status" = ?1, "host" = ?2 WHERE "id" = ?3 AND ("status" IS NULL OR "status" <> ?4)"#
        );
        assert_eq!(
            sql.sweep_interrupted("tok").unwrap().sql,
            r#"UPDATE "messages" SET "status" = ?1 WHERE "host" = ?2 AND "status" = ?3"#
        );
    }

    #[test]
    fn placeholders_match_parameter_counts() {
        for d in [Dialect::Sqlite, Dialect::Postgres] {
            for tb in [tables(), full_tables()] {
                let sql = MappedSql::new(&tb, d).unwrap();
                let mut stmts = vec![sql.mark_streaming("s", "h")];
                stmts.extend(sql.append("s", 1, 2, "x"));
                stmts.extend(sql.compact("s", "ab", 2, StreamStatus::Complete, None));
                stmts.extend(sql.sweep_interrupted("h"));
                for st in stmts {
                    for i in 1..=st.params.len() {
                        assert!(st.sql.contains(&d.placeholder(i)), "{} lacks {}", st.sql, d.placeholder(i));
                    }
                    assert!(!st.sql.contains(&d.placeholder(st.params.len() + 1)), "{}", st.sql);
                }
            }
        }
    }

    #[test]
    fn host_lease_needs_a_host_column_and_checks_names() {
        let err = HostLeaseSql::new(&tables(), DEFAULT_HOST_LEASE_TABLE, Dialect::Sqlite).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.message().contains("host column"), "{}", err.message());
        let mut tb = tables();
        tb.columns.host = Some("host".into());
        assert_eq!(
            HostLeaseSql::new(&tb, "bad\"lease", Dialect::Postgres).unwrap_err().kind(),
            ErrorKind::InvalidIdentifier
        );
        assert_eq!(HostLeaseSql::new(&tb, "", Dialect::Postgres).unwrap_err().kind(), ErrorKind::InvalidIdentifier);
        tb.columns.host = Some("h\"".into());
        assert_eq!(
            HostLeaseSql::new(&tb, DEFAULT_HOST_LEASE_TABLE, Dialect::Sqlite).unwrap_err().kind(),
            ErrorKind::InvalidIdentifier
        );
    }

    #[test]
    fn host_lease_statements_postgres() {
        let lease = HostLeaseSql::new(&full_tables(), "leases", Dialect::Postgres).unwrap();
        assert_eq!(lease.dialect(), Dialect::Postgres);
        assert_eq!(
            lease.ddl(),
            vec![r#"CREATE TABLE IF NOT EXISTS "leases" ("host" text PRIMARY KEY, "expires_at" bigint NOT NULL)"#]
        );
        let now = "CAST(EXTRACT(EPOCH FROM now()) * 1000 AS bigint)";
        assert_eq!(
            lease.heartbeat("host-a", 15_000),
            Statement {
                sql: format!(
                    r#"INSERT INTO "leases" ("host", "expires_at") VALUES ($1, {now} + $2) ON CONFLICT ("host") DO UPDATE SET "expires_at" = excluded."expires_at""#
                ),
                params: vec![t("host-a"), SqlValue::Int(15_000)],
            }
        );
        assert_eq!(
            lease.release("host-a"),
            Statement {
                sql: r#"UPDATE "leases" SET "expires_at" = 0 WHERE "host" = $1"#.into(),
                params: vec![t("host-a")],
            }
        );
        // The mapped names: state/owner/uid, never the defaults.
        assert_eq!(
            lease.sweep_expired(),
            Statement {
                sql: format!(
                    r#"UPDATE "msg" SET "state" = $1 WHERE "state" = $2 AND "owner" IN (SELECT "host" FROM "leases" WHERE "expires_at" <= {now}) RETURNING "uid""#
                ),
                params: vec![t("interrupted"), t("streaming")],
            }
        );
        assert_eq!(
            lease.prune(86_400_000),
            Statement {
                sql: format!(
                    r#"DELETE FROM "leases" WHERE "expires_at" < {now} - $1 AND NOT EXISTS (SELECT 1 FROM "msg" WHERE "msg"."owner" = "leases"."host" AND "msg"."state" = $2)"#
                ),
                params: vec![SqlValue::Int(86_400_000), t("streaming")],
            }
        );
    }

    #[test]
    fn host_lease_statements_sqlite() {
        let mut tb = tables();
        tb.columns.host = Some("host".into());
        let lease = HostLeaseSql::new(&tb, DEFAULT_HOST_LEASE_TABLE, Dialect::Sqlite).unwrap();
        assert_eq!(
            lease.ddl(),
            vec![
                r#"CREATE TABLE IF NOT EXISTS "twoplane_hosts" ("host" TEXT PRIMARY KEY, "expires_at" INTEGER NOT NULL)"#
            ]
        );
        let now = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";
        assert_eq!(
            lease.heartbeat("h", 1).sql,
            format!(
                r#"INSERT INTO "twoplane_hosts" ("host", "expires_at") VALUES (?1, {now} + ?2) ON CONFLICT ("host") DO UPDATE SET "expires_at" = excluded."expires_at""#
            )
        );
        assert_eq!(
            lease.sweep_expired().sql,
            format!(
                r#"UPDATE "messages" SET "status" = ?1 WHERE "status" = ?2 AND "host" IN (SELECT "host" FROM "twoplane_hosts" WHERE "expires_at" <= {now}) RETURNING "id""#
            )
        );
        // Offsets past i64 saturate like every other integer parameter.
        assert_eq!(lease.heartbeat("h", u64::MAX).params[1], SqlValue::Int(i64::MAX));
        for d in [Dialect::Sqlite, Dialect::Postgres] {
            let lease = HostLeaseSql::new(&tb, DEFAULT_HOST_LEASE_TABLE, d).unwrap();
            for st in [lease.heartbeat("h", 5), lease.release("h"), lease.sweep_expired(), lease.prune(5)] {
                for i in 1..=st.params.len() {
                    assert!(st.sql.contains(&d.placeholder(i)), "{} lacks {}", st.sql, d.placeholder(i));
                }
                assert!(!st.sql.contains(&d.placeholder(st.params.len() + 1)), "{}", st.sql);
            }
        }
    }

    #[test]
    fn huge_offsets_saturate_instead_of_wrapping() {
        let sql = MappedSql::new(&tables(), Dialect::Sqlite).unwrap();
        let [_, cas] = sql.append("s", u64::MAX - 1, u64::MAX, "");
        assert_eq!(cas.params[0], SqlValue::Int(i64::MAX));
        assert_eq!(cas.params[2], SqlValue::Int(i64::MAX));
    }
}
