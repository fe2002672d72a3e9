//! What the fan-out benchmarks (`bench_fanout`, `bench_wake_floor`) measure with and run on,
//! kept in one place so their figures stay comparable.

use std::time::Duration;

/// Process CPU time (user + system, all threads) so far, from getrusage.
pub fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we hand it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1_000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The multi-thread runtime both run on: `BENCH_WORKERS` workers, 2 by default; and that count.
pub fn runtime() -> (tokio::runtime::Runtime, usize) {
    let workers: usize = std::env::var("BENCH_WORKERS").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build().expect("runtime");
    (rt, workers)
}
