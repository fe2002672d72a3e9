//! A flood against `twoplane serve` with small connection limits, real processes on loopback:
//! 5,000 connections that send nothing (from 127.0.0.2) and 500 SSE readers that never read,
//! with the smallest receive window the kernel allows (from 127.0.0.3), while a producer (from
//! 127.0.0.1) appends and a few readers that behave (from 127.0.0.4) follow the stream.
//!
//! What must hold: every append answers (their p99 is printed), every reader that behaves ends
//! with the whole text, the server's descriptors stay under its connection limit plus its own
//! (the bound is printed), and its RSS stays under [`RSS_BOUND`]. Bounded in time and count; it
//! stops by itself.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::cluster::{http, Instance};
use common::process::{descriptors, raise_open_files, rss};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const SILENT: usize = 5_000;
const STALLED_READERS: usize = 500;
const GOOD_READERS: usize = 5;
const MAX_CONNECTIONS: usize = 400;
/// Descriptors the server has beside its connections (the SQLite files, the listener, logs...).
const OWN_DESCRIPTORS: usize = 64;
const RSS_BOUND: u64 = 256 << 20;
const DELTAS: usize = 300;

async fn connect_from(source: &str, to: SocketAddr, small_window: bool) -> Option<TcpStream> {
    let socket = TcpSocket::new_v4().ok()?;
    socket.bind(format!("{source}:0").parse().unwrap()).ok()?;
    if small_window {
        let _ = socket.set_recv_buffer_size(1);
    }
    tokio::time::timeout(Duration::from_secs(5), socket.connect(to)).await.ok()?.ok()
}

/// A reader that reads everything until the stream's end; the `data:` text it received.
async fn good_reader(addr: SocketAddr) -> Result<String, String> {
    let mut stream = connect_from("127.0.0.4", addr, false).await.ok_or("connect")?;
    let request = "GET /api/stream?streamId=flood&from=0 HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n";
    stream.write_all(request.as_bytes()).await.map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = Instant::now() + Duration::from_secs(60);
    while !String::from_utf8_lossy(&raw).contains(r#""type":"end""#) {
        let left = deadline.checked_duration_since(Instant::now()).ok_or("no end within 60 s")?;
        let n = tokio::time::timeout(left, stream.read(&mut buf))
            .await
            .map_err(|_| "timed out")?
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(format!(
                "closed before the end: {}",
                String::from_utf8_lossy(&raw[raw.len().saturating_sub(300)..])
            ));
        }
        raw.extend_from_slice(&buf[..n]);
    }
    Ok(String::from_utf8_lossy(&raw).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_silent_and_stalled_clients_leaves_producers_and_readers_served() {
    raise_open_files(SILENT + STALLED_READERS + 500);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let args: Vec<String> = [
        "--listen",
        "127.0.0.1:0",
        "--db",
        db.to_str().unwrap(),
        "--max-connections",
        &MAX_CONNECTIONS.to_string(),
        "--max-connections-per-ip",
        "200",
        "--write-stall-ms",
        "2000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (name, child, log) = Instance::spawn("flood", &args, dir.path());
    let mut server = Instance::ready(name, child, log);
    let (addr, pid) = (server.addr, server.pid());
    let (status, _, raw) =
        http(addr, "POST", "/v1/streams/flood/open", Some(r#"{"create":true}"#.into())).await.unwrap();
    assert_eq!(status, 200, "{raw}");

    let good: Vec<_> = (0..GOOD_READERS).map(|_| tokio::spawn(good_reader(addr))).collect();
    tokio::time::sleep(Duration::from_millis(200)).await;

    // The flood: silent connections and readers that never read, held open by this test.
    let mut held = Vec::new();
    for _ in 0..SILENT {
        if let Some(s) = connect_from("127.0.0.2", addr, false).await {
            held.push(s);
        }
    }
    let subscribe = "GET /api/stream?streamId=flood&from=0 HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n";
    for _ in 0..STALLED_READERS {
        if let Some(mut s) = connect_from("127.0.0.3", addr, true).await {
            let _ = s.write_all(subscribe.as_bytes()).await;
            held.push(s);
        }
    }

    // The producer appends 1 KiB deltas throughout, each timed.
    let delta = "abcdefgh".repeat(128);
    let mut latencies = Vec::new();
    let mut max_fds = 0;
    let mut max_rss = 0;
    for i in 0..DELTAS {
        let path = format!("/v1/streams/flood/append?offset={}", i * delta.len());
        let started = Instant::now();
        let answer =
            tokio::time::timeout(Duration::from_secs(10), http(addr, "POST", &path, Some(delta.clone()))).await;
        latencies.push(started.elapsed());
        let (status, _, raw) = answer.expect("an append answered within 10 s").expect("an append answered");
        assert_eq!(status, 200, "append {i}: {raw}");
        max_fds = max_fds.max(descriptors(pid));
        max_rss = max_rss.max(rss(pid));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (status, _, raw) = http(addr, "POST", "/v1/streams/flood/close", None).await.unwrap();
    assert_eq!(status, 200, "{raw}");

    let whole = delta.repeat(DELTAS);
    for reader in good {
        let raw = reader.await.unwrap().expect("a reader that behaves gets the whole stream");
        let text: String = raw
            .split("\n\n")
            .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
            .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
            .filter(|v| v["type"] == "chunk")
            .map(|v| v["text"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(text.len(), whole.len(), "a reader that behaves got {} of {} bytes", text.len(), whole.len());
        assert_eq!(text, whole);
    }
    drop(held);

    latencies.sort();
    let p99 = latencies[latencies.len() * 99 / 100];
    let fd_bound = MAX_CONNECTIONS + OWN_DESCRIPTORS;
    eprintln!(
        "flood: {SILENT} silent + {STALLED_READERS} stalled readers; append p99 {p99:?}, max {:?}; server descriptors \
         at most {max_fds} (bound {fd_bound}); server RSS at most {} MiB (bound {} MiB)",
        latencies.last().unwrap(),
        max_rss >> 20,
        RSS_BOUND >> 20
    );
    assert!(max_fds <= fd_bound, "{max_fds} descriptors, over {fd_bound}");
    assert!(max_rss <= RSS_BOUND, "RSS {max_rss} over {RSS_BOUND}");
    let _ = server.terminate();
}
