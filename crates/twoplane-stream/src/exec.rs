//! The one way to run a statement of the core's SQL ([`twoplane_core::sql`]) on SQLite or
//! PostgreSQL: how a [`SqlValue`] is bound, how a cell is read, and where a SQLite call runs.
//! The plane's targets, the sweeper and the server all go through it.
//!
//! Two levels:
//! - On a connection the caller holds: [`sqlite_execute`] / [`sqlite_rows`] (inside a
//!   [`SqliteShared`] write, read or run, on a blocking thread) and [`pg_execute`] / [`pg_rows`] (on a
//!   [`PgSession`] or a transaction of one). The targets' checkpoint path uses these, so one
//!   checkpoint stays one blocking call (SQLite) or one session (PostgreSQL).
//! - [`Executor`]: a database of either kind, for code that runs a few statements and does not
//!   care which (the sweeper, the server's own statements). It takes the connection per call.
//!
//! Guarantees:
//! - Parameters are bound by reference ([`Bind`]): binding copies no text and allocates nothing.
//! - Statements are prepared once per connection and reused (SQLite's statement cache,
//!   [`PgSession::prepare_cached`]): no extra round trip per statement.
//! - An integer parameter adapts to the column PostgreSQL inferred for it (`smallint`,
//!   `integer`, `bigint`, `boolean` as 0 or 1), because the message table is the application's
//!   and its columns need not be `bigint`; a value that does not fit is an error, never wrapped.
//! - A SQLite call never runs on a runtime worker (`sqlite_shared.rs`); on SQLite, the
//!   executor's writes join the group commit and its queries run on the read connection.
//! - A multi-statement call ([`Executor::transact`], [`Executor::read_snapshot`]) is one
//!   transaction; a snapshot read sees one state of the database on either backend (on
//!   PostgreSQL that takes `REPEATABLE READ`, since each statement of a `READ COMMITTED`
//!   transaction sees its own snapshot).

use std::future::Future;

use bytes::BytesMut;
use futures::TryStreamExt;
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::Connection;
use tokio_postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use tokio_postgres::{Client, IsolationLevel, Row, RowStream, Transaction};
use twoplane_core::sql::{Dialect, SqlValue, Statement};

use crate::error::PlaneError;
use crate::pg_client::{PgClient, PgSession};
use crate::sqlite_shared::SqliteShared;
use crate::target::text_is_truthy;

/// A parameter bound by reference, for either driver.
#[derive(Debug)]
pub struct Bind<'a>(pub &'a SqlValue);

impl rusqlite::ToSql for Bind<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            SqlValue::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            SqlValue::Int(i) => ToSqlOutput::Owned(Value::Integer(*i)),
            SqlValue::Null => ToSqlOutput::Owned(Value::Null),
        })
    }
}

impl ToSql for Bind<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            SqlValue::Null => Ok(IsNull::Yes),
            SqlValue::Text(s) => s.as_str().to_sql(ty, out),
            SqlValue::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::BOOL => match *i {
                    0 | 1 => (*i == 1).to_sql(ty, out),
                    _ => Err(format!("{i} is not a boolean (0 or 1)").into()),
                },
                _ => i.to_string().as_str().to_sql(ty, out),
            },
        }
    }

    fn accepts(ty: &Type) -> bool {
        <&str as ToSql>::accepts(ty) || matches!(*ty, Type::INT2 | Type::INT4 | Type::INT8 | Type::BOOL)
    }

    to_sql_checked!();
}

/// `params` for `rusqlite`, by reference.
pub fn sqlite_params(params: &[SqlValue]) -> impl rusqlite::Params + '_ {
    rusqlite::params_from_iter(params.iter().map(Bind))
}

/// One cell of a result, whichever backend read it.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Bool(bool),
    Real(f64),
    Text(String),
    Bytes(Vec<u8>),
}

impl Cell {
    /// JavaScript-style truthiness (how a mapped `cancel` column is read, whatever its type).
    pub fn truthy(&self) -> bool {
        match self {
            Cell::Null => false,
            Cell::Int(i) => *i != 0,
            Cell::Bool(b) => *b,
            Cell::Real(f) => *f != 0.0 && !f.is_nan(),
            Cell::Text(s) => text_is_truthy(s),
            Cell::Bytes(_) => true,
        }
    }

    /// The cell as a row key, whatever the key column's type (text or integer); NULL is "".
    pub fn into_key(self) -> String {
        match self {
            Cell::Null => String::new(),
            Cell::Int(i) => i.to_string(),
            Cell::Bool(b) => b.to_string(),
            Cell::Real(f) => f.to_string(),
            Cell::Text(s) => s,
            Cell::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
        }
    }

    /// A text cell (`None` for NULL); any other type is an error naming `column`.
    pub fn into_text(self, column: &str) -> Result<Option<String>, PlaneError> {
        match self {
            Cell::Null => Ok(None),
            Cell::Text(s) => Ok(Some(s)),
            other => Err(PlaneError::store(format!("the column {column} holds {other:?}, not text"))),
        }
    }

    /// An integer cell (`None` for NULL); any other type is an error naming `column`.
    pub fn into_int(self, column: &str) -> Result<Option<i64>, PlaneError> {
        match self {
            Cell::Null => Ok(None),
            Cell::Int(i) => Ok(Some(i)),
            other => Err(PlaneError::store(format!("the column {column} holds {other:?}, not an integer"))),
        }
    }
}

impl From<Value> for Cell {
    fn from(v: Value) -> Cell {
        match v {
            Value::Null => Cell::Null,
            Value::Integer(i) => Cell::Int(i),
            Value::Real(f) => Cell::Real(f),
            Value::Text(s) => Cell::Text(s),
            Value::Blob(b) => Cell::Bytes(b),
        }
    }
}

/// A result's rows, each its cells in column order.
pub type Rows = Vec<Vec<Cell>>;

/// Run `statement` on a SQLite connection; returns how many rows it changed.
pub fn sqlite_execute(conn: &Connection, statement: &Statement) -> rusqlite::Result<usize> {
    conn.prepare_cached(&statement.sql)?.execute(sqlite_params(&statement.params))
}

/// Run the query `statement` on a SQLite connection.
pub fn sqlite_rows(conn: &Connection, statement: &Statement) -> rusqlite::Result<Rows> {
    let mut prepared = conn.prepare_cached(&statement.sql)?;
    let width = prepared.column_count();
    let mut rows = prepared.query(sqlite_params(&statement.params))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut cells = Vec::with_capacity(width);
        for i in 0..width {
            cells.push(Cell::from(row.get::<_, Value>(i)?));
        }
        out.push(cells);
    }
    Ok(out)
}

/// An integer cell of any width (`smallint`, `integer`, `bigint`).
pub fn pg_int(row: &Row, idx: usize) -> Result<Option<i64>, tokio_postgres::Error> {
    match *row.columns()[idx].type_() {
        Type::INT4 => Ok(row.try_get::<_, Option<i32>>(idx)?.map(i64::from)),
        Type::INT2 => Ok(row.try_get::<_, Option<i16>>(idx)?.map(i64::from)),
        _ => row.try_get::<_, Option<i64>>(idx),
    }
}

/// A PostgreSQL cell: integers of any width, booleans, and everything else read as text (an
/// error for a column that is not text-like).
pub fn pg_cell(row: &Row, idx: usize) -> Result<Cell, tokio_postgres::Error> {
    let cell = match *row.columns()[idx].type_() {
        Type::INT2 | Type::INT4 | Type::INT8 => pg_int(row, idx)?.map(Cell::Int),
        Type::BOOL => row.try_get::<_, Option<bool>>(idx)?.map(Cell::Bool),
        _ => row.try_get::<_, Option<String>>(idx)?.map(Cell::Text),
    };
    Ok(cell.unwrap_or(Cell::Null))
}

/// Every cell of `rows`, read with [`pg_cell`].
pub fn pg_cells(rows: &[Row]) -> Result<Rows, tokio_postgres::Error> {
    rows.iter().map(|row| (0..row.len()).map(|i| pg_cell(row, i)).collect()).collect()
}

/// Where a prepared PostgreSQL statement runs: a session's client, or a transaction on it. The
/// parameters are bound with [`Bind`] (no copy, no allocation), and nothing is boxed.
pub trait PgExec: Sync {
    /// Run `statement`; returns how many rows it changed.
    fn run<'a>(
        &'a self,
        statement: &'a tokio_postgres::Statement,
        params: &'a [SqlValue],
    ) -> impl Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a;

    /// Run the query `statement`.
    fn rows<'a>(
        &'a self,
        statement: &'a tokio_postgres::Statement,
        params: &'a [SqlValue],
    ) -> impl Future<Output = Result<Vec<Row>, tokio_postgres::Error>> + Send + 'a;
}

// One body for both: tokio-postgres's `GenericClient` would say it once too, but boxes every
// call's future, and this is the checkpoint path.
macro_rules! pg_exec_for {
    ($($client:ty),*) => {$(
        impl PgExec for $client {
            fn run<'a>(
                &'a self,
                statement: &'a tokio_postgres::Statement,
                params: &'a [SqlValue],
            ) -> impl Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a {
                self.execute_raw(statement, params.iter().map(Bind))
            }

            fn rows<'a>(
                &'a self,
                statement: &'a tokio_postgres::Statement,
                params: &'a [SqlValue],
            ) -> impl Future<Output = Result<Vec<Row>, tokio_postgres::Error>> + Send + 'a {
                collect(self.query_raw(statement, params.iter().map(Bind)))
            }
        }
    )*};
}

pg_exec_for!(Client, Transaction<'_>);

async fn collect(
    rows: impl Future<Output = Result<RowStream, tokio_postgres::Error>>,
) -> Result<Vec<Row>, tokio_postgres::Error> {
    rows.await?.try_collect().await
}

/// A database of either kind, for statements that run the same on both (see the module header).
/// Cheap to clone.
#[derive(Clone)]
pub enum Executor {
    Sqlite(SqliteShared),
    /// A pool; each call takes one of its connections. Boxed: a pool's handle is large.
    Postgres(Box<PgClient>),
}

/// `each` over `statements`, stopping at the first failure. Atomic where it runs: a write of the
/// group commit (its own savepoint) or a read transaction.
fn sqlite_each<T>(
    conn: &Connection,
    statements: &[Statement],
    context: &str,
    each: impl Fn(&Connection, &Statement) -> rusqlite::Result<T>,
) -> Result<Vec<T>, PlaneError> {
    statements.iter().map(|statement| each(conn, statement).map_err(sqlite_err(context))).collect()
}

fn sqlite_err(context: &str) -> impl FnOnce(rusqlite::Error) -> PlaneError + '_ {
    move |e| PlaneError::store(format!("sqlite: {context}")).with_source(e)
}

fn pg_err<E: std::error::Error + Send + Sync + 'static>(context: &str) -> impl FnOnce(E) -> PlaneError + '_ {
    move |e| PlaneError::store(format!("postgres: {context}")).with_source(e)
}

impl Executor {
    /// The dialect its statements must be built for.
    pub fn dialect(&self) -> Dialect {
        match self {
            Executor::Sqlite(_) => Dialect::Sqlite,
            Executor::Postgres(_) => Dialect::Postgres,
        }
    }

    async fn session(pg: &PgClient) -> Result<PgSession, PlaneError> {
        pg.lock().await.map_err(pg_err("connecting"))
    }

    /// Run `statement`; returns how many rows it changed. `context` names the work in an error.
    pub async fn execute(&self, statement: Statement, context: &'static str) -> Result<u64, PlaneError> {
        match self {
            Executor::Sqlite(db) => {
                db.write(move |conn| sqlite_execute(conn, &statement).map(|n| n as u64).map_err(sqlite_err(context)))
                    .await
            }
            Executor::Postgres(pg) => {
                let mut session = Executor::session(pg).await?;
                let prepared = session.prepare_cached(&statement.sql).await.map_err(pg_err(context))?;
                session.client().run(&prepared, &statement.params).await.map_err(pg_err(context))
            }
        }
    }

    /// Run `statements` in order as one transaction; returns how many rows each changed.
    pub async fn transact(&self, statements: Vec<Statement>, context: &'static str) -> Result<Vec<u64>, PlaneError> {
        match self {
            Executor::Sqlite(db) => {
                db.write(move |conn| {
                    sqlite_each(conn, &statements, context, |tx, s| sqlite_execute(tx, s).map(|n| n as u64))
                })
                .await
            }
            Executor::Postgres(pg) => {
                let mut session = Executor::session(pg).await?;
                let prepared = prepare_all(&mut session, &statements, context).await?;
                let tx = session.client_mut().transaction().await.map_err(pg_err(context))?;
                let mut changed = Vec::with_capacity(statements.len());
                for (statement, p) in statements.iter().zip(&prepared) {
                    changed.push(tx.run(p, &statement.params).await.map_err(pg_err(context))?);
                }
                tx.commit().await.map_err(pg_err(context))?;
                Ok(changed)
            }
        }
    }

    /// Run the query `statement`, which may write (`UPDATE ... RETURNING`): on SQLite it joins
    /// the group commit. A plain read is [`Executor::read`].
    pub async fn query(&self, statement: Statement, context: &'static str) -> Result<Rows, PlaneError> {
        match self {
            Executor::Sqlite(db) => {
                db.write(move |conn| sqlite_rows(conn, &statement).map_err(sqlite_err(context))).await
            }
            Executor::Postgres(_) => self.read(statement, context).await,
        }
    }

    /// Run the read-only query `statement` (on SQLite, on the read connection, beside the
    /// writer).
    pub async fn read(&self, statement: Statement, context: &'static str) -> Result<Rows, PlaneError> {
        match self {
            Executor::Sqlite(db) => {
                db.read(move |conn| sqlite_rows(conn, &statement).map_err(sqlite_err(context))).await
            }
            Executor::Postgres(pg) => {
                let mut session = Executor::session(pg).await?;
                let prepared = session.prepare_cached(&statement.sql).await.map_err(pg_err(context))?;
                let rows = session.client().rows(&prepared, &statement.params).await.map_err(pg_err(context))?;
                pg_cells(&rows).map_err(pg_err(context))
            }
        }
    }

    /// Run the queries `statements` in one read-only transaction that sees one snapshot; returns
    /// each one's rows.
    pub async fn read_snapshot(
        &self,
        statements: Vec<Statement>,
        context: &'static str,
    ) -> Result<Vec<Rows>, PlaneError> {
        match self {
            Executor::Sqlite(db) => {
                // A SQLite transaction reads one snapshot from its first read on (WAL).
                db.read(move |conn| {
                    let tx = conn.transaction().map_err(sqlite_err(context))?;
                    let rows = sqlite_each(&tx, &statements, context, sqlite_rows)?;
                    tx.commit().map_err(sqlite_err(context))?;
                    Ok(rows)
                })
                .await
            }
            Executor::Postgres(pg) => {
                let mut session = Executor::session(pg).await?;
                let rows = pg_read_snapshot(&mut session, &statements, context).await?;
                rows.iter().map(|rows| pg_cells(rows).map_err(pg_err(context))).collect()
            }
        }
    }
}

/// The rows of each query of `statements`, read on `session` in one read-only transaction that
/// sees one snapshot (repeatable read).
pub async fn pg_read_snapshot(
    session: &mut PgSession,
    statements: &[Statement],
    context: &str,
) -> Result<Vec<Vec<Row>>, PlaneError> {
    let prepared = prepare_all(session, statements, context).await?;
    let tx = session
        .client_mut()
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(pg_err(context))?;
    let mut out = Vec::with_capacity(statements.len());
    for (statement, p) in statements.iter().zip(&prepared) {
        out.push(tx.rows(p, &statement.params).await.map_err(pg_err(context))?);
    }
    tx.commit().await.map_err(pg_err(context))?;
    Ok(out)
}

/// Every statement prepared (or found prepared) on the session, before a transaction starts.
pub async fn prepare_all(
    session: &mut PgSession,
    statements: &[Statement],
    context: &str,
) -> Result<Vec<tokio_postgres::Statement>, PlaneError> {
    let mut prepared = Vec::with_capacity(statements.len());
    for statement in statements {
        prepared.push(session.prepare_cached(&statement.sql).await.map_err(pg_err(context))?);
    }
    Ok(prepared)
}
