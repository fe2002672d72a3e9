//! Helpers for the Redis relay tests: two planes in one process (one hosts and publishes, the
//! other hosts nothing and attaches), a reader that checks every frame against the produced
//! text, and a small deterministic random source.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use twoplane_core::message::MessageFrame as Frame;
use twoplane_stream::{
    AllowAll, DurableTarget, MemoryTarget, Plane, PlaneOptions, Relay, RelayErrorHook, RelayPhase, Subscription,
};

/// The Redis under test, or `None` (and a note) when `TWOPLANE_REDIS_URL` is unset or empty and
/// services are not required.
pub fn redis_url() -> Option<String> {
    match std::env::var("TWOPLANE_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            no_service("TWOPLANE_REDIS_URL is not set (scripts/redis.sh starts a server and prints it)");
            None
        }
    }
}

/// A test's service is missing: a failure when `TWOPLANE_REQUIRE_SERVICES` is set (to anything
/// but empty or `0`; the test command, scripts/test.sh, exports it), else a skip with a note on
/// stderr. A broken service setup must never pass as a green run.
pub fn no_service(why: &str) {
    match std::env::var("TWOPLANE_REQUIRE_SERVICES") {
        Ok(v) if !v.is_empty() && v != "0" => panic!("TWOPLANE_REQUIRE_SERVICES={v}, but {why}"),
        _ => eprintln!("skipped: {why}"),
    }
}

/// A key prefix no other test (or earlier run) uses.
pub fn prefix(test: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("twoplane-test:{test}:{}:{nanos}", std::process::id())
}

pub type Reported = Arc<Mutex<Vec<(RelayPhase, String)>>>;

/// A relay error hook that records what it is told.
pub fn recorder() -> (Reported, RelayErrorHook) {
    let seen: Reported = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let hook: RelayErrorHook = Arc::new(move |info, err| s.lock().unwrap().push((info.phase, err.to_string())));
    (seen, hook)
}

/// A plane over `target` with `relay`, frequent checkpoints (so `durable` frames flow), and the
/// given tweaks.
pub fn plane(target: Arc<dyn DurableTarget>, relay: Arc<dyn Relay>, tweak: impl FnOnce(&mut PlaneOptions)) -> Plane {
    let mut options = PlaneOptions::default().with_authorizer(Arc::new(AllowAll)).with_relay(relay);
    options.chars = 16;
    options.interval_ms = 20;
    options.retry_backoff_ms = 5;
    options.linger_ms = 500;
    tweak(&mut options);
    Plane::new(options, target).expect("valid options")
}

/// A store with these message rows.
pub fn store(ids: &[&str]) -> Arc<MemoryTarget> {
    let m = Arc::new(MemoryTarget::new());
    for id in ids {
        m.insert_message(id);
    }
    m
}

pub fn units(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

/// How a subscription ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// `end`: the reader's text must equal the produced text.
    End,
    /// `stale`: the reader holds a prefix and reads the store for the rest.
    Stale,
    /// `absent` (bare).
    Absent,
}

/// Everything one subscriber received, read to its terminal.
#[derive(Debug)]
pub struct Received {
    pub from: u64,
    pub frames: Vec<Arc<Frame>>,
}

impl Received {
    pub fn ending(&self) -> Ending {
        match self.frames.last().map(|f| &**f) {
            Some(Frame::End { .. }) => Ending::End,
            Some(Frame::Stale { .. }) => Ending::Stale,
            Some(Frame::Absent) => Ending::Absent,
            other => panic!("the subscription did not end with a terminal: {other:?}"),
        }
    }

    pub fn chunks(&self) -> usize {
        self.frames.iter().filter(|f| matches!(***f, Frame::Chunk { .. })).count()
    }

    /// Check the frame contract and the reader's text against the text the producer made:
    /// the reader is seeded with the produced text up to its offset (what its durable view held),
    /// splices every chunk at the chunk's own offset, and must end with exactly the produced text
    /// after `end`, or with a prefix of it after `stale`/`absent`. Returns the reader's text.
    pub fn check(&self, produced: &[u16]) -> Vec<u16> {
        let frames: Vec<&Frame> = self.frames.iter().map(|f| &**f).collect();
        assert!(!frames.is_empty(), "no frames at all");
        let last = frames.len() - 1;
        for (i, f) in frames.iter().enumerate() {
            f.validate().expect("frames satisfy the codec's invariants");
            assert_eq!(f.is_terminal(), i == last, "exactly one terminal, last: {frames:?}");
        }
        if frames.len() == 1 && matches!(frames[0], Frame::Stale { .. } | Frame::Absent) {
            return produced[..(self.from as usize).min(produced.len())].to_vec();
        }
        let Frame::Open { from, .. } = frames[0] else { panic!("a subscription starts with open: {frames:?}") };
        assert_eq!(*from, self.from, "a relayed open sits at the requested offset");
        let mut acc = produced[..(*from as usize).min(produced.len())].to_vec();
        let mut last_durable = 0;
        for f in &frames[1..] {
            match f {
                Frame::Chunk { from, text, .. } => {
                    assert!(*from as usize <= acc.len(), "a chunk at {from} leaves a gap after {}", acc.len());
                    acc.truncate(*from as usize);
                    acc.extend_from_slice(text.units());
                    assert!(
                        produced.starts_with(&acc),
                        "corrupted text: the reader holds {:?}",
                        String::from_utf16_lossy(&acc)
                    );
                }
                Frame::Durable { seq } => {
                    assert!(*seq >= last_durable && *seq as usize <= acc.len(), "durable {seq} out of place");
                    last_durable = *seq;
                }
                Frame::End { seq, .. } => {
                    assert!(*seq as usize <= acc.len(), "end {seq} past the delivered text");
                    assert_eq!(
                        String::from_utf16_lossy(&acc),
                        String::from_utf16_lossy(produced),
                        "after end the reader holds the produced text"
                    );
                    assert_eq!(acc, produced, "code for code");
                }
                Frame::Stale { .. } | Frame::Absent => {}
                Frame::Open { .. } => panic!("a second open"),
                Frame::Event { .. } => panic!("a text stream relayed a part frame: {f:?}"),
            }
        }
        acc
    }
}

/// Read a subscription to its terminal (bounded, so a hanging source fails the test instead of
/// hanging it).
pub async fn read_all(mut sub: Subscription, from: u64, limit: Duration) -> Received {
    let mut frames = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, sub.next()).await {
            Ok(Some(frame)) => {
                let done = frame.is_terminal();
                frames.push(frame);
                if done {
                    break;
                }
            }
            Ok(None) => break,
            Err(_) => panic!("the subscription from {from} did not end within {limit:?}; got {frames:?}"),
        }
    }
    Received { from, frames }
}

/// xorshift64*: deterministic and dependency-free.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A delta of text for push number `i`: mixed scripts, astral characters (surrogate pairs),
/// newlines, quotes and backslashes, so the JSON and the UTF-16 offsets are exercised.
pub fn delta(rng: &mut Rng, i: usize) -> String {
    const PIECES: &[&str] =
        &["the ", "quick ", "wörld ", "😀", "👍🏽 ", "\"q\" ", "a\\b ", "\n", "日本語 ", "x", "ñ", "— "];
    let mut s = String::new();
    for _ in 0..1 + rng.below(3) {
        s.push_str(PIECES[rng.below(PIECES.len() as u64) as usize]);
    }
    s.push_str(&format!("{i} "));
    s
}
