//! The one runner of the core's table shapes ([`TableShape`], `twoplane_core::sql`): it creates a
//! missing table and upgrades an older one, on SQLite or PostgreSQL. The plane's targets
//! (`create_chunk_table`) and the server's stores run their shapes through it, and nothing else
//! writes a `CREATE TABLE` or an `ALTER TABLE`.
//!
//! Guarantees:
//! - One call is one transaction that holds the schema lock before it reads the catalog (SQLite:
//!   `BEGIN IMMEDIATE`, the database's write lock; PostgreSQL: the advisory lock
//!   [`PG_SCHEMA_LOCK_KEY`]), so instances starting together do not both find a column missing
//!   and fail on the second `ADD COLUMN`, nor race PostgreSQL's two-step `CREATE ... IF NOT
//!   EXISTS` into its catalog's unique index.
//! - Per shape, in order: create the table when missing, read its columns from the catalog,
//!   refuse it by name when it lacks a required column (a table twoplane did not create is never
//!   altered), add the columns it lacks, create the indexes.
//! - [`read_catalog`] reads a table back with the shape's own catalog queries, for a check
//!   against [`TableShape::expected_columns`] and [`TableShape::expected_indexes`].

use rusqlite::{Connection, TransactionBehavior};
use tokio_postgres::Client;
use twoplane_core::sql::{CatalogColumn, TableShape};

use crate::error::PlaneError;
use crate::exec::{pg_cells, sqlite_rows, Cell, Executor, PgExec, Rows};

/// The PostgreSQL advisory lock (`pg_advisory_xact_lock`) under which twoplane creates tables:
/// hold it in the transaction of your own `CREATE ... IF NOT EXISTS` statements when several
/// instances may start at once. The bytes of "twoplane" as a big-endian integer.
pub const PG_SCHEMA_LOCK_KEY: i64 = 0x7477_6f70_6c61_6e65;

fn sqlite_err(context: &str) -> impl FnOnce(rusqlite::Error) -> PlaneError + '_ {
    move |e| PlaneError::store(format!("sqlite: {context}")).with_source(e)
}

fn pg_err(context: &str) -> impl FnOnce(tokio_postgres::Error) -> PlaneError + '_ {
    move |e| PlaneError::store(format!("postgres: {context}")).with_source(e)
}

/// What a table whose catalog reads `columns` (rows of [`TableShape::catalog_columns`]) still
/// needs after its `CREATE TABLE IF NOT EXISTS`: the columns it lacks, then the indexes; or its
/// refusal, when it lacks a required column.
fn upgrade(shape: &TableShape, columns: Rows) -> Result<Vec<String>, PlaneError> {
    let present: Vec<String> =
        columns.into_iter().filter_map(|row| row.into_iter().next()).map(Cell::into_key).collect();
    let missing = shape.missing_required(&present);
    if !missing.is_empty() {
        return Err(PlaneError::store(format!(
            "the table {} exists but lacks the column(s) {} (it is not one that twoplane created)",
            shape.name(),
            missing.join(", ")
        )));
    }
    Ok(shape.add_missing(&present).into_iter().chain(shape.create_indexes()).collect())
}

/// Create and upgrade `shapes` on a SQLite connection, in one write-locked transaction. It
/// blocks: call it on the blocking pool (as [`migrate`] does).
pub fn migrate_sqlite(conn: &mut Connection, shapes: &[TableShape]) -> Result<(), PlaneError> {
    let tx =
        conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sqlite_err("locking the schema"))?;
    let context = "creating the tables";
    for shape in shapes {
        if let Some(create) = shape.create_table() {
            tx.execute_batch(&create).map_err(sqlite_err(context))?;
        }
        let columns = sqlite_rows(&tx, &shape.catalog_columns()).map_err(sqlite_err("reading the catalog"))?;
        for statement in upgrade(shape, columns)? {
            tx.execute_batch(&statement).map_err(sqlite_err(context))?;
        }
    }
    tx.commit().map_err(sqlite_err(context))
}

/// Create and upgrade `shapes` on a PostgreSQL connection, in one transaction under the
/// advisory lock [`PG_SCHEMA_LOCK_KEY`].
pub async fn migrate_postgres(client: &mut Client, shapes: &[TableShape]) -> Result<(), PlaneError> {
    let tx = client.transaction().await.map_err(pg_err("creating the tables"))?;
    tx.batch_execute(&format!("SELECT pg_advisory_xact_lock({PG_SCHEMA_LOCK_KEY})"))
        .await
        .map_err(pg_err("taking the schema lock"))?;
    let context = "creating the tables";
    for shape in shapes {
        if let Some(create) = shape.create_table() {
            tx.batch_execute(&create).await.map_err(pg_err(context))?;
        }
        let catalog = shape.catalog_columns();
        let prepared = tx.prepare(&catalog.sql).await.map_err(pg_err("reading the catalog"))?;
        let rows = tx.rows(&prepared, &catalog.params).await.map_err(pg_err("reading the catalog"))?;
        for statement in upgrade(shape, pg_cells(&rows).map_err(pg_err("reading the catalog"))?)? {
            tx.batch_execute(&statement).await.map_err(pg_err(context))?;
        }
    }
    tx.commit().await.map_err(pg_err(context))
}

/// Create and upgrade `shapes` on either database (each shape built for its dialect).
pub async fn migrate(db: &Executor, shapes: Vec<TableShape>) -> Result<(), PlaneError> {
    match db {
        Executor::Sqlite(conn) => conn.run(move |conn| migrate_sqlite(conn, &shapes)).await,
        Executor::Postgres(pg) => {
            let mut session = pg.lock().await.map_err(|e| PlaneError::store("postgres: connecting").with_source(e))?;
            migrate_postgres(session.client_mut(), &shapes).await
        }
    }
}

/// What the database's catalog holds of `shape`'s table: its columns, then its plain indexes
/// as `(index, column)` pairs, to compare with what the shape expects.
pub async fn read_catalog(
    db: &Executor,
    shape: &TableShape,
) -> Result<(Vec<CatalogColumn>, Vec<(String, String)>), PlaneError> {
    let mut read =
        db.read_snapshot(vec![shape.catalog_columns(), shape.catalog_indexes()], "reading the catalog").await?;
    let indexes = read.pop().unwrap_or_default();
    let columns = read.pop().unwrap_or_default();
    let columns = columns
        .into_iter()
        .map(|row| match <[Cell; 5]>::try_from(row) {
            Ok([name, ty, not_null, default, primary_key]) => Ok(CatalogColumn {
                name: name.into_key(),
                ty: ty.into_key(),
                not_null: not_null.truthy(),
                default: default.into_text("default")?,
                primary_key: primary_key.truthy(),
            }),
            Err(_) => Err(PlaneError::store("a catalog row came back with the wrong number of columns")),
        })
        .collect::<Result<_, _>>()?;
    let indexes = indexes
        .into_iter()
        .map(|row| {
            let mut cells = row.into_iter().map(Cell::into_key);
            (cells.next().unwrap_or_default(), cells.next().unwrap_or_default())
        })
        .collect();
    Ok((columns, indexes))
}
