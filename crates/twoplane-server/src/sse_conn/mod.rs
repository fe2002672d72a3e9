//! The accept loop's own path for SSE subscriptions: a connection whose first request subscribes
//! to a stream (`GET` of the path it is given, [`crate::server::HttpConfig::direct_sse_path`]) is
//! answered without hyper, everything else goes to hyper unchanged. The path can be turned off
//! (`twoplane serve --no-direct-sse`), which serves every request through hyper.
//!
//! The layer, from the bottom: `framing.rs` (the only hand-written HTTP: request heads, response
//! heads, chunks), `socket.rs` (writes that never wait, through tokio or around it), `sink.rs`
//! (the connection as a stream's sink), and this file (reading the first request, serving a
//! response, handing a subscription over and taking it back).
//!
//! Why: an SSE subscriber is an idle connection most of its life, and at a model's pace every
//! frame is one write per subscriber. Under hyper each connection keeps two 8 KiB buffers (its
//! read buffer and its header write buffer, neither configurable below 8 KiB) and each write goes
//! through its dispatcher; measured with 1,000 subscribers that was about 16 KiB of RSS and 2 us
//! of user CPU per delivered frame (docs/server.md, "Fan-out"). Here a subscriber costs its task,
//! its subscription and a small sink: the request head is read into a buffer that is freed before
//! the first event.
//!
//! Direct delivery: once a subscription has caught up, this connection hands it to one of its
//! stream's writer tasks through a [`sink::ConnSink`] (a `twoplane_stream::SseSink`). A push then wakes
//! the writers (one per runtime worker), which write each caught-up subscriber's events to its
//! socket without waiting; this connection's task is not woken per frame at all. It takes the
//! subscription back when the socket cannot take a batch at once (the sink keeps the rest, which
//! this task writes first), when the terminal went out, or when a burst left it owing more than
//! its writer delivers directly.
//!
//! Guarantees:
//! - The response is exactly what the router answers for that request (the same handler, the
//!   same authorizer, the same status and headers; a 400 or 403 too), framed with
//!   `transfer-encoding: chunked`. The bytes of each event are the ones the stream's log encoded.
//! - A request or response that asks to close the connection (`connection: close`) ends it
//!   after the response's body (hyper would do the same).
//! - One writer at a time: while the subscription is handed over, only the writer task writes
//!   events, and keep-alives go through the same sink under its lock, so a comment never lands
//!   inside an event and bytes the sink kept are never overtaken.
//! - Only a request this path fully understands takes it: `GET` over HTTP/1.1 to the stream path,
//!   without a body, with a complete head of at most [`MAX_HEAD`] bytes. Anything else, including
//!   every later request on the same connection, is served by hyper with the bytes already read
//!   handed to it first, so nothing a client sent is lost or reordered.
//! - Backpressure is the socket's: a batch is pulled from the subscription only after the
//!   previous one was written, and a handed-over subscription whose socket is full is taken back
//!   after that one batch, so a client that stops reading leaves frames in the plane's bounded
//!   log, where overflow ends that subscriber with `stale`. A connection holds at most one batch
//!   (plus a keep-alive) that the socket has not taken.
//! - A client that closes its connection is noticed while the stream is quiet (the socket is
//!   watched for end-of-file in both modes), and the subscription is dropped at once.
//! - Shutdown: a connection still waiting for its first request head is closed when the server
//!   stops accepting; a subscription in flight runs until its terminal frame (the plane's drain
//!   sends one), within the server's grace period.

mod framing;
mod sink;
mod socket;

use std::future::Future as _;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response};
use axum::Router;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tower::ServiceExt as _;
use twoplane_stream::SseSink;

use crate::http::{SseBody, Step};
use framing::{parse, response_head, Parsed, LAST_CHUNK};
pub use framing::{wants_close, Prefixed, MAX_HEAD};
use sink::ConnSink;
use socket::{probe, write_all, write_chunk, Gone};

/// What the first request on a connection turned out to be.
pub enum First {
    /// An SSE subscribe request, and the bytes the client sent after its head (pipelined).
    Sse(Box<Request<Body>>, Bytes),
    /// Anything else: the bytes read so far, to be handed to hyper first.
    Other(Bytes),
    /// The client closed the connection (or failed) before a whole head arrived.
    Closed,
}

/// Read the first request head from `stream` and decide which path serves it.
pub async fn read_first(stream: &mut TcpStream, peer: SocketAddr, path: &str) -> First {
    let mut buf = BytesMut::with_capacity(1024);
    loop {
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return if buf.is_empty() { First::Closed } else { First::Other(buf.freeze()) },
            Ok(_) => {}
        }
        match parse(&buf, peer, &|target| crate::http::is_reader_target(target, path)) {
            Parsed::Sse(request, head_len) => {
                let rest = buf.split_off(head_len).freeze();
                return First::Sse(request, rest);
            }
            Parsed::Other => return First::Other(buf.freeze()),
            Parsed::Partial if buf.len() >= MAX_HEAD => return First::Other(buf.freeze()),
            Parsed::Partial => {}
        }
    }
}

/// A request's answer as this path writes it: the router's response, and apart from it the body
/// of a reader's response, which its handler gave to this connection instead of to the response
/// (`crate::http`'s hand-off).
pub struct Answer {
    response: Response<Body>,
    sse: Option<SseBody>,
}

/// Answer `request` (a request [`read_first`] took) with `router`: the same layers and handler
/// as under hyper, and a reader's body comes back apart from the response, for
/// [`write_response`] to serve.
///
/// The request comes boxed, as [`read_first`] gives it, and is taken out of its box here: a box
/// moved out of is only freed at the end of its scope, which in the caller is the connection's
/// life.
pub async fn answer(router: Router, request: Box<Request<Body>>) -> Answer {
    let request = *request;
    let respond = async move {
        let Ok(response) = router.oneshot(request).await;
        response
    };
    let (response, sse) = crate::http::answer_here(respond).await;
    Answer { response, sse }
}

/// How [`write_response`] ended.
pub enum Served {
    /// The body ended and its last chunk was written: the connection can serve another request.
    Done(TcpStream),
    /// The client went away, or a write failed: close the connection.
    Gone,
}

/// Write `answer` to `stream` as an HTTP/1.1 response with a chunked body, pulling the body
/// only when the previous batch has been written, and watching the socket for the client's
/// end-of-file while the body has nothing to send. Bytes the client sends meanwhile (a
/// pipelined request) are appended to `pending`. A reader's body (from
/// [`crate::http::sse_response`], or a reader route's handler) is delivered directly while it
/// is caught up (see `ConnSink`).
pub fn write_response<'a>(
    stream: TcpStream,
    answer: Answer,
    pending: &'a mut BytesMut,
    stall: Duration,
) -> impl std::future::Future<Output = Served> + 'a {
    // Taken apart before the future is made, so that the future holds only what it serves with:
    // an async fn keeps its arguments' room for its whole life, and this future lives as long as
    // the reader does (the connection task's size is that of its largest state).
    let Answer { response, sse } = answer;
    let (parts, body) = response.into_parts();
    let head = response_head(&parts);
    let close = wants_close(&parts.headers);
    drop(parts);
    let body = match sse {
        Some(sse) => {
            drop(body);
            Payload::Reader(Box::new(sse))
        }
        None => Payload::Body(body),
    };
    async move {
        let socket = Arc::new(stream);
        let served = match body {
            Payload::Reader(sse) => serve_sse(&socket, head, sse, pending, stall).await,
            Payload::Body(body) => serve_body(&socket, head, body, pending, stall).await.map(|()| None),
        };
        let Ok(released) = served else { return Served::Gone };
        if close {
            return Served::Gone;
        }
        // The stream's writer task may still hold the sink (and so the socket) for the pass it
        // is finishing; it lets go within that pass, and the sink's release says when.
        if let Some(released) = released {
            if tokio::time::timeout(RECLAIM_WITHIN, released).await.is_err() {
                return Served::Gone;
            }
        }
        match Arc::try_unwrap(socket) {
            Ok(stream) => Served::Done(stream),
            Err(_) => Served::Gone,
        }
    }
}

/// What follows a response's head: a reader's body, or any other.
enum Payload {
    Reader(Box<SseBody>),
    Body(Body),
}

/// How long [`write_response`] waits for the writer task to let go of the socket before it
/// closes the connection instead of serving another request on it.
const RECLAIM_WITHIN: Duration = Duration::from_secs(1);

/// Any response body, written batch by batch by this task.
async fn serve_body(
    socket: &TcpStream,
    head: Vec<u8>,
    mut body: Body,
    pending: &mut BytesMut,
    stall: Duration,
) -> Result<(), Gone> {
    write_all(socket, &[&head], stall).await?;
    drop(head);
    loop {
        let frame = tokio::select! {
            biased;
            frame = body.frame() => frame,
            ready = socket.readable() => {
                ready.map_err(|_| Gone)?;
                probe(socket, pending)?;
                continue;
            }
        };
        match frame {
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else { continue };
                write_chunk(socket, &data, stall).await?;
            }
            Some(Err(_)) => return Err(Gone),
            None => return write_all(socket, &[LAST_CHUNK], stall).await,
        }
    }
}

/// A subscription's body: written by this task while it owes something, and by the stream's
/// writer task (through a [`ConnSink`]) while it is caught up. Keep-alives and end-of-file are
/// watched here in both modes.
///
/// Returns what tells when the sink (and with it the socket) is the connection's alone again.
///
/// The body comes boxed: it is the largest thing a reader's task holds (an async fn keeps room
/// for an argument and for the variable it is moved into).
async fn serve_sse(
    socket: &Arc<TcpStream>,
    head: Vec<u8>,
    mut sse: Box<SseBody>,
    pending: &mut BytesMut,
    stall: Duration,
) -> Result<Option<oneshot::Receiver<()>>, Gone> {
    write_all(socket, &[&head], stall).await?;
    drop(head);
    let (sink, released) = ConnSink::new(socket, sse.stats().clone());
    let sink = Arc::new(sink);
    let as_sink: Arc<dyn SseSink> = sink.clone();
    loop {
        let step = tokio::select! {
            biased;
            step = std::future::poll_fn(|cx| sse.poll_step(cx, &as_sink)) => step,
            ready = socket.readable() => {
                ready.map_err(|_| Gone)?;
                probe(socket, pending)?;
                continue;
            }
        };
        match step {
            Step::Data(data) => write_chunk(socket, &data, stall).await?,
            Step::End => {
                write_all(socket, &[LAST_CHUNK], stall).await?;
                return Ok(Some(released));
            }
            Step::Handed => {
                sink.stats.handovers.fetch_add(1, Ordering::Relaxed);
                wait_handed(socket, &sink, &mut sse, pending, stall).await?;
                // Taken back: what the sink kept goes first.
                let kept = sink.take_kept()?;
                write_all(socket, &[&kept], stall).await?;
            }
        }
    }
}

/// While the subscription is handed over: until the sink is resumed, send keep-alives through
/// the sink, finish writing what the sink kept when the socket has room, and watch for the
/// client's end-of-file.
///
/// Written as one poll over the socket's own readiness (no readiness futures) with the stall
/// timer boxed and made only while the sink keeps bytes: an idle reader's task spends most of
/// its life here, and a task is as large as its largest state (docs/server.md, "Memory per
/// reader and per stream").
async fn wait_handed(
    socket: &TcpStream,
    sink: &ConnSink,
    sse: &mut SseBody,
    pending: &mut BytesMut,
    stall: Duration,
) -> Result<(), Gone> {
    let resumed = sink.resumed.notified();
    tokio::pin!(resumed);
    // Since when the kept bytes have not shrunk: a client that takes none of them for `stall` is
    // gone, as far as this server is concerned.
    let mut stuck: Option<(usize, tokio::time::Instant)> = None;
    let mut timer: Option<Pin<Box<tokio::time::Sleep>>> = None;
    std::future::poll_fn(|cx| loop {
        let kept = sink.kept_len();
        let backlog = kept > 0;
        stuck = match stuck {
            Some((was, since)) if backlog && kept >= was => Some((was, since)),
            _ if backlog => Some((kept, tokio::time::Instant::now())),
            _ => None,
        };
        if resumed.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Ok(()));
        }
        match socket.poll_read_ready(cx) {
            Poll::Ready(Ok(())) => {
                if let Err(gone) = probe(socket, pending) {
                    return Poll::Ready(Err(gone));
                }
                continue;
            }
            Poll::Ready(Err(_)) => return Poll::Ready(Err(Gone)),
            Poll::Pending => {}
        }
        if let Some((_, since)) = stuck {
            match socket.poll_write_ready(cx) {
                Poll::Ready(Ok(())) => {
                    if let Err(gone) = sink.write_kept() {
                        return Poll::Ready(Err(gone));
                    }
                    continue;
                }
                Poll::Ready(Err(_)) => return Poll::Ready(Err(Gone)),
                Poll::Pending => {}
            }
            let deadline = since + stall;
            let sleep = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
            if sleep.deadline() != deadline {
                sleep.as_mut().reset(deadline);
            }
            if sleep.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(Gone));
            }
        } else {
            timer = None;
        }
        if let Poll::Ready(ping) = sse.poll_ping(cx) {
            if let Err(gone) = sink.send(&ping) {
                return Poll::Ready(Err(gone));
            }
            continue;
        }
        return Poll::Pending;
    })
    .await
}
