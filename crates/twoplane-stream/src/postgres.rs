//! Mapped tables on PostgreSQL.
//!
//! Guarantees: every checkpoint and every seal is one transaction built from the core's
//! [`MappedSql`]; an append is confirmed only by reading the row's length back after the
//! commit; a dropped connection is re-established on the next call (the statements are
//! idempotent, so whatever was in flight is simply retried). Integer parameters adapt to the
//! column's width (`smallint`, `integer`, `bigint`), because the message table is the
//! application's and its `seq` column need not be `bigint`. Text with a lone surrogate is
//! refused before it reaches the server (which rejects it as invalid UTF-8).

use async_trait::async_trait;
use bytes::BytesMut;
use tokio_postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use tokio_postgres::Row;
use twoplane_core::sql::{stream_chunk_table_ddl, Dialect, MappedSql, SqlValue, Statement, StreamTables};

use crate::error::PlaneError;
use crate::pg_client::{PgClient, PgSession};
use crate::target::{
    text_is_truthy, utf8_for_table, AppendAck, AppendRequest, CloseRequest, DurableTarget, OpenRequest, TargetCaps,
    TargetMode,
};
use crate::verdict;

/// The PostgreSQL advisory lock (`pg_advisory_xact_lock`) under which twoplane creates tables:
/// hold it in the transaction of your own `CREATE ... IF NOT EXISTS` statements when several
/// instances may start at once. The bytes of "twoplane" as a big-endian integer.
pub const PG_SCHEMA_LOCK_KEY: i64 = 0x7477_6f70_6c61_6e65;

pub struct PostgresTarget {
    sql: MappedSql,
    tables: StreamTables,
    conn: PgClient,
}

fn db_err<E: std::error::Error + Send + Sync + 'static>(context: &str) -> impl FnOnce(E) -> PlaneError + '_ {
    move |e| PlaneError::store(format!("postgres: {context}")).with_source(e)
}

/// A parameter that binds to whichever text or integer type the server inferred.
#[derive(Debug)]
pub(crate) struct PgParam(pub(crate) SqlValue);

impl ToSql for PgParam {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match &self.0 {
            SqlValue::Null => Ok(IsNull::Yes),
            SqlValue::Text(s) => s.as_str().to_sql(ty, out),
            SqlValue::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                _ => i.to_string().as_str().to_sql(ty, out),
            },
        }
    }

    fn accepts(ty: &Type) -> bool {
        <&str as ToSql>::accepts(ty) || matches!(*ty, Type::INT2 | Type::INT4 | Type::INT8)
    }

    to_sql_checked!();
}

pub(crate) fn params(statement: &Statement) -> Vec<PgParam> {
    statement.params.iter().cloned().map(PgParam).collect()
}

pub(crate) fn as_dyn(params: &[PgParam]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

/// An integer cell of any width.
pub(crate) fn int_cell(row: &Row, idx: usize) -> Result<Option<i64>, tokio_postgres::Error> {
    match *row.columns()[idx].type_() {
        Type::INT4 => Ok(row.try_get::<_, Option<i32>>(idx)?.map(i64::from)),
        Type::INT2 => Ok(row.try_get::<_, Option<i16>>(idx)?.map(i64::from)),
        _ => row.try_get::<_, Option<i64>>(idx),
    }
}

/// JavaScript-style truthiness of the cancel cell.
fn truthy_cell(row: &Row, idx: usize) -> Result<bool, tokio_postgres::Error> {
    match *row.columns()[idx].type_() {
        Type::BOOL => Ok(row.try_get::<_, Option<bool>>(idx)?.unwrap_or(false)),
        Type::INT2 | Type::INT4 | Type::INT8 => Ok(int_cell(row, idx)?.is_some_and(|v| v != 0)),
        _ => Ok(row.try_get::<_, Option<String>>(idx)?.is_some_and(|s| text_is_truthy(&s))),
    }
}

/// The statements of one call, on the connection it holds.
struct PgConn<'a>(&'a mut PgSession);

impl PgConn<'_> {
    async fn transact(&mut self, statements: &[Statement], context: &str) -> Result<(), PlaneError> {
        let mut prepared = Vec::with_capacity(statements.len());
        for s in statements {
            prepared.push(self.0.prepare_cached(&s.sql).await.map_err(db_err("preparing a statement"))?);
        }
        let tx = self.0.client_mut().transaction().await.map_err(db_err(context))?;
        for (s, p) in statements.iter().zip(&prepared) {
            let bound = params(s);
            tx.execute(p, &as_dyn(&bound)).await.map_err(db_err(context))?;
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
        let bound = params(first);
        if tx.execute(&p1, &as_dyn(&bound)).await.map_err(db_err(context))? != 1 {
            tx.rollback().await.map_err(db_err(context))?;
            return Ok(false);
        }
        let bound = params(second);
        tx.execute(&p2, &as_dyn(&bound)).await.map_err(db_err(context))?;
        tx.commit().await.map_err(db_err(context))?;
        Ok(true)
    }

    async fn query_opt(&mut self, sql: &str, id: &str, context: &str) -> Result<Option<Row>, PlaneError> {
        let statement = self.0.prepare_cached(sql).await.map_err(db_err("preparing a statement"))?;
        let bound = [PgParam(SqlValue::Text(id.to_owned()))];
        self.0.client().query_opt(&statement, &as_dyn(&bound)).await.map_err(db_err(context))
    }

    /// The read-back (column order: seq, cancel when mapped, status, host when mapped): the
    /// acknowledgement, and the row's claim as `(status, host)`; `None` when there is no row.
    async fn read_back(
        &mut self,
        sql: &MappedSql,
        stream_id: &str,
    ) -> Result<(AppendAck, Option<(Option<i64>, Option<String>, Option<String>)>), PlaneError> {
        let row = self.query_opt(&sql.probe_state(), stream_id, "reading the checkpoint back").await?;
        let Some(r) = row else {
            return Ok((
                AppendAck { durable_seq: verdict::durable_len(stream_id, None)?, cancel_requested: false },
                None,
            ));
        };
        let seq = int_cell(&r, 0).map_err(db_err("reading the length column"))?;
        let cancel =
            if sql.has_cancel() { truthy_cell(&r, 1).map_err(db_err("reading the cancel column"))? } else { false };
        let status_at = if sql.has_cancel() { 2 } else { 1 };
        let status = r.try_get::<_, Option<String>>(status_at).map_err(db_err("reading the status column"))?;
        let host = if sql.has_host() {
            r.try_get::<_, Option<String>>(status_at + 1).map_err(db_err("reading the host column"))?
        } else {
            None
        };
        let ack = AppendAck { durable_seq: verdict::durable_len(stream_id, Some(seq))?, cancel_requested: cancel };
        Ok((ack, Some((seq, status, host))))
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
        let target = PostgresTarget { sql, tables: tables.clone(), conn };
        drop(target.conn.lock().await.map_err(db_err("connecting"))?);
        Ok(target)
    }

    /// Create the chunk table and its index if they do not exist (the core's DDL). Safe when
    /// several instances start at once: the statements run in one transaction under the
    /// advisory lock [`PG_SCHEMA_LOCK_KEY`].
    pub async fn create_chunk_table(&self) -> Result<(), PlaneError> {
        let ddl = stream_chunk_table_ddl(&self.tables, Dialect::Postgres)?;
        let mut session = self.conn.lock().await.map_err(db_err("connecting"))?;
        // PostgreSQL's CREATE ... IF NOT EXISTS checks and creates in two steps: two instances
        // starting together can both find nothing, and the slower one then fails on the
        // catalog's unique index. The transaction-scoped lock makes the second creator wait
        // for the first to commit, after which it finds the table and does nothing.
        let tx = session.client_mut().transaction().await.map_err(db_err("creating the chunk table"))?;
        tx.batch_execute(&format!("SELECT pg_advisory_xact_lock({PG_SCHEMA_LOCK_KEY})"))
            .await
            .map_err(db_err("taking the schema lock"))?;
        for statement in &ddl {
            tx.batch_execute(statement).await.map_err(db_err("creating the chunk table"))?;
        }
        tx.commit().await.map_err(db_err("creating the chunk table"))
    }
}

#[async_trait]
impl DurableTarget for PostgresTarget {
    fn caps(&self) -> TargetCaps {
        TargetCaps { mode: TargetMode::Tables, has_host: self.sql.has_host(), has_cancel: self.sql.has_cancel() }
    }

    async fn check_openable(&self, stream_id: &str) -> Result<(), PlaneError> {
        let mut session = self.conn.lock().await.map_err(db_err("connecting"))?;
        let mut conn = PgConn(&mut session);
        let row = conn.query_opt(&self.sql.probe_open(), stream_id, "probing the message row").await?;
        let row = match row {
            None => None,
            Some(r) => Some((
                int_cell(&r, 0).map_err(db_err("reading the length column"))?,
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
        let text = utf8_for_table(request.text, "a checkpoint slice")?;
        let statements = self.sql.append(request.stream_id, request.host_token, request.from, request.seq, &text);
        let mut session = self.conn.lock().await.map_err(db_err("connecting"))?;
        let mut conn = PgConn(&mut session);
        conn.transact(&statements, "committing a checkpoint").await?;
        let (ack, row) = conn.read_back(&self.sql, request.stream_id).await?;
        if let Some((_, status, host)) = &row {
            let claim =
                verdict::Claim { status: status.as_deref(), host: host.as_deref(), has_host: self.sql.has_host() };
            verdict::still_claimed(request.stream_id, claim, request.host_token)?;
        }
        Ok(ack)
    }

    async fn close(&self, request: CloseRequest<'_>) -> Result<(), PlaneError> {
        if request.body_from != 0 {
            return Err(PlaneError::store("table mode compacts the whole body; this one was trimmed"));
        }
        let body = utf8_for_table(request.body, "the response body")?;
        let len = request.body.len() as u64;
        let [update, delete] =
            self.sql.compact(request.stream_id, request.host_token, &body, len, request.status, request.error);
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
}
