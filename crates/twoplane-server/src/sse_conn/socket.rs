//! Writing to and reading from a connection's socket without waiting for it, in the ways the
//! direct SSE path needs: through tokio (the connection's own task, which waits for readiness:
//! the accepted stream, or a reader's descriptor registered while its task runs, [`Registered`])
//! and around it (the stream's writer tasks and the parking lot, which never wait on tokio).
//!
//! Guarantees: a write takes what the socket takes and reports the count (nothing is written
//! twice or skipped); at most [`MAX_SLICES`] slices go into one `writev`; a client's bytes read
//! while its response is written are kept in order, up to [`MAX_HEAD`].

use std::io::{self, Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::TcpStream;

use super::framing::{chunk, MAX_HEAD};

/// The client went away (or the connection failed).
#[derive(Debug)]
pub(super) struct Gone;

/// A connection's socket as the connection's task uses it: reads and writes that never wait,
/// and waits for tokio's readiness (cleared by a read or write that met `EAGAIN`).
pub(super) trait Socket: TryWriteVectored {
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize>;
    async fn readable(&self) -> io::Result<()>;
    async fn writable(&self) -> io::Result<()>;
}

impl Socket for TcpStream {
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        TcpStream::try_read(self, buf)
    }

    async fn readable(&self) -> io::Result<()> {
        TcpStream::readable(self).await
    }

    async fn writable(&self) -> io::Result<()> {
        TcpStream::writable(self).await
    }
}

/// Whether the client may have sent more than [`probe`] read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Probed {
    /// Bytes came: there may be more.
    More,
    /// The socket had nothing (more) to read.
    Drained,
}

/// Read what the client sent while its response is being written: end-of-file or an error ends
/// the connection; bytes (a pipelined request) are kept for hyper, up to [`MAX_HEAD`].
pub(super) fn probe(socket: &impl Socket, pending: &mut BytesMut) -> Result<Probed, Gone> {
    probe_with(|buf| socket.try_read(buf), pending)
}

/// [`probe`] with a read of the caller's (a parked reader reads its sink's socket directly).
pub(super) fn probe_with(
    read: impl FnOnce(&mut [u8]) -> io::Result<usize>,
    pending: &mut BytesMut,
) -> Result<Probed, Gone> {
    let mut buf = [0u8; 256];
    match read(&mut buf) {
        Ok(0) => Err(Gone),
        Ok(n) if pending.len() + n > MAX_HEAD => Err(Gone),
        Ok(n) => {
            pending.extend_from_slice(&buf[..n]);
            Ok(Probed::More)
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Probed::Drained),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(Probed::More),
        Err(_) => Err(Gone),
    }
}

/// One chunk of the body (nothing for empty data: an empty chunk would end the body).
pub(super) async fn write_chunk(socket: &impl Socket, data: &[u8], stall: Duration) -> Result<(), Gone> {
    if data.is_empty() {
        return Ok(());
    }
    let mut size = [0u8; 18];
    write_all(socket, &chunk(&mut size, data), stall).await
}

/// Write every byte of `parts`, in order, waiting for room as needed, but never longer than
/// `stall` for any one write to make progress: a client that takes no byte for that long is
/// [`Gone`].
pub(super) async fn write_all(socket: &impl Socket, parts: &[&[u8]], stall: Duration) -> Result<(), Gone> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut done = 0;
    while done < total {
        match write_vectored_from(socket, parts, done) {
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                // Boxed: a full socket is the rare case, and the wait with its timer (about 350
                // bytes) would otherwise be room in every future that writes a response, made
                // again at each take-back of a reader (a future is as large as its largest
                // state).
                Box::pin(tokio::time::timeout(stall, socket.writable())).await.map_err(|_| Gone)?.map_err(|_| Gone)?
            }
            Err(_) => return Err(Gone),
        }
    }
    Ok(())
}

/// A reader's descriptor registered with tokio, for the connection's task while it runs; the
/// socket itself is the sink's (`ConnSink`), which the stream's writer task writes with plain
/// `writev` around tokio.
///
/// Why around tokio: the writer task writes to hundreds of sockets per push, and going through
/// tokio touches each socket's readiness record first, one more cache miss per write (about a
/// quarter of the user time of a delivery in a profile of bench_http phase B). Nothing is lost
/// by bypassing it: tokio clears a descriptor's write readiness only when its own write meets
/// `EAGAIN`, so the connection's task, when it next writes through tokio, at worst tries once
/// more before it waits, and the edge that wakes it comes from the kernel either way. The
/// connection's task therefore always writes through this registration ([`write_all`]): a task
/// that waited for tokio's readiness and then wrote around it would find it never cleared.
///
/// Why apart from the socket: a parked reader is registered with its lot's poller instead
/// (`crate::parking`), and tokio's registration of a descriptor is 256 bytes of its own; so the
/// registration is made when the connection's task runs and dropped when it parks.
pub(super) struct Registered(AsyncFd<Fd>);

/// The sink's descriptor, borrowed (never closed from here).
pub(super) struct Fd(ManuallyDrop<std::net::TcpStream>);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl Registered {
    /// Register `fd` with tokio (it must be non-blocking).
    ///
    /// # Safety
    /// `fd` is an open socket that stays open for as long as the registration lives (the
    /// reader holds the sink that owns it, and drops the registration before it takes the
    /// socket out).
    pub(super) unsafe fn new(fd: RawFd) -> io::Result<Registered> {
        // SAFETY: open for as long as this lives (the caller's promise); `ManuallyDrop` keeps
        // this copy from closing it.
        let borrowed = Fd(ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd) }));
        // SAFETY: as above; `Fd` always names the same descriptor.
        unsafe { AsyncFd::register_with_interest(borrowed, Interest::READABLE | Interest::WRITABLE) }
            .map(Registered)
            .map_err(|e| e.into_parts().1)
    }
}

impl Socket for Registered {
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_io(Interest::READABLE, |fd| (&*fd.0).read(buf))
    }

    async fn readable(&self) -> io::Result<()> {
        self.0.readable().await.map(drop)
    }

    async fn writable(&self) -> io::Result<()> {
        self.0.writable().await.map(drop)
    }
}

impl TryWriteVectored for Registered {
    fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_io(Interest::WRITABLE, |fd| (&*fd.0).write_vectored(bufs))
    }
}

/// A socket [`try_write_now`] can write to: through tokio, or the sink's own (around it).
pub(super) trait TryWriteVectored {
    fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize>;
}

impl TryWriteVectored for TcpStream {
    fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        TcpStream::try_write_vectored(self, bufs)
    }
}

impl TryWriteVectored for std::net::TcpStream {
    fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        (&*self).write_vectored(bufs)
    }
}

/// Write as much of `parts` as the socket takes without waiting; the count written.
pub(super) fn try_write_now(socket: &impl TryWriteVectored, parts: &[&[u8]]) -> io::Result<usize> {
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
