//! The PostgreSQL fixture shared by the integration tests: a client on `TWOPLANE_PG_URL`
//! (scripts/pg.sh starts a server on loopback), and the reads and targets every PostgreSQL
//! scenario needs. Without the variable (or with it empty) a test says it was skipped and
//! passes, unless `TWOPLANE_REQUIRE_SERVICES=1` (the test command, scripts/test.sh, exports it):
//! then it fails, so a broken service setup never passes as a green run.

use std::sync::Arc;

use tokio_postgres::{Client, NoTls};
use twoplane_stream::{DurableTarget, PostgresTarget, StreamTables};

/// The server's URL and a connected client, or `None` (and a note) when no server is configured
/// and services are not required.
pub async fn connect() -> Option<(String, Client)> {
    let url = match std::env::var("TWOPLANE_PG_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            no_service("TWOPLANE_PG_URL is not set (scripts/pg.sh starts a server and prints it)");
            return None;
        }
    };
    let (client, connection) = tokio_postgres::connect(&url, NoTls).await.expect("connect to TWOPLANE_PG_URL");
    tokio::spawn(connection);
    Some((url, client))
}

/// A test's service is missing: a failure when `TWOPLANE_REQUIRE_SERVICES` is set (to anything
/// but empty or `0`), else a skip with a note on stderr.
pub fn no_service(why: &str) {
    match std::env::var("TWOPLANE_REQUIRE_SERVICES") {
        Ok(v) if !v.is_empty() && v != "0" => panic!("TWOPLANE_REQUIRE_SERVICES={v}, but {why}"),
        _ => eprintln!("skipped: {why}"),
    }
}

/// A stream's chunk rows, `(seq, text)` in `seq` order.
pub async fn chunks(client: &Client, table: &str, id: &str) -> Vec<(i64, String)> {
    client
        .query(&format!("SELECT seq, text FROM \"{table}\" WHERE \"streamId\" = $1 ORDER BY seq"), &[&id])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// A PostgreSQL target over `tables`, its chunk table created.
pub async fn target(url: &str, tables: &StreamTables) -> Arc<dyn DurableTarget> {
    let target = PostgresTarget::connect(url, tables).await.unwrap();
    target.create_chunk_table().await.unwrap();
    Arc::new(target)
}
