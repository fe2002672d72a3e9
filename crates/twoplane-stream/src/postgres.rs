//! Mapped tables on PostgreSQL.
//!
//! Guarantees: every seal is one transaction built from the core's [`MappedSql`]; the
//! checkpoints of every stream are group-committed (`postgres_group.rs`: one pipelined
//! transaction for all the rounds due together); an append is confirmed by the store's own
//! word, the row its compare-and-swap changed (`RETURNING`), or a read-back where it changed
//! none; a dropped connection is re-established on the next call (the statements are
//! idempotent, so whatever was in flight is simply retried). The statements run through the
//! crate's executor (`exec.rs`: prepared once per connection, parameters bound by reference and
//! adapted to the column's width, since the message table is the application's and its `seq`
//! column need not be `bigint`). Text with a lone surrogate is
//! refused before it reaches the server (which rejects it as invalid UTF-8).

use std::sync::Arc;

use async_trait::async_trait;
use tokio_postgres::Row;
use twoplane_core::sql::{stream_schema, Dialect, MappedSql, SqlValue, Statement, StreamTables};

use crate::error::PlaneError;
use crate::exec::{pg_int, pg_read_snapshot, prepare_all, PgExec};
use crate::pg_client::{PgClient, PgSession};
use crate::pg_state::{db_err, state_of, RowClaim};
use crate::postgres_group::GroupCommit;
use crate::schema::migrate_postgres;
use crate::target::{
    AppendAck, AppendRequest, CloseRequest, DurableTarget, OpenRequest, ReopenRequest, StoredMessage, TargetCaps,
};
use crate::verdict;

pub struct PostgresTarget {
    sql: Arc<MappedSql>,
    tables: StreamTables,
    conn: PgClient,
    /// The checkpoints of every stream, group-committed (`postgres_group.rs`).
    group: GroupCommit,
}

/// The statements of one call, on the connection it holds.
struct PgConn<'a>(&'a mut PgSession);

impl PgConn<'_> {
    async fn transact(&mut self, statements: &[Statement], context: &str) -> Result<(), PlaneError> {
        let prepared = prepare_all(self.0, statements, "preparing a statement").await?;
        let tx = self.0.client_mut().transaction().await.map_err(db_err(context))?;
        for (s, p) in statements.iter().zip(&prepared) {
            tx.run(p, &s.params).await.map_err(db_err(context))?;
        }
        tx.commit().await.map_err(db_err(context))
    }

    /// Run `first`, then `second` only if `first` changed exactly one row, in one transaction
    /// (rolled back when it did not). Returns whether it committed.
    async fn transact_if_first_applies(
        &mut self,
        first: &Statement,
        second: &Statement,
        context: &str,
    ) -> Result<bool, PlaneError> {
        let p1 = self.0.prepare_cached(&first.sql).await.map_err(db_err("preparing a statement"))?;
        let p2 = self.0.prepare_cached(&second.sql).await.map_err(db_err("preparing a statement"))?;
        let tx = self.0.client_mut().transaction().await.map_err(db_err(context))?;
        if tx.run(&p1, &first.params).await.map_err(db_err(context))? != 1 {
            tx.rollback().await.map_err(db_err(context))?;
            return Ok(false);
        }
        tx.run(&p2, &second.params).await.map_err(db_err(context))?;
        tx.commit().await.map_err(db_err(context))?;
        Ok(true)
    }

    async fn query_opt(&mut self, sql: &str, id: &str, context: &str) -> Result<Option<Row>, PlaneError> {
        let statement = self.0.prepare_cached(sql).await.map_err(db_err("preparing a statement"))?;
        self.0.client().query_opt(&statement, &[&id]).await.map_err(db_err(context))
    }

    /// The read-back (see [`state_of`]).
    async fn read_back(
        &mut self,
        sql: &MappedSql,
        stream_id: &str,
    ) -> Result<(AppendAck, Option<RowClaim>), PlaneError> {
        let row = self.query_opt(&sql.probe_state(), stream_id, "reading the checkpoint back").await?;
        state_of(sql, stream_id, row.as_ref())
    }

    async fn read_state(&mut self, sql: &MappedSql, stream_id: &str) -> Result<AppendAck, PlaneError> {
        self.read_back(sql, stream_id).await.map(|(ack, _)| ack)
    }
}

impl PostgresTarget {
    /// Connect through a pool of [`DEFAULT_PG_POOL_SIZE`](crate::DEFAULT_PG_POOL_SIZE)
    /// connections (secured as the URL's `sslmode` says) and build the statements for `tables`.
    pub async fn connect(url: &str, tables: &StreamTables) -> Result<PostgresTarget, PlaneError> {
        PostgresTarget::with_client(PgClient::new(url, "checkpoints"), tables).await
    }

    /// [`connect`](PostgresTarget::connect) through a pool the caller built (its size and TLS).
    /// Connects once, so that a wrong URL fails here.
    pub async fn with_client(conn: PgClient, tables: &StreamTables) -> Result<PostgresTarget, PlaneError> {
        let sql = MappedSql::new(tables, Dialect::Postgres)?;
        let target = PostgresTarget { sql: Arc::new(sql), tables: tables.clone(), conn, group: GroupCommit::new() };
        drop(target.conn.lock().await.map_err(db_err("connecting"))?);
        Ok(target)
    }

    /// Create the chunk table and its index if they do not exist, and give both tables the parts
    /// columns the mapping names when they lack them (the core's [`stream_schema`], docs/contract.md
    /// §8). Safe when several instances start at once: it runs in one transaction under the
    /// advisory lock [`PG_SCHEMA_LOCK_KEY`](crate::PG_SCHEMA_LOCK_KEY) ([`crate::schema`]).
    pub async fn create_chunk_table(&self) -> Result<(), PlaneError> {
        let shapes = stream_schema(&self.tables, Dialect::Postgres)?;
        let mut session = self.conn.lock().await.map_err(db_err("connecting"))?;
        migrate_postgres(session.client_mut(), &shapes).await
    }
}

#[async_trait]
impl DurableTarget for PostgresTarget {
    fn caps(&self) -> TargetCaps {
        verdict::caps(&self.sql)
    }

    async fn check_openable(&self, stream_id: &str) -> Result<(), PlaneError> {
        let mut session = self.conn.lock().await.map_err(db_err("connecting"))?;
        let mut conn = PgConn(&mut session);
        let row = conn.query_opt(&self.sql.probe_open(), stream_id, "probing the message row").await?;
        let row = match row {
            None => None,
            Some(r) => Some((
                pg_int(&r, 0).map_err(db_err("reading the length column"))?,
                r.try_get::<_, Option<String>>(1).map_err(db_err("reading the status column"))?,
            )),
        };
        verdict::openable(stream_id, row)
    }

    async fn open(&self, request: OpenRequest<'_>) -> Result<(), PlaneError> {
        let mut session = self.conn.lock().await.map_err(db_err("connecting"))?;
        let mut conn = PgConn(&mut session);
        let mark = self.sql.mark_streaming(request.stream_id, request.host_token);
        conn.transact(std::slice::from_ref(&mark), "marking the row streaming").await?;
        if let Some(probe) = self.sql.probe_host() {
            let row = conn.query_opt(&probe, request.stream_id, "reading the host back").await?;
            let host = match row {
                None => None,
                Some(r) => r.try_get::<_, Option<String>>(0).map_err(db_err("reading the host column"))?,
            };
            verdict::open_winner(request.stream_id, host, request.host_token)?;
        }
        Ok(())
    }

    async fn append(&self, request: AppendRequest<'_>) -> Result<AppendAck, PlaneError> {
        let statements = self.sql.returning(verdict::append_statements(&self.sql, &request)?);
        self.group.append(&self.conn, &self.sql, request.stream_id, request.host_token, statements).await
    }

    async fn close(&self, request: CloseRequest<'_>) -> Result<(), PlaneError> {
        let ([update, delete], len) = verdict::seal_statements(&self.sql, &request)?;
        let mut session = self.conn.lock().await.map_err(db_err("connecting"))?;
        let mut conn = PgConn(&mut session);
        // The fenced update first (it takes the row's lock); the chunks go only with it, so a
        // fenced seal leaves the row and its chunks exactly as the sweep left them.
        if conn.transact_if_first_applies(&update, &delete, "compacting the stream").await? {
            return Ok(());
        }
        let (_, row) = conn.read_back(&self.sql, request.stream_id).await?;
        let chunks_left =
            conn.query_opt(&self.sql.probe_chunk(), request.stream_id, "reading the chunk rows back").await?.is_some();
        let has_host = self.sql.has_host();
        let row = row.as_ref().map(|(seq, status, host)| {
            (*seq, verdict::Claim { status: status.as_deref(), host: host.as_deref(), has_host })
        });
        verdict::seal_replayed(request.stream_id, row, chunks_left, request.host_token, request.status.as_str(), len)
    }

    async fn probe_durable_seq(&self, stream_id: &str) -> Result<Option<u64>, PlaneError> {
        let mut session = self.conn.lock().await.map_err(db_err("connecting"))?;
        let mut conn = PgConn(&mut session);
        conn.read_state(&self.sql, stream_id).await.map(|ack| Some(ack.durable_seq))
    }

    async fn load(&self, stream_id: &str) -> Result<Option<StoredMessage>, PlaneError> {
        let mut session = self.conn.lock().await.map_err(db_err("connecting"))?;
        let has_parts = self.sql.has_parts();
        let by_id = |sql: String| Statement { sql, params: vec![SqlValue::Text(stream_id.to_owned())] };
        // The row and its chunk rows from one snapshot: read apart, a claim committed between the
        // two (another host going on with the stream expands the row into a chunk row) would
        // give a body and a chunk row holding the same text.
        let statements = [by_id(self.sql.load_row()), by_id(self.sql.load_chunks())];
        let mut read = pg_read_snapshot(&mut session, &statements, "reading the message back").await?.into_iter();
        let (mut rows, chunk_rows) = (read.next().unwrap_or_default(), read.next().unwrap_or_default());
        if rows.len() > 1 {
            return Err(PlaneError::store("postgres: reading the message back: more than one row has this id"));
        }
        let Some(r) = rows.pop() else {
            return Ok(None);
        };
        let seq = pg_int(&r, 0).map_err(db_err("reading the length column"))?;
        let seq = verdict::durable_len(stream_id, Some(seq))?;
        let status = r.try_get::<_, Option<String>>(1).map_err(db_err("reading the status column"))?;
        let body = r.try_get::<_, Option<String>>(2).map_err(db_err("reading the body column"))?;
        let document = if has_parts {
            r.try_get::<_, Option<String>>(3).map_err(db_err("reading the parts column"))?
        } else {
            None
        };
        let mut chunks = Vec::new();
        for r in chunk_rows {
            let seq = pg_int(&r, 0).map_err(db_err("reading a chunk row's seq"))?.unwrap_or(-1);
            let text = r.try_get::<_, Option<String>>(1).map_err(db_err("reading a chunk row's text"))?;
            let parts = if has_parts {
                r.try_get::<_, Option<String>>(2).map_err(db_err("reading a chunk row's parts"))?
            } else {
                None
            };
            chunks.push(verdict::chunk_row(stream_id, seq, text, parts)?);
        }
        Ok(Some(StoredMessage { seq, status, body, document, chunks }))
    }

    async fn reopen(&self, request: ReopenRequest<'_>) -> Result<(), PlaneError> {
        let statements = verdict::reopen_statements(&self.sql, &request)?;
        let mut session = self.conn.lock().await.map_err(db_err("connecting"))?;
        let mut conn = PgConn(&mut session);
        conn.transact(&statements, "claiming the row again").await?;
        let (_, row) = conn.read_back(&self.sql, request.stream_id).await?;
        verdict::reopened(request.stream_id, request.at, row, request.host_token, self.sql.has_host())
    }
}
