//! The SQL scenarios against a real PostgreSQL server. The server comes from
//! `TWOPLANE_PG_URL` (scripts/test-plane.sh starts one on loopback and sets it); without it
//! each test says it was skipped and passes, or fails under `TWOPLANE_REQUIRE_SERVICES=1`.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::sql::{self, Db, DbRow, Dialect};
use tokio_postgres::Client;
use twoplane_stream::{DurableTarget, Executor, PgClient, PostgresTarget, StreamTables};

struct Postgres {
    url: String,
    client: Client,
}

async fn connect() -> Option<Postgres> {
    let (url, client) = common::pg::connect().await?;
    Some(Postgres { url, client })
}

#[async_trait]
impl Db for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    async fn exec(&self, sql: &str) {
        self.client.batch_execute(sql).await.unwrap();
    }

    async fn message(&self, table: &str, id: &str) -> Option<DbRow> {
        let row = self
            .client
            .query_opt(&format!("SELECT body, seq, status, cancel, error, host FROM \"{table}\" WHERE id = $1"), &[&id])
            .await
            .unwrap()?;
        Some(DbRow {
            body: row.get(0),
            seq: i64::from(row.get::<_, i32>(1)),
            status: row.get(2),
            cancel: row.get(3),
            error: row.get(4),
            host: row.get(5),
        })
    }

    async fn chunks(&self, table: &str, id: &str) -> Vec<(i64, String)> {
        common::pg::chunks(&self.client, table, id).await
    }

    async fn target(&self, tables: &StreamTables) -> Arc<dyn DurableTarget> {
        common::pg::target(&self.url, tables).await
    }

    fn executor(&self) -> Executor {
        Executor::Postgres(Box::new(PgClient::new(&self.url, "catalog")))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_lifecycle() {
    let Some(db) = connect().await else { return };
    sql::lifecycle(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_faults() {
    let Some(db) = connect().await else { return };
    sql::faults(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_open_rules() {
    let Some(db) = connect().await else { return };
    sql::open_rules(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_cancel_and_fail() {
    let Some(db) = connect().await else { return };
    sql::cancel_and_fail(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_lone_surrogate_is_refused() {
    let Some(db) = connect().await else { return };
    sql::lone_surrogate_is_refused(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_schema_matches_the_description() {
    let Some(db) = connect().await else { return };
    sql::schema_matches_the_description(&db).await;
}

/// A server-side kill of the target's connection costs one failed attempt; the retry reconnects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_reconnects_after_losing_its_connection() {
    let Some(db) = connect().await else { return };
    let t = sql::Tables::create(&db, false).await;
    t.insert(&db, "r1").await;
    let app = format!("twoplane_reconnect_{}", std::process::id());
    let sep = if db.url.contains('?') { '&' } else { '?' };
    let target = PostgresTarget::connect(&format!("{}{sep}application_name={app}", db.url), &t.tables).await.unwrap();
    target.create_chunk_table().await.unwrap();
    let plane = common::plane_with(Arc::new(target), |o| {
        o.chars = 1_000_000;
        o.retry_backoff_ms = 10;
    });
    let h = plane.open("r1").await.unwrap();
    h.push("before ").unwrap();
    assert_eq!(h.flush().await.unwrap(), 7);
    db.exec(&format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{app}'")).await;
    h.push("after").unwrap();
    assert_eq!(h.flush().await.unwrap(), 12, "the retry reconnected");
    h.close().await.unwrap();
    assert_eq!(db.message(t.message(), "r1").await.unwrap().body, "before after");
    t.drop_all(&db).await;
}

/// Instances that start together all create the chunk table at once; every one must succeed
/// (PostgreSQL's CREATE TABLE IF NOT EXISTS alone is not safe against a concurrent twin).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_concurrent_chunk_table_creation() {
    let Some(db) = connect().await else { return };
    for round in 0..5 {
        let name = format!("twoplane_race_{}_{round}", std::process::id());
        let tables =
            StreamTables { message: format!("{name}_m"), chunks: format!("{name}_c"), columns: Default::default() };
        let mut targets = Vec::new();
        for _ in 0..6 {
            targets.push(PostgresTarget::connect(&db.url, &tables).await.unwrap());
        }
        let results = futures::future::join_all(targets.iter().map(|t| t.create_chunk_table())).await;
        for r in results {
            r.expect("every concurrent creator succeeds");
        }
        db.exec(&format!("DROP TABLE IF EXISTS \"{name}_c\"")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_goes_on() {
    let Some(db) = connect().await else { return };
    sql::goes_on(&db).await;
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 16, ..Default::default() })]

    /// Group commit with a failure anywhere in a batch (a statement, or the commit itself) loses
    /// nothing acknowledged and duplicates nothing (`sql::group_commit_faults`).
    #[test]
    fn postgres_group_commit_survives_a_fault_anywhere(case in sql::group_cases()) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async {
            let Some(db) = connect().await else { return };
            sql::group_commit_faults(&db, &case).await;
        });
    }
}
