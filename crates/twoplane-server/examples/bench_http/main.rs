//! HTTP benchmark of the SSE layer: delivered frames per second, server CPU per delivered frame,
//! memory per subscriber and push-to-receipt latency, for 100, 1,000 and 10,000 loopback SSE
//! clients.
//!
//! `cargo run --release -p twoplane-server --example bench_http [-- --pushes N --sizes 100,1000]`
//!
//! Three roles, one executable:
//! - the driver (no flags) runs one fresh server process per client count, so each memory
//!   baseline starts clean, and prints the table;
//! - `--run N` is the server: the plane on a temporary SQLite file, the HTTP server, and the
//!   producer; it measures its own CPU (`getrusage`, user + system) and RSS;
//! - `--client ...` holds the N SSE connections in a separate process, so its CPU is not
//!   counted as the server's.
//!
//! Phases A and B put every client on one stream (the fan-out case the TypeScript plane was
//! measured on). Phase A pushes `--pushes` deltas of 8 characters as fast as the clients absorb
//! them: the producer keeps the average client at most `WINDOW` frames behind (the client
//! process reports progress every 5 ms), well inside the plane's 1,024-frame subscriber queue.
//! Phase B pushes 50 deltas per second for `LATENCY_SECS` seconds, each carrying its push time
//! (CLOCK_MONOTONIC, one clock for both processes), and the clients report latency percentiles;
//! it also prints the client process's CPU per frame over the phase (from /proc), because the
//! clients read on the same cores and the last of them cannot read a push sooner than the server
//! and the client together take to write and read it.
//! Phase P is phase B on a message made of parts (docs/contract.md §8): a new stream, N new
//! clients, ten parts started (reasoning, a tool call, texts, a data part) before the clock
//! starts, then the same 50 stamped deltas per second spread round-robin over the ten parts'
//! bodies, so every frame names its part and body offset; it prints the server CPU per delivered
//! frame beside phase B's, and their ratio, from the same run.
//! Phase C gives every client its own stream at 50 deltas per second (a chat server's shape),
//! the streams starting at offsets spread over one checkpoint interval, as independent
//! conversations would; its checkpoints are acknowledged in memory (a callback target).
//! Phase D is a burst (a tool result or a cached answer): `BURST` deltas pushed at once, with no
//! yield between them, to every client of one stream; it reports the server's CPU, writes per
//! client, and the time until the last client has the whole text (the client process notes when
//! each connection has its `BURST`th chunk). It runs twice: with the default subscriber queue
//! bound (4,096 frames, above the burst) and with a bound of half the burst, which the burst
//! outruns, so a client it outruns gets `stale`.
//! To profile one phase: `--pushes 0` skips A, and `BENCH_PHASES` names the other phases to run
//! (default `BPCD`; for example `BENCH_PHASES=C bench_http --run 1000 0` runs only C, as the
//! server role).
//! Only 127.0.0.1 is used; every wait is bounded.

mod client;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use twoplane_server::conn_limits::ConnLimitsConfig;
use twoplane_server::demo::DemoDb;
use twoplane_server::http::{sse_router, SseConfig};
use twoplane_server::server::{self, HttpConfig};
use twoplane_server::store::Database;
use twoplane_stream::{AllowAll, Plane, PlaneOptions};

/// Average frames a client may lag behind the producer in phase A.
const WINDOW: u64 = 256;
const LATENCY_RATE: u64 = 50;
const LATENCY_SECS: u64 = 5;
const DELTA: &str = "abcdefgh";
/// Deltas in phase D's burst.
const BURST: u64 = 2_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--client") => client::main(&args[2..]),
        Some("--run") => {
            let n: u64 = args.get(2).and_then(|s| s.parse().ok()).expect("--run N");
            let pushes: u64 = args.get(3).and_then(|s| s.parse().ok()).expect("--run N PUSHES");
            run_server(n, pushes);
        }
        _ => drive(&args[1..]),
    }
}

// ---------------------------------------------------------------------------------- driver

fn drive(args: &[String]) {
    let mut pushes: Option<u64> = None;
    let mut sizes: Vec<u64> = vec![100, 1_000, 10_000];
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--pushes" => pushes = it.next().and_then(|s| s.parse().ok()),
            "--sizes" => {
                sizes = it.next().map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect()).unwrap_or_default()
            }
            other => {
                eprintln!("unknown argument {other:?}; usage: bench_http [--pushes N] [--sizes 100,1000,10000]");
                std::process::exit(2);
            }
        }
    }
    let limit = raise_nofile();
    println!(
        "bench_http: {} CPUs, open-file limit {limit}",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "A: one stream, {DELTA:?}-sized deltas as fast as the clients absorb them; \
         B: one stream at {LATENCY_RATE}/s for {LATENCY_SECS}s; C: one stream per client at {LATENCY_RATE}/s each"
    );
    let exe = std::env::current_exe().expect("current_exe");
    let mut rows = Vec::new();
    for &n in &sizes {
        // Each process needs a descriptor per connection plus a few dozen of its own.
        if limit < n + 256 {
            println!(
                "\n{n} clients: skipped, the open-file limit is {limit} and cannot be raised further (needs {})",
                n + 256
            );
            continue;
        }
        // 10,000 clients x 20,000 pushes would be 200 million deliveries; cap the run so it ends
        // in about a minute on two cores, and say so in the table.
        let p = pushes.unwrap_or(if n >= 10_000 { 2_000 } else { 20_000 });
        println!("\n{n} clients, {p} pushes ...");
        let out = Command::new(&exe)
            .args(["--run", &n.to_string(), &p.to_string()])
            .stderr(Stdio::inherit())
            .output()
            .expect("spawn the server process");
        let text = String::from_utf8_lossy(&out.stdout);
        print!("{text}");
        let results: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("result ")).collect();
        if results.is_empty() {
            println!("{n} clients: no result (exit {:?})", out.status.code());
        }
        for r in results {
            rows.push((n, p, r.to_owned()));
        }
    }
    println!("\nsummary (server CPU = user + system time of the server process only):");
    for (n, p, r) in rows {
        println!("  clients={n:<6} pushes={p:<6} {r}");
    }
}

// ---------------------------------------------------------------------------------- server

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()).unwrap_or(0) * 4096
}

/// User and system CPU of this process, in microseconds.
fn cpu_us() -> (u64, u64) {
    // SAFETY: getrusage fills the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    (us(ru.ru_utime), us(ru.ru_stime))
}

/// Busy and total jiffies of the whole machine (all CPUs), from /proc/stat.
fn machine_jiffies() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = stat.lines().next() else { return (0, 0) };
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// Share of the machine's CPUs busy since `start`, in percent of all CPUs.
fn machine_busy_since(start: (u64, u64)) -> f64 {
    let now = machine_jiffies();
    100.0 * (now.0 - start.0) as f64 / (now.1 - start.1).max(1) as f64
}

fn monotonic_us() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: see client::monotonic_us.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `~` and 7 base-64 digits of the push time (see the client's decoder).
fn stamp(now_us: u64) -> String {
    let v = now_us & ((1 << 42) - 1);
    let mut s = String::with_capacity(8);
    s.push('~');
    for i in (0..7).rev() {
        s.push(B64[((v >> (6 * i)) & 63) as usize] as char);
    }
    s
}

#[derive(Default)]
struct Progress {
    ready: AtomicU64,
    opened: AtomicU64,
    failed: AtomicU64,
    chunks: AtomicU64,
    finished: AtomicU64,
    /// Connections that have the whole text (phase D).
    whole: AtomicU64,
    done: Mutex<Option<String>>,
}

/// A client process and the thread that reads its reports.
struct Clients {
    child: std::process::Child,
    progress: Arc<Progress>,
    reader: std::thread::JoinHandle<()>,
}

impl Clients {
    /// `whole_chunks`: the client notes when each connection has that many chunks (0: not).
    fn spawn(addr: std::net::SocketAddr, stream_spec: &str, n: u64, whole_chunks: u64) -> Clients {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args(["--client", &addr.to_string(), stream_spec, &n.to_string(), "300"])
            .env("BENCH_WHOLE_CHUNKS", whole_chunks.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the client process");
        let progress = Arc::new(Progress::default());
        let stdout = child.stdout.take().unwrap();
        let p = progress.clone();
        let reader = std::thread::spawn(move || {
            let num = |s: Option<&str>| s.and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut parts = line.splitn(4, ' ');
                match parts.next() {
                    Some("ready") => {
                        p.opened.store(num(parts.next()), Ordering::SeqCst);
                        p.failed.store(num(parts.next()), Ordering::SeqCst);
                        p.ready.store(1, Ordering::SeqCst);
                    }
                    Some("progress") => {
                        p.chunks.store(num(parts.next()), Ordering::SeqCst);
                        p.finished.store(num(parts.next()), Ordering::SeqCst);
                        p.whole.store(num(parts.next()), Ordering::SeqCst);
                    }
                    Some("done") => *p.done.lock().unwrap() = Some(line[5..].to_owned()),
                    _ => {}
                }
            }
        });
        Clients { child, progress, reader }
    }

    async fn wait_ready(&self, secs: u64) -> u64 {
        let until = Instant::now() + Duration::from_secs(secs);
        while self.progress.ready.load(Ordering::SeqCst) == 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.progress.opened.load(Ordering::SeqCst)
    }

    fn chunks(&self) -> u64 {
        self.progress.chunks.load(Ordering::SeqCst)
    }

    /// The client process's CPU so far (user + system), in microseconds, from /proc: the
    /// clients share the machine with the server, so their cost bounds how soon the last of
    /// them can read a push (0 when /proc cannot be read).
    fn cpu_us(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // Fields after the command name (which may hold spaces) start at the state, field 3;
        // utime and stime are fields 14 and 15, in clock ticks.
        let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let ticks: u64 = rest.split_whitespace().skip(11).take(2).filter_map(|x| x.parse::<u64>().ok()).sum();
        // SAFETY: sysconf only reads a configuration value.
        let per_sec = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        ticks as f64 * 1e6 / per_sec
    }

    fn finished(&self) -> u64 {
        self.progress.finished.load(Ordering::SeqCst)
    }

    /// Wait until `target` chunks arrived (or every connection ended or has the whole text, or
    /// `secs` passed). Without the whole-text count, a burst that ended some connections with
    /// `stale` and not others waited out the full `secs`, and this loop's own wake-ups were counted
    /// as the server's CPU (about 2 s of it in phase D).
    async fn wait_chunks(&self, target: u64, opened: u64, secs: u64) {
        let until = Instant::now() + Duration::from_secs(secs);
        // A client process whose connections all ended exits without a last progress line, so
        // its `done` line counts as every connection having ended.
        let exited = || self.progress.done.lock().unwrap().is_some();
        let settled = || self.finished() + self.progress.whole.load(Ordering::SeqCst) >= opened;
        while self.chunks() < target && !settled() && !exited() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Wait for the process to exit (its connections saw their terminals) and return its report.
    async fn finish(mut self, secs: u64) -> Report {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                _ if Instant::now() > until => {
                    // Our own child, by handle.
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
                _ => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
        let _ = self.reader.join();
        let done = self.progress.done.lock().unwrap().clone().unwrap_or_else(|| "{}".into());
        Report(done)
    }
}

/// The client's closing JSON line.
struct Report(String);

impl Report {
    fn get(&self, name: &str) -> u64 {
        let key = format!("\"{name}\":");
        self.0
            .find(&key)
            .map(|i| self.0[i + key.len()..].chars().take_while(char::is_ascii_digit).collect::<String>())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }
}

/// CPU spent between two readings, in microseconds: (user, system).
fn cpu_since(start: (u64, u64)) -> (f64, f64) {
    let now = cpu_us();
    ((now.0 - start.0) as f64, (now.1 - start.1) as f64)
}

struct Served {
    addr: std::net::SocketAddr,
    stats: Arc<twoplane_server::http::SseStats>,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn serve(plane: &Plane) -> Served {
    let (router, stats) = sse_router(plane.clone(), SseConfig::default());
    let listener = server::bind("127.0.0.1:0".parse().unwrap()).await.expect("bind");
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // The limits on, as `twoplane serve` sets them, except that every client of this benchmark
    // comes from 127.0.0.1: one address may hold every connection.
    let http = HttpConfig::default();
    let limits = ConnLimitsConfig { max_per_ip: http.conn_limits.max_connections, ..http.conn_limits };
    let http = HttpConfig { conn_limits: limits, ..http };
    let task = tokio::spawn(server::serve(listener, router, http, async move {
        let _ = stopped.await;
    }));
    Served { addr, stats, stop, task }
}

impl Served {
    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

fn run_server(n: u64, pushes: u64) {
    raise_nofile();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    rt.block_on(async move {
        let dir = std::env::temp_dir().join(format!("twoplane-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let rss0 = rss_bytes();

        // ---- One stream, N subscribers, the plane on SQLite (phases A and B).
        let store = Database::open(&dir.join("bench.db")).await.expect("db");
        let plane = Plane::new(PlaneOptions::default().with_authorizer(Arc::new(AllowAll)), store.target()).unwrap();
        let db = DemoDb::new(store);
        let served = serve(&plane).await;
        db.insert_assistant("bench").await.unwrap();
        let handle = plane.open("bench").await.unwrap();
        let clients = Clients::spawn(served.addr, "bench", n, 0);
        let opened = clients.wait_ready(120).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let rss1 = rss_bytes();
        let per_sub = rss1.saturating_sub(rss0) as f64 / opened.max(1) as f64;
        println!(
            "  {opened} of {n} clients subscribed ({} failed); server RSS {} MiB -> {} MiB",
            clients.progress.failed.load(Ordering::SeqCst),
            rss0 >> 20,
            rss1 >> 20
        );

        // Phase A: throughput, the producer never more than WINDOW frames ahead of the average client.
        let stats = &served.stats;
        let (w0, f0, c0) = (stats.writes.load(Ordering::Relaxed), stats.frames.load(Ordering::Relaxed), clients.chunks());
        let cpu0 = cpu_us();
        let t0 = Instant::now();
        let until = Instant::now() + Duration::from_secs(240);
        let mut pushed = 0u64;
        while pushed < pushes && Instant::now() < until {
            let live = opened.saturating_sub(clients.finished());
            let delivered = clients.chunks() - c0;
            if pushed * live > delivered + live * WINDOW {
                tokio::time::sleep(Duration::from_micros(500)).await;
                continue;
            }
            let burst = (pushes - pushed).min(32);
            for _ in 0..burst {
                handle.push(DELTA).unwrap();
            }
            pushed += burst;
            tokio::task::yield_now().await;
        }
        clients.wait_chunks(c0 + pushed * opened, opened, 120).await;
        let secs_a = t0.elapsed().as_secs_f64();
        let (ua, sa) = cpu_since(cpu0);
        let delivered_a = clients.chunks() - c0;
        let fpw_a = (stats.frames.load(Ordering::Relaxed) - f0) as f64 / (stats.writes.load(Ordering::Relaxed) - w0).max(1) as f64;

        // Phase B: 50 pushes per second, each stamped with its push time.
        let (w1, c1) = (stats.writes.load(Ordering::Relaxed), clients.chunks());
        let cpu1 = cpu_us();
        let client1 = clients.cpu_us();
        let busy1 = machine_jiffies();
        let t1 = Instant::now();
        let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / LATENCY_RATE));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let phases = std::env::var("BENCH_PHASES").unwrap_or_else(|_| "BPCD".into());
        let count = if phases.contains('B') { LATENCY_RATE * LATENCY_SECS } else { 0 };
        for _ in 0..count {
            tick.tick().await;
            handle.push(&stamp(monotonic_us())).unwrap();
        }
        clients.wait_chunks(c1 + count * opened, opened, 30).await;
        let (ub, sb) = cpu_since(cpu1);
        let client_b = clients.cpu_us() - client1;
        let busy_b = machine_busy_since(busy1);
        let secs_b = t1.elapsed().as_secs_f64();
        let delivered_b = clients.chunks() - c1;
        let fpw_b = delivered_b as f64 / (stats.writes.load(Ordering::Relaxed) - w1).max(1) as f64;
        let _ = handle.close().await;
        let report_ab = clients.finish(60).await;

        // Phase P: phase B on a message made of parts.
        let parts_b = if phases.contains('P') { Some(parts_phase(&plane, &db, &served, n).await) } else { None };
        served.stop().await;
        drop(handle);
        drop(plane);

        // ---- Phase C: N streams with one subscriber each, every stream at 50 pushes per second,
        // staggered over the 20 ms period (a chat server's shape: each user reads their own
        // answer). The plane acknowledges checkpoints in memory here (a callback target), so
        // the CPU is the live plane's and the HTTP layer's, not a database's.
        let target = twoplane_stream::CallbackTarget::new(|_| async { Ok(twoplane_stream::CommitReply::default()) });
        let target: Arc<dyn twoplane_stream::DurableTarget> = Arc::new(target);
        let plane = Plane::new(PlaneOptions::default().with_authorizer(Arc::new(AllowAll)), target).unwrap();
        let served = serve(&plane).await;
        let mut handles = Vec::with_capacity(n as usize);
        for i in 0..n {
            handles.push(plane.open(&format!("c-{i}")).await.unwrap());
        }
        let clients = Clients::spawn(served.addr, "c-{i}", n, 0);
        let opened_c = clients.wait_ready(120).await;
        let (w2, c2) = (served.stats.writes.load(Ordering::Relaxed), clients.chunks());
        let cpu2 = cpu_us();
        let busy2 = machine_jiffies();
        let t2 = Instant::now();
        // Stream i pushes on every 20th 1 ms tick (50/s), starting at its own offset within the
        // first checkpoint interval: independent conversations do not start in the same 20 ms,
        // and if they did, their time-based checkpoints would fire together every 750 ms.
        let slots = 20u64;
        let spread_ms = twoplane_stream::DEFAULT_CHECKPOINT_INTERVAL_MS;
        let run_ms = LATENCY_SECS * 1000;
        let start_of = |i: u64| i * spread_ms / n.max(1);
        let mut tick = tokio::time::interval(Duration::from_millis(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let run_c = if phases.contains('C') { run_ms + spread_ms + slots } else { 0 };
        for k in 0..run_c {
            tick.tick().await;
            for i in ((k % slots)..n).step_by(slots as usize) {
                let start = start_of(i);
                if k >= start && k < start + run_ms {
                    handles[i as usize].push(&stamp(monotonic_us())).unwrap();
                }
            }
        }
        let count_c = if run_c > 0 { LATENCY_RATE * LATENCY_SECS * n } else { 0 };
        clients.wait_chunks(c2 + count_c, opened_c, 30).await;
        let (uc, sc) = cpu_since(cpu2);
        let busy_c = machine_busy_since(busy2);
        let secs_c = t2.elapsed().as_secs_f64();
        let delivered_c = clients.chunks() - c2;
        let fpw_c = delivered_c as f64 / (served.stats.writes.load(Ordering::Relaxed) - w2).max(1) as f64;
        futures::future::join_all(handles.iter().map(|h| h.close())).await;
        let report_c = clients.finish(60).await;
        served.stop().await;
        drop(handles);
        drop(plane);
        let _ = std::fs::remove_dir_all(&dir);

        let mut bursts = Vec::new();
        if phases.contains('D') {
            // The default bound, then one the burst outruns (every subscriber it outruns ends
            // `stale` and reads the store).
            for queue in [twoplane_stream::DEFAULT_MAX_QUEUED_FRAMES, BURST as usize / 2] {
                bursts.push(burst(n, queue).await);
            }
        }

        let per = |cpu: f64, frames: u64| cpu / frames.max(1) as f64;
        println!("  fan-out client report: {}", report_ab.0);
        println!("  per-stream client report: {}", report_c.0);
        println!(
            "  A  fan-out, as fast as absorbed: {delivered_a} frames in {secs_a:.2}s = {:.0} frames/s; \
             server CPU {:.3} us/frame (user {:.3}, system {:.3}); {fpw_a:.1} frames per write",
            delivered_a as f64 / secs_a,
            per(ua + sa, delivered_a),
            per(ua, delivered_a),
            per(sa, delivered_a),
        );
        println!(
            "  B  fan-out, 50/s: {delivered_b} frames; server CPU {:.3} us/frame (user {:.3}, system {:.3}); \
             {fpw_b:.2} frames per write; client process CPU {:.3} us/frame; \
             latency p50 {} us, p99 {} us, p99.9 {} us, max {} us",
            per(ub + sb, delivered_b),
            per(ub, delivered_b),
            per(sb, delivered_b),
            per(client_b, delivered_b),
            report_ab.get("p50_us"),
            report_ab.get("p99_us"),
            report_ab.get("p999_us"),
            report_ab.get("max_us"),
        );
        if let Some(p) = &parts_b {
            println!(
                "  P  fan-out of a 10-part message, 50/s: {} frames; server CPU {:.3} us/frame (user {:.3}, system {:.3}), \
                 {:.2}x phase B's; client process CPU {:.3} us/frame; latency p50 {} us, p99 {} us",
                p.delivered,
                per(p.user + p.system, p.delivered),
                per(p.user, p.delivered),
                per(p.system, p.delivered),
                per(p.user + p.system, p.delivered) / per(ub + sb, delivered_b),
                per(p.client, p.delivered),
                p.report.get("p50_us"),
                p.report.get("p99_us"),
            );
        }
        println!(
            "  C  {opened_c} streams x 1 subscriber, 50/s each: {delivered_c} frames; server CPU {:.3} us/frame \
             (user {:.3}, system {:.3}); {fpw_c:.2} frames per write; latency p50 {} us, p99 {} us, p99.9 {} us, max {} us",
            per(uc + sc, delivered_c),
            per(uc, delivered_c),
            per(sc, delivered_c),
            report_c.get("p50_us"),
            report_c.get("p99_us"),
            report_c.get("p999_us"),
            report_c.get("max_us"),
        );
        for b in &bursts {
            println!("  {}", b.line);
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        println!(
            "  machine load: B {busy_b:.0}% of {cpus} CPUs busy (server {:.0}%), C {busy_c:.0}% busy (server {:.0}%); \
             the rest is the client process and anything else running",
            (ub + sb) / 1e4 / secs_b / cpus,
            (uc + sc) / 1e4 / secs_c / cpus,
        );
        println!("  memory: {:.1} KiB per subscriber (server RSS delta / subscribers, fan-out setup)", per_sub / 1024.0);
        println!(
            "result A: {:.0} frames/s, {:.3} us CPU/frame | B: p99 {} us, {:.3} us CPU/frame | C: p99 {} us, {:.3} us CPU/frame | {:.1} KiB/subscriber | stale {}+{} | busy B {busy_b:.0}% C {busy_c:.0}%",
            delivered_a as f64 / secs_a,
            per(ua + sa, delivered_a),
            report_ab.get("p99_us"),
            per(ub + sb, delivered_b),
            report_c.get("p99_us"),
            per(uc + sc, delivered_c),
            per_sub / 1024.0,
            report_ab.get("stale"),
            report_c.get("stale"),
        );
        for b in &bursts {
            println!("result {}", b.result);
        }
        if let Some(p) = &parts_b {
            println!(
                "result P (10 parts): {:.3} us CPU/frame = {:.2}x B | p99 {} us | stale {}",
                per(p.user + p.system, p.delivered),
                per(p.user + p.system, p.delivered) / per(ub + sb, delivered_b),
                p.report.get("p99_us"),
                p.report.get("stale"),
            );
        }
    });
}

/// What phase P measured.
struct PartsPhase {
    delivered: u64,
    user: f64,
    system: f64,
    client: f64,
    report: Report,
}

/// Phase P (see the module header): a stream of ten parts, N fresh clients, 50 stamped deltas per
/// second round-robin over the parts, measured exactly as phase B is.
async fn parts_phase(plane: &Plane, db: &DemoDb, served: &Served, n: u64) -> PartsPhase {
    const PARTS: u32 = 10;
    db.insert_assistant("bench-parts").await.unwrap();
    let handle = plane.open("bench-parts").await.unwrap();
    let clients = Clients::spawn(served.addr, "bench-parts", n, 0);
    let opened = clients.wait_ready(120).await;
    // The parts start before the clock, with a first delta each, as a model's answer would have
    // them by the time it streams steadily.
    let kinds = ["reasoning", "tool-search", "text", "data-weather", "text"];
    for p in 1..PARTS {
        let kind = kinds[(p as usize - 1) % kinds.len()];
        let part = handle.start_part(kind, Vec::new()).unwrap();
        handle.push_part(part, "warm").unwrap();
    }
    handle.push("warm").unwrap();
    let setup = u64::from(PARTS);
    clients.wait_chunks(clients.chunks() + setup * opened, opened, 30).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let c0 = clients.chunks();
    let cpu0 = cpu_us();
    let client0 = clients.cpu_us();
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / LATENCY_RATE));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let count = LATENCY_RATE * LATENCY_SECS;
    for k in 0..count {
        tick.tick().await;
        handle.push_part((k % u64::from(PARTS)) as u32, &stamp(monotonic_us())).unwrap();
    }
    clients.wait_chunks(c0 + count * opened, opened, 30).await;
    let (user, system) = cpu_since(cpu0);
    let client = clients.cpu_us() - client0;
    let delivered = clients.chunks() - c0;
    let _ = handle.close().await;
    let report = clients.finish(60).await;
    PartsPhase { delivered, user, system, client, report }
}

/// Phase D's two lines: the full one and the summary's.
struct Burst {
    line: String,
    result: String,
}

/// Phase D: `BURST` deltas pushed at once, with no yield, to `n` clients of one stream whose
/// subscriber queue bound is `queue` frames; checkpoints are acknowledged in memory.
async fn burst(n: u64, queue: usize) -> Burst {
    let target = twoplane_stream::CallbackTarget::new(|_| async { Ok(twoplane_stream::CommitReply::default()) });
    let target: Arc<dyn twoplane_stream::DurableTarget> = Arc::new(target);
    let mut options = PlaneOptions::default().with_authorizer(Arc::new(AllowAll));
    options.max_queued_frames = queue;
    let plane = Plane::new(options, target).unwrap();
    let served = serve(&plane).await;
    let handle = plane.open("burst").await.unwrap();
    let clients = Clients::spawn(served.addr, "burst", n, BURST);
    let opened = clients.wait_ready(120).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stats = &served.stats;
    let (w0, c0) = (stats.writes.load(Ordering::Relaxed), clients.chunks());
    let holds0 = stats.holds.load(Ordering::Relaxed);
    let cpu0 = cpu_us();
    let t0 = monotonic_us();
    for _ in 0..BURST {
        handle.push(DELTA).unwrap();
    }
    let pushed_us = monotonic_us() - t0;
    clients.wait_chunks(c0 + BURST * opened, opened, 60).await;
    let (u, s) = cpu_since(cpu0);
    let writes = stats.writes.load(Ordering::Relaxed) - w0;
    let holds = stats.holds.load(Ordering::Relaxed) - holds0;
    let delivered = clients.chunks() - c0;
    let _ = handle.close().await;
    let report = clients.finish(60).await;
    served.stop().await;
    let whole = report.get("whole");
    let last_ms = report.get("whole_last_us").saturating_sub(t0) as f64 / 1e3;
    let per_client = writes as f64 / opened.max(1) as f64;
    let line = format!(
        "D  burst of {BURST} x {DELTA:?} to {opened} clients, queue bound {queue}: pushed in {:.1} ms; \
         {whole} of {opened} clients got the whole text, the last after {last_ms:.1} ms; {} stale; \
         server CPU {:.1} ms (user {:.1}, system {:.1}) = {:.3} us/frame; {per_client:.1} writes per client; \
         {holds} batches handed back by a full socket",
        pushed_us as f64 / 1e3,
        report.get("stale"),
        (u + s) / 1e3,
        u / 1e3,
        s / 1e3,
        (u + s) / delivered.max(1) as f64,
    );
    let result = format!(
        "D(queue {queue}): whole {whole}/{opened} after {last_ms:.1} ms, stale {}, CPU {:.1} ms, {per_client:.1} writes/client",
        report.get("stale"),
        (u + s) / 1e3
    );
    Burst { line, result }
}

/// Lift the soft open-file limit to the hard limit; returns the limit now in force.
fn raise_nofile() -> u64 {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit read and write the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let want = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                lim = want;
            }
        }
    }
    lim.rlim_cur
}
