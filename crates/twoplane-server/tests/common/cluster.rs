//! A harness for tests that run real `twoplane serve` processes against the PostgreSQL and Redis
//! that `scripts/test-multi.sh` starts: a fresh database per scenario, child processes whose
//! stdout and stderr land in one log file each, signals (SIGSTOP, SIGCONT, SIGTERM), and small
//! HTTP and SSE clients for loopback; and [`report`], the secrets check and failure report that
//! ends a scenario.
//!
//! Guarantees: every wait is bounded ([`EVENT_TIMEOUT`] for HTTP and SSE, 30 s for a start, 15 s
//! for an exit after SIGTERM); a dropped [`Instance`] is killed (stopped or not); nothing here
//! prints a URL (they may carry passwords).
#![allow(dead_code)] // each test binary uses a different part of `common`

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::Value;
use tokio_postgres::NoTls;
use twoplane_core::sse::{SseDecoder, SseEvent};

pub const BIN: &str = env!("CARGO_BIN_EXE_twoplane");

/// Bound on one HTTP exchange and on the wait for one SSE event.
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(20);

/// A service URL from the environment, or a panic that says how to get one.
pub fn service_url(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!("{name} is not set: run `bash scripts/test-multi.sh`, which starts PostgreSQL and Redis"),
    }
}

// ------------------------------------------------------------------------------------------
// A fresh database per scenario

pub struct Database {
    admin_url: String,
    pub name: String,
    pub url: String,
}

/// `url` with its database name replaced.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.find('?') {
        Some(q) => (&url[..q], &url[q..]),
        None => (url, ""),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[scheme_end..].find('/').map_or(base.len(), |i| scheme_end + i);
    format!("{}/{name}{query}", &base[..path_start])
}

/// A client on `url` (its connection task spawned). The panic names the failure, not the URL.
pub async fn pg(url: &str) -> tokio_postgres::Client {
    let (client, connection) =
        tokio_postgres::connect(url, NoTls).await.unwrap_or_else(|e| panic!("connecting to PostgreSQL: {e}"));
    tokio::spawn(connection);
    client
}

impl Database {
    /// Create `<prefix>_<label>_<pid>_<seed>`, after dropping what earlier runs with the same
    /// prefix left behind.
    pub async fn create(admin_url: &str, prefix: &str, label: &str, seed: u64) -> Database {
        let admin = pg(admin_url).await;
        let old =
            admin.query("SELECT datname::text FROM pg_database WHERE datname LIKE $1", &[&format!("{prefix}_%")]).await;
        for row in old.unwrap() {
            let name: String = row.get(0);
            let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).await;
        }
        let name = format!("{prefix}_{label}_{}_{seed}", std::process::id());
        admin.batch_execute(&format!("CREATE DATABASE \"{name}\"")).await.unwrap();
        Database { admin_url: admin_url.to_owned(), url: with_database(admin_url, &name), name }
    }

    pub async fn drop_it(self) {
        let admin = pg(&self.admin_url).await;
        admin.batch_execute(&format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name)).await.unwrap();
    }
}

// ------------------------------------------------------------------------------------------
// The instances

/// How a scenario's instances are timed (each scenario picks its own).
pub struct Timings {
    pub lease_ttl_ms: u64,
    pub sweep_interval_ms: u64,
    pub tokens_per_second: u32,
}

/// The arguments of one `twoplane serve --demo` instance on `db` and `redis` as `host`: loopback
/// on a free port, the given timings, keep-alives every second, and `extra` (the relay's
/// settings) last.
pub fn serve_args(db: &Database, redis: &str, host: &str, timings: &Timings, extra: &[&str]) -> Vec<String> {
    let (lease, sweep, tokens) = (
        timings.lease_ttl_ms.to_string(),
        timings.sweep_interval_ms.to_string(),
        timings.tokens_per_second.to_string(),
    );
    let base = [
        "--demo",
        "--listen",
        "127.0.0.1:0",
        "--pg",
        &db.url,
        "--redis",
        redis,
        "--host-id",
        host,
        "--lease-ttl-ms",
        &lease,
        "--sweep-interval-ms",
        &sweep,
        "--keep-alive-ms",
        "1000",
        "--demo-tokens-per-second",
        &tokens,
    ];
    base.iter().chain(extra).map(|s| s.to_string()).collect()
}

pub struct Instance {
    pub name: String,
    child: Option<Child>,
    pub addr: SocketAddr,
    pub log: PathBuf,
}

impl Instance {
    /// Spawn `twoplane serve <args>` logging at `info`, stdout and stderr both into
    /// `<log_dir>/<name>.log`.
    pub fn spawn(name: &str, args: &[String], log_dir: &Path) -> (String, Child, PathBuf) {
        Instance::spawn_logging(name, args, log_dir, "info")
    }

    /// [`Instance::spawn`] with `rust_log` as the process's `RUST_LOG` filter.
    pub fn spawn_logging(name: &str, args: &[String], log_dir: &Path, rust_log: &str) -> (String, Child, PathBuf) {
        let log = log_dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(BIN)
            .arg("serve")
            .args(args)
            .args((!super::direct_sse()).then_some("--no-direct-sse"))
            .env("RUST_LOG", rust_log)
            .stdin(Stdio::null())
            // Both streams into the log: the secrets check reads everything the process wrote.
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        (name.to_owned(), child, log)
    }

    /// Wait for the `listening addr=` line of a spawned instance.
    pub fn ready(name: String, mut child: Child, log: PathBuf) -> Instance {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(rest) = text.split("listening addr=").nth(1) {
                let addr = rest.split_whitespace().next().unwrap().parse().unwrap();
                return Instance { name, child: Some(child), addr, log };
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("instance {name} exited during startup ({status}):\n{text}");
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("instance {name} did not start within 30 s:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Start instances together (so their schema creation races, as in a deployment).
    pub fn start_all(specs: &[(&str, Vec<String>)], log_dir: &Path) -> Vec<Instance> {
        Instance::start_all_logging(specs, log_dir, "info")
    }

    /// [`Instance::start_all`] with `rust_log` as every process's `RUST_LOG` filter.
    pub fn start_all_logging(specs: &[(&str, Vec<String>)], log_dir: &Path, rust_log: &str) -> Vec<Instance> {
        let spawned: Vec<_> =
            specs.iter().map(|(name, args)| Instance::spawn_logging(name, args, log_dir, rust_log)).collect();
        spawned.into_iter().map(|(name, child, log)| Instance::ready(name, child, log)).collect()
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// Send `signal` to the running child.
    pub fn signal(&self, signal: i32) {
        if let Some(child) = &self.child {
            // SAFETY: signalling the child this test spawned, by its pid.
            unsafe { libc::kill(child.id() as i32, signal) };
        }
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGKILL ends a stopped process too.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, then wait (bounded) for the exit.
    pub fn terminate(&mut self) -> Result<ExitStatus, String> {
        let Some(mut child) = self.child.take() else { return Err(format!("{} is not running", self.name)) };
        // SAFETY: signalling the child this test spawned, by its pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} did not exit within 15 s of SIGTERM", self.name));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait (bounded by `within`) for the child to exit on its own; `None` when it has not.
    pub fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            let child = self.child.as_mut()?;
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the child is still running.
    pub fn running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Everything the process wrote so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn log_tail(&self, lines: usize) -> String {
        let text = self.log_text();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The end of a scenario: the secrets check over every instance's log, the `seen` texts (named
/// response bodies, SSE data) and the failures; then, when anything failed, a panic with each
/// log's last `tail` lines and the failures.
pub fn report(failures: Vec<String>, instances: &[Instance], seen: &[(String, String)], tail: usize) {
    // No configured password in any log line, anything seen or any failure (docs/server.md, "Secrets").
    let mut texts: Vec<(String, String)> = seen.to_vec();
    texts.extend(instances.iter().map(|inst| (inst.log.display().to_string(), inst.log_text())));
    texts.extend(failures.iter().enumerate().map(|(i, f)| (format!("failure #{i}"), f.clone())));
    super::secrets::assert_no_secrets_named(&texts);
    if failures.is_empty() {
        return;
    }
    let mut out = String::new();
    for inst in instances {
        let _ = writeln!(out, "---- last lines of {} ({}):\n{}", inst.name, inst.log.display(), inst.log_tail(tail));
    }
    let _ = writeln!(out, "---- {} failure(s):", failures.len());
    for f in &failures {
        let _ = writeln!(out, "  {f}");
    }
    panic!("{out}");
}

// ------------------------------------------------------------------------------------------
// HTTP

/// One request; the response's status and JSON body (and the raw body, for the secrets check).
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<String>,
) -> Result<(u16, Value, String), String> {
    http_full(addr, method, path, body).await.map(|r| (r.status, r.json, r.raw))
}

/// A response with its headers.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub json: Value,
    pub raw: String,
}

/// [`http`], keeping the response's headers.
pub async fn http_full(addr: SocketAddr, method: &str, path: &str, body: Option<String>) -> Result<Reply, String> {
    let call = async {
        let stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| format!("connect {addr}: {e}"))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        let conn = tokio::spawn(conn);
        let mut request = hyper::Request::builder().method(method).uri(path).header("host", addr.to_string());
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let request = request.body(Full::new(Bytes::from(body.unwrap_or_default()))).map_err(|e| e.to_string())?;
        let response = sender.send_request(request).await.map_err(|e| format!("{method} {path}: {e}"))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
        conn.abort();
        let raw = String::from_utf8_lossy(&bytes).into_owned();
        let json = serde_json::from_slice(&bytes).map_err(|e| format!("{method} {path}: {status} {raw}: {e}"))?;
        Ok(Reply { status, headers, json, raw })
    };
    tokio::time::timeout(EVENT_TIMEOUT, call).await.map_err(|_| format!("{method} {path} on {addr} timed out"))?
}

/// One SSE response, read event by event.
pub struct Sse {
    body: Incoming,
    decoder: SseDecoder,
    pending: std::collections::VecDeque<SseEvent>,
    ended: bool,
    conn: tokio::task::JoinHandle<()>,
}

impl Sse {
    pub async fn get(addr: SocketAddr, path: &str, last_event_id: Option<&str>) -> Result<Sse, String> {
        let open = async {
            let stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| format!("connect {addr}: {e}"))?;
            let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| e.to_string())?;
            let conn = tokio::spawn(async move {
                let _ = conn.await;
            });
            let mut request = hyper::Request::get(path).header("host", addr.to_string());
            if let Some(id) = last_event_id {
                request = request.header("last-event-id", id);
            }
            let response = sender
                .send_request(request.body(Full::new(Bytes::new())).map_err(|e| e.to_string())?)
                .await
                .map_err(|e| format!("GET {path}: {e}"))?;
            if response.status() != 200 {
                return Err(format!("GET {path} on {addr}: {}", response.status()));
            }
            Ok(Sse {
                body: response.into_body(),
                decoder: SseDecoder::new(),
                pending: Default::default(),
                ended: false,
                conn,
            })
        };
        tokio::time::timeout(EVENT_TIMEOUT, open).await.map_err(|_| format!("GET {path} on {addr} timed out"))?
    }

    /// The next event within `within`; `None` when the body ended.
    pub async fn event_within(&mut self, within: Duration) -> Result<Option<SseEvent>, String> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Ok(Some(e));
            }
            if self.ended {
                return Ok(None);
            }
            let next = tokio::time::timeout(within, self.body.frame())
                .await
                .map_err(|_| format!("no SSE event within {within:?}"))?;
            let mut out = Vec::new();
            match next {
                None => {
                    self.ended = true;
                    self.decoder.finish(&mut out);
                }
                Some(Err(e)) => return Err(format!("the SSE body failed: {e}")),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.decoder.feed(&data, &mut out);
                    }
                }
            }
            self.pending.extend(out);
        }
    }

    /// The next event within [`EVENT_TIMEOUT`].
    pub async fn event(&mut self) -> Result<Option<SseEvent>, String> {
        self.event_within(EVENT_TIMEOUT).await
    }
}

impl Drop for Sse {
    fn drop(&mut self) {
        self.conn.abort();
    }
}
