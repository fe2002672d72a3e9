//! Mapped tables on SQLite: the embedded default.
//!
//! Guarantees: the database runs in WAL mode (readers never block the checkpoint writer); every
//! checkpoint, open, claim and seal is one atomic write built from the core's [`MappedSql`],
//! group-committed with every other stream's ([`SqliteShared::write`]: one transaction and one
//! sync for all the writes due together, each answered only once it committed); an append is
//! confirmed by the store's own word, the row its compare-and-swap changed (`RETURNING`), or a
//! read-back where it changed none; probes and loads run on the read connection; blocking
//! calls run on tokio's blocking pool, never on a runtime worker. Text with a lone surrogate is
//! refused before it reaches SQLite (which would store it mangled).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};
use twoplane_core::sql::{stream_schema, Dialect, MappedSql, Statement, StreamTables};

use crate::error::PlaneError;
use crate::exec::{sqlite_execute, sqlite_params, Cell};
use crate::schema::migrate_sqlite;
use crate::sqlite_shared::SqliteShared;
use crate::target::{
    AppendAck, AppendRequest, CloseRequest, DurableTarget, OpenRequest, ReopenRequest, StoredMessage, TargetCaps,
};
use crate::verdict;

pub struct SqliteTarget {
    conn: SqliteShared,
    sql: Arc<MappedSql>,
    tables: StreamTables,
}

fn db_err(context: &str) -> impl FnOnce(rusqlite::Error) -> PlaneError + '_ {
    move |e| PlaneError::store(format!("sqlite: {context}")).with_source(e)
}

impl SqliteTarget {
    /// Open (or create) the database file in WAL mode.
    pub fn open(path: impl AsRef<Path>, tables: &StreamTables) -> Result<SqliteTarget, PlaneError> {
        let conn = Connection::open(path).map_err(db_err("opening the database"))?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(db_err("enabling WAL"))?;
        if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
            return Err(PlaneError::store(format!("sqlite: the database refused WAL mode (it is in {mode} mode)")));
        }
        SqliteTarget::from_connection(conn, tables)
    }

    /// Use a connection the application configured itself.
    pub fn from_connection(conn: Connection, tables: &StreamTables) -> Result<SqliteTarget, PlaneError> {
        conn.busy_timeout(Duration::from_secs(5)).map_err(db_err("setting the busy timeout"))?;
        let sql = MappedSql::new(tables, Dialect::Sqlite)?;
        Ok(SqliteTarget { conn: SqliteShared::new(conn), sql: Arc::new(sql), tables: tables.clone() })
    }

    /// Create the chunk table and its index if they do not exist, and give both tables the parts
    /// columns the mapping names when they lack them (the core's [`stream_schema`], docs/contract.md
    /// §8), in one write-locked transaction ([`crate::schema`]), so instances sharing the file do
    /// not race.
    pub async fn create_chunk_table(&self) -> Result<(), PlaneError> {
        let shapes = stream_schema(&self.tables, Dialect::Sqlite)?;
        self.with_connection(move |conn| migrate_sqlite(conn, &shapes)).await
    }

    /// Run `f` with the write connection to itself, between group commits, on the blocking pool.
    pub async fn with_connection<R, F>(&self, f: F) -> Result<R, PlaneError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, PlaneError> + Send + 'static,
    {
        self.conn.run(f).await
    }

    /// The database, shared: statements of the application's own run on it through the crate's
    /// executor, their writes group-committed with the plane's.
    pub fn shared(&self) -> SqliteShared {
        self.conn.clone()
    }

    fn sql(&self) -> Arc<MappedSql> {
        self.sql.clone()
    }
}

fn run(conn: &Connection, statement: &Statement, context: &str) -> Result<usize, PlaneError> {
    sqlite_execute(conn, statement).map_err(db_err(context))
}

/// Run statements in order (whatever each one changed); atomic as a group-commit write.
fn run_all(conn: &Connection, statements: &[Statement], context: &str) -> Result<(), PlaneError> {
    statements.iter().try_for_each(|statement| run(conn, statement, context).map(drop))
}

/// The read-back: the row's length and cancel flag (when mapped), and its status and host (when
/// mapped), the writer's claim. `None` when there is no row.
struct ReadBack {
    seq: Option<i64>,
    cancel: bool,
    status: Option<String>,
    host: Option<String>,
}

impl ReadBack {
    fn claim(&self, has_host: bool) -> verdict::Claim<'_> {
        verdict::Claim { status: self.status.as_deref(), host: self.host.as_deref(), has_host }
    }
}

fn read_back(conn: &Connection, sql: &MappedSql, stream_id: &str) -> Result<Option<ReadBack>, PlaneError> {
    conn.query_row(&sql.probe_state(), [stream_id], |r| state_row(sql, r))
        .optional()
        .map_err(db_err("reading the checkpoint back"))
}

/// A row of the `probe_state` columns: seq, cancel (when mapped), status, host (when mapped).
fn state_row(sql: &MappedSql, r: &rusqlite::Row<'_>) -> rusqlite::Result<ReadBack> {
    let (has_cancel, has_host) = (sql.has_cancel(), sql.has_host());
    let status_at = if has_cancel { 2 } else { 1 };
    Ok(ReadBack {
        seq: r.get(0)?,
        cancel: if has_cancel { Cell::from(r.get::<_, Value>(1)?).truthy() } else { false },
        status: r.get(status_at)?,
        host: if has_host { r.get(status_at + 1)? } else { None },
    })
}

fn read_state(conn: &Connection, sql: &MappedSql, stream_id: &str) -> Result<AppendAck, PlaneError> {
    let row = read_back(conn, sql, stream_id)?;
    let durable_seq = verdict::durable_len(stream_id, row.as_ref().map(|r| r.seq))?;
    Ok(AppendAck { durable_seq, cancel_requested: row.is_some_and(|r| r.cancel) })
}

#[async_trait]
impl DurableTarget for SqliteTarget {
    fn caps(&self) -> TargetCaps {
        verdict::caps(&self.sql)
    }

    async fn check_openable(&self, stream_id: &str) -> Result<(), PlaneError> {
        let (sql, id) = (self.sql(), stream_id.to_owned());
        self.conn
            .read(move |conn| {
                let row = conn
                    .query_row(&sql.probe_open(), [&id], |r| {
                        Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<String>>(1)?))
                    })
                    .optional()
                    .map_err(db_err("probing the message row"))?;
                verdict::openable(&id, row)
            })
            .await
    }

    async fn open(&self, request: OpenRequest<'_>) -> Result<(), PlaneError> {
        let (sql, id, token) = (self.sql(), request.stream_id.to_owned(), request.host_token.to_owned());
        self.conn
            .write(move |conn| {
                run(conn, &sql.mark_streaming(&id, &token), "marking the row streaming")?;
                if let Some(probe) = sql.probe_host() {
                    let host = conn
                        .query_row(&probe, [&id], |r| r.get::<_, Option<String>>(0))
                        .optional()
                        .map_err(db_err("reading the host back"))?
                        .flatten();
                    verdict::open_winner(&id, host, &token)?;
                }
                Ok(())
            })
            .await
    }

    async fn append(&self, request: AppendRequest<'_>) -> Result<AppendAck, PlaneError> {
        let [cas, insert] = self.sql.returning(verdict::append_statements(&self.sql, &request)?);
        let (sql, id, token) = (self.sql(), request.stream_id.to_owned(), request.host_token.to_owned());
        self.conn
            .write(move |conn| {
                let context = "committing a checkpoint";
                let mut prepared = conn.prepare_cached(&cas.sql).map_err(db_err(context))?;
                let applied = prepared
                    .query_row(sqlite_params(&cas.params), |r| state_row(&sql, r))
                    .optional()
                    .map_err(db_err(context))?;
                drop(prepared);
                run(conn, &insert, context)?;
                // The compare-and-swap applied: its row is the store's word (this writer's claim held,
                // since the fence is in its WHERE). Otherwise only a read-back says where it stands.
                let row = match applied {
                    Some(row) => Some(row),
                    None => read_back(conn, &sql, &id)?,
                };
                let durable_seq = verdict::durable_len(&id, row.as_ref().map(|r| r.seq))?;
                if let Some(r) = &row {
                    verdict::still_claimed(&id, r.claim(sql.has_host()), &token)?;
                }
                Ok(AppendAck { durable_seq, cancel_requested: row.is_some_and(|r| r.cancel) })
            })
            .await
    }

    async fn close(&self, request: CloseRequest<'_>) -> Result<(), PlaneError> {
        let ([update, delete], len) = verdict::seal_statements(&self.sql, &request)?;
        let (id, token, status) = (request.stream_id.to_owned(), request.host_token.to_owned(), request.status);
        let sql = self.sql();
        self.conn
            .write(move |conn| {
                // The fenced update first; the chunks go only with it (a fenced seal leaves the row
                // and its chunks exactly as the sweep left them).
                if run(conn, &update, "compacting the stream")? == 1 {
                    run(conn, &delete, "compacting the stream")?;
                    return Ok(());
                }
                let row = read_back(conn, &sql, &id)?;
                let chunks_left = conn
                    .query_row(&sql.probe_chunk(), [&id], |_| Ok(()))
                    .optional()
                    .map_err(db_err("reading the chunk rows back"))?
                    .is_some();
                let row = row.as_ref().map(|r| (r.seq, r.claim(sql.has_host())));
                verdict::seal_replayed(&id, row, chunks_left, &token, status.as_str(), len)
            })
            .await
    }

    async fn probe_durable_seq(&self, stream_id: &str) -> Result<Option<u64>, PlaneError> {
        let (sql, id) = (self.sql(), stream_id.to_owned());
        self.conn.read(move |conn| read_state(conn, &sql, &id).map(|ack| Some(ack.durable_seq))).await
    }

    async fn load(&self, stream_id: &str) -> Result<Option<StoredMessage>, PlaneError> {
        let (sql, id) = (self.sql(), stream_id.to_owned());
        self.conn
            .read(move |conn| {
                let has_parts = sql.has_parts();
                // The row and its chunk rows from one snapshot (a read transaction), as on PostgreSQL.
                let conn = conn.transaction().map_err(db_err("reading the message back"))?;
                let row = conn
                    .query_row(&sql.load_row(), [&id], |r| {
                        Ok((
                            r.get::<_, Option<i64>>(0)?,
                            r.get::<_, Option<String>>(1)?,
                            r.get::<_, Option<String>>(2)?,
                            if has_parts { r.get::<_, Option<String>>(3)? } else { None },
                        ))
                    })
                    .optional()
                    .map_err(db_err("reading the message back"))?;
                let Some((seq, status, body, document)) = row else { return Ok(None) };
                let seq = verdict::durable_len(&id, Some(seq))?;
                let mut statement = conn.prepare(&sql.load_chunks()).map_err(db_err("reading the chunk rows"))?;
                let rows = statement
                    .query_map([&id], |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, Option<String>>(1)?,
                            if has_parts { r.get::<_, Option<String>>(2)? } else { None },
                        ))
                    })
                    .map_err(db_err("reading the chunk rows"))?;
                let mut chunks = Vec::new();
                for row in rows {
                    let (seq, text, parts) = row.map_err(db_err("reading the chunk rows"))?;
                    chunks.push(verdict::chunk_row(&id, seq, text, parts)?);
                }
                Ok(Some(StoredMessage { seq, status, body, document, chunks }))
            })
            .await
    }

    async fn reopen(&self, request: ReopenRequest<'_>) -> Result<(), PlaneError> {
        let statements = verdict::reopen_statements(&self.sql, &request)?;
        let (sql, id, token, at) =
            (self.sql(), request.stream_id.to_owned(), request.host_token.to_owned(), request.at);
        self.conn
            .write(move |conn| {
                run_all(conn, &statements, "claiming the row again")?;
                let row = read_back(conn, &sql, &id)?.map(|r| (r.seq, r.status, r.host));
                verdict::reopened(&id, at, row, &token, sql.has_host())
            })
            .await
    }
}
