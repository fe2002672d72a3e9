//! A store outage under a running `twoplane serve`: PostgreSQL stopped for 10 s, and an SQLite
//! file that cannot be written for 10 s (another connection holds its write lock), during a
//! close and during the SIGTERM drain (docs/server.md, "What a 200 means").
//!
//! What must hold, each checked against the real process and the real store:
//! - every text that got a `200` is in the store afterwards, exactly once and in order;
//! - readers get `end` only after the seal is in the store, and then at the full length;
//! - while the store confirms nothing, appends turn into `503 backpressure` with `Retry-After`
//!   (appending nothing) instead of an unbounded run of `200`s;
//! - a repeated close during the outage waits for the same seal;
//! - `/readyz` is `503 store` while PostgreSQL is away and `200` once it is back, and `503
//!   draining` from the SIGTERM on, while `/healthz` stays `200` (a load balancer stops sending
//!   readers to an instance that cannot serve them or is going away).
//!
//! PostgreSQL here is a private cluster (scripts/pg.sh with its own directory and port), since
//! the test stops it; under `TWOPLANE_REQUIRE_SERVICES=1` a cluster that cannot start fails the
//! test, otherwise it is skipped with a line saying so.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::cluster::{http, http_full, Instance, Sse};
use twoplane_core::json::decode_frame;
use twoplane_core::{Frame, Text};

/// How long the store stays away.
const OUTAGE: Duration = Duration::from_secs(10);
/// The server's `--max-undurable-ms`: short, so backpressure shows well inside the outage.
const MAX_UNDURABLE_MS: u64 = 2_000;

fn serve_args(store: &[&str]) -> Vec<String> {
    let bound = MAX_UNDURABLE_MS.to_string();
    let mut args: Vec<String> = store.iter().map(|s| s.to_string()).collect();
    args.extend(
        [
            "--listen",
            "127.0.0.1:0",
            "--max-undurable-ms",
            &bound,
            "--seal-deadline-ms",
            "60000",
            "--keep-alive-ms",
            "500",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    args
}

fn start(name: &str, store: &[&str], logs: &Path) -> Instance {
    let (name, child, log) = Instance::spawn(name, &serve_args(store), logs);
    Instance::ready(name, child, log)
}

/// The text every `200` acknowledged, and the checks on the answers.
struct Producer {
    addr: SocketAddr,
    id: String,
    acked: String,
    acked_len: u64,
}

impl Producer {
    async fn open(addr: SocketAddr, id: &str) -> Producer {
        let (status, body, _) =
            http(addr, "POST", &format!("/v1/streams/{id}/open"), Some(r#"{"create":true}"#.into())).await.unwrap();
        assert_eq!(status, 200, "open {id}: {body}");
        Producer { addr, id: id.to_owned(), acked: String::new(), acked_len: 0 }
    }

    /// One append at the acknowledged length: `Ok(durableSeq)` on a 200, `Err(reply)` otherwise.
    async fn append(&mut self, text: &str) -> Result<u64, common::cluster::Reply> {
        let path = format!("/v1/streams/{}/append?offset={}", self.id, self.acked_len);
        let reply = http_full(self.addr, "POST", &path, Some(text.to_owned())).await.unwrap();
        if reply.status != 200 {
            return Err(reply);
        }
        self.acked.push_str(text);
        self.acked_len += Text::from(text).len() as u64;
        assert_eq!(reply.json["seq"], self.acked_len, "{}", reply.raw);
        let durable = reply.json["durableSeq"].as_u64().expect("durableSeq");
        assert!(durable <= self.acked_len);
        Ok(durable)
    }

    async fn flush(&self) {
        let (status, body, _) = http(self.addr, "POST", &format!("/v1/streams/{}/flush", self.id), None).await.unwrap();
        assert_eq!((status, body["durableSeq"].as_u64()), (200, Some(self.acked_len)), "{body}");
    }

    /// Append small deltas every 100 ms until one is refused: it must be `503 backpressure`
    /// with `Retry-After`, within the bound (plus the time a checkpoint round takes to fail).
    async fn append_until_backpressure(&mut self, outage_began: Instant) {
        let mut n = 0;
        loop {
            n += 1;
            match self.append(&format!("during the outage {n}; ")).await {
                Ok(_) => {}
                Err(reply) => {
                    assert_eq!(
                        (reply.status, reply.json["kind"].as_str()),
                        (503, Some("backpressure")),
                        "{}",
                        reply.raw
                    );
                    let retry: u64 = reply.headers["retry-after"].to_str().unwrap().parse().unwrap();
                    assert!((1..=5).contains(&retry), "Retry-After {retry}");
                    assert_eq!(reply.json["seq"], self.acked_len, "a refused append appends nothing");
                    let after = outage_began.elapsed();
                    assert!(after >= Duration::from_millis(MAX_UNDURABLE_MS / 2), "backpressure after only {after:?}");
                    assert!(after < Duration::from_millis(MAX_UNDURABLE_MS) + Duration::from_secs(5), "{after:?}");
                    // Still refused a moment later: the bound holds until the store answers.
                    let again = self.append("still?").await;
                    assert!(again.is_err_and(|r| r.json["kind"] == "backpressure"));
                    return;
                }
            }
            assert!(outage_began.elapsed() < OUTAGE, "200s for the whole outage: no backpressure");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// A reader of `id` from 0: every frame's text, and when (if) `end` came.
struct Reader {
    sse: Sse,
    text: Text,
    end: Option<(u64, Instant)>,
}

impl Reader {
    async fn join(addr: SocketAddr, id: &str) -> Reader {
        let sse = Sse::get(addr, &format!("/api/stream?streamId={id}&from=0"), None).await.unwrap();
        Reader { sse, text: Text::default(), end: None }
    }

    /// Read what arrives for `within`; stop at `end`.
    async fn read_for(&mut self, within: Duration) {
        let until = Instant::now() + within;
        while self.end.is_none() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            // One deadline for the whole wait: `event_within` restarts its timeout at every
            // body frame, and keep-alive comments arrive twice a second.
            let event = match tokio::time::timeout(left, self.sse.event()).await {
                Ok(Ok(Some(e))) => e,
                Ok(Ok(None)) => panic!("the SSE response ended without `end`"),
                Ok(Err(e)) => panic!("the SSE response failed: {e}"),
                Err(_) => return, // nothing more within the time left
            };
            if event.data.is_empty() {
                continue;
            }
            match decode_frame(&event.data).unwrap_or_else(|e| panic!("bad frame {:?}: {e}", event.data)) {
                Frame::Chunk { from, text, .. } => {
                    assert_eq!(from, self.text.len() as u64, "a gap or a doubled delta");
                    self.text.push_units(text.units());
                }
                Frame::End { seq, .. } => self.end = Some((seq, Instant::now())),
                Frame::Stale { .. } => panic!("the reader was sent to the store: {}", event.data),
                _ => {}
            }
        }
    }
}

/// What the store holds for a stream: its text (body plus chunk rows) and status.
type Stored = (String, Option<String>);

/// `/readyz`: its status and, when refused, its `kind`.
async fn readiness(addr: SocketAddr) -> (u16, Option<String>) {
    let reply = http_full(addr, "GET", "/readyz", None).await.unwrap();
    (reply.status, reply.json["kind"].as_str().map(str::to_owned))
}

/// `/healthz` answers `200 ok` (the liveness check; not JSON).
async fn alive(addr: SocketAddr) -> bool {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let request = hyper::Request::get("/healthz").header("host", addr.to_string()).body(String::new()).unwrap();
    sender.send_request(request).await.is_ok_and(|r| r.status() == 200)
}

/// Stop the store, check what must hold while it is away, and bring it back after [`OUTAGE`];
/// returns when it is back. `unready_while_down`: the store's absence is one a read sees (a
/// stopped server, not a held write lock), so `/readyz` must say so.
async fn outage_during_close(
    addr: SocketAddr,
    id: &str,
    down: impl FnOnce(),
    up: impl FnOnce(),
    stored: impl AsyncFn(&str) -> Stored,
    unready_while_down: bool,
) {
    let mut p = Producer::open(addr, id).await;
    let mut r = Reader::join(addr, id).await;
    p.append("before the outage. ").await.unwrap();
    p.flush().await;
    assert_eq!(readiness(addr).await, (200, None), "{id}: /readyz before the outage");
    down();
    let began = Instant::now();
    p.append_until_backpressure(began).await;
    if unready_while_down {
        assert_eq!(readiness(addr).await, (503, Some("store".into())), "{id}: /readyz with the store away");
        assert!(alive(addr).await, "{id}: /healthz with the store away");
    }
    // Two closes during the outage: both wait for the one seal.
    let close = |addr: SocketAddr, id: String| async move {
        let reply = http_full(addr, "POST", &format!("/v1/streams/{id}/close"), None).await;
        (reply, Instant::now())
    };
    let first = tokio::spawn(close(addr, id.to_owned()));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = tokio::spawn(close(addr, id.to_owned()));
    r.read_for(OUTAGE.saturating_sub(began.elapsed())).await;
    assert!(r.end.is_none(), "{id}: a reader got `end` while the store was away");
    assert!(!first.is_finished() && !second.is_finished(), "{id}: a close answered during the outage");
    up();
    let back = Instant::now();
    for closing in [first, second] {
        let (reply, at) = closing.await.unwrap();
        let reply = reply.unwrap();
        assert_eq!(reply.status, 200, "{id}: close after the outage: {}", reply.raw);
        assert_eq!(
            (reply.json["seq"].as_u64(), reply.json["durableSeq"].as_u64()),
            (Some(p.acked_len), Some(p.acked_len))
        );
        assert!(at >= back);
    }
    r.read_for(Duration::from_secs(10)).await;
    let (end_seq, end_at) = r.end.unwrap_or_else(|| panic!("{id}: no `end` after the seal"));
    assert!(end_at >= back, "{id}: `end` before the store was back");
    assert_eq!(end_seq, p.acked_len);
    assert_eq!(r.text, Text::from(p.acked.as_str()));
    assert_eq!(stored(id).await, (p.acked.clone(), Some("complete".into())), "{id}: the store after the close");
    assert_eq!(readiness(addr).await, (200, None), "{id}: /readyz once the store is back");
}

/// The same outage during the SIGTERM drain: the process waits for the seal, then exits.
async fn outage_during_drain(
    server: &mut Instance,
    id: &str,
    down: impl FnOnce(),
    up: impl FnOnce(),
    stored: impl AsyncFn(&str) -> Stored,
) {
    let addr = server.addr;
    let mut p = Producer::open(addr, id).await;
    let mut r = Reader::join(addr, id).await;
    p.append("before the drain. ").await.unwrap();
    p.flush().await;
    down();
    let began = Instant::now();
    p.append("acknowledged, held in memory only. ").await.unwrap();
    server.signal(libc::SIGTERM);
    // From the first moment of the drain, whatever the store does: no new readers here.
    let deadline = Instant::now() + Duration::from_secs(2);
    while readiness(addr).await != (503, Some("draining".into())) {
        assert!(Instant::now() < deadline, "{id}: /readyz still ready 2 s after SIGTERM");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(alive(addr).await, "{id}: /healthz during the drain");
    r.read_for(OUTAGE.saturating_sub(began.elapsed())).await;
    assert!(r.end.is_none(), "{id}: a reader got `end` while the store was away");
    assert!(server.running(), "{id}: the server exited with its seal not in the store");
    up();
    let back = Instant::now();
    r.read_for(Duration::from_secs(10)).await;
    let (end_seq, end_at) = r.end.unwrap_or_else(|| panic!("{id}: no `end` after the store came back"));
    assert!(end_at >= back);
    assert_eq!(end_seq, p.acked_len);
    let deadline = Instant::now() + Duration::from_secs(15);
    while server.running() {
        assert!(Instant::now() < deadline, "{id}: the server did not exit after its seal landed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(stored(id).await, (p.acked.clone(), Some("interrupted".into())), "{id}: the store after the drain");
}

// ------------------------------------------------------------------------------------------
// PostgreSQL, stopped and started again

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts")
}

/// A private cluster (its own directory and port), started and stopped by scripts/pg.sh.
struct PrivatePg {
    dir: PathBuf,
    url: String,
}

impl PrivatePg {
    fn pg_sh(dir: &Path, verb: &str) -> Result<String, String> {
        let out = Command::new("bash")
            .arg(scripts().join("pg.sh"))
            .arg(verb)
            .env("TWOPLANE_PG_DIR", dir)
            .env("TWOPLANE_PG_PORT", "56632")
            .env_remove("TWOPLANE_PG_TLS")
            // Not the run's to stop: this test stops and removes it itself.
            .env_remove("TWOPLANE_STARTED_SERVICES")
            .output()
            .map_err(|e| format!("pg.sh {verb}: {e}"))?;
        if !out.status.success() {
            return Err(format!("pg.sh {verb} failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn start() -> Result<PrivatePg, String> {
        let dir = std::env::temp_dir().join(format!("twoplane-pg-outage-{}", std::process::id()));
        let out = PrivatePg::pg_sh(&dir, "start")?;
        let url = out
            .split_whitespace()
            .find_map(|w| w.strip_prefix("TWOPLANE_PG_URL="))
            .ok_or("pg.sh printed no URL")?
            .to_owned();
        Ok(PrivatePg { dir, url })
    }

    fn stop(&self) {
        PrivatePg::pg_sh(&self.dir, "stop").unwrap();
    }

    /// Start it again; the same port, so the server's URL still reaches it.
    fn restart(&self) {
        let out = PrivatePg::pg_sh(&self.dir, "start").unwrap();
        assert!(out.contains(&self.url), "the cluster came back on another port");
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let _ = PrivatePg::pg_sh(&self.dir, "stop");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn pg_stored(url: &str, id: &str) -> Stored {
    let client = common::cluster::pg(url).await;
    let row = common::store::stored_row(&client, id).await.unwrap();
    let mut failures = Vec::new();
    let text = common::store::tiled_text(id, &row, &mut failures);
    assert!(failures.is_empty(), "{failures:?}");
    (String::from_utf16(text.units()).unwrap(), row.status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stopped_for_ten_seconds_loses_nothing_that_got_a_200() {
    let pg = match PrivatePg::start() {
        Ok(pg) => pg,
        Err(e) if std::env::var("TWOPLANE_REQUIRE_SERVICES").as_deref() == Ok("1") => panic!("{e}"),
        Err(e) => return eprintln!("skipped: no private PostgreSQL ({e})"),
    };
    let logs = tempfile::tempdir().unwrap();
    let mut server = start("pg", &["--pg", &pg.url], logs.path());
    let stored = async |id: &str| pg_stored(&pg.url, id).await;
    outage_during_close(server.addr, "pg-close", || pg.stop(), || pg.restart(), &stored, true).await;
    outage_during_drain(&mut server, "pg-drain", || pg.stop(), || pg.restart(), &stored).await;
    let log = server.log_text();
    assert!(!log.contains("panicked"), "{log}");
}

// ------------------------------------------------------------------------------------------
// SQLite, locked by another connection

/// Holds the database's write lock from another connection until dropped.
struct WriteLock {
    release: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WriteLock {
    fn take(db: &Path) -> WriteLock {
        let (locked_tx, locked_rx) = std::sync::mpsc::channel();
        let (release, release_rx) = std::sync::mpsc::channel::<()>();
        let db = db.to_owned();
        let thread = std::thread::spawn(move || {
            let conn = rusqlite::Connection::open(&db).unwrap();
            // In WAL mode an exclusive transaction shuts out every other writer: the server's
            // checkpoints and seals wait out their busy timeout and fail, as on a full disk or
            // a file another program holds.
            conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
            locked_tx.send(()).unwrap();
            let _ = release_rx.recv();
            conn.execute_batch("ROLLBACK").unwrap();
        });
        locked_rx.recv_timeout(Duration::from_secs(10)).expect("the write lock");
        WriteLock { release: Some(release), thread: Some(thread) }
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        drop(self.release.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn sqlite_stored(db: &Path, id: &str) -> Stored {
    let conn = rusqlite::Connection::open(db).unwrap();
    let (body, status): (String, Option<String>) = conn
        .query_row("SELECT body, status FROM messages WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    let mut chunks =
        conn.prepare(r#"SELECT "text" FROM "message_chunks" WHERE "streamId" = ?1 ORDER BY "seq""#).unwrap();
    let rest: Vec<String> = chunks.query_map([id], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    (body + &rest.concat(), status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sqlite_file_that_cannot_be_written_for_ten_seconds_loses_nothing_that_got_a_200() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("outage.db");
    let db_arg = db.to_str().unwrap().to_owned();
    let mut server = start("sqlite", &["--db", &db_arg], dir.path());
    let lock = std::sync::Mutex::new(None);
    let down = || *lock.lock().unwrap() = Some(WriteLock::take(&db));
    let up = || drop(lock.lock().unwrap().take());
    let stored = async |id: &str| sqlite_stored(&db, id);
    outage_during_close(server.addr, "sqlite-close", down, up, &stored, false).await;
    outage_during_drain(&mut server, "sqlite-drain", down, up, &stored).await;
    let log = server.log_text();
    assert!(!log.contains("panicked"), "{log}");
}
