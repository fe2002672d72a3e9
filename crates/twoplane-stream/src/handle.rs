//! The producer's handle on one hosted stream: push text, flush, pump a source, seal.
//!
//! Guarantees:
//! - Every call goes to the one hosted stream (`hosted/`), whose guarantees it inherits:
//!   pushes fan out at once in order, flushes and seals are honest (they resolve only when the
//!   text landed).
//! - `pump` stops at once when a reader cancels, dropping the source (which aborts the request
//!   behind it).
//! - A message with parts (docs/contract.md §8): `start_part` opens the next part and returns
//!   its number, `push_part` grows a part's body, `end_part`, `set_part`, `meta`, `finish` and
//!   `transient` append one structural event each. Every call is checked by the core's part
//!   rules first and changes nothing when refused; `push` is `push_part(0, ..)`, so a producer
//!   that never starts a part is today's single-text stream, byte for byte.
//! - Dropping the handle without a seal seals the stream `interrupted`: a producer that died
//!   must not leave readers waiting.

use std::pin::pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use twoplane_core::message::{Attrs, Event};
use twoplane_core::{StreamStatus, Text};

use crate::error::{PlaneError, PlaneErrorKind};
use crate::hosted::{wait_seal, FlushWait, LiveStream, Position, Refused, Seal};

/// The producer's handle on one stream. Dropping it without a seal seals the stream
/// `interrupted` (a producer that died must not leave readers waiting).
pub struct StreamHandle {
    stream: Arc<LiveStream>,
}

impl StreamHandle {
    pub(crate) fn new(stream: Arc<LiveStream>) -> StreamHandle {
        StreamHandle { stream }
    }

    pub fn stream_id(&self) -> &str {
        &self.stream.id
    }

    /// Produced length in the coordinate: code units of text, plus one per structural event.
    pub fn seq(&self) -> u64 {
        self.stream.seq()
    }

    /// Code units the store confirmed; never more than [`StreamHandle::seq`].
    pub fn durable_seq(&self) -> u64 {
        self.stream.durable_seq()
    }

    /// Whether a reader cancelled: a checkpoint read the store's cancel flag back, or
    /// [`crate::Plane::cancel`] was called here.
    pub fn cancelled(&self) -> bool {
        self.stream.cancelled()
    }

    /// Whether a seal was requested (by `close`, `fail`, `drain` or a dropped handle).
    pub fn is_sealed(&self) -> bool {
        self.stream.is_sealing_or_ended()
    }

    /// Append a delta: fanned out to subscribers now, checkpointed on policy.
    pub fn push(&self, text: &str) -> Result<(), PlaneError> {
        self.stream.push(Text::from(text))
    }

    /// [`StreamHandle::seq`] and [`StreamHandle::durable_seq`] read together.
    pub fn position(&self) -> Position {
        self.stream.position()
    }

    /// A producer's append in one step: refused (appending nothing) when a reader cancelled,
    /// the stream is sealing or ended, or `offset` (if given) is not [`StreamHandle::seq`];
    /// either way, with where the stream stands after it, read together with the append.
    pub fn push_checked(&self, text: &str, offset: Option<u64>) -> Result<Position, Refused> {
        self.stream.push_checked(0, Text::from(text), offset)
    }

    /// Append raw UTF-16 code units (text that came from JavaScript: a delta may end in half a
    /// surrogate pair, and unpaired surrogates are kept as they are).
    pub fn push_units(&self, units: &[u16]) -> Result<(), PlaneError> {
        self.stream.push(Text::from_slice(units))
    }

    /// Start the next part of the message, of kind `kind` (`reasoning`, `tool-<name>`, `text`,
    /// `data-<name>`, ...) with the attributes `value`; returns its number (parts are numbered
    /// in the order they start; part 0, a text, always exists).
    pub fn start_part(&self, kind: &str, value: Attrs) -> Result<u32, PlaneError> {
        self.stream.start_part(Text::from(kind), value)
    }

    /// Append `text` to part `part`'s body.
    pub fn push_part(&self, part: u32, text: &str) -> Result<(), PlaneError> {
        self.stream.push_part(part, Text::from(text))
    }

    /// Append raw UTF-16 code units to part `part`'s body (see [`StreamHandle::push_units`]).
    pub fn push_part_units(&self, part: u32, units: &[u16]) -> Result<(), PlaneError> {
        self.stream.push_part(part, Text::from_slice(units))
    }

    /// Part `part` receives no more body; `value` merges into its attributes.
    pub fn end_part(&self, part: u32, value: Attrs) -> Result<(), PlaneError> {
        self.stream.event(Event::End { part, value }).map(drop)
    }

    /// Merge `value` into part `part`'s attributes (a tool's output, an approval, a data part
    /// replaced: a later member replaces an earlier one of the same name).
    pub fn set_part(&self, part: u32, value: Attrs) -> Result<(), PlaneError> {
        self.stream.event(Event::Set { part, value }).map(drop)
    }

    /// Merge `value` into the message's metadata.
    pub fn meta(&self, value: Attrs) -> Result<(), PlaneError> {
        self.stream.event(Event::Meta { value }).map(drop)
    }

    /// The model's finish reason (`stop`, `length`, `tool-calls`, ...).
    pub fn finish(&self, reason: &str) -> Result<(), PlaneError> {
        self.stream.event(Event::Finish { reason: Text::from(reason) }).map(drop)
    }

    /// A live-only part (a transient data part): delivered to live readers, never stored.
    pub fn transient(&self, kind: Option<&str>, value: Attrs) -> Result<(), PlaneError> {
        self.stream.event(Event::Transient { kind: kind.map(Text::from), value }).map(drop)
    }

    /// Append one structural event as built ([`Event`]); `Event::Start` must name the next part.
    pub fn event(&self, event: Event) -> Result<(), PlaneError> {
        self.stream.event(event).map(drop)
    }

    /// How many parts have started (part 0 included).
    /// The message this stream made so far (`None` when a callback plane trimmed its text).
    pub fn message(&self) -> Option<twoplane_core::message::Message> {
        self.stream.message()
    }

    pub fn part_count(&self) -> usize {
        self.stream.part_count()
    }

    /// Resolve once the store holds everything produced so far (the ordering primitive), with
    /// the durable length; rejected when that text did not land.
    pub async fn flush(&self) -> Result<u64, PlaneError> {
        let rx = match self.stream.flush_waiter()? {
            FlushWait::Done(durable) => return Ok(durable),
            FlushWait::Pending(rx) => rx,
        };
        self.stream.kick.notify_one();
        rx.await.unwrap_or_else(|_| Err(PlaneError::new(PlaneErrorKind::Shutdown, "the plane stopped")))
    }

    /// Push every delta of `deltas`, stopping early (and dropping the source, which aborts the
    /// request behind it) once a reader cancels (see [`StreamHandle::cancelled`]).
    pub async fn pump<S>(&self, deltas: S) -> Result<(), PlaneError>
    where
        S: Stream,
        S::Item: AsRef<str>,
    {
        let mut deltas = pin!(deltas);
        loop {
            let cancelled = self.stream.cancel_signal.notified();
            let mut cancelled = pin!(cancelled);
            cancelled.as_mut().enable();
            if self.cancelled() {
                return Ok(());
            }
            tokio::select! {
                biased;
                _ = &mut cancelled => return Ok(()),
                next = deltas.next() => match next {
                    None => return Ok(()),
                    Some(delta) => self.push(delta.as_ref())?,
                },
            }
        }
    }

    /// Seal `complete`, or `cancelled` when a reader asked the producer to stop. Resolves when
    /// the seal landed; rejected (the stream still ends) when it did not.
    pub async fn close(&self) -> Result<(), PlaneError> {
        let status = if self.cancelled() { StreamStatus::Cancelled } else { StreamStatus::Complete };
        self.seal(Seal { status, error: None }).await
    }

    /// Seal with `status` on the producer's own account (a run it aborted: `cancelled`; one that
    /// went away: `interrupted`), with `error` as the stream's error text when there is one.
    pub async fn close_as(&self, status: StreamStatus, error: Option<&str>) -> Result<(), PlaneError> {
        self.seal(Seal { status, error: error.map(str::to_owned) }).await
    }

    /// Seal `error` with `error` as the message.
    pub async fn fail(&self, error: &str) -> Result<(), PlaneError> {
        self.seal(Seal { status: StreamStatus::Error, error: Some(error.to_owned()) }).await
    }

    pub(crate) async fn seal(&self, seal: Seal) -> Result<(), PlaneError> {
        wait_seal(self.stream.request_seal(seal)).await
    }
}

impl Drop for StreamHandle {
    fn drop(&mut self) {
        if !self.stream.is_sealing_or_ended() {
            tracing::debug!(stream_id = ?self.stream.id, "stream handle dropped unsealed: sealing it interrupted");
            drop(self.stream.request_seal(Seal::interrupted()));
        }
    }
}

impl std::fmt::Debug for StreamHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamHandle").field("stream_id", &self.stream.id).finish()
    }
}
