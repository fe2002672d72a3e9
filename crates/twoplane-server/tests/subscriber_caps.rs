//! The subscriber caps of `twoplane serve` over real HTTP: past `--max-subscribers-per-stream`
//! or `--max-subscribers-per-ip` a subscribe answers `503` with `{"kind":
//! "too_many_subscribers"}` and a `Retry-After`, other streams and addresses are unaffected, and
//! a reader that leaves gives its place back. The AI SDK's resume route
//! (`/v1/streams/{id}/ui-message-stream`) is a reader like `/api/stream`: the same bounds (the
//! server-wide one too), counted together, and the same refusals.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{http, http_full, Instance, Sse};

fn start(dir: &std::path::Path) -> Instance {
    start_with(dir, &["--max-subscribers-per-stream", "2", "--max-subscribers-per-ip", "3"])
}

fn start_with(dir: &std::path::Path, flags: &[&str]) -> Instance {
    let db = dir.join("caps.db");
    let mut args: Vec<String> =
        ["--listen", "127.0.0.1:0", "--db", db.to_str().unwrap()].iter().map(|s| s.to_string()).collect();
    args.extend(flags.iter().map(|s| s.to_string()));
    let (name, child, log) = Instance::spawn("caps", &args, dir);
    Instance::ready(name, child, log)
}

async fn open(server: &Instance, id: &str) {
    let (status, _, raw) =
        http(server.addr, "POST", &format!("/v1/streams/{id}/open"), Some(r#"{"create":true}"#.into())).await.unwrap();
    assert_eq!(status, 200, "{raw}");
}

async fn refused(server: &Instance, id: &str) {
    refused_at(server, &format!("/api/stream?streamId={id}&from=0")).await;
}

/// A subscribe of `path` refused past a bound: JSON with its kind, and when to try again.
async fn refused_at(server: &Instance, path: &str) {
    let reply = http_full(server.addr, "GET", path, None).await.unwrap();
    assert_eq!((reply.status, reply.json["kind"].as_str()), (503, Some("too_many_subscribers")), "{}", reply.raw);
    assert_eq!(reply.headers["retry-after"], "5");
    assert_eq!(reply.headers["content-type"], "application/json");
}

/// The head of the answer to `GET path`, lowercased (the body of an ended stream follows it).
async fn response_head(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\n\r\n").as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await.unwrap().unwrap();
        assert!(n > 0, "closed before the head: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    String::from_utf8_lossy(&got[..end + 2]).to_lowercase()
}

fn ui(id: &str) -> String {
    format!("/v1/streams/{id}/ui-message-stream")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_a_cap_a_subscribe_is_refused_in_json_and_a_leaving_reader_gives_its_place_back() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    for id in ["a", "b"] {
        let (status, _, raw) =
            http(server.addr, "POST", &format!("/v1/streams/{id}/open"), Some(r#"{"create":true}"#.into()))
                .await
                .unwrap();
        assert_eq!(status, 200, "{raw}");
    }
    let path = |id: &str| format!("/api/stream?streamId={id}&from=0");
    let a1 = Sse::get(server.addr, &path("a"), None).await.unwrap();
    let _a2 = Sse::get(server.addr, &path("a"), None).await.unwrap();
    refused(&server, "a").await;
    // Another stream from the same address: one place left under the address's cap of 3.
    let _b1 = Sse::get(server.addr, &path("b"), None).await.unwrap();
    refused(&server, "b").await;
    // A reader that hangs up gives its place back (within a moment: the server notices the close).
    drop(a1);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match Sse::get(server.addr, &path("a"), None).await {
            Ok(_) => break,
            Err(e) => assert!(Instant::now() < deadline, "the place was not given back: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_sdk_resume_route_counts_against_the_same_caps_and_is_refused_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    for id in ["a", "b"] {
        open(&server, id).await;
    }
    // One reader of each kind on stream "a" fill its cap of 2: a third of either kind is refused.
    let a1 = Sse::get(server.addr, &ui("a"), None).await.unwrap();
    let _a2 = Sse::get(server.addr, "/api/stream?streamId=a&from=0", None).await.unwrap();
    refused_at(&server, &ui("a")).await;
    refused(&server, "a").await;
    // The address's cap of 3 counts both kinds too.
    let _b1 = Sse::get(server.addr, &ui("b"), None).await.unwrap();
    refused_at(&server, &ui("b")).await;
    // A UI reader that hangs up gives its place back.
    drop(a1);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Sse::get(server.addr, &ui("a"), None).await.is_err() {
        assert!(Instant::now() < deadline, "the UI reader's place was not given back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_wide_bound_counts_ui_readers() {
    let dir = tempfile::tempdir().unwrap();
    // Eight connections, a quarter for heads still being read and an eighth kept for other
    // requests: five subscriptions in all.
    let server = start_with(
        dir.path(),
        &[
            "--max-connections",
            "8",
            "--max-connections-per-ip",
            "8",
            "--max-subscribers-per-stream",
            "100",
            "--max-subscribers-per-ip",
            "100",
        ],
    );
    open(&server, "s").await;
    let mut held = Vec::new();
    for i in 0..5 {
        let path = if i % 2 == 0 { ui("s") } else { "/api/stream?streamId=s&from=0".to_owned() };
        held.push(Sse::get(server.addr, &path, None).await.unwrap());
    }
    refused_at(&server, &ui("s")).await;
    refused(&server, "s").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resume_route_is_served_on_the_direct_path_unless_it_is_off() {
    // The direct path writes the router's headers and nothing else; hyper adds a `date`.
    for (flags, direct) in [(&[][..], true), (&["--no-direct-sse"][..], false)] {
        let dir = tempfile::tempdir().unwrap();
        let server = start_with(dir.path(), flags);
        open(&server, "d").await;
        http(server.addr, "POST", "/v1/streams/d/close", Some("{}".into())).await.unwrap();
        for path in [ui("d"), "/api/stream?streamId=d&from=0".to_owned()] {
            let head = response_head(server.addr, &path).await;
            assert!(head.starts_with("http/1.1 200"), "{path}: {head}");
            assert_eq!(!head.contains("\r\ndate:"), direct, "{path} with {flags:?}: {head}");
        }
    }
}

/// The value of `name{labels}` in the server's metrics (0 when it is not there yet).
async fn metric(server: &Instance, line_start: &str) -> f64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let request = format!("GET /metrics HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n", server.addr);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut raw)).await.unwrap().unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    raw.lines().find_map(|l| l.strip_prefix(line_start).and_then(|v| v.trim().parse().ok())).unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_ui_reader_reads_the_store_once_at_its_join_and_never_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), &[]);
    const READS: &str = "twoplane_store_reads_total{reader=\"ui_message_stream\"}";
    open(&server, "live").await;
    let before = metric(&server, READS).await;
    let mut reader = Sse::get(server.addr, &ui("live"), None).await.unwrap();
    let mut text = String::new();
    for i in 0..40 {
        let delta = format!("w{i} ");
        let path = format!("/v1/streams/live/append?offset={}", text.len());
        text.push_str(&delta);
        let (status, _, raw) = http(server.addr, "POST", &path, Some(delta)).await.unwrap();
        assert_eq!(status, 200, "{raw}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (status, _, raw) = http(server.addr, "POST", "/v1/streams/live/close", Some("{}".into())).await.unwrap();
    assert_eq!(status, 200, "{raw}");
    let mut got = String::new();
    loop {
        let event = reader.event().await.unwrap().expect("the stream ends with [DONE]");
        if event.data == "[DONE]" {
            break;
        }
        let chunk: serde_json::Value = serde_json::from_str(&event.data).unwrap();
        if chunk["type"] == "text-delta" {
            got.push_str(chunk["delta"].as_str().unwrap());
        }
    }
    assert_eq!(got, text, "every delta, once");
    assert_eq!(metric(&server, READS).await - before, 1.0, "one store read: the join's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resume_route_refuses_an_offset_or_a_tail_it_cannot_read_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    for (query, kind) in [
        ("from=x", "invalid_from"),
        ("from=-1", "invalid_from"),
        ("from=1&tail=2", "invalid_tail"),
        ("tail=73", "invalid_tail"),
        ("from=1&tail=yes", "invalid_tail"),
    ] {
        let reply =
            http_full(server.addr, "GET", &format!("/v1/streams/a/ui-message-stream?{query}"), None).await.unwrap();
        assert_eq!((reply.status, reply.json["kind"].as_str()), (400, Some(kind)), "{query}: {}", reply.raw);
        assert_eq!(reply.headers["content-type"], "application/json");
    }
    // What the route takes: no stream for this message yet.
    for query in ["from=1&tail=1", "from=0&tail=0", "tail=1", "from=3"] {
        let head = response_head(server.addr, &format!("/v1/streams/a/ui-message-stream?{query}")).await;
        assert!(head.starts_with("http/1.1 204"), "{query}: {head}");
    }
}
