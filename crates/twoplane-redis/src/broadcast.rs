//! The broadcast topology: Redis pub/sub, one channel per stream (`<prefix>:live:<streamId>`).
//!
//! `publish` mirrors every produced frame onto the stream's channel (through the shared writer,
//! see `publisher`). `attach` subscribes, waits for the subscription to be confirmed, and serves
//! the reader from whatever arrives next. Pub/sub keeps no history, so the first chunk a reader
//! sees must cover the reader's offset; if it starts past it (the reader joined behind the live
//! position) the source ends with `stale` and the reader reads the store. Readers that join at
//! the live position (typically at the start of a stream) get every frame.
//!
//! One pub/sub connection per adapter serves every attached reader (the `Hub`): readers
//! register a route for their channel, and one dispatcher task hands each message to the routes
//! of its channel. A route that cannot take a message (its reader is too slow) is cut, and that
//! reader ends with an error; the channel is subscribed while at least one route needs it.
//! Subscribing and unsubscribing go through one lock, so they reach Redis in the order they were
//! decided. When the connection is lost every route is cut with an error (messages published
//! meanwhile are gone for good: pub/sub cannot replay them), and the next `attach` connects
//! afresh.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use futures::StreamExt;
use redis::aio::{PubSubSink, PubSubStream};
use tokio::sync::{mpsc, oneshot};
use twoplane_core::message::MessageFrame as Frame;
use twoplane_stream::{FrameSource, Relay, RelayError, RelayTopology};

use crate::cursor::{Cursor, Step};
use crate::envelope::{decode_message, encode_message};
use crate::error::RedisRelayError;
use crate::options::RedisRelayOptions;
use crate::publisher::{connect, Encode, Outgoing, Publisher};
use crate::source::{self, Emitter};
use twoplane_runtime::lock;

/// The pub/sub relay. Cheap to share (`Arc` it into the plane's options).
pub struct BroadcastRelay {
    options: RedisRelayOptions,
    publisher: Publisher,
    hub: Arc<Hub>,
}

impl BroadcastRelay {
    /// Connect to Redis at `url` (`redis://host:port/db`) and start the writer. Fails when the
    /// options cannot work or Redis does not answer within the connect timeout.
    pub async fn connect(url: &str, options: RedisRelayOptions) -> Result<BroadcastRelay, RedisRelayError> {
        options.check()?;
        let (client, conn) = connect(url, &options).await?;
        let encoder = Arc::new(PubSubEncoder { prefix: options.prefix.clone() });
        let publisher = Publisher::spawn(conn, encoder, &options);
        let hub =
            Arc::new(Hub { client, connect_timeout: options.connect_timeout(), conn: tokio::sync::Mutex::new(None) });
        Ok(BroadcastRelay { options, publisher, hub })
    }

    /// The channel a stream's frames travel on.
    pub fn channel(&self, stream_id: &str) -> String {
        channel_name(&self.options.prefix, stream_id)
    }
}

fn channel_name(prefix: &str, stream_id: &str) -> String {
    format!("{prefix}:live:{stream_id}")
}

struct PubSubEncoder {
    prefix: String,
}

impl Encode for PubSubEncoder {
    fn encode(&self, batch: &[Outgoing], pipe: &mut redis::Pipeline) {
        for o in batch {
            pipe.cmd("PUBLISH")
                .arg(channel_name(&self.prefix, &o.stream_id))
                .arg(encode_message(&o.gen, &o.frame))
                .ignore();
        }
    }
}

#[async_trait]
impl Relay for BroadcastRelay {
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
        let channel = self.channel(stream_id);
        // Confirmed before the source is handed out: nothing published from here on is missed.
        let route = self.hub.subscribe(&channel, self.options.reader_buffer).await?;
        let (emit, source) = source::channel();
        tokio::spawn(read(route, stream_id.to_owned(), from, emit, self.options.clone()));
        Ok(Some(source))
    }
}

/// One attached reader: messages of its channel through the cursor, until a terminal, a loss,
/// a timeout, or the plane dropping the source.
async fn read(mut route: Route, stream_id: String, from: u64, emit: Emitter, options: RedisRelayOptions) {
    let mut cursor = Cursor::new(&stream_id, from);
    loop {
        let wait = if cursor.seen_any() { options.idle_timeout() } else { options.first_frame_timeout() };
        let payload = tokio::select! {
            _ = emit.closed() => return,
            next = tokio::time::timeout(wait, route.rx.recv()) => match next {
                Err(_elapsed) => {
                    emit.frame(cursor.timeout_frame()).await;
                    return;
                }
                Ok(None) => {
                    emit.fail(RedisRelayError::new(route.reason())).await;
                    return;
                }
                Ok(Some(payload)) => payload,
            },
        };
        let envelope = match decode_message(&payload) {
            Ok(e) => e,
            Err(why) => {
                emit.fail(RedisRelayError::new(format!("on {}: {why}", route.channel))).await;
                return;
            }
        };
        match cursor.accept(envelope) {
            Step::Skip => {}
            Step::Deliver(frames) => {
                if !emit.frames(frames).await {
                    return;
                }
            }
            Step::Finish(frames) => {
                emit.frames(frames).await;
                return;
            }
            Step::Lost(why) => {
                emit.fail(RedisRelayError::new(why)).await;
                return;
            }
        }
    }
}

// ---------------------------------------------------------------- the shared subscriber

struct Hub {
    client: redis::Client,
    connect_timeout: std::time::Duration,
    /// The live connection. Its async lock also orders every SUBSCRIBE and UNSUBSCRIBE.
    conn: tokio::sync::Mutex<Option<Arc<HubConn>>>,
}

/// One pub/sub connection and the routes registered on it.
struct HubConn {
    sink: PubSubSink,
    routes: Mutex<HashMap<String, Vec<Slot>>>,
    alive: AtomicBool,
    next_id: AtomicU64,
    /// Dropped with the connection; tells its dispatcher to stop.
    _stop: oneshot::Sender<()>,
}

struct Slot {
    id: u64,
    tx: mpsc::Sender<Vec<u8>>,
    /// Why the route was cut, set before its sender is dropped.
    reason: Arc<Mutex<Option<String>>>,
}

/// A reader's registration: its messages, and its way to unregister (on drop).
struct Route {
    rx: mpsc::Receiver<Vec<u8>>,
    reason: Arc<Mutex<Option<String>>>,
    channel: String,
    id: u64,
    conn: Arc<HubConn>,
    hub: Weak<Hub>,
}

impl Route {
    fn reason(&self) -> String {
        lock(&self.reason).clone().unwrap_or_else(|| format!("the pub/sub route for {} closed", self.channel))
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        let (Some(hub), Ok(rt)) = (self.hub.upgrade(), tokio::runtime::Handle::try_current()) else { return };
        let (conn, channel, id) = (self.conn.clone(), std::mem::take(&mut self.channel), self.id);
        rt.spawn(async move { hub.unsubscribe(&conn, &channel, id).await });
    }
}

impl HubConn {
    fn routes(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Slot>>> {
        lock(&self.routes)
    }
}

fn cut(slot: Slot, why: String) {
    *lock(&slot.reason) = Some(why);
    drop(slot.tx);
}

impl Hub {
    async fn subscribe(self: &Arc<Self>, channel: &str, buffer: usize) -> Result<Route, RedisRelayError> {
        let mut guard = self.conn.lock().await;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let conn = match &*guard {
                Some(c) if c.alive.load(Ordering::SeqCst) => c.clone(),
                _ => {
                    let c = self.connect().await?;
                    *guard = Some(c.clone());
                    c
                }
            };
            let (tx, rx) = mpsc::channel(buffer);
            let reason = Arc::new(Mutex::new(None));
            let id = conn.next_id.fetch_add(1, Ordering::Relaxed);
            let first = {
                let mut routes = conn.routes();
                let slots = routes.entry(channel.to_owned()).or_default();
                slots.push(Slot { id, tx, reason: reason.clone() });
                slots.len() == 1
            };
            // The route exists from here on, so whatever happens next (an error, or this future
            // dropped by the plane's attach timeout) its drop unregisters it.
            let route =
                Route { rx, reason, channel: channel.to_owned(), id, conn: conn.clone(), hub: Arc::downgrade(self) };
            if first {
                // Registered before SUBSCRIBE is sent, so the first message after the
                // confirmation already has somewhere to go.
                if let Err(e) = conn.sink.clone().subscribe(channel).await {
                    drop(route);
                    // A connection that died before its dispatcher noticed (a Redis restart a
                    // moment ago): once more on a fresh one.
                    if attempt < 2 && !matches!(e.retry_method(), redis::RetryMethod::NoRetry) {
                        conn.alive.store(false, Ordering::SeqCst);
                        continue;
                    }
                    return Err(RedisRelayError::redis(format!("subscribing to {channel}"), e));
                }
            }
            return Ok(route);
        }
    }

    async fn unsubscribe(&self, conn: &Arc<HubConn>, channel: &str, id: u64) {
        let _order = self.conn.lock().await;
        let now_empty = remove(conn, channel, id);
        if now_empty && conn.alive.load(Ordering::SeqCst) {
            // Best effort: on failure the connection is going away anyway.
            let _ = conn.sink.clone().unsubscribe(channel).await;
        }
    }

    async fn connect(&self) -> Result<Arc<HubConn>, RedisRelayError> {
        let pubsub = tokio::time::timeout(self.connect_timeout, self.client.get_async_pubsub())
            .await
            .map_err(|_| RedisRelayError::new("connecting to Redis for pub/sub timed out"))?
            .map_err(|e| RedisRelayError::redis("connecting to Redis for pub/sub", e))?;
        let (sink, stream) = pubsub.split();
        let (stop_tx, stop_rx) = oneshot::channel();
        let conn = Arc::new(HubConn {
            sink,
            routes: Mutex::new(HashMap::new()),
            alive: AtomicBool::new(true),
            next_id: AtomicU64::new(0),
            _stop: stop_tx,
        });
        tokio::spawn(dispatch(stream, Arc::downgrade(&conn), stop_rx));
        Ok(conn)
    }
}

/// Remove route `id`; whether the channel has no route left.
fn remove(conn: &HubConn, channel: &str, id: u64) -> bool {
    let mut routes = conn.routes();
    let Some(slots) = routes.get_mut(channel) else { return true };
    slots.retain(|s| s.id != id);
    if slots.is_empty() {
        routes.remove(channel);
        return true;
    }
    false
}

async fn dispatch(mut stream: PubSubStream, conn: Weak<HubConn>, mut stop: oneshot::Receiver<()>) {
    loop {
        let msg = tokio::select! {
            // The connection's last owner let go: nobody is listening any more.
            _ = &mut stop => return,
            msg = stream.next() => msg,
        };
        let Some(conn) = conn.upgrade() else { return };
        let Some(msg) = msg else {
            // The connection is gone. Mark it dead first, so no new route lands on it, then cut
            // every route: their readers cannot know what was published meanwhile.
            conn.alive.store(false, Ordering::SeqCst);
            let all: Vec<Slot> = conn.routes().drain().flat_map(|(_, slots)| slots).collect();
            for slot in all {
                cut(slot, "the Redis pub/sub connection was lost; messages may have been missed".into());
            }
            tracing::warn!("the Redis pub/sub connection was lost");
            // The next subscribe dials a new connection: counted here, once per loss.
            metrics::counter!("twoplane_relay_reconnects_total", "connection" => "pubsub").increment(1);
            return;
        };
        let channel = msg.get_channel_name();
        let mut routes = conn.routes();
        let Some(slots) = routes.get_mut(channel) else { continue };
        let payload = msg.get_payload_bytes();
        let mut i = 0;
        while i < slots.len() {
            match slots[i].tx.try_send(payload.to_vec()) {
                Ok(()) => i += 1,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    let slot = slots.remove(i);
                    cut(slot, format!("the reader fell behind {channel} (its buffer is full)"));
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    slots.remove(i);
                }
            }
        }
        // An emptied channel stays subscribed until its routes' unsubscribe runs (or a new route
        // reuses it): unsubscribing here would race a concurrent subscribe.
        if slots.is_empty() {
            routes.remove(channel);
        }
    }
}
