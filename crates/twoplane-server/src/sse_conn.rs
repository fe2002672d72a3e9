//! The accept loop's own path for SSE subscriptions: a connection whose first request is
//! `GET /api/stream...` is answered without hyper, everything else goes to hyper unchanged.
//!
//! Why: an SSE subscriber is an idle connection most of its life, and at a model's pace every
//! frame is one write per subscriber. Under hyper each connection keeps two 8 KiB buffers (its
//! read buffer and its header write buffer, neither configurable below 8 KiB) and each write goes
//! through its dispatcher; measured with 1,000 subscribers that was about 16 KiB of RSS and 2 us
//! of user CPU per delivered frame (docs/server.md, "Fan-out"). Here a subscriber costs its task
//! and its subscription: the request head is read into a buffer that is freed before the first
//! event, and every batch the subscription hands over goes to the socket in one vectored write.
//!
//! Guarantees:
//! - The response is exactly what the router answers for that request (the same handler, the
//!   same authorizer, the same status and headers; a 400 or 403 too), framed with
//!   `transfer-encoding: chunked`. The bytes of each event are the ones the stream's log encoded.
//! - Only a request this path fully understands takes it: `GET` over HTTP/1.1 to the stream path,
//!   without a body, with a complete head of at most [`MAX_HEAD`] bytes. Anything else, including
//!   every later request on the same connection, is served by hyper with the bytes already read
//!   handed to it first, so nothing a client sent is lost or reordered.
//! - Backpressure is the socket's: a batch is pulled from the subscription only after the
//!   previous one was written, so a client that stops reading leaves frames in the plane's
//!   bounded log, where overflow ends that subscriber with `stale`.
//! - A client that closes its connection is noticed while the stream is quiet (the socket is
//!   watched for end-of-file between batches), and the subscription is dropped at once.
//! - Shutdown: a connection still waiting for its first request head is closed when the server
//!   stops accepting; a subscription in flight runs until its terminal frame (the plane's drain
//!   sends one), within the server's grace period.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, Response, Version};
use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use crate::http::STREAM_PATH;

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
    Done,
    /// The client went away, or a write failed: close the connection.
    Gone,
}

/// Write `response` to `stream` as an HTTP/1.1 response with a chunked body, pulling the body
/// only when the previous batch has been written, and watching the socket for the client's
/// end-of-file while the body has nothing to send. Bytes the client sends meanwhile (a
/// pipelined request) are appended to `pending`.
pub async fn write_response(stream: &mut TcpStream, response: Response<Body>, pending: &mut BytesMut) -> Served {
    let (parts, mut body) = response.into_parts();
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
    if stream.write_all(&head).await.is_err() {
        return Served::Gone;
    }
    drop(head);
    let (mut reader, mut writer) = stream.split();
    let mut probe = [0u8; 256];
    loop {
        let frame = tokio::select! {
            biased;
            frame = body.frame() => frame,
            read = reader.read(&mut probe) => match read {
                Ok(0) | Err(_) => return Served::Gone,
                Ok(n) => {
                    if pending.len() + n > MAX_HEAD {
                        // A client that floods a connection it is reading events from.
                        return Served::Gone;
                    }
                    pending.extend_from_slice(&probe[..n]);
                    continue;
                }
            },
        };
        match frame {
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else { continue };
                if data.is_empty() {
                    continue;
                }
                let mut size = [0u8; 18];
                let size = chunk_size_line(&mut size, data.len());
                let mut chunk = Buf::chain(Buf::chain(size, data), &b"\r\n"[..]);
                if writer.write_all_buf(&mut chunk).await.is_err() {
                    return Served::Gone;
                }
            }
            Some(Err(_)) => return Served::Gone,
            None => {
                return match writer.write_all(b"0\r\n\r\n").await {
                    Ok(()) => Served::Done,
                    Err(_) => Served::Gone,
                };
            }
        }
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
}
