//! The log topology: Redis Streams, one key per stream (`<prefix>:log:<streamId>`).
//!
//! `publish` appends every produced frame with `XADD ... MAXLEN ~ max_len` (bounded memory; the
//! oldest entries go first) and renews the key's expiry; after the stream's `end` the expiry
//! drops to `end_ttl_ms`, so a finished stream stays replayable for late readers for a while and
//! then disappears. A new generation (the stream id produced again) starts the key afresh.
//!
//! `attach(stream_id, from)` reads the retained entries with `XRANGE` (the first page before
//! `attach` returns, so a Redis outage is an attach failure and the reader gets `absent`), runs
//! them through the cursor, which delivers the first chunk that covers `from` (it may start below
//! `from`: the reader splices at the chunk's own offset) and everything after, then follows new
//! entries. If the oldest retained chunk starts past `from`, the entries that would serve the
//! reader were trimmed: `stale`. A stream with no entries at all is waited for, not refused: a
//! reader that arrives before the first token is the common case, and the source ends with
//! `absent` only if nothing appears within `first_frame_timeout_ms`. The `end` entry is
//! delivered like any frame, so followers of a finished stream terminate.
//!
//! Following is shared (the `Tail`): one dedicated connection runs one blocking `XREAD` over
//! the keys of every follower, each from the oldest position any of its followers needs, and
//! hands each follower the entries past its own position. A new follower interrupts the current
//! `XREAD` (`CLIENT UNBLOCK`) so it is included at once. When the connection is lost (a Redis
//! restart), the tail reconnects and resumes every follower after the last entry it was given:
//! nothing is skipped, and a write the producer retried shows up as an exact replay, which the
//! cursor skips. A follower that cannot keep up is cut and its reader ends with an error.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::streams::{StreamId, StreamRangeReply, StreamReadReply};
use redis::{AsyncConnectionConfig, RetryMethod, Value};
use tokio::sync::mpsc;
use twoplane_core::message::{encode_message_frame as encode_frame, MessageFrame as Frame};
use twoplane_runtime::Backoff;
use twoplane_stream::{FrameSource, Relay, RelayError, RelayTopology};

use crate::cursor::{Cursor, Step};
use crate::envelope::{decode_entry, Envelope, FRAME_FIELD, GEN_FIELD};
use crate::error::RedisRelayError;
use crate::options::{LogOptions, RedisRelayOptions};
use crate::publisher::{connect, Encode, Outgoing, Publisher};
use crate::source::{self, Emitter};
use twoplane_runtime::lock;

/// The log tail's reconnect: 50 ms, doubling, at most 2 s apart, for as long as anyone follows.
const RECONNECT: Backoff = Backoff::new(Duration::from_millis(50), u32::MAX).with_cap(Duration::from_secs(2));

/// Entries read per `XRANGE` page and per key per `XREAD`.
const PAGE: usize = 512;
/// How long one `XREAD` blocks when nothing arrives (a new follower interrupts it sooner).
const BLOCK_MS: u64 = 1_000;
/// Batches queued per follower before it is cut as too slow.
const FOLLOWER_BUFFER: usize = 64;

/// The Streams relay. Cheap to share (`Arc` it into the plane's options).
pub struct LogRelay {
    options: RedisRelayOptions,
    publisher: Publisher,
    cmd: ConnectionManager,
    tail: Arc<Tail>,
}

impl LogRelay {
    /// Connect to Redis at `url` and start the writer. Fails when the options cannot work or
    /// Redis does not answer within the connect timeout.
    pub async fn connect(url: &str, options: RedisRelayOptions, log: LogOptions) -> Result<LogRelay, RedisRelayError> {
        options.check()?;
        log.check()?;
        let (client, cmd) = connect(url, &options).await?;
        let encoder = Arc::new(LogEncoder { prefix: options.prefix.clone(), log });
        let publisher = Publisher::spawn(cmd.clone(), encoder, &options);
        let tail = Arc::new(Tail {
            client,
            cmd: cmd.clone(),
            connect_timeout: options.connect_timeout(),
            state: Mutex::new(TailState::default()),
        });
        Ok(LogRelay { options, publisher, cmd, tail })
    }

    /// The key a stream's log lives under.
    pub fn key(&self, stream_id: &str) -> String {
        key_name(&self.options.prefix, stream_id)
    }
}

fn key_name(prefix: &str, stream_id: &str) -> String {
    format!("{prefix}:log:{stream_id}")
}

struct LogEncoder {
    prefix: String,
    log: LogOptions,
}

impl Encode for LogEncoder {
    fn encode(&self, batch: &[Outgoing], pipe: &mut redis::Pipeline) {
        // Keys touched by this batch, in order, with whether their last frame was the `end`.
        let mut touched: Vec<(String, bool)> = Vec::new();
        for o in batch {
            let key = key_name(&self.prefix, &o.stream_id);
            if o.fresh {
                // Entries under this key belong to an earlier production of the id: this process
                // now holds the stream (the open is single-flight), so they are dead.
                pipe.cmd("DEL").arg(&key).ignore();
            }
            pipe.cmd("XADD")
                .arg(&key)
                .arg("MAXLEN")
                .arg("~")
                .arg(self.log.max_len)
                .arg("*")
                .arg(GEN_FIELD)
                .arg(&*o.gen)
                .arg(FRAME_FIELD)
                .arg(encode_frame(&o.frame))
                .ignore();
            let ended = matches!(o.frame, Frame::End { .. } | Frame::Stale { .. });
            match touched.iter_mut().find(|(k, _)| *k == key) {
                Some(t) => t.1 = ended,
                None => touched.push((key, ended)),
            }
        }
        for (key, ended) in touched {
            let ttl = if ended { self.log.end_ttl_ms } else { self.log.live_ttl_ms };
            pipe.cmd("PEXPIRE").arg(key).arg(ttl).ignore();
        }
    }
}

#[async_trait]
impl Relay for LogRelay {
    fn topology(&self) -> RelayTopology {
        RelayTopology { publish: true, attach: true }
    }

    fn publish(&self, stream_id: &str, frame: &Frame) -> Result<(), RelayError> {
        self.publisher.publish(stream_id, frame)
    }

    async fn flush(&self) -> Result<(), RelayError> {
        self.publisher.flush().await
    }

    async fn attach(&self, stream_id: &str, from: u64) -> Result<Option<FrameSource>, RelayError> {
        let key = self.key(stream_id);
        let mut cmd = self.cmd.clone();
        let first = range(&mut cmd, &key, None).await?;
        let (emit, source) = source::channel();
        let reader = Reader { key, cursor: Cursor::new(stream_id, from), last: EntryId::ZERO, emit };
        tokio::spawn(reader.run(first, cmd, self.tail.clone(), self.options.clone()));
        Ok(Some(source))
    }
}

// ---------------------------------------------------------------- entries

/// A Streams entry id, `<ms>-<seq>`, ordered as Redis orders them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct EntryId(u64, u64);

impl EntryId {
    const ZERO: EntryId = EntryId(0, 0);

    fn parse(s: &str) -> Option<EntryId> {
        let (ms, seq) = s.split_once('-')?;
        Some(EntryId(ms.parse().ok()?, seq.parse().ok()?))
    }
}

impl std::fmt::Display for EntryId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.0, self.1)
    }
}

/// One decoded entry (a payload that is not a frame keeps its reason, for the reader to report).
struct Entry {
    id: EntryId,
    envelope: Result<Envelope, String>,
}

fn field<'a>(entry: &'a StreamId, name: &str) -> Option<&'a [u8]> {
    match entry.map.get(name)? {
        Value::BulkString(b) => Some(b.as_slice()),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

fn decode(entries: Vec<StreamId>) -> Vec<Entry> {
    entries
        .into_iter()
        .filter_map(|e| {
            // Ids come from Redis; one that does not parse cannot be ordered, so it is dropped
            // (with a trace) rather than guessed at.
            let Some(id) = EntryId::parse(&e.id) else {
                tracing::warn!(id = %e.id, "a log entry id that is not <ms>-<seq>");
                return None;
            };
            Some(Entry { id, envelope: decode_entry(field(&e, GEN_FIELD), field(&e, FRAME_FIELD)) })
        })
        .collect()
}

/// One page of entries after `after` (from the start with `None`).
async fn range(cmd: &mut ConnectionManager, key: &str, after: Option<EntryId>) -> Result<Vec<Entry>, RedisRelayError> {
    let start = after.map_or_else(|| "-".to_owned(), |id| format!("({id}"));
    let mut xrange = redis::cmd("XRANGE");
    xrange.arg(key).arg(start).arg("+").arg("COUNT").arg(PAGE);
    let mut attempt = 0;
    let reply: StreamRangeReply = loop {
        attempt += 1;
        match xrange.query_async(cmd).await {
            Ok(reply) => break reply,
            // The connection manager learns that its connection died (a Redis restart) from the
            // call that fails on it, and reconnects; one more try goes to the new connection.
            Err(e) if attempt < 3 && !matches!(e.retry_method(), RetryMethod::NoRetry) => {
                tracing::debug!(error = %e, "reading the log failed; retrying on a fresh connection");
            }
            Err(e) => return Err(RedisRelayError::redis(format!("reading the log {key}"), e)),
        }
    };
    Ok(decode(reply.ids))
}

// ---------------------------------------------------------------- one reader

struct Reader {
    key: String,
    cursor: Cursor,
    /// The last entry this reader consumed.
    last: EntryId,
    emit: Emitter,
}

enum Flow {
    Go,
    Stop,
}

impl Reader {
    async fn run(mut self, first: Vec<Entry>, mut cmd: ConnectionManager, tail: Arc<Tail>, options: RedisRelayOptions) {
        // The replay: page through what the log retains.
        let mut page = first;
        loop {
            let full = page.len() >= PAGE;
            for entry in page {
                if let Flow::Stop = self.take(entry).await {
                    return;
                }
            }
            if !full {
                break;
            }
            let next = tokio::select! {
                _ = self.emit.closed() => return,
                next = range(&mut cmd, &self.key, Some(self.last)) => next,
            };
            page = match next {
                Ok(p) => p,
                Err(e) => {
                    self.emit.fail(e).await;
                    return;
                }
            };
        }
        // Then follow, from the last entry replayed.
        let mut following = tail.follow(self.key.clone(), self.last);
        loop {
            let wait = if self.cursor.seen_any() { options.idle_timeout() } else { options.first_frame_timeout() };
            let batch = tokio::select! {
                _ = self.emit.closed() => return,
                next = tokio::time::timeout(wait, following.rx.recv()) => match next {
                    Err(_elapsed) => {
                        let frame = self.cursor.timeout_frame();
                        self.emit.frame(frame).await;
                        return;
                    }
                    Ok(None) => {
                        self.emit.fail(RedisRelayError::new(following.reason(&self.key))).await;
                        return;
                    }
                    Ok(Some(batch)) => batch,
                },
            };
            for entry in batch.iter() {
                if entry.id <= self.last {
                    continue;
                }
                let entry = Entry { id: entry.id, envelope: entry.envelope.clone() };
                if let Flow::Stop = self.take(entry).await {
                    return;
                }
            }
        }
    }

    async fn take(&mut self, entry: Entry) -> Flow {
        self.last = entry.id;
        let envelope = match entry.envelope {
            Ok(e) => e,
            Err(why) => {
                self.emit.fail(RedisRelayError::new(format!("in {} at {}: {why}", self.key, entry.id))).await;
                return Flow::Stop;
            }
        };
        match self.cursor.accept(envelope) {
            Step::Skip => Flow::Go,
            Step::Deliver(frames) => {
                if self.emit.frames(frames).await {
                    Flow::Go
                } else {
                    Flow::Stop
                }
            }
            Step::Finish(frames) => {
                self.emit.frames(frames).await;
                Flow::Stop
            }
            Step::Lost(why) => {
                self.emit.fail(RedisRelayError::new(format!("in {}: {why}", self.key))).await;
                Flow::Stop
            }
        }
    }
}

// ---------------------------------------------------------------- the shared tail

type Batch = Arc<Vec<Entry>>;

struct Tail {
    client: redis::Client,
    /// For `CLIENT UNBLOCK` (the tail's own connection is busy blocking).
    cmd: ConnectionManager,
    connect_timeout: Duration,
    state: Mutex<TailState>,
}

#[derive(Default)]
struct TailState {
    followers: HashMap<u64, Follower>,
    next_id: u64,
    /// A tail task exists.
    running: bool,
    /// The tail connection's client id while an `XREAD` is in flight.
    blocked: Option<i64>,
}

struct Follower {
    key: String,
    /// The last entry handed to this follower.
    last: EntryId,
    tx: mpsc::Sender<Batch>,
    reason: Arc<Mutex<Option<String>>>,
}

/// A reader's place in the tail; leaving it (drop) unregisters.
struct Following {
    rx: mpsc::Receiver<Batch>,
    reason: Arc<Mutex<Option<String>>>,
    id: u64,
    tail: Weak<Tail>,
}

impl Following {
    fn reason(&self, key: &str) -> String {
        lock(&self.reason).clone().unwrap_or_else(|| format!("stopped following {key}"))
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        if let Some(tail) = self.tail.upgrade() {
            tail.lock().followers.remove(&self.id);
        }
    }
}

impl Tail {
    fn lock(&self) -> std::sync::MutexGuard<'_, TailState> {
        lock(&self.state)
    }

    fn follow(self: &Arc<Self>, key: String, last: EntryId) -> Following {
        let (tx, rx) = mpsc::channel(FOLLOWER_BUFFER);
        let reason = Arc::new(Mutex::new(None));
        let (id, start, interrupt) = {
            let mut st = self.lock();
            let id = st.next_id;
            st.next_id += 1;
            st.followers.insert(id, Follower { key, last, tx, reason: reason.clone() });
            let start = !st.running;
            st.running = true;
            (id, start, st.blocked)
        };
        if start {
            tokio::spawn(self.clone().run());
        } else if let Some(client_id) = interrupt {
            // The running XREAD does not include this key yet: cut its wait short.
            let mut cmd = self.cmd.clone();
            tokio::spawn(async move {
                let unblocked: Result<i64, _> =
                    redis::cmd("CLIENT").arg("UNBLOCK").arg(client_id).query_async(&mut cmd).await;
                if let Err(e) = unblocked {
                    tracing::debug!(error = %e, "CLIENT UNBLOCK failed; the new follower waits one block");
                }
            });
        }
        Following { rx, reason, id, tail: Arc::downgrade(self) }
    }

    async fn dial(&self) -> Result<(MultiplexedConnection, i64), redis::RedisError> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            // A blocking read legitimately takes up to BLOCK_MS.
            .set_response_timeout(Some(Duration::from_millis(BLOCK_MS) + self.connect_timeout));
        let mut conn = self.client.get_multiplexed_async_connection_with_config(&config).await?;
        let client_id: i64 = redis::cmd("CLIENT").arg("ID").query_async(&mut conn).await?;
        Ok((conn, client_id))
    }

    /// The tail task: runs while anyone follows.
    async fn run(self: Arc<Self>) {
        let mut conn: Option<(MultiplexedConnection, i64)> = None;
        // Failures since the last connection that worked: the reconnect waits RECONNECT of it.
        let mut failures = 0u32;
        loop {
            let positions: Vec<(String, EntryId)> = {
                let mut st = self.lock();
                if st.followers.is_empty() {
                    st.running = false;
                    return;
                }
                let mut oldest: HashMap<&str, EntryId> = HashMap::new();
                for f in st.followers.values() {
                    let e = oldest.entry(f.key.as_str()).or_insert(f.last);
                    *e = (*e).min(f.last);
                }
                oldest.into_iter().map(|(k, id)| (k.to_owned(), id)).collect()
            };
            if conn.is_none() {
                match self.dial().await {
                    Ok(c) => {
                        if failures > 0 {
                            metrics::counter!("twoplane_relay_reconnects_total", "connection" => "log_tail")
                                .increment(1);
                        }
                        failures = 0;
                        conn = Some(c);
                    }
                    Err(e) => {
                        // Followers keep their positions; each one's idle timeout bounds the wait.
                        tracing::warn!(error = %e, "the log tail cannot reach Redis; retrying");
                        failures += 1;
                        tokio::time::sleep(RECONNECT.delay(failures)).await;
                        continue;
                    }
                }
            }
            let Some((c, client_id)) = conn.as_mut() else { continue };
            let client_id = *client_id;
            let mut xread = redis::cmd("XREAD");
            xread.arg("COUNT").arg(PAGE).arg("BLOCK").arg(BLOCK_MS).arg("STREAMS");
            for (key, _) in &positions {
                xread.arg(key);
            }
            for (_, id) in &positions {
                xread.arg(id.to_string());
            }
            self.lock().blocked = Some(client_id);
            let reply: Result<Option<StreamReadReply>, _> = xread.query_async(c).await;
            self.lock().blocked = None;
            match reply {
                Ok(Some(reply)) => self.dispatch(reply, &positions),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "the log tail lost its Redis connection; resuming after a reconnect");
                    conn = None;
                    failures += 1;
                    tokio::time::sleep(RECONNECT.delay(failures)).await;
                }
            }
        }
    }

    /// Hand each follower of each key the entries it lacks. The read started at `positions`:
    /// a follower that joined while it was in flight may need entries from before that start,
    /// so it gets nothing now (a gap would cost it the stream) and is served by the next read,
    /// which starts at the oldest position again.
    fn dispatch(&self, reply: StreamReadReply, positions: &[(String, EntryId)]) {
        let mut st = self.lock();
        let mut cut: Vec<u64> = Vec::new();
        for stream in reply.keys {
            let Some(&(_, read_from)) = positions.iter().find(|(k, _)| *k == stream.key) else { continue };
            let batch: Batch = Arc::new(decode(stream.ids));
            let Some(newest) = batch.last().map(|e| e.id) else { continue };
            for (id, f) in st.followers.iter_mut().filter(|(_, f)| f.key == stream.key) {
                if newest <= f.last || f.last < read_from {
                    continue;
                }
                match f.tx.try_send(batch.clone()) {
                    Ok(()) => f.last = newest,
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        *lock(&f.reason) =
                            Some(format!("the reader fell behind the log {} (its buffer is full)", f.key));
                        cut.push(*id);
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => cut.push(*id),
                }
            }
        }
        for id in cut {
            st.followers.remove(&id);
        }
    }
}
