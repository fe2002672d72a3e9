//! The connection as a [`twoplane_stream::SseSink`]: how a stream's writer task writes a caught-up
//! subscriber's events straight to its socket, and how the connection's task takes over again.
//!
//! Guarantees: bytes reach the socket in the order they were delivered, each batch as one chunk;
//! what the socket does not take at once is kept (with every later batch behind it) and written
//! by the connection's task, so a write from the writer task never waits and never overtakes;
//! after a failed write the sink takes nothing more.

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};
use twoplane_stream::{Delivered, SseEvents, SseSink};

use super::framing::{chunk, chunk_size_line, CRLF};
use super::socket::{try_write_now, DirectWriter, Gone};
use crate::deadline::poll_deadline;
use crate::http::SseStats;
use crate::wakeup::Wakeup;

/// The connection as a [`SseSink`]: the stream's writer task writes each batch to the socket
/// without waiting; what the socket does not take at once is kept, in order, and every later
/// batch after it, until this connection's task has written it (after [`SseSink::resume`], or
/// when the socket has room again).
///
/// The stream's writer task may still hold the sink for the pass it is finishing after the
/// connection's task is done with it; [`ConnSink::released`] tells that task when the last
/// holder let go, so it can take the socket back for the next request.
pub(super) struct ConnSink {
    /// The connection, through tokio: the connection's task writes with it, and it keeps
    /// `direct`'s descriptor open while the sink lives.
    pub(super) socket: Arc<TcpStream>,
    /// A client that takes no byte of what the sink kept for this long is gone, as far as this
    /// server is concerned (and a write of the connection's task waits no longer than this).
    pub(super) stall: Duration,
    /// The same socket, for the writer task's writes (see [`DirectWriter`]).
    direct: DirectWriter,
    state: Mutex<SinkState>,
    /// Raised when the writer task gives the subscription back ([`SseSink::resume`]), for the
    /// connection's task.
    resumed: Wakeup,
    pub(super) stats: Arc<SseStats>,
    /// Dropped with the sink, after `socket` (fields drop in order): its receiver then knows the
    /// socket is the connection's alone again.
    _released: oneshot::Sender<()>,
}

#[derive(Default)]
struct SinkState {
    /// A write failed: the connection is over.
    failed: bool,
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
    /// A sink on `socket`, and what resolves once the last holder of the sink let go of it.
    pub(super) fn new(
        socket: &Arc<TcpStream>,
        stats: Arc<SseStats>,
        stall: Duration,
    ) -> (ConnSink, oneshot::Receiver<()>) {
        let (released, on_release) = oneshot::channel();
        let sink = ConnSink {
            socket: socket.clone(),
            stall,
            direct: DirectWriter::of(socket),
            state: Mutex::new(SinkState::default()),
            resumed: Wakeup::default(),
            stats,
            _released: released,
        };
        (sink, on_release)
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
    pub(super) fn kept_len(&self) -> usize {
        self.lock().kept_len()
    }

    /// Write as much of what was kept as the socket takes now. Through tokio, not `direct`: this
    /// runs when tokio said the socket was writable, and only a write through tokio that meets
    /// `EAGAIN` clears that, so the task waits for room instead of spinning.
    pub(super) fn write_kept(&self) -> Result<(), Gone> {
        let mut st = self.lock();
        if st.failed {
            return Err(Gone);
        }
        let Some(held) = st.held.as_mut() else { return Ok(()) };
        match try_write_now(&*self.socket, &[&held.kept]) {
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
    use std::time::Duration;

    /// A loopback connection: the client's end, and the server's end as a sink holds it.
    async fn connected() -> (TcpStream, Arc<TcpStream>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (client, Arc::new(server))
    }

    /// A socket whose peer reads nothing, filled through the sink's direct writer until the
    /// kernel refuses more, with bytes kept: the connection's task, woken as writable, writes the
    /// kept bytes through tokio, and after that tokio knows the socket is full, so the task's
    /// next wait for room really waits (written around tokio, the task would spin: tokio's stale
    /// readiness would wake it again at once).
    #[tokio::test]
    async fn after_writing_kept_bytes_into_a_full_socket_the_task_waits_for_room() {
        let (client, socket) = connected().await;
        let (sink, _released) = ConnSink::new(&socket, Arc::new(SseStats::default()), Duration::from_secs(30));
        let block = vec![b'x'; 64 * 1024];
        let mut filled = 0;
        while try_write_now(&sink.direct, &[&block]).unwrap() == block.len() {
            filled += block.len();
            assert!(filled < 1 << 30, "the socket never filled");
        }
        sink.lock().keep(b"kept bytes");
        // tokio never saw the kernel refuse a write, so it still says writable.
        tokio::time::timeout(Duration::from_secs(1), socket.writable()).await.expect("stale readiness").unwrap();
        sink.write_kept().unwrap();
        assert!((sink.kept_len() > 0), "the full socket took none of it");
        let waited = tokio::time::timeout(Duration::from_millis(100), socket.writable()).await;
        assert!(waited.is_err(), "writable at once: the task would spin");
        drop(client);
    }

    /// A handed-over reader whose client takes none of the kept bytes is given up after the
    /// stall; one with nothing kept never is.
    #[tokio::test]
    async fn kept_bytes_that_do_not_shrink_for_the_stall_end_the_wait() {
        let (client, socket) = connected().await;
        let stall = Duration::from_millis(50);
        let (sink, _released) = ConnSink::new(&socket, Arc::new(SseStats::default()), stall);
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

    /// Every reader holds its sink (in an `Arc`, 16 bytes more) for as long as it is connected:
    /// up to 104 bytes the two are in glibc's 128-byte class, past that in the next (104 measured
    /// when the bound was set, with the kept bytes boxed).
    #[test]
    fn a_sink_stays_in_its_malloc_class() {
        let size = std::mem::size_of::<ConnSink>();
        assert!(size <= 104, "a sink is {size} bytes");
    }

    #[tokio::test]
    async fn the_release_is_told_once_the_last_holder_lets_go() {
        let (_client, socket) = connected().await;
        let (sink, mut released) = ConnSink::new(&socket, Arc::new(SseStats::default()), Duration::from_secs(30));
        let sink = Arc::new(sink);
        let writer_copy = sink.clone();
        drop(sink);
        assert!(released.try_recv().is_err_and(|e| e == oneshot::error::TryRecvError::Empty));
        drop(writer_copy);
        assert_eq!(released.try_recv(), Err(oneshot::error::TryRecvError::Closed));
        assert!(Arc::try_unwrap(socket).is_ok(), "the sink let go of the socket before telling");
    }
}
