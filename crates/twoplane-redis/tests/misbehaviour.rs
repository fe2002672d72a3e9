//! Relays misbehave: messages are duplicated (a reconnect replays, a retried write lands twice)
//! and dropped. A wrapper injects both on the producer's side of a real Redis
//! (`TWOPLANE_REDIS_URL`; skipped without it). Readers must still end with exactly the produced
//! text, or with `stale` and a prefix of it; never with corrupted text. And the adapters must
//! catch the damage themselves: the plane's conform pass must never be the one to notice.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use twoplane_core::message::MessageFrame as Frame;
use twoplane_redis::{BroadcastRelay, LogOptions, LogRelay, RedisRelayOptions};
use twoplane_stream::{FrameSource, Plane, Relay, RelayError, RelayPhase, RelayTopology};

const LIMIT: Duration = Duration::from_secs(30);

/// Drops or duplicates what the producer publishes, at random (seeded).
struct Flaky {
    inner: Arc<dyn Relay>,
    rng: Mutex<Rng>,
    drop_percent: u64,
    dup_percent: u64,
    dropped: AtomicUsize,
    duplicated: AtomicUsize,
}

impl Flaky {
    fn new(inner: Arc<dyn Relay>, seed: u64, drop_percent: u64, dup_percent: u64) -> Arc<Flaky> {
        Arc::new(Flaky {
            inner,
            rng: Mutex::new(Rng::new(seed)),
            drop_percent,
            dup_percent,
            dropped: AtomicUsize::new(0),
            duplicated: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl Relay for Flaky {
    fn topology(&self) -> RelayTopology {
        self.inner.topology()
    }

    fn publish(&self, stream_id: &str, frame: &Frame) -> Result<(), RelayError> {
        let (drop, dup) = {
            let mut rng = self.rng.lock().unwrap();
            (rng.chance(self.drop_percent), rng.chance(self.dup_percent))
        };
        if drop {
            self.dropped.fetch_add(1, Ordering::SeqCst);
            return Ok(());
        }
        self.inner.publish(stream_id, frame)?;
        // A duplicated `end` is not a transport replay but a second seal, which a producer never
        // makes; every other frame may come twice.
        if dup && !frame.is_terminal() {
            self.duplicated.fetch_add(1, Ordering::SeqCst);
            self.inner.publish(stream_id, frame)?;
        }
        Ok(())
    }

    async fn attach(&self, stream_id: &str, from: u64) -> Result<Option<FrameSource>, RelayError> {
        self.inner.attach(stream_id, from).await
    }
}

#[derive(Clone, Copy, Debug)]
enum Topology {
    Broadcast,
    Log,
}

async fn relay(topology: Topology, url: &str, options: &RedisRelayOptions) -> Arc<dyn Relay> {
    match topology {
        Topology::Broadcast => Arc::new(BroadcastRelay::connect(url, options.clone()).await.unwrap()),
        Topology::Log => Arc::new(LogRelay::connect(url, options.clone(), LogOptions::default()).await.unwrap()),
    }
}

/// Several streams through a flaky publisher; readers on the other plane join each one (at the
/// start for broadcast, at random offsets and moments for the log). Returns every reader's
/// ending after checking its text, and the relay errors plane B reported.
async fn run(
    topology: Topology,
    url: &str,
    seed: u64,
    drop_percent: u64,
    dup_percent: u64,
) -> (Vec<Ending>, Vec<(RelayPhase, String)>, Arc<Flaky>) {
    let options = RedisRelayOptions {
        prefix: prefix(&format!("flaky-{topology:?}-{seed}")),
        first_frame_timeout_ms: 2_000,
        // A dropped `end` leaves readers waiting: this is how long.
        idle_timeout_ms: 1_000,
        ..Default::default()
    };
    let flaky = Flaky::new(relay(topology, url, &options).await, seed, drop_percent, dup_percent);
    let ids: Vec<String> = (0..8).map(|i| format!("s{i}")).collect();
    let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let a = plane(store(&id_refs), flaky.clone(), |_| {});
    let (errors, hook) = recorder();
    let b: Plane = plane(store(&[]), relay(topology, url, &options).await, |o| o.on_relay_error = Some(hook));

    let mut rng = Rng::new(seed);
    let mut endings = Vec::new();
    for id in &ids {
        let h = a.open(id).await.unwrap();
        let mut produced = Vec::new();
        let mut readers = Vec::new();
        if let Topology::Broadcast = topology {
            for _ in 0..2 {
                readers.push(tokio::spawn(read_all(b.subscribe(&(), id, 0).await.unwrap(), 0, LIMIT)));
            }
        }
        for i in 0..80 {
            let d = delta(&mut rng, i);
            produced.extend(units(&d));
            h.push(&d).unwrap();
            if let Topology::Log = topology {
                if rng.chance(6) {
                    let from = rng.below(h.seq() + 1);
                    readers.push(tokio::spawn(read_all(b.subscribe(&(), id, from).await.unwrap(), from, LIMIT)));
                }
            }
            if rng.chance(10) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        h.close().await.unwrap();
        for r in readers {
            let got = r.await.unwrap();
            got.check(&produced);
            endings.push(got.ending());
        }
    }
    let errors = errors.lock().unwrap().clone();
    (endings, errors, flaky)
}

fn conform_had_to_step_in(errors: &[(RelayPhase, String)]) -> Vec<&String> {
    // The conform pass's own reasons (docs/contract.md §3); the adapters' say "relay lost text".
    errors
        .iter()
        .map(|(_, m)| m)
        .filter(|m| {
            m.contains("leaves a gap")
                || m.contains("outruns")
                || m.contains("does not span")
                || m.contains("malformed")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_are_absorbed_exactly() {
    let Some(url) = redis_url() else { return };
    for topology in [Topology::Broadcast, Topology::Log] {
        let (endings, errors, flaky) = run(topology, &url, 3, 0, 25).await;
        assert!(flaky.duplicated.load(Ordering::SeqCst) > 50, "the wrapper duplicated plenty");
        assert!(!endings.is_empty());
        assert!(endings.iter().all(|e| *e == Ending::End), "{topology:?}: {endings:?} {errors:?}");
        assert!(errors.is_empty(), "{topology:?}: {errors:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drops_end_stale_and_never_corrupt_the_text() {
    let Some(url) = redis_url() else { return };
    for topology in [Topology::Broadcast, Topology::Log] {
        let (endings, errors, flaky) = run(topology, &url, 5, 3, 10).await;
        assert!(flaky.dropped.load(Ordering::SeqCst) > 5, "the wrapper dropped some");
        // Every reader's text was checked in `run`; here: the drops cost some readers the live
        // leg, and the adapter (not the conform pass) is what noticed.
        assert!(endings.contains(&Ending::Stale), "{topology:?}: {endings:?}");
        assert!(conform_had_to_step_in(&errors).is_empty(), "{topology:?}: {errors:?}");
        assert!(
            errors.iter().all(|(p, m)| *p == RelayPhase::Frames && m.contains("relay lost text")),
            "{topology:?}: {errors:?}"
        );
    }
}

/// `publish` never blocks the producer: with a tiny queue and a producer that never yields, the
/// overflow is dropped and reported, and the stream and its store are unaffected.
#[tokio::test(flavor = "current_thread")]
async fn a_full_publish_queue_drops_and_reports_without_blocking() {
    let Some(url) = redis_url() else { return };
    let options = RedisRelayOptions { prefix: prefix("overflow"), publish_queue: 4, ..Default::default() };
    let relay: Arc<dyn Relay> = Arc::new(LogRelay::connect(&url, options, LogOptions::default()).await.unwrap());
    let m = store(&["s"]);
    let (errors, hook) = recorder();
    let a = plane(m.clone(), relay, |o| {
        o.on_relay_error = Some(hook);
        o.chars = 1_000_000;
    });
    let h = a.open("s").await.unwrap();
    let mut produced = String::new();
    // One thread, no await: the writer cannot run until the loop is over.
    for i in 0..200 {
        let d = format!("{i} ");
        produced.push_str(&d);
        h.push(&d).unwrap();
    }
    {
        let errors = errors.lock().unwrap();
        assert!(errors.len() >= 190, "{} reports", errors.len());
        assert!(errors.iter().all(|(p, m)| *p == RelayPhase::Publish && m.contains("dropped")), "{errors:?}");
    }
    h.close().await.unwrap();
    assert_eq!(String::from_utf16(&m.row("s").unwrap().durable_text()).unwrap(), produced);
}
