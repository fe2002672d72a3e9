//! The client half of `bench_http`: many SSE connections in one process, over raw tokio TCP.
//!
//! Run by `bench_http` as a separate process so the server's CPU can be measured alone. It is
//! deliberately lean (no SSE library, no JSON parser): it de-chunks the HTTP body, splits events
//! at blank lines and looks only at each event's `"type"` and, for latency, at the chunk text,
//! which the benchmark's producer fills with the push time.
//!
//! Protocol with the parent, one line each on stdout:
//! - `ready <opened> <failed>` once every connection has its `open` frame (or gave up);
//! - `progress <chunks> <finished> <whole>` every few milliseconds while frames flow (`whole`:
//!   connections that have their `BENCH_WHOLE_CHUNKS`th chunk, 0 when that is not set);
//! - `done <json>` at the end: counts and latency percentiles, and, when `BENCH_WHOLE_CHUNKS=N`
//!   is set, when the last connection had its `N`th chunk (`whole_last_us`, CLOCK_MONOTONIC) and
//!   how many did (`whole`): the burst phase's "every client has the whole text".
//!
//! Usage: `bench_http --client <addr> <stream_id> <connections> <deadline_secs>`; `{i}` in the
//! stream id is replaced by the connection's index (one stream per connection). It connects only to
//! the address it is given, which `bench_http` always makes a loopback address.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Marks a chunk whose 8 code units carry a push timestamp: the marker, then 7 base-64 digits of
/// CLOCK_MONOTONIC microseconds (mod 2^42, about 50 days, far longer than any run).
const STAMP_MARKER: u8 = b'~';
const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn monotonic_us() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_MONOTONIC always exists on
    // Linux, and it is one clock for every process, which is what makes cross-process latency
    // measurable.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

fn decode_stamp(text: &[u8]) -> Option<u64> {
    if text.len() != 8 || text[0] != STAMP_MARKER {
        return None;
    }
    let mut v = 0u64;
    for &c in &text[1..] {
        let d = B64.iter().position(|&b| b == c)? as u64;
        v = (v << 6) | d;
    }
    Some(v)
}

#[derive(Default)]
struct Shared {
    opened: AtomicU64,
    failed: AtomicU64,
    chunks: AtomicU64,
    finished: AtomicU64,
    stale: AtomicU64,
    ended: AtomicU64,
    bytes: AtomicU64,
    latencies: Mutex<Vec<u32>>,
    /// Connections that received `whole_chunks` chunks, and the latest time one of them did.
    whole: AtomicU64,
    whole_last_us: AtomicU64,
}

/// The de-chunker's state: HTTP/1.1 chunked transfer coding, just enough of it.
enum Chunked {
    Size(u64, bool),
    Data(u64),
    DataCr,
    DataLf,
    Done,
}

struct Conn {
    shared: Arc<Shared>,
    body: Vec<u8>,
    chunked: Chunked,
    opened: bool,
    lat: Vec<u32>,
    chunks: u64,
    /// Chunks that make the whole text (0: not watched).
    whole_chunks: u64,
}

impl Conn {
    /// Feed body bytes through the de-chunker into `self.body`.
    fn dechunk(&mut self, mut input: &[u8]) {
        while !input.is_empty() {
            match &mut self.chunked {
                Chunked::Size(n, ext) => {
                    let b = input[0];
                    input = &input[1..];
                    match b {
                        b'\n' => {
                            let size = *n;
                            self.chunked = if size == 0 { Chunked::Done } else { Chunked::Data(size) };
                        }
                        b';' | b'\r' => *ext = true,
                        _ if !*ext => {
                            let d = (b as char).to_digit(16).unwrap_or(0) as u64;
                            *n = *n * 16 + d;
                        }
                        _ => {}
                    }
                }
                Chunked::Data(left) => {
                    let take = (*left).min(input.len() as u64) as usize;
                    self.body.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    *left -= take as u64;
                    if *left == 0 {
                        self.chunked = Chunked::DataCr;
                    }
                }
                Chunked::DataCr => {
                    input = &input[1..];
                    self.chunked = Chunked::DataLf;
                }
                Chunked::DataLf => {
                    input = &input[1..];
                    self.chunked = Chunked::Size(0, false);
                }
                Chunked::Done => return,
            }
        }
    }

    /// Consume complete events from `self.body`. Returns true once a terminal frame arrived.
    fn events(&mut self, now_us: u64) -> bool {
        let mut terminal = false;
        let mut start = 0;
        let finders = &*FINDERS;
        while let Some(pos) = finders.blank.find(&self.body[start..]) {
            let event = &self.body[start..start + pos];
            start += pos + 2;
            let Some(t) = finders.kind.find(event) else { continue };
            let rest = &event[t + 8..];
            match rest.first() {
                Some(b'c') => {
                    self.chunks += 1;
                    if self.chunks == self.whole_chunks {
                        self.shared.whole.fetch_add(1, Ordering::Relaxed);
                        self.shared.whole_last_us.fetch_max(now_us, Ordering::Relaxed);
                    }
                    if let Some(tx) = finders.text.find(rest) {
                        let text = &rest[tx + 8..];
                        if let Some(stamp) = text.get(..8).and_then(decode_stamp) {
                            let sent = stamp;
                            let now = now_us & ((1 << 42) - 1);
                            let lat = now.wrapping_sub(sent) & ((1 << 42) - 1);
                            self.lat.push(lat.min(u64::from(u32::MAX)) as u32);
                        }
                    }
                }
                Some(b'o') if !self.opened => {
                    self.opened = true;
                    self.shared.opened.fetch_add(1, Ordering::Relaxed);
                }
                Some(b'e') => {
                    self.shared.ended.fetch_add(1, Ordering::Relaxed);
                    terminal = true;
                }
                Some(b's') | Some(b'a') => {
                    self.shared.stale.fetch_add(1, Ordering::Relaxed);
                    terminal = true;
                }
                _ => {}
            }
        }
        self.body.drain(..start);
        terminal
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// The searches done per event, built once (building a searcher costs more than a short search).
struct Finders {
    blank: memchr::memmem::Finder<'static>,
    kind: memchr::memmem::Finder<'static>,
    text: memchr::memmem::Finder<'static>,
}

static FINDERS: std::sync::LazyLock<Finders> = std::sync::LazyLock::new(|| Finders {
    blank: memchr::memmem::Finder::new(b"\n\n"),
    kind: memchr::memmem::Finder::new(b"\"type\":\""),
    text: memchr::memmem::Finder::new(b"\"text\":\""),
});

async fn run_conn(addr: SocketAddr, stream_id: String, shared: Arc<Shared>, whole_chunks: u64) {
    let Ok(Ok(mut sock)) = tokio::time::timeout(Duration::from_secs(20), TcpStream::connect(addr)).await else {
        shared.failed.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let _ = sock.set_nodelay(true);
    let req = format!(
        "GET /api/stream?streamId={stream_id}&from=0 HTTP/1.1\r\nhost: {addr}\r\naccept: text/event-stream\r\n\r\n"
    );
    if sock.write_all(req.as_bytes()).await.is_err() {
        shared.failed.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let mut conn = Conn {
        shared: shared.clone(),
        body: Vec::with_capacity(4096),
        chunked: Chunked::Size(0, false),
        opened: false,
        lat: Vec::new(),
        chunks: 0,
        whole_chunks,
    };
    let mut head = Vec::new();
    let mut in_body = false;
    let mut buf = vec![0u8; 16 * 1024];
    let mut reported = 0u64;
    loop {
        // No per-read timer (it would cost a timer-wheel insert per read): the process-wide
        // deadline in `main` bounds the whole run instead.
        let n = match sock.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let now = monotonic_us();
        shared.bytes.fetch_add(n as u64, Ordering::Relaxed);
        let mut data = &buf[..n];
        if !in_body {
            head.extend_from_slice(data);
            let Some(end) = find(&head, b"\r\n\r\n") else { continue };
            if !head.starts_with(b"HTTP/1.1 200") {
                shared.failed.fetch_add(1, Ordering::Relaxed);
                return;
            }
            in_body = true;
            let rest = head.split_off(end + 4);
            conn.dechunk(&rest);
            data = &[];
        }
        conn.dechunk(data);
        let terminal = conn.events(now);
        shared.chunks.fetch_add(conn.chunks - reported, Ordering::Relaxed);
        reported = conn.chunks;
        if terminal || matches!(conn.chunked, Chunked::Done) {
            break;
        }
    }
    if !conn.opened {
        shared.failed.fetch_add(1, Ordering::Relaxed);
    }
    shared.finished.fetch_add(1, Ordering::Relaxed);
    if !conn.lat.is_empty() {
        lock(&shared.latencies).extend_from_slice(&conn.lat);
    }
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub fn main(args: &[String]) {
    if args.len() != 4 {
        eprintln!("usage: bench_http --client <addr> <stream_id> <connections> <deadline_secs>");
        std::process::exit(2);
    }
    let addr: SocketAddr = args[0].parse().expect("addr");
    assert!(addr.ip().is_loopback(), "the benchmark client connects to loopback addresses only");
    let stream_id = args[1].clone();
    let conns: u64 = args[2].parse().expect("connections");
    let deadline = Instant::now() + Duration::from_secs(args[3].parse().expect("deadline"));
    raise_nofile();
    // One thread by default, so the client takes at most one of the machine's cores;
    // BENCH_CLIENT_THREADS=N spreads the connections over N threads instead.
    let whole_chunks: u64 = std::env::var("BENCH_WHOLE_CHUNKS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let threads: usize = std::env::var("BENCH_CLIENT_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let rt = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build()
    }
    .expect("runtime");
    rt.block_on(async move {
        let shared = Arc::new(Shared::default());
        let mut tasks = Vec::with_capacity(conns as usize);
        for i in 0..conns {
            let id = stream_id.replace("{i}", &i.to_string());
            tasks.push(tokio::spawn(run_conn(addr, id, shared.clone(), whole_chunks)));
            // Pace the connects a little so the listener's backlog never overflows.
            if i % 256 == 255 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        // Wait for every connection to open or fail.
        while shared.opened.load(Ordering::Relaxed) + shared.failed.load(Ordering::Relaxed) < conns
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        println!("ready {} {}", shared.opened.load(Ordering::Relaxed), shared.failed.load(Ordering::Relaxed));
        let reporter = {
            let shared = shared.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    println!(
                        "progress {} {} {}",
                        shared.chunks.load(Ordering::Relaxed),
                        shared.finished.load(Ordering::Relaxed),
                        shared.whole.load(Ordering::Relaxed)
                    );
                }
            })
        };
        let all = futures::future::join_all(tasks);
        if tokio::time::timeout(deadline.saturating_duration_since(Instant::now()), all).await.is_err() {
            eprintln!("bench client: deadline reached with connections still open");
        }
        reporter.abort();
        let mut lat = std::mem::take(&mut *lock(&shared.latencies));
        lat.sort_unstable();
        // SAFETY: getrusage fills the struct we own.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        let cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) as u64 * 1000
            + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) as u64 / 1000;
        println!(
            "done {{\"cpu_ms\":{cpu_ms},\"opened\":{},\"failed\":{},\"chunks\":{},\"ended\":{},\"stale\":{},\"bytes\":{},\"samples\":{},\"p50_us\":{},\"p99_us\":{},\"p999_us\":{},\"max_us\":{},\"whole\":{},\"whole_last_us\":{}}}",
            shared.opened.load(Ordering::Relaxed),
            shared.failed.load(Ordering::Relaxed),
            shared.chunks.load(Ordering::Relaxed),
            shared.ended.load(Ordering::Relaxed),
            shared.stale.load(Ordering::Relaxed),
            shared.bytes.load(Ordering::Relaxed),
            lat.len(),
            percentile(&lat, 0.5),
            percentile(&lat, 0.99),
            percentile(&lat, 0.999),
            lat.last().copied().unwrap_or(0),
            shared.whole.load(Ordering::Relaxed),
            shared.whole_last_us.load(Ordering::Relaxed),
        );
    });
}

/// Lift the soft open-file limit to the hard one (10,000 connections need 10,000 descriptors).
fn raise_nofile() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit read and write the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// A mutex locked, poisoned or not: a benchmark's counters stay usable after a panicking task,
/// which fails the run on its own.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
