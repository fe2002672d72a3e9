//! The demo's own statements on the server's [`Database`]: a chat exchange's rows, and the
//! durable view the page renders.
//!
//! Guarantees:
//! - The durable view ([`DemoDb::messages`]) reads `body` and the chunk rows from one snapshot,
//!   so a compaction (which moves chunk text into `body`) is never seen half-done: on
//!   PostgreSQL that takes a `REPEATABLE READ` transaction, since each statement of a `READ
//!   COMMITTED` one sees its own snapshot.
//! - The rows of one exchange are inserted in one transaction: both or neither.
//!
//! Each statement is written once per backend ([`sqlite`], [`postgres`]); [`DemoDb`] only picks
//! the backend.

use serde::Serialize;
use twoplane_core::sql::quote_ident;
use twoplane_core::{assemble_durable_text, ChunkRow, Text};
use twoplane_stream::PlaneError;

use crate::store::{Backend, Database};

/// One message as the page sees it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct MessageView {
    pub id: String,
    pub role: String,
    /// The durable text: `body` followed by the chunk rows in `seq` order.
    pub body: String,
    pub status: Option<String>,
    pub seq: i64,
    /// The instance that produced (or produces) it, when several share the database.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// A message row to insert: the user's (complete, with its text) or an empty assistant row
/// ready for [`twoplane_stream::Plane::open`].
struct NewRow {
    id: String,
    role: &'static str,
    body: String,
    status: Option<&'static str>,
    seq: i64,
}

impl NewRow {
    fn assistant(id: String) -> NewRow {
        NewRow { id, role: "assistant", body: String::new(), status: None, seq: 0 }
    }
}

/// The demo's view of the server's database. Cheap to clone.
#[derive(Clone)]
pub struct DemoDb {
    db: Database,
}

impl DemoDb {
    pub fn new(db: Database) -> DemoDb {
        DemoDb { db }
    }

    /// The server's database underneath.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Insert the user's message and an empty assistant row ready for `open`.
    pub async fn insert_exchange(&self, user: MessageView, assistant_id: String) -> Result<(), PlaneError> {
        let user = NewRow { id: user.id, role: "user", body: user.body, status: Some("complete"), seq: user.seq };
        self.insert(vec![user, NewRow::assistant(assistant_id)]).await
    }

    /// Insert an empty assistant row, ready for [`twoplane_stream::Plane::open`] (tests and
    /// benchmarks drive their own producers with it).
    pub async fn insert_assistant(&self, id: &str) -> Result<(), PlaneError> {
        self.insert(vec![NewRow::assistant(id.to_owned())]).await
    }

    /// Every message in creation order, with durable text assembled, from one snapshot.
    pub async fn messages(&self) -> Result<Vec<MessageView>, PlaneError> {
        self.read(None).await
    }

    /// One message's durable view.
    pub async fn message(&self, id: String) -> Result<Option<MessageView>, PlaneError> {
        Ok(self.read(Some(id)).await?.pop())
    }

    async fn insert(&self, rows: Vec<NewRow>) -> Result<(), PlaneError> {
        match self.db.backend() {
            Backend::Sqlite(store) => sqlite::insert(store, rows).await,
            Backend::Postgres(store) => postgres::insert(store, rows).await,
        }
    }

    async fn read(&self, only: Option<String>) -> Result<Vec<MessageView>, PlaneError> {
        match self.db.backend() {
            Backend::Sqlite(store) => sqlite::read(store, only).await,
            Backend::Postgres(store) => postgres::read(store, only).await,
        }
    }
}

/// The quoted names the statements use: the store's constants, and the chunk columns as the
/// plane's mapping ([`crate::store::tables`]) resolves them, so the view reads what the plane
/// writes.
struct Names {
    message: String,
    host: String,
    chunks: String,
    chunk_stream: String,
    chunk_seq: String,
    chunk_text: String,
}

impl Names {
    fn get() -> Result<Names, PlaneError> {
        use crate::store::{tables, HOST_COLUMN, MESSAGE_TABLE};
        let mapping = tables();
        let columns = mapping.columns.resolve();
        Ok(Names {
            message: quote_ident(MESSAGE_TABLE)?,
            host: quote_ident(HOST_COLUMN)?,
            chunks: quote_ident(&mapping.chunks)?,
            chunk_stream: quote_ident(&columns.chunk_stream)?,
            chunk_seq: quote_ident(&columns.chunk_seq)?,
            chunk_text: quote_ident(&columns.chunk_text)?,
        })
    }
}

/// A message row as stored.
struct Stored {
    id: String,
    role: Option<String>,
    body: Option<String>,
    status: Option<String>,
    seq: i64,
    host: Option<String>,
}

impl Stored {
    fn view(self, chunks: &[ChunkRow]) -> MessageView {
        let body = self.body.map(Text::from);
        let durable = assemble_durable_text(body.as_ref(), chunks);
        MessageView {
            id: self.id,
            role: self.role.unwrap_or_default(),
            // Table text is well-formed (the plane refuses lone surrogates for tables).
            body: durable.to_string_lossy(),
            status: self.status,
            seq: self.seq,
            host: self.host,
        }
    }
}

fn chunk_row(seq: i64, text: Option<String>) -> ChunkRow {
    ChunkRow { seq: u64::try_from(seq).unwrap_or(0), text: text.map(Text::from) }
}

mod sqlite {
    use super::{chunk_row, Names, NewRow, Stored};
    use crate::demo::MessageView;
    use crate::store::sqlite::sqlite_err;
    use crate::store::SqliteStore;
    use twoplane_stream::PlaneError;

    pub(super) async fn insert(store: &SqliteStore, rows: Vec<NewRow>) -> Result<(), PlaneError> {
        let sql =
            format!("INSERT INTO {} (id, role, body, status, seq) VALUES (?1, ?2, ?3, ?4, ?5)", Names::get()?.message);
        store
            .with_connection(move |conn| {
                let tx = conn.transaction().map_err(sqlite_err)?;
                for row in &rows {
                    tx.execute(&sql, rusqlite::params![row.id, row.role, row.body, row.status, row.seq])
                        .map_err(sqlite_err)?;
                }
                tx.commit().map_err(sqlite_err)
            })
            .await
    }

    pub(super) async fn read(store: &SqliteStore, only: Option<String>) -> Result<Vec<MessageView>, PlaneError> {
        let Names { message, host, chunks, chunk_stream, chunk_seq, chunk_text } = Names::get()?;
        let messages_sql = format!(
            "SELECT id, role, body, status, seq, {host} FROM {message} WHERE (?1 IS NULL OR id = ?1) ORDER BY rowid"
        );
        let chunks_sql =
            format!("SELECT {chunk_seq}, {chunk_text} FROM {chunks} WHERE {chunk_stream} = ?1 ORDER BY {chunk_seq}");
        store
            .with_connection(move |conn| {
                // One transaction: body and chunk rows from the same snapshot.
                let tx = conn.transaction().map_err(sqlite_err)?;
                let mut out = Vec::new();
                {
                    let mut rows = tx.prepare_cached(&messages_sql).map_err(sqlite_err)?;
                    let mut chunk_rows = tx.prepare_cached(&chunks_sql).map_err(sqlite_err)?;
                    let list = rows
                        .query_map([only], |r| {
                            Ok(Stored {
                                id: r.get(0)?,
                                role: r.get(1)?,
                                body: r.get(2)?,
                                status: r.get(3)?,
                                seq: r.get(4)?,
                                host: r.get(5)?,
                            })
                        })
                        .map_err(sqlite_err)?
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(sqlite_err)?;
                    for stored in list {
                        let rows = chunk_rows
                            .query_map([&stored.id], |r| Ok(chunk_row(r.get(0)?, r.get(1)?)))
                            .map_err(sqlite_err)?
                            .collect::<Result<Vec<_>, _>>()
                            .map_err(sqlite_err)?;
                        out.push(stored.view(&rows));
                    }
                }
                tx.commit().map_err(sqlite_err)?;
                Ok(out)
            })
            .await
    }
}

mod postgres {
    use std::collections::HashMap;

    use tokio_postgres::IsolationLevel;
    use twoplane_core::ChunkRow;
    use twoplane_stream::PlaneError;

    use super::{chunk_row, Names, NewRow, Stored};
    use crate::demo::MessageView;
    use crate::store::postgres::pg_err;
    use crate::store::{PostgresStore, POSITION_COLUMN};

    pub(super) async fn insert(store: &PostgresStore, rows: Vec<NewRow>) -> Result<(), PlaneError> {
        let sql =
            format!("INSERT INTO {} (id, role, body, status, seq) VALUES ($1, $2, $3, $4, $5)", Names::get()?.message);
        let mut session = store.session().await?;
        let tx = session.client_mut().transaction().await.map_err(pg_err)?;
        for row in &rows {
            tx.execute(&sql, &[&row.id, &row.role, &row.body, &row.status, &row.seq]).await.map_err(pg_err)?;
        }
        tx.commit().await.map_err(pg_err)
    }

    pub(super) async fn read(store: &PostgresStore, only: Option<String>) -> Result<Vec<MessageView>, PlaneError> {
        let Names { message, host, chunks, chunk_stream, chunk_seq, chunk_text } = Names::get()?;
        let position = twoplane_core::sql::quote_ident(POSITION_COLUMN)?;
        let mut session = store.session().await?;
        let tx = session
            .client_mut()
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(pg_err)?;
        let rows = tx
            .query(
                &format!(
                    "SELECT id, role, body, status, seq, {host} FROM {message} \
                     WHERE ($1::text IS NULL OR id = $1) ORDER BY {position}"
                ),
                &[&only],
            )
            .await
            .map_err(pg_err)?;
        let chunk_rows = tx
            .query(
                &format!(
                    "SELECT {chunk_stream}, {chunk_seq}, {chunk_text} FROM {chunks} \
                     WHERE ($1::text IS NULL OR {chunk_stream} = $1) ORDER BY {chunk_stream}, {chunk_seq}"
                ),
                &[&only],
            )
            .await
            .map_err(pg_err)?;
        tx.commit().await.map_err(pg_err)?;
        let mut by_stream: HashMap<String, Vec<ChunkRow>> = HashMap::new();
        for r in &chunk_rows {
            let stream: String = r.try_get(0).map_err(pg_err)?;
            by_stream
                .entry(stream)
                .or_default()
                .push(chunk_row(r.try_get(1).map_err(pg_err)?, r.try_get(2).map_err(pg_err)?));
        }
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let stored = Stored {
                id: r.try_get(0).map_err(pg_err)?,
                role: r.try_get(1).map_err(pg_err)?,
                body: r.try_get(2).map_err(pg_err)?,
                status: r.try_get(3).map_err(pg_err)?,
                seq: r.try_get(4).map_err(pg_err)?,
                host: r.try_get(5).map_err(pg_err)?,
            };
            let rows = by_stream.get(&stored.id).map(Vec::as_slice).unwrap_or_default();
            out.push(stored.view(rows));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_exchange_reads_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let db = DemoDb::new(Database::open_sqlite(&dir.path().join("x.db"), true).await.unwrap());
        let user =
            MessageView { id: "u1".into(), role: "user".into(), body: "hi".into(), status: None, seq: 2, host: None };
        db.insert_exchange(user, "a1".into()).await.unwrap();
        let all = db.messages().await.unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].id.as_str(), all[0].role.as_str(), all[0].body.as_str()), ("u1", "user", "hi"));
        assert_eq!(all[0].status.as_deref(), Some("complete"));
        assert_eq!((all[1].id.as_str(), all[1].role.as_str(), all[1].status.as_deref()), ("a1", "assistant", None));
        assert_eq!(db.message("a1".into()).await.unwrap(), Some(all[1].clone()));
        assert_eq!(db.message("nope".into()).await.unwrap(), None);
        // An id taken already fails the whole exchange: the new user row is not left behind.
        let again =
            MessageView { id: "u2".into(), role: "user".into(), body: "x".into(), status: None, seq: 1, host: None };
        assert!(db.insert_exchange(again, "a1".into()).await.is_err());
        assert_eq!(db.message("u2".into()).await.unwrap(), None);
    }
}
