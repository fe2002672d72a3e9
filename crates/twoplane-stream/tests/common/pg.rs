//! The PostgreSQL fixture shared by the integration tests: a client on `TWOPLANE_PG_URL`
//! (scripts/pg.sh starts a server on loopback; without the variable a test says it was skipped
//! and passes), and the reads and targets every PostgreSQL scenario needs.

use std::sync::Arc;

use tokio_postgres::{Client, NoTls};
use twoplane_stream::{DurableTarget, PostgresTarget, StreamTables};

/// The server's URL and a connected client, or `None` (and a note) when no server is configured.
pub async fn connect() -> Option<(String, Client)> {
    let Ok(url) = std::env::var("TWOPLANE_PG_URL") else {
        eprintln!("skipped: TWOPLANE_PG_URL not set");
        return None;
    };
    let (client, connection) = tokio_postgres::connect(&url, NoTls).await.expect("connect to TWOPLANE_PG_URL");
    tokio::spawn(connection);
    Some((url, client))
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
