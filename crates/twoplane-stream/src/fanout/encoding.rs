//! The SSE and UI encodings a shard's subscribers read, and the writes assembled from them.
//!
//! A subscriber reads frames (`Arc<MessageFrame>`, nothing encoded), SSE bytes, or UI events
//! ([`Reads`]). The SSE bytes of a log frame are kept in its entry once made (docs/contract.md
//! §5: `id:` then `data:`, from the core's encoder, so the bytes are exactly what encoding the
//! frame per subscriber would give); its UI events come with it from the stream (`ui_log.rs`).
//!
//! Guarantees:
//! - Encoded once: a log frame is encoded when it enters the log if an SSE reader is attached to
//!   the stream (once for all its shards, by the stream; otherwise here, while this shard has an
//!   SSE reader: [`Encoder::entering`]), else the first SSE reader of the shard to reach it
//!   encodes it and the log keeps the result; every SSE reader's write reuses those bytes.
//! - One write per drain: one owed event is handed over as the shared `Bytes` itself, several
//!   are concatenated into one buffer, or, for direct delivery, kept apart as the shared bytes
//!   ([`Batch`]), so nothing is copied under the lock.
//! - A UI reader gets its replay's events, then the UI events of each log frame it passes (a
//!   frame no UI reader sees writes nothing), and never its own overflow `stale` (no event);
//!   its [`UiOutcome`] says how far it got and whether it saw the end.
//! - The reader counts ([`Encoder::readers`]) count each attached slot once, by what it reads.

use bytes::Bytes;
use twoplane_core::message::MessageFrame;
use twoplane_core::ui::UiOutcome;

use super::log::{Cursor, Log};
use super::wake::Drained;
use crate::sse::{encode, SseEvents};

/// What a slot reads.
pub(super) enum Reads {
    /// Frames, until it first takes SSE bytes.
    Frames,
    /// SSE bytes (counted in [`Encoder::readers`]).
    Sse,
    /// UI events, not frames (counted in [`Encoder::readers`]). Boxed: every slot holds a
    /// `Reads`, and most readers are not UI readers.
    Ui(Box<UiCursor>),
}

/// A UI reader's place: its replay's events until taken, and where it got to.
pub(super) struct UiCursor {
    prefix: Option<Bytes>,
    outcome: UiOutcome,
}

impl Reads {
    /// A UI reader's replay events are still owed.
    pub fn prefix_owed(&self) -> bool {
        matches!(self, Reads::Ui(ui) if ui.prefix.is_some())
    }

    /// Where a UI reader got to (`None` for any other).
    pub fn ui_outcome(&self) -> Option<UiOutcome> {
        match self {
            Reads::Ui(ui) => Some(ui.outcome),
            _ => None,
        }
    }
}

/// A shard's encoding state: how many of its slots read SSE bytes and UI events, and the scratch
/// the encoder writes into.
#[derive(Default)]
pub(super) struct Encoder {
    /// Attached slots that read SSE bytes: while there is one, frames are encoded as they enter.
    sse_readers: usize,
    /// Attached slots that read UI events (the stream encodes them while there is one).
    ui_readers: usize,
    /// Reused for encoding, so each encoded frame is one exact-size allocation.
    scratch: String,
}

impl Encoder {
    /// Attached slots that read SSE bytes, and those that read UI events.
    pub fn readers(&self) -> (usize, usize) {
        (self.sse_readers, self.ui_readers)
    }

    /// What a new UI reader reads: its replay's events, `prefix`, which bring it to the
    /// message's length `at`, then the UI events of every frame published from now on.
    pub fn attach_ui(&mut self, prefix: Bytes, at: u64) -> Reads {
        self.ui_readers += 1;
        let prefix = (!prefix.is_empty()).then_some(prefix);
        Reads::Ui(Box::new(UiCursor { prefix, outcome: UiOutcome { at, ended: false, started: true } }))
    }

    /// A slot leaving.
    pub fn detach(&mut self, reads: &Reads) {
        match reads {
            Reads::Frames => {}
            Reads::Sse => self.sse_readers -= 1,
            Reads::Ui(_) => self.ui_readers -= 1,
        }
    }

    /// Mark a frame reader as an SSE reader (counted once), so later frames are encoded as they
    /// enter the log. A UI reader stays one.
    pub fn read_sse(&mut self, reads: &mut Reads) {
        if let Reads::Frames = reads {
            *reads = Reads::Sse;
            self.sse_readers += 1;
        }
    }

    /// The SSE bytes of `frame` as it enters the log: the caller's (one encoding for every shard
    /// of a stream), or encoded here while this shard has an SSE reader.
    pub fn entering(&mut self, frame: &MessageFrame, sse: Option<Bytes>) -> Option<Bytes> {
        sse.or_else(|| (self.sse_readers > 0).then(|| encode(&mut self.scratch, frame)))
    }

    /// Add what `cursor` owes to `batch` as events (`reads` says which), until the batch reaches
    /// `max_bytes` or nothing is owed. A replay's text is cut into pieces of at most `max_bytes`.
    /// Marks a frame reader as an SSE reader.
    pub fn fill(&mut self, batch: &mut Batch, log: &mut Log, cursor: &mut Cursor, reads: &mut Reads, max_bytes: usize) {
        self.read_sse(reads);
        while batch.len() < max_bytes {
            if let Reads::Ui(ui) = reads {
                // A UI reader: its replay's events, then the log's UI events; its own `stale`
                // (an overflow) is no event, and its outcome says where it got to.
                if let Some(prefix) = ui.prefix.take() {
                    batch.push_owned(prefix);
                } else if cursor.terminal.take().is_some() {
                    // Nothing to write, and nothing after it.
                } else if let Some(entry) = log.advance(cursor) {
                    // A frame no UI reader sees (`open`, `durable`) writes nothing.
                    if let Some(events) = entry.ui.as_ref().filter(|events| !events.is_empty()) {
                        batch.push_shared(events);
                        ui.outcome.at = entry.frame.span().map_or(ui.outcome.at, |(_, seq)| seq);
                    }
                    if entry.frame.is_terminal() {
                        ui.outcome.ended = matches!(&*entry.frame, MessageFrame::End { .. });
                    }
                } else {
                    break;
                }
                continue;
            }
            if let Some(f) = cursor.replay.pop(max_bytes) {
                batch.push_owned(encode(&mut self.scratch, &f));
            } else if let Some(t) = cursor.terminal.take() {
                batch.push_owned(encode(&mut self.scratch, &t));
            } else if let Some(entry) = log.advance(cursor) {
                let scratch = &mut self.scratch;
                batch.push_shared(entry.sse.get_or_insert_with(|| encode(scratch, &entry.frame)));
            } else {
                break;
            }
        }
    }
}

/// One SSE write's worth of a subscriber's frames.
pub(crate) struct SseDrained {
    /// The events, in order; `None` when nothing was available.
    pub bytes: Option<Bytes>,
    pub frames: u64,
    pub state: Drained,
}

/// A write being assembled: one event is passed on as the shared bytes themselves; more are
/// copied into one buffer, or (for direct delivery) kept apart as the shared bytes.
#[derive(Default)]
pub(super) struct Batch {
    single: Option<Bytes>,
    joined: Vec<u8>,
    apart: bool,
    rest: Vec<Bytes>,
    len: usize,
    frames: u64,
}

impl Batch {
    pub fn apart() -> Batch {
        Batch { apart: true, ..Batch::default() }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Events in it.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    fn push_shared(&mut self, event: &Bytes) {
        self.frames += 1;
        self.len += event.len();
        if self.frames == 1 {
            self.single = Some(event.clone());
            return;
        }
        if self.apart {
            self.rest.push(event.clone());
            return;
        }
        if let Some(first) = self.single.take() {
            self.joined.reserve(first.len() + 2 * event.len());
            self.joined.extend_from_slice(&first);
        }
        self.joined.extend_from_slice(event);
    }

    fn push_owned(&mut self, event: Bytes) {
        self.push_shared(&event);
    }

    pub fn finish(self) -> Option<Bytes> {
        match self.frames {
            0 => None,
            1 => self.single,
            _ => Some(Bytes::from(self.joined)),
        }
    }

    pub fn finish_apart(self, terminal: bool) -> Option<SseEvents> {
        let first = self.single?;
        Some(SseEvents::new(first, self.rest, self.len, terminal))
    }
}
