//! The host lease and the sweeper against real databases: a SQLite file always, and PostgreSQL
//! when `TWOPLANE_PG_URL` is set (scripts/test-plane.sh and scripts/test-redis.sh start one on
//! loopback; without it the PostgreSQL test says it was skipped and passes, or fails under
//! `TWOPLANE_REQUIRE_SERVICES=1`).
//!
//! The scenario: real planes produce into a shared message table under three host ids. One host
//! "dies" (its handle is abandoned without a seal and its lease is left to expire), one stays
//! alive, and one row names a host that never took a lease. The sweep must release exactly the
//! dead host's streaming row, leave its text where the store keeps it (body plus chunks give the
//! durable prefix), and touch nothing else.
//!
//! Fencing: a producer whose lease lapsed while it still runs has its row swept under it; every
//! later write it makes (checkpoint, chunk, seal) must be refused by the database, the producer
//! must stop with `fenced` and end its readers with `stale`, and the row must keep exactly what it
//! held at the sweep, including when the sweep races checkpoints in flight. Host-less rows are
//! released only when configured, and only after their grace period by the database's clock.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::sqlite_file::SqliteFile;
use common::{plane_with, Reader};
use rusqlite::OptionalExtension;
use twoplane_core::splice::{assemble_durable_text, ChunkRow};
use twoplane_core::Text;
use twoplane_stream::*;
// Every frame the plane hands out is a message frame (docs/contract.md §8).
use twoplane_stream::MessageFrame as Frame;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    body: String,
    seq: i64,
    status: Option<String>,
    host: Option<String>,
}

#[async_trait]
trait Db: Send + Sync {
    fn int_type(&self) -> &'static str;
    async fn exec(&self, sql: &str);
    async fn row(&self, table: &str, id: &str) -> Row;
    async fn chunks(&self, table: &str, id: &str) -> Vec<(i64, String)>;
    async fn target(&self, tables: &StreamTables) -> Arc<dyn DurableTarget>;
    async fn sweeper(&self, tables: &StreamTables, options: SweeperOptions) -> Sweeper;
}

// ---------------------------------------------------------------- SQLite

struct Sqlite {
    file: SqliteFile,
}

impl Sqlite {
    fn new() -> Sqlite {
        let file = SqliteFile::new("sweeper");
        file.conn.lock().unwrap().pragma_update(None, "journal_mode", "WAL").unwrap();
        Sqlite { file }
    }
}

#[async_trait]
impl Db for Sqlite {
    fn int_type(&self) -> &'static str {
        "INTEGER"
    }

    async fn exec(&self, sql: &str) {
        self.file.conn.lock().unwrap().execute_batch(sql).unwrap();
    }

    async fn row(&self, table: &str, id: &str) -> Row {
        let conn = self.file.conn.lock().unwrap();
        conn.query_row(&format!("SELECT body, seq, status, host FROM \"{table}\" WHERE id = ?1"), [id], |r| {
            Ok(Row { body: r.get(0)?, seq: r.get(1)?, status: r.get(2)?, host: r.get(3)? })
        })
        .optional()
        .unwrap()
        .expect("row exists")
    }

    async fn chunks(&self, table: &str, id: &str) -> Vec<(i64, String)> {
        self.file.chunks(table, id)
    }

    async fn target(&self, tables: &StreamTables) -> Arc<dyn DurableTarget> {
        self.file.target(tables).await
    }

    async fn sweeper(&self, tables: &StreamTables, options: SweeperOptions) -> Sweeper {
        Sweeper::sqlite(&self.file.path, tables, options).unwrap()
    }
}

// ---------------------------------------------------------------- PostgreSQL

struct Postgres {
    url: String,
    client: tokio_postgres::Client,
}

async fn postgres() -> Option<Postgres> {
    let (url, client) = common::pg::connect().await?;
    Some(Postgres { url, client })
}

#[async_trait]
impl Db for Postgres {
    fn int_type(&self) -> &'static str {
        "integer"
    }

    async fn exec(&self, sql: &str) {
        self.client.batch_execute(sql).await.unwrap();
    }

    async fn row(&self, table: &str, id: &str) -> Row {
        let r = self
            .client
            .query_one(&format!("SELECT body, seq, status, host FROM \"{table}\" WHERE id = $1"), &[&id])
            .await
            .unwrap();
        Row { body: r.get(0), seq: i64::from(r.get::<_, i32>(1)), status: r.get(2), host: r.get(3) }
    }

    async fn chunks(&self, table: &str, id: &str) -> Vec<(i64, String)> {
        common::pg::chunks(&self.client, table, id).await
    }

    async fn target(&self, tables: &StreamTables) -> Arc<dyn DurableTarget> {
        common::pg::target(&self.url, tables).await
    }

    async fn sweeper(&self, tables: &StreamTables, options: SweeperOptions) -> Sweeper {
        Sweeper::postgres(&self.url, tables, options).await.unwrap()
    }
}

// ---------------------------------------------------------------- the scenario

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// One scenario at a time: they judge leases of a few hundred milliseconds, and on a loaded
/// machine a neighbour's burst of checkpoints can stretch one past its time to live.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Names {
    tables: StreamTables,
    lease: String,
    tag: String,
}

async fn create_tables(db: &dyn Db) -> Names {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let tag = format!("{}_{n}", std::process::id());
    let message = format!("swmsg_{tag}");
    let chunks = format!("{message}_chunks");
    db.exec(&format!(
        "CREATE TABLE \"{message}\" (id TEXT PRIMARY KEY, body TEXT NOT NULL DEFAULT '', status TEXT, \
         seq {} NOT NULL DEFAULT 0, host TEXT)",
        db.int_type()
    ))
    .await;
    let columns = StreamColumns { host: Some("host".into()), ..StreamColumns::default() };
    Names { tables: StreamTables { message, chunks, columns }, lease: format!("swlease_{tag}"), tag }
}

async fn insert(db: &dyn Db, names: &Names, id: &str) {
    db.exec(&format!("INSERT INTO \"{}\" (id) VALUES ('{id}')", names.tables.message)).await;
}

fn options(names: &Names, host: &str, ttl_ms: u64, interval_ms: u64) -> SweeperOptions {
    SweeperOptions { lease_table: names.lease.clone(), lease_ttl_ms: ttl_ms, interval_ms, ..SweeperOptions::new(host) }
}

/// No automatic checkpoints: the test decides what is durable with `flush`.
fn manual(host: &str) -> impl FnOnce(&mut PlaneOptions) + '_ {
    move |o| {
        o.chars = 1_000_000;
        o.interval_ms = 1_000_000;
        o.retry_backoff_ms = 5;
        o.host_id = Some(host.to_owned());
    }
}

async fn durable_text(db: &dyn Db, names: &Names, id: &str) -> String {
    let row = db.row(&names.tables.message, id).await;
    let chunks: Vec<ChunkRow> = db
        .chunks(&names.tables.chunks, id)
        .await
        .into_iter()
        .map(|(seq, text)| ChunkRow { seq: seq as u64, text: Some(Text::from(text.as_str())) })
        .collect();
    let body = Text::from(row.body.as_str());
    assemble_durable_text(Some(&body), &chunks).to_string_lossy()
}

async fn status(db: &dyn Db, names: &Names, id: &str) -> Option<String> {
    db.row(&names.tables.message, id).await.status
}

async fn scenario(db: &dyn Db) {
    let names = create_tables(db).await;
    let (dead, live, reused) =
        (format!("dead-{}", names.tag), format!("live-{}", names.tag), format!("reused-{}", names.tag));
    for id in ["d_live", "d_sealed", "l_live", "nobody", "leftover", "l_late"] {
        insert(db, &names, id).await;
    }

    // The dead host: one stream sealed while it lived, one abandoned mid-stream with part of its
    // text durable and part only produced.
    let dead_lease = db.sweeper(&names.tables, options(&names, &dead, 1_000, 100)).await;
    dead_lease.create_lease_table().await.unwrap();
    dead_lease.heartbeat().await.unwrap();
    let dead_plane = plane_with(db.target(&names.tables).await, manual(&dead));
    let sealed = dead_plane.open("d_sealed").await.unwrap();
    sealed.push("finished").unwrap();
    sealed.close().await.unwrap();
    let abandoned = dead_plane.open("d_live").await.unwrap();
    abandoned.push("hello ").unwrap();
    assert_eq!(abandoned.flush().await.unwrap(), 6);
    abandoned.push("wörld, never durable").unwrap();
    // A SIGKILL seals nothing: leak the handle so its drop cannot seal the stream either.
    std::mem::forget(abandoned);

    // The live host, with its sweeper started (its task ticks too rarely to act during this test:
    // the sweeps below are the test's own, so their results are deterministic). The dead host's
    // last renewals come just before the sweeps that must still find it alive, so a slow machine
    // cannot let its lease run out early.
    dead_lease.heartbeat().await.unwrap();
    let live_handle = db.sweeper(&names.tables, options(&names, &live, 60_000, 30_000)).await.start().await.unwrap();
    let live_plane = plane_with(db.target(&names.tables).await, manual(&live));
    let live_stream = live_plane.open("l_live").await.unwrap();
    live_stream.push("still ").unwrap();
    live_stream.flush().await.unwrap();

    // A row of a host that never took a lease.
    db.exec(&format!(
        "UPDATE \"{}\" SET status = 'streaming', host = 'nobody' WHERE id = 'nobody'",
        names.tables.message
    ))
    .await;

    // While the dead host's lease runs, nothing is released.
    dead_lease.heartbeat().await.unwrap();
    assert_eq!(live_handle.sweeper().sweep().await.unwrap(), Vec::<String>::new());
    assert_eq!(status(db, &names, "d_live").await.as_deref(), Some("streaming"));

    // Let it expire (judged by the database's clock), then sweep.
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    assert_eq!(live_handle.sweeper().sweep().await.unwrap(), vec!["d_live".to_string()]);
    let row = db.row(&names.tables.message, "d_live").await;
    assert_eq!(row.status.as_deref(), Some("interrupted"));
    assert_eq!(
        (row.seq, row.host.as_deref(), row.body.as_str()),
        (6, Some(dead.as_str()), ""),
        "only the status changed"
    );
    assert_eq!(durable_text(db, &names, "d_live").await, "hello ", "body plus chunks give the durable prefix");
    // Untouched: a sealed row of the dead host, the live host's row, the lease-less host's row.
    assert_eq!(status(db, &names, "d_sealed").await.as_deref(), Some("complete"));
    assert_eq!(db.row(&names.tables.message, "d_sealed").await.body, "finished");
    assert_eq!(status(db, &names, "l_live").await.as_deref(), Some("streaming"));
    assert_eq!(status(db, &names, "nobody").await.as_deref(), Some("streaming"));
    // A second sweep finds nothing new.
    assert_eq!(live_handle.sweeper().sweep().await.unwrap(), Vec::<String>::new());

    // The live host's stream goes on as if nothing happened.
    live_stream.push("here").unwrap();
    live_stream.close().await.unwrap();
    let row = db.row(&names.tables.message, "l_live").await;
    assert_eq!((row.status.as_deref(), row.body.as_str()), (Some("complete"), "still here"));

    // A process restarted under a host id that was in use releases what its predecessor left.
    db.exec(&format!(
        "UPDATE \"{}\" SET status = 'streaming', host = '{reused}' WHERE id = 'leftover'",
        names.tables.message
    ))
    .await;
    let reused_handle =
        db.sweeper(&names.tables, options(&names, &reused, 60_000, 30_000)).await.start().await.unwrap();
    assert_eq!(status(db, &names, "leftover").await.as_deref(), Some("interrupted"));

    // A clean stop that gives the lease up: whatever the host still held is released by the next
    // sweep anywhere, without waiting for the time to live.
    let late = live_plane.open("l_late").await.unwrap();
    late.push("cut").unwrap();
    std::mem::forget(late);
    live_handle.stop(true).await.unwrap();
    assert_eq!(reused_handle.sweeper().sweep().await.unwrap(), vec!["l_late".to_string()]);

    // Pruning forgets expired hosts with nothing streaming (the dead and the live host now); the
    // lease-less host was never in the table, and the running one keeps its lease.
    let pruner =
        db.sweeper(&names.tables, SweeperOptions { retention_ms: 0, ..options(&names, &reused, 1_500, 100) }).await;
    assert_eq!(pruner.prune().await.unwrap(), 2);
    assert_eq!(pruner.prune().await.unwrap(), 0);
    reused_handle.stop(true).await.unwrap();

    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.lease)).await;
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.tables.chunks)).await;
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.tables.message)).await;
}

/// The running task renews the lease on its own and sweeps on its own, and reports what it
/// released.
async fn background(db: &dyn Db) {
    let names = create_tables(db).await;
    let dead = format!("bgdead-{}", names.tag);
    insert(db, &names, "m").await;
    let dead_lease = db.sweeper(&names.tables, options(&names, &dead, 200, 100)).await;
    dead_lease.create_lease_table().await.unwrap();
    dead_lease.heartbeat().await.unwrap();
    let dead_plane = plane_with(db.target(&names.tables).await, manual(&dead));
    let h = dead_plane.open("m").await.unwrap();
    h.push("x").unwrap();
    std::mem::forget(h);

    let swept = Arc::new(Mutex::new(Vec::new()));
    let seen = swept.clone();
    let hook: SweptHook = Arc::new(move |keys: &[String]| seen.lock().unwrap().extend_from_slice(keys));
    let live = format!("bglive-{}", names.tag);
    // Long enough that the renewals must come from the task: ten ticks of 100 ms at least.
    let handle = db
        .sweeper(&names.tables, SweeperOptions { on_swept: Some(hook), ..options(&names, &live, 400, 100) })
        .await
        .start()
        .await
        .unwrap();
    for _ in 0..50 {
        if !swept.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(*swept.lock().unwrap(), vec!["m".to_string()]);
    assert_eq!(status(db, &names, "m").await.as_deref(), Some("interrupted"));
    tokio::time::sleep(Duration::from_millis(600)).await;
    // Its own lease stayed live all along: another sweeper run by a third host releases nothing.
    insert(db, &names, "n").await;
    let live_plane = plane_with(db.target(&names.tables).await, manual(&live));
    let kept = live_plane.open("n").await.unwrap();
    let third = db.sweeper(&names.tables, options(&names, &format!("bgthird-{}", names.tag), 400, 100)).await;
    assert_eq!(third.sweep().await.unwrap(), Vec::<String>::new());
    kept.close().await.unwrap();
    handle.stop(true).await.unwrap();

    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.lease)).await;
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.tables.chunks)).await;
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.tables.message)).await;
}

/// A stalled producer comes back after its row was swept: the database refuses each of its
/// writes, the producer stops with `fenced`, and its readers are sent to the store.
async fn fencing(db: &dyn Db) {
    let names = create_tables(db).await;
    let (stalled, other) = (format!("stalled-{}", names.tag), format!("other-{}", names.tag));
    insert(db, &names, "f").await;
    let stalled_lease = db.sweeper(&names.tables, options(&names, &stalled, 300, 100)).await;
    stalled_lease.create_lease_table().await.unwrap();
    stalled_lease.heartbeat().await.unwrap();
    let plane = plane_with(db.target(&names.tables).await, manual(&stalled));
    let h = plane.open("f").await.unwrap();
    h.push("hello ").unwrap();
    assert_eq!(h.flush().await.unwrap(), 6);
    h.push("wörld").unwrap();
    let mut reader = Reader::new(plane.subscribe(&(), "f", 0).await.unwrap(), 0, &[]);

    // The lease lapses (no renewal: the process is "stopped"); another instance sweeps.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let sweeper = db.sweeper(&names.tables, options(&names, &other, 60_000, 30_000)).await;
    assert_eq!(sweeper.sweep().await.unwrap(), vec!["f".to_string()]);
    let at_sweep = (db.row(&names.tables.message, "f").await, db.chunks(&names.tables.chunks, "f").await);
    assert_eq!(at_sweep.0.status.as_deref(), Some("interrupted"));

    // The producer resumes: its checkpoint is refused, and it stops.
    let e = h.flush().await.unwrap_err();
    assert_eq!(e.kind(), PlaneErrorKind::Fenced, "{e}");
    assert_eq!(h.push("more").unwrap_err().kind(), PlaneErrorKind::Fenced);
    assert_eq!(h.flush().await.unwrap_err().kind(), PlaneErrorKind::Fenced);
    assert_eq!(h.close().await.unwrap_err().kind(), PlaneErrorKind::Fenced);
    reader.read_to_end().await;
    assert!(matches!(reader.terminal(), Some(Frame::Stale { durable_seq: 6, .. })), "{:?}", reader.frames);
    // A join after the fence is told to go to the store too.
    let mut late = Reader::new(plane.subscribe(&(), "f", 0).await.unwrap(), 0, &[]);
    late.read_to_end().await;
    assert!(matches!(late.terminal(), Some(Frame::Stale { .. } | Frame::Absent)), "{:?}", late.frames);

    // The row holds exactly what it held at the sweep, and the readers converge on it.
    let after = (db.row(&names.tables.message, "f").await, db.chunks(&names.tables.chunks, "f").await);
    assert_eq!(after, at_sweep, "the store changed after the sweep");
    assert_eq!(durable_text(db, &names, "f").await, "hello ");
    drop(h);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(db.row(&names.tables.message, "f").await, at_sweep.0, "the dropped handle sealed over the sweep");

    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.lease)).await;
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.tables.chunks)).await;
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.tables.message)).await;
}

/// Sweeps race checkpoints in flight (each stream checkpoints every few code units while the
/// sweep lands): whatever the order, the swept row is consistent (body plus chunks assemble to
/// a prefix of the produced text, the length column matches) and never changes afterwards.
async fn fencing_races(db: &dyn Db) {
    let names = create_tables(db).await;
    let (stalled, other) = (format!("racer-{}", names.tag), format!("sweeper-{}", names.tag));
    let ids: Vec<String> = (0..6).map(|i| format!("r{i}")).collect();
    for id in &ids {
        insert(db, &names, id).await;
    }
    let lease = db.sweeper(&names.tables, options(&names, &stalled, 200, 100)).await;
    lease.create_lease_table().await.unwrap();
    lease.heartbeat().await.unwrap();
    let plane = plane_with(db.target(&names.tables).await, move |o| {
        o.chars = 3;
        o.interval_ms = 5;
        o.retry_backoff_ms = 1;
        o.host_id = Some(stalled.clone());
    });
    let sweeper = db.sweeper(&names.tables, options(&names, &other, 60_000, 30_000)).await;
    tokio::time::sleep(Duration::from_millis(250)).await;
    for (i, id) in ids.iter().enumerate() {
        let h = Arc::new(plane.open(id).await.unwrap());
        let producer = h.clone();
        let produce = tokio::spawn(async move {
            let mut produced = String::new();
            for k in 0..400 {
                let piece = format!("{k}é,");
                if producer.push(&piece).is_err() {
                    break;
                }
                produced.push_str(&piece);
                tokio::task::yield_now().await;
            }
            produced
        });
        // Sweep at a different moment for each stream, while checkpoints are in flight.
        tokio::time::sleep(Duration::from_millis(2 + 3 * i as u64)).await;
        assert_eq!(sweeper.sweep().await.unwrap(), vec![id.clone()]);
        let at_sweep = (db.row(&names.tables.message, id).await, db.chunks(&names.tables.chunks, id).await);
        let produced = produce.await.unwrap();
        let _ = h.close().await;
        tokio::time::sleep(Duration::from_millis(30)).await;
        let after = (db.row(&names.tables.message, id).await, db.chunks(&names.tables.chunks, id).await);
        assert_eq!(after, at_sweep, "{id}: the store changed after the sweep");
        let (row, _) = &after;
        assert_eq!(row.status.as_deref(), Some("interrupted"));
        let text = durable_text(db, &names, id).await;
        assert!(produced.starts_with(&text), "{id}: the swept row is not a prefix of the produced text");
        assert_eq!(row.seq as usize, text.encode_utf16().count(), "{id}: the length column disagrees with the text");
    }
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.lease)).await;
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.tables.chunks)).await;
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.tables.message)).await;
}

/// Host-less `streaming` rows: left alone by default; with a grace period, released once it is
/// over (not before), unless sealed meanwhile.
async fn hostless(db: &dyn Db) {
    let names = create_tables(db).await;
    for id in ["old", "sealed_later"] {
        insert(db, &names, id).await;
    }
    let m = &names.tables.message;
    db.exec(&format!(
        "UPDATE \"{m}\" SET status = 'streaming', seq = 3, body = 'abc' WHERE id IN ('old', 'sealed_later')"
    ))
    .await;
    let host = format!("keeper-{}", names.tag);
    let default = db.sweeper(&names.tables, options(&names, &host, 60_000, 30_000)).await;
    default.create_lease_table().await.unwrap();
    assert_eq!(default.adopt_hostless().await.unwrap(), 0, "off by default");
    assert_eq!(default.sweep().await.unwrap(), Vec::<String>::new());
    assert_eq!(db.row(m, "old").await.host, None);

    let graced = db
        .sweeper(
            &names.tables,
            SweeperOptions { release_hostless_after_ms: Some(1_500), ..options(&names, &host, 60_000, 30_000) },
        )
        .await;
    assert_eq!(graced.adopt_hostless().await.unwrap(), 2);
    assert_eq!(graced.adopt_hostless().await.unwrap(), 0, "adopted once");
    assert_eq!(graced.sweep().await.unwrap(), Vec::<String>::new(), "released before the grace period ended");
    assert_eq!(db.row(m, "old").await.status.as_deref(), Some("streaming"));
    // Sealed during the grace period: never touched.
    db.exec(&format!("UPDATE \"{m}\" SET status = 'complete' WHERE id = 'sealed_later'")).await;
    tokio::time::sleep(Duration::from_millis(1_800)).await;
    assert_eq!(graced.sweep().await.unwrap(), vec!["old".to_string()]);
    let row = db.row(m, "old").await;
    assert_eq!((row.status.as_deref(), row.seq, row.body.as_str()), (Some("interrupted"), 3, "abc"));
    assert_eq!(db.row(m, "sealed_later").await.status.as_deref(), Some("complete"));

    // The running task does the same on its own ticks.
    insert(db, &names, "later").await;
    db.exec(&format!("UPDATE \"{m}\" SET status = 'streaming' WHERE id = 'later'")).await;
    let handle = db
        .sweeper(
            &names.tables,
            SweeperOptions { release_hostless_after_ms: Some(200), ..options(&names, &host, 400, 100) },
        )
        .await
        .start()
        .await
        .unwrap();
    for _ in 0..60 {
        if db.row(m, "later").await.status.as_deref() == Some("interrupted") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(db.row(m, "later").await.status.as_deref(), Some("interrupted"));
    handle.stop(true).await.unwrap();

    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.lease)).await;
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.tables.chunks)).await;
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.tables.message)).await;
}

/// A producer stopped in the middle of a checkpoint transaction holds its row's lock. The
/// plane's connections let the server end a transaction left idle (docs/contract.md §6), so the
/// sweep of another instance goes ahead within that bound instead of waiting for the stopped
/// process to come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_producer_stopped_mid_transaction_does_not_block_the_sweep() {
    let _serial = SERIAL.lock().await;
    let Some(db) = postgres().await else { return };
    let names = create_tables(&db).await;
    insert(&db, &names, "held").await;
    let (stalled, other) = (format!("held-{}", names.tag), format!("holdsweeper-{}", names.tag));
    let lease = db.sweeper(&names.tables, options(&names, &stalled, 200, 100)).await;
    lease.create_lease_table().await.unwrap();
    lease.heartbeat().await.unwrap();
    let m = &names.tables.message;
    db.exec(&format!("UPDATE \"{m}\" SET status = 'streaming', host = '{stalled}' WHERE id = 'held'")).await;
    // The stopped producer's connection, opened the way the plane opens its own, stopped after
    // the first statement of a checkpoint.
    let endpoint = PgEndpoint::parse(&db.url, None).unwrap();
    let mut holder = endpoint.connect("stopped producer").await.unwrap();
    let tx = holder.transaction().await.unwrap();
    tx.execute(&format!("UPDATE \"{m}\" SET seq = seq WHERE id = 'held'"), &[]).await.unwrap();

    tokio::time::sleep(Duration::from_millis(400)).await;
    let sweeper = db.sweeper(&names.tables, options(&names, &other, 60_000, 30_000)).await;
    let started = std::time::Instant::now();
    let swept = tokio::time::timeout(Duration::from_secs(30), sweeper.sweep())
        .await
        .expect("the sweep waited on the stopped transaction for 30 s")
        .unwrap();
    assert_eq!(swept, vec!["held".to_string()]);
    assert!(started.elapsed() < Duration::from_secs(15), "the sweep took {:?}", started.elapsed());
    assert_eq!(status(&db, &names, "held").await.as_deref(), Some("interrupted"));
    // The stopped process's transaction is gone: its next statement fails, whatever it was.
    assert!(tx.execute(&format!("UPDATE \"{m}\" SET seq = 99 WHERE id = 'held'"), &[]).await.is_err());
    drop(tx);
    assert_eq!(db.row(m, "held").await.seq, 0);

    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.lease)).await;
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.tables.chunks)).await;
    db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", names.tables.message)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_swept_producer_is_fenced() {
    let _serial = SERIAL.lock().await;
    fencing(&Sqlite::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_sweeps_racing_checkpoints_leave_the_row_consistent() {
    let _serial = SERIAL.lock().await;
    fencing_races(&Sqlite::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_hostless_rows_are_released_after_the_grace_period() {
    let _serial = SERIAL.lock().await;
    hostless(&Sqlite::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_swept_producer_is_fenced() {
    let _serial = SERIAL.lock().await;
    let Some(db) = postgres().await else { return };
    fencing(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_sweeps_racing_checkpoints_leave_the_row_consistent() {
    let _serial = SERIAL.lock().await;
    let Some(db) = postgres().await else { return };
    fencing_races(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_hostless_rows_are_released_after_the_grace_period() {
    let _serial = SERIAL.lock().await;
    let Some(db) = postgres().await else { return };
    hostless(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_sweeper_releases_only_dead_hosts() {
    let _serial = SERIAL.lock().await;
    scenario(&Sqlite::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_sweeper_runs_on_its_own() {
    let _serial = SERIAL.lock().await;
    background(&Sqlite::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_sweeper_releases_only_dead_hosts() {
    let _serial = SERIAL.lock().await;
    let Some(db) = postgres().await else { return };
    scenario(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_sweeper_runs_on_its_own() {
    let _serial = SERIAL.lock().await;
    let Some(db) = postgres().await else { return };
    background(&db).await;
}

#[tokio::test]
async fn options_that_cannot_work_are_refused() {
    let file = SqliteFile::new("sweeper-options");
    let path = file.path.clone();
    let with_host = StreamTables {
        message: "m".into(),
        chunks: "c".into(),
        columns: StreamColumns { host: Some("host".into()), ..Default::default() },
    };
    let refused = |tables: &StreamTables, o: SweeperOptions| Sweeper::sqlite(&path, tables, o).unwrap_err();

    let e = refused(&with_host, SweeperOptions { lease_ttl_ms: 1_000, interval_ms: 600, ..SweeperOptions::new("h") });
    assert_eq!(e.kind(), PlaneErrorKind::InvalidOptions);
    assert!(e.message().contains("two sweeper ticks"), "{e}");
    assert_eq!(refused(&with_host, SweeperOptions::new("")).kind(), PlaneErrorKind::InvalidOptions);
    assert_eq!(
        refused(&with_host, SweeperOptions { interval_ms: 0, ..SweeperOptions::new("h") }).kind(),
        PlaneErrorKind::InvalidOptions
    );
    let no_host = StreamTables { message: "m".into(), chunks: "c".into(), columns: StreamColumns::default() };
    let e = refused(&no_host, SweeperOptions::new("h"));
    assert!(e.message().contains("host column"), "{e}");
}
