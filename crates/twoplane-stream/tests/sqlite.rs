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
