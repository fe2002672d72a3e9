//! The server-sent events the plane hands a server, and the one way it encodes them.
//!
//! Owns: [`SseBatch`] (what a subscription's owner pulls, [`crate::Subscription::poll_sse`]),
//! [`SseEvents`], [`SseSink`] and [`Delivered`] (what a stream's writer task pushes to a
//! connection the server owns: direct delivery, see `hosted/writers.rs`), and the encoding of
//! frames into events with the core's encoder.
//!
//! Guarantees:
//! - Every event is exactly what `twoplane_core::message::encode_message_event_into` writes for its frame
//!   (docs/contract.md §5), whichever way it was produced: encoded once in a shard's log and
//!   shared, or encoded here for a frame that never entered a log.
//! - [`encode`] makes one allocation of exactly the event's size, so a log that keeps the bytes
//!   of thousands of frames keeps no slack.
//! - An [`SseEvents`] holds at least one event; only the fan-out builds one.
//!
//! It sits at the bottom of the crate: it knows frames and bytes, nothing of streams or tasks.

use std::sync::Arc;

use bytes::Bytes;
use twoplane_core::message::encode_message_event_into;
use twoplane_core::message::MessageFrame;

/// One write's worth of server-sent events (see [`crate::Subscription::poll_sse`]).
#[derive(Clone, Debug)]
pub struct SseBatch {
    /// The events, in order, each exactly as `twoplane_core::message::encode_message_event_into`
    /// writes it (a single-text stream's events are today's six-frame events, byte for byte).
    pub bytes: Bytes,
    /// How many frames they carry.
    pub frames: u64,
    /// The last of them is the terminal frame: nothing follows.
    pub terminal: bool,
}

/// One direct delivery: whole SSE events, in order, each the bytes the stream's log encoded
/// once for every reader (not copied into one buffer, so a sink writes them with one vectored
/// write).
#[derive(Clone, Debug)]
pub struct SseEvents {
    first: Bytes,
    rest: Vec<Bytes>,
    len: usize,
    /// The last event is the terminal frame: nothing follows.
    pub terminal: bool,
}

impl SseEvents {
    /// `first` then `rest`, `len` bytes in all (the fan-out counts them as it collects them).
    pub(crate) fn new(first: Bytes, rest: Vec<Bytes>, len: usize, terminal: bool) -> SseEvents {
        SseEvents { first, rest, len, terminal }
    }

    /// The events, in order (at least one).
    pub fn events(&self) -> impl Iterator<Item = &Bytes> {
        std::iter::once(&self.first).chain(&self.rest)
    }

    /// How many events (one per frame).
    pub fn frames(&self) -> u64 {
        1 + self.rest.len() as u64
    }

    /// Their total length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: a delivery holds at least one event.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The events joined in one buffer (the log's own bytes when there is one event).
    pub fn to_bytes(&self) -> Bytes {
        if self.rest.is_empty() {
            return self.first.clone();
        }
        let mut joined = Vec::with_capacity(self.len);
        for event in self.events() {
            joined.extend_from_slice(event);
        }
        Bytes::from(joined)
    }
}

/// Where a directly delivered subscription's events go: a connection the server owns.
pub trait SseSink: Send + Sync + 'static {
    /// Write `events` now, without waiting. Called by the stream's writer task only, one
    /// delivery at a time, in order.
    fn deliver(&self, events: &SseEvents) -> Delivered;

    /// Direct delivery is over (the sink kept bytes, or the terminal went out): the owner takes
    /// the subscription back, writes what the sink kept, then polls the subscription itself.
    fn resume(&self);
}

/// What a sink did with a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivered {
    /// Every byte was written.
    Written,
    /// Some or all of it was kept, to be written by the sink's owner.
    Held,
}

/// One frame as one SSE event (the core's encoder), in an allocation of exactly its size.
pub(crate) fn encode(scratch: &mut String, frame: &MessageFrame) -> Bytes {
    scratch.clear();
    encode_message_event_into(scratch, frame);
    let bytes = Bytes::copy_from_slice(scratch.as_bytes());
    if scratch.capacity() > SCRATCH_KEPT {
        // One huge frame (a tool's whole output, say) must not leave a shard holding its size
        // for the stream's life; ordinary frames fit well inside what is kept.
        *scratch = String::new();
    }
    bytes
}

/// The most scratch capacity [`encode`] keeps between frames.
const SCRATCH_KEPT: usize = 16 * 1024;

/// Encode frames from `next` into one batch, stopping after a terminal or at `max_bytes`.
pub(crate) fn encode_batch(next: &mut dyn FnMut() -> Option<Arc<MessageFrame>>, max_bytes: usize) -> Option<SseBatch> {
    let mut out = String::new();
    let mut frames = 0;
    let mut terminal = false;
    while !terminal && (frames == 0 || out.len() < max_bytes) {
        let Some(frame) = next() else { break };
        encode_message_event_into(&mut out, &frame);
        frames += 1;
        terminal = frame.is_terminal();
    }
    (frames > 0).then(|| SseBatch { bytes: Bytes::from(out), frames, terminal })
}

#[cfg(test)]
mod tests {
    use super::*;
    use twoplane_core::Text;

    #[test]
    fn a_huge_frame_leaves_no_huge_scratch() {
        let mut scratch = String::new();
        let small = MessageFrame::chunk(0, 0, 0, Text::from("hello")).unwrap();
        let bytes = encode(&mut scratch, &small);
        assert!(bytes.ends_with(b"\n\n"));
        let kept = scratch.capacity();
        assert!(kept > 0 && kept <= SCRATCH_KEPT);
        let huge = MessageFrame::chunk(5, 0, 5, Text::from("x".repeat(1 << 20).as_str())).unwrap();
        let bytes = encode(&mut scratch, &huge);
        assert!(bytes.len() > 1 << 20);
        assert!(scratch.capacity() <= SCRATCH_KEPT, "kept {} bytes of scratch", scratch.capacity());
    }
}
