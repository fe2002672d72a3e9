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
//! of user CPU per delivered frame (docs/server.md, "Fan-out"). Here a caught-up subscriber costs
//! a slot in its server's lot (a [`Reader`] and the connection, parked without a task of their
//! own: `crate::parking`), its subscription and a small sink: the request head is read into a
//! buffer that is freed before the first event.
//!
//! Direct delivery: once a subscription has caught up, this connection hands it to one of its
//! stream's writer tasks through a [`sink::ConnSink`] (a `twoplane_stream::SseSink`). A push then wakes
//! the writers (one per runtime worker), which write each caught-up subscriber's events to its
//! socket without waiting; the connection, parked meanwhile, is not woken per frame at all. It
//! takes the subscription back, on a task again, when the socket cannot take a batch at once (the
//! sink keeps the rest, which that task writes first), when the terminal went out, or when a
//! burst left it owing more than its writer delivers directly.
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

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response};
use axum::Router;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tower::ServiceExt as _;
use twoplane_stream::SseSink;

use crate::http::{SseBody, Step};
use crate::parking::Io;
use framing::{parse, response_head, Parsed, LAST_CHUNK};
pub use framing::{wants_close, Prefixed, MAX_HEAD};
use sink::ConnSink;
use socket::{probe, probe_with, write_all, write_chunk, Gone, Probed, Registered};

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

/// How a response on this path went.
pub enum Served {
    /// The body ended and its last chunk was written: the connection can serve another request
    /// (the socket, and the bytes the client sent after the request).
    Done(TcpStream, BytesMut),
    /// A reader's body was handed to its stream's writer task: the connection waits with
    /// [`Reader::poll_wait`] and goes on with [`Reader::resume`].
    Handed(Reader),
    /// The client went away, a write failed, or either side asked to close: close the
    /// connection.
    Gone,
}

/// Write `answer` to `stream` as an HTTP/1.1 response with a chunked body, pulling the body
/// only when the previous batch has been written, and watching the socket for the client's
/// end-of-file while the body has nothing to send. Bytes the client sends meanwhile (a
/// pipelined request) join `pending`. A reader's body (from [`crate::http::sse_response`], or a
/// reader route's handler) is delivered directly while it is caught up (see `ConnSink`), and
/// this returns [`Served::Handed`] then. `close` says the request asked to close the
/// connection.
pub fn write_response(
    stream: TcpStream,
    answer: Answer,
    pending: BytesMut,
    close: bool,
    stall: Duration,
) -> impl std::future::Future<Output = Served> {
    // Taken apart before the future is made, so that the future holds only what it serves with
    // (an async fn keeps its arguments' room for its whole life).
    let Answer { response, sse } = answer;
    let (parts, body) = response.into_parts();
    let head = response_head(&parts);
    let close = close || wants_close(&parts.headers);
    drop(parts);
    let body = match sse {
        Some(sse) => {
            drop(body);
            Payload::Reader(Box::new(sse))
        }
        None => Payload::Body(body),
    };
    async move {
        match body {
            Payload::Reader(sse) => {
                // Out of tokio: the sink owns the socket, and the connection's task registers it
                // only while it runs (`Registered`).
                let Ok(socket) = stream.into_std() else { return Served::Gone };
                let sink = Arc::new(ConnSink::new(socket, sse.stats().clone(), stall));
                let pending = (!pending.is_empty()).then(|| Box::new(pending));
                let mut reader = Reader { io: None, sink, sse, pending, close };
                let Ok(io) = reader.register() else { return Served::Gone };
                if write_all(io, &[&head], stall).await.is_err() {
                    return Served::Gone;
                }
                drop(head);
                reader.run().await
            }
            Payload::Body(body) => {
                let mut pending = pending;
                match serve_body(&stream, head, body, &mut pending, stall).await {
                    Ok(()) if !close => Served::Done(stream, pending),
                    _ => Served::Gone,
                }
            }
        }
    }
}

/// What follows a response's head: a reader's body, or any other.
enum Payload {
    Reader(Box<SseBody>),
    Body(Body),
}

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

/// A subscription's response after its head: written by the connection's task while it owes
/// something ([`Reader::run`]), and by the stream's writer task (through a [`ConnSink`]) while
/// it is caught up, when the connection's task only waits ([`Reader::poll_wait`]). Keep-alives and
/// end-of-file are watched in both modes.
///
/// It is what an idle reader's connection holds, and all it holds while it waits: the caller
/// keeps it apart from the future that writes (which is as large as its largest state, and is
/// dropped while the reader is handed over), so a quiet reader is this and its connection in a
/// slot of the server's lot (docs/server.md, "Memory per reader and per stream").
pub struct Reader {
    /// The socket's registration with tokio, while the connection's task runs; none while the
    /// reader is parked (its lot watches the socket). Before `sink` (fields drop in order): the
    /// registration must go while the socket is open.
    io: Option<Box<Registered>>,
    /// The socket, and what the stream's writer task writes through.
    sink: Arc<ConnSink>,
    /// Boxed: the largest thing a reader holds.
    sse: Box<SseBody>,
    /// Bytes the client sent after its request (a pipelined request), for hyper; boxed, made
    /// only when such bytes come.
    pending: Option<Box<BytesMut>>,
    /// The request or the response asked to close the connection after the body.
    close: bool,
}

impl Reader {
    /// Register the socket with tokio for the connection's task (once; kept until the reader
    /// parks or ends).
    fn register(&mut self) -> Result<&Registered, Gone> {
        if self.io.is_none() {
            // SAFETY: the sink owns the socket and this reader holds the sink; the registration
            // is dropped before the socket is taken out (`finish`) or the sink let go (field
            // order).
            let io = unsafe { Registered::new(self.sink.fd()) }.map_err(|_| Gone)?;
            self.io = Some(Box::new(io));
        }
        self.io.as_deref().ok_or(Gone)
    }

    /// Write the body until it ends or is handed to the stream's writer task.
    async fn run(mut self) -> Served {
        if self.register().is_err() {
            return Served::Gone;
        }
        let as_sink: Arc<dyn SseSink> = self.sink.clone();
        loop {
            let Some(io) = self.io.as_deref() else { return Served::Gone };
            let step = tokio::select! {
                biased;
                step = std::future::poll_fn(|cx| self.sse.poll_step(cx, &as_sink)) => step,
                ready = socket::Socket::readable(io) => {
                    if ready.is_err() || probe(io, self.pending.get_or_insert_with(Box::default)).is_err() {
                        return Served::Gone;
                    }
                    self.pending = self.pending.take().filter(|p| !p.is_empty());
                    continue;
                }
            };
            match step {
                Step::Data(data) => {
                    if write_chunk(io, &data, self.sink.stall).await.is_err() {
                        return Served::Gone;
                    }
                }
                Step::End => {
                    if write_all(io, &[LAST_CHUNK], self.sink.stall).await.is_err() {
                        return Served::Gone;
                    }
                    drop(as_sink);
                    return self.finish();
                }
                Step::Handed => {
                    self.sink.stats.handovers.fetch_add(1, Ordering::Relaxed);
                    // Parked, the reader's keep-alive time is kept by its lot, and its socket
                    // watched by the lot's poller instead of tokio.
                    self.sse.untimed();
                    self.io = None;
                    return Served::Handed(self);
                }
            }
        }
    }

    /// While the body is handed over and the reader parked: send keep-alives through the sink
    /// when due (the caller calls again by [`Reader::next_due`]), finish writing what the sink
    /// kept when the socket has room, and read what the client sent, until the stream's writer
    /// task gives the body back (ready with true) or the connection is over (ready with false).
    ///
    /// `io` is what the lot's poller saw on the socket since the last call (edges: the socket
    /// became readable, or writable after a write met `EAGAIN`); a call without either reads and
    /// writes nothing on the socket.
    ///
    /// A poll, not an async fn: the server's lot holds the reader and nothing else while it
    /// waits, and polls this with a waker of the reader's slot (the stall's timer is the sink's).
    pub(crate) fn poll_wait(&mut self, cx: &mut Context<'_>, io: Io) -> Poll<bool> {
        let mut io = io;
        loop {
            if self.sink.poll_resumed(cx).is_ready() {
                self.sink.clear_stall();
                return Poll::Ready(true);
            }
            if io.readable {
                // Edge-triggered: read until the socket has nothing more (bounded by
                // `MAX_HEAD`).
                loop {
                    let pending = self.pending.get_or_insert_with(Box::default);
                    let probed = probe_with(|buf| self.sink.read(buf), pending);
                    if pending.is_empty() {
                        self.pending = None;
                    }
                    match probed {
                        Ok(Probed::More) => {}
                        Ok(Probed::Drained) => break,
                        Err(Gone) => return Poll::Ready(false),
                    }
                }
            }
            if io.writable && self.sink.write_kept().is_err() {
                return Poll::Ready(false);
            }
            io = Io::default();
            if self.sink.poll_stalled(cx).is_ready() {
                return Poll::Ready(false);
            }
            if let Some(ping) = self.sse.ping_at(Instant::now()) {
                if self.sink.send(&ping).is_err() {
                    return Poll::Ready(false);
                }
                // Kept bytes (a full socket) start the stall's wait.
                continue;
            }
            return Poll::Pending;
        }
    }

    /// When [`Reader::poll_wait`] must be called again even if nothing wakes it: its keep-alive.
    pub fn next_due(&self) -> Option<Instant> {
        self.sse.next_ping()
    }

    /// The socket's descriptor, for the lot's poller to watch while the reader is parked.
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.sink.fd()
    }

    /// After [`Reader::poll_wait`] was ready with true: write what the sink kept, then the body again.
    pub async fn resume(mut self) -> Served {
        let Ok(kept) = self.sink.take_kept() else { return Served::Gone };
        let stall = self.sink.stall;
        let Ok(io) = self.register() else { return Served::Gone };
        if write_all(io, &[&kept], stall).await.is_err() {
            return Served::Gone;
        }
        drop(kept);
        self.run().await
    }

    /// The body's last chunk is out: take the socket back for the next request (the stream's
    /// writer task may still hold the sink for the pass it is finishing; once the socket is
    /// out, the sink writes nothing more).
    fn finish(self) -> Served {
        let Reader { io, sink, sse, pending, close } = self;
        drop(io);
        drop(sse);
        let socket = sink.take_socket();
        drop(sink);
        if close {
            return Served::Gone;
        }
        match socket.map(TcpStream::from_std) {
            Some(Ok(stream)) => Served::Done(stream, pending.map_or_else(BytesMut::new, |p| *p)),
            _ => Served::Gone,
        }
    }
}
