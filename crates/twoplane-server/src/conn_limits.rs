//! How many connections the server holds, and whose: the bounds that keep a client from taking
//! every descriptor, and keep room for producers while readers misbehave.
//!
//! Guarantees:
//! - At most [`ConnLimitsConfig::max_connections`] connections are open at once, at most
//!   [`ConnLimitsConfig::max_per_ip`] from one address, and at most
//!   [`ConnLimitsConfig::max_waiting`] of them still waiting for their first request head (a
//!   silent connection is closed by the head budget anyway; this bounds how many can wait).
//!   A connection past the per-address bound is closed at once, before anything is read from
//!   it; past the others, the connection that has waited longest for its head makes room.
//! - Subscriptions are bounded by the SSE endpoint (`SseConfig::max_subscribers`, which
//!   [`ConnLimitsConfig::max_subscribers`] derives): waiting heads and subscribers together can
//!   never take the last [`ConnLimitsConfig::reserved`] connections, which stay for producers and
//!   every other request.
//! - Subscriptions are also bounded per stream and per client address ([`SubscriberCaps`], the
//!   SSE endpoint asks it before it subscribes): at most [`SubscriberCapsConfig::per_stream`] on
//!   one stream id and [`SubscriberCapsConfig::per_ip`] from one address, so one client cannot
//!   take every subscription, nor pile every reader onto one stream.
//! - Every admission is released exactly once, when its [`Admitted`] (or [`SubscriberPass`]) is
//!   dropped; a stream id or address with no subscriber left holds no entry.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use twoplane_runtime::lock;

use crate::wakeup::Wakeup;

/// The bounds (see the module guarantees).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnLimitsConfig {
    pub max_connections: usize,
    pub max_per_ip: usize,
    pub max_waiting: usize,
    /// Connections neither waiting heads nor subscribers may use.
    pub reserved: usize,
}

impl ConnLimitsConfig {
    /// Descriptors kept out of the connection budget: the database pool, the relay, the
    /// listener, log files, and the process's own.
    const OTHER_DESCRIPTORS: u64 = 256;

    /// The defaults for a process allowed `open_files` descriptors: every descriptor but
    /// [`Self::OTHER_DESCRIPTORS`] for connections, half of them for one address, a quarter
    /// waiting for a head, an eighth reserved for producers.
    pub fn for_open_files(open_files: u64) -> ConnLimitsConfig {
        let max = usize::try_from(open_files.saturating_sub(Self::OTHER_DESCRIPTORS)).unwrap_or(usize::MAX).max(64);
        ConnLimitsConfig { max_connections: max, max_per_ip: max / 2, max_waiting: max / 4, reserved: max / 8 }
    }

    /// How many subscriptions the SSE endpoint may hold at once.
    pub fn max_subscribers(&self) -> usize {
        self.max_connections.saturating_sub(self.max_waiting).saturating_sub(self.reserved).max(1)
    }

    /// The default per-stream and per-address subscriber caps: half of
    /// [`Self::max_subscribers`] each (as one address gets half of the connections), so neither
    /// one stream nor one client can take them all.
    pub fn subscriber_caps(&self) -> SubscriberCapsConfig {
        let half = (self.max_subscribers() / 2).max(1);
        SubscriberCapsConfig { per_stream: half, per_ip: half }
    }

    /// A sentence naming what does not fit, for `twoplane serve` to refuse.
    pub fn check(&self) -> Result<(), String> {
        if self.max_connections == 0 || self.max_per_ip == 0 || self.max_waiting == 0 {
            return Err("--max-connections, --max-connections-per-ip and --max-waiting-heads must be at least 1".into());
        }
        if self.max_waiting + self.reserved >= self.max_connections {
            return Err(format!(
                "--max-waiting-heads ({}) and the connections reserved for producers ({}) leave no room for readers \
                 within --max-connections ({})",
                self.max_waiting, self.reserved, self.max_connections
            ));
        }
        Ok(())
    }
}

/// The live counts behind [`ConnLimitsConfig`].
#[derive(Debug)]
pub struct ConnLimits {
    config: ConnLimitsConfig,
    state: Mutex<State>,
    /// Connections closed at once because a bound was reached, and waiting ones closed to make
    /// room for newer ones.
    pub refused: AtomicUsize,
    pub evicted: AtomicUsize,
}

#[derive(Debug, Default)]
struct State {
    open: usize,
    by_ip: HashMap<IpAddr, usize>,
    /// The connections still waiting for a head, oldest first.
    waiting: VecDeque<Arc<Slot>>,
}

/// One admission's place, shared by its [`Admitted`] and, while it waits, the queue.
#[derive(Debug)]
struct Slot {
    ip: IpAddr,
    /// Its place was given back (by eviction or by its owner): given back once only.
    released: AtomicBool,
    waiting: AtomicBool,
    /// Raised when the connection, still waiting for its head, was closed to make room.
    evict: Wakeup,
}

impl ConnLimits {
    pub fn new(config: ConnLimitsConfig) -> Arc<ConnLimits> {
        Arc::new(ConnLimits {
            config,
            state: Mutex::new(State::default()),
            refused: AtomicUsize::new(0),
            evicted: AtomicUsize::new(0),
        })
    }

    pub fn config(&self) -> ConnLimitsConfig {
        self.config
    }

    /// Open connections now.
    pub fn open(&self) -> usize {
        lock(&self.state).open
    }

    /// How much of each bound is in use now: open connections, connections waiting for a head,
    /// and the most any one address holds.
    pub fn usage(&self) -> ConnUsage {
        let state = lock(&self.state);
        ConnUsage {
            open: state.open,
            waiting: state.waiting.len(),
            busiest_address: state.by_ip.values().copied().max().unwrap_or(0),
        }
    }

    /// A new connection from `ip`, waiting for its first head; `None` when a bound is reached.
    ///
    /// A new connection cannot be told from a silent one until its head arrives, so when the
    /// waiting connections (or all of them) are at their bound, the one that has waited longest is
    /// closed to make room: a flood of silent connections then only ever displaces itself, and a
    /// producer's connection, whose head follows at once, gets through.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Admitted> {
        let mut state = lock(&self.state);
        if state.by_ip.get(&ip).copied().unwrap_or(0) >= self.config.max_per_ip {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        while state.open >= self.config.max_connections || state.waiting.len() >= self.config.max_waiting {
            let Some(oldest) = state.waiting.pop_front() else {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return None;
            };
            oldest.evict.raise();
            self.evicted.fetch_add(1, Ordering::Relaxed);
            Self::give_back(&mut state, &oldest);
        }
        *state.by_ip.entry(ip).or_insert(0) += 1;
        state.open += 1;
        let slot = Arc::new(Slot {
            ip,
            released: AtomicBool::new(false),
            waiting: AtomicBool::new(true),
            evict: Wakeup::default(),
        });
        state.waiting.push_back(slot.clone());
        Some(Admitted { limits: self.clone(), slot })
    }

    fn give_back(state: &mut State, slot: &Slot) {
        if slot.released.swap(true, Ordering::SeqCst) {
            return;
        }
        state.open -= 1;
        if let Some(n) = state.by_ip.get_mut(&slot.ip) {
            *n -= 1;
            if *n == 0 {
                state.by_ip.remove(&slot.ip);
            }
        }
    }
}

/// [`ConnLimits::usage`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnUsage {
    pub open: usize,
    pub waiting: usize,
    pub busiest_address: usize,
}

/// One admitted connection; dropping it gives its place back.
#[derive(Debug)]
pub struct Admitted {
    limits: Arc<ConnLimits>,
    slot: Arc<Slot>,
}

impl Admitted {
    /// The first request head is in: the connection no longer counts as waiting (and is never
    /// evicted).
    pub fn head_read(&mut self) {
        // The task that waited for an eviction may end while this connection lives on (a reader
        // parked without a task, `crate::parking`): its waker must not keep it.
        self.slot.evict.forget();
        if self.slot.waiting.swap(false, Ordering::SeqCst) {
            let mut state = lock(&self.limits.state);
            state.waiting.retain(|s| !Arc::ptr_eq(s, &self.slot));
        }
    }

    /// Resolves when this connection, still waiting for its head, was closed to make room.
    pub async fn evicted(&self) {
        std::future::poll_fn(|cx| self.slot.evict.poll_take(cx)).await
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.head_read();
        ConnLimits::give_back(&mut lock(&self.limits.state), &self.slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// The connection's task, waiting for its head, is woken by its eviction and ends.
    #[tokio::test]
    async fn an_evicted_connection_is_woken() {
        let limits =
            ConnLimits::new(ConnLimitsConfig { max_connections: 1, max_per_ip: 1, max_waiting: 1, reserved: 0 });
        let a1 = limits.admit(ip("10.0.0.1")).unwrap();
        let waiting = tokio::spawn(async move { a1.evicted().await });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "woken before an eviction");
        let _b1 = limits.admit(ip("10.0.0.2")).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(1), waiting).await.expect("not woken").unwrap();
    }

    /// A connection's task that waited for an eviction may end while the connection lives on
    /// (parked, `crate::parking`): once the head is in, the connection holds no waker of it, which
    /// would keep the whole finished task in memory.
    #[test]
    fn a_read_head_lets_go_of_the_eviction_waiter() {
        struct Task;
        impl std::task::Wake for Task {
            fn wake(self: Arc<Self>) {}
        }
        let limits =
            ConnLimits::new(ConnLimitsConfig { max_connections: 1, max_per_ip: 1, max_waiting: 1, reserved: 0 });
        let mut admitted = limits.admit(ip("10.0.0.1")).unwrap();
        let task = Arc::new(Task);
        let waker = std::task::Waker::from(task.clone());
        {
            let mut waiting = std::pin::pin!(admitted.evicted());
            let polled = std::future::Future::poll(waiting.as_mut(), &mut std::task::Context::from_waker(&waker));
            assert!(polled.is_pending());
        }
        drop(waker);
        assert_eq!(Arc::strong_count(&task), 2, "the wait registered no waker");
        admitted.head_read();
        assert_eq!(Arc::strong_count(&task), 1, "the eviction still holds the task's waker");
    }

    #[test]
    fn the_oldest_waiting_connection_makes_room_and_every_place_comes_back() {
        let limits =
            ConnLimits::new(ConnLimitsConfig { max_connections: 4, max_per_ip: 2, max_waiting: 2, reserved: 0 });
        let a1 = limits.admit(ip("10.0.0.1")).unwrap();
        let mut a2 = limits.admit(ip("10.0.0.1")).unwrap();
        assert!(limits.admit(ip("10.0.0.1")).is_none(), "per address");
        a2.head_read();
        let b1 = limits.admit(ip("10.0.0.2")).unwrap();
        // Two waiting (a1, b1): the next one evicts a1, the oldest.
        let c1 = limits.admit(ip("10.0.0.3")).unwrap();
        assert!(a1.slot.evict.is_raised() && !b1.slot.evict.is_raised());
        assert_eq!(limits.evicted.load(Ordering::Relaxed), 1);
        assert_eq!(limits.open(), 3, "a1's place was given back when it was evicted");
        drop(a1);
        assert_eq!(limits.open(), 3, "and not given back twice");
        let mut heads = vec![b1, c1];
        for h in &mut heads {
            h.head_read();
        }
        let d1 = limits.admit(ip("10.0.0.4")).unwrap();
        assert_eq!(limits.open(), 4);
        // All four open, none waiting but d1: a fifth evicts d1; then nothing is left to evict.
        let e1 = limits.admit(ip("10.0.0.5")).unwrap();
        assert!(d1.slot.evict.is_raised());
        let mut e1 = e1;
        e1.head_read();
        assert!(limits.admit(ip("10.0.0.6")).is_none(), "all connections, none waiting");
        assert_eq!(limits.refused.load(Ordering::Relaxed), 2);
        drop((a2, heads, d1, e1));
        assert_eq!(limits.open(), 0);
        let state = lock(&limits.state);
        assert!(state.by_ip.is_empty() && state.waiting.is_empty());
    }

    #[test]
    fn defaults_follow_the_open_file_limit_and_keep_a_reserve() {
        let d = ConnLimitsConfig::for_open_files(1024);
        assert_eq!((d.max_connections, d.max_per_ip, d.max_waiting, d.reserved), (768, 384, 192, 96));
        assert_eq!(d.max_subscribers(), 480);
        assert!(d.check().is_ok());
        assert_eq!(ConnLimitsConfig::for_open_files(10).max_connections, 64);
        let tight = ConnLimitsConfig { max_connections: 10, max_per_ip: 10, max_waiting: 8, reserved: 2 };
        assert!(tight.check().unwrap_err().contains("no room for readers"));
    }
}

/// The per-stream and per-address subscriber bounds (see the module guarantees).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubscriberCapsConfig {
    pub per_stream: usize,
    pub per_ip: usize,
}

impl SubscriberCapsConfig {
    /// A sentence naming what does not fit, for `twoplane serve` to refuse.
    pub fn check(&self) -> Result<(), String> {
        if self.per_stream == 0 || self.per_ip == 0 {
            return Err("--max-subscribers-per-stream and --max-subscribers-per-ip must be at least 1".into());
        }
        Ok(())
    }
}

/// Which subscriber bound a subscribe reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapReached {
    /// Every subscription the connection limits leave (`SseConfig::max_subscribers`).
    Server,
    Stream,
    Ip,
}

impl CapReached {
    /// The stable `kind` of the refusal (one for both bounds: the client's remedy is the same,
    /// wait and retry) and a message naming the bound.
    pub fn kind(self) -> &'static str {
        "too_many_subscribers"
    }

    pub fn message(self) -> &'static str {
        match self {
            CapReached::Server => "the server has as many subscribers as it allows; try again later",
            CapReached::Stream => "this stream has as many subscribers as the server allows; try again later",
            CapReached::Ip => "this address has as many subscriptions as the server allows; try again later",
        }
    }
}

/// The live counts behind [`SubscriberCapsConfig`].
#[derive(Debug)]
pub struct SubscriberCaps {
    config: SubscriberCapsConfig,
    state: Mutex<Subscribers>,
    /// Subscribes refused by a bound.
    pub refused: AtomicUsize,
}

#[derive(Debug, Default)]
struct Subscribers {
    by_stream: HashMap<Box<str>, usize>,
    by_ip: HashMap<IpAddr, usize>,
}

impl SubscriberCaps {
    pub fn new(config: SubscriberCapsConfig) -> Arc<SubscriberCaps> {
        Arc::new(SubscriberCaps { config, state: Mutex::new(Subscribers::default()), refused: AtomicUsize::new(0) })
    }

    pub fn config(&self) -> SubscriberCapsConfig {
        self.config
    }

    /// A subscriber of `stream_id` from `ip` (`None`: an address the server does not know, which
    /// only the per-stream bound applies to); refused when either bound is reached, counting
    /// nothing then.
    pub fn admit(self: &Arc<Self>, stream_id: &str, ip: Option<IpAddr>) -> Result<SubscriberPass, CapReached> {
        let mut state = lock(&self.state);
        let refuse = |reached| {
            self.refused.fetch_add(1, Ordering::Relaxed);
            Err(reached)
        };
        if ip.is_some_and(|ip| state.by_ip.get(&ip).copied().unwrap_or(0) >= self.config.per_ip) {
            return refuse(CapReached::Ip);
        }
        if state.by_stream.get(stream_id).copied().unwrap_or(0) >= self.config.per_stream {
            return refuse(CapReached::Stream);
        }
        *state.by_stream.entry(stream_id.into()).or_insert(0) += 1;
        if let Some(ip) = ip {
            *state.by_ip.entry(ip).or_insert(0) += 1;
        }
        Ok(SubscriberPass { caps: self.clone(), stream_id: stream_id.into(), ip })
    }

    /// The most subscribers any one stream has now, and any one address.
    pub fn busiest(&self) -> (usize, usize) {
        let state = lock(&self.state);
        let most = |counts: &mut dyn Iterator<Item = usize>| counts.max().unwrap_or(0);
        (most(&mut state.by_stream.values().copied()), most(&mut state.by_ip.values().copied()))
    }

    /// Subscribers counted now on `stream_id`.
    pub fn on_stream(&self, stream_id: &str) -> usize {
        lock(&self.state).by_stream.get(stream_id).copied().unwrap_or(0)
    }
}

/// One admitted subscriber; dropping it gives its places back.
#[derive(Debug)]
pub struct SubscriberPass {
    caps: Arc<SubscriberCaps>,
    stream_id: Box<str>,
    ip: Option<IpAddr>,
}

impl Drop for SubscriberPass {
    fn drop(&mut self) {
        let mut state = lock(&self.caps.state);
        let state = &mut *state;
        release(&mut state.by_stream, &self.stream_id);
        if let Some(ip) = self.ip {
            release(&mut state.by_ip, &ip);
        }
    }
}

/// One fewer under `key`, removing the entry at zero.
fn release<K: std::hash::Hash + Eq + ?Sized, Q: std::hash::Hash + Eq + std::borrow::Borrow<K>>(
    map: &mut HashMap<Q, usize>,
    key: &K,
) {
    if let Some(n) = map.get_mut(key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            map.remove(key);
        }
    }
}

#[cfg(test)]
mod subscriber_tests {
    use super::*;

    #[test]
    fn caps_per_stream_and_per_address_refuse_and_give_back() {
        let caps = SubscriberCaps::new(SubscriberCapsConfig { per_stream: 2, per_ip: 3 });
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let s1 = caps.admit("s", Some(a)).unwrap();
        let s2 = caps.admit("s", Some(b)).unwrap();
        assert_eq!(caps.admit("s", Some(b)).unwrap_err(), CapReached::Stream);
        assert_eq!(caps.admit("s", None).unwrap_err(), CapReached::Stream, "no address: the stream bound still holds");
        let t1 = caps.admit("t", Some(a)).unwrap();
        let u1 = caps.admit("u", Some(a)).unwrap();
        assert_eq!(caps.admit("v", Some(a)).unwrap_err(), CapReached::Ip);
        assert_eq!(caps.refused.load(Ordering::Relaxed), 3);
        drop(s1);
        assert_eq!(caps.on_stream("s"), 1);
        let again = caps.admit("s", Some(a)).expect("a place came back on the stream and the address");
        drop((again, s2, t1, u1));
        let state = lock(&caps.state);
        assert!(state.by_stream.is_empty() && state.by_ip.is_empty(), "nothing left behind");
        assert_eq!(CapReached::Ip.kind(), "too_many_subscribers");
        let d = ConnLimitsConfig::for_open_files(1024).subscriber_caps();
        assert_eq!((d.per_stream, d.per_ip), (240, 240));
        assert!(SubscriberCapsConfig { per_stream: 0, per_ip: 1 }.check().is_err());
    }
}
