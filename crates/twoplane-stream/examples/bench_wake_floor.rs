//! Floor benchmark (not a test): what `bench_fanout`'s workload costs before any fan-out code
//! runs. Same shape as `bench_fanout`: 20,000 pushes, a runtime task per subscriber, the producer
//! yielding after every push, a 2-worker tokio runtime (`BENCH_WORKERS=N` to change it). No
//! plane is involved: three stripped-down models of "a push reaches every waiting subscriber",
//! each a lower bound for what a real fan-out (ordering, bounded queues, terminals, replay) can
//! cost on this runtime:
//!
//! - `wake`: each subscriber waits on its own `AtomicWaker` and reads one shared counter. Nothing
//!   is handed over: this is tokio's wake-up and poll alone.
//! - `shared`: as `wake`, and each subscriber then takes the push's frame (an `Arc<Frame>`)
//!   from one mutex that every subscriber shares, as a single frame log would.
//! - `mailbox`: the producer puts a clone of the frame into each subscriber's own queue (its own
//!   mutex) before waking it, and the subscriber takes what is there: no lock or line shared by
//!   all subscribers except the frame's reference count.
//!
//! Prints, per model and subscriber count, process CPU (user + system, getrusage) per delivered
//! frame, to set beside `bench_fanout`'s column of the same name. Every subscriber must count
//! every push (checked; the run exits with status 1 otherwise).
//!
//! Run: cargo run --release -p twoplane-stream --example bench_wake_floor

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use common::cpu_time;
use futures::task::AtomicWaker;
use twoplane_stream::MessageFrame as Frame;

mod common;

const PUSHES: u64 = 20_000;
const DELTA: &str = "abcdefgh";

#[derive(Clone, Copy, Debug)]
enum Model {
    Wake,
    Shared,
    Mailbox,
}

struct Subscriber {
    waker: AtomicWaker,
    /// `Mailbox` only: frames put here by the producer, not yet taken.
    mailbox: Mutex<Vec<Arc<Frame>>>,
}

struct Stream {
    /// Pushes so far.
    seq: AtomicU64,
    closed: AtomicBool,
    /// `Shared` only: the latest frame, behind the one lock every subscriber takes.
    latest: Mutex<Arc<Frame>>,
    subscribers: Vec<Subscriber>,
}

fn frame(i: u64) -> Arc<Frame> {
    Arc::new(Frame::chunk(i * DELTA.len() as u64, 0, i * DELTA.len() as u64, DELTA.into()).expect("a short chunk"))
}

/// One subscriber: wait for the counter to move, take what the model hands over, count pushes.
async fn subscribe(stream: Arc<Stream>, me: usize, model: Model) -> u64 {
    let mut seen = 0u64;
    let mut taken: Vec<Arc<Frame>> = Vec::new();
    loop {
        let (seq, closed) = std::future::poll_fn(|cx| {
            stream.subscribers[me].waker.register(cx.waker());
            let closed = stream.closed.load(Ordering::Acquire);
            let seq = stream.seq.load(Ordering::Acquire);
            if seq > seen || closed {
                Poll::Ready((seq, closed))
            } else {
                Poll::Pending
            }
        })
        .await;
        match model {
            Model::Wake => {}
            Model::Shared => {
                let frame = lock(&stream.latest).clone();
                std::hint::black_box(frame);
            }
            Model::Mailbox => {
                // Swap buffers rather than take: no allocation per frame on either side.
                std::mem::swap(&mut taken, &mut *lock(&stream.subscribers[me].mailbox));
                std::hint::black_box(&taken);
                taken.clear();
            }
        }
        seen = seq;
        if closed && seen == stream.seq.load(Ordering::Acquire) {
            return seen;
        }
    }
}

/// CPU per delivered frame, in microseconds, or `None` when a subscriber missed a push.
async fn run(subscribers: usize, model: Model, print: bool) -> Option<f64> {
    let stream = Arc::new(Stream {
        seq: AtomicU64::new(0),
        closed: AtomicBool::new(false),
        latest: Mutex::new(frame(0)),
        subscribers: (0..subscribers)
            .map(|_| Subscriber { waker: AtomicWaker::new(), mailbox: Mutex::new(Vec::new()) })
            .collect(),
    });
    let tasks: Vec<_> = (0..subscribers).map(|i| tokio::spawn(subscribe(stream.clone(), i, model))).collect();
    // Let every subscriber register and park.
    tokio::time::sleep(Duration::from_millis(100)).await;

    let (cpu0, t0) = (cpu_time(), Instant::now());
    let producer = stream.clone();
    tokio::spawn(async move {
        for i in 1..=PUSHES {
            let f = frame(i);
            match model {
                Model::Wake => {}
                Model::Shared => *lock(&producer.latest) = f.clone(),
                Model::Mailbox => {
                    for s in &producer.subscribers {
                        lock(&s.mailbox).push(f.clone());
                    }
                }
            }
            producer.seq.store(i, Ordering::Release);
            for s in &producer.subscribers {
                s.waker.wake();
            }
            tokio::task::yield_now().await;
        }
        producer.closed.store(true, Ordering::Release);
        for s in &producer.subscribers {
            s.waker.wake();
        }
    })
    .await
    .expect("producer");
    let mut complete = true;
    for task in tasks {
        complete &= task.await.expect("subscriber") == PUSHES;
    }
    let (cpu, wall) = (cpu_time() - cpu0, t0.elapsed());
    let per_frame = cpu.as_secs_f64() * 1e6 / (PUSHES as f64 * subscribers as f64);
    if print {
        let name = format!("{model:?}").to_lowercase();
        println!("{name:>8} {subscribers:>6} {per_frame:>16.3} {:>10.0}", wall.as_secs_f64() * 1e3);
    }
    complete.then_some(per_frame)
}

fn main() -> ExitCode {
    let (rt, workers) = common::runtime();
    println!("wake floor: {PUSHES} pushes, a task per subscriber, producer yields per push, {workers} tokio workers");
    println!("{:>8} {:>6} {:>16} {:>10}", "model", "subs", "cpu/frame (us)", "wall (ms)");
    let complete = rt.block_on(async {
        // Warm-up, as in bench_fanout: first-touch page faults are not the model's cost.
        run(100, Model::Wake, false).await;
        let mut complete = true;
        for subscribers in [1, 100, 1_000] {
            for model in [Model::Wake, Model::Shared, Model::Mailbox] {
                complete &= run(subscribers, model, true).await.is_some();
            }
        }
        complete
    });
    if !complete {
        eprintln!("bench_wake_floor: a subscriber missed pushes; the numbers above are not valid");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// A mutex locked, poisoned or not: a benchmark's counters stay usable after a panicking task,
/// which fails the run on its own.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
