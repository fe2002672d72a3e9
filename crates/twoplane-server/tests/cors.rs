//! Cross-origin reads (`--allow-origin`, src/cors.rs) over real HTTP against `twoplane serve`'s
//! own assembly (`serve::prepare`, a temporary SQLite file). Each request is the first on a fresh
//! connection, so a subscription's `GET` takes the server's own SSE path (src/sse_conn.rs) and
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

use common::served::{self, Served};
use http_body_util::Empty;
use hyper::header::HeaderMap;
use hyper_util::rt::TokioIo;
use twoplane_server::access::{Access, Secret};
use twoplane_server::cors::AllowedOrigins;
use twoplane_server::producer::Limits;

mod common;

const PAGE: &str = "https://chat.example";
const READ_SECRET: &str = "cors-test-read-secret-0123456789abcdef";

async fn start(access: Access) -> Served {
    served::start(access, Limits::default()).await
}

fn allowing(origins: &[&str]) -> Access {
    let origins: Vec<String> = origins.iter().map(|o| o.to_string()).collect();
    Access { allowed_origins: AllowedOrigins::parse(&origins).unwrap(), ..Access::default() }
}

/// A response head: its status and its headers.
struct Head {
    status: u16,
    headers: HeaderMap,
}

impl Head {
    fn get(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Send `method target` with `headers` as the first request of a fresh connection; the head of
/// the answer (the body, an event stream for a subscription, is not waited for).
async fn request(addr: SocketAddr, method: &str, target: &str, headers: &[(&str, &str)]) -> Head {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let mut request = hyper::Request::builder().method(method).uri(target);
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        request = request.header("host", addr.to_string());
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let answer = sender.send_request(request.body(Empty::<bytes::Bytes>::new()).unwrap());
    let response = tokio::time::timeout(std::time::Duration::from_secs(10), answer)
        .await
        .expect("a response head within 10 s")
        .unwrap();
    Head { status: response.status().as_u16(), headers: response.headers().clone() }
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
    // With read tokens: '*' with open reads is refused at start (every page could read and
    // cancel every stream), see `a_star_needs_read_tokens`.
    let access = Access { read_secret: Some(Secret::new(READ_SECRET.as_bytes(), "test").unwrap()), ..allowing(&["*"]) };
    let server = start(access).await;
    let claims = twoplane_server::token::Claims {
        stream_id: "m-1".into(),
        expires_at: twoplane_server::token::unix_now() + 60,
        user_id: None,
    };
    let target = format!("{SUBSCRIBE}&token={}", twoplane_server::token::mint(READ_SECRET.as_bytes(), &claims));
    for origin in [PAGE, "http://localhost:3000", "tauri://localhost"] {
        let head = request(server.addr, "GET", &target, &[("origin", origin)]).await;
        assert_eq!(head.status, 200);
        assert_eq!(head.get("access-control-allow-origin"), Some("*"), "{origin}");
        assert_eq!(head.get("access-control-allow-credentials"), None);
    }
}

#[test]
fn a_star_needs_read_tokens() {
    let err = allowing(&["*"]).check_listen("127.0.0.1:8787".parse().unwrap()).unwrap_err();
    assert!(err.contains("--allow-origin '*'") && err.contains("--read-token-secret-file"), "{err}");
    let tokens = Access { read_secret: Some(Secret::new(READ_SECRET.as_bytes(), "test").unwrap()), ..allowing(&["*"]) };
    assert!(tokens.check_listen("127.0.0.1:8787".parse().unwrap()).is_ok());
}

/// Loopback trust is not a page's: with no secrets, a page on another site cannot cancel (a
/// no-cors POST), nor create or append through the producer API, and a rebound domain (a foreign
/// `Host`) reads nothing; a program on this machine still does all of it.
#[tokio::test]
async fn pages_on_other_sites_cannot_use_the_loopback_default() {
    let server = start(Access::default()).await;
    let evil = [("origin", "https://evil.example"), ("sec-fetch-site", "cross-site")];
    let head = request(server.addr, "POST", "/v1/streams/m-1/cancel", &evil).await;
    assert_eq!(head.status, 403, "a cross-site cancel");
    for path in ["/v1/streams/m-1/open", "/v1/streams/m-1/append?offset=0"] {
        let head = request(server.addr, "POST", path, &evil).await;
        assert_eq!(head.status, 403, "a cross-site {path}");
    }
    let head = request(server.addr, "POST", "/v1/streams/m-1/open", &[("content-type", "text/plain")]).await;
    assert_eq!(head.status, 415, "a JSON route with a body a page may send without a preflight");
    let head = request(server.addr, "GET", SUBSCRIBE, &[("host", "rebound.example:8787")]).await;
    assert_eq!(head.status, 403, "a rebound domain's read");
    let head = request(server.addr, "GET", "/v1/streams/m-1", &[("host", "rebound.example:8787")]).await;
    assert_eq!(head.status, 403, "a rebound domain's status read");
    // A program: no Origin, the address it connected to as Host.
    let head = request(server.addr, "POST", "/v1/streams/m-1/cancel", &[]).await;
    assert_eq!(head.status, 404, "a program's cancel reaches the handler (no such stream)");
    let head = request(server.addr, "GET", "/v1/streams/m-1", &[]).await;
    assert_eq!(head.status, 404, "a program's status read reaches the handler");
}

const RESUME: &str = "/v1/streams/m-1/ui-message-stream?from=0";

/// The resume route refuses each of `refused` (a 403 with a JSON body) and reads with `good`.
async fn resume_refusals(addr: SocketAddr, leg: &str, refused: &[String], good: &str) {
    for token in refused {
        let head = request(addr, "GET", &format!("{RESUME}{token}"), &[("origin", PAGE)]).await;
        assert_eq!(head.status, 403, "{leg}: {RESUME}{token}");
        assert_eq!(head.get("content-type"), Some("application/json"), "{leg}: {RESUME}{token}");
    }
    assert_eq!(request(addr, "GET", &format!("{RESUME}&token={good}"), &[]).await.status, 200, "{leg}");
}

#[tokio::test]
async fn the_resume_route_checks_read_tokens_as_the_stream_route_does() {
    let access =
        Access { read_secret: Some(Secret::new(READ_SECRET.as_bytes(), "test").unwrap()), ..allowing(&[PAGE]) };
    let server = start(access).await;
    let mint = |stream_id: &str, ttl: i64| {
        let claims = twoplane_server::token::Claims {
            stream_id: stream_id.into(),
            expires_at: (twoplane_server::token::unix_now() as i64 + ttl) as u64,
            user_id: None,
        };
        twoplane_server::token::mint(READ_SECRET.as_bytes(), &claims)
    };
    let refused = [
        String::new(),
        "&token=not-a-token".into(),
        format!("&token={}", mint("m-2", 60)),
        format!("&token={}", mint("m-1", -5)),
    ];
    for token in &refused {
        for base in [SUBSCRIBE, RESUME] {
            let head = request(server.addr, "GET", &format!("{base}{token}"), &[("origin", PAGE)]).await;
            assert_eq!(head.status, 403, "{base}{token}");
            assert_eq!(head.get("content-type"), Some("application/json"), "{base}{token}");
        }
    }
    // A valid token, in the query or as a bearer header: the stream route reads, and the resume
    // route answers that the message has no stream (204), past the token check.
    let good = mint("m-1", 60);
    assert_eq!(request(server.addr, "GET", &format!("{SUBSCRIBE}&token={good}"), &[]).await.status, 200);
    assert_eq!(request(server.addr, "GET", &format!("{RESUME}&token={good}"), &[]).await.status, 204);
    let bearer = format!("Bearer {good}");
    assert_eq!(request(server.addr, "GET", RESUME, &[("authorization", &bearer)]).await.status, 204);

    // A message with a stream: checked once per request, and never zero times, whether the
    // plane answers (hosted here) or the store does (ended, and hosted nowhere after a restart).
    common::producer::open(server.addr, "m-1").await;
    let (status, answer) = common::producer::post(server.addr, "/v1/streams/m-1/append?offset=0", "hello").await;
    assert_eq!(status, 200, "{answer}");
    resume_refusals(server.addr, "hosted", &refused, &good).await;
    let (status, answer) = common::producer::post(server.addr, "/v1/streams/m-1/close", "").await;
    assert_eq!(status, 200, "{answer}");
    let server = server.restart().await;
    resume_refusals(server.addr, "from the store", &refused, &good).await;
}
