//! The PostgreSQL change source and record reader against a real PostgreSQL (wal_level=logical,
//! scripts/pg.sh), and the S2 log store against a real s2-lite (scripts/s2.sh). Without
//! TWOPLANE_PG_URL / TWOPLANE_S2_URL a test says it was skipped and passes, unless
//! `TWOPLANE_REQUIRE_SERVICES=1` (scripts/test-relay.sh sets it), which fails it. Each test uses
//! its own table, slot and basin names.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_postgres::NoTls;
use twoplane_relay::pg_record::{PgRecord, RecordTables};
use twoplane_relay::pg_source::{PgSource, PgSourceConfig};
use twoplane_relay::s2::S2LogStore;
use twoplane_relay::schema::{state_table_ddl, RelayTable, EVENTS, STATE, TENANTS};
use twoplane_relay::{
    Append, BasinName, ChangeSource, LogError, LogStore, LogTarget, Lsn, RecordReader, SessionRange, SourceEvent,
    SourceLink,
};

fn service(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => match std::env::var("TWOPLANE_REQUIRE_SERVICES") {
            Ok(v) if !v.is_empty() && v != "0" => panic!("TWOPLANE_REQUIRE_SERVICES={v}, but {var} is not set"),
            _ => {
                eprintln!("skipped: {var} is not set");
                None
            }
        },
    }
}

fn endpoint(url: &str) -> twoplane_pg::PgEndpoint {
    twoplane_pg::PgEndpoint::parse(url, None).expect("TWOPLANE_PG_URL")
}

fn unique(kind: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("t_{kind}_{}_{}", std::process::id(), nanos % 1_000_000_000)
}

async fn db(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect to PostgreSQL");
    tokio::spawn(connection);
    client
}

async fn insert(db: &tokio_postgres::Client, tables: &RecordTables, rows: &[(&str, &str, i64, i64, &str)]) {
    let sql = format!(
        "INSERT INTO {} (tenant_id, session_id, seq, generation, body) VALUES ($1, $2, $3, $4, $5::text::jsonb)",
        tables.events_sql()
    );
    // One transaction for all of them.
    db.batch_execute("BEGIN").await.unwrap();
    for (t, s, seq, g, body) in rows {
        db.execute(&sql, &[t, s, seq, g, body]).await.unwrap();
    }
    db.batch_execute("COMMIT").await.unwrap();
}

/// The relay's tables as PostgreSQL holds them once created are their one description in
/// `schema.rs`: every column's type, nullability, collation and key (created twice: the second
/// `IF NOT EXISTS` changes nothing).
#[tokio::test]
async fn the_relay_tables_are_their_description() {
    let Some(url) = service("TWOPLANE_PG_URL") else { return };
    let db = db(&url).await;
    let name = unique("shape");
    let tables = RecordTables { tenants: format!("{name}_tenants"), events: format!("{name}_events") };
    let state = format!("{name}_state");
    for _ in 0..2 {
        db.batch_execute(&tables.ddl()).await.unwrap();
        db.batch_execute(&state_table_ddl(&state)).await.unwrap();
    }
    let shapes: [(&str, RelayTable); 3] = [(&tables.tenants, TENANTS), (&tables.events, EVENTS), (&state, STATE)];
    for (table, shape) in shapes {
        let rows = db.query(RelayTable::CATALOG, &[&table]).await.unwrap();
        let got: Vec<(String, String, bool, bool, bool)> =
            rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))).collect();
        assert_eq!(got, shape.expected(), "the columns of {table}");
    }
    db.batch_execute(&format!(
        "DROP TABLE {}; DROP TABLE {}; DROP TABLE \"{state}\"",
        tables.events_sql(),
        tables.tenants_sql()
    ))
    .await
    .unwrap();
}

#[tokio::test]
async fn the_record_reads_back_ranges_heads_and_generations() {
    let Some(url) = service("TWOPLANE_PG_URL") else { return };
    let run = unique("rec");
    let tables = RecordTables { tenants: format!("{run}_tenants"), events: format!("{run}_events") };
    let db = db(&url).await;
    db.batch_execute(&tables.ddl()).await.unwrap();
    db.execute(&format!("INSERT INTO {} VALUES ('a', 3), ('b', 1)", tables.tenants_sql()), &[]).await.unwrap();
    insert(
        &db,
        &tables,
        &[
            ("a", "s1", 0, 2, r#"{"n":0}"#),
            ("a", "s1", 1, 3, r#"{"n":1}"#),
            ("a", "s1", 2, 3, r#"{"n": [2]}"#),
            ("a", "s2", 0, 3, "{}"),
            ("b", "Z", 0, 1, "null"),
            ("b", "a", 0, 1, "1"),
        ],
    )
    .await;
    let record = PgRecord::new(&endpoint(&url), tables.clone());

    let rows = record.read_range(SessionRange::new("a", "s1", 1, 10)).await.unwrap();
    assert_eq!(
        rows.iter().map(|r| (r.seq, r.generation, &*r.body)).collect::<Vec<_>>(),
        [(1, 3, r#"{"n": 1}"#), (2, 3, r#"{"n": [2]}"#)]
    );
    assert!(record.read_range(SessionRange::new("a", "s1", 2, 2)).await.unwrap().is_empty());
    assert!(record.read_range(SessionRange::new("nobody", "s1", 0, 5)).await.unwrap().is_empty());

    // Heads in byte order ('Z' < 'a'), paged.
    let first = record.heads(None, 2).await.unwrap();
    let got: Vec<_> = first.iter().map(|h| (&*h.tenant_id, &*h.session_id, h.head, h.generation)).collect();
    assert_eq!(got, [("a", "s1", 3, 3), ("a", "s2", 1, 3)]);
    let next = record.heads(Some(("a", "s2")), 2).await.unwrap();
    let got: Vec<_> = next.iter().map(|h| (&*h.tenant_id, &*h.session_id, h.head)).collect();
    assert_eq!(got, [("b", "Z", 1), ("b", "a", 1)]);
    assert!(record.heads(Some(("b", "a")), 2).await.unwrap().is_empty());

    assert_eq!(record.generation("a").await.unwrap(), Some(3));
    assert_eq!(record.generation("gone").await.unwrap(), None);
    db.batch_execute(&format!("DROP TABLE {}, {}", tables.events_sql(), tables.tenants_sql())).await.unwrap();
}

struct Link {
    events: mpsc::Receiver<SourceEvent>,
    ack: watch::Sender<Lsn>,
    reconciled: watch::Sender<u64>,
    stop: tokio_util::sync::CancellationToken,
    /// Stops the source when the link is dropped, as the relay does.
    _stop_on_drop: tokio_util::sync::DropGuard,
    task: tokio::task::JoinHandle<()>,
}

fn run_source(mut source: PgSource) -> Link {
    let (events_tx, events) = mpsc::channel(64);
    let (ack, acknowledged) = watch::channel(Lsn::ZERO);
    let (reconciled, reconciled_rx) = watch::channel(0);
    let stop = tokio_util::sync::CancellationToken::new();
    let link = SourceLink { events: events_tx, acknowledged, reconciled: reconciled_rx, stop: stop.clone() };
    let task = tokio::spawn(async move { source.run(link).await });
    Link { events, ack, reconciled, _stop_on_drop: stop.clone().drop_guard(), stop, task }
}

async fn next(link: &mut Link) -> SourceEvent {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(15), link.events.recv())
            .await
            .expect("an event within 15 s")
            .expect("the source is running");
        if !matches!(event, SourceEvent::Keepalive(_)) {
            return event;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_source_is_fresh_once_held_by_one_and_replays_what_was_not_acknowledged() {
    let Some(url) = service("TWOPLANE_PG_URL") else { return };
    let run = unique("src");
    let tables = RecordTables { tenants: format!("{run}_tenants"), events: format!("{run}_events") };
    let db = db(&url).await;
    db.batch_execute(&tables.ddl()).await.unwrap();
    let config = PgSourceConfig {
        slot: run.clone(),
        publication: run.clone(),
        tables: tables.clone(),
        state_table: format!("{run}_state"),
        status_interval: Duration::from_millis(100),
    };
    let mut a = run_source(PgSource::new(&endpoint(&url), config.clone()).unwrap());
    let SourceEvent::Active { activation, fresh: true } = next(&mut a).await else { panic!("not a fresh start") };

    // A second process waits: it never becomes active while the first holds the slot.
    let mut b = run_source(PgSource::new(&endpoint(&url), config.clone()).unwrap());
    insert(&db, &tables, &[("t", "s", 0, 1, r#"{"x":1}"#), ("t", "s", 1, 1, r#"{"x":2}"#)]).await;
    let SourceEvent::Tx(tx1) = next(&mut a).await else { panic!("no transaction") };
    assert_eq!(
        tx1.rows.iter().map(|r| (r.seq, &*r.body)).collect::<Vec<_>>(),
        [(0, r#"{"x": 1}"#), (1, r#"{"x": 2}"#)]
    );
    insert(&db, &tables, &[("t", "s", 2, 1, "3")]).await;
    let SourceEvent::Tx(tx2) = next(&mut a).await else { panic!("no transaction") };
    assert!(tx2.end_lsn > tx1.end_lsn);

    // Acknowledge the first only, and mark the reconciliation done; then the first one stops.
    a.ack.send_replace(tx1.end_lsn);
    a.reconciled.send_replace(activation);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let state = format!("SELECT reconcile_pending FROM \"{run}_state\" WHERE slot_name = $1");
    assert!(!db.query_one(&state, &[&run]).await.unwrap().get::<_, bool>(0), "the flag was not cleared");
    assert!(b.events.try_recv().is_err(), "the second process became active while the first held the slot");
    a.stop.cancel();
    a.task.await.unwrap();

    // The second takes over, not fresh, and gets the unacknowledged transaction again (only it).
    let SourceEvent::Active { fresh: false, .. } = next(&mut b).await else { panic!("not a non-fresh takeover") };
    let SourceEvent::Tx(replayed) = next(&mut b).await else { panic!("no replay") };
    assert_eq!(replayed, tx2);
    // Acknowledging backwards is ignored (the slot only moves forward).
    b.ack.send_replace(Lsn(1));
    b.stop.cancel();
    b.task.await.unwrap();
    let confirmed: String = db
        .query_one("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", &[&run])
        .await
        .unwrap()
        .get(0);
    assert!(confirmed.parse::<Lsn>().unwrap() >= tx1.end_lsn, "{confirmed}");

    // The server ends the stopped reader's walsender a moment after it left.
    for _ in 0..100 {
        if db.execute("SELECT pg_drop_replication_slot($1)", &[&run]).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    db.batch_execute(&format!(
        "DROP PUBLICATION \"{run}\"; DROP TABLE {}, {}, \"{run}_state\"",
        tables.events_sql(),
        tables.tenants_sql()
    ))
    .await
    .unwrap();
}

#[tokio::test]
async fn s2_appends_only_at_the_expected_tail() {
    let Some(url) = service("TWOPLANE_S2_URL") else { return };
    let store = S2LogStore::new(&url).unwrap();
    let basin = BasinName::for_tenant(&unique("s2"), 1);
    let records = |texts: &[&str]| texts.iter().map(|t| Arc::<str>::from(*t)).collect::<Vec<_>>();

    assert!(matches!(
        store.append(LogTarget::new(&basin, "sessions/a", 0), &records(&["{}"])).await,
        Err(LogError::BasinMissing(_))
    ));
    store.ensure_basin(&basin).await.unwrap();
    store.ensure_basin(&basin).await.unwrap(); // already there: fine
    assert_eq!(store.check_tail(&basin, "sessions/a").await.unwrap(), 0);
    assert_eq!(
        store.append(LogTarget::new(&basin, "sessions/a", 0), &records(&["{\"n\": 0}", "{\"n\": 1}"])).await.unwrap(),
        Append::Appended { start: 0, end: 2 }
    );
    assert_eq!(
        store.append(LogTarget::new(&basin, "sessions/a", 0), &records(&["x"])).await.unwrap(),
        Append::TailMismatch { tail: 2 }
    );
    assert_eq!(
        store.append(LogTarget::new(&basin, "sessions/a", 5), &records(&["x"])).await.unwrap(),
        Append::TailMismatch { tail: 2 }
    );
    assert_eq!(store.check_tail(&basin, "sessions/a").await.unwrap(), 2);
    assert_eq!(store.read_all(&basin, "sessions/a").await.unwrap(), ["{\"n\": 0}", "{\"n\": 1}"]);
    assert_eq!(store.check_tail(&basin, "sessions/b").await.unwrap(), 0);
}
