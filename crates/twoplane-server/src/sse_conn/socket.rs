//! Writing to and reading from a connection's socket without waiting for it, in the two ways
//! the direct SSE path needs: through tokio (the connection's own task, which waits for
//! readiness) and around it ([`DirectWriter`], the stream's writer tasks, which never wait).
//!
//! Guarantees: a write takes what the socket takes and reports the count (nothing is written
//! twice or skipped); at most [`MAX_SLICES`] slices go into one `writev`; a client's bytes read
//! while its response is written are kept in order, up to [`MAX_HEAD`].

use std::io;
use std::time::Duration;

use bytes::BytesMut;
use tokio::net::TcpStream;

use super::framing::{chunk, MAX_HEAD};

/// The client went away (or the connection failed).
#[derive(Debug)]
pub(super) struct Gone;

/// Read what the client sent while its response is being written: end-of-file or an error ends
/// the connection; bytes (a pipelined request) are kept for hyper, up to [`MAX_HEAD`].
pub(super) fn probe(socket: &TcpStream, pending: &mut BytesMut) -> Result<(), Gone> {
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
pub(super) async fn write_chunk(socket: &TcpStream, data: &[u8], stall: Duration) -> Result<(), Gone> {
    if data.is_empty() {
        return Ok(());
    }
    let mut size = [0u8; 18];
    write_all(socket, &chunk(&mut size, data), stall).await
}

/// Write every byte of `parts`, in order, waiting for room as needed, but never longer than
/// `stall` for any one write to make progress: a client that takes no byte for that long is
/// [`Gone`].
pub(super) async fn write_all(socket: &TcpStream, parts: &[&[u8]], stall: Duration) -> Result<(), Gone> {
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

/// A connection's socket written with plain `writev`, bypassing tokio's readiness bookkeeping.
///
/// Why: the writer task writes to hundreds of sockets per push, and going through tokio touches
/// each socket's readiness record first, one more cache miss per write (about a quarter of the
/// user time of a delivery in a profile of bench_http phase B). Nothing is lost by bypassing it:
/// tokio clears a socket's write readiness only when its own write meets `EAGAIN`, so the
/// connection's task, when it next writes through tokio, at worst tries once more before it
/// waits, and the edge that wakes it comes from the kernel either way. The connection's task
/// therefore always writes through tokio (`ConnSink::write_kept`, [`write_all`]): a task that
/// waited for tokio's readiness and then wrote around it would find it never cleared.
pub(super) struct DirectWriter(std::mem::ManuallyDrop<std::net::TcpStream>);

impl DirectWriter {
    pub(super) fn of(socket: &TcpStream) -> DirectWriter {
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: the descriptor belongs to `socket`, which the sink holds (`ConnSink::socket`)
        // for as long as this writer lives, and `ManuallyDrop` keeps this copy from closing it.
        // The socket is non-blocking (tokio set it so), so a write never waits.
        DirectWriter(std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(socket.as_raw_fd()) }))
    }
}

/// A socket [`try_write_now`] can write to: tokio's, or the sink's direct one.
pub(super) trait TryWriteVectored {
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
