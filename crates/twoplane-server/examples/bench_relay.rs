//! End-to-end relay benchmark (prints numbers; not a test): PostgreSQL into S2 (s2-lite) and into
//! Redis Streams, rows committed at a steady rate, and for each row the time from its COMMIT
//! returning to the log store acknowledging the append that holds it.
//!
//! ```sh
//! eval "$(scripts/pg.sh)"; eval "$(scripts/s2.sh)"; eval "$(scripts/redis.sh)"
//! cargo run --release -p twoplane-server --example bench_relay -- [ROWS_PER_SECOND] [SECONDS]
//! ```
//!
//! The relay runs in this process (the same `twoplane_relay` parts `twoplane relay` runs); the
//! log store is wrapped to note when each append returns. Defaults: 1,000 rows/s for 10 s, in
//! transactions of 10 rows on 100 sessions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio_postgres::NoTls;
use twoplane_relay::pg_record::{PgRecord, RecordTables};
use twoplane_relay::pg_source::{PgSource, PgSourceConfig};
use twoplane_relay::redis_log::{RedisLog, RedisLogOptions};
use twoplane_relay::s2::S2LogStore;
use twoplane_relay::{Append, BasinName, LogError, LogStore, LogTarget, Relay, RelayOptions};

/// Notes when each appended record (by its body's `"n"`) was acknowledged.
struct Timed {
    inner: Arc<dyn LogStore>,
    acked: Mutex<HashMap<u64, Instant>>,
}

fn number(body: &str) -> Option<u64> {
    let start = body.find("\"n\": ")? + 5;
    body[start..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

#[async_trait]
impl LogStore for Timed {
    async fn append(&self, at: LogTarget<'_>, records: &[Arc<str>]) -> Result<Append, LogError> {
        let result = self.inner.append(at, records).await;
        if let Ok(Append::Appended { .. }) = result {
            let now = Instant::now();
            let mut acked = self.acked.lock().unwrap();
            for record in records {
                if let Some(n) = number(record) {
                    acked.entry(n).or_insert(now);
                }
            }
        }
        result
    }

    async fn check_tail(&self, basin: &BasinName, stream: &str) -> Result<u64, LogError> {
        self.inner.check_tail(basin, stream).await
    }

    async fn ensure_basin(&self, basin: &BasinName) -> Result<(), LogError> {
        self.inner.ensure_basin(basin).await
    }
}

async fn run(name: &str, pg: &str, log: Arc<dyn LogStore>, rate: u64, seconds: u64) {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let run = format!("bench_{name}_{}", nanos % 1_000_000_000);
    let tables = RecordTables { tenants: format!("{run}_tenants"), events: format!("{run}_events") };
    let (mut db, connection) = tokio_postgres::connect(pg, NoTls).await.expect("PostgreSQL");
    tokio::spawn(connection);
    db.batch_execute(&tables.ddl()).await.unwrap();
    db.execute(&format!("INSERT INTO {} VALUES ('{run}', 1)", tables.tenants_sql()), &[]).await.unwrap();
    let config = PgSourceConfig {
        slot: run.clone(),
        publication: run.clone(),
        tables: tables.clone(),
        state_table: format!("{run}_state"),
        ..Default::default()
    };
    let timed = Arc::new(Timed { inner: log, acked: Mutex::new(HashMap::new()) });
    let endpoint = twoplane_stream::PgEndpoint::parse(pg, None).expect("the PostgreSQL URL");
    let relay = Relay::start(
        Box::new(PgSource::new(&endpoint, config).unwrap()),
        Arc::new(PgRecord::new(&endpoint, tables.clone())),
        timed.clone(),
        RelayOptions::default(),
    );
    // Let it take the slot and reconcile the empty record first.
    while !relay.status().active || relay.status().reconciliations == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    const TX_ROWS: u64 = 10;
    const SESSIONS: u64 = 100;
    let insert = format!(
        "INSERT INTO {} (tenant_id, session_id, seq, generation, body) VALUES ($1, $2, $3, 1, $4::text::jsonb)",
        tables.events_sql()
    );
    let mut committed: HashMap<u64, Instant> = HashMap::new();
    let mut heads = vec![0i64; SESSIONS as usize];
    let total = rate * seconds;
    let interval = Duration::from_secs_f64(TX_ROWS as f64 / rate as f64);
    let mut ticker = tokio::time::interval(interval);
    let cpu0 = cpu_seconds();
    let started = Instant::now();
    let mut n = 0u64;
    while n < total {
        ticker.tick().await;
        let tx = db.transaction().await.unwrap();
        let statement = tx.prepare(&insert).await.unwrap();
        let first = n;
        for _ in 0..TX_ROWS {
            let s = (n * 7919) % SESSIONS;
            let body = format!(r#"{{"n": {n}, "text": "{}"}}"#, "x".repeat(40));
            tx.execute(&statement, &[&run, &format!("s{s}"), &heads[s as usize], &body]).await.unwrap();
            heads[s as usize] += 1;
            n += 1;
        }
        tx.commit().await.unwrap();
        let at = Instant::now();
        for k in first..n {
            committed.insert(k, at);
        }
    }
    relay.idle().await;
    while timed.acked.lock().unwrap().len() < total as usize && started.elapsed() < Duration::from_secs(seconds + 60) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        relay.idle().await;
    }
    let elapsed = started.elapsed();
    let cpu = cpu_seconds() - cpu0;
    let acked = timed.acked.lock().unwrap().clone();
    let mut latencies: Vec<f64> = committed
        .iter()
        .filter_map(|(k, at)| acked.get(k).map(|done| done.saturating_duration_since(*at).as_secs_f64() * 1e3))
        .collect();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct =
        |p: f64| latencies.get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1))).copied();
    println!(
        "{name:6} {total} rows at {rate}/s: {} appended, {:.0} rows/s, commit-to-append p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms, \
         CPU of this process (the writer and the relay) {:.1} us/row",
        latencies.len(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        pct(0.50).unwrap_or(f64::NAN),
        pct(0.99).unwrap_or(f64::NAN),
        latencies.last().copied().unwrap_or(f64::NAN),
        cpu * 1e6 / total as f64,
    );
    relay.stop().await;
    for _ in 0..100 {
        if db.execute("SELECT pg_drop_replication_slot($1)", &[&run]).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = db
        .batch_execute(&format!(
            "DROP PUBLICATION IF EXISTS \"{run}\"; DROP TABLE IF EXISTS {}, {}, \"{run}_state\"",
            tables.events_sql(),
            tables.tenants_sql()
        ))
        .await;
}

/// User plus system CPU time of this process, in seconds.
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is a valid target.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let rate: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let seconds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let pg = std::env::var("TWOPLANE_PG_URL").expect("TWOPLANE_PG_URL (scripts/pg.sh)");
    match std::env::var("TWOPLANE_S2_URL") {
        Ok(url) => run("s2", &pg, Arc::new(S2LogStore::new(&url).expect("TWOPLANE_S2_URL")), rate, seconds).await,
        Err(_) => println!("s2: skipped (TWOPLANE_S2_URL not set; scripts/s2.sh)"),
    }
    match std::env::var("TWOPLANE_REDIS_URL") {
        Ok(url) => {
            let store = RedisLog::connect(&url, RedisLogOptions::default()).await.expect("TWOPLANE_REDIS_URL");
            run("redis", &pg, Arc::new(store), rate, seconds).await
        }
        Err(_) => println!("redis: skipped (TWOPLANE_REDIS_URL not set; scripts/redis.sh)"),
    }
}
