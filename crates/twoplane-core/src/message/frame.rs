//! The frames of a message with parts (docs/contract.md §8): the six frames of §1, a chunk that
//! names its part and body offset, and the structural events, each one unit wide.
//!
//! A [`MessageFrame`] that today's six-frame wire can say (an `open` without a part table, a
//! part 0 chunk whose body offset is its `from`, and `durable`, `end`, `stale`, `absent`) converts
//! to a [`Frame`] with [`MessageFrame::to_frame`]; the codec writes those through the six-frame
//! encoder, which is what keeps a single-text stream byte-identical.

use crate::coded::coded_enum;
use crate::error::{Error, ErrorKind, Result};
use crate::frame::{check_chunk_span, check_offset, Frame, FrameKind, StreamStatus};
use crate::json::JsonValue;
use crate::text::Text;

/// A part's (or the message's) attributes: JSON object members in the order first set.
pub type Attrs = Vec<(Text, JsonValue)>;

coded_enum! {
    /// The numeric kind code a binding passes per frame. Codes 0 to 5 are [`FrameKind`]'s and 6 is
    /// the unknown type of the six-frame API, so a frame of today's wire has today's code; the
    /// structural events follow.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum MessageKind;
    /// The frame `type` (`"unknown"` for [`MessageKind::Unknown`], which has no wire name).
    fn as_str;
    {
        // The six frames are named by the six-frame kinds, in their order, so that a name and a
        // code cannot drift from today's (the tests below pin the codes).
        Open => FrameKind::Open.as_str(),
        Chunk => FrameKind::Chunk.as_str(),
        Durable => FrameKind::Durable.as_str(),
        End => FrameKind::End.as_str(),
        Stale => FrameKind::Stale.as_str(),
        Absent => FrameKind::Absent.as_str(),
        Unknown => "unknown",
        Part => "part",
        PartEnd => "part-end",
        Set => "set",
        Meta => "meta",
        Finish => "finish",
        Transient => "transient",
    }
}

impl MessageKind {
    /// The kind of a frame `type`; `None` for a type no frame has.
    pub fn from_name(s: &[u16]) -> Option<Self> {
        MessageKind::ALL
            .into_iter()
            .filter(|k| *k != MessageKind::Unknown)
            .find(|k| k.as_str().encode_utf16().eq(s.iter().copied()))
    }

    /// Any code past the last kind reads as unknown, as in the six-frame API.
    pub fn from_code(code: u32) -> Self {
        MessageKind::ALL.get(code as usize).copied().unwrap_or(MessageKind::Unknown)
    }

    /// A structural event: one unit wide, `seq = from + 1`.
    pub fn is_event(self) -> bool {
        matches!(
            self,
            MessageKind::Part
                | MessageKind::PartEnd
                | MessageKind::Set
                | MessageKind::Meta
                | MessageKind::Finish
                | MessageKind::Transient
        )
    }

    /// A structural event that names a part.
    pub fn names_part(self) -> bool {
        matches!(self, MessageKind::Part | MessageKind::PartEnd | MessageKind::Set)
    }
}

/// A structural event. It occupies exactly one unit of the coordinate.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Part `part` starts (it must be the next number).
    Start { part: u32, kind: Text, value: Attrs },
    /// Part `part` receives no more body; `value` merges into its attributes.
    End { part: u32, value: Attrs },
    /// `value` merges into part `part`'s attributes (tool output, approval, data replaced, ...).
    Set { part: u32, value: Attrs },
    /// `value` merges into the message's metadata.
    Meta { value: Attrs },
    /// The model's finish reason.
    Finish { reason: Text },
    /// A live-only part. Stored without its content (`kind: None`, empty `value`), so its unit
    /// is still accounted for in a chunk row.
    Transient { kind: Option<Text>, value: Attrs },
}

impl Event {
    pub fn kind(&self) -> MessageKind {
        match self {
            Event::Start { .. } => MessageKind::Part,
            Event::End { .. } => MessageKind::PartEnd,
            Event::Set { .. } => MessageKind::Set,
            Event::Meta { .. } => MessageKind::Meta,
            Event::Finish { .. } => MessageKind::Finish,
            Event::Transient { .. } => MessageKind::Transient,
        }
    }

    /// The part the event names, if it names one.
    pub fn part(&self) -> Option<u32> {
        match self {
            Event::Start { part, .. } | Event::End { part, .. } | Event::Set { part, .. } => Some(*part),
            _ => None,
        }
    }

    /// The event as it is stored: a transient part loses its content, everything else is kept.
    pub fn stored(&self) -> Event {
        match self {
            Event::Transient { .. } => Event::Transient { kind: None, value: Vec::new() },
            other => other.clone(),
        }
    }
}

/// One frame of a message subscription.
#[derive(Clone, Debug, PartialEq)]
pub enum MessageFrame {
    /// As [`Frame::Open`]; `parts` is the body length of every part at `from`, `None` when nothing
    /// structural happened before `from` (the table is then `[from]`).
    Open {
        stream_id: Text,
        from: u64,
        seq: u64,
        durable_seq: u64,
        ended: bool,
        parts: Option<Vec<u64>>,
    },
    /// Body text of part `part` at body offset `at`, spanning `from..seq`.
    Chunk {
        from: u64,
        seq: u64,
        part: u32,
        at: u64,
        text: Text,
    },
    Durable {
        seq: u64,
    },
    End {
        seq: u64,
        status: StreamStatus,
        error: Option<Text>,
    },
    Stale {
        floor_seq: u64,
        durable_seq: u64,
    },
    Absent,
    /// A structural event spanning `from..from + 1`.
    Event {
        from: u64,
        event: Event,
    },
}

impl MessageFrame {
    /// A body delta; `seq` is derived from the text, so the span always matches.
    pub fn chunk(from: u64, part: u32, at: u64, text: Text) -> Result<MessageFrame> {
        let seq = crate::frame::chunk_end(from, text.len())?;
        crate::frame::chunk_end(at, text.len())
            .map_err(|_| Error::field(ErrorKind::InvalidOffset, "at", "a body offset past 2^53-1"))?;
        Ok(MessageFrame::Chunk { from, seq, part, at, text })
    }

    pub fn kind(&self) -> MessageKind {
        match self {
            MessageFrame::Open { .. } => MessageKind::Open,
            MessageFrame::Chunk { .. } => MessageKind::Chunk,
            MessageFrame::Durable { .. } => MessageKind::Durable,
            MessageFrame::End { .. } => MessageKind::End,
            MessageFrame::Stale { .. } => MessageKind::Stale,
            MessageFrame::Absent => MessageKind::Absent,
            MessageFrame::Event { event, .. } => event.kind(),
        }
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self, MessageFrame::End { .. } | MessageFrame::Stale { .. } | MessageFrame::Absent)
    }

    /// The span `from..seq` of a chunk or an event (what a log holds), `None` for the others.
    pub fn span(&self) -> Option<(u64, u64)> {
        match self {
            MessageFrame::Chunk { from, seq, .. } => Some((*from, *seq)),
            MessageFrame::Event { from, .. } => Some((*from, from.saturating_add(1))),
            _ => None,
        }
    }

    /// A content frame (a chunk or an event) cut at offset `at`: the part that ends at or before
    /// `at`, and the part from `at` on (a chunk across `at` is cut in two, its body offset moved
    /// with its second half; an event is whole on one side). A frame that is not content gives
    /// nothing on either side.
    pub fn cut_at(&self, at: u64) -> (Option<MessageFrame>, Option<MessageFrame>) {
        match (self, self.span()) {
            (MessageFrame::Chunk { from, seq, part, at: body, text }, _) if *from < at && at < *seq => {
                let k = (at - from) as usize;
                let before = MessageFrame::Chunk {
                    from: *from,
                    seq: at,
                    part: *part,
                    at: *body,
                    text: Text::from_slice(&text.units()[..k]),
                };
                let after = MessageFrame::Chunk {
                    from: at,
                    seq: *seq,
                    part: *part,
                    at: body + k as u64,
                    text: Text::from_slice(text.tail(k)),
                };
                (Some(before), Some(after))
            }
            (_, Some((_, seq))) if seq <= at => (Some(self.clone()), None),
            (_, Some(_)) => (None, Some(self.clone())),
            (_, None) => (None, None),
        }
    }

    /// The frame in today's six-frame form, when it has one.
    pub fn to_frame(&self) -> Option<Frame> {
        Some(match self {
            MessageFrame::Open { stream_id, from, seq, durable_seq, ended, parts: None } => Frame::Open {
                stream_id: stream_id.clone(),
                from: *from,
                seq: *seq,
                durable_seq: *durable_seq,
                ended: *ended,
            },
            MessageFrame::Chunk { from, seq, part: 0, at, text } if at == from => {
                Frame::Chunk { from: *from, seq: *seq, text: text.clone() }
            }
            MessageFrame::Durable { seq } => Frame::Durable { seq: *seq },
            MessageFrame::End { seq, status, error } => Frame::End { seq: *seq, status: *status, error: error.clone() },
            MessageFrame::Stale { floor_seq, durable_seq } => {
                Frame::Stale { floor_seq: *floor_seq, durable_seq: *durable_seq }
            }
            MessageFrame::Absent => Frame::Absent,
            _ => return None,
        })
    }

    /// Check what the codec enforces, for frames built by hand: offsets within `0..=2^53-1`, a
    /// chunk spanning exactly its text, and a value that names neither `type` nor a body key.
    pub fn validate(&self) -> Result<()> {
        if let Some(frame) = self.to_frame() {
            return frame.validate();
        }
        match self {
            MessageFrame::Open { from, seq, durable_seq, parts, .. } => {
                check_offset("from", *from)?;
                check_offset("seq", *seq)?;
                check_offset("durableSeq", *durable_seq)?;
                parts.iter().flatten().try_for_each(|len| check_offset("parts", *len))
            }
            MessageFrame::Chunk { from, seq, at, text, .. } => {
                check_offset("from", *from)?;
                check_offset("seq", *seq)?;
                check_offset("at", *at)?;
                check_offset("at", at.saturating_add(text.len() as u64))?;
                check_chunk_span(*from, *seq, text.len())
            }
            MessageFrame::Event { from, event } => {
                check_offset("seq", from.saturating_add(1))?;
                match event {
                    Event::Start { value, .. }
                    | Event::End { value, .. }
                    | Event::Set { value, .. }
                    | Event::Meta { value }
                    | Event::Transient { value, .. } => check_value(value),
                    Event::Finish { .. } => Ok(()),
                }
            }
            // The six-frame forms returned above.
            _ => Ok(()),
        }
    }
}

impl From<Frame> for MessageFrame {
    fn from(frame: Frame) -> Self {
        match frame {
            Frame::Open { stream_id, from, seq, durable_seq, ended } => {
                MessageFrame::Open { stream_id, from, seq, durable_seq, ended, parts: None }
            }
            Frame::Chunk { from, seq, text } => MessageFrame::Chunk { from, seq, part: 0, at: from, text },
            Frame::Durable { seq } => MessageFrame::Durable { seq },
            Frame::End { seq, status, error } => MessageFrame::End { seq, status, error },
            Frame::Stale { floor_seq, durable_seq } => MessageFrame::Stale { floor_seq, durable_seq },
            Frame::Absent => MessageFrame::Absent,
        }
    }
}

/// One frame as the numeric API takes it, per frame: what the conform pass and the reader
/// decide from. A binding fills it from the frame object; a value that is not a number is NaN.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameNumbers {
    /// A [`MessageKind`] code (anything past the last is unknown).
    pub kind: u32,
    /// For an `open`: whether its `streamId` is the subscription's.
    pub id_matches: bool,
    /// `open`: from; `chunk` and events: from; `durable` and `end`: seq.
    pub a: f64,
    /// `open`, `chunk` and events: seq.
    pub b: f64,
    /// `open`: durableSeq; `chunk`: the text's length (NaN when it is not a string).
    pub c: f64,
    /// The frame's `part` (NaN when absent).
    pub part: f64,
    /// A chunk's `at` (NaN when absent).
    pub at: f64,
}

impl FrameNumbers {
    /// All NaN, of `kind`.
    pub fn new(kind: MessageKind) -> Self {
        let nan = f64::NAN;
        FrameNumbers { kind: kind as u32, id_matches: false, a: nan, b: nan, c: nan, part: nan, at: nan }
    }

    /// The numbers of a decoded frame, for a subscription to `stream_id`.
    pub fn of(frame: &MessageFrame, stream_id: &Text) -> Self {
        let mut n = FrameNumbers::new(frame.kind());
        match frame {
            MessageFrame::Open { stream_id: id, from, seq, durable_seq, .. } => {
                n.id_matches = id == stream_id;
                (n.a, n.b, n.c) = (*from as f64, *seq as f64, *durable_seq as f64);
            }
            MessageFrame::Chunk { from, seq, part, at, text } => {
                (n.a, n.b, n.c) = (*from as f64, *seq as f64, text.len() as f64);
                (n.part, n.at) = (f64::from(*part), *at as f64);
            }
            MessageFrame::Durable { seq } | MessageFrame::End { seq, .. } => n.a = *seq as f64,
            MessageFrame::Event { from, event } => {
                (n.a, n.b) = (*from as f64, *from as f64 + 1.0);
                n.part = event.part().map_or(f64::NAN, f64::from);
            }
            MessageFrame::Stale { .. } | MessageFrame::Absent => {}
        }
        n
    }
}

/// The keys a `value` may not name: the kind and the body are the frames' own fields.
pub const RESERVED_KEYS: [&str; 3] = ["type", "text", "inputText"];

/// A value's members must not name a [`RESERVED_KEYS`] key.
pub fn check_value(value: &Attrs) -> Result<()> {
    match value.iter().find(|(k, _)| RESERVED_KEYS.iter().any(|r| k == r)) {
        Some((k, _)) => Err(Error::field(
            ErrorKind::InvalidField,
            "value",
            format!("a value may not set {:?}: the kind and the body are the frame's own", k.to_string_lossy()),
        )),
        None => Ok(()),
    }
}

/// The SSE `id:` of a message frame: as [`crate::frame_resume_point`] for the six, `seq` for an
/// event.
pub fn message_resume_point(frame: &MessageFrame) -> Option<u64> {
    match frame {
        MessageFrame::Open { from, .. } => Some(*from),
        MessageFrame::Chunk { seq, .. } | MessageFrame::Durable { seq } | MessageFrame::End { seq, .. } => Some(*seq),
        MessageFrame::Event { from, .. } => Some(from.saturating_add(1)),
        MessageFrame::Stale { .. } | MessageFrame::Absent => None,
    }
}

/// The six-frame kind of a message kind, when it has one.
pub fn frame_kind(kind: MessageKind) -> Option<FrameKind> {
    FrameKind::from_code(kind as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_extend_the_six_frame_codes() {
        for k in FrameKind::ALL {
            assert_eq!(MessageKind::from_code(k as u32).as_str(), k.as_str());
            assert_eq!(frame_kind(MessageKind::from_code(k as u32)), Some(k));
        }
        assert_eq!(MessageKind::from_code(6), MessageKind::Unknown);
        assert_eq!(MessageKind::from_code(99), MessageKind::Unknown);
        for (i, k) in MessageKind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i);
            if k != MessageKind::Unknown {
                let name: Vec<u16> = k.as_str().encode_utf16().collect();
                assert_eq!(MessageKind::from_name(&name), Some(k));
            }
        }
        assert_eq!(MessageKind::from_name(&[0x75]), None);
    }

    #[test]
    fn shorthand_is_exactly_part_0_at_from() {
        let f = MessageFrame::chunk(3, 0, 3, "ab".into()).unwrap();
        assert_eq!(f.to_frame(), Some(Frame::Chunk { from: 3, seq: 5, text: "ab".into() }));
        assert_eq!(MessageFrame::chunk(3, 0, 2, "ab".into()).unwrap().to_frame(), None);
        assert_eq!(MessageFrame::chunk(3, 1, 3, "ab".into()).unwrap().to_frame(), None);
        let back: MessageFrame = Frame::chunk(3, "ab".into()).unwrap().into();
        assert_eq!(back, f);
    }

    #[test]
    fn resume_points_and_spans() {
        let e = MessageFrame::Event { from: 4, event: Event::Finish { reason: "stop".into() } };
        assert_eq!(message_resume_point(&e), Some(5));
        assert_eq!(e.span(), Some((4, 5)));
        assert_eq!(message_resume_point(&MessageFrame::Absent), None);
    }

    #[test]
    fn values_may_not_name_the_kind_or_the_body() {
        for key in RESERVED_KEYS {
            let f = MessageFrame::Event {
                from: 0,
                event: Event::Set { part: 0, value: vec![(key.into(), JsonValue::Null)] },
            };
            assert_eq!(f.validate().unwrap_err().kind(), ErrorKind::InvalidField);
        }
        assert_eq!(
            MessageFrame::chunk(0, 1, crate::jsnum::MAX_SAFE_INTEGER, "x".into()).unwrap_err().kind(),
            ErrorKind::InvalidOffset
        );
    }
}
