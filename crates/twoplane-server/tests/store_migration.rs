//! The server's store opened on every older shape of its tables, on SQLite and on PostgreSQL
//! (when `TWOPLANE_PG_URL` is set; under the test command it is, and a missing server fails
//! there instead of skipping):
//! - from empty and from each shape the tables ever had, the catalog then holds exactly what the
//!   core's description says (`twoplane_server::store::schema`: every column's type, nullability,
//!   default and key, every index), and opening again changes nothing;
//! - from before messages had parts (docs/contract.md §6, "Parts columns"): every existing row
//!   reads exactly as before (a finished text, and an interrupted one whose text is body plus
//!   chunk rows), and a message with parts then streams and seals on the same tables.

use std::sync::Arc;

use twoplane_core::message::Event;
use twoplane_core::sql::Dialect;
use twoplane_server::store::{messages, schema, Database};
use twoplane_stream::{read_catalog, AllowAll, Plane, PlaneOptions};

mod common;

/// The schema `twoplane serve` created before parts (and before `host` and `cancel`), with a
/// finished text `done` and an interrupted text `cut` (body empty, two chunk rows).
const OLD_SQLITE: &str = r#"
CREATE TABLE "messages" (id TEXT PRIMARY KEY, role TEXT, body TEXT NOT NULL DEFAULT '', status TEXT, seq INTEGER NOT NULL DEFAULT 0);
CREATE TABLE "message_chunks" ("id" TEXT PRIMARY KEY, "streamId" TEXT NOT NULL, "seq" INTEGER NOT NULL, "text" TEXT NOT NULL);
INSERT INTO messages VALUES ('done', 'assistant', 'hello world', 'complete', 11);
INSERT INTO messages VALUES ('cut', 'assistant', '', 'interrupted', 6);
INSERT INTO messages VALUES ('next', 'assistant', '', NULL, 0);
INSERT INTO message_chunks VALUES ('cut:3', 'cut', 3, 'abc'), ('cut:6', 'cut', 6, 'déf');
"#;

const OLD_POSTGRES: &str = r#"
CREATE TABLE "messages" (position bigserial, id text PRIMARY KEY, role text, body text NOT NULL DEFAULT '', status text, seq bigint NOT NULL DEFAULT 0, host text, cancel boolean NOT NULL DEFAULT false);
CREATE TABLE "message_chunks" ("id" text PRIMARY KEY, "streamId" text NOT NULL, "seq" bigint NOT NULL, "text" text NOT NULL);
INSERT INTO messages (id, role, body, status, seq) VALUES ('done', 'assistant', 'hello world', 'complete', 11);
INSERT INTO messages (id, role, body, status, seq) VALUES ('cut', 'assistant', '', 'interrupted', 6);
INSERT INTO messages (id, role, body, status, seq) VALUES ('next', 'assistant', '', NULL, 0);
INSERT INTO message_chunks VALUES ('cut:3', 'cut', 3, 'abc'), ('cut:6', 'cut', 6, 'déf');
"#;

/// The chunk table as the plane first created it (before parts), with its index.
const OLD_CHUNKS_SQLITE: &str = r#"
CREATE TABLE "message_chunks" ("id" TEXT PRIMARY KEY, "streamId" TEXT NOT NULL, "seq" INTEGER NOT NULL, "text" TEXT NOT NULL);
CREATE INDEX "message_chunks_stream_seq" ON "message_chunks" ("streamId", "seq");
"#;
const OLD_CHUNKS_POSTGRES: &str = r#"
CREATE TABLE "message_chunks" ("id" text PRIMARY KEY, "streamId" text NOT NULL, "seq" bigint NOT NULL, "text" text NOT NULL);
CREATE INDEX "message_chunks_stream_seq" ON "message_chunks" ("streamId", "seq");
"#;

/// Every shape the message table had on SQLite, oldest first, as `twoplane serve` created it
/// (the first one had no chunk table yet when no message had streamed; the later ones have the
/// chunk table from before parts). The last column added is the newest migration.
const SQLITE_SHAPES: [(&str, &str, bool); 4] = [
    ("from empty", "", false),
    (
        "the first shape",
        "CREATE TABLE messages (id TEXT PRIMARY KEY, role TEXT, body TEXT NOT NULL DEFAULT '', status TEXT, seq INTEGER NOT NULL DEFAULT 0);",
        false,
    ),
    (
        "with host",
        "CREATE TABLE messages (id TEXT PRIMARY KEY, role TEXT, body TEXT NOT NULL DEFAULT '', status TEXT, seq INTEGER NOT NULL DEFAULT 0, \"host\" TEXT);",
        true,
    ),
    (
        "with host and cancel",
        "CREATE TABLE messages (id TEXT PRIMARY KEY, role TEXT, body TEXT NOT NULL DEFAULT '', status TEXT, seq INTEGER NOT NULL DEFAULT 0, \"host\" TEXT, \"cancel\" INTEGER NOT NULL DEFAULT 0);",
        true,
    ),
];

/// The same on PostgreSQL, whose message table has a `position` from the start.
const POSTGRES_SHAPES: [(&str, &str, bool); 4] = [
    ("from empty", "", false),
    (
        "the first shape",
        "CREATE TABLE messages (position bigserial, id text PRIMARY KEY, role text, body text NOT NULL DEFAULT '', status text, seq bigint NOT NULL DEFAULT 0);",
        true,
    ),
    (
        "with host",
        "CREATE TABLE messages (position bigserial, id text PRIMARY KEY, role text, body text NOT NULL DEFAULT '', status text, seq bigint NOT NULL DEFAULT 0, host text);",
        true,
    ),
    (
        "with host and cancel",
        "CREATE TABLE messages (position bigserial, id text PRIMARY KEY, role text, body text NOT NULL DEFAULT '', status text, seq bigint NOT NULL DEFAULT 0, host text, cancel boolean NOT NULL DEFAULT false);",
        true,
    ),
];

/// The store's catalog is the description, table by table; `case` names the shape it came from.
async fn assert_described(db: &Database, dialect: Dialect, case: &str) {
    for shape in schema(dialect).unwrap() {
        let (columns, indexes) = read_catalog(db.executor(), &shape).await.unwrap();
        assert_eq!(columns, shape.expected_columns(), "{case}: the columns of {}", shape.name());
        assert_eq!(indexes, shape.expected_indexes(), "{case}: the indexes of {}", shape.name());
    }
}

#[tokio::test]
async fn every_sqlite_shape_becomes_the_description() {
    let dir = tempfile::tempdir().unwrap();
    for (n, (case, ddl, with_chunks)) in SQLITE_SHAPES.into_iter().enumerate() {
        let path = dir.path().join(format!("shape{n}.db"));
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(ddl).unwrap();
        if with_chunks {
            conn.execute_batch(OLD_CHUNKS_SQLITE).unwrap();
        }
        drop(conn);
        for again in ["", ", opened again"] {
            let db = Database::open_sqlite(&path, n % 2 == 0).await.unwrap();
            assert_described(&db, Dialect::Sqlite, &format!("{case}{again}")).await;
        }
    }
}

#[tokio::test]
async fn every_postgres_shape_becomes_the_description() {
    let Ok(url) = std::env::var("TWOPLANE_PG_URL") else {
        assert!(std::env::var("TWOPLANE_REQUIRE_SERVICES").is_err(), "TWOPLANE_PG_URL is required here");
        eprintln!("skipped: no PostgreSQL (set TWOPLANE_PG_URL)");
        return;
    };
    for (n, (case, ddl, with_chunks)) in POSTGRES_SHAPES.into_iter().enumerate() {
        // One prefix per shape: a database's creation drops the earlier ones of its prefix.
        let pg = common::cluster::Database::create(&url, &format!("twoplane_shape{n}"), "pg", n as u64).await;
        let client = common::cluster::pg(&pg.url).await;
        client.batch_execute(ddl).await.unwrap();
        if with_chunks {
            client.batch_execute(OLD_CHUNKS_POSTGRES).await.unwrap();
        }
        let endpoint = twoplane_stream::PgEndpoint::parse(&pg.url, None).unwrap();
        for again in ["", ", opened again"] {
            let db = Database::open_postgres(&endpoint, 2).await.unwrap();
            assert_described(&db, Dialect::Postgres, &format!("{case}{again}")).await;
        }
        drop(client);
        pg.drop_it().await;
    }
}

/// What every store must show after the upgrade, and a message with parts on it.
async fn check_upgraded(db: Database) {
    let all = messages::all(&db).await.unwrap();
    let view = |id: &str| all.iter().find(|m| m.id == id).unwrap().clone();
    assert_eq!((view("done").body.as_str(), view("done").seq, view("done").document), ("hello world", 11, None));
    assert_eq!((view("cut").body.as_str(), view("cut").seq, view("cut").rows), ("abcdéf", 6, None));

    let plane = Plane::new(PlaneOptions::default().with_authorizer(Arc::new(AllowAll)), db.target()).unwrap();
    let h = plane.open("next").await.unwrap();
    let r = h.start_part("reasoning", Vec::new()).unwrap();
    h.push_part(r, "hm").unwrap();
    h.event(Event::End { part: r, value: Vec::new() }).unwrap();
    h.push("answer").unwrap();
    h.flush().await.unwrap();
    let live = messages::one(&db, "next").await.unwrap().unwrap();
    let rows = live.rows.expect("a message with parts is viewed with its rows");
    assert!(rows.chunks.iter().any(|c| c.parts.is_some()), "a parts row: {rows:?}");
    h.close().await.unwrap();
    let sealed = messages::one(&db, "next").await.unwrap().unwrap();
    assert_eq!(
        sealed.document.as_deref(),
        Some(r#"{"parts":[{"type":"text","text":"answer"},{"type":"reasoning","text":"hm"}]}"#)
    );
    assert_eq!((sealed.body.as_str(), sealed.seq, sealed.rows.unwrap().chunks.len()), ("answer", 10, 0));
}

#[tokio::test]
async fn old_sqlite_tables_gain_the_parts_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    rusqlite::Connection::open(&path).unwrap().execute_batch(OLD_SQLITE).unwrap();
    let db = Database::open(&path).await.unwrap();
    assert_described(&db, Dialect::Sqlite, "before parts, with rows").await;
    check_upgraded(db).await;
    // Opening again finds the columns there and changes nothing.
    let db = Database::open(&path).await.unwrap();
    assert_eq!(messages::one(&db, "done").await.unwrap().unwrap().body, "hello world");
}

#[tokio::test]
async fn old_postgres_tables_gain_the_parts_columns() {
    let Ok(url) = std::env::var("TWOPLANE_PG_URL") else {
        assert!(std::env::var("TWOPLANE_REQUIRE_SERVICES").is_err(), "TWOPLANE_PG_URL is required here");
        eprintln!("skipped: no PostgreSQL (set TWOPLANE_PG_URL)");
        return;
    };
    let seed = std::process::id() as u64;
    let pg = common::cluster::Database::create(&url, "twoplane_migration", "parts", seed).await;
    let client = common::cluster::pg(&pg.url).await;
    client.batch_execute(OLD_POSTGRES).await.unwrap();
    let endpoint = twoplane_stream::PgEndpoint::parse(&pg.url, None).unwrap();
    let db = Database::open_postgres(&endpoint, 2).await.unwrap();
    assert_described(&db, Dialect::Postgres, "before parts, with rows").await;
    check_upgraded(db).await;
    drop(client);
    pg.drop_it().await;
}
