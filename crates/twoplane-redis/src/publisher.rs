//! The producer side both adapters share: `publish` hands frames to one background writer.
//!
//! The plane calls `publish` under the stream's lock, so it must cost next to nothing and never
//! wait: it tags the frame with its generation, clones it into a bounded queue and returns. A
//! full queue (Redis down for longer than the queue lasts) drops the frame and says so; readers
//! then meet the hole and fall back to the store, which is correct, just not live.
//!
//! The writer drains the queue in batches, turns each batch into one pipeline (pub/sub or
//! Streams commands, see [`Encode`]) and retries a batch that failed for a transport reason
//! (a restart, a dropped connection) for up to `publish_retry_ms`, in order, before giving it up.
//! A retried batch may land twice when only its acknowledgement was lost; that is an exact
//! replay, which readers skip. One writer per adapter keeps every stream's frames in the order
//! the producer made them.
//!
//! `flush` puts a marker in the same queue and waits for the writer to reach it: everything
//! queued before it has then been written or given up (and reported). The plane's drain uses it so
//! that a SIGTERM does not exit with the `end` frames of the streams it just sealed still queued.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::RetryMethod;
use tokio::sync::{mpsc, oneshot};
use twoplane_core::message::MessageFrame as Frame;
use twoplane_runtime::Backoff;
use twoplane_stream::{redact_url, RelayError, RelayErrorHook, RelayErrorInfo, RelayPhase};

use crate::envelope::new_generation;
use crate::error::RedisRelayError;
use crate::options::RedisRelayOptions;
use twoplane_runtime::lock;

/// A failed write's retries: 50 ms, doubling, at most 1 s apart, until the retry budget
/// (`retry_for`) would be overrun.
const WRITE_RETRY: Backoff = Backoff::new(Duration::from_millis(50), u32::MAX).with_cap(Duration::from_secs(1));

/// Frames written per pipeline at most.
const BATCH: usize = 512;

/// One frame on its way out.
pub(crate) struct Outgoing {
    pub stream_id: Arc<str>,
    pub gen: Arc<str>,
    /// The first frame of its generation (the log starts the stream's key afresh).
    pub fresh: bool,
    pub frame: Frame,
}

/// How a batch becomes Redis commands.
pub(crate) trait Encode: Send + Sync + 'static {
    fn encode(&self, batch: &[Outgoing], pipe: &mut redis::Pipeline);
}

/// What the writer's queue carries: frames, and flush markers answered in queue order.
enum Item {
    Frame(Outgoing),
    Flush(oneshot::Sender<()>),
}

pub(crate) struct Publisher {
    tx: mpsc::Sender<Item>,
    /// The live generation of each stream id produced here; removed at its `end`.
    gens: Mutex<HashMap<String, Arc<str>>>,
    capacity: usize,
}

impl Publisher {
    pub fn spawn(conn: ConnectionManager, encoder: Arc<dyn Encode>, options: &RedisRelayOptions) -> Publisher {
        let (tx, rx) = mpsc::channel(options.publish_queue);
        let writer = Writer {
            conn,
            encoder,
            retry_for: Duration::from_millis(options.publish_retry_ms),
            on_error: options.on_error.clone(),
        };
        tokio::spawn(writer.run(rx));
        Publisher { tx, gens: Mutex::new(HashMap::new()), capacity: options.publish_queue }
    }

    pub fn publish(&self, stream_id: &str, frame: &Frame) -> Result<(), RelayError> {
        // `stale` is a fenced producer's last frame (its row was swept under it): readers on
        // other instances must hear it too, and it ends the generation like `end`.
        let last = matches!(frame, Frame::End { .. } | Frame::Stale { .. });
        // A message's structural events (docs/contract.md §8) travel like its chunks.
        if !last && !matches!(frame, Frame::Chunk { .. } | Frame::Durable { .. } | Frame::Event { .. }) {
            return Err(Box::new(RedisRelayError::new(format!(
                "only chunk, durable, end, stale and a message's structural frames are relayed, not {}",
                frame.kind().as_str()
            ))));
        }
        // The generation is decided here, in the producer's order, whether or not the frame
        // then fits in the queue: a dropped `end` must still close its generation, or a later
        // production of the same id would continue it.
        let (gen, fresh) = {
            let mut gens = lock(&self.gens);
            let found = gens.get(stream_id).cloned();
            let (gen, fresh) = match found {
                Some(gen) => (gen, false),
                None => {
                    let gen: Arc<str> = new_generation().into();
                    gens.insert(stream_id.to_owned(), gen.clone());
                    (gen, true)
                }
            };
            if last {
                gens.remove(stream_id);
            }
            (gen, fresh)
        };
        let item = Item::Frame(Outgoing { stream_id: stream_id.into(), gen, fresh, frame: frame.clone() });
        let sent = self.tx.try_send(item);
        // The writer's lag: frames handed to the relay that have not reached Redis yet.
        metrics::gauge!("twoplane_relay_queued_frames").set((self.capacity - self.tx.capacity()) as f64);
        sent.map_err(|e| -> RelayError {
            let why = match e {
                mpsc::error::TrySendError::Full(_) => format!(
                    "the Redis writer is {} frames behind: a {} frame was dropped, and readers on other instances \
                     will fall back to the store",
                    self.capacity,
                    frame.kind().as_str()
                ),
                mpsc::error::TrySendError::Closed(_) => "the Redis writer has stopped".to_owned(),
            };
            Box::new(RedisRelayError::new(why))
        })
    }

    /// Wait until the writer has handled every frame queued before this call. A full queue is
    /// waited on (the marker must go behind the frames, not be dropped); the caller bounds the
    /// whole wait.
    pub async fn flush(&self) -> Result<(), RelayError> {
        let (done, reached) = oneshot::channel();
        let stopped = || -> RelayError { Box::new(RedisRelayError::new("the Redis writer has stopped")) };
        self.tx.send(Item::Flush(done)).await.map_err(|_| stopped())?;
        reached.await.map_err(|_| stopped())
    }
}

struct Writer {
    conn: ConnectionManager,
    encoder: Arc<dyn Encode>,
    retry_for: Duration,
    on_error: Option<RelayErrorHook>,
}

impl Writer {
    async fn run(mut self, mut rx: mpsc::Receiver<Item>) {
        // Ends when the adapter (the only sender) is dropped.
        while let Some(first) = rx.recv().await {
            let mut batch = Vec::new();
            // A marker met while batching is answered once the frames before it are written.
            let mut flush = None;
            let mut next = Some(first);
            while let Some(item) = next.take() {
                match item {
                    Item::Frame(frame) => batch.push(frame),
                    Item::Flush(done) => {
                        flush = Some(done);
                        // A marker closes the batch: what comes after it is not owed to it.
                        break;
                    }
                }
                if batch.len() < BATCH {
                    next = rx.try_recv().ok();
                }
            }
            if !batch.is_empty() {
                let mut pipe = redis::pipe();
                self.encoder.encode(&batch, &mut pipe);
                if let Err(e) = self.write(&pipe).await {
                    self.report(&batch, &e);
                }
                metrics::gauge!("twoplane_relay_queued_frames").set(rx.len() as f64);
            }
            if let Some(done) = flush {
                // The flusher may have given up waiting; nothing to do then.
                let _ = done.send(());
            }
        }
    }

    async fn write(&mut self, pipe: &redis::Pipeline) -> Result<(), RedisRelayError> {
        let started = Instant::now();
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let err = match pipe.exec_async(&mut self.conn).await {
                Ok(()) => {
                    if attempts > 1 {
                        tracing::info!(attempts, "the Redis writer recovered");
                    }
                    return Ok(());
                }
                Err(e) => e,
            };
            let transient = !matches!(err.retry_method(), RetryMethod::NoRetry);
            let delay = WRITE_RETRY.delay(attempts);
            if !transient || started.elapsed() + delay > self.retry_for {
                return Err(RedisRelayError::redis(
                    format!("writing to Redis failed after {attempts} attempt(s); those frames were dropped"),
                    err,
                ));
            }
            tracing::debug!(error = %err, attempts, "a Redis write failed; retrying");
            tokio::time::sleep(delay).await;
        }
    }

    fn report(&self, batch: &[Outgoing], err: &RedisRelayError) {
        let mut ids: Vec<&str> = batch.iter().map(|o| &*o.stream_id).collect();
        ids.sort_unstable();
        ids.dedup();
        for stream_id in ids {
            let info = RelayErrorInfo { stream_id, phase: RelayPhase::Publish };
            match &self.on_error {
                Some(hook) => {
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(info, err))).is_err() {
                        tracing::error!(stream_id, "the relay error hook panicked");
                    }
                }
                None => tracing::warn!(stream_id, error = %err, "relay publish failed"),
            }
        }
    }
}

/// A client and a reconnecting, multiplexed command connection, with every wait bounded.
pub(crate) async fn connect(
    url: &str,
    options: &RedisRelayOptions,
) -> Result<(redis::Client, ConnectionManager), RedisRelayError> {
    // The URL may carry a password: only its redacted form goes into a message.
    let shown = redact_url(url);
    let client = crate::tls::client(url, options.tls_ca_file.as_deref())
        .map_err(|e| RedisRelayError::redis(format!("bad Redis URL {shown}"), e))?;
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(options.connect_timeout()))
        .set_response_timeout(Some(options.connect_timeout()))
        // Few, quick reconnect attempts: the writer and the readers have their own retry and
        // timeout policy on top, and a long internal backoff would only hide an outage.
        .set_number_of_retries(2)
        .set_min_delay(Duration::from_millis(50))
        .set_max_delay(Duration::from_millis(500));
    let conn = tokio::time::timeout(
        options.connect_timeout().saturating_mul(2),
        ConnectionManager::new_with_config(client.clone(), config),
    )
    .await
    .map_err(|_| RedisRelayError::new(format!("connecting to Redis at {shown} timed out")))?
    .map_err(|e| RedisRelayError::redis(format!("connecting to Redis at {shown}"), e))?;
    Ok((client, conn))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A password in the URL never reaches an adapter error (which the plane logs).
    #[tokio::test]
    async fn connection_errors_do_not_show_the_password() {
        let options = RedisRelayOptions::default();
        for url in ["nope://user:hunter2@127.0.0.1:1/", "redis://:hunter2@127.0.0.1:1/"] {
            let Err(e) = connect(url, &options).await else { panic!("{url} connected") };
            let shown = e.to_string();
            assert!(!shown.contains("hunter2"), "{shown}");
            assert!(shown.contains(":***@127.0.0.1:1"), "{shown}");
        }
    }
}
