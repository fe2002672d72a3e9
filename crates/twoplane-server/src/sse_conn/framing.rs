//! The only hand-written HTTP of the server: what the direct SSE path reads and writes around
//! the router's own response. Everything else is hyper's.
//!
//! Guarantees:
//! - A request head is taken ([`Parsed::Sse`]) only when this path fully understands it: `GET`
//!   over HTTP/1.1 of a target its caller serves (`crate::http::is_reader_target`: the
//!   configured path, exactly or followed by a query, and the AI SDK's resume route
//!   `GET /v1/streams/{id}/ui-message-stream`), without a body, with
//!   at most [`MAX_HEADERS`] headers; anything it does not understand is [`Parsed::Other`], for
//!   hyper to frame (and refuse, if it must).
//! - A response head carries the router's status and headers, minus any length or transfer
//!   encoding of its own, then `transfer-encoding: chunked`; a body is a sequence of chunks (an
//!   empty one is never written, since it would end the body) closed by [`LAST_CHUNK`].
//! - [`Prefixed`] gives hyper the bytes already read, then the socket, so nothing a client sent is
//!   lost or reordered.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, Version};
use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The largest request head this path reads; a longer one goes to hyper (which applies its own
/// limit).
pub const MAX_HEAD: usize = 16 * 1024;
/// At most this many request headers; more go to hyper.
const MAX_HEADERS: usize = 64;

pub(super) const CRLF: &[u8] = b"\r\n";
/// The chunk that ends a chunked body.
pub(super) const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

pub(super) enum Parsed {
    /// A subscription request, and the length of its head.
    Sse(Box<Request<Body>>, usize),
    /// Anything else: hyper's to serve.
    Other,
    /// Not a whole head yet.
    Partial,
}

/// Parse the request head at the start of `buf`: a subscription this layer serves (a `GET` of a
/// target `serves` takes), or anything else, or not yet a whole head.
pub(super) fn parse(buf: &[u8], peer: SocketAddr, serves: &dyn Fn(&str) -> bool) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Other,
    };
    let (Some(method), Some(path), Some(1)) = (req.method, req.path, req.version) else { return Parsed::Other };
    if method != "GET" || !serves(path) {
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

/// Whether `headers` (a request's or a response's) ask to close the connection after this
/// exchange.
pub fn wants_close(headers: &axum::http::HeaderMap) -> bool {
    headers.get_all(axum::http::header::CONNECTION).iter().any(|value| {
        value.to_str().is_ok_and(|v| v.split(',').any(|option| option.trim().eq_ignore_ascii_case("close")))
    })
}

/// The status line and headers of `parts`, framed for a chunked body.
pub(super) fn response_head(parts: &axum::http::response::Parts) -> Vec<u8> {
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

/// `data` framed as one chunk of a chunked body: its size line (written into `size`), the data,
/// and the CRLF that closes it.
pub(super) fn chunk<'a>(size: &'a mut [u8; 18], data: &'a [u8]) -> [&'a [u8]; 3] {
    [chunk_size_line(size, data.len()), data, CRLF]
}

/// `len` in hex followed by CRLF, the line that opens a chunk, written into `buf` (no allocation
/// per write).
pub(super) fn chunk_size_line(buf: &mut [u8; 18], len: usize) -> &[u8] {
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
/// Writes that make no progress for its `stall` fail with `TimedOut`, so hyper drops a response
/// whose client stopped reading (and with it the subscription it was sending).
pub struct Prefixed {
    prefix: Bytes,
    inner: TcpStream,
    stall: Duration,
    /// Armed when a write found the socket full; cleared by the next write that makes progress.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Prefixed {
    pub fn new(prefix: Bytes, inner: TcpStream, stall: Duration) -> Prefixed {
        Prefixed { prefix, inner, stall, stalled: None }
    }

    /// `written` from a write attempt, with the stall deadline kept up to date.
    fn watch<T>(&mut self, cx: &mut Context<'_>, written: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match written {
            Poll::Pending => {
                let stall = self.stall;
                let timer = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
                if timer.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client took no byte of the response for the write stall limit",
                    )));
                }
                Poll::Pending
            }
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl AsyncRead for Prefixed {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            if self.prefix.is_empty() {
                // Let go of the buffer the head was read into, for the rest of the connection.
                self.prefix = Bytes::new();
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let flushed = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, flushed)
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

    /// The targets the accept loop serves here with `path` configured.
    fn parse(buf: &[u8], peer: SocketAddr, path: &str) -> Parsed {
        super::parse(buf, peer, &|target| crate::http::is_reader_target(target, path))
    }

    #[test]
    fn only_a_bodyless_get_of_the_stream_path_takes_this_path() {
        let sse = |raw: &str| matches!(parse(raw.as_bytes(), peer(), "/api/stream"), Parsed::Sse(..));
        assert!(sse("GET /api/stream?streamId=a&from=2 HTTP/1.1\r\nhost: x\r\nlast-event-id: 5\r\n\r\n"));
        assert!(sse("GET /api/stream HTTP/1.1\r\ncontent-length: 0\r\n\r\n"));
        assert!(!sse("GET /api/streams?x HTTP/1.1\r\n\r\n"));
        assert!(!sse("GET /api/stream?x HTTP/1.0\r\n\r\n"));
        assert!(!sse("HEAD /api/stream?x HTTP/1.1\r\n\r\n"));
        assert!(!sse("POST /api/stream?x HTTP/1.1\r\ncontent-length: 2\r\n\r\nab"));
        assert!(!sse("GET /api/stream?x HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n"));
        assert!(!sse("GET /healthz HTTP/1.1\r\n\r\n"));
        assert!(sse("GET /v1/streams/m1/ui-message-stream?from=3 HTTP/1.1\r\n\r\n"));
        assert!(!sse("POST /v1/streams/m1/ui-message-stream HTTP/1.1\r\ncontent-length: 0\r\n\r\n"));
        assert!(!sse("garbage\r\n\r\n"));
        assert!(matches!(parse(b"GET /api/stream?x HTTP/1.1\r\nhost:", peer(), "/api/stream"), Parsed::Partial));
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
        let Parsed::Sse(request, head_len) = parse(raw.as_bytes(), peer(), "/api/stream") else { panic!("not taken") };
        assert_eq!(&raw[head_len..], "rest");
        assert_eq!(request.uri().path_and_query().unwrap().as_str(), "/api/stream?streamId=m&from=3");
        assert_eq!(request.headers()["last-event-id"], "9");
        assert_eq!(request.headers()["authorization"], "Bearer t");
        assert!(request.extensions().get::<axum::extract::ConnectInfo<SocketAddr>>().is_some());
    }

    #[test]
    fn a_close_is_found_among_the_connection_options() {
        let with = |value: &str| {
            let mut headers = axum::http::HeaderMap::new();
            headers.insert(axum::http::header::CONNECTION, HeaderValue::from_str(value).unwrap());
            wants_close(&headers)
        };
        assert!(with("close") && with("Close") && with("keep-alive, close"));
        assert!(!with("keep-alive") && !with("closed"));
        assert!(!wants_close(&axum::http::HeaderMap::new()));
    }

    #[test]
    fn another_configured_path_is_served_instead() {
        let raw = b"GET /v2/sse?streamId=a HTTP/1.1\r\n\r\n";
        assert!(matches!(parse(raw, peer(), "/v2/sse"), Parsed::Sse(..)));
        assert!(matches!(parse(raw, peer(), "/api/stream"), Parsed::Other));
    }
}
