//! The SQL scenarios against a real SQLite database file in WAL mode.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::sql::{self, Db, DbRow, Dialect};
use common::sqlite_file::SqliteFile;
use rusqlite::OptionalExtension;
use twoplane_stream::{DurableTarget, Executor, SqliteShared, StreamTables};

/// A temp database file; the test reads it through its own connection (WAL lets it read while
/// the plane writes).
struct Sqlite {
    file: SqliteFile,
}

impl Sqlite {
    fn new(name: &str) -> Sqlite {
        Sqlite { file: SqliteFile::new(name) }
    }
}

#[async_trait]
impl Db for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    async fn exec(&self, sql: &str) {
        self.file.conn.lock().unwrap().execute(sql, []).unwrap();
    }

    async fn message(&self, table: &str, id: &str) -> Option<DbRow> {
        let conn = self.file.conn.lock().unwrap();
        conn.query_row(
            &format!("SELECT body, seq, status, cancel, error, host FROM \"{table}\" WHERE id = ?1"),
            [id],
            |r| {
                Ok(DbRow {
                    body: r.get(0)?,
                    seq: r.get(1)?,
                    status: r.get(2)?,
                    cancel: r.get::<_, i64>(3)? != 0,
                    error: r.get(4)?,
                    host: r.get(5)?,
                })
            },
        )
        .optional()
        .unwrap()
    }

    async fn chunks(&self, table: &str, id: &str) -> Vec<(i64, String)> {
        self.file.chunks(table, id)
    }

    async fn target(&self, tables: &StreamTables) -> Arc<dyn DurableTarget> {
        self.file.target(tables).await
    }

    fn executor(&self) -> Executor {
        Executor::Sqlite(SqliteShared::new(rusqlite::Connection::open(&self.file.path).unwrap()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_lifecycle_in_wal_mode() {
    let db = Sqlite::new("lifecycle");
    sql::lifecycle(&db).await;
    let mode: String = db.file.conn.lock().unwrap().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_faults() {
    sql::faults(&Sqlite::new("faults")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_open_rules() {
    sql::open_rules(&Sqlite::new("open")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_cancel_and_fail() {
    sql::cancel_and_fail(&Sqlite::new("cancel")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_lone_surrogate_is_refused() {
    sql::lone_surrogate_is_refused(&Sqlite::new("surrogate")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_schema_matches_the_description() {
    sql::schema_matches_the_description(&Sqlite::new("schema")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_goes_on() {
    sql::goes_on(&Sqlite::new("goes-on")).await;
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// Group commit with a failure anywhere in a batch loses nothing acknowledged and duplicates
    /// nothing (`sql::group_commit_faults`).
    #[test]
    fn sqlite_group_commit_survives_a_fault_anywhere(case in sql::group_cases()) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(sql::group_commit_faults(&Sqlite::new("group"), &case));
    }
}

/// `SqliteShared`'s reads run beside its writer (WAL, a connection of their own): a read answers
/// while a group commit's transaction is open, seeing what was committed before it, and a write
/// commits while a read's transaction is open. Reads that shared the write connection would wait
/// out the transaction (the many-streams test in the server cannot tell: a batch holds the
/// connection for milliseconds).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_reads_and_the_group_committed_writer_do_not_wait_for_each_other() {
    use std::sync::mpsc;
    use std::time::Duration;
    use twoplane_stream::PlaneError;

    fn err(e: rusqlite::Error) -> PlaneError {
        PlaneError::store("test").with_source(e)
    }
    fn value(conn: &rusqlite::Connection) -> Result<i64, PlaneError> {
        conn.query_row("SELECT v FROM t", [], |r| r.get(0)).map_err(err)
    }
    /// What `rx` says within 5 s, or None (the other side never got there).
    async fn within(rx: mpsc::Receiver<()>) -> Option<()> {
        tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(5)).ok()).await.unwrap()
    }

    let file = SqliteFile::new("beside");
    file.conn.lock().unwrap().pragma_update(None, "journal_mode", "WAL").unwrap();
    let db = SqliteShared::new(rusqlite::Connection::open(&file.path).unwrap());
    db.write(|conn| conn.execute_batch("CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1);").map_err(err))
        .await
        .unwrap();

    // A write that holds its batch's transaction open until told to finish.
    let (entered, in_write) = mpsc::channel();
    let (finish_write, finish) = mpsc::channel::<()>();
    let write = tokio::spawn({
        let db = db.clone();
        async move {
            db.write(move |conn| {
                conn.execute("UPDATE t SET v = 2", []).map_err(err)?;
                let _ = entered.send(());
                let _ = finish.recv_timeout(Duration::from_secs(10));
                Ok(())
            })
            .await
        }
    });
    within(in_write).await.expect("the write began");
    let read = tokio::time::timeout(Duration::from_secs(5), db.read(|conn| value(conn))).await;
    finish_write.send(()).unwrap();
    assert_eq!(read.expect("a read waited for the open write").unwrap(), 1, "a read sees what was committed");
    write.await.unwrap().unwrap();
    assert_eq!(db.read(|conn| value(conn)).await.unwrap(), 2, "a read sees an answered write");

    // A read that holds its transaction open until told to finish.
    let (entered, in_read) = mpsc::channel();
    let (finish_read, finish) = mpsc::channel::<()>();
    let read = tokio::spawn({
        let db = db.clone();
        async move {
            db.read(move |conn| {
                let tx = conn.transaction().map_err(err)?;
                let v = value(&tx)?;
                let _ = entered.send(());
                let _ = finish.recv_timeout(Duration::from_secs(10));
                let again = value(&tx)?;
                tx.commit().map_err(err)?;
                Ok((v, again))
            })
            .await
        }
    });
    within(in_read).await.expect("the read began");
    let write = tokio::time::timeout(
        Duration::from_secs(5),
        db.write(|conn| conn.execute("UPDATE t SET v = 3", []).map_err(err)),
    )
    .await;
    finish_read.send(()).unwrap();
    assert_eq!(write.expect("a write waited for the open read").unwrap(), 1);
    assert_eq!(read.await.unwrap().unwrap(), (2, 2), "a read's transaction sees one snapshot");
    assert_eq!(db.read(|conn| value(conn)).await.unwrap(), 3);
}
