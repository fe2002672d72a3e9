//! Benchmark of the producer API: deltas ingested per second, and server CPU per ingested delta,
//! with 100 concurrent producers over loopback, through the streaming-body path and through
//! per-delta requests.
//!
//! `cargo run --release -p twoplane-server --example bench_producer [-- --producers 100
//! --body-deltas 2000 --request-deltas 300]`
//!
//! Two roles, one executable: the driver (no flags) starts the server role (`--server`: exactly
//! what `twoplane serve` runs, `serve::prepare` on a temporary SQLite file, with a producer
//! secret) as a child process, so the server's CPU (user + system, from /proc) is its own; then it
//! runs the producers in its own process, on one tokio runtime:
//! - body: every producer opens a stream and sends one chunked request body whose chunks are the
//!   deltas (8 bytes each); the server pushes each chunk as it arrives;
//! - requests: every producer opens a stream and sends its deltas one `append?offset=N` request
//!   at a time on one keep-alive connection.
//!
//! Each phase checks that every stream ends with exactly the bytes sent (the final `seq`), then
//! closes them. Checkpoints go to SQLite at the plane's default policy. The numbers are printed,
//! not asserted. Only 127.0.0.1 is used.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::Request;
use hyper_util::rt::TokioIo;
use twoplane_server::access::{Access, Secret};
use twoplane_server::serve::{self, ServeConfig, Store};

const SECRET: &str = "bench-producer-secret-0123456789abcdef";
const DELTA: &[u8] = b"abcdefgh";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--server") {
        return serve(&args[2]);
    }
    let mut producers = 100usize;
    let mut body_deltas = 2000u64;
    let mut request_deltas = 300u64;
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        let value = it.next().and_then(|v| v.parse::<u64>().ok());
        match (a.as_str(), value) {
            ("--producers", Some(v)) => producers = v as usize,
            ("--body-deltas", Some(v)) => body_deltas = v,
            ("--request-deltas", Some(v)) => request_deltas = v,
            _ => {
                eprintln!("usage: bench_producer [--producers N] [--body-deltas N] [--request-deltas N]");
                std::process::exit(2);
            }
        }
    }
    drive(producers, body_deltas, request_deltas);
}

// ---------------------------------------------------------------------------------- server

fn serve(db: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let access =
            Access { producer_token: Some(Secret::new(SECRET.as_bytes(), "bench").unwrap()), ..Access::default() };
        let config = ServeConfig { access, ..ServeConfig::local(Store::Sqlite(db.into())) };
        let running = serve::prepare(&config).await.expect("server starts");
        println!("{}", running.addr);
        running.serve(std::future::pending()).await.expect("serves");
    });
}

// ---------------------------------------------------------------------------------- driver

/// The server process's CPU time so far (user + system).
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/PID/stat");
    // Fields after the command (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let per_sec = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_micros(ticks * 1_000_000 / per_sec)
}

fn drive(producers: usize, body_deltas: u64, request_deltas: u64) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bench.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--server", db.to_str().unwrap()])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the server role");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr: SocketAddr = line.trim().parse().expect("the server prints its address");
    let pid = child.id();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    println!("bench_producer: {producers} concurrent producers, deltas of {} bytes, server pid {pid}", DELTA.len());
    println!("{:<10} {:>10} {:>10} {:>14} {:>16}", "path", "deltas", "seconds", "deltas/s", "server CPU/delta");
    for phase in [Phase::Body(body_deltas), Phase::Requests(request_deltas)] {
        let ids: Vec<String> = (0..producers).map(|i| format!("{}-{i}", phase.name())).collect();
        runtime.block_on(open_all(addr, &ids));
        let cpu0 = cpu_of(pid);
        let t0 = Instant::now();
        let seqs = runtime.block_on(run_phase(addr, &ids, phase));
        let elapsed = t0.elapsed();
        let cpu = cpu_of(pid) - cpu0;
        let per_stream = phase.deltas() * DELTA.len() as u64;
        assert!(seqs.iter().all(|&s| s == per_stream), "every stream holds exactly what was sent: {seqs:?}");
        runtime.block_on(close_all(addr, &ids));
        let total = phase.deltas() * producers as u64;
        println!(
            "{:<10} {:>10} {:>10.2} {:>14.0} {:>13.2} us",
            phase.name(),
            total,
            elapsed.as_secs_f64(),
            total as f64 / elapsed.as_secs_f64(),
            cpu.as_secs_f64() * 1e6 / total as f64
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[derive(Clone, Copy)]
enum Phase {
    Body(u64),
    Requests(u64),
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Body(_) => "body",
            Phase::Requests(_) => "requests",
        }
    }

    fn deltas(self) -> u64 {
        match self {
            Phase::Body(n) | Phase::Requests(n) => n,
        }
    }
}

type Sender<B> = hyper::client::conn::http1::SendRequest<B>;

async fn connect<B>(addr: SocketAddr) -> Sender<B>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    sender
}

fn post<B>(addr: SocketAddr, path: &str, body: B) -> Request<B> {
    Request::post(format!("http://{addr}{path}"))
        .header("host", addr.to_string())
        .header("authorization", format!("Bearer {SECRET}"))
        .header("content-type", "text/plain; charset=utf-8")
        .body(body)
        .unwrap()
}

/// POST `path` with a small body on a fresh connection; the status and the JSON answer.
async fn call(addr: SocketAddr, path: &str, body: &'static [u8]) -> (u16, serde_json::Value) {
    let mut sender = connect::<Full<Bytes>>(addr).await;
    let response = sender.send_request(post(addr, path, Full::new(Bytes::from_static(body)))).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null))
}

async fn open_all(addr: SocketAddr, ids: &[String]) {
    for id in ids {
        let (status, answer) = call(addr, &format!("/v1/streams/{id}/open"), br#"{"create":true}"#).await;
        assert_eq!(status, 200, "open {id}: {answer}");
    }
}

async fn close_all(addr: SocketAddr, ids: &[String]) {
    for id in ids {
        let (status, answer) = call(addr, &format!("/v1/streams/{id}/close"), b"").await;
        assert_eq!(status, 200, "close {id}: {answer}");
    }
}

/// Every producer at once; each one's final `seq`.
async fn run_phase(addr: SocketAddr, ids: &[String], phase: Phase) -> Vec<u64> {
    let start = Arc::new(tokio::sync::Barrier::new(ids.len()));
    let tasks: Vec<_> = ids
        .iter()
        .cloned()
        .map(|id| {
            let start = start.clone();
            tokio::spawn(async move {
                match phase {
                    Phase::Body(n) => body_producer(addr, &id, n, &start).await,
                    Phase::Requests(n) => request_producer(addr, &id, n, &start).await,
                }
            })
        })
        .collect();
    let mut seqs = Vec::with_capacity(tasks.len());
    for task in tasks {
        seqs.push(task.await.unwrap());
    }
    seqs
}

async fn body_producer(addr: SocketAddr, id: &str, deltas: u64, start: &tokio::sync::Barrier) -> u64 {
    let mut sender = connect(addr).await;
    let chunks = futures::stream::iter(
        (0..deltas).map(|_| Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from_static(DELTA)))),
    );
    start.wait().await;
    let response =
        sender.send_request(post(addr, &format!("/v1/streams/{id}/body"), StreamBody::new(chunks))).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()["seq"].as_u64().unwrap()
}

async fn request_producer(addr: SocketAddr, id: &str, deltas: u64, start: &tokio::sync::Barrier) -> u64 {
    let mut sender = connect::<Full<Bytes>>(addr).await;
    start.wait().await;
    let mut seq = 0;
    for _ in 0..deltas {
        sender.ready().await.unwrap();
        let path = format!("/v1/streams/{id}/append?offset={seq}");
        let response = sender.send_request(post(addr, &path, Full::new(Bytes::from_static(DELTA)))).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        seq = serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()["seq"].as_u64().unwrap();
    }
    seq
}
