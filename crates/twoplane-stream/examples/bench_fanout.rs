//! Fan-out benchmark (not a test): one stream, 20,000 pushes of 8 characters, with 1, 100 and
//! 1,000 in-process subscribers, on a 2-worker tokio runtime (by default) with the in-memory store
//! (checkpoints at the default 512 code units).
//!
//! Prints, per subscriber count: delivered frames per second (wall clock), process CPU time
//! (user + system, all threads, from getrusage) per delivered frame, and memory per idle
//! subscriber (bytes allocated per subscriber, counted by a global allocator, with the RSS
//! delta alongside). The producer yields after every push, so a subscriber that keeps up is
//! woken once per frame (the worst case for fan-out). Every 256 pushes the producer waits until
//! every subscriber has caught up (one shared atomic per subscriber per 256 frames), so none can
//! fall `max_queued_frames` behind and be dropped: `dropped` counts subscribers that got `stale`
//! anyway and must be 0 for the numbers to mean anything, so the benchmark exits with status 1
//! (after printing every row) when any measured round dropped one. A subscriber that ends early
//! counts as arrived at every barrier it will not reach, so the producer never waits for it; a
//! barrier that still is not reached within `BARRIER_TIMEOUT` ends the round as failed too.
//!
//! Run: cargo run --release -p twoplane-stream --example bench_fanout
//! (`BENCH_FANOUT_QUEUE=N` sets `max_queued_frames`; below `BARRIER` it makes subscribers fall
//! behind and be dropped, which exercises the failure exit. `BENCH_WORKERS=N` sets the runtime's
//! workers, 2 by default.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::ExitCode;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cpu_time;
use tokio::sync::Notify;
use twoplane_stream::{AllowAll, MemoryTarget, MessageFrame as Frame, Plane, PlaneOptions};

mod common;

/// Counts live heap bytes, so memory per subscriber is measured exactly rather than by pages.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const PUSHES: usize = 20_000;
const DELTA: &str = "abcdefgh";
/// Pushes between pacing barriers (well under the default 1024-frame queue bound).
const BARRIER: usize = 256;
/// Far longer than any barrier takes; reaching it means a subscriber is stuck.
const BARRIER_TIMEOUT: Duration = Duration::from_secs(30);

/// Counts subscribers that reached the current barrier; the last one wakes the producer.
struct Pacing {
    reached: AtomicUsize,
    all_there: Notify,
    subscribers: usize,
}

impl Pacing {
    /// Count `n` arrivals; wake the producer when they complete a barrier.
    fn arrive(&self, n: usize) {
        let before = self.reached.fetch_add(n, Ordering::AcqRel);
        if (before + n) / self.subscribers > before / self.subscribers {
            self.all_there.notify_one();
        }
    }

    /// A subscriber that has stopped after `chunks` chunks: arrive at every barrier it missed.
    fn leave(&self, chunks: usize) {
        let missed = (PUSHES / BARRIER).saturating_sub(chunks / BARRIER);
        if missed > 0 {
            self.arrive(missed);
        }
    }

    async fn wait_for(&self, barrier: usize) {
        loop {
            let woken = self.all_there.notified();
            if self.reached.load(Ordering::Acquire) >= barrier * self.subscribers {
                return;
            }
            woken.await;
        }
    }
}

fn rss_bytes() -> i64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: i64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

struct Outcome {
    delivered: u64,
    dropped: usize,
    wall: Duration,
    cpu: Duration,
    heap_per_sub: f64,
    rss_per_sub: f64,
}

async fn run(subscribers: usize, round: usize) -> Outcome {
    let store = Arc::new(MemoryTarget::new());
    let id = format!("bench-{subscribers}-{round}");
    store.insert_message(&id);
    let mut options = PlaneOptions::default().with_authorizer(Arc::new(AllowAll));
    if let Some(queue) = std::env::var("BENCH_FANOUT_QUEUE").ok().and_then(|v| v.parse().ok()) {
        options.max_queued_frames = queue;
    }
    let plane = Plane::new(options, store).unwrap();
    let handle = plane.open(&id).await.unwrap();

    let pacing = Arc::new(Pacing { reached: AtomicUsize::new(0), all_there: Notify::new(), subscribers });
    let (heap0, rss0) = (LIVE.load(Ordering::Relaxed), rss_bytes());
    let mut tasks = Vec::with_capacity(subscribers);
    for _ in 0..subscribers {
        let mut sub = plane.subscribe(&(), &id, 0).await.unwrap();
        let pacing = pacing.clone();
        tasks.push(tokio::spawn(async move {
            let (mut frames, mut chunks, mut stale) = (0u64, 0usize, false);
            let mut see = |frame: &Frame| {
                frames += 1;
                match frame {
                    Frame::Chunk { .. } => {
                        chunks += 1;
                        if chunks % BARRIER == 0 {
                            pacing.arrive(1);
                        }
                    }
                    Frame::Stale { .. } => stale = true,
                    _ => {}
                }
            };
            while let Some(frame) = sub.next().await {
                see(&frame);
                while let Some(frame) = sub.try_next() {
                    see(&frame);
                }
            }
            pacing.leave(chunks);
            (frames, stale)
        }));
    }
    // Let every subscriber take its replay and park: this is the idle cost.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let heap_per_sub = (LIVE.load(Ordering::Relaxed) - heap0) as f64 / subscribers as f64;
    let rss_per_sub = (rss_bytes() - rss0) as f64 / subscribers as f64;

    let (cpu0, t0) = (cpu_time(), Instant::now());
    // The producer is a runtime task like the subscribers, so its yields let them run.
    let producer = tokio::spawn(async move {
        let mut stuck = false;
        for i in 1..=PUSHES {
            handle.push(DELTA).unwrap();
            tokio::task::yield_now().await;
            if i % BARRIER == 0 && tokio::time::timeout(BARRIER_TIMEOUT, pacing.wait_for(i / BARRIER)).await.is_err() {
                stuck = true;
                break;
            }
        }
        handle.close().await.unwrap();
        stuck
    });
    let stuck = producer.await.unwrap();
    let (mut delivered, mut dropped) = (0, usize::from(stuck));
    for task in tasks {
        let (frames, stale) = task.await.unwrap();
        delivered += frames;
        dropped += stale as usize;
    }
    let (wall, cpu) = (t0.elapsed(), cpu_time() - cpu0);
    drop(plane);
    // Let this round's tasks and buffers go before the next round measures memory.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Outcome { delivered, dropped, wall, cpu, heap_per_sub, rss_per_sub }
}

fn main() -> ExitCode {
    let (rt, workers) = common::runtime();
    println!(
        "twoplane-stream fan-out: {PUSHES} pushes of {} chars, {workers} tokio workers, in-memory store",
        DELTA.len()
    );
    println!(
        "{:>5} {:>12} {:>14} {:>16} {:>18} {:>14} {:>8}",
        "subs", "delivered", "frames/s", "cpu/frame (us)", "heap/idle sub (B)", "rss/sub (B)", "dropped"
    );
    let dropped = rt.block_on(async {
        // Warm-up: first-touch page faults and allocator growth are not the plane's cost.
        run(100, 0).await;
        let mut dropped = 0;
        for subs in [1, 100, 1_000] {
            let o = run(subs, 1).await;
            dropped += o.dropped;
            println!(
                "{:>5} {:>12} {:>14.0} {:>16.3} {:>18.0} {:>14.0} {:>8}",
                subs,
                o.delivered,
                o.delivered as f64 / o.wall.as_secs_f64(),
                o.cpu.as_secs_f64() * 1e6 / o.delivered as f64,
                o.heap_per_sub,
                o.rss_per_sub,
                o.dropped,
            );
        }
        dropped
    });
    if dropped > 0 {
        eprintln!(
            "bench_fanout: {dropped} subscribers were dropped with `stale` (or a round's pacing timed out); \
             the numbers above are not valid"
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
