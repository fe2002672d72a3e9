//! The accept loop's own path for SSE subscriptions: a connection whose first request is
//! `GET /api/stream...` is answered without hyper, everything else goes to hyper unchanged.
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
//! stream's writer tasks through a `ConnSink` (a `twoplane_stream::SseSink`). A push then wakes
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

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, Response, Version};
use bytes::{Buf, Bytes, BytesMut};
use http_body::Body as _;
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use twoplane_stream::{Delivered, SseEvents, SseSink};

use crate::http::{SseBody, SseHandoff, SseStats, STREAM_PATH};

/// The largest request head this path reads; a longer one goes to hyper (which applies its own
/// limit).
pub const MAX_HEAD: usize = 16 * 1024;
/// At most this many request headers; more go to hyper.
const MAX_HEADERS: usize = 64;

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
pub async fn read_first(stream: &mut TcpStream, peer: SocketAddr) -> First {
    let mut buf = BytesMut::with_capacity(1024);
    loop {
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return if buf.is_empty() { First::Closed } else { First::Other(buf.freeze()) },
            Ok(_) => {}
        }
        match parse(&buf, peer) {
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

enum Parsed {
    Sse(Box<Request<Body>>, usize),
    Other,
    Partial,
}

fn parse(buf: &[u8], peer: SocketAddr) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Other,
    };
    let (Some(method), Some(path), Some(1)) = (req.method, req.path, req.version) else { return Parsed::Other };
    let on_path = path == STREAM_PATH || path.strip_prefix(STREAM_PATH).is_some_and(|rest| rest.starts_with('?'));
    if method != "GET" || !on_path {
        return Parsed::Other;
    }
    let mut builder = Request::builder().method(Method::GET).uri(path).version(Version::HTTP_11);
    for h in req.headers.iter() {
        // A request with a body (or one that says it has one) is hyper's to frame.
        if h.name.eq_ignore_ascii_case("transfer-encoding")
            || (h.name.eq_ignore_ascii_case("content-length") && h.value != b"0")
        {
            return Parsed::Other;
        }
        let (Ok(name), Ok(value)) = (HeaderName::from_bytes(h.name.as_bytes()), HeaderValue::from_bytes(h.value))
        else {
            return Parsed::Other;
        };
        builder = builder.header(name, value);
    }
    match builder.extension(axum::extract::ConnectInfo(peer)).body(Body::empty()) {
        Ok(request) => Parsed::Sse(Box::new(request), head_len),
        Err(_) => Parsed::Other,
    }
}

/// How [`write_response`] ended.
pub enum Served {
    /// The body ended and its last chunk was written: the connection can serve another request.
    Done(TcpStream),
    /// The client went away, or a write failed: close the connection.
    Gone,
}

/// Write `response` to `stream` as an HTTP/1.1 response with a chunked body, pulling the body
/// only when the previous batch has been written, and watching the socket for the client's
/// end-of-file while the body has nothing to send. Bytes the client sends meanwhile (a
/// pipelined request) are appended to `pending`. A subscription's body (from
/// [`crate::http::sse_response`]) is delivered directly while it is caught up (see
/// `ConnSink`).
pub async fn write_response(stream: TcpStream, response: Response<Body>, pending: &mut BytesMut) -> Served {
    let (mut parts, body) = response.into_parts();
    let head = response_head(&parts);
    let socket = Arc::new(stream);
    let served = match parts.extensions.remove::<SseHandoff>().and_then(|h| h.take()) {
        Some(sse) => {
            drop(body);
            serve_sse(&socket, &head, sse, pending).await
        }
        None => serve_body(&socket, &head, body, pending).await,
    };
    if served.is_err() {
        return Served::Gone;
    }
    // The stream's writer task may still hold the sink (and so the socket) for the pass it is
    // finishing; it lets go within that pass.
    let mut socket = socket;
    for _ in 0..RECLAIM_TRIES {
        match Arc::try_unwrap(socket) {
            Ok(stream) => return Served::Done(stream),
            Err(shared) => socket = shared,
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Served::Gone
}

/// How many times (1 ms apart) [`write_response`] waits for the writer task to let go of the
/// socket before it closes the connection instead of serving another request on it.
const RECLAIM_TRIES: usize = 1000;

fn response_head(parts: &axum::http::response::Parts) -> Vec<u8> {
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(b"HTTP/1.1 ");
    head.extend_from_slice(parts.status.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(parts.status.canonical_reason().unwrap_or("").as_bytes());
    head.extend_from_slice(b"\r\n");
    for (name, value) in &parts.headers {
        if name == axum::http::header::CONTENT_LENGTH || name == axum::http::header::TRANSFER_ENCODING {
            continue;
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n");
    head
}

/// The client went away (or the connection failed).
#[derive(Debug)]
struct Gone;

/// Any response body, written batch by batch by this task.
async fn serve_body(socket: &TcpStream, head: &[u8], mut body: Body, pending: &mut BytesMut) -> Result<(), Gone> {
    write_all(socket, &[head]).await?;
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
                write_chunk(socket, &data).await?;
            }
            Some(Err(_)) => return Err(Gone),
            None => return write_all(socket, &[LAST_CHUNK]).await,
        }
    }
}

const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// What the subscription's body gave when polled.
enum Step {
    Data(Bytes),
    End,
    /// Caught up and handed to the sink: the stream's writer task delivers from now on.
    Handed,
}

/// A subscription's body: written by this task while it owes something, and by the stream's
/// writer task (through a [`ConnSink`]) while it is caught up. Keep-alives and end-of-file are
/// watched here in both modes.
async fn serve_sse(socket: &Arc<TcpStream>, head: &[u8], mut sse: SseBody, pending: &mut BytesMut) -> Result<(), Gone> {
    write_all(socket, &[head]).await?;
    let sink = Arc::new(ConnSink {
        socket: socket.clone(),
        direct: DirectWriter::of(socket),
        state: Mutex::new(SinkState::default()),
        resumed: Notify::new(),
        stats: sse.stats().clone(),
    });
    let as_sink: Arc<dyn SseSink> = sink.clone();
    loop {
        let step = tokio::select! {
            biased;
            step = std::future::poll_fn(|cx| poll_step(&mut sse, &as_sink, cx)) => step,
            ready = socket.readable() => {
                ready.map_err(|_| Gone)?;
                probe(socket, pending)?;
                continue;
            }
        };
        match step {
            Step::Data(data) => write_chunk(socket, &data).await?,
            Step::End => return write_all(socket, &[LAST_CHUNK]).await,
            Step::Handed => {
                sink.stats.handovers.fetch_add(1, Ordering::Relaxed);
                wait_handed(socket, &sink, &mut sse, pending).await?;
                // Taken back: what the sink kept goes first.
                let kept = sink.take_kept()?;
                write_all(socket, &[&kept]).await?;
            }
        }
    }
}

fn poll_step(sse: &mut SseBody, sink: &Arc<dyn SseSink>, cx: &mut Context<'_>) -> Poll<Step> {
    match Pin::new(&mut *sse).poll_frame(cx) {
        Poll::Ready(Some(Ok(frame))) => {
            return Poll::Ready(frame.into_data().map_or(Step::Data(Bytes::new()), Step::Data));
        }
        Poll::Ready(Some(Err(never))) => match never {},
        Poll::Ready(None) => return Poll::Ready(Step::End),
        Poll::Pending => {}
    }
    let max = sse.max_batch_bytes();
    let handed = sse.subscription_mut().is_some_and(|sub| sub.deliver_to(sink.clone(), max));
    if handed {
        return Poll::Ready(Step::Handed);
    }
    // Not a hosted stream's, or frames arrived since the poll: the poll registered this task, so
    // it is woken for them.
    Poll::Pending
}

/// While the subscription is handed over: until the sink is resumed, send keep-alives through
/// the sink, finish writing what the sink kept when the socket has room, and watch for the
/// client's end-of-file.
async fn wait_handed(
    socket: &TcpStream,
    sink: &ConnSink,
    sse: &mut SseBody,
    pending: &mut BytesMut,
) -> Result<(), Gone> {
    loop {
        let backlog = sink.has_kept();
        tokio::select! {
            biased;
            () = sink.resumed.notified() => return Ok(()),
            ready = socket.readable() => {
                ready.map_err(|_| Gone)?;
                probe(socket, pending)?;
            }
            ready = socket.writable(), if backlog => {
                ready.map_err(|_| Gone)?;
                sink.write_kept()?;
            }
            ping = std::future::poll_fn(|cx| sse.poll_ping(cx)) => sink.send(&ping)?,
        }
    }
}

/// The connection as a [`SseSink`]: the stream's writer task writes each batch to the socket
/// without waiting; what the socket does not take at once is kept, in order, and every later
/// batch after it, until this connection's task has written it (after [`SseSink::resume`], or
/// when the socket has room again).
struct ConnSink {
    /// The connection, through tokio: the connection's task writes with it, and it keeps
    /// `direct`'s descriptor open while the sink lives.
    socket: Arc<TcpStream>,
    /// The same socket, for the writer task's writes (see [`DirectWriter`]).
    direct: DirectWriter,
    state: Mutex<SinkState>,
    resumed: Notify,
    stats: Arc<SseStats>,
}

#[derive(Default)]
struct SinkState {
    /// Bytes not yet written, already framed as chunks; while there are any, new bytes join them.
    kept: BytesMut,
    /// A write failed: the connection is over.
    failed: bool,
}

impl ConnSink {
    fn lock(&self) -> std::sync::MutexGuard<'_, SinkState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Write `parts` now, or keep what does not fit (behind anything already kept).
    fn write_or_keep(&self, st: &mut SinkState, parts: &[&[u8]]) -> Delivered {
        if st.failed {
            return Delivered::Held;
        }
        let written = if st.kept.is_empty() {
            match try_write_now(&self.direct, parts) {
                Ok(n) => n,
                Err(_) => {
                    st.failed = true;
                    return Delivered::Held;
                }
            }
        } else {
            0
        };
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if written == total {
            return Delivered::Written;
        }
        let mut skip = written;
        for part in parts {
            let from = skip.min(part.len());
            st.kept.extend_from_slice(&part[from..]);
            skip -= from;
        }
        Delivered::Held
    }

    /// A keep-alive comment from the connection's task, as one chunk.
    fn send(&self, bytes: &[u8]) -> Result<(), Gone> {
        let mut size = [0u8; 18];
        let mut st = self.lock();
        self.write_or_keep(&mut st, &chunk(&mut size, bytes));
        if st.failed {
            Err(Gone)
        } else {
            Ok(())
        }
    }

    fn has_kept(&self) -> bool {
        !self.lock().kept.is_empty()
    }

    /// Write as much of what was kept as the socket takes now. Through tokio, not `direct`: this
    /// runs when tokio said the socket was writable, and only a write through tokio that meets
    /// `EAGAIN` clears that, so the task waits for room instead of spinning.
    fn write_kept(&self) -> Result<(), Gone> {
        let mut st = self.lock();
        if st.failed {
            return Err(Gone);
        }
        match try_write_now(&*self.socket, &[&st.kept]) {
            Ok(n) => {
                st.kept.advance(n);
                Ok(())
            }
            Err(_) => {
                st.failed = true;
                Err(Gone)
            }
        }
    }

    /// Everything kept, for the connection's task to write now that it writes alone.
    fn take_kept(&self) -> Result<Bytes, Gone> {
        let mut st = self.lock();
        if st.failed {
            return Err(Gone);
        }
        Ok(st.kept.split().freeze())
    }
}

const CRLF: &[u8] = b"\r\n";

impl SseSink for ConnSink {
    fn deliver(&self, events: &SseEvents) -> Delivered {
        self.stats.frames.fetch_add(events.frames(), Ordering::Relaxed);
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        let mut size = [0u8; 18];
        let mut st = self.lock();
        // One chunk: its size line, the log's own event bytes, its CRLF, in one vectored write.
        let delivered = if events.frames() == 1 {
            let event = events.events().next().map_or(&[][..], |e| &e[..]);
            self.write_or_keep(&mut st, &chunk(&mut size, event))
        } else {
            let mut parts = Vec::with_capacity(events.frames() as usize + 2);
            parts.push(chunk_size_line(&mut size, events.len()));
            parts.extend(events.events().map(|e| &e[..]));
            parts.push(CRLF);
            self.write_or_keep(&mut st, &parts)
        };
        if delivered == Delivered::Held && !st.failed {
            self.stats.holds.fetch_add(1, Ordering::Relaxed);
        }
        delivered
    }

    fn resume(&self) {
        self.resumed.notify_one();
    }
}

/// Read what the client sent while its response is being written: end-of-file or an error ends
/// the connection; bytes (a pipelined request) are kept for hyper, up to [`MAX_HEAD`].
fn probe(socket: &TcpStream, pending: &mut BytesMut) -> Result<(), Gone> {
    let mut buf = [0u8; 256];
    match socket.try_read(&mut buf) {
        Ok(0) => Err(Gone),
        Ok(n) if pending.len() + n > MAX_HEAD => Err(Gone),
        Ok(n) => {
            pending.extend_from_slice(&buf[..n]);
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
        Err(_) => Err(Gone),
    }
}

/// One chunk of the body (nothing for empty data: an empty chunk would end the body).
async fn write_chunk(socket: &TcpStream, data: &[u8]) -> Result<(), Gone> {
    if data.is_empty() {
        return Ok(());
    }
    let mut size = [0u8; 18];
    write_all(socket, &chunk(&mut size, data)).await
}

/// `data` framed as one chunk of a chunked body: its size line (written into `size`), the data,
/// and the CRLF that closes it.
fn chunk<'a>(size: &'a mut [u8; 18], data: &'a [u8]) -> [&'a [u8]; 3] {
    [chunk_size_line(size, data.len()), data, CRLF]
}

/// Write every byte of `parts`, in order, waiting for room as needed.
async fn write_all(socket: &TcpStream, parts: &[&[u8]]) -> Result<(), Gone> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut done = 0;
    while done < total {
        match write_vectored_from(socket, parts, done) {
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => socket.writable().await.map_err(|_| Gone)?,
            Err(_) => return Err(Gone),
        }
    }
    Ok(())
}

/// A connection's socket written with plain `writev`, bypassing tokio's readiness bookkeeping.
///
/// Why: the writer task writes to hundreds of sockets per push, and going through tokio touches
/// each socket's readiness record first, one more cache miss per write (about a quarter of the
/// user time of a delivery in a profile of bench_http phase B). Nothing is lost by bypassing it:
/// tokio clears a socket's write readiness only when its own write meets `EAGAIN`, so the
/// connection's task, when it next writes through tokio, at worst tries once more before it
/// waits, and the edge that wakes it comes from the kernel either way. The connection's task
/// therefore always writes through tokio (`ConnSink::write_kept`, `write_all`): a task that
/// waited for tokio's readiness and then wrote around it would find it never cleared.
struct DirectWriter(std::mem::ManuallyDrop<std::net::TcpStream>);

impl DirectWriter {
    fn of(socket: &TcpStream) -> DirectWriter {
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: the descriptor belongs to `socket`, which the sink holds (`ConnSink::socket`)
        // for as long as this writer lives, and `ManuallyDrop` keeps this copy from closing it.
        // The socket is non-blocking (tokio set it so), so a write never waits.
        DirectWriter(std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(socket.as_raw_fd()) }))
    }
}

/// A socket [`try_write_now`] can write to: tokio's, or the sink's direct one.
trait TryWriteVectored {
    fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize>;
}

impl TryWriteVectored for TcpStream {
    fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        TcpStream::try_write_vectored(self, bufs)
    }
}

impl TryWriteVectored for DirectWriter {
    fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        use std::io::Write;
        (&*self.0).write_vectored(bufs)
    }
}

/// Write as much of `parts` as the socket takes without waiting; the count written.
fn try_write_now(socket: &impl TryWriteVectored, parts: &[&[u8]]) -> io::Result<usize> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut done = 0;
    while done < total {
        match write_vectored_from(socket, parts, done) {
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// At most this many slices go into one vectored write (well under any system's `IOV_MAX`).
const MAX_SLICES: usize = 64;

/// One vectored write of `parts` from byte `skip` on (the first [`MAX_SLICES`] non-empty
/// slices of it; the caller loops for the rest).
fn write_vectored_from(socket: &impl TryWriteVectored, parts: &[&[u8]], skip: usize) -> io::Result<usize> {
    if parts.len() <= 3 {
        // The usual chunk (size line, one event, CRLF): no 64-slice array to fill.
        let mut slices = [io::IoSlice::new(&[]); 3];
        return write_slices(socket, parts, skip, &mut slices);
    }
    let mut slices = [io::IoSlice::new(&[]); MAX_SLICES];
    write_slices(socket, parts, skip, &mut slices)
}

fn write_slices<'a>(
    socket: &impl TryWriteVectored,
    parts: &[&'a [u8]],
    skip: usize,
    slices: &mut [io::IoSlice<'a>],
) -> io::Result<usize> {
    let mut n = 0;
    let mut skip = skip;
    for part in parts {
        if n == slices.len() {
            break;
        }
        if skip >= part.len() {
            skip -= part.len();
            continue;
        }
        slices[n] = io::IoSlice::new(&part[skip..]);
        skip = 0;
        n += 1;
    }
    match socket.try_write_vectored(&slices[..n]) {
        Ok(0) if n > 0 => Err(io::ErrorKind::WriteZero.into()),
        other => other,
    }
}

/// `len` in hex followed by CRLF, the line that opens a chunk, written into `buf` (no allocation
/// per write).
fn chunk_size_line(buf: &mut [u8; 18], len: usize) -> &[u8] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut at = 16;
    let mut n = len;
    loop {
        at -= 1;
        buf[at] = HEX[n & 0xF];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    buf[16] = b'\r';
    buf[17] = b'\n';
    &buf[at..]
}

/// A connection whose first bytes were already read: they are read again first, then the socket.
pub struct Prefixed {
    prefix: Bytes,
    inner: TcpStream,
}

impl Prefixed {
    pub fn new(prefix: Bytes, inner: TcpStream) -> Prefixed {
        Prefixed { prefix, inner }
    }
}

impl AsyncRead for Prefixed {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> SocketAddr {
        "127.0.0.1:9".parse().unwrap()
    }

    #[test]
    fn only_a_bodyless_get_of_the_stream_path_takes_this_path() {
        let sse = |raw: &str| matches!(parse(raw.as_bytes(), peer()), Parsed::Sse(..));
        assert!(sse("GET /api/stream?streamId=a&from=2 HTTP/1.1\r\nhost: x\r\nlast-event-id: 5\r\n\r\n"));
        assert!(sse("GET /api/stream HTTP/1.1\r\ncontent-length: 0\r\n\r\n"));
        assert!(!sse("GET /api/streams?x HTTP/1.1\r\n\r\n"));
        assert!(!sse("GET /api/stream?x HTTP/1.0\r\n\r\n"));
        assert!(!sse("HEAD /api/stream?x HTTP/1.1\r\n\r\n"));
        assert!(!sse("POST /api/stream?x HTTP/1.1\r\ncontent-length: 2\r\n\r\nab"));
        assert!(!sse("GET /api/stream?x HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n"));
        assert!(!sse("GET /healthz HTTP/1.1\r\n\r\n"));
        assert!(!sse("garbage\r\n\r\n"));
        assert!(matches!(parse(b"GET /api/stream?x HTTP/1.1\r\nhost:", peer()), Parsed::Partial));
    }

    #[test]
    fn chunk_size_lines_are_lowercase_hex() {
        for (len, want) in
            [(0, "0\r\n"), (9, "9\r\n"), (255, "ff\r\n"), (4096, "1000\r\n"), (usize::MAX, "ffffffffffffffff\r\n")]
        {
            let mut buf = [0u8; 18];
            assert_eq!(chunk_size_line(&mut buf, len), want.as_bytes());
        }
    }

    #[test]
    fn the_request_keeps_its_target_and_headers() {
        let raw =
            "GET /api/stream?streamId=m&from=3 HTTP/1.1\r\nLast-Event-ID: 9\r\nAuthorization: Bearer t\r\n\r\nrest";
        let Parsed::Sse(request, head_len) = parse(raw.as_bytes(), peer()) else { panic!("not taken") };
        assert_eq!(&raw[head_len..], "rest");
        assert_eq!(request.uri().path_and_query().unwrap().as_str(), "/api/stream?streamId=m&from=3");
        assert_eq!(request.headers()["last-event-id"], "9");
        assert_eq!(request.headers()["authorization"], "Bearer t");
        assert!(request.extensions().get::<axum::extract::ConnectInfo<SocketAddr>>().is_some());
    }

    /// A socket whose peer reads nothing, filled through the sink's direct writer until the
    /// kernel refuses more, with bytes kept: the connection's task, woken as writable, writes the
    /// kept bytes through tokio, and after that tokio knows the socket is full, so the task's
    /// next wait for room really waits (written around tokio, the task would spin: tokio's stale
    /// readiness would wake it again at once).
    #[tokio::test]
    async fn after_writing_kept_bytes_into_a_full_socket_the_task_waits_for_room() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let socket = Arc::new(server);
        let sink = ConnSink {
            socket: socket.clone(),
            direct: DirectWriter::of(&socket),
            state: Mutex::new(SinkState::default()),
            resumed: Notify::new(),
            stats: Arc::new(SseStats::default()),
        };
        let block = vec![b'x'; 64 * 1024];
        let mut filled = 0;
        while try_write_now(&sink.direct, &[&block]).unwrap() == block.len() {
            filled += block.len();
            assert!(filled < 1 << 30, "the socket never filled");
        }
        sink.lock().kept.extend_from_slice(b"kept bytes");
        // tokio never saw the kernel refuse a write, so it still says writable.
        tokio::time::timeout(Duration::from_secs(1), socket.writable()).await.expect("stale readiness").unwrap();
        sink.write_kept().unwrap();
        assert!(sink.has_kept(), "the full socket took none of it");
        let waited = tokio::time::timeout(Duration::from_millis(100), socket.writable()).await;
        assert!(waited.is_err(), "writable at once: the task would spin");
        drop(client);
    }
}
