//! 1,000 joins at offset 0 of a long stream held by a spawned `twoplane serve` (SQLite, real
//! processes on loopback): the server's memory grows by a small multiple of the text, not by a
//! copy of it per joiner, and the readers still get the whole text exactly.
//!
//! The stream holds 1,000,000 UTF-16 units (ASCII with an astral pair every ten units, so
//! pieces are cut near pairs). Each reader connects with a small receive window, sends its
//! subscribe and reads only the response head, so whatever the server made for its replay stays
//! in the server: a replay copied per subscriber (the old join) held about a megabyte per reader
//! there. Then the stream is closed; [`VERIFIED`] of the readers read to `end`, checking each
//! chunk against the text at its offset (no gap, no doubling), and the others hang up (reading
//! 2 GB of JSON through a debug build took a minute and proved nothing more). The server's RSS growth over the whole run is
//! printed and must stay under [`bound`]; the test gives up as soon as it is past it, so a
//! regression fails fast instead of eating the machine's memory. Bounded in time and count; it
//! stops by itself.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::{http, Instance};
use common::process::{raise_open_files, rss};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const READERS: usize = 1_000;
/// How many of them read the whole text to `end`, while the rest hang up.
const VERIFIED: usize = 50;
const UNITS: usize = 1_000_000;
/// The text as the server holds it: two bytes per unit.
const TEXT_BYTES: u64 = 2 * UNITS as u64;
/// What one reader may hold in the server beside the shared text: its connection, its
/// subscription, and part of a batch its socket has not taken. Tight on purpose: the kernel's
/// send buffers take most of what a replay writes (about 1.6 MB per stalled reader here, outside
/// the RSS), so a copy per joiner shows in the RSS only briefly, and a looser bound let the old
/// copying join pass (measured: 92 MiB of growth against 9 MiB with shared text).
const PER_READER: u64 = 16 << 10;
/// The process's own growth unrelated to replays (allocator arenas, runtime, the checkpoint).
const FIXED: u64 = 16 << 20;

/// The most RSS growth allowed: eight times the text, plus the readers' own and a fixed part
/// (46 MiB here).
fn bound() -> u64 {
    8 * TEXT_BYTES + READERS as u64 * PER_READER + FIXED
}

/// Pages the kernel holds in TCP buffers, machine-wide (`/proc/net/sockstat`), for the report.
fn tcp_pages() -> u64 {
    let stat = std::fs::read_to_string("/proc/net/sockstat").unwrap_or_default();
    stat.lines()
        .find(|l| l.starts_with("TCP:"))
        .and_then(|l| l.split_whitespace().skip_while(|w| *w != "mem").nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The stream's text: ten units per repetition, the last two an astral pair.
fn text() -> String {
    "abcdefgh😀".repeat(UNITS / 10)
}

/// Connect with a small receive window and subscribe; read the response head only (the first
/// read's bytes are returned: they may already hold the first events).
async fn join(addr: SocketAddr) -> (TcpStream, Vec<u8>) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = tokio::time::timeout(Duration::from_secs(10), socket.connect(addr)).await.unwrap().unwrap();
    let request = "GET /api/stream?streamId=big&from=0 HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n";
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = vec![0u8; 512];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut head)).await.unwrap().unwrap();
    head.truncate(n);
    assert!(head.starts_with(b"HTTP/1.1 200"), "a join was refused: {}", String::from_utf8_lossy(&head));
    (stream, head)
}

/// Read to `end`, checking every chunk against `units` at its offset; the units received.
async fn read_to_end((mut stream, first): (TcpStream, Vec<u8>), units: Arc<Vec<u16>>) -> Result<usize, String> {
    // The window was small for the joins; reading wants a larger one.
    let _ = socket2::SockRef::from(&stream).set_recv_buffer_size(256 << 10);
    let mut buf = vec![0u8; 64 << 10];
    let mut pending: Vec<u8> = first;
    let mut next = 0usize;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // Complete lines only: a `data:` line is one whole event's JSON (chunk-size lines of
        // the chunked body fall between events and are skipped).
        while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=nl).collect();
            let Some(data) = line.strip_prefix(b"data: ") else { continue };
            let v: serde_json::Value = serde_json::from_slice(data).map_err(|e| e.to_string())?;
            match v["type"].as_str() {
                Some("chunk") => {
                    let from = v["from"].as_u64().ok_or("chunk without from")? as usize;
                    let seq = v["seq"].as_u64().ok_or("chunk without seq")? as usize;
                    if from != next {
                        return Err(format!("chunk from {from} after {next} units (contract S)"));
                    }
                    let got: Vec<u16> = v["text"].as_str().ok_or("chunk without text")?.encode_utf16().collect();
                    if seq != from + got.len() || units.get(from..seq) != Some(&got[..]) {
                        return Err(format!("chunk {from}..{seq} is not the text there"));
                    }
                    next = seq;
                }
                Some("end") => return Ok(next),
                _ => {}
            }
        }
        let left = deadline.checked_duration_since(Instant::now()).ok_or("no end within 60 s")?;
        let n = tokio::time::timeout(left, stream.read(&mut buf))
            .await
            .map_err(|_| "timed out")?
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(format!("closed after {next} units"));
        }
        pending.extend_from_slice(&buf[..n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_joins_at_zero_share_the_text() {
    raise_open_files(READERS + 200);
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let args: Vec<String> = [
        "--listen",
        "127.0.0.1:0",
        "--db",
        db.to_str().unwrap(),
        "--max-connections",
        "3000",
        "--max-connections-per-ip",
        "3000",
        "--max-waiting-heads",
        "500",
        "--max-subscribers-per-stream",
        "2000",
        "--max-subscribers-per-ip",
        "2000",
        "--write-stall-ms",
        "120000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (name, child, log) = Instance::spawn("replay", &args, dir.path());
    let mut server = Instance::ready(name, child, log);
    let (addr, pid) = (server.addr, server.pid());
    let (status, _, raw) = http(addr, "POST", "/v1/streams/big/open", Some(r#"{"create":true}"#.into())).await.unwrap();
    assert_eq!(status, 200, "{raw}");
    let whole = text();
    let units: Arc<Vec<u16>> = Arc::new(whole.encode_utf16().collect());
    assert_eq!(units.len(), UNITS);
    // Ten appends of 100,000 units each (whole repetitions: no pair is split here).
    let part = "abcdefgh😀".repeat(UNITS / 100);
    for i in 0..10 {
        let path = format!("/v1/streams/big/append?offset={}", i * UNITS / 10);
        let (status, _, raw) = http(addr, "POST", &path, Some(part.clone())).await.unwrap();
        assert_eq!(status, 200, "append {i}: {raw}");
    }
    let (status, _, raw) = http(addr, "POST", "/v1/streams/big/flush", None).await.unwrap();
    assert_eq!(status, 200, "{raw}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = rss(pid);
    let tcp_before = tcp_pages();
    let bound = bound();
    let mut peak = before;
    let over = |peak: u64| peak.saturating_sub(before) > bound;

    let mut joined = Vec::with_capacity(READERS);
    for i in 0..READERS {
        joined.push(join(addr).await);
        if i % 50 == 49 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            peak = peak.max(rss(pid));
            assert!(
                !over(peak),
                "after {} joins the server's RSS grew by {} MiB, over the bound of {} MiB",
                i + 1,
                (peak - before) >> 20,
                bound >> 20
            );
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    peak = peak.max(rss(pid));
    let after_joins = peak.saturating_sub(before);
    let tcp_held = tcp_pages().saturating_sub(tcp_before) * 4096;
    assert!(!over(peak), "after {READERS} joins the server's RSS grew by {} MiB", after_joins >> 20);

    let (status, _, raw) = http(addr, "POST", "/v1/streams/big/close", None).await.unwrap();
    assert_eq!(status, 200, "{raw}");
    let hanging_up = joined.split_off(VERIFIED);
    drop(hanging_up);
    let readers: Vec<_> = joined.into_iter().map(|s| tokio::spawn(read_to_end(s, units.clone()))).collect();
    let mut reading = tokio::spawn(async move {
        let mut results = Vec::new();
        for r in readers {
            results.push(r.await.unwrap());
        }
        results
    });
    let results = loop {
        tokio::select! {
            done = &mut reading => break done.unwrap(),
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                peak = peak.max(rss(pid));
                if over(peak) {
                    reading.abort();
                    panic!("while reading the server's RSS grew by {} MiB, over {} MiB", (peak - before) >> 20, bound >> 20);
                }
            }
        }
    };
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.as_ref().map_err(String::as_str), Ok(&UNITS), "reader {i} did not get the whole text");
    }
    eprintln!(
        "replay_memory: {READERS} joins at 0 of {UNITS} units ({} KB held), {VERIFIED} read to the end: server RSS {} MiB \
         before, growth {} MiB after the joins and {} MiB at most (bound {} MiB = 8 x the text + {} KiB per reader + {} \
         MiB); the kernel's TCP buffers grew by {} MiB; {:?} in all",
        TEXT_BYTES / 1000,
        before >> 20,
        after_joins >> 20,
        (peak - before) >> 20,
        bound >> 20,
        PER_READER >> 10,
        FIXED >> 20,
        tcp_held >> 20,
        started.elapsed()
    );
    let _ = server.terminate();
}
