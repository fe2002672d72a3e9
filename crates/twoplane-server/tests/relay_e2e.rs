//! `twoplane relay` end to end, with real processes: PostgreSQL (wal_level=logical, from
//! scripts/pg.sh) and s2-lite (scripts/s2.sh), then the same with Redis (scripts/redis.sh). 10,000 rows over 200 sessions are committed in
//! random transactions while the relay process is killed with SIGKILL three times and its
//! replication slot is dropped once; after the last restart every session's log must equal its
//! record rows, in order, each exactly once. Then SIGTERM must stop the relay cleanly.
//!
//! The tests are `#[ignore]`d, so a plain `cargo test` (and the server part of the test command)
//! leaves them alone; scripts/test-relay.sh starts the services and runs them with `--ignored`.
//! They need TWOPLANE_PG_URL and TWOPLANE_S2_URL (or TWOPLANE_REDIS_URL); without them a test says
//! it was skipped and passes, unless `TWOPLANE_REQUIRE_SERVICES=1` (scripts/test-relay.sh sets
//! it), which fails it.
//! Every run uses its own tables, slot, publication and tenants, so runs never see each other.
//!
//! The S2 scenario runs a second time over TLS: PostgreSQL with a certificate from a throwaway CA
//! (`sslmode=verify-full` and the CA in the URL, for the replication stream and the record
//! reader alike) and s2-lite behind a TLS terminator (scripts/s2-tls.sh, `--s2 https://...
//! --s2-ca-file`); the replication session is checked to be encrypted. Then verification must
//! fail as it should: the wrong CA, a host name the certificate does not carry, and
//! `sslmode=require` against a server without TLS each stop `twoplane relay` at start with a
//! message naming the cause.

mod common;

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use twoplane_server::demo::answer::Rng;

use twoplane_relay::pg_record::RecordTables;
use twoplane_relay::redis_log::{RedisLog, RedisLogOptions};
use twoplane_relay::s2::{S2LogStore, S2Options};
use twoplane_relay::{session_stream, BasinName};
use twoplane_stream::PgEndpoint;

const ROWS: usize = 10_000;
const SESSIONS: usize = 200;
const TENANTS: usize = 4;
/// How long the relay may take, after the last commit, to bring every log level with the record.
const CATCH_UP: Duration = Duration::from_secs(120);

fn service(var: &str, script: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            let why = format!("{var} is not set (start it with scripts/{script}.sh)");
            match std::env::var("TWOPLANE_REQUIRE_SERVICES") {
                Ok(v) if !v.is_empty() && v != "0" => panic!("TWOPLANE_REQUIRE_SERVICES={v}, but {why}"),
                _ => {
                    eprintln!("skipped: {why}");
                    None
                }
            }
        }
    }
}

struct Names {
    run: String,
    tables: RecordTables,
    state: String,
    slot: String,
}

impl Names {
    fn new(kind: &str) -> Names {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let run = format!("e2e_{kind}_{}_{}", std::process::id(), nanos % 1_000_000_000);
        Names {
            tables: RecordTables { tenants: format!("{run}_tenants"), events: format!("{run}_events") },
            state: format!("{run}_state"),
            slot: run.clone(),
            run,
        }
    }

    fn tenant(&self, k: usize) -> String {
        format!("{}-tenant-{k}", self.run)
    }
}

struct RelayProcess {
    /// The run's name; each start logs to `$TMPDIR/<name>-<n>.log`.
    name: String,
    args: Vec<String>,
    child: Option<Child>,
    starts: usize,
}

impl RelayProcess {
    fn start(&mut self) {
        let log = std::fs::File::create(std::env::temp_dir().join(format!("{}-{}.log", self.name, self.starts)))
            .expect("relay log file");
        let child = Command::new(env!("CARGO_BIN_EXE_twoplane"))
            .arg("relay")
            .args(&self.args)
            .env("RUST_LOG", "warn,twoplane_relay=info")
            .stdin(Stdio::null())
            // Both streams into the log: the secrets check reads everything the process wrote.
            .stdout(log.try_clone().expect("relay log file"))
            .stderr(log)
            .spawn()
            .expect("start twoplane relay");
        self.child = Some(child);
        self.starts += 1;
    }

    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("SIGKILL"); // std's kill is SIGKILL on Unix
            let _ = child.wait();
        }
    }

    /// SIGTERM, then the exit status (None when it did not exit within `within`).
    fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let pid = i32::try_from(child.id()).expect("pid");
        // SAFETY: kill(2) on our own child's pid with a valid signal number.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }
}

impl Drop for RelayProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// GET /status over a plain socket (the body, or None when it cannot be reached yet).
fn get_status(port: u16) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(b"GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.split_once("\r\n\r\n").map(|(_, body)| body.to_owned())
}

/// A connection as the URL says (its sslmode and sslrootcert included).
async fn connect(url: &str) -> tokio_postgres::Client {
    PgEndpoint::parse(url, None).expect("a PostgreSQL URL").connect("relay-e2e").await.expect("connect to PostgreSQL")
}

async fn drop_slot(db: &tokio_postgres::Client, slot: &str) {
    // The relay reconnects after a pause: terminate its walsender, then drop the slot before it
    // is back. Retried, since the relay may win the race.
    for _ in 0..100 {
        let _ = db
            .execute(
                "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots \
                 WHERE slot_name = $1 AND active_pid IS NOT NULL",
                &[&slot],
            )
            .await;
        match db.execute("SELECT pg_drop_replication_slot($1)", &[&slot]).await {
            Ok(_) => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    panic!("could not drop slot {slot}");
}

/// Every session's record rows (bodies in seq order), by (tenant, session).
async fn record_of(db: &tokio_postgres::Client, tables: &RecordTables) -> HashMap<(String, String), Vec<String>> {
    let rows = db
        .query(
            &format!("SELECT tenant_id, session_id, seq, body::text FROM {} ORDER BY 1, 2, 3", tables.events_sql()),
            &[],
        )
        .await
        .unwrap();
    let mut out: HashMap<(String, String), Vec<String>> = HashMap::new();
    for row in rows {
        let list = out.entry((row.get(0), row.get(1))).or_default();
        assert_eq!(row.get::<_, i64>(2) as usize, list.len(), "the test's own record has a gap");
        list.push(row.get(3));
    }
    out
}

/// Reads a session's log back, from whichever store the relay wrote to.
enum Logs {
    S2(S2LogStore),
    Redis(RedisLog, redis::aio::ConnectionManager),
}

impl Logs {
    async fn read(&mut self, tenant: &str, session: &str) -> Vec<String> {
        let basin = BasinName::for_tenant(tenant, 1);
        let stream = session_stream(session);
        match self {
            Logs::S2(store) => store.read_all(&basin, &stream).await.unwrap_or_default(),
            Logs::Redis(store, connection) => {
                let key = store.stream_key(&basin, &stream);
                let reply: redis::streams::StreamRangeReply =
                    redis::cmd("XRANGE").arg(&key).arg("-").arg("+").query_async(connection).await.unwrap();
                reply.ids.iter().map(|entry| entry.get::<String>("record").expect("a record field")).collect()
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (wal_level=logical), s2-lite and Redis on loopback: run `bash scripts/test-relay.sh`"]
async fn pg_to_s2_every_log_equals_the_record_after_kills_and_a_slot_drop() {
    let (Some(pg), Some(s2)) = (service("TWOPLANE_PG_URL", "pg"), service("TWOPLANE_S2_URL", "s2")) else { return };
    let logs = Logs::S2(S2LogStore::new(&s2).expect("TWOPLANE_S2_URL"));
    scenario("s2", &pg, vec!["--s2".to_owned(), s2.clone()], &s2, logs).await;
}

/// The TLS services: PostgreSQL's URL with verify-full and its CA, the HTTPS S2 endpoint and the
/// CA of its certificate, and a CA that signed neither.
struct TlsServices {
    pg: String,
    s2: String,
    ca: String,
    wrong_ca: String,
}

fn tls_services() -> Option<TlsServices> {
    let pg = service("TWOPLANE_PG_TLS_URL", "pg (TWOPLANE_PG_TLS=1)")?;
    let pg_ca = service("TWOPLANE_PG_TLS_CA", "pg (TWOPLANE_PG_TLS=1)")?;
    let s2 = service("TWOPLANE_S2_TLS_URL", "s2-tls")?;
    let ca = service("TWOPLANE_S2_TLS_CA", "s2-tls")?;
    let wrong_ca = service("TWOPLANE_S2_TLS_WRONG_CA", "s2-tls")?;
    // Both certificates come from scripts/test-certs.sh, each directory with its own CA.
    let sep = if pg.contains('?') { '&' } else { '?' };
    let pg = format!("{pg}{sep}sslmode=verify-full&sslrootcert={pg_ca}");
    Some(TlsServices { pg, s2, ca, wrong_ca })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL with TLS (wal_level=logical) and s2-lite behind TLS: run `bash scripts/test-relay.sh`"]
async fn pg_to_s2_over_tls_every_log_equals_the_record_after_kills_and_a_slot_drop() {
    let Some(tls) = tls_services() else { return };
    let options = S2Options { ca_file: Some(tls.ca.clone().into()), basin_url: None };
    let logs = Logs::S2(S2LogStore::with_options(&tls.s2, &options).expect("TWOPLANE_S2_TLS_URL"));
    let log_args = vec!["--s2".to_owned(), tls.s2.clone(), "--s2-ca-file".to_owned(), tls.ca.clone()];
    scenario("s2tls", &tls.pg, log_args, &tls.s2, logs).await;
}

/// `twoplane relay` with `args`, which must stop by itself (within 30 s) with a failure; its
/// output.
fn relay_refuses(args: &[&str]) -> String {
    let child = Command::new(env!("CARGO_BIN_EXE_twoplane"))
        .arg("relay")
        .args(args)
        .args(["--slot", "never_taken", "--publication", "never_taken"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start twoplane relay");
    let pid = child.id();
    let watchdog = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(30));
        // SAFETY: a plain kill(2) of our own child; harmless if it already exited and was reaped
        // (the pid is then checked by the assertion below, which sees a signal exit).
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let out = child.wait_with_output().expect("relay output");
    drop(watchdog);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.code().is_some_and(|c| c != 0),
        "the relay should have refused to start: {:?}\n{text}",
        out.status
    );
    text
}

#[test]
#[ignore = "needs PostgreSQL with and without TLS and s2-lite behind TLS: run `bash scripts/test-relay.sh`"]
fn tls_verification_fails_as_it_should_and_says_why() {
    let (Some(tls), Some(plain_pg), Some(plain_s2)) =
        (tls_services(), service("TWOPLANE_PG_URL", "pg"), service("TWOPLANE_S2_URL", "s2"))
    else {
        return;
    };
    let mut said = Vec::new();
    // S2: the wrong CA, then a name the certificate does not carry (it names 127.0.0.1 and
    // localhost; the terminator also listens on 127.0.0.2, loopback too but not in it).
    let out = relay_refuses(&["--pg", &tls.pg, "--s2", &tls.s2, "--s2-ca-file", &tls.wrong_ca]);
    assert!(out.contains("TLS failed: the server's certificate does not verify against the CA file"), "{out}");
    assert!(out.contains("UnknownIssuer"), "{out}");
    said.push(("relay with the wrong S2 CA".to_owned(), out));
    let renamed = tls.s2.replace("127.0.0.1", "127.0.0.2");
    let out = relay_refuses(&["--pg", &tls.pg, "--s2", &renamed, "--s2-ca-file", &tls.ca]);
    assert!(out.contains("TLS failed") && out.contains("NotValidForName"), "{out}");
    said.push(("relay with a name S2's certificate lacks".to_owned(), out));
    // https:// to a server that speaks plain HTTP.
    let out =
        relay_refuses(&["--pg", &tls.pg, "--s2", &plain_s2.replace("http://", "https://"), "--s2-ca-file", &tls.ca]);
    assert!(out.contains("did not answer in TLS"), "{out}");
    said.push(("relay with https:// to plain s2-lite".to_owned(), out));

    // PostgreSQL: the wrong CA, a name the certificate lacks, require against a plain server.
    let wrong = tls.pg.replace(
        &format!("sslrootcert={}", std::env::var("TWOPLANE_PG_TLS_CA").unwrap()),
        &format!("sslrootcert={}", tls.wrong_ca),
    );
    assert_ne!(wrong, tls.pg);
    let out = relay_refuses(&["--pg", &wrong, "--s2", &tls.s2, "--s2-ca-file", &tls.ca]);
    assert!(out.contains("TLS failed") && out.contains("UnknownIssuer"), "{out}");
    said.push(("relay with the wrong PostgreSQL CA".to_owned(), out));
    // The right address under a name the certificate lacks (hostaddr, as libpq spells it).
    let renamed = format!("{}&hostaddr=127.0.0.1", tls.pg.replacen("@127.0.0.1:", "@wrong-name.invalid:", 1));
    let out = relay_refuses(&["--pg", &renamed, "--s2", &tls.s2, "--s2-ca-file", &tls.ca]);
    assert!(out.contains("TLS failed") && out.contains("not valid for name"), "{out}");
    said.push(("relay with a name PostgreSQL's certificate lacks".to_owned(), out));
    let sep = if plain_pg.contains('?') { '&' } else { '?' };
    let out = relay_refuses(&["--pg", &format!("{plain_pg}{sep}sslmode=require"), "--s2", &plain_s2]);
    assert!(out.contains("server does not support TLS"), "{out}");
    said.push(("relay with sslmode=require against plain PostgreSQL".to_owned(), out));
    common::secrets::assert_no_secrets_named(&said);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (wal_level=logical), s2-lite and Redis on loopback: run `bash scripts/test-relay.sh`"]
async fn pg_to_redis_every_log_equals_the_record_after_kills_and_a_slot_drop() {
    let (Some(pg), Some(url)) = (service("TWOPLANE_PG_URL", "pg"), service("TWOPLANE_REDIS_URL", "redis")) else {
        return;
    };
    let store = RedisLog::connect(&url, RedisLogOptions::default()).await.expect("TWOPLANE_REDIS_URL");
    let connection = redis::Client::open(url.as_str()).unwrap().get_connection_manager().await.unwrap();
    scenario("redis", &pg, vec!["--redis".to_owned(), url.clone()], &url, Logs::Redis(store, connection)).await;
}

async fn scenario(kind: &str, pg: &str, log_args: Vec<String>, log_url: &str, mut logs: Logs) {
    let pg = pg.to_owned();
    let names = Names::new(kind);
    let seed = std::env::var("TWOPLANE_RELAY_E2E_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    eprintln!("seed {seed} (TWOPLANE_RELAY_E2E_SEED), run {}", names.run);

    let db = connect(&pg).await;
    let level: String = db.query_one("SHOW wal_level", &[]).await.unwrap().get(0);
    assert_eq!(level, "logical", "PostgreSQL must run with wal_level=logical (scripts/pg.sh sets it)");
    db.batch_execute(&names.tables.ddl()).await.unwrap();
    for k in 0..TENANTS {
        db.execute(
            &format!("INSERT INTO {} (tenant_id, generation) VALUES ($1, 1)", names.tables.tenants_sql()),
            &[&names.tenant(k)],
        )
        .await
        .unwrap();
    }

    let status_port = free_port();
    let mut relay = RelayProcess {
        name: names.run.clone(),
        args: ["--pg".to_owned(), pg.clone()]
            .into_iter()
            .chain(log_args)
            .chain([
                "--slot".into(),
                names.slot.clone(),
                "--publication".into(),
                names.slot.clone(),
                "--tenants-table".into(),
                names.tables.tenants.clone(),
                "--events-table".into(),
                names.tables.events.clone(),
                "--state-table".into(),
                names.state.clone(),
                "--status-listen".into(),
                format!("127.0.0.1:{status_port}"),
            ])
            .collect(),
        child: None,
        starts: 0,
    };
    relay.start();

    // The writer: random transactions of 1 to 20 rows on random sessions, in its own task.
    let committed = Arc::new(AtomicUsize::new(0));
    let writer = {
        let committed = committed.clone();
        let events = names.tables.events_sql();
        let tenants: Vec<String> = (0..TENANTS).map(|k| names.tenant(k)).collect();
        let pg = pg.clone();
        tokio::spawn(async move {
            let mut db = connect(&pg).await;
            let insert = format!("INSERT INTO {events} (tenant_id, session_id, seq, generation, body) VALUES ($1, $2, $3, 1, $4::text::jsonb)");
            // Seeded per run and printed, so a failing run can be repeated with TWOPLANE_RELAY_E2E_SEED.
            let mut rng = Rng::new(seed);
            let mut heads = vec![0i64; SESSIONS];
            let mut n = 0;
            while n < ROWS {
                let size = (1 + rng.below(20)).min(ROWS - n);
                let tx = db.transaction().await.unwrap();
                let statement = tx.prepare(&insert).await.unwrap();
                for _ in 0..size {
                    let s = rng.below(SESSIONS);
                    let tenant = &tenants[s % TENANTS];
                    let session = format!("s{s}");
                    let body =
                        format!(r#"{{"n": {n}, "session": "{session}", "pad": "{}"}}"#, "x".repeat(rng.below(40)));
                    tx.execute(&statement, &[tenant, &session, &heads[s], &body]).await.unwrap();
                    heads[s] += 1;
                    n += 1;
                }
                tx.commit().await.unwrap();
                committed.store(n, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(4)).await;
            }
        })
    };

    // The faults, at fixed fractions of the rows: three SIGKILLs (restarting at once or after a
    // pause) and one slot drop while the relay runs.
    let wait_for = |fraction: f64| {
        let committed = committed.clone();
        async move {
            while (committed.load(Ordering::SeqCst) as f64) < fraction * ROWS as f64 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    let mut status_seen = None;
    for (i, fraction) in [0.15, 0.35, 0.55].into_iter().enumerate() {
        wait_for(fraction).await;
        if status_seen.is_none() {
            status_seen = get_status(status_port);
        }
        if i == 0 && pg.contains("sslmode=verify-full") {
            // The replication session itself is encrypted, not only the plain connections.
            let ssl: Option<bool> = db
                .query_opt(
                    "SELECT s.ssl FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid) WHERE r.application_name = $1",
                    &[&format!("twoplane-relay {}", names.slot)],
                )
                .await
                .unwrap()
                .map(|row| row.get(0));
            assert_eq!(ssl, Some(true), "the relay's replication session over TLS");
        }
        relay.kill9();
        eprintln!("SIGKILL {} at {} rows", i + 1, committed.load(Ordering::SeqCst));
        if i == 1 {
            tokio::time::sleep(Duration::from_millis(700)).await; // rows pile up meanwhile
        }
        relay.start();
    }
    wait_for(0.75).await;
    drop_slot(&db, &names.slot).await;
    eprintln!("slot dropped at {} rows", committed.load(Ordering::SeqCst));
    writer.await.expect("writer");
    eprintln!("all {ROWS} rows committed");

    // Every session's log must come to equal its record.
    let record = record_of(&db, &names.tables).await;
    assert_eq!(record.values().map(Vec::len).sum::<usize>(), ROWS);
    let deadline = Instant::now() + CATCH_UP;
    let mut pending: Vec<(String, String)> = record.keys().cloned().collect();
    pending.sort();
    let mut last_diff = String::new();
    while !pending.is_empty() {
        let mut still = Vec::new();
        for key in pending {
            let logged = logs.read(&key.0, &key.1).await;
            let want = &record[&key];
            if &logged != want {
                // A log longer than the record, or differing in a row it has, can never heal.
                let common = logged.len().min(want.len());
                assert!(
                    logged.len() <= want.len() && logged[..common] == want[..common],
                    "log of {key:?} diverged from the record: {} logged, {} in the record, first difference at {:?}",
                    logged.len(),
                    want.len(),
                    (0..common).find(|&i| logged[i] != want[i])
                );
                last_diff = format!("{key:?}: {} of {} rows logged", logged.len(), want.len());
                still.push(key);
            }
        }
        pending = still;
        if !pending.is_empty() {
            assert!(
                Instant::now() < deadline,
                "{} sessions still behind after {CATCH_UP:?}, e.g. {last_diff}; relay status: {:?}",
                pending.len(),
                get_status(status_port)
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    eprintln!("every one of {} logs equals its record", record.len());

    // The status endpoint answered JSON with the relay's fields and no connection URL.
    let status = get_status(status_port).or(status_seen).expect("GET /status answered");
    for field in
        ["\"active\"", "\"pending_txs\"", "\"pending_rows\"", "\"confirmed\"", "\"reconciliations\"", "\"last_error\""]
    {
        assert!(status.contains(field), "{field} missing from {status}");
    }
    assert!(
        !status.contains("postgres://") && !status.contains("postgresql://") && !status.contains(log_url),
        "{status}"
    );

    // Graceful stop on SIGTERM.
    let exit = relay.terminate(Duration::from_secs(15)).expect("relay exits within 15 s of SIGTERM");
    assert!(exit.success(), "relay exit status after SIGTERM: {exit}");

    // No configured password in any line a relay process wrote, nor in the status body.
    let mut said: Vec<(String, String)> = (0..relay.starts)
        .map(|n| {
            let path = std::env::temp_dir().join(format!("{}-{n}.log", relay.name));
            (path.display().to_string(), std::fs::read_to_string(&path).unwrap_or_default())
        })
        .collect();
    said.push(("GET /status".into(), status));
    common::secrets::assert_no_secrets_named(&said);

    let _ = db
        .batch_execute(&format!(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '{slot}' AND NOT active; \
             DROP PUBLICATION IF EXISTS \"{slot}\"; DROP TABLE IF EXISTS {e}, {t}, \"{state}\";",
            slot = names.slot,
            e = names.tables.events_sql(),
            t = names.tables.tenants_sql(),
            state = names.state
        ))
        .await;
}
