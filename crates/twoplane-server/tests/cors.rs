//! Cross-origin reads (`--allow-origin`, src/cors.rs) over real HTTP against `twoplane serve`'s
//! own assembly (`app::prepare`, a temporary SQLite file). Requests are written by hand on fresh
//! connections, so a subscription's `GET` takes the server's own SSE path (src/sse_conn.rs) and
//! everything else goes through hyper, as from a browser.
//!
//! - A listed origin gets `access-control-allow-origin` with its own value on the SSE endpoint
//!   (a 403 too) and on the reader's cancel; another origin, or none, gets no CORS header.
//! - Preflights of the reader routes are answered (methods, headers, max age) before any token
//!   check; the producer API answers no preflight.
//! - Without `--allow-origin` nothing changes: no CORS header anywhere; with `'*'` every origin
//!   gets `*`.
//!
//! tests/access_cli.rs checks that `twoplane serve` refuses an origin that could never match.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use twoplane_server::access::{Access, Secret};
use twoplane_server::app::{self, ServeConfig, Store};
use twoplane_server::cors::AllowedOrigins;

const PAGE: &str = "https://chat.example";
const READ_SECRET: &str = "cors-test-read-secret-0123456789abcdef";

struct Server {
    addr: SocketAddr,
    _dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn start(access: Access) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let config = ServeConfig { access, ..ServeConfig::local(Store::Sqlite(dir.path().join("c.db"))) };
    let running = app::prepare(&config).await.unwrap();
    let addr = running.addr;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(running.serve(async {
        let _ = stopped.await;
    }));
    Server { addr, _dir: dir, stop: Some(stop) }
}

fn allowing(origins: &[&str]) -> Access {
    let origins: Vec<String> = origins.iter().map(|o| o.to_string()).collect();
    Access { allowed_origins: AllowedOrigins::parse(&origins).unwrap(), ..Access::default() }
}

/// A response head: its status and its headers (names in lower case).
struct Head {
    status: u16,
    headers: Vec<(String, String)>,
}

impl Head {
    fn get(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Send `method target` with `headers` as the first request of a fresh connection; the head of
/// the answer (the body, an event stream for a subscription, is not waited for).
async fn request(addr: SocketAddr, method: &str, target: &str, headers: &[(&str, &str)]) -> Head {
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut text = format!("{method} {target} HTTP/1.1\r\nhost: {addr}\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    if method == "POST" {
        text.push_str("content-length: 0\r\n");
    }
    text.push_str("\r\n");
    socket.write_all(text.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let end = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            let mut chunk = [0u8; 4096];
            let n = socket.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the connection closed before a whole head: {:?}", String::from_utf8_lossy(&buf));
            buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                return end;
            }
        }
    })
    .await
    .expect("a response head within 10 s");
    let head = String::from_utf8(buf[..end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Head { status, headers }
}

const SUBSCRIBE: &str = "/api/stream?streamId=m-1&from=0";

#[tokio::test]
async fn a_listed_origin_may_read_and_cancel_and_no_other_origin_is_told_anything() {
    let server = start(allowing(&[PAGE, "http://127.0.0.1:5173"])).await;

    // The subscription takes the server's own SSE path; the stream does not exist (`absent`).
    let head = request(server.addr, "GET", SUBSCRIBE, &[("origin", PAGE)]).await;
    assert_eq!(head.status, 200);
    assert!(head.get("content-type").is_some_and(|t| t.starts_with("text/event-stream")), "{:?}", head.headers);
    assert_eq!(head.get("access-control-allow-origin"), Some(PAGE));
    assert!(head.get("vary").is_some_and(|v| v.contains("origin")), "{:?}", head.headers);
    assert_eq!(head.get("access-control-allow-credentials"), None);

    let head = request(server.addr, "GET", SUBSCRIBE, &[("origin", "http://127.0.0.1:5173")]).await;
    assert_eq!(head.get("access-control-allow-origin"), Some("http://127.0.0.1:5173"));

    for origin in ["https://elsewhere.example", "https://chat.example.evil", "null"] {
        let head = request(server.addr, "GET", SUBSCRIBE, &[("origin", origin)]).await;
        assert_eq!(head.status, 200);
        assert_eq!(head.get("access-control-allow-origin"), None, "{origin}");
    }
    let head = request(server.addr, "GET", SUBSCRIBE, &[]).await;
    assert_eq!(head.get("access-control-allow-origin"), None);

    // The reader's cancel (open reads: no token needed; the stream is not live here).
    let head = request(server.addr, "POST", "/v1/streams/m-1/cancel", &[("origin", PAGE)]).await;
    assert_eq!(head.get("access-control-allow-origin"), Some(PAGE), "status {}", head.status);
}

#[tokio::test]
async fn preflights_are_answered_for_the_reader_routes_only() {
    let server = start(allowing(&[PAGE])).await;
    let preflight = |method: &'static str| {
        [
            ("origin", PAGE),
            ("access-control-request-method", method),
            ("access-control-request-headers", "authorization, last-event-id"),
        ]
    };
    for (target, method) in [(SUBSCRIBE, "GET"), ("/v1/streams/m-1/cancel", "POST")] {
        let head = request(server.addr, "OPTIONS", target, &preflight(method)).await;
        assert!((200..300).contains(&head.status), "{target}: {}", head.status);
        assert_eq!(head.get("access-control-allow-origin"), Some(PAGE), "{target}");
        let methods = head.get("access-control-allow-methods").unwrap_or_default().to_ascii_uppercase();
        assert!(methods.contains(method), "{target}: {methods}");
        let allowed = head.get("access-control-allow-headers").unwrap_or_default().to_ascii_lowercase();
        assert!(allowed.contains("authorization") && allowed.contains("last-event-id"), "{target}: {allowed}");
        assert_eq!(head.get("access-control-max-age"), Some("600"), "{target}");
    }
    // The producer API is for servers: no preflight succeeds there.
    let head = request(server.addr, "OPTIONS", "/v1/streams/m-1/open", &preflight("POST")).await;
    assert_eq!(head.get("access-control-allow-origin"), None, "status {}", head.status);
    let head = request(server.addr, "OPTIONS", "/v1/streams/m-1/open", &[("origin", PAGE)]).await;
    assert_eq!(head.get("access-control-allow-origin"), None);
}

#[tokio::test]
async fn a_refused_read_still_names_the_origin_so_the_page_sees_the_403() {
    let access =
        Access { read_secret: Some(Secret::new(READ_SECRET.as_bytes(), "test").unwrap()), ..allowing(&[PAGE]) };
    let server = start(access).await;
    let target = format!("{SUBSCRIBE}&token=not-a-token");
    let head = request(server.addr, "GET", &target, &[("origin", PAGE)]).await;
    assert_eq!(head.status, 403);
    assert_eq!(head.get("access-control-allow-origin"), Some(PAGE));
    // With a valid token the same page reads.
    let claims = twoplane_server::token::Claims {
        stream_id: "m-1".into(),
        expires_at: twoplane_server::token::unix_now() + 60,
        user_id: None,
    };
    let token = twoplane_server::token::mint(READ_SECRET.as_bytes(), &claims);
    let head = request(server.addr, "GET", &format!("{SUBSCRIBE}&token={token}"), &[("origin", PAGE)]).await;
    assert_eq!(head.status, 200);
    assert_eq!(head.get("access-control-allow-origin"), Some(PAGE));
}

#[tokio::test]
async fn without_allow_origin_no_cors_header_is_sent() {
    let server = start(Access::default()).await;
    let head = request(server.addr, "GET", SUBSCRIBE, &[("origin", PAGE)]).await;
    assert_eq!(head.status, 200);
    assert_eq!(head.get("access-control-allow-origin"), None);
    let head =
        request(server.addr, "OPTIONS", SUBSCRIBE, &[("origin", PAGE), ("access-control-request-method", "GET")]).await;
    assert_eq!(head.get("access-control-allow-origin"), None, "status {}", head.status);
}

#[tokio::test]
async fn with_a_star_every_origin_may_read() {
    let server = start(allowing(&["*"])).await;
    for origin in [PAGE, "http://localhost:3000", "tauri://localhost"] {
        let head = request(server.addr, "GET", SUBSCRIBE, &[("origin", origin)]).await;
        assert_eq!(head.status, 200);
        assert_eq!(head.get("access-control-allow-origin"), Some("*"), "{origin}");
        assert_eq!(head.get("access-control-allow-credentials"), None);
    }
}
