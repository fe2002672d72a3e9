//! The AI SDK's UI message stream as the plane writes it (docs/ai-sdk.md, "Resuming"): a
//! subscription's second encoding beside the frames of docs/contract.md §5, chosen at join
//! ([`crate::Plane::subscribe_ui`]).
//!
//! Owns: [`UiLog`], a stream's one UI encoder (the message as its UI readers hold it at the log's
//! head), and [`UiFollow`] (the same encoding for a subscription that is not a hosted stream's
//! log: a relayed stream, `absent`). What a UI reader gets first, each frame's events and the end
//! follow the core's one rule ([`UiEvents`]); where a reader got to is the core's [`UiOutcome`].
//!
//! Guarantees:
//! - The chunks are the core's (`twoplane_core::ui`), in groups whose last event carries `id:` the
//!   message's length the group brings the reader to (`twoplane_core::ui::write_group`), so a
//!   `Last-Event-ID` is always a whole group's; the stream's `end` is its end chunks and
//!   `[DONE]`. A frame that changes nothing a reader sees (`open`, `durable`) is no event.
//! - Encoded once: a hosted stream with UI readers encodes each published frame once, with one
//!   [`UiLog`] kept in step with its log (created at a UI join from the stream's own message),
//!   and every UI reader writes those bytes.
//! - A `stale` or `absent` is no event either: it ends the subscription without `[DONE]`, and
//!   [`UiOutcome`] says where the reader got to, so its server can continue it (another
//!   subscription from there, or the store).

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use twoplane_core::message::{Message, MessageFrame};
use twoplane_core::ui::{UiEvents, UiOutcome};
use twoplane_core::Text;

use crate::sse::SseBatch;

/// A stream's UI encoder: the message at the log's head, as every UI reader holds it there.
pub(crate) struct UiLog {
    events: UiEvents,
}

impl UiLog {
    /// An encoder for a stream whose message is now `message`.
    pub fn new(message_id: &Text, message: Message) -> UiLog {
        UiLog { events: UiEvents::holding(message_id, message) }
    }

    /// The message at the log's head.
    pub fn message(&self) -> &Message {
        self.events.message()
    }

    /// The UI events of one published frame (empty for a frame no reader sees).
    pub fn encode(&mut self, frame: &MessageFrame) -> Bytes {
        let mut out = String::new();
        self.events.frame(&mut out, frame);
        Bytes::from(out)
    }
}

/// A UI reader over a subscription of frames (a relayed stream's, or `absent`): its own encoder,
/// fed frame by frame by the subscription that holds it. The replay it starts with is the frames up to the length the `open`
/// announced, folded, cut at what the reader holds.
pub(crate) struct UiFollow {
    id: Text,
    from: u64,
    fresh: bool,
    stage: Stage,
    outcome: UiOutcome,
}

enum Stage {
    /// Waiting for the `open`.
    Opening,
    /// Folding the replay up to `target`; `held` is the message at `held_at` (what the reader
    /// holds, clamped to the length) once reached.
    Joining { target: u64, held_at: u64, message: Message, held: Option<Message> },
    /// Following the tail.
    Live(UiEvents),
    /// The terminal was handed out.
    Done,
}

impl UiFollow {
    pub fn new(id: Text, from: u64, fresh: bool) -> UiFollow {
        UiFollow { id, from, fresh, stage: Stage::Opening, outcome: UiOutcome::default() }
    }

    pub fn outcome(&self) -> UiOutcome {
        self.outcome
    }

    /// The next events of the frames `next` polls, everything available now up to about
    /// `max_bytes`; a terminal batch (the `end` with `[DONE]`, or nothing for a
    /// `stale`/`absent`) ends it.
    pub fn poll_sse(
        &mut self,
        cx: &mut Context<'_>,
        max_bytes: usize,
        next: &mut dyn FnMut(&mut Context<'_>) -> Poll<Option<Arc<MessageFrame>>>,
    ) -> Poll<Option<SseBatch>> {
        if matches!(self.stage, Stage::Done) {
            return Poll::Ready(None);
        }
        let mut out = String::new();
        let mut frames = 0;
        loop {
            if out.len() >= max_bytes {
                break;
            }
            let frame = match next(cx) {
                Poll::Ready(Some(frame)) => frame,
                // A source that ends without a terminal ends like a `stale`.
                Poll::Ready(None) => Arc::new(MessageFrame::Absent),
                Poll::Pending => break,
            };
            frames += 1;
            if self.step(&frame, &mut out) {
                self.stage = Stage::Done;
                return Poll::Ready(Some(SseBatch { bytes: Bytes::from(out), frames, terminal: true }));
            }
        }
        if out.is_empty() {
            return Poll::Pending;
        }
        Poll::Ready(Some(SseBatch { bytes: Bytes::from(out), frames, terminal: false }))
    }

    /// Take one frame; `true` once it was the terminal.
    fn step(&mut self, frame: &Arc<MessageFrame>, out: &mut String) -> bool {
        let terminal = frame.is_terminal();
        match &mut self.stage {
            Stage::Opening => match &**frame {
                MessageFrame::Open { seq, .. } => {
                    let held_at = self.from.min(*seq);
                    let held = (held_at == 0).then(Message::new);
                    self.stage = Stage::Joining { target: *seq, held_at, message: Message::new(), held };
                    self.try_joined(out);
                    false
                }
                _ => terminal,
            },
            Stage::Joining { held_at, message, held, .. } => {
                if !terminal {
                    let (before, after) = frame.cut_at(*held_at);
                    for piece in before.into_iter().chain(after) {
                        if message.apply(&piece).is_ok() && held.is_none() && message.len() >= *held_at {
                            *held = Some(message.clone());
                        }
                    }
                    self.try_joined(out);
                    return false;
                }
                // Ended within the replay: the replay as it stands, then the end.
                self.join_now(out);
                self.live(frame, out)
            }
            Stage::Live(_) => self.live(frame, out),
            Stage::Done => true,
        }
    }

    /// A live frame's events; `true` for the terminal.
    fn live(&mut self, frame: &MessageFrame, out: &mut String) -> bool {
        let Stage::Live(events) = &mut self.stage else { return frame.is_terminal() };
        let before = out.len();
        let ended = events.frame(out, frame);
        if out.len() > before {
            self.outcome.at = events.at();
        }
        self.outcome.ended = ended;
        frame.is_terminal()
    }

    /// Once the replay reached the `open`'s length, its events.
    fn try_joined(&mut self, out: &mut String) {
        if let Stage::Joining { target, message, .. } = &self.stage {
            if message.len() >= *target {
                self.join_now(out);
            }
        }
    }

    fn join_now(&mut self, out: &mut String) {
        let Stage::Joining { message, held, .. } = std::mem::replace(&mut self.stage, Stage::Done) else { return };
        let held = held.unwrap_or_else(|| message.clone());
        let events = UiEvents::join(out, &self.id, held, Some(&message), self.fresh);
        self.outcome.at = events.at();
        self.outcome.started = true;
        self.stage = Stage::Live(events);
    }
}
