//! The reader of a message (docs/contract.md §8, with the rules of §4): it accumulates the list
//! of parts and reports every accepted frame as one change.
//!
//! [`MessageReaderCore`] decides from numbers and holds no text, for bindings: the caller keeps
//! the parts and applies the [`MessageAction`] (splice a part's body at `at`, add a part, merge a
//! value). [`MessageReader`] is the same machine holding the [`Message`], for Rust callers. Both
//! stop for good on `end`, `stale`, `absent`, an `open` of another stream, a gap (in the message
//! or in a body) and anything malformed, as the text reader does; the resume offset is the
//! length of what is held.

use super::fold::Message;
use super::frame::{FrameNumbers, MessageFrame, MessageKind};
use super::rules::{Breach, Decision, Tally};
use crate::reader::{Reader, ReaderAction, ReaderInput, StopReason};
use crate::text::Text;

/// What to do for one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageAction {
    Ignore,
    /// Part `part`'s body becomes `body[..at] ++ text`.
    Splice {
        part: u32,
        at: u64,
    },
    Stop(StopReason),
    /// Part `part` starts, with the frame's kind and value.
    Start {
        part: u32,
    },
    /// Part `part` ended; merge the frame's value into its attributes.
    End {
        part: u32,
    },
    /// Merge the frame's value into part `part`'s attributes.
    Set {
        part: u32,
    },
    /// Merge the frame's value into the message's metadata.
    Meta,
    /// The frame's reason is the finish reason.
    Finish,
    /// A live-only part: show it, never keep it.
    Transient,
}

impl MessageAction {
    /// Stable numeric codes: 0 ignore, 1 splice, 2 stop (the text reader's), then 3 start, 4 end,
    /// 5 set, 6 meta, 7 finish, 8 transient.
    pub fn code(self) -> u32 {
        match self {
            MessageAction::Ignore => 0,
            MessageAction::Splice { .. } => 1,
            MessageAction::Stop(_) => 2,
            MessageAction::Start { .. } => 3,
            MessageAction::End { .. } => 4,
            MessageAction::Set { .. } => 5,
            MessageAction::Meta => 6,
            MessageAction::Finish => 7,
            MessageAction::Transient => 8,
        }
    }

    /// The part the action touches, if one.
    pub fn part(self) -> Option<u32> {
        match self {
            MessageAction::Splice { part, .. }
            | MessageAction::Start { part }
            | MessageAction::End { part }
            | MessageAction::Set { part } => Some(part),
            _ => None,
        }
    }
}

/// The reader's state machine over numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageReaderCore {
    stops: Reader,
    tally: Tally,
}

impl MessageReaderCore {
    /// A reader holding a durable message with these numbers ([`Message::tally`]).
    pub fn new(tally: Tally) -> Self {
        MessageReaderCore { stops: Reader::new(tally.pos() as u64), tally }
    }

    /// From numbers a binding passes: the durable message's length, its part table (empty when
    /// it has none), checked as the text reader checks its length, and the numbers of the parts
    /// that ended, marked ended by the tally's own commit of a part's end (the reader of §8
    /// knows every part of the durable message it joined with, ended ones included; the table
    /// holds lengths only). A number that is not a part of the table is `invalid_argument`.
    pub fn from_js(len: f64, parts: &[f64], ended: &[f64]) -> crate::Result<Self> {
        let pos = crate::jsnum::offset_arg("durable length", len)?;
        if !parts.is_empty() && !Tally::table_fits(len, parts) {
            return Err(crate::Error::new(crate::ErrorKind::InvalidArgument, "a part table longer than the message"));
        }
        let mut tally = Tally::with_parts(pos as f64, parts);
        for &part in ended {
            if !(crate::jsnum::is_integer(part) && part >= 0.0 && part < tally.part_count() as f64) {
                return Err(crate::Error::new(
                    crate::ErrorKind::InvalidArgument,
                    "an ended part that is not in the part table",
                ));
            }
            tally.commit(Decision::End { part: part as u32 }, tally.pos());
        }
        Ok(MessageReaderCore::new(tally))
    }

    pub fn join_offset(&self) -> u64 {
        self.stops.join_offset()
    }

    /// Where a reconnect resumes (`Last-Event-ID`).
    pub fn resume_from(&self) -> u64 {
        self.tally.pos() as u64
    }

    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    pub fn stopped(&self) -> Option<StopReason> {
        self.stops.stopped()
    }

    /// One frame in numbers, as [`super::MessageConform::feed_numbers`] takes them.
    pub fn feed_numbers(&mut self, n: FrameNumbers) -> MessageAction {
        let FrameNumbers { kind, id_matches, a, b, c, part, at } = n;
        if self.stops.stopped().is_some() {
            return MessageAction::Ignore;
        }
        let kind = MessageKind::from_code(kind);
        if kind != MessageKind::Chunk && !kind.is_event() {
            // Open, durable and the terminal frames carry no content: the text reader's rules.
            let code = if kind == MessageKind::Unknown { u32::MAX } else { kind as u32 };
            return match self.stops.feed(ReaderInput::from_code(code, id_matches, a, b, c)) {
                ReaderAction::Stop(reason) => MessageAction::Stop(reason),
                _ => MessageAction::Ignore,
            };
        }
        let (from, seq) = (a, b);
        match self.tally.decide(kind, from, seq, c, part, at) {
            Ok(Decision::Held) => MessageAction::Ignore,
            Ok(decision) => {
                self.tally.commit(decision, seq);
                action_of(decision)
            }
            Err(breach) => {
                let gap = match breach {
                    Breach::Gap { .. } => true,
                    Breach::BodyBreak { at, len, .. } => at + (self.tally.pos() - from) > len,
                    _ => false,
                };
                MessageAction::Stop(match self.stops.stop(if gap { StopReason::Gap } else { StopReason::Malformed }) {
                    ReaderAction::Stop(r) => r,
                    _ => StopReason::Malformed,
                })
            }
        }
    }
}

fn action_of(decision: Decision) -> MessageAction {
    match decision {
        Decision::Held => MessageAction::Ignore,
        Decision::Body { part, at, .. } => MessageAction::Splice { part, at: at as u64 },
        Decision::Start { part } => MessageAction::Start { part },
        Decision::End { part } => MessageAction::End { part },
        Decision::Set { part } => MessageAction::Set { part },
        Decision::Meta => MessageAction::Meta,
        Decision::Finish => MessageAction::Finish,
        Decision::Transient => MessageAction::Transient,
    }
}

/// The reader holding the message: for Rust clients and tests.
#[derive(Clone, Debug)]
pub struct MessageReader {
    stream_id: Text,
    core: MessageReaderCore,
    message: Message,
}

impl MessageReader {
    /// Join `stream_id` holding `durable` (the durable message at subscribe time).
    pub fn new(stream_id: Text, durable: Message) -> Self {
        MessageReader { stream_id, core: MessageReaderCore::new(durable.tally().clone()), message: durable }
    }

    pub fn message(&self) -> &Message {
        &self.message
    }

    pub fn core(&self) -> &MessageReaderCore {
        &self.core
    }

    pub fn feed(&mut self, frame: &MessageFrame) -> MessageAction {
        let action = self.core.feed_numbers(FrameNumbers::of(frame, &self.stream_id));
        if !matches!(action, MessageAction::Ignore | MessageAction::Stop(_)) {
            // The message's own tally equals the core's, so it decides the same and applies.
            let _ = self.message.apply(frame);
        }
        action
    }

    /// What to render for `stream_id` given the durable message now: both are prefixes of one
    /// produced message, so the longer one says more; another stream's reader shows the store.
    pub fn rendered<'a>(&'a self, stream_id: &Text, durable_now: &'a Message) -> &'a Message {
        if *stream_id != self.stream_id || durable_now.len() >= self.message.len() {
            durable_now
        } else {
            &self.message
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::StreamStatus;
    use crate::message::frame::Event;

    #[test]
    fn joins_mid_part_and_reports_changes() {
        let mut durable = Message::new();
        durable
            .apply(&MessageFrame::Event {
                from: 0,
                event: Event::Start { part: 1, kind: "reasoning".into(), value: vec![] },
            })
            .unwrap();
        durable.apply(&MessageFrame::chunk(1, 1, 0, "ab".into()).unwrap()).unwrap();
        let mut r = MessageReader::new("s".into(), durable);
        let open = MessageFrame::Open {
            stream_id: "s".into(),
            from: 3,
            seq: 6,
            durable_seq: 3,
            ended: false,
            parts: Some(vec![0, 2]),
        };
        assert_eq!(r.feed(&open), MessageAction::Ignore);
        // An overlapping replay of the body is spliced at its own `at`.
        assert_eq!(
            r.feed(&MessageFrame::chunk(2, 1, 1, "bcd".into()).unwrap()),
            MessageAction::Splice { part: 1, at: 1 }
        );
        assert_eq!(r.message().parts()[1].body, "abcd");
        assert_eq!(
            r.feed(&MessageFrame::Event { from: 5, event: Event::End { part: 1, value: vec![] } }),
            MessageAction::End { part: 1 }
        );
        assert_eq!(
            r.feed(&MessageFrame::Event { from: 6, event: Event::Transient { kind: None, value: vec![] } }),
            MessageAction::Transient
        );
        assert_eq!(r.core().resume_from(), 7);
        assert_eq!(
            r.feed(&MessageFrame::chunk(7, 1, 4, "x".into()).unwrap()),
            MessageAction::Stop(StopReason::Malformed)
        );
        assert_eq!(
            r.feed(&MessageFrame::End { seq: 7, status: StreamStatus::Complete, error: None }),
            MessageAction::Ignore
        );
    }

    #[test]
    fn from_js_marks_the_ended_parts_and_refuses_parts_it_lacks() {
        // Part 1 of a three-unit message (its start, then two units of body) ended: a chunk for
        // it stops the reader, while a reader told nothing takes it.
        let chunk = |core: &mut MessageReaderCore| {
            let frame = MessageFrame::chunk(3, 1, 2, "x".into()).unwrap();
            core.feed_numbers(FrameNumbers::of(&frame, &"s".into()))
        };
        let mut ended = MessageReaderCore::from_js(3.0, &[0.0, 2.0], &[1.0]).unwrap();
        assert!(matches!(chunk(&mut ended), MessageAction::Stop(_)));
        let mut open = MessageReaderCore::from_js(3.0, &[0.0, 2.0], &[]).unwrap();
        assert_eq!(chunk(&mut open), MessageAction::Splice { part: 1, at: 2 });
        for bad in [2.0, -1.0, 0.5, f64::NAN] {
            let err = MessageReaderCore::from_js(3.0, &[0.0, 2.0], &[bad]).err().unwrap();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        }
    }

    #[test]
    fn gaps_stop_the_reader() {
        let mut r = MessageReader::new("s".into(), Message::new());
        assert_eq!(r.feed(&MessageFrame::chunk(0, 0, 1, "x".into()).unwrap()), MessageAction::Stop(StopReason::Gap));
        let mut r = MessageReader::new("s".into(), Message::new());
        assert_eq!(r.feed(&MessageFrame::chunk(1, 0, 1, "x".into()).unwrap()), MessageAction::Stop(StopReason::Gap));
        let mut r = MessageReader::new("s".into(), Message::new());
        assert_eq!(
            r.feed(&MessageFrame::chunk(0, 1, 0, "x".into()).unwrap()),
            MessageAction::Stop(StopReason::Malformed)
        );
        let mut core = MessageReaderCore::from_js(3.0, &[1.0], &[]).unwrap();
        let n = FrameNumbers { a: 3.0, b: 4.0, c: 1.0, part: 0.0, at: 1.0, ..FrameNumbers::new(MessageKind::Chunk) };
        assert_eq!(core.feed_numbers(n), MessageAction::Splice { part: 0, at: 1 });
        assert!(MessageReaderCore::from_js(3.0, &[5.0], &[]).is_err());
        assert!(MessageReaderCore::from_js(f64::NAN, &[], &[]).is_err());
        let mut core = MessageReaderCore::from_js(0.0, &[], &[]).unwrap();
        let other = core.feed_numbers(FrameNumbers { a: 0.0, b: 0.0, c: 0.0, ..FrameNumbers::new(MessageKind::Open) });
        assert_eq!(other, MessageAction::Stop(StopReason::ForeignStream));
    }
}
