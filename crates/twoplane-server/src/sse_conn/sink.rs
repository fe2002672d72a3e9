//! The connection as a [`twoplane_stream::SseSink`]: how a stream's writer task writes a caught-up
//! subscriber's events straight to its socket, and how the connection's task takes over again.
//!
//! Guarantees: bytes reach the socket in the order they were delivered, each batch as one chunk;
//! what the socket does not take at once is kept (with every later batch behind it) and written
//! by the connection's task, so a write from the writer task never waits and never overtakes;
//! after a failed write the sink takes nothing more.

use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use tokio::time::{Instant, Sleep};
use twoplane_stream::{Delivered, SseEvents, SseSink};

use super::framing::{chunk, chunk_size_line, CRLF};
use super::socket::{try_write_now, Gone};
use crate::deadline::poll_deadline;
use crate::http::SseStats;
use crate::wakeup::Wakeup;

/// The connection as a [`SseSink`]: the stream's writer task writes each batch to the socket
/// without waiting; what the socket does not take at once is kept, in order, and every later
/// batch after it, until this connection's task has written it (after [`SseSink::resume`], or
/// when the socket has room again).
///
/// The sink owns the connection's socket. The stream's writer task may still hold the sink for
/// the pass it is finishing after the connection's task is done with it; the connection's task
/// takes the socket out for the next request ([`ConnSink::take_socket`]), after which the sink
/// writes nothing.
pub(super) struct ConnSink {
    /// A client that takes no byte of what the sink kept for this long is gone, as far as this
    /// server is concerned (and a write of the connection's task waits no longer than this).
    pub(super) stall: Duration,
    /// The socket's descriptor, for the connection's task's registration with tokio
    /// (`super::socket::Registered`) and for the parking lot's poller.
    fd: RawFd,
    state: Mutex<SinkState>,
    /// Raised when the writer task gives the subscription back ([`SseSink::resume`]), for the
    /// connection's task.
    resumed: Wakeup,
    pub(super) stats: Arc<SseStats>,
}

struct SinkState {
    /// A write failed (the connection is over), or the socket was taken out.
    failed: bool,
    /// The connection (non-blocking), written around tokio (see `super::socket::Registered`);
    /// none once the connection's task took it out.
    socket: Option<std::net::TcpStream>,
    /// What the socket did not take, made only while there is some: every reader holds a sink,
    /// and an idle one keeps nothing (boxed, the sink is in malloc's 128-byte class, not 192).
    held: Option<Box<Held>>,
}

/// Bytes the socket did not take, and how long they have not shrunk.
#[derive(Default)]
struct Held {
    /// Bytes not yet written, already framed as chunks; while there are any, new bytes join them.
    kept: BytesMut,
    /// Since when `kept` has not shrunk (and its length then).
    stuck: Option<(usize, Instant)>,
    /// The timer for `stuck`.
    timer: Option<Pin<Box<Sleep>>>,
}

impl SinkState {
    fn kept_len(&self) -> usize {
        self.held.as_ref().map_or(0, |held| held.kept.len())
    }

    /// Keep `bytes` behind anything kept before.
    fn keep(&mut self, bytes: &[u8]) {
        self.held.get_or_insert_with(Box::default).kept.extend_from_slice(bytes);
    }
}

impl ConnSink {
    /// A sink that owns `socket` (non-blocking).
    pub(super) fn new(socket: std::net::TcpStream, stats: Arc<SseStats>, stall: Duration) -> ConnSink {
        ConnSink {
            stall,
            fd: socket.as_raw_fd(),
            state: Mutex::new(SinkState { failed: false, socket: Some(socket), held: None }),
            resumed: Wakeup::default(),
            stats,
        }
    }

    /// The socket's descriptor (open until [`ConnSink::take_socket`], or the sink's end).
    pub(super) fn fd(&self) -> RawFd {
        self.fd
    }

    /// The socket, taken out for the connection's next request: the sink writes nothing from
    /// now on (a writer task still finishing its pass finds it failed).
    pub(super) fn take_socket(&self) -> Option<std::net::TcpStream> {
        let mut st = self.lock();
        st.failed = true;
        st.socket.take()
    }

    /// Read what the client sent, around tokio (a parked reader, woken by its lot's poller).
    pub(super) fn read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::io::Read;
        match &self.lock().socket {
            Some(socket) => (&*socket).read(buf),
            None => Err(std::io::ErrorKind::NotConnected.into()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SinkState> {
        twoplane_runtime::lock(&self.state)
    }

    /// Write `parts` now, or keep what does not fit (behind anything already kept).
    fn write_or_keep(&self, st: &mut SinkState, parts: &[&[u8]]) -> Delivered {
        if st.failed {
            return Delivered::Held;
        }
        let written = if st.kept_len() == 0 {
            let Some(socket) = &st.socket else { return Delivered::Held };
            match try_write_now(socket, parts) {
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
            st.keep(&part[from..]);
            skip -= from;
        }
        Delivered::Held
    }

    /// A keep-alive comment from the connection's task, as one chunk.
    pub(super) fn send(&self, bytes: &[u8]) -> Result<(), Gone> {
        let mut size = [0u8; 18];
        let mut st = self.lock();
        self.write_or_keep(&mut st, &chunk(&mut size, bytes));
        if st.failed {
            Err(Gone)
        } else {
            Ok(())
        }
    }

    /// Ready once the writer task gave the subscription back (since the last time this was
    /// ready); a resume that came before the wait began counts.
    pub(super) fn poll_resumed(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.resumed.poll_take(cx)
    }

    /// Ready once the kept bytes have not shrunk for [`ConnSink::stall`]; while they shrink, or
    /// there are none, the wait starts again.
    pub(super) fn poll_stalled(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut st = self.lock();
        let Some(held) = st.held.as_mut().filter(|held| !held.kept.is_empty()) else {
            st.held = None;
            return Poll::Pending;
        };
        let kept = held.kept.len();
        // Not shrunk since `since` (counted afresh whenever it shrank).
        let (was, since) = match held.stuck {
            Some((was, since)) if kept >= was => (was, since),
            _ => (kept, Instant::now()),
        };
        held.stuck = Some((was, since));
        poll_deadline(&mut held.timer, since + self.stall, cx)
    }

    /// The connection's task writes again: a stall is counted afresh the next time.
    pub(super) fn clear_stall(&self) {
        if let Some(held) = self.lock().held.as_mut() {
            held.stuck = None;
            held.timer = None;
        }
    }

    /// How many bytes wait to be written.
    #[cfg(test)]
    pub(super) fn kept_len(&self) -> usize {
        self.lock().kept_len()
    }

    /// Write as much of what was kept as the socket takes now, around tokio: a parked reader's
    /// lot watches the socket with its own poller, which reports an edge when room comes after a
    /// write met `EAGAIN` (so the lot does not spin either).
    pub(super) fn write_kept(&self) -> Result<(), Gone> {
        let mut st = self.lock();
        if st.failed {
            return Err(Gone);
        }
        let SinkState { socket: Some(socket), held: Some(held), .. } = &mut *st else { return Ok(()) };
        match try_write_now(&*socket, &[&held.kept]) {
            Ok(n) => {
                held.kept.advance(n);
                Ok(())
            }
            Err(_) => {
                st.failed = true;
                Err(Gone)
            }
        }
    }

    /// Everything kept, for the connection's task to write now that it writes alone.
    pub(super) fn take_kept(&self) -> Result<Bytes, Gone> {
        let mut st = self.lock();
        if st.failed {
            return Err(Gone);
        }
        Ok(st.held.take().map_or_else(Bytes::new, |held| held.kept.freeze()))
    }
}

impl SseSink for ConnSink {
    fn deliver(&self, events: &SseEvents) -> Delivered {
        self.stats.frames.fetch_add(events.frames(), Ordering::Relaxed);
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(events.len() as u64, Ordering::Relaxed);
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
        self.resumed.raise();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse_conn::socket::{Registered, Socket};
    use std::time::Duration;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpStream;

    /// A loopback connection: the client's end, and a sink that owns the server's end.
    async fn connected(stall: Duration) -> (TcpStream, ConnSink) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let sink = ConnSink::new(server.into_std().unwrap(), Arc::new(SseStats::default()), stall);
        (client, sink)
    }

    /// Fill the socket around tokio until the kernel refuses more.
    fn fill(sink: &ConnSink) {
        let block = vec![b'x'; 64 * 1024];
        let st = sink.lock();
        let socket = st.socket.as_ref().unwrap();
        let mut filled = 0;
        while try_write_now(socket, &[&block]).unwrap() == block.len() {
            filled += block.len();
            assert!(filled < 1 << 30, "the socket never filled");
        }
    }

    /// A socket filled around tokio while registered with it: the connection's task meets
    /// `EAGAIN` through its registration, and after that tokio knows the
    /// socket is full, so the task's next wait for room really waits (had it written around
    /// tokio, it would spin: tokio's stale readiness would wake it again at once).
    #[tokio::test]
    async fn after_a_write_into_a_full_socket_the_task_waits_for_room() {
        let (client, sink) = connected(Duration::from_secs(30)).await;
        // SAFETY: the sink owns the socket and outlives the registration.
        let io = unsafe { Registered::new(sink.fd()) }.unwrap();
        tokio::time::timeout(Duration::from_secs(1), io.writable()).await.expect("writable").unwrap();
        fill(&sink);
        // tokio never saw the kernel refuse a write, so it still says writable.
        tokio::time::timeout(Duration::from_secs(1), io.writable()).await.expect("stale readiness").unwrap();
        assert_eq!(try_write_now(&io, &[b"more"]).unwrap(), 0, "the full socket took some");
        let waited = tokio::time::timeout(Duration::from_millis(100), io.writable()).await;
        assert!(waited.is_err(), "writable at once: the task would spin");
        drop(io);
        drop(client);
    }

    /// A handed-over reader whose client takes none of the kept bytes is given up after the
    /// stall; one with nothing kept never is.
    #[tokio::test]
    async fn kept_bytes_that_do_not_shrink_for_the_stall_end_the_wait() {
        let stall = Duration::from_millis(50);
        let (client, sink) = connected(stall).await;
        let stalled = || std::future::poll_fn(|cx| sink.poll_stalled(cx));
        assert!(
            tokio::time::timeout(Duration::from_millis(200), stalled()).await.is_err(),
            "stalled with nothing kept"
        );
        sink.lock().keep(b"kept bytes");
        let began = std::time::Instant::now();
        tokio::time::timeout(Duration::from_secs(2), stalled()).await.expect("never stalled");
        assert!(began.elapsed() >= stall, "stalled before the stall: {:?}", began.elapsed());
        // The connection's task writes again: the next stall is counted from then.
        sink.clear_stall();
        sink.lock().held = None;
        assert!(tokio::time::timeout(Duration::from_millis(200), stalled()).await.is_err());
        drop(client);
    }

    /// Kept bytes are written once the client makes room, in order, and a full socket takes
    /// nothing without an error.
    #[tokio::test]
    async fn kept_bytes_go_out_when_room_comes() {
        let (mut client, sink) = connected(Duration::from_secs(30)).await;
        fill(&sink);
        sink.lock().keep(b"KEPT");
        sink.write_kept().unwrap();
        assert_eq!(sink.kept_len(), 4, "the full socket took kept bytes");
        let mut buf = vec![0u8; 1 << 20];
        let mut seen = Vec::new();
        while !seen.ends_with(b"KEPT") {
            let n = tokio::time::timeout(Duration::from_secs(2), client.read(&mut buf)).await.unwrap().unwrap();
            assert!(n > 0);
            seen.extend_from_slice(&buf[..n]);
            sink.write_kept().unwrap();
        }
        assert_eq!(sink.kept_len(), 0);
        assert!(seen[..seen.len() - 4].iter().all(|b| *b == b'x'), "kept bytes overtook or were overtaken");
    }

    /// Every reader holds its sink (in an `Arc`, 16 bytes more) for as long as it is connected:
    /// up to 104 bytes the two are in glibc's 128-byte class, past that in the next (88 measured
    /// with the socket owned by the sink).
    #[test]
    fn a_sink_stays_in_its_malloc_class() {
        let size = std::mem::size_of::<ConnSink>();
        assert!(size <= 104, "a sink is {size} bytes");
    }

    /// Once the connection's task took the socket out for its next request, a writer task still
    /// holding the sink writes nothing more to it.
    #[tokio::test]
    async fn a_sink_whose_socket_was_taken_writes_nothing() {
        let (mut client, sink) = connected(Duration::from_secs(30)).await;
        let sink = Arc::new(sink);
        let writer_copy = sink.clone();
        sink.send(b"before").unwrap();
        let socket = sink.take_socket().expect("the socket");
        assert!(sink.take_socket().is_none());
        assert!(writer_copy.send(b"after").is_err());
        drop(writer_copy);
        drop(sink);
        // The socket is open and the next response's alone.
        let mut socket = TcpStream::from_std(socket).unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut socket, b"next").await.unwrap();
        drop(socket);
        let mut seen = Vec::new();
        client.read_to_end(&mut seen).await.unwrap();
        assert_eq!(seen, b"6\r\nbefore\r\nnext");
    }
}
