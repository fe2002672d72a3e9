//! One SQLite database as the plane and the server share it: a write connection whose writes are
//! group-committed, and a read connection beside it.
//!
//! Guarantees:
//! - **Group commit.** Every write sent with [`SqliteShared::write`] (the checkpoints, opens,
//!   seals and claims of every stream, and the server's own writes) joins the next transaction
//!   of one writer: `BEGIN IMMEDIATE`, each write in a savepoint of its own, one `COMMIT`, so a
//!   thousand streams' checkpoints cost one commit and one sync, not a thousand. The writer is
//!   whichever caller found none running (`group_commit.rs`); it runs on tokio's blocking pool.
//! - **All or nothing, and answered after the commit.** A write's answer is sent only once the
//!   transaction holding it committed; when the `COMMIT` fails, every write in it is answered
//!   with that error (never half a batch acknowledged), and each caller's own retry rules apply.
//!   A write whose own statement fails, or that refuses (a verdict such as `fenced`), is rolled
//!   back to its savepoint and answered with its error; the others in its batch are unaffected.
//!   When a failure ends the transaction itself (SQLite rolls back on some I/O errors), every
//!   write it held is answered with that error and the writes not yet run go to the next one.
//! - **Reads beside the writer.** [`SqliteShared::read`] runs on a second connection to the same
//!   file (WAL: a reader never waits for the writer, nor the writer for it), so status reads,
//!   readiness probes and 404 look-ups never queue behind checkpoints. A read sees every write
//!   that was answered before it started. An in-memory database has no second connection: there
//!   reads share the write connection.
//! - [`SqliteShared::run`] takes the write connection to itself between batches, for work that
//!   needs its own transaction (schema changes, a caller's own `BEGIN`).
//! - No SQLite call runs on a runtime worker.
//!
//! Durability: the write connection keeps SQLite's default `synchronous` (`FULL` in WAL mode: the
//! WAL is synced at every commit), so an answered write is on disk; group commit is what makes
//! that affordable at thousands of streams (docs/server.md, "The store").

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::oneshot;

use crate::error::PlaneError;
use crate::group_commit::{GroupQueue, Leading, MAX_BATCH};
use twoplane_runtime::lock;

/// A SQLite database shared by its users (see the module guarantees). Cheap to clone.
#[derive(Clone)]
pub struct SqliteShared {
    inner: Arc<Inner>,
}

struct Inner {
    writer: Mutex<Connection>,
    reader: Option<Mutex<Connection>>,
    group: Arc<GroupQueue<Box<dyn Job>>>,
}

/// One write of a batch: run in its savepoint, then answered once the batch's fate is known.
trait Job: Send {
    /// Run the write; `false` when it failed or refused (its savepoint is rolled back).
    fn run(&mut self, conn: &Connection) -> bool;
    /// Answer the caller: the write's own outcome when the batch committed, else `failure`.
    fn answer(self: Box<Self>, failure: Option<&PlaneError>);
}

struct Call<R, F> {
    f: Option<F>,
    out: Option<Result<R, PlaneError>>,
    reply: oneshot::Sender<Result<R, PlaneError>>,
}

impl<R, F> Job for Call<R, F>
where
    R: Send + 'static,
    F: FnOnce(&Connection) -> Result<R, PlaneError> + Send + 'static,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let Some(f) = self.f.take() else { return false };
        let out = f(conn);
        let ok = out.is_ok();
        self.out = Some(out);
        ok
    }

    fn answer(self: Box<Self>, failure: Option<&PlaneError>) {
        let out = match (failure, self.out) {
            (Some(err), _) => Err(err.clone()),
            (None, Some(out)) => out,
            (None, None) => Err(PlaneError::store("sqlite: the write was not run")),
        };
        // A caller that stopped waiting (a seal superseded its checkpoint) wants no answer.
        let _ = self.reply.send(out);
    }
}

fn sqlite_err(context: &str) -> impl FnOnce(rusqlite::Error) -> PlaneError + '_ {
    move |e| PlaneError::store(format!("sqlite: {context}")).with_source(e)
}

impl SqliteShared {
    /// Share `conn` (the write connection); a second, read-only connection to the same file is
    /// opened for reads when `conn` is a file database.
    pub fn new(conn: Connection) -> SqliteShared {
        let reader = conn.path().filter(|path| !path.is_empty()).and_then(|path| {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
            match Connection::open_with_flags(path, flags) {
                Ok(reader) => {
                    let _ = reader.busy_timeout(Duration::from_secs(5));
                    Some(Mutex::new(reader))
                }
                Err(e) => {
                    tracing::warn!(error = %e, "sqlite: no read connection; reads share the write connection");
                    None
                }
            }
        });
        SqliteShared { inner: Arc::new(Inner { writer: Mutex::new(conn), reader, group: Arc::new(GroupQueue::new()) }) }
    }

    /// Run `f` with the write connection to itself, between batches, on tokio's blocking pool.
    pub async fn run<R, F>(&self, f: F) -> Result<R, PlaneError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, PlaneError> + Send + 'static,
    {
        let inner = self.inner.clone();
        blocking(move || f(&mut lock(&inner.writer))).await?
    }

    /// Run the read `f` on the read connection (see the module guarantees).
    pub async fn read<R, F>(&self, f: F) -> Result<R, PlaneError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, PlaneError> + Send + 'static,
    {
        let inner = self.inner.clone();
        blocking(move || match &inner.reader {
            Some(reader) => f(&mut lock(reader)),
            None => f(&mut lock(&inner.writer)),
        })
        .await?
    }

    /// Run the write `f` in the next group-committed transaction; answered once it committed
    /// (see the module guarantees). `f` runs inside the batch's transaction: it must not begin
    /// or end one (a savepoint of its own is fine).
    pub async fn write<R, F>(&self, f: F) -> Result<R, PlaneError>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, PlaneError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Box<dyn Job> = Box::new(Call { f: Some(f), out: None, reply });
        if let Some(leading) = self.inner.group.push(job) {
            let inner = self.inner.clone();
            // Not awaited: the leader serves every caller, including ones that stop waiting.
            tokio::task::spawn_blocking(move || lead(&inner, leading));
        }
        answer.await.map_err(|_| PlaneError::store("sqlite: the writer stopped before answering"))?
    }
}

async fn blocking<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> Result<R, PlaneError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| PlaneError::store("sqlite: the blocking task failed").with_source(e))
}

/// The leader: one transaction per batch until the queue is empty.
fn lead(inner: &Inner, mut leading: Leading<Box<dyn Job>>) {
    loop {
        if let Some(wait) = leading.wait() {
            std::thread::sleep(wait);
        }
        let Some(batch) = leading.take(MAX_BATCH) else { break };
        let conn = lock(&inner.writer);
        let rest = commit_batch(&conn, batch);
        if !rest.is_empty() {
            leading.put_back(rest);
        }
    }
}

/// One transaction over `batch`; returns the writes it did not get to (the transaction ended
/// under them), which go to the next one.
fn commit_batch(conn: &Connection, batch: Vec<Box<dyn Job>>) -> Vec<Box<dyn Job>> {
    metrics::histogram!("twoplane_group_commit_writes").record(batch.len() as f64);
    if !conn.is_autocommit() {
        // A transaction left open (a write that panicked under the last leader) would make
        // every batch after it fail to begin.
        let _ = execute(conn, "ROLLBACK");
    }
    if let Err(e) = execute(conn, "BEGIN IMMEDIATE") {
        let err = sqlite_err("starting a group commit")(e);
        for job in batch {
            job.answer(Some(&err));
        }
        return Vec::new();
    }
    let mut ran: Vec<Box<dyn Job>> = Vec::with_capacity(batch.len());
    let mut pending = batch.into_iter();
    while let Some(mut job) = pending.next() {
        let step = execute(conn, "SAVEPOINT twoplane_write").and_then(|_| {
            if !job.run(conn) && !conn.is_autocommit() {
                execute(conn, "ROLLBACK TO twoplane_write")?;
            }
            if conn.is_autocommit() {
                // SQLite rolled the whole transaction back under this write (some I/O and
                // out-of-memory errors do): nothing of it holds.
                return Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
                    Some("the transaction was rolled back under a write".into()),
                ));
            }
            execute(conn, "RELEASE twoplane_write")
        });
        ran.push(job);
        if let Err(e) = step {
            let err = sqlite_err("a group commit")(e);
            abandon(conn, ran, &err);
            return pending.collect();
        }
    }
    match execute(conn, "COMMIT") {
        Ok(()) => {
            for job in ran {
                job.answer(None);
            }
        }
        Err(e) => {
            let err = sqlite_err("committing a group commit")(e);
            abandon(conn, ran, &err);
        }
    }
    Vec::new()
}

/// Roll back what is left of the transaction and answer every write it held with `err`.
fn abandon(conn: &Connection, ran: Vec<Box<dyn Job>>, err: &PlaneError) {
    if !conn.is_autocommit() {
        if let Err(e) = execute(conn, "ROLLBACK") {
            tracing::warn!(error = %e, "sqlite: rolling back a failed group commit failed");
        }
    }
    for job in ran {
        job.answer(Some(err));
    }
}

fn execute(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}
