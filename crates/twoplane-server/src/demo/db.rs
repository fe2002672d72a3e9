//! The demo's database: its message table, the plane's chunk table, and the durable view the
//! page renders, on SQLite (one process, or a few on one machine sharing the file) or on
//! PostgreSQL (several instances sharing one server).
//!
//! Guarantees:
//! - The tables are created when missing, and creation is safe when several instances start at
//!   once: on PostgreSQL under the advisory lock [`PG_SCHEMA_LOCK_KEY`], on SQLite in an
//!   immediate (write-locked) transaction. A message table from an earlier version gains its
//!   `host` column; one that lacks what the demo needs is refused with a sentence naming it.
//! - The durable view ([`DemoDb::messages`]) reads `body` and the chunk rows from one snapshot,
//!   so a compaction (which moves chunk text into `body`) is never seen half-done: on
//!   PostgreSQL that takes a `REPEATABLE READ` transaction, since each statement of a `READ
//!   COMMITTED` one sees its own snapshot.
//! - The `host` column is always in the schema but mapped for the plane only when asked
//!   ([`DemoDb::tables`]): a single instance keeps the behaviour it always had.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use tokio::sync::{Mutex, MutexGuard};
use tokio_postgres::{Client, IsolationLevel, NoTls};
use twoplane_core::sql::{quote_ident, stream_chunk_table_ddl, Dialect, StreamColumns, StreamTables};
use twoplane_core::{assemble_durable_text, ChunkRow, Text, STREAM_STATUS_STREAMING};
use twoplane_stream::{DurableTarget, PlaneError, PostgresTarget, SqliteTarget, PG_SCHEMA_LOCK_KEY};

/// The application's message table.
pub const MESSAGE_TABLE: &str = "messages";
/// The plane's chunk table.
pub const CHUNK_TABLE: &str = "message_chunks";
/// The message table's column that names a stream's producer (mapped with several instances).
pub const HOST_COLUMN: &str = "host";

/// The tables the plane writes, without the `host` column (one instance).
pub fn tables() -> StreamTables {
    StreamTables { message: MESSAGE_TABLE.into(), chunks: CHUNK_TABLE.into(), columns: Default::default() }
}

/// The tables the plane writes with the `host` column mapped (several instances: every row
/// names its producer, which the open compare-and-swap and the sweeper rely on).
pub fn tables_with_host() -> StreamTables {
    StreamTables { columns: StreamColumns { host: Some(HOST_COLUMN.into()), ..StreamColumns::default() }, ..tables() }
}

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

/// The demo's database. Cheap to clone.
#[derive(Clone)]
pub struct DemoDb {
    backend: Backend,
    host_mapped: bool,
}

#[derive(Clone)]
enum Backend {
    /// The plane's SQLite target, whose one connection also serves the demo's own reads and
    /// inserts (serialized with the checkpoints, which a demo can afford).
    Sqlite(Arc<SqliteTarget>),
    Postgres(Arc<PgDemo>),
}

/// On PostgreSQL the demo keeps a connection of its own: the target's is private to it, and a
/// page's read must not queue behind a checkpoint anyway.
struct PgDemo {
    target: Arc<PostgresTarget>,
    url: String,
    client: Mutex<Option<Client>>,
}

impl DemoDb {
    /// Open or create the SQLite database at `path` for one instance (the `host` column is
    /// not mapped).
    pub async fn open(path: &Path) -> Result<DemoDb, String> {
        DemoDb::open_sqlite(path, false).await
    }

    /// Open or create the SQLite database at `path`; `map_host` maps the `host` column (several
    /// instances on one machine sharing the file).
    pub async fn open_sqlite(path: &Path, map_host: bool) -> Result<DemoDb, String> {
        let shown = path.display().to_string();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(format!("cannot use database {shown}: the directory {} does not exist", parent.display()));
            }
        }
        if path.is_dir() {
            return Err(format!("cannot use database {shown}: it is a directory"));
        }
        let mapping = if map_host { tables_with_host() } else { tables() };
        let target =
            SqliteTarget::open(path, &mapping).map_err(|e| format!("cannot use database {shown}: {}", cause(&e)))?;
        let target = Arc::new(target);
        target
            .with_connection(create_sqlite_schema)
            .await
            .map_err(|e| format!("cannot use database {shown}: {}", cause(&e)))?;
        Ok(DemoDb { backend: Backend::Sqlite(target), host_mapped: map_host })
    }

    /// Connect to PostgreSQL at `url`, create the tables when missing, and map the `host`
    /// column (several instances share the server).
    pub async fn open_postgres(url: &str) -> Result<DemoDb, String> {
        let shown = redact_url(url);
        let fail = |e: PlaneError| format!("cannot use PostgreSQL at {shown}: {}", cause(&e));
        let target = PostgresTarget::connect(url, &tables_with_host()).await.map_err(fail)?;
        let pg = PgDemo { target: Arc::new(target), url: url.to_owned(), client: Mutex::new(None) };
        {
            let mut guard = pg.client().await.map_err(fail)?;
            let client = guard.as_mut().ok_or_else(|| fail(PlaneError::store("postgres: no connection")))?;
            create_pg_schema(client).await.map_err(|e| format!("cannot use PostgreSQL at {shown}: {e}"))?;
        }
        pg.target.create_chunk_table().await.map_err(fail)?;
        Ok(DemoDb { backend: Backend::Postgres(Arc::new(pg)), host_mapped: true })
    }

    /// The plane's durable target.
    pub fn target(&self) -> Result<Arc<dyn DurableTarget>, String> {
        Ok(match &self.backend {
            Backend::Sqlite(t) => t.clone(),
            Backend::Postgres(pg) => pg.target.clone(),
        })
    }

    /// The mapping the target was built with (the sweeper needs the same one).
    pub fn tables(&self) -> StreamTables {
        if self.host_mapped {
            tables_with_host()
        } else {
            tables()
        }
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// One instance only: mark every message an earlier process left `streaming` (it died
    /// without draining) as `interrupted`; their text stays readable from body plus chunk rows.
    /// With several instances this would cut live streams of the others, so on PostgreSQL it is
    /// refused: there the sweeper releases a dead host's rows (and, at start, this host's own).
    pub async fn sweep_streaming(&self) -> Result<usize, String> {
        match &self.backend {
            Backend::Sqlite(target) => target
                .with_connection(|conn| {
                    conn.execute(
                        "UPDATE messages SET status = 'interrupted' WHERE status = ?1",
                        [STREAM_STATUS_STREAMING],
                    )
                    .map_err(sqlite_err)
                })
                .await
                .map_err(|e| format!("cannot sweep unfinished messages: {}", cause(&e))),
            Backend::Postgres(_) => Err("several instances share PostgreSQL: unfinished messages are released per \
                                         host by the sweeper, never all at once"
                .into()),
        }
    }

    /// Insert the user's message and an empty assistant row ready for `open`.
    pub async fn insert_exchange(&self, user: MessageView, assistant_id: String) -> Result<(), PlaneError> {
        match &self.backend {
            Backend::Sqlite(target) => {
                target
                    .with_connection(move |conn| {
                        let tx = conn.transaction().map_err(sqlite_err)?;
                        tx.execute(
                        "INSERT INTO messages (id, role, body, status, seq) VALUES (?1, 'user', ?2, 'complete', ?3)",
                        rusqlite::params![user.id, user.body, user.seq],
                    )
                    .map_err(sqlite_err)?;
                        tx.execute(
                            "INSERT INTO messages (id, role, body, status, seq) VALUES (?1, 'assistant', '', NULL, 0)",
                            [&assistant_id],
                        )
                        .map_err(sqlite_err)?;
                        tx.commit().map_err(sqlite_err)
                    })
                    .await
            }
            Backend::Postgres(pg) => {
                let mut guard = pg.client().await?;
                let client = connected(&mut guard)?;
                let tx = client.transaction().await.map_err(pg_err)?;
                tx.execute(
                    "INSERT INTO messages (id, role, body, status, seq) VALUES ($1, 'user', $2, 'complete', $3)",
                    &[&user.id, &user.body, &user.seq],
                )
                .await
                .map_err(pg_err)?;
                tx.execute(
                    "INSERT INTO messages (id, role, body, status, seq) VALUES ($1, 'assistant', '', NULL, 0)",
                    &[&assistant_id],
                )
                .await
                .map_err(pg_err)?;
                tx.commit().await.map_err(pg_err)
            }
        }
    }

    /// Insert an empty assistant row, ready for [`twoplane_stream::Plane::open`] (tests and
    /// benchmarks drive their own producers with it).
    pub async fn insert_assistant(&self, id: &str) -> Result<(), PlaneError> {
        let id = id.to_owned();
        match &self.backend {
            Backend::Sqlite(target) => {
                target
                    .with_connection(move |conn| {
                        conn.execute(
                            "INSERT INTO messages (id, role, body, status, seq) VALUES (?1, 'assistant', '', NULL, 0)",
                            [&id],
                        )
                        .map(drop)
                        .map_err(sqlite_err)
                    })
                    .await
            }
            Backend::Postgres(pg) => {
                let mut guard = pg.client().await?;
                connected(&mut guard)?
                    .execute(
                        "INSERT INTO messages (id, role, body, status, seq) VALUES ($1, 'assistant', '', NULL, 0)",
                        &[&id],
                    )
                    .await
                    .map(drop)
                    .map_err(pg_err)
            }
        }
    }

    /// Every message in creation order, with durable text assembled, from one snapshot.
    pub async fn messages(&self) -> Result<Vec<MessageView>, PlaneError> {
        self.read(None).await
    }

    /// One message's durable view.
    pub async fn message(&self, id: String) -> Result<Option<MessageView>, PlaneError> {
        Ok(self.read(Some(id)).await?.pop())
    }

    async fn read(&self, only: Option<String>) -> Result<Vec<MessageView>, PlaneError> {
        match &self.backend {
            Backend::Sqlite(target) => target.with_connection(move |conn| read_sqlite(conn, only.as_deref())).await,
            Backend::Postgres(pg) => {
                let mut guard = pg.client().await?;
                read_pg(connected(&mut guard)?, only.as_deref()).await
            }
        }
    }
}

impl PgDemo {
    /// The demo's connection, re-established when it was lost (a server restart, a killed
    /// backend): the next request after a loss works again.
    async fn client(&self) -> Result<MutexGuard<'_, Option<Client>>, PlaneError> {
        let mut guard = self.client.lock().await;
        if guard.as_ref().is_some_and(Client::is_closed) {
            *guard = None;
        }
        if guard.is_none() {
            let (client, connection) = tokio_postgres::connect(&self.url, NoTls).await.map_err(pg_err)?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::warn!(error = %e, "the demo's postgres connection ended");
                }
            });
            *guard = Some(client);
        }
        Ok(guard)
    }
}

fn connected<'a>(guard: &'a mut MutexGuard<'_, Option<Client>>) -> Result<&'a mut Client, PlaneError> {
    guard.as_mut().ok_or_else(|| PlaneError::store("postgres: no connection"))
}

/// The message table, its `host` column (added to a table from before it existed) and the
/// chunk table, in one write-locked transaction so instances sharing the file do not race.
fn create_sqlite_schema(conn: &mut rusqlite::Connection) -> Result<(), PlaneError> {
    let message = quote_ident(MESSAGE_TABLE)?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sqlite_err)?;
    tx.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {message} (id TEXT PRIMARY KEY, role TEXT, \
         body TEXT NOT NULL DEFAULT '', status TEXT, seq INTEGER NOT NULL DEFAULT 0, host TEXT)"
    ))
    .map_err(sqlite_err)?;
    let columns = {
        let mut info = tx.prepare(&format!("PRAGMA table_info({message})")).map_err(sqlite_err)?;
        let names = info.query_map([], |r| r.get::<_, String>(1)).map_err(sqlite_err)?;
        names.collect::<Result<Vec<_>, _>>().map_err(sqlite_err)?
    };
    check_columns(&columns)?;
    if !columns.iter().any(|c| c == HOST_COLUMN) {
        tx.execute_batch(&format!("ALTER TABLE {message} ADD COLUMN {} TEXT", quote_ident(HOST_COLUMN)?))
            .map_err(sqlite_err)?;
    }
    for ddl in stream_chunk_table_ddl(&tables(), Dialect::Sqlite)? {
        tx.execute(&ddl, []).map_err(sqlite_err)?;
    }
    tx.commit().map_err(sqlite_err)
}

/// The message table on PostgreSQL. `position` orders the view (PostgreSQL has no rowid). The
/// chunk table comes from [`PostgresTarget::create_chunk_table`].
async fn create_pg_schema(client: &mut Client) -> Result<(), String> {
    let message = quote_ident(MESSAGE_TABLE).map_err(|e| e.to_string())?;
    let tx = client.transaction().await.map_err(|e| pg_cause(&e))?;
    tx.batch_execute(&format!("SELECT pg_advisory_xact_lock({PG_SCHEMA_LOCK_KEY})")).await.map_err(|e| pg_cause(&e))?;
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {message} (position bigserial, id text PRIMARY KEY, role text, \
         body text NOT NULL DEFAULT '', status text, seq bigint NOT NULL DEFAULT 0, host text)"
    ))
    .await
    .map_err(|e| pg_cause(&e))?;
    let rows = tx
        .query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1",
            &[&MESSAGE_TABLE],
        )
        .await
        .map_err(|e| pg_cause(&e))?;
    let columns: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    check_columns(&columns).map_err(|e| e.message().to_owned())?;
    if !columns.iter().any(|c| c == "position") {
        return Err(format!("the table {MESSAGE_TABLE} exists but has no position column (it is not the demo's)"));
    }
    if !columns.iter().any(|c| c == HOST_COLUMN) {
        tx.batch_execute(&format!(
            "ALTER TABLE {message} ADD COLUMN {} text",
            quote_ident(HOST_COLUMN).map_err(|e| e.to_string())?
        ))
        .await
        .map_err(|e| pg_cause(&e))?;
    }
    tx.commit().await.map_err(|e| pg_cause(&e))
}

/// An existing message table that is not the demo's is refused by name, instead of failing
/// later on the first query.
fn check_columns(columns: &[String]) -> Result<(), PlaneError> {
    let missing: Vec<&str> =
        ["id", "role", "body", "status", "seq"].into_iter().filter(|want| !columns.iter().any(|c| c == want)).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(PlaneError::store(format!(
            "the table {MESSAGE_TABLE} exists but lacks the column(s) {} (it is not the demo's)",
            missing.join(", ")
        )))
    }
}

fn read_sqlite(conn: &mut rusqlite::Connection, only: Option<&str>) -> Result<Vec<MessageView>, PlaneError> {
    // One transaction: body and chunk rows from the same snapshot.
    let tx = conn.transaction().map_err(sqlite_err)?;
    let mut out = Vec::new();
    {
        let mut rows = tx
            .prepare_cached(
                "SELECT id, role, body, status, seq, host FROM messages WHERE (?1 IS NULL OR id = ?1) ORDER BY rowid",
            )
            .map_err(sqlite_err)?;
        let mut chunks = tx
            .prepare_cached(r#"SELECT "seq", "text" FROM "message_chunks" WHERE "streamId" = ?1 ORDER BY "seq""#)
            .map_err(sqlite_err)?;
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
            let rows = chunks
                .query_map([&stored.id], |r| {
                    let seq: i64 = r.get(0)?;
                    let text: Option<String> = r.get(1)?;
                    Ok(ChunkRow { seq: u64::try_from(seq).unwrap_or(0), text: text.map(Text::from) })
                })
                .map_err(sqlite_err)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(sqlite_err)?;
            out.push(stored.view(&rows));
        }
    }
    tx.commit().map_err(sqlite_err)?;
    Ok(out)
}

async fn read_pg(client: &mut Client, only: Option<&str>) -> Result<Vec<MessageView>, PlaneError> {
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(pg_err)?;
    let rows = tx
        .query(
            "SELECT id, role, body, status, seq, host FROM messages WHERE ($1::text IS NULL OR id = $1) \
             ORDER BY position",
            &[&only],
        )
        .await
        .map_err(pg_err)?;
    let chunk_rows = tx
        .query(
            r#"SELECT "streamId", "seq", "text" FROM "message_chunks" WHERE ($1::text IS NULL OR "streamId" = $1)
               ORDER BY "streamId", "seq""#,
            &[&only],
        )
        .await
        .map_err(pg_err)?;
    tx.commit().await.map_err(pg_err)?;
    let mut chunks: HashMap<String, Vec<ChunkRow>> = HashMap::new();
    for r in &chunk_rows {
        let stream: String = r.try_get(0).map_err(pg_err)?;
        let seq: i64 = r.try_get(1).map_err(pg_err)?;
        let text: Option<String> = r.try_get(2).map_err(pg_err)?;
        chunks
            .entry(stream)
            .or_default()
            .push(ChunkRow { seq: u64::try_from(seq).unwrap_or(0), text: text.map(Text::from) });
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
        let rows = chunks.get(&stored.id).map(Vec::as_slice).unwrap_or_default();
        out.push(stored.view(rows));
    }
    Ok(out)
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

fn sqlite_err(e: rusqlite::Error) -> PlaneError {
    PlaneError::store("sqlite").with_source(e)
}

fn pg_err(e: tokio_postgres::Error) -> PlaneError {
    PlaneError::store("postgres").with_source(e)
}

/// The server's own words when it sent some (`ERROR: ...`), else the client's.
fn pg_cause(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_owned(),
        None => e.to_string(),
    }
}

/// The most useful sentence in a plane error: its cause when there is one.
pub(crate) fn cause(e: &PlaneError) -> String {
    match std::error::Error::source(e) {
        Some(source) => match source.downcast_ref::<tokio_postgres::Error>() {
            Some(pg) => {
                let inner = std::error::Error::source(pg).map(ToString::to_string);
                match (pg.as_db_error(), inner) {
                    (Some(db), _) => db.message().to_owned(),
                    (None, Some(inner)) => format!("{pg}: {inner}"),
                    (None, None) => pg.to_string(),
                }
            }
            None => source.to_string(),
        },
        None => e.message().to_owned(),
    }
}

/// `url` with any password replaced, for messages and logs.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else { return url.to_owned() };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else { return url.to_owned() };
    let userinfo = &authority[..at];
    let Some(colon) = userinfo.find(':') else { return url.to_owned() };
    format!("{}{}:***{}", &url[..scheme_end + 3], &userinfo[..colon], &rest[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact_url("postgresql://u:secret@h:5432/db"), "postgresql://u:***@h:5432/db");
        assert_eq!(redact_url("redis://:pw@127.0.0.1:6379/"), "redis://:***@127.0.0.1:6379/");
        assert_eq!(redact_url("postgresql://u@h/db"), "postgresql://u@h/db");
        assert_eq!(redact_url("host=h user=u"), "host=h user=u");
        assert_eq!(redact_url("redis://h/?a=b@c"), "redis://h/?a=b@c");
    }

    #[tokio::test]
    async fn an_old_sqlite_table_gains_its_host_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE messages (id TEXT PRIMARY KEY, role TEXT, body TEXT NOT NULL DEFAULT '', \
                 status TEXT, seq INTEGER NOT NULL DEFAULT 0)",
            )
            .unwrap();
        }
        let db = DemoDb::open_sqlite(&path, true).await.unwrap();
        db.insert_assistant("a1").await.unwrap();
        let m = db.message("a1".into()).await.unwrap().unwrap();
        assert_eq!(m.host, None);
        // Opening it again (a second instance) finds the column and changes nothing.
        DemoDb::open_sqlite(&path, true).await.unwrap();
    }

    #[tokio::test]
    async fn a_foreign_message_table_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("foreign.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch("CREATE TABLE messages (id TEXT PRIMARY KEY, text TEXT)").unwrap();
        }
        let err = DemoDb::open(&path).await.err().unwrap();
        assert!(err.contains("lacks the column(s) role, body, status, seq"), "{err}");
    }
}
