//! Throughput of the relay core with the in-memory record, source and log (prints numbers; not
//! a test): 1,000 sessions (10 tenants of 100), 20,000 transactions of 5 rows on random sessions,
//! bodies of about 64 bytes of JSON. Measured from the first commit until the relay is idle with
//! the slot fully released (every row in its log, every transaction acknowledged): rows per
//! second of wall time, and CPU time (user + system, whole process) per row.
//!
//! Run: `cargo run --release -p twoplane-relay --no-default-features --example bench_relay`
//! Options (environment): BENCH_TXS (default 20000), BENCH_RUNS (default 5), BENCH_THREADS
//! (tokio worker threads; 0 = current-thread runtime, the default).

use std::sync::Arc;
use std::time::{Duration, Instant};

use twoplane_relay::memory::{MemoryLog, MemoryRecord};
use twoplane_relay::{Relay, RelayOptions};

const TENANTS: usize = 10;
const SESSIONS_PER_TENANT: usize = 100;
const ROWS_PER_TX: usize = 5;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// CPU time of the whole process so far (user + system).
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// A small deterministic generator (xorshift64*), so every run relays the same workload.
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}

async fn run_once(txs: usize) -> (Duration, Duration, usize, u64) {
    let tenants: Vec<String> = (0..TENANTS).map(|t| format!("tenant-{t:02}")).collect();
    let sessions: Vec<String> = (0..SESSIONS_PER_TENANT).map(|s| format!("session-{s:03}")).collect();
    let mut random = Random(0x9E37_79B9_7F4A_7C15);
    let workload: Vec<Vec<(usize, usize, String)>> = (0..txs)
        .map(|n| {
            (0..ROWS_PER_TX)
                .map(|r| {
                    let body = format!(r#"{{"type":"text-delta","id":"msg-{n:06}","delta":"row {r} of tx {n:06}"}}"#);
                    (random.below(TENANTS), random.below(SESSIONS_PER_TENANT), body)
                })
                .collect()
        })
        .collect();
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::new());
    let relay = Relay::start(Box::new(record.source()), Arc::new(record.clone()), log.clone(), RelayOptions::default());
    // Let the relay take the slot and finish its (empty) reconciliation first.
    while record.reconcile_pending() != Some(false) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let rows = txs * ROWS_PER_TX;
    let (wall, cpu) = (Instant::now(), cpu_time());
    for (n, tx) in workload.iter().enumerate() {
        record
            .commit_events(tx.iter().map(|(t, s, body)| (tenants[*t].as_str(), sessions[*s].as_str(), body.as_str())));
        if n % 64 == 63 {
            tokio::task::yield_now().await; // the writer shares the runtime with the relay
        }
    }
    loop {
        relay.idle().await;
        if record.retained() == 0 && relay.status().pending_txs == 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    let (wall, cpu) = (wall.elapsed(), cpu_time() - cpu);
    relay.stop().await;
    (wall, cpu, rows, log.appends())
}

fn main() {
    let txs = env("BENCH_TXS", 20_000);
    let runs = env("BENCH_RUNS", 5);
    let threads = env("BENCH_THREADS", 0);
    let runtime = if threads == 0 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build()
    }
    .expect("a runtime");
    let flavour = if threads == 0 { "current-thread".to_owned() } else { format!("{threads} worker threads") };
    println!(
        "relay core, in-memory parts: {} sessions, {txs} transactions x {ROWS_PER_TX} rows, ~64-byte bodies, tokio {flavour}",
        TENANTS * SESSIONS_PER_TENANT
    );
    let mut rates = Vec::new();
    for run in 1..=runs {
        let (wall, cpu, rows, appends) = runtime.block_on(run_once(txs));
        let rate = rows as f64 / wall.as_secs_f64();
        rates.push(rate);
        println!(
            "run {run}: {rows} rows in {:.1} ms: {:.0} rows/s, {:.2} us CPU per row, {:.1} rows per append",
            wall.as_secs_f64() * 1e3,
            rate,
            cpu.as_secs_f64() * 1e6 / rows as f64,
            rows as f64 / appends as f64
        );
    }
    rates.sort_by(f64::total_cmp);
    println!("median: {:.0} rows/s", rates[rates.len() / 2]);
}
