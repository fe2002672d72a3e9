//! The SQL scenarios against a real SQLite database file in WAL mode.

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::sql::{self, Db, DbRow, Dialect};
use rusqlite::{Connection, OptionalExtension};
use twoplane_stream::{DurableTarget, SqliteTarget, StreamTables};

/// A temp database file; the test reads it through its own connection (WAL lets it read while
/// the plane writes).
struct Sqlite {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl Sqlite {
    fn new(name: &str) -> Sqlite {
        let path = std::env::temp_dir().join(format!("twoplane-{name}-{}.db", std::process::id()));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        let conn = Connection::open(&path).unwrap();
        Sqlite { path, conn: Mutex::new(conn) }
    }
}

impl Drop for Sqlite {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.path.display()));
        }
    }
}

#[async_trait]
impl Db for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    async fn exec(&self, sql: &str) {
        self.conn.lock().unwrap().execute(sql, []).unwrap();
    }

    async fn message(&self, table: &str, id: &str) -> Option<DbRow> {
        let conn = self.conn.lock().unwrap();
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
        let conn = self.conn.lock().unwrap();
        let mut stmt =
            conn.prepare(&format!("SELECT seq, text FROM \"{table}\" WHERE \"streamId\" = ?1 ORDER BY seq")).unwrap();
        stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
    }

    async fn target(&self, tables: &StreamTables) -> Arc<dyn DurableTarget> {
        let target = SqliteTarget::open(&self.path, tables).unwrap();
        target.create_chunk_table().await.unwrap();
        Arc::new(target)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_lifecycle_in_wal_mode() {
    let db = Sqlite::new("lifecycle");
    sql::lifecycle(&db).await;
    let mode: String = db.conn.lock().unwrap().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
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
