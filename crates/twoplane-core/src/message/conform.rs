//! The relay conform pass for messages (docs/contract.md §8): the six-frame pass of §3 for the
//! global coordinate, plus the part rules of [`Tally`] for the parts it knows.
//!
//! Decided from numbers, like [`Conform`]: a binding passes the kind code, the offsets, the text
//! length, `part` and `at` (NaN when absent), and, for an `open`, its part table. Every frame of
//! today's wire gets exactly [`Conform`]'s verdict, since those frames go through it unchanged
//! (a chunk also passes the part rules, which a single-text stream always satisfies). After a
//! terminal verdict every call answers [`MessageVerdict::Drop`].
//!
//! [`MessageRelayConform`] is the frame-taking form for Rust callers (the native plane's relay
//! leg): it hands back the frames to deliver, the very frame it accepted among them.

use super::frame::{FrameNumbers, MessageFrame, MessageKind};
use super::rules::{Breach, Decision, Tally};
use crate::conform::{reason_of, Conform, Verdict, Violation};
use crate::frame::{Frame, FrameKind};
use crate::jsnum;
use crate::text::Text;

/// A part rule a relay broke (the six-frame rules are [`Violation`]s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PartViolation {
    Malformed { kind: MessageKind, from: f64 },
    Gap { kind: MessageKind, from: f64, pos: f64 },
    UnknownPart { kind: MessageKind, part: f64, from: f64 },
    NotNext { part: f64, from: f64, count: f64 },
    BodyBreak { part: f64, at: f64, len: f64 },
    AfterEnd { part: f64, from: f64 },
}

impl PartViolation {
    /// Stable numeric codes for bindings, after [`Violation::code`]'s.
    pub fn code(self) -> u32 {
        match self {
            PartViolation::Malformed { .. } => 8,
            PartViolation::Gap { .. } => 9,
            PartViolation::UnknownPart { .. } => 10,
            PartViolation::NotNext { .. } => 11,
            PartViolation::BodyBreak { .. } => 12,
            PartViolation::AfterEnd { .. } => 13,
        }
    }

    /// The reason passed to `onViolation`, in the words of §8.
    pub fn reason(&self) -> Text {
        let n = jsnum::format;
        Text::from(match *self {
            PartViolation::Malformed { kind, from } => format!("relay {} at {} is malformed", kind.as_str(), n(from)),
            PartViolation::Gap { kind, from, pos } => {
                format!("relay {} at {} leaves a gap after {}", kind.as_str(), n(from), n(pos))
            }
            PartViolation::UnknownPart { kind, part, from } => {
                format!("relay {} for part {} at {} names no known part", kind.as_str(), n(part), n(from))
            }
            PartViolation::NotNext { part, from, count } => {
                format!("relay part {} at {} does not follow the {} parts", n(part), n(from), n(count))
            }
            PartViolation::BodyBreak { part, at, len } => {
                format!("relay chunk for part {} at {} does not continue its body of {} units", n(part), n(at), n(len))
            }
            PartViolation::AfterEnd { part, from } => {
                format!("relay chunk for part {} at {} follows its end", n(part), n(from))
            }
        })
    }
}

/// Either kind of rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MessageViolation {
    Stream(Violation),
    Part(PartViolation),
}

impl MessageViolation {
    pub fn code(self) -> u32 {
        match self {
            MessageViolation::Stream(v) => v.code(),
            MessageViolation::Part(p) => p.code(),
        }
    }
}

/// What to emit for one input; the codes are [`Verdict::code`]'s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MessageVerdict {
    Drop,
    Pass,
    OpenThenPass,
    /// Report, then emit `stale{floorSeq: pos, durableSeq: lastDurable}` and stop.
    Violation(MessageViolation),
    Terminate,
}

impl MessageVerdict {
    pub fn code(self) -> u32 {
        match self {
            MessageVerdict::Drop => 0,
            MessageVerdict::Pass => 1,
            MessageVerdict::OpenThenPass => 2,
            MessageVerdict::Violation(_) => 3,
            MessageVerdict::Terminate => 4,
        }
    }
}

impl From<Verdict> for MessageVerdict {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::Drop => MessageVerdict::Drop,
            Verdict::Pass => MessageVerdict::Pass,
            Verdict::OpenThenPass => MessageVerdict::OpenThenPass,
            Verdict::Violation(v) => MessageVerdict::Violation(MessageViolation::Stream(v)),
            Verdict::Terminate => MessageVerdict::Terminate,
        }
    }
}

/// The conform pass of a message subscription.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageConform {
    core: Conform,
    tally: Tally,
    last_violation: Option<MessageViolation>,
}

impl MessageConform {
    /// A pass for a reader that asked to join at `from`; until an `open` says otherwise, the
    /// message is taken to have had nothing structural before `from`.
    pub fn new(from: f64) -> Self {
        MessageConform { core: Conform::new(from), tally: Tally::new(from), last_violation: None }
    }

    /// The floor of a terminating `stale`.
    pub fn pos(&self) -> f64 {
        self.core.pos()
    }

    pub fn last_durable(&self) -> f64 {
        self.core.last_durable()
    }

    pub fn requested(&self) -> f64 {
        self.core.requested()
    }

    pub fn is_done(&self) -> bool {
        self.core.is_done()
    }

    /// The numbers of the parts this pass knows.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    pub fn last_violation(&self) -> Option<MessageViolation> {
        self.last_violation
    }

    /// An `open` with its part table (`None` when it has none). A table that cannot be the
    /// message's at `from` makes the open malformed.
    pub fn feed_open(
        &mut self,
        id_matches: bool,
        from: f64,
        seq: f64,
        durable_seq: f64,
        parts: Option<&[f64]>,
    ) -> MessageVerdict {
        if self.core.is_done() {
            return MessageVerdict::Drop;
        }
        if !self.core.is_opened() && parts.is_some_and(|lens| !Tally::table_fits(from, lens)) {
            let verdict = self.core.violate(Violation::OpenMalformed).into();
            return self.record(verdict);
        }
        let verdict = self.core.feed_numbers(FrameKind::Open as u32, id_matches, from, seq, durable_seq).into();
        let verdict = self.record(verdict);
        if verdict == MessageVerdict::Pass {
            self.tally = Tally::with_parts(from, parts.unwrap_or_default());
        }
        verdict
    }

    /// One frame in numbers: `kind` a [`MessageKind`] code; an open reads `id_matches` and
    /// a=from b=seq c=durableSeq (no part table: see [`feed_open`](Self::feed_open)); a chunk reads
    /// a=from b=seq c=text length; an event a=from b=seq; `durable` and `end` a=seq; `part` and
    /// `at` are NaN when the frame has none.
    pub fn feed_numbers(&mut self, n: FrameNumbers) -> MessageVerdict {
        let FrameNumbers { kind, id_matches, a, b, c, part, at } = n;
        if self.core.is_done() {
            return MessageVerdict::Drop;
        }
        let kind = MessageKind::from_code(kind);
        if kind == MessageKind::Open {
            return self.feed_open(id_matches, a, b, c, None);
        }
        if kind != MessageKind::Chunk && !kind.is_event() {
            let code = if kind == MessageKind::Unknown { u32::MAX } else { kind as u32 };
            let verdict = self.core.feed_numbers(code, id_matches, a, b, c).into();
            return self.record(verdict);
        }
        let (from, seq) = (a, b);
        let decision = match self.tally.decide(kind, from, seq, c, part, at) {
            // The global rules of a chunk are the six-frame pass's, with its reasons.
            Err(Breach::Span | Breach::Gap { .. }) | Ok(Decision::Held) if kind == MessageKind::Chunk => {
                let verdict = self.core.feed_numbers(FrameKind::Chunk as u32, false, from, seq, c).into();
                return self.record(verdict);
            }
            Ok(Decision::Held) => return MessageVerdict::Drop,
            Ok(decision) => decision,
            Err(breach) => {
                let violation = part_violation(kind, from, breach);
                self.core.halt();
                return self.record(MessageVerdict::Violation(MessageViolation::Part(violation)));
            }
        };
        // Accepted: the six-frame pass moves `pos` (and synthesizes the open) as for any chunk.
        let verdict = self.core.feed_numbers(FrameKind::Chunk as u32, false, from, seq, seq - from);
        self.tally.commit(decision, seq);
        self.record(verdict.into())
    }

    pub fn end(&mut self) -> MessageVerdict {
        let verdict = self.core.end().into();
        self.record(verdict)
    }

    pub fn fail(&mut self) -> MessageVerdict {
        self.core.fail().into()
    }

    fn record(&mut self, verdict: MessageVerdict) -> MessageVerdict {
        if let MessageVerdict::Violation(v) = verdict {
            self.last_violation = Some(v);
        }
        verdict
    }
}

/// What one call of [`MessageRelayConform`] gives: the frames to deliver, in order, and the
/// reason when the call turned the subscription into `stale` because of a violation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MessageConformed {
    pub frames: Vec<MessageFrame>,
    pub violation: Option<String>,
}

/// The conform pass over frames, for a subscription to `stream_id` from `from`.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageRelayConform {
    stream_id: Text,
    pass: MessageConform,
}

impl MessageRelayConform {
    pub fn new(stream_id: Text, from: u64) -> Self {
        MessageRelayConform { stream_id, pass: MessageConform::new(from as f64) }
    }

    pub fn is_done(&self) -> bool {
        self.pass.is_done()
    }

    pub fn feed(&mut self, frame: MessageFrame) -> MessageConformed {
        let verdict = match &frame {
            MessageFrame::Open { stream_id, from, seq, durable_seq, parts, .. } => {
                let table: Option<Vec<f64>> = parts.as_ref().map(|p| p.iter().map(|&len| len as f64).collect());
                let matches = *stream_id == self.stream_id;
                self.pass.feed_open(matches, *from as f64, *seq as f64, *durable_seq as f64, table.as_deref())
            }
            other => self.pass.feed_numbers(FrameNumbers::of(other, &self.stream_id)),
        };
        self.apply(verdict, Some(frame))
    }

    /// The source ended without a terminal frame.
    pub fn end(&mut self) -> MessageConformed {
        let verdict = self.pass.end();
        self.apply(verdict, None)
    }

    /// The source failed, or the reader is being dropped.
    pub fn fail(&mut self) -> MessageConformed {
        let verdict = self.pass.fail();
        self.apply(verdict, None)
    }

    fn stale(&self) -> MessageFrame {
        MessageFrame::Stale { floor_seq: self.pass.pos() as u64, durable_seq: self.pass.last_durable() as u64 }
    }

    fn apply(&self, verdict: MessageVerdict, frame: Option<MessageFrame>) -> MessageConformed {
        match verdict {
            MessageVerdict::Drop => MessageConformed::default(),
            MessageVerdict::Pass => MessageConformed { frames: frame.into_iter().collect(), violation: None },
            MessageVerdict::OpenThenPass => {
                let at = self.pass.requested() as u64;
                let open = MessageFrame::Open {
                    stream_id: self.stream_id.clone(),
                    from: at,
                    seq: at,
                    durable_seq: at,
                    ended: false,
                    parts: None,
                };
                MessageConformed { frames: std::iter::once(open).chain(frame).collect(), violation: None }
            }
            MessageVerdict::Violation(v) => {
                let reason = match v {
                    MessageViolation::Stream(v) => reason_of(v, frame.as_ref().and_then(six_frame_view).as_ref()),
                    MessageViolation::Part(p) => p.reason().to_string_lossy(),
                };
                MessageConformed { frames: vec![self.stale()], violation: Some(reason) }
            }
            MessageVerdict::Terminate => MessageConformed { frames: vec![self.stale()], violation: None },
        }
    }
}

/// What a six-frame reason quotes of a frame: its own six-frame form, or for a part chunk a chunk
/// with its offsets (a reason quotes no text).
fn six_frame_view(frame: &MessageFrame) -> Option<Frame> {
    match frame {
        MessageFrame::Chunk { from, seq, .. } => Some(Frame::Chunk { from: *from, seq: *seq, text: Text::new() }),
        other => other.to_frame(),
    }
}

fn part_violation(kind: MessageKind, from: f64, breach: Breach) -> PartViolation {
    match breach {
        Breach::Gap { from, pos } => PartViolation::Gap { kind, from, pos },
        Breach::UnknownPart { part } => PartViolation::UnknownPart { kind, part, from },
        Breach::NotNext { part, count } => PartViolation::NotNext { part, from, count },
        Breach::BodyBreak { part, at, len } => PartViolation::BodyBreak { part, at, len },
        Breach::AfterEnd { part } => PartViolation::AfterEnd { part, from },
        Breach::Malformed | Breach::Span => PartViolation::Malformed { kind, from },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use MessageKind as K;

    const NAN: f64 = f64::NAN;

    fn feed(c: &mut MessageConform, kind: MessageKind, a: f64, b: f64, c_: f64, part: f64, at: f64) -> MessageVerdict {
        c.feed_numbers(FrameNumbers { kind: kind as u32, id_matches: false, a, b, c: c_, part, at })
    }

    #[test]
    fn six_frame_verdicts_are_unchanged() {
        let mut c = MessageConform::new(0.0);
        assert_eq!(feed(&mut c, K::Chunk, 0.0, 2.0, 2.0, NAN, NAN), MessageVerdict::OpenThenPass);
        assert_eq!(feed(&mut c, K::Chunk, 0.0, 2.0, 2.0, NAN, NAN), MessageVerdict::Drop);
        assert_eq!(feed(&mut c, K::Durable, 2.0, NAN, NAN, NAN, NAN), MessageVerdict::Pass);
        assert_eq!(
            feed(&mut c, K::Chunk, 4.0, 5.0, 1.0, NAN, NAN),
            MessageVerdict::Violation(MessageViolation::Stream(Violation::ChunkGap { from: 4.0, pos: 2.0 }))
        );
        assert_eq!((c.pos(), c.last_durable(), c.is_done()), (2.0, 2.0, true));
        assert_eq!(feed(&mut c, K::Stale, NAN, NAN, NAN, NAN, NAN), MessageVerdict::Drop);
        let mut c = MessageConform::new(0.0);
        assert_eq!(
            feed(&mut c, K::Unknown, NAN, NAN, NAN, NAN, NAN),
            MessageVerdict::Violation(MessageViolation::Stream(Violation::UnknownType))
        );
    }

    #[test]
    fn a_delta_for_an_unknown_part_is_one_stale() {
        let mut c = MessageConform::new(0.0);
        assert_eq!(feed(&mut c, K::Part, 0.0, 1.0, NAN, 1.0, NAN), MessageVerdict::OpenThenPass);
        let v = feed(&mut c, K::Chunk, 1.0, 2.0, 1.0, 2.0, 0.0);
        let MessageVerdict::Violation(MessageViolation::Part(p)) = v else { panic!("{v:?}") };
        assert_eq!(p.reason(), Text::from("relay chunk for part 2 at 1 names no known part"));
        assert_eq!(c.last_violation().map(MessageViolation::code), Some(10));
        assert_eq!((c.pos(), c.is_done()), (1.0, true));
        assert_eq!(feed(&mut c, K::Chunk, 1.0, 2.0, 1.0, 1.0, 0.0), MessageVerdict::Drop);
    }

    #[test]
    fn part_rules() {
        let reason = |c: &MessageConform| match c.last_violation() {
            Some(MessageViolation::Part(p)) => p.reason().to_string_lossy(),
            other => format!("{other:?}"),
        };
        let mut c = MessageConform::new(0.0);
        feed(&mut c, K::Part, 0.0, 1.0, NAN, 1.0, NAN);
        feed(&mut c, K::Part, 1.0, 2.0, NAN, 1.0, NAN);
        assert_eq!(reason(&c), "relay part 1 at 1 does not follow the 2 parts");

        let mut c = MessageConform::new(0.0);
        feed(&mut c, K::Part, 0.0, 1.0, NAN, 1.0, NAN);
        feed(&mut c, K::Chunk, 1.0, 2.0, 1.0, 1.0, 3.0);
        assert_eq!(reason(&c), "relay chunk for part 1 at 3 does not continue its body of 0 units");

        let mut c = MessageConform::new(0.0);
        feed(&mut c, K::PartEnd, 0.0, 1.0, NAN, 0.0, NAN);
        feed(&mut c, K::Chunk, 1.0, 2.0, 1.0, 0.0, 0.0);
        assert_eq!(reason(&c), "relay chunk for part 0 at 1 follows its end");

        let mut c = MessageConform::new(0.0);
        feed(&mut c, K::Meta, 0.0, 2.0, NAN, NAN, NAN);
        assert_eq!(reason(&c), "relay meta at 0 is malformed");

        let mut c = MessageConform::new(0.0);
        feed(&mut c, K::Set, 3.0, 4.0, NAN, 0.0, NAN);
        assert_eq!(reason(&c), "relay set at 3 leaves a gap after 0");
        assert_eq!(c.pos(), 0.0);
    }

    #[test]
    fn the_open_tells_the_parts_before_the_join() {
        // Joined at 5 of a message whose part 1 holds 2 units.
        let mut c = MessageConform::new(5.0);
        assert_eq!(c.feed_open(true, 5.0, 9.0, 5.0, Some(&[1.0, 2.0])), MessageVerdict::Pass);
        assert_eq!(feed(&mut c, K::Chunk, 5.0, 6.0, 1.0, 1.0, 2.0), MessageVerdict::Pass);
        assert_eq!(feed(&mut c, K::Set, 6.0, 7.0, NAN, 1.0, NAN), MessageVerdict::Pass);
        // A table whose bodies outgrow the offset is a malformed open.
        let mut c = MessageConform::new(5.0);
        assert_eq!(
            c.feed_open(true, 5.0, 9.0, 5.0, Some(&[4.0, 2.0])),
            MessageVerdict::Violation(MessageViolation::Stream(Violation::OpenMalformed))
        );
        // Without a table, a delta for a part before the join is a violation (safe: stale).
        let mut c = MessageConform::new(5.0);
        assert_eq!(
            c.feed_numbers(FrameNumbers { id_matches: true, a: 5.0, b: 9.0, c: 5.0, ..FrameNumbers::new(K::Open) }),
            MessageVerdict::Pass
        );
        assert!(matches!(
            feed(&mut c, K::Chunk, 5.0, 6.0, 1.0, 1.0, 2.0),
            MessageVerdict::Violation(MessageViolation::Part(PartViolation::UnknownPart { .. }))
        ));
    }

    #[test]
    fn the_frame_pass_hands_back_what_it_accepted() {
        use crate::message::frame::Event;
        let mut c = MessageRelayConform::new("m".into(), 0);
        let start =
            MessageFrame::Event { from: 0, event: Event::Start { part: 1, kind: "reasoning".into(), value: vec![] } };
        let out = c.feed(start.clone());
        assert_eq!(out.frames.len(), 2, "a synthesized open, then the frame");
        assert_eq!(out.frames[1], start);
        let bad = MessageFrame::chunk(1, 2, 0, "x".into()).unwrap();
        let out = c.feed(bad);
        assert_eq!(out.violation.as_deref(), Some("relay chunk for part 2 at 1 names no known part"));
        assert_eq!(out.frames, vec![MessageFrame::Stale { floor_seq: 1, durable_seq: 0 }]);
        assert!(c.is_done());
        let mut c = MessageRelayConform::new("m".into(), 0);
        let open =
            MessageFrame::Open { stream_id: "m".into(), from: 0, seq: 3, durable_seq: 0, ended: false, parts: None };
        assert_eq!(c.feed(open.clone()).frames, vec![open]);
        let out = c.feed(MessageFrame::chunk(2, 0, 2, "x".into()).unwrap());
        assert_eq!(out.violation.as_deref(), Some("relay chunk at 2 leaves a gap after 0"));
        assert_eq!(
            MessageRelayConform::new("m".into(), 0).end().violation.as_deref(),
            Some("relay source ended without a terminal frame")
        );
    }
}
