//! End-to-end over real HTTP: a server on 127.0.0.1:0 with a temporary SQLite database, a
//! producer driven by the test, and real SSE clients (hyper's HTTP/1.1 client, decoded with the
//! core's `SseDecoder`).
//!
//! What it pins down: the response headers; `id:` lines equal to each frame's resume point;
//! the keep-alive comment; that a client which disconnects mid-answer and reconnects with
//! `Last-Event-ID` ends with exactly the produced text (nothing twice, nothing missing); 400 and
//! 403 (the same 403 whether or not the stream exists); that a client which stops reading is
//! cut off with `stale` while the server's memory stays flat; and that a disconnect releases
//! the subscription.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use twoplane_core::json::decode_frame;
use twoplane_core::sse::{SseDecoder, SseEvent, STREAM_SSE_HEADERS};
use twoplane_core::{frame_resume_point, Frame, StreamStatus, Text};
use twoplane_server::demo::DemoDb;
use twoplane_server::http::{sse_router, HttpCaller, SseConfig, SseStats};
use twoplane_server::server::{self, HttpConfig};
use twoplane_server::store::Database;
use twoplane_stream::{
    authorize_with, AllowAll, Authorizer, CallbackTarget, CommitReply, DurableTarget, Plane, PlaneOptions,
};

const WAIT: Duration = Duration::from_secs(10);

struct TestServer {
    addr: SocketAddr,
    plane: Plane,
    stats: Arc<SseStats>,
    db: Option<DemoDb>,
    /// Whether the direct SSE path serves subscriptions (see [`http_config`]).
    direct: bool,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

/// The default settings, with the direct SSE path off under `TWOPLANE_TEST_DIRECT_SSE=off`
/// (scripts/test-server.sh runs this file both ways).
fn http_config() -> HttpConfig {
    let direct = std::env::var("TWOPLANE_TEST_DIRECT_SSE").map_or(true, |v| v != "off");
    let config = HttpConfig::default();
    HttpConfig { direct_sse_path: if direct { config.direct_sse_path } else { None }, ..config }
}

impl TestServer {
    async fn start(keep_alive: Duration, authorizer: Arc<dyn Authorizer>) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let store = Database::open(&dir.path().join("t.db")).await.unwrap();
        let options =
            PlaneOptions { chars: 64, interval_ms: 50, ..PlaneOptions::default() }.with_authorizer(authorizer);
        let plane = Plane::new(options, store.target()).unwrap();
        TestServer::serve(plane, Some(DemoDb::new(store)), keep_alive, dir).await
    }

    async fn serve(plane: Plane, db: Option<DemoDb>, keep_alive: Duration, dir: tempfile::TempDir) -> TestServer {
        TestServer::serve_with(plane, db, keep_alive, dir, http_config()).await
    }

    async fn serve_with(
        plane: Plane,
        db: Option<DemoDb>,
        keep_alive: Duration,
        dir: tempfile::TempDir,
        http: HttpConfig,
    ) -> TestServer {
        let direct = http.direct_sse_path.is_some();
        let config = SseConfig { keep_alive, ..SseConfig::default() };
        let (router, stats) = sse_router(plane.clone(), config);
        let listener = server::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
            };
            server::serve(listener, router, http, shutdown).await.unwrap();
        });
        TestServer { addr, plane, stats, db, direct, stop: Some(stop), task, _dir: dir }
    }

    /// A server on a plane in callback mode (checkpoints acknowledged in memory, no store) with
    /// `options`, readable by anyone.
    async fn with_callback_plane(options: PlaneOptions) -> TestServer {
        TestServer::with_callback_plane_on(options, http_config()).await
    }

    async fn with_callback_plane_on(options: PlaneOptions, http: HttpConfig) -> TestServer {
        let target = CallbackTarget::new(|_input| async { Ok(CommitReply::default()) });
        let target: Arc<dyn DurableTarget> = Arc::new(target);
        let plane = Plane::new(options.with_authorizer(Arc::new(AllowAll)), target).unwrap();
        TestServer::serve_with(plane, None, Duration::from_secs(15), tempfile::tempdir().unwrap(), http).await
    }

    /// Caught-up subscribers were handed to their stream's writer tasks exactly when the direct
    /// path is on (through hyper, never).
    fn assert_handed_over(&self) {
        let handovers = self.stats.handovers.load(std::sync::atomic::Ordering::SeqCst);
        if self.direct {
            assert!(handovers >= 1, "no subscriber was handed over on the direct path");
        } else {
            assert_eq!(handovers, 0, "a subscriber was handed over with the direct path off");
        }
    }

    async fn open(&self, id: &str) -> twoplane_stream::StreamHandle {
        self.db.as_ref().unwrap().insert_assistant(id).await.unwrap();
        self.plane.open(id).await.unwrap()
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(WAIT, self.task).await.expect("server stops").unwrap();
    }

    /// Wait until no SSE body is alive (every subscription released).
    async fn wait_released(&self, want: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        while self.stats.active() != want {
            assert!(tokio::time::Instant::now() < deadline, "{} SSE bodies alive, want {want}", self.stats.active());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// One SSE response, read incrementally.
struct SseClient {
    status: hyper::StatusCode,
    headers: hyper::HeaderMap,
    body: Incoming,
    decoder: SseDecoder,
    pending: std::collections::VecDeque<SseEvent>,
    raw: Vec<u8>,
    ended: bool,
    _conn: tokio::task::JoinHandle<()>,
}

impl SseClient {
    async fn get(addr: SocketAddr, target: &str, headers: &[(&str, &str)]) -> SseClient {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.unwrap();
        let conn_task = tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut request = hyper::Request::get(target).header("host", addr.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = sender.send_request(request.body(Empty::<Bytes>::new()).unwrap()).await.unwrap();
        let (parts, body) = response.into_parts();
        SseClient {
            status: parts.status,
            headers: parts.headers,
            body,
            decoder: SseDecoder::new(),
            pending: Default::default(),
            raw: Vec::new(),
            ended: false,
            _conn: conn_task,
        }
    }

    /// The next event, or `None` when the body ended.
    async fn event(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Some(e);
            }
            if self.ended {
                return None;
            }
            match tokio::time::timeout(WAIT, self.body.frame()).await.expect("an SSE event in time") {
                None => {
                    self.ended = true;
                    let mut out = Vec::new();
                    self.decoder.finish(&mut out);
                    self.pending.extend(out);
                }
                Some(frame) => {
                    if let Ok(data) = frame.unwrap().into_data() {
                        self.raw.extend_from_slice(&data);
                        let mut out = Vec::new();
                        self.decoder.feed(&data, &mut out);
                        self.pending.extend(out);
                    }
                }
            }
        }
    }

    /// The next frame and the `id` it came with.
    async fn frame(&mut self) -> Option<(Frame, String)> {
        let event = self.event().await?;
        assert_eq!(event.event, "message");
        Some((decode_frame(&event.data).expect("a valid frame"), event.last_event_id))
    }

    async fn body_text(self) -> String {
        String::from_utf8(self.body.collect().await.unwrap().to_bytes().to_vec()).unwrap()
    }
}

/// The reader's splice (docs/contract.md §4, rule 5): a chunk lands at its own `from`.
fn splice(acc: &mut Vec<u16>, frame: &Frame) {
    if let Frame::Chunk { from, text, .. } = frame {
        let from = *from as usize;
        assert!(from <= acc.len(), "gap: chunk at {from} after {}", acc.len());
        acc.truncate(from);
        acc.extend_from_slice(text.units());
    }
}

/// Mixed-script deltas, with one emoji split between two pushes.
fn deltas(n: usize) -> Vec<Vec<u16>> {
    let words = ["Hello", " wörld", " 漢字", " 🚀", " and", " ✨", " ありがとう", " x"];
    let mut out: Vec<Vec<u16>> = (0..n).map(|i| words[i % words.len()].encode_utf16().collect()).collect();
    let pair: Vec<u16> = "😀".encode_utf16().collect();
    out.insert(n / 2, vec![pair[0]]);
    out.insert(n / 2 + 1, vec![pair[1], u16::from(b'!')]);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_ids_and_the_whole_text() {
    let server = TestServer::start(Duration::from_secs(15), Arc::new(AllowAll)).await;
    let handle = server.open("m1").await;
    let produced = deltas(40);
    // Half before the subscriber joins (it gets them as one coalesced replay chunk).
    for d in &produced[..20] {
        handle.push_units(d).unwrap();
    }
    let mut client = SseClient::get(server.addr, "/api/stream?streamId=m1&from=0", &[]).await;
    assert_eq!(client.status, 200);
    let mut names: Vec<&str> = client.headers.keys().map(|k| k.as_str()).collect();
    names.retain(|n| *n != "date" && *n != "transfer-encoding");
    assert_eq!(names, STREAM_SSE_HEADERS.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    for (name, value) in STREAM_SSE_HEADERS {
        assert_eq!(client.headers.get(name).unwrap(), value, "{name}");
    }
    for d in &produced[20..] {
        handle.push_units(d).unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    handle.close().await.unwrap();

    let mut acc = Vec::new();
    let mut frames = Vec::new();
    let mut last_id = String::new();
    while let Some((frame, id)) = client.frame().await {
        // Every frame with a resume point carries it as its id; the others leave it unchanged.
        if let Some(point) = frame_resume_point(&frame) {
            last_id = point.to_string();
        }
        assert_eq!(id, last_id, "{frame:?}");
        splice(&mut acc, &frame);
        frames.push(frame);
    }
    assert!(matches!(frames[0], Frame::Open { from: 0, .. }), "{:?}", frames[0]);
    assert!(matches!(frames.last(), Some(Frame::End { status: StreamStatus::Complete, .. })));
    assert_eq!(frames.iter().filter(|f| f.is_terminal()).count(), 1);
    let all: Vec<u16> = produced.concat();
    assert_eq!(Text::from_units(acc), Text::from_units(all.clone()));
    // The raw wire: `id:` lines exactly where frames have resume points.
    let raw = String::from_utf8(client.raw.clone()).unwrap();
    assert!(raw.starts_with("id: 0\ndata: {\"type\":\"open\",\"streamId\":\"m1\",\"from\":0,"), "{raw}");
    assert!(raw
        .ends_with(&format!("id: {0}\ndata: {{\"type\":\"end\",\"seq\":{0},\"status\":\"complete\"}}\n\n", all.len())));
    // The store agrees.
    let stored = server.db.as_ref().unwrap().message("m1".into()).await.unwrap().unwrap();
    assert_eq!(stored.body, String::from_utf16(&all).unwrap());
    assert_eq!(stored.status.as_deref(), Some("complete"));
    // Paced pushes reach a caught-up subscriber through its stream's writer task.
    server.assert_handed_over();
    drop(client);
    server.wait_released(0).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnects_and_last_event_id_resumes_give_exactly_the_produced_text() {
    let server = TestServer::start(Duration::from_secs(15), Arc::new(AllowAll)).await;
    let handle = Arc::new(server.open("m2").await);
    let produced = deltas(240);
    let all: Vec<u16> = produced.concat();
    let producer = {
        let handle = handle.clone();
        let produced = produced.clone();
        tokio::spawn(async move {
            for d in &produced {
                handle.push_units(d).unwrap();
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
            handle.close().await.unwrap();
        })
    };

    let mut acc: Vec<u16> = Vec::new();
    let mut last_event_id: Option<String> = None;
    let mut connections = 0;
    let mut chunks_seen = 0usize;
    'outer: loop {
        connections += 1;
        assert!(connections < 50, "too many reconnects");
        // `?from=0` on every reconnect, as an EventSource's URL would keep it: the header wins.
        let headers: Vec<(&str, &str)> = last_event_id.as_deref().map(|id| ("last-event-id", id)).into_iter().collect();
        let mut client = SseClient::get(server.addr, "/api/stream?streamId=m2&from=0", &headers).await;
        assert_eq!(client.status, 200);
        let (open, _) = client.frame().await.expect("open");
        let Frame::Open { from, .. } = open else { panic!("first frame {open:?}") };
        let expected_from: u64 = last_event_id.as_deref().map_or(0, |id| id.parse().unwrap());
        assert_eq!(from, expected_from, "the join starts at Last-Event-ID");
        // Reading stops after a few chunks on the first connections: the client drops the
        // connection mid-answer.
        let budget = if connections <= 4 { 3 + connections * 2 } else { usize::MAX };
        let mut read = 0;
        while let Some((frame, id)) = client.frame().await {
            if let Frame::Chunk { from, .. } = &frame {
                // The replay after a resume starts exactly where the header said.
                if read == 0 && connections > 1 {
                    assert_eq!(*from, expected_from);
                }
                read += 1;
                chunks_seen += 1;
            }
            splice(&mut acc, &frame);
            last_event_id = Some(id);
            if frame.is_terminal() {
                assert!(matches!(frame, Frame::End { status: StreamStatus::Complete, .. }), "{frame:?}");
                break 'outer;
            }
            if read >= budget {
                break;
            }
        }
        drop(client);
        // The disconnect releases the subscription.
        server.wait_released(0).await;
    }
    producer.await.unwrap();
    assert!(connections >= 5, "the stream ended before the test could disconnect ({connections} connections)");
    assert!(chunks_seen > 10);
    assert_eq!(Text::from_units(acc), Text::from_units(all), "resumed text equals produced text");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_comments_on_an_idle_stream() {
    let server = TestServer::start(Duration::from_millis(40), Arc::new(AllowAll)).await;
    let handle = server.open("idle").await;
    let mut client = SseClient::get(server.addr, "/api/stream?streamId=idle", &[]).await;
    let (open, id) = client.frame().await.unwrap();
    assert!(matches!(open, Frame::Open { from: 0, seq: 0, .. }));
    assert_eq!(id, "0");
    // Collect raw bytes for a while: nothing but pings arrives.
    let until = tokio::time::Instant::now() + Duration::from_millis(300);
    while tokio::time::Instant::now() < until {
        if let Ok(Some(frame)) = tokio::time::timeout(Duration::from_millis(20), client.body.frame()).await {
            client.raw.extend_from_slice(&frame.unwrap().into_data().unwrap());
        }
    }
    let raw = String::from_utf8(client.raw.clone()).unwrap();
    // The subscriber was handed over (it is caught up) while its pings went out.
    server.assert_handed_over();
    let pings = raw.matches("\n\n: ping\n\n").count() + raw.matches(": ping\n\n: ping").count();
    assert!(raw.matches(": ping\n\n").count() >= 3, "{raw:?}");
    assert!(pings >= 1);
    // Pings never come between an event's lines: every ping starts at an event boundary.
    for (i, _) in raw.match_indices(": ping") {
        assert!(raw[..i].ends_with("\n\n"), "{raw:?}");
    }
    // A frame after the pings still decodes normally.
    handle.push("after").unwrap();
    let (chunk, id) = client.frame().await.unwrap();
    assert_eq!(chunk, Frame::Chunk { from: 0, seq: 5, text: "after".into() });
    assert_eq!(id, "5");
    drop(client);
    server.wait_released(0).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_and_denials() {
    // Only a caller with the right bearer token may read.
    let auth = authorize_with(|caller: &HttpCaller, _stream: &str, _from: u64| {
        caller.headers.get("authorization").is_some_and(|v| v == "Bearer good")
    });
    let server = TestServer::start(Duration::from_secs(15), auth).await;
    let _handle = server.open("exists").await;

    let missing = SseClient::get(server.addr, "/api/stream", &[]).await;
    assert_eq!(missing.status, 400);
    let empty = SseClient::get(server.addr, "/api/stream?streamId=&from=3", &[]).await;
    assert_eq!(empty.status, 400);

    // Denied: identical answers for a live stream and for one that never existed.
    let a = SseClient::get(server.addr, "/api/stream?streamId=exists", &[]).await;
    let b = SseClient::get(server.addr, "/api/stream?streamId=never-was", &[]).await;
    assert_eq!((a.status.as_u16(), b.status.as_u16()), (403, 403));
    assert_eq!(a.headers.get("content-type"), b.headers.get("content-type"));
    assert_eq!(a.body_text().await, b.body_text().await);
    let bad_token =
        SseClient::get(server.addr, "/api/stream?streamId=exists", &[("authorization", "Bearer bad")]).await;
    assert_eq!(bad_token.status, 403);

    // Allowed: the live stream opens; an unknown one is `absent` (the store is the truth).
    let auth = [("authorization", "Bearer good")];
    let mut ok = SseClient::get(server.addr, "/api/stream?streamId=exists", &auth).await;
    assert_eq!(ok.status, 200);
    assert!(matches!(ok.frame().await, Some((Frame::Open { .. }, _))));
    drop(ok);
    let mut gone = SseClient::get(server.addr, "/api/stream?streamId=never-was", &auth).await;
    assert_eq!(gone.status, 200);
    assert_eq!(gone.frame().await.map(|f| f.0), Some(Frame::Absent));
    assert_eq!(gone.frame().await, None, "nothing follows the terminal");
    // A garbled Last-Event-ID counts as present and parses to 0, like parseInt.
    let mut garbled =
        SseClient::get(server.addr, "/api/stream?streamId=exists&from=7", &[auth[0], ("last-event-id", "x1")]).await;
    assert!(matches!(garbled.frame().await, Some((Frame::Open { from: 0, .. }, _))));
    drop(garbled);
    server.wait_released(0).await;
    server.stop().await;
}

/// Resident set size of this process, in bytes.
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_gets_stale_and_memory_stays_bounded() {
    // Callback mode with a small retention: the plane itself holds a bounded amount of text,
    // so any growth would be the HTTP layer's.
    let options = PlaneOptions {
        retain_chars: Some(4096),
        max_queued_frames: 64,
        chars: 4096,
        interval_ms: 20,
        ..PlaneOptions::default()
    };
    let server = TestServer::with_callback_plane(options).await;
    let handle = server.plane.open("flood").await.unwrap();

    let mut slow = slow_subscriber(server.addr, "flood").await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while server.stats.opened.load(std::sync::atomic::Ordering::SeqCst) < 1 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let delta = "x".repeat(1024);
    let warm = 2_000;
    let total = 40_000; // 40 MB of text pushed at a reader that takes none of it.
    let mut rss_after_warmup = 0;
    for i in 0..total {
        handle.push(&delta).unwrap();
        if i % 64 == 63 {
            tokio::task::yield_now().await;
        }
        if i == warm {
            rss_after_warmup = rss_bytes();
        }
    }
    let growth = rss_bytes().saturating_sub(rss_after_warmup);
    assert!(growth < 16 << 20, "RSS grew by {} KiB while a non-reading client was flooded", growth >> 10);

    // The slow client now reads everything it was sent: a prefix of the text, then `stale`.
    handle.close().await.unwrap();
    let raw = read_to_last_chunk(&mut slow).await;
    let text = String::from_utf8_lossy(&raw);
    assert!(text.contains("\"type\":\"stale\""), "no stale in {} bytes", raw.len());
    assert!(!text.contains("\"type\":\"end\""), "an overflowed subscriber must not see the end");
    assert!(raw.len() < 8 << 20, "the slow client was sent {} bytes", raw.len());
    drop(slow);
    server.wait_released(0).await;
    server.stop().await;
}

/// A subscriber delivered by its stream's writer task whose socket fills: the writer keeps what
/// the socket did not take and hands the subscription back, the connection writes the kept bytes
/// first, and the client, once it reads, gets an unbroken prefix of the text and then `stale`
/// (it fell a whole queue behind meanwhile).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_subscriber_whose_socket_fills_is_handed_back_in_order() {
    let options = PlaneOptions { max_queued_frames: 256, chars: 1 << 20, interval_ms: 20, ..PlaneOptions::default() };
    // The direct path's own behaviour: on whatever TWOPLANE_TEST_DIRECT_SSE says.
    let server = TestServer::with_callback_plane_on(options, HttpConfig::default()).await;
    let handle = server.plane.open("full").await.unwrap();
    let mut slow = slow_subscriber(server.addr, "full").await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let count = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::SeqCst);
    while count(&server.stats.handovers) < 1 {
        assert!(tokio::time::Instant::now() < deadline, "the idle subscription was never handed over");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // One delta at a time, each given the chance to be delivered, until the socket is full.
    let mut produced = String::new();
    let mut i = 0;
    while count(&server.stats.holds) < 1 {
        assert!(i < 100_000, "the socket never filled");
        let delta = format!("{i:06}{}|", "y".repeat(500));
        handle.push(&delta).unwrap();
        produced.push_str(&delta);
        i += 1;
        if i % 8 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    // More than a queue's worth after that: the connection is stuck writing what was kept.
    for j in 0..400 {
        let delta = format!("z{j:05}|");
        handle.push(&delta).unwrap();
        produced.push_str(&delta);
    }
    handle.close().await.unwrap();
    let raw = read_to_last_chunk(&mut slow).await;
    let (acc, frames) = response_frames(&String::from_utf8(raw).unwrap());
    let got = String::from_utf16(&acc).unwrap();
    assert!(got.len() > 4096, "more than the receive buffer was delivered before the socket filled");
    assert!(
        produced.starts_with(&got),
        "not a prefix of the produced text ({} of {} bytes)",
        got.len(),
        produced.len()
    );
    assert!(matches!(frames.last(), Some(Frame::Stale { .. })), "{:?}", frames.last());
    assert_eq!(frames.iter().filter(|f| f.is_terminal()).count(), 1);
    drop(slow);
    server.wait_released(0).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_client_that_disconnects_is_released() {
    let server = TestServer::start(Duration::from_secs(15), Arc::new(AllowAll)).await;
    let handle = server.open("quiet").await;
    let mut clients = Vec::new();
    for _ in 0..5 {
        let mut c = SseClient::get(server.addr, "/api/stream?streamId=quiet", &[]).await;
        assert!(matches!(c.frame().await, Some((Frame::Open { .. }, _))));
        clients.push(c);
    }
    server.wait_released(5).await;
    // Disconnect three while the stream is silent: no write will reveal it, the read side must.
    clients.truncate(2);
    server.wait_released(2).await;
    // The remaining two still get frames.
    handle.push("still here").unwrap();
    for c in &mut clients {
        assert!(matches!(c.frame().await, Some((Frame::Chunk { .. }, _))));
    }
    drop(clients);
    server.wait_released(0).await;
    server.stop().await;
}

/// Two subscribe requests pipelined on one connection: the first is answered by the server's own
/// subscription path (`sse_conn`), the second, read along with it, by hyper; both complete, in
/// order, each with the contract's headers and its terminal frame.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_subscriptions_on_one_connection_are_answered_in_order() {
    let server = TestServer::start(Duration::from_secs(15), Arc::new(AllowAll)).await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let request = |id: &str| format!("GET /api/stream?streamId={id}&from=0 HTTP/1.1\r\nhost: t\r\n\r\n");
    stream.write_all(format!("{}{}", request("nobody-1"), request("nobody-2")).as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + WAIT;
    // Each response's chunked body ends with the zero-length chunk.
    while String::from_utf8_lossy(&got).matches("\r\n0\r\n\r\n").count() < 2 {
        let n =
            tokio::time::timeout_at(deadline, stream.read(&mut buf)).await.expect("both responses in time").unwrap();
        assert!(n > 0, "connection closed after {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8(got).unwrap();
    let responses: Vec<&str> = text.split("HTTP/1.1 ").filter(|r| !r.is_empty()).collect();
    assert_eq!(responses.len(), 2, "{text}");
    for response in responses {
        assert!(response.starts_with("200 OK\r\n"), "{response}");
        let head = response.split("\r\n\r\n").next().unwrap().to_ascii_lowercase();
        for (name, value) in STREAM_SSE_HEADERS {
            assert!(head.contains(&format!("{name}: {value}")), "{name} missing in {head}");
        }
        assert!(head.contains("transfer-encoding: chunked"), "{head}");
        assert!(response.contains(r#"data: {"type":"absent"}"#), "{response}");
    }
    server.stop().await;
}

/// `connection: close` on a subscription: the response is the whole answer and the server then
/// closes the connection, so a request pipelined behind it is not answered (on the direct path
/// as through hyper).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_asking_to_close_ends_its_connection() {
    let server = TestServer::start(Duration::from_secs(15), Arc::new(AllowAll)).await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let first = "GET /api/stream?streamId=nobody-1&from=0 HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n";
    let second = "GET /api/stream?streamId=nobody-2&from=0 HTTP/1.1\r\nhost: t\r\n\r\n";
    stream.write_all(format!("{first}{second}").as_bytes()).await.unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut got)).await.expect("the server closed the connection").unwrap();
    let text = String::from_utf8(got).unwrap();
    assert_eq!(text.matches("HTTP/1.1 200").count(), 1, "{text}");
    assert!(text.contains(r#"data: {"type":"absent"}"#), "{text}");
    server.stop().await;
}

/// A live subscription on the server's own path, handed to its stream's writer task, then a
/// second request pipelined behind it: the first response ends with the stream, and the
/// connection (its socket taken back from the writer task) goes on to answer the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipelined_request_behind_a_delivered_subscription_is_answered() {
    let server = TestServer::start(Duration::from_secs(15), Arc::new(AllowAll)).await;
    let handle = server.open("live-1").await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let request = |id: &str| format!("GET /api/stream?streamId={id}&from=0 HTTP/1.1\r\nhost: t\r\n\r\n");
    stream.write_all(format!("{}{}", request("live-1"), request("nobody-3")).as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut read_some = async |got: &mut Vec<u8>| {
        let n = tokio::time::timeout_at(deadline, stream.read(&mut buf)).await.expect("a response in time").unwrap();
        assert!(n > 0, "connection closed after {:?}", String::from_utf8_lossy(got));
        got.extend_from_slice(&buf[..n]);
    };
    while !String::from_utf8_lossy(&got).contains(r#""type":"open""#) {
        read_some(&mut got).await;
    }
    let mut pushed = String::new();
    for i in 0..20 {
        let delta = format!("d{i} ");
        handle.push(&delta).unwrap();
        pushed.push_str(&delta);
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    handle.close().await.unwrap();
    while String::from_utf8_lossy(&got).matches("\r\n0\r\n\r\n").count() < 2 {
        read_some(&mut got).await;
    }
    server.assert_handed_over();
    let text = String::from_utf8(got).unwrap();
    let responses: Vec<&str> = text.split("HTTP/1.1 ").filter(|r| !r.is_empty()).collect();
    assert_eq!(responses.len(), 2, "{text}");
    // The first: every delta in order, then the end, then the body's last chunk.
    let (acc, frames) = response_frames(responses[0]);
    assert_eq!(Text::from_units(acc), Text::from(pushed.as_str()));
    assert!(matches!(frames.last(), Some(Frame::End { status: StreamStatus::Complete, .. })), "{frames:?}");
    assert!(responses[1].contains(r#"data: {"type":"absent"}"#), "{}", responses[1]);
    server.stop().await;
}

/// A raw subscriber with a tiny receive buffer that sends its request and then reads nothing
/// until the test reads for it.
async fn slow_subscriber(addr: SocketAddr, id: &str) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut slow = socket.connect(addr).await.unwrap();
    slow.write_all(format!("GET /api/stream?streamId={id} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes()).await.unwrap();
    slow
}

/// Everything the server sends on `stream` up to its response body's last chunk (the server
/// keeps the connection open after it, so end-of-file would never come).
async fn read_to_last_chunk(stream: &mut tokio::net::TcpStream) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = tokio::time::Instant::now() + WAIT;
    while !raw.ends_with(b"\r\n0\r\n\r\n") {
        assert!(tokio::time::Instant::now() < deadline, "the response never ended");
        match tokio::time::timeout(Duration::from_secs(3), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Err(_) => break,
            Ok(Ok(n)) => raw.extend_from_slice(&buf[..n]),
            Ok(Err(e)) => panic!("read: {e}"),
        }
    }
    raw
}

/// One raw response (head and chunked body): the text its frames splice to, and the frames.
fn response_frames(response: &str) -> (Vec<u16>, Vec<Frame>) {
    let body = dechunk(response.split_once("\r\n\r\n").unwrap().1);
    let mut acc = Vec::new();
    let mut frames = Vec::new();
    for event in body.split("\n\n").filter(|e| e.contains("data: ")) {
        let data = event.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
        let frame = decode_frame(data).unwrap();
        splice(&mut acc, &frame);
        frames.push(frame);
    }
    (acc, frames)
}

/// The payload of a chunked body (up to and excluding its last chunk).
fn dechunk(mut raw: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = raw.split_once("\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(size, 16).expect("a hex chunk size");
        if size == 0 {
            return out;
        }
        out.push_str(&rest[..size]);
        raw = &rest[size + 2..];
    }
}
