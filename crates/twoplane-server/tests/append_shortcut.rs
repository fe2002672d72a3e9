//! The append shortcut (src/producer/shortcut.rs) answers exactly what the router answers: the
//! same requests, sent byte for byte to two servers built by `serve::prepare`, one with the
//! shortcut and one without (`--no-append-shortcut`), get the same status, headers (but the
//! date) and body, and leave the same text in each stream. The requests cover the appends the
//! shortcut takes (good, wrong offset, invalid UTF-8, unknown, sealed, unauthorized, from a page)
//! and the ones it gives back to the router (bad, missing or huge offset, a body over the limit,
//! a chunked body, an encoded id, another method).

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use twoplane_server::access::{Access, Secret};
use twoplane_server::producer::Limits;
use twoplane_server::serve::{self, ServeConfig, Store};

mod common;

const SECRET: &str = "append-shortcut-producer-secret-0123456789";

struct Server {
    addr: SocketAddr,
    _dir: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn start(shortcut: bool, secret: bool) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let access = Access {
        producer_token: secret.then(|| Secret::new(SECRET.as_bytes(), "producer secret").unwrap()),
        ..Access::default()
    };
    let config = ServeConfig {
        access,
        producer_limits: Limits { max_delta_bytes: 64, ..Limits::default() },
        append_shortcut: shortcut,
        ..ServeConfig::local(Store::Sqlite(dir.path().join("t.db")))
    };
    let running = serve::prepare(&config).await.unwrap();
    let addr = running.addr;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = running
            .serve(async {
                let _ = stopped.await;
            })
            .await;
    });
    Server { addr, _dir: dir, _stop: stop }
}

/// Send `request` (a whole HTTP/1.1 request, closing the connection) and read the answer: its
/// status line, its headers but `date` sorted, and its body.
async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket.write_all(request).await.unwrap();
    let mut raw = Vec::new();
    socket.read_to_end(&mut raw).await.unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or("").to_owned();
    let mut headers: Vec<String> =
        lines.filter(|l| !l.to_ascii_lowercase().starts_with("date:")).map(str::to_ascii_lowercase).collect();
    headers.sort();
    format!("{status}\n{}\n\n{body}", headers.join("\n"))
}

fn post(path: &str, headers: &[&str], body: &[u8]) -> Vec<u8> {
    let mut head = format!("POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    if !headers.iter().any(|h| h.starts_with("transfer-encoding")) {
        head.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
}

/// Every request in order, with what both servers answered (the first difference fails).
async fn same_answers(requests: &[(&str, Vec<u8>)], with: &Server, without: &Server) -> usize {
    let mut taken = 0;
    for (what, request) in requests {
        let a = exchange(with.addr, request).await;
        let b = exchange(without.addr, request).await;
        assert_eq!(a, b, "{what}: the shortcut answered differently from the router");
        if a.starts_with("HTTP/1.1 200") {
            taken += 1;
        }
    }
    taken
}

#[tokio::test]
async fn with_a_secret_every_append_gets_the_routers_answer() {
    let (with, without) = (start(true, true).await, start(false, true).await);
    let auth = format!("authorization: Bearer {SECRET}");
    let auth = auth.as_str();
    let text = "content-type: text/plain; charset=utf-8";
    let requests: Vec<(&str, Vec<u8>)> = vec![
        ("open", post("/v1/streams/s/open", &[auth, "content-type: application/json"], b"{\"create\":true}")),
        ("append", post("/v1/streams/s/append?offset=0", &[auth, text], b"abcd")),
        ("wrong offset", post("/v1/streams/s/append?offset=0", &[auth, text], b"x")),
        ("offset past the end", post("/v1/streams/s/append?offset=400", &[auth, text], b"x")),
        ("invalid UTF-8", post("/v1/streams/s/append?offset=4", &[auth, text], b"a\xffb")),
        ("half a surrogate pair", post("/v1/streams/s/append?offset=4", &[auth, text], b"\xed\xa0\x80")),
        ("empty", post("/v1/streams/s/append?offset=4", &[auth, text], b"")),
        ("unknown stream", post("/v1/streams/nope/append?offset=0", &[auth, text], b"x")),
        ("no token", post("/v1/streams/s/append?offset=4", &[text], b"x")),
        ("wrong token", post("/v1/streams/s/append?offset=4", &["authorization: Bearer nope", text], b"x")),
        ("no offset", post("/v1/streams/s/append", &[auth, text], b"x")),
        ("empty offset", post("/v1/streams/s/append?offset=", &[auth, text], b"x")),
        ("bad offset", post("/v1/streams/s/append?offset=4x", &[auth, text], b"x")),
        ("huge offset", post("/v1/streams/s/append?offset=99999999999999999999999", &[auth, text], b"x")),
        (
            "another field (ignored, as the router ignores it)",
            post("/v1/streams/s/append?offset=4&x=1", &[auth, text], b"x"),
        ),
        ("too large", post("/v1/streams/s/append?offset=5", &[auth, text], &[b'a'; 65])),
        ("encoded id", post("/v1/streams/%73/append?offset=5", &[auth, text], b"ef")),
        (
            "chunked",
            post("/v1/streams/s/append?offset=7", &[auth, text, "transfer-encoding: chunked"], b"2\r\ngh\r\n0\r\n\r\n"),
        ),
        ("at the limit", post("/v1/streams/s/append?offset=9", &[auth, text], &[b'z'; 64])),
        ("trailing slash", post("/v1/streams/s/append/?offset=73", &[auth, text], b"x")),
        ("close", post("/v1/streams/s/close", &[auth], b"")),
        ("sealed", post("/v1/streams/s/append?offset=73", &[auth, text], b"x")),
    ];
    let taken = same_answers(&requests, &with, &without).await;
    assert!(taken >= 5, "only {taken} requests succeeded: the case list no longer exercises appends");
    for server in [&with, &without] {
        let status = exchange(
            server.addr,
            format!("GET /v1/streams/s HTTP/1.1\r\nhost: x\r\n{auth}\r\nconnection: close\r\n\r\n").as_bytes(),
        )
        .await;
        assert!(status.contains("\"text\":\"abcdxefgh"), "{status}");
    }
}

#[tokio::test]
async fn without_a_secret_pages_and_loopback_get_the_routers_answer() {
    let (with, without) = (start(true, false).await, start(false, false).await);
    let text = "content-type: text/plain; charset=utf-8";
    let requests: Vec<(&str, Vec<u8>)> = vec![
        ("open", post("/v1/streams/p/open", &["content-type: application/json"], b"{\"create\":true}")),
        ("from loopback", post("/v1/streams/p/append?offset=0", &[text], b"ab")),
        ("from a page", post("/v1/streams/p/append?offset=2", &[text, "origin: https://evil.example"], b"cd")),
        (
            "simple form body",
            post("/v1/streams/p/append?offset=2", &["content-type: application/x-www-form-urlencoded"], b"cd"),
        ),
        ("fetch metadata", post("/v1/streams/p/append?offset=2", &[text, "sec-fetch-site: cross-site"], b"cd")),
        ("no content type", post("/v1/streams/p/append?offset=2", &[], b"cd")),
    ];
    let taken = same_answers(&requests, &with, &without).await;
    assert!(taken >= 2, "only {taken} requests succeeded");
}
