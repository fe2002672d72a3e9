//! The HTTP/1.1 accept loop: hyper connections driving an axum [`Router`], with graceful shutdown.
//!
//! This exists instead of `axum::serve` for three settings that an SSE server needs and
//! `axum::serve` does not expose:
//! - `TCP_NODELAY` on every connection: a token is a few dozen bytes, and Nagle's algorithm would
//!   hold it back until the previous segment is acknowledged;
//! - a small per-connection write buffer (`max_buf_size`): hyper stops pulling the response body
//!   once that much is queued, so a client that does not read leaves frames in the plane's
//!   bounded subscriber queue (where overflow becomes `stale`) instead of in this process's heap;
//! - vectored writes, so a chunk header, a coalesced batch of events and the chunk trailer leave
//!   in one `writev`.
//!
//! A connection whose first request subscribes to a stream is answered by [`crate::sse_conn`]
//! instead (hyper's fixed per-connection buffers and dispatch were most of an idle subscriber's
//! memory and of each frame's CPU); every other request, and every later request on that
//! connection, is hyper's.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use bytes::{Bytes, BytesMut};
use futures::FutureExt as _;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt as _;

use crate::conn_limits::{Admitted, ConnLimits, ConnLimitsConfig};
use crate::parking::{Io, Parking, Waiting};
use crate::sse_conn::{self, First, Prefixed, Served};

/// Connection-level settings.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// hyper's per-connection buffer limit (read and write). hyper's own minimum is 8 KiB.
    pub max_buf_size: usize,
    /// How long open connections get to finish after shutdown starts (the plane has sealed its
    /// streams by then, so SSE bodies end on their own; this bounds a stuck client).
    pub shutdown_grace: Duration,
    /// How long a connection may take to send its first request head, whichever path reads it
    /// (the direct SSE path first, then hyper, share this one budget), and hyper's limit for
    /// every later head: an idle socket that never sends a request is closed.
    pub header_read_timeout: Duration,
    /// TCP keepalive probes start after this much silence, so a peer that vanished without a
    /// FIN (a crashed machine, a dropped NAT entry) is found and its connection released.
    pub tcp_keepalive: Duration,
    /// How many connections may be open, from one address, and waiting for a head
    /// ([`crate::conn_limits`]); by default derived from the process's open-file limit.
    pub conn_limits: ConnLimitsConfig,
    /// A response whose client takes no byte for this long is dropped, and its subscription
    /// released: a reader that stopped reading cannot hold its connection.
    pub write_stall: Duration,
    /// The path whose subscriptions [`crate::sse_conn`] serves itself when a connection's first
    /// request is one ([`crate::http::STREAM_PATH`] by default); `None` serves every request
    /// through hyper.
    pub direct_sse_path: Option<String>,
    /// The live counts to admit connections against, when someone else reads them too (`/metrics`);
    /// `None`: fresh counts for [`HttpConfig::conn_limits`].
    pub limits: Option<Arc<ConnLimits>>,
    /// Requests served before the router, by whoever set it ([`Shortcut`]); `None`: the router
    /// serves every request hyper reads.
    pub shortcut: Option<Arc<dyn Shortcut>>,
}

/// A request hyper has read that is served without going through the router, when it is one the
/// shortcut fully understands; any other is given back and the router serves it.
///
/// Why: a producer that sends a request per delta pays for the router's layers and extractors
/// on each (boxed services cloned per layer, a JSON value built per answer): about a third of
/// the server's instructions per append in a callgrind profile (docs/server.md, "Where the CPU
/// goes"). A shortcut answers exactly what the router would for the requests it takes: it is
/// the same handler code behind the same checks (the route that sets one says how).
pub trait Shortcut: Send + Sync + 'static {
    /// Serve `request`, or give it back untouched. The request carries the peer's address
    /// (`ConnectInfo`), as the router's requests do.
    #[allow(clippy::result_large_err)] // the request given back is moved, not copied around
    fn try_serve(
        &self,
        request: hyper::Request<Incoming>,
    ) -> Result<futures::future::BoxFuture<'static, axum::response::Response>, hyper::Request<Incoming>>;
}

impl std::fmt::Debug for dyn Shortcut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shortcut")
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            max_buf_size: 64 * 1024,
            shutdown_grace: Duration::from_secs(5),
            header_read_timeout: Duration::from_secs(10),
            tcp_keepalive: Duration::from_secs(60),
            conn_limits: ConnLimitsConfig::for_open_files(open_file_limit()),
            write_stall: Duration::from_secs(30),
            direct_sse_path: Some(crate::http::STREAM_PATH.to_owned()),
            limits: None,
            shortcut: None,
        }
    }
}

/// The process's open-file limit (its soft limit) now.
pub fn open_file_limit() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given, nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 1024;
    }
    limit.rlim_cur
}

/// Raise the open-file limit to its hard limit (what the process may use without privileges);
/// the limit before and after.
pub fn raise_open_file_limit() -> (u64, u64) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write only the struct they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return (1024, 1024);
        }
        let before = limit.rlim_cur;
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return (before, before);
            }
        }
        (before, limit.rlim_cur)
    }
}

/// Bind `addr`, turning the usual failures into one readable sentence.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, String> {
    TcpListener::bind(addr).await.map_err(|e| match e.kind() {
        io::ErrorKind::AddrInUse => format!("cannot listen on {addr}: the address is already in use"),
        io::ErrorKind::PermissionDenied => format!("cannot listen on {addr}: permission denied"),
        io::ErrorKind::AddrNotAvailable => format!("cannot listen on {addr}: no local interface has that address"),
        _ => format!("cannot listen on {addr}: {e}"),
    })
}

/// Serve `router` on `listener` until `shutdown` resolves, then let open connections finish
/// (bounded by [`HttpConfig::shutdown_grace`]).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    config: HttpConfig,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .max_buf_size(config.max_buf_size.max(8192))
        .writev(true)
        .header_read_timeout(config.header_read_timeout);
    // Tells connections still waiting for their first request head that no request will be
    // served any more (hyper's own connections learn it through `graceful`).
    let stopping = tokio_util::sync::CancellationToken::new();
    // What every connection serves with, shared: a connection holds one pointer to it.
    let shared = Arc::new(Shared {
        router,
        builder,
        stopping: stopping.clone(),
        head_timeout: config.header_read_timeout,
        direct_path: config.direct_sse_path.clone(),
        shortcut: config.shortcut.clone(),
        write_stall: config.write_stall,
        parking: Parking::start()?,
    });
    let limits = config.limits.clone().unwrap_or_else(|| ConnLimits::new(config.conn_limits));
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning; the listener stays up.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Past a bound the connection is closed before anything is read: the cheapest answer,
        // and what keeps descriptors for producers and for the database.
        let Some(admitted) = limits.admit(peer.ip()) else {
            tracing::debug!(%peer, "connection refused: a connection limit is reached");
            continue;
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%peer, error = %e, "set_nodelay failed");
        }
        let keepalive =
            socket2::TcpKeepalive::new().with_time(config.tcp_keepalive).with_interval(Duration::from_secs(10));
        if let Err(e) = socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive) {
            tracing::debug!(%peer, error = %e, "set_tcp_keepalive failed");
        }
        // The watcher is held for the connection's life, so the grace period waits for a
        // subscription in flight.
        let conn = Conn { shared: shared.clone(), peer, admitted, watcher: graceful.watcher() };
        tokio::spawn(conn.start(stream));
    }
    drop(listener);
    stopping.cancel();
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections closed"),
        () = tokio::time::sleep(config.shutdown_grace) => {
            tracing::warn!(grace = ?config.shutdown_grace, "connections still open at the end of the grace period");
        }
    }
    Ok(())
}

/// What every connection of one [`serve`] serves with.
struct Shared {
    router: Router,
    builder: hyper::server::conn::http1::Builder,
    stopping: tokio_util::sync::CancellationToken,
    head_timeout: Duration,
    direct_path: Option<String>,
    shortcut: Option<Arc<dyn Shortcut>>,
    write_stall: Duration,
    /// Where readers handed to their stream's writer task wait.
    parking: Parking<Parked>,
}

/// One connection: what it holds for its whole life.
struct Conn {
    shared: Arc<Shared>,
    peer: SocketAddr,
    /// Its place under the connection limits, given back when the connection ends.
    admitted: Admitted,
    watcher: Watcher,
}

/// A reader's connection while its body is handed to its stream's writer task: parked in the
/// server's lot ([`crate::parking`]) instead of a task of its own, until the writer gives the
/// body back (then it goes on with a task again) or the connection is over.
struct Parked {
    conn: Conn,
    reader: sse_conn::Reader,
}

impl Waiting for Parked {
    fn poll_wait(&mut self, cx: &mut Context<'_>, io: Io) -> Poll<bool> {
        self.reader.poll_wait(cx, io)
    }

    fn go_on(self) {
        tokio::spawn(self.conn.resume(self.reader));
    }

    fn due(&self) -> Option<tokio::time::Instant> {
        self.reader.next_due()
    }

    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.reader.fd())
    }
}

impl Conn {
    /// A new connection: read its first request head, and serve it on the path it takes.
    async fn start(mut self, mut stream: TcpStream) {
        let head_deadline = tokio::time::Instant::now() + self.shared.head_timeout;
        let first = match &self.shared.direct_path {
            None => First::Other(Bytes::new()),
            Some(path) => tokio::select! {
                first = tokio::time::timeout(self.shared.head_timeout, sse_conn::read_first(&mut stream, self.peer, path)) => match first {
                    Ok(first) => first,
                    Err(_) => return,
                },
                () = self.shared.stopping.cancelled() => return,
                () = self.admitted.evicted() => return,
            },
        };
        // Whatever it turned out to be, the head is in (or hyper has what is left of its budget
        // to finish it): no longer a waiting connection.
        self.admitted.head_read();
        match first {
            First::Closed => {}
            First::Other(read) => {
                // What the direct path spent reading is taken from hyper's budget for the same
                // head, so a head that never completes holds the connection once.
                let left = head_deadline.saturating_duration_since(tokio::time::Instant::now());
                self.hyper(stream, read, Some(left.max(Duration::from_millis(1)))).await;
            }
            First::Sse(request, rest) => {
                let close = sse_conn::wants_close(request.headers());
                // Boxed: the router's future is large (about 1.2 KiB), and only for the moment
                // it runs.
                let answer = Box::pin(sse_conn::answer(self.shared.router.clone(), request)).await;
                // A copy: `rest` shares the buffer the head was read into, which must not live
                // as long as the subscription does.
                let pending = BytesMut::from(&rest[..]);
                drop(rest);
                let served = sse_conn::write_response(stream, answer, pending, close, self.shared.write_stall).await;
                self.after(served).await
            }
        }
    }

    /// A reader's body taken back from its stream's writer task: write it until it ends or is
    /// handed over again.
    async fn resume(self, reader: sse_conn::Reader) {
        let served = reader.resume().await;
        self.after(served).await
    }

    /// After a response on the direct path: hyper serves the connection's later requests, or a
    /// reader handed over waits in the server's lot.
    async fn after(self, served: Served) {
        match served {
            Served::Done(stream, pending) => self.hyper(stream, pending.freeze(), None).await,
            Served::Handed(reader) => {
                let shared = Arc::clone(&self.shared);
                shared.parking.park(Parked { conn: self, reader });
            }
            Served::Gone => {}
        }
    }

    /// hyper serves the connection from here, `prefix` (bytes already read from it) first;
    /// `head_left`: what is left of the first head's time budget, when the direct path read it.
    async fn hyper(self, stream: TcpStream, prefix: Bytes, head_left: Option<Duration>) {
        let Conn { shared, peer, admitted, watcher } = self;
        // The peer travels with each request (`ConnectInfo`): the producer API answers loopback
        // peers only when it has no secret (crate::access).
        let router = shared.router.clone();
        let shortcut = shared.shortcut.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(axum::extract::ConnectInfo(peer));
            let req = match &shortcut {
                Some(shortcut) => match shortcut.try_serve(req) {
                    Ok(served) => return futures::future::Either::Left(served.map(Ok)),
                    Err(req) => req,
                },
                None => req,
            };
            futures::future::Either::Right(router.clone().oneshot(req))
        });
        let mut builder = shared.builder.clone();
        if let Some(left) = head_left {
            builder.header_read_timeout(left);
        }
        let conn = builder.serve_connection(TokioIo::new(Prefixed::new(prefix, stream, shared.write_stall)), service);
        drop(shared);
        // Boxed: hyper's connection is large (about 0.9 KiB).
        if let Err(e) = Box::pin(watcher.watch(conn)).await {
            log_conn_error(peer, &e);
        }
        drop(admitted);
    }
}

/// A client going away mid-response is ordinary for SSE, and a malformed request is the
/// client's problem: neither deserves more than a debug line (clients can produce them at will).
fn log_conn_error(peer: SocketAddr, e: &hyper::Error) {
    let ordinary = e.is_incomplete_message() || e.is_canceled() || e.is_closed() || e.is_timeout();
    tracing::debug!(%peer, error = %e, ordinary, "connection ended with an error");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An idle reader's connection is this value in a slot of its server's lot, for as long as
    /// the reader is connected: a field that grows it grows every reader (112 bytes measured
    /// when the bound was set).
    #[test]
    fn a_parked_connection_stays_small() {
        let size = std::mem::size_of::<Option<Parked>>();
        assert!(size <= 128, "a parked connection is {size} bytes");
    }
}
