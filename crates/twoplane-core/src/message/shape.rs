//! The shape of a produced message (docs/contract.md §8): where each body run and each structural
//! event lies on the coordinate, with the text itself kept by the caller.
//!
//! A producer that already holds its text as coordinate-indexed units (the native plane keeps
//! shared blocks, with one placeholder unit where each event lies) records here only what the
//! text does not say: which part a run of units belongs to and at which body offset, and the
//! events. Replays, checkpoint rows, part tables and the folded message are cut from the shape
//! and the caller's units, so the text is held once.
//!
//! Guarantees:
//! - Every delta and event is checked by the rules of [`super::rules`] before it is recorded
//!   (a delta for a part that has not started or has ended, or an event naming an unknown part,
//!   is refused and records nothing), so everything cut from a shape obeys them.
//! - Consecutive deltas of one part coalesce into one run: a replay is one chunk per run, as a
//!   single text's replay is one chunk.
//! - A slice that ends at or before the first structural event is part 0 text in the shorthand,
//!   and its checkpoint row is today's text row: a message that never has structure writes
//!   exactly today's rows.

use super::codec::encode_frame_list;
use super::fold::{breach_error, Message};
use super::frame::{Event, MessageFrame, MessageKind};
use super::rows::MessageChunkRow;
use super::rules::Tally;
use super::spans::{sealed_document, SealedSpan};
use crate::error::{Error, ErrorKind, Result};
use crate::frame::chunk_end;
use crate::text::Text;
use std::sync::Arc;

/// One stretch of the coordinate: body units of one part, or one event (one unit wide).
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// Units `from..seq` are part `part`'s body from body offset `at`.
    Run { from: u64, seq: u64, part: u32, at: u64 },
    /// A structural event's frame ([`MessageFrame::Event`]), shared: a producer fans out and
    /// replays this very frame, so an event is held once however many replays carry it.
    Event(Arc<MessageFrame>),
}

impl Item {
    /// The item's span on the coordinate.
    pub fn span(&self) -> (u64, u64) {
        match self {
            Item::Run { from, seq, .. } => (*from, *seq),
            Item::Event(frame) => frame.span().unwrap_or_default(),
        }
    }

    /// The item as a seal writes it into the document's spans.
    pub fn as_span(&self) -> SealedSpan<'_> {
        match self {
            Item::Run { from, seq, part, .. } => SealedSpan::Run { part: *part, len: seq - from },
            Item::Event(frame) => SealedSpan::Event(frame),
        }
    }

    /// The item cut to `from..to` (within its span): a run keeps the units inside, its body
    /// offset moved by what was cut off the front; an event is whole.
    fn cut(&self, from: u64, to: u64) -> Item {
        match self {
            Item::Run { from: f, part, at, .. } => Item::Run { from, seq: to, part: *part, at: at + (from - f) },
            other => other.clone(),
        }
    }
}

/// The runs and events of a message, in coordinate order, with the numbers the rules read.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageShape {
    items: Vec<Item>,
    tally: Tally,
    /// Where the first structural event lies, once there is one.
    first_event: Option<u64>,
}

impl Default for MessageShape {
    fn default() -> Self {
        MessageShape::from_text(0)
    }
}

impl MessageShape {
    /// An empty message.
    pub fn new() -> Self {
        MessageShape::default()
    }

    /// A message whose first `len` units are part 0 text and nothing else happened yet: what a
    /// single-text stream is when its first structural event arrives.
    pub fn from_text(len: u64) -> Self {
        let items = if len > 0 { vec![Item::Run { from: 0, seq: len, part: 0, at: 0 }] } else { Vec::new() };
        MessageShape { items, tally: Tally::new(len as f64), first_event: None }
    }

    /// The length in the coordinate.
    pub fn len(&self) -> u64 {
        self.tally.pos() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// How many parts have started (part 0 included).
    pub fn part_count(&self) -> usize {
        self.tally.part_count()
    }

    /// Whether anything structural happened before `to`: then a slice ending at `to` is no longer
    /// part 0 text in the shorthand.
    pub fn structured_before(&self, to: u64) -> bool {
        self.first_event.is_some_and(|e| e < to)
    }

    /// Record a delta of `len` units for `part`; returns the `(from, at)` of its chunk. An empty
    /// delta records nothing.
    pub fn delta(&mut self, part: u32, len: usize) -> Result<(u64, u64)> {
        let from = self.len();
        let at = self.tally.body_len(part as usize).unwrap_or(0.0) as u64;
        if len == 0 {
            return Ok((from, at));
        }
        let seq = chunk_end(from, len)?;
        chunk_end(at, len).map_err(|_| Error::field(ErrorKind::InvalidOffset, "at", "a body offset past 2^53-1"))?;
        let decision = self
            .tally
            .decide(MessageKind::Chunk, from as f64, seq as f64, len as f64, f64::from(part), at as f64)
            .map_err(|b| breach_error(MessageKind::Chunk, b))?;
        self.tally.commit(decision, seq as f64);
        match self.items.last_mut() {
            Some(Item::Run { seq: end, part: p, .. }) if *p == part && *end == from => *end = seq,
            _ => self.items.push(Item::Run { from, seq, part, at }),
        }
        Ok((from, at))
    }

    /// Record a structural event at the end; returns its frame. A value naming a reserved key
    /// or an event breaking a part rule is refused.
    pub fn event(&mut self, event: Event) -> Result<Arc<MessageFrame>> {
        let from = self.len();
        let frame = MessageFrame::Event { from, event };
        frame.validate()?;
        let (kind, part) = match &frame {
            MessageFrame::Event { event, .. } => (event.kind(), event.part().map_or(f64::NAN, f64::from)),
            _ => (MessageKind::Unknown, f64::NAN),
        };
        let (f, seq) = (from as f64, from as f64 + 1.0);
        let decision = self.tally.decide(kind, f, seq, f64::NAN, part, f64::NAN).map_err(|b| breach_error(kind, b))?;
        self.tally.commit(decision, seq);
        self.first_event.get_or_insert(from);
        let frame = Arc::new(frame);
        self.items.push(Item::Event(frame.clone()));
        Ok(frame)
    }

    /// The items covering `from..to` (clamped to the length), the ones across either end cut.
    pub fn cut(&self, from: u64, to: u64) -> Vec<Item> {
        let to = to.min(self.len());
        if from >= to {
            return Vec::new();
        }
        // Items are contiguous, so the first one that ends after `from` is found by bisection.
        let start = self.items.partition_point(|i| i.span().1 <= from);
        let mut out = Vec::new();
        for item in &self.items[start..] {
            let (f, s) = item.span();
            if f >= to {
                break;
            }
            out.push(item.cut(from.max(f), to.min(s)));
        }
        out
    }

    /// The frames of `from..to`, each run's units read with `units(from, to)`.
    pub fn frames(&self, from: u64, to: u64, units: &mut dyn FnMut(u64, u64) -> Text) -> Vec<MessageFrame> {
        self.cut(from, to).into_iter().map(|item| frame_of(item, units)).collect()
    }

    /// The body length of every part at `f` (an `open`'s `parts`), `None` when nothing structural
    /// happened before `f`.
    pub fn part_table_at(&self, f: u64) -> Option<Vec<u64>> {
        if !self.structured_before(f) {
            return None;
        }
        let mut lens = vec![0u64];
        for item in self.cut(0, f) {
            match item {
                Item::Run { from, seq, part, .. } => {
                    if let Some(len) = lens.get_mut(part as usize) {
                        *len += seq - from;
                    }
                }
                Item::Event(frame) => {
                    if let MessageFrame::Event { event: Event::Start { .. }, .. } = *frame {
                        lens.push(0);
                    }
                }
            }
        }
        Some(lens)
    }

    /// The chunk row of a checkpoint of `from..to`: today's text row while the slice is part 0
    /// text in the shorthand, else a parts row (transient events stored without content).
    pub fn row(&self, from: u64, to: u64, units: &mut dyn FnMut(u64, u64) -> Text) -> MessageChunkRow {
        // A checkpoint covers what was produced: an end past it is the produced length.
        let to = to.min(self.len());
        if from >= to {
            return MessageChunkRow { seq: to, text: Some(Text::new()), parts: None };
        }
        if !self.structured_before(to) {
            return MessageChunkRow { seq: to, text: Some(units(from, to)), parts: None };
        }
        let stored: Vec<MessageFrame> = self
            .cut(from, to)
            .into_iter()
            .map(|item| match item {
                Item::Event(frame) => match &*frame {
                    MessageFrame::Event { from, event } => MessageFrame::Event { from: *from, event: event.stored() },
                    other => other.clone(),
                },
                run => frame_of(run, units),
            })
            .collect();
        MessageChunkRow { seq: to, text: Some(Text::new()), parts: Some(encode_frame_list(&stored)) }
    }

    /// The document a seal stores for `message`, the message this shape made up to `to`: with its
    /// spans ([`super::spans`]), so that it can be cut and go on exactly.
    pub fn sealed_document(&self, message: &Message, to: u64) -> Text {
        let items = self.cut(0, to);
        sealed_document(message, items.iter().map(Item::as_span))
    }

    /// The message as it stood at `d` (clamped to the length).
    pub fn message_at(&self, d: u64, units: &mut dyn FnMut(u64, u64) -> Text) -> Message {
        let mut m = Message::new();
        for frame in self.frames(0, d, units) {
            // Every item was checked by the rules when it was recorded, in this order.
            let _ = m.apply(&frame);
        }
        m
    }
}

fn frame_of(item: Item, units: &mut dyn FnMut(u64, u64) -> Text) -> MessageFrame {
    match item {
        Item::Run { from, seq, part, at } => MessageFrame::Chunk { from, seq, part, at, text: units(from, seq) },
        Item::Event(frame) => (*frame).clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units of a coordinate whose event positions hold a placeholder.
    fn text_of(units: &[u16]) -> impl FnMut(u64, u64) -> Text + '_ {
        move |from, to| Text::from_slice(&units[from as usize..to as usize])
    }

    #[test]
    fn deltas_coalesce_and_rows_keep_the_shorthand_until_structure() {
        let mut s = MessageShape::new();
        assert_eq!(s.delta(0, 2).unwrap(), (0, 0));
        assert_eq!(s.delta(0, 1).unwrap(), (2, 2));
        assert_eq!(s.items().len(), 1, "one part's deltas are one run");
        let units: Vec<u16> = "abc_xy_z".encode_utf16().collect();
        assert_eq!(
            s.row(0, 3, &mut text_of(&units)),
            MessageChunkRow { seq: 3, text: Some("abc".into()), parts: None }
        );
        assert_eq!(
            s.event(Event::Start { part: 1, kind: "reasoning".into(), value: vec![] }).unwrap().span(),
            Some((3, 4))
        );
        assert_eq!(s.delta(1, 2).unwrap(), (4, 0));
        assert_eq!(s.event(Event::End { part: 1, value: vec![] }).unwrap().span(), Some((6, 7)));
        assert_eq!(s.delta(0, 1).unwrap(), (7, 3));
        assert!(s.delta(1, 1).is_err(), "a delta after its part's end is refused");
        assert!(s.delta(2, 1).is_err(), "a delta for a part that has not started is refused");
        assert!(s.event(Event::Set { part: 5, value: vec![] }).is_err());
        assert_eq!(s.len(), 8, "refusals record nothing");
        // Rows before the structure are text rows, after it parts rows.
        assert_eq!(s.row(1, 3, &mut text_of(&units)).parts, None);
        let row = s.row(2, 5, &mut text_of(&units));
        assert_eq!(
            row.parts.unwrap().to_string_lossy(),
            r#"[{"type":"chunk","from":2,"seq":3,"text":"c"},{"type":"part","from":3,"seq":4,"part":1,"kind":"reasoning"},{"type":"chunk","from":4,"seq":5,"text":"x","part":1,"at":0}]"#
        );
        assert_eq!(s.part_table_at(3), None);
        assert_eq!(s.part_table_at(5), Some(vec![3, 1]));
        assert_eq!(s.part_table_at(99), Some(vec![4, 2]));
        let m = s.message_at(99, &mut text_of(&units));
        assert_eq!(
            m.document().to_string_lossy(),
            r#"{"parts":[{"type":"text","text":"abcz"},{"type":"reasoning","text":"xy"}]}"#
        );
        // The replay from inside a run cuts it, moving its body offset.
        assert_eq!(
            s.frames(5, 99, &mut text_of(&units)),
            vec![
                MessageFrame::chunk(5, 1, 1, "y".into()).unwrap(),
                MessageFrame::Event { from: 6, event: Event::End { part: 1, value: vec![] } },
                MessageFrame::chunk(7, 0, 3, "z".into()).unwrap(),
            ]
        );
        assert!(s.frames(8, 99, &mut text_of(&units)).is_empty());
        assert!(s.event(Event::Set { part: 0, value: vec![("text".into(), crate::json::JsonValue::Null)] }).is_err());
    }

    #[test]
    fn a_text_turned_message_starts_with_its_text_run() {
        let mut s = MessageShape::from_text(4);
        let finish = s.event(Event::Finish { reason: "stop".into() }).unwrap();
        assert_eq!(*finish, MessageFrame::Event { from: 4, event: Event::Finish { reason: "stop".into() } });
        assert_eq!(s.cut(0, 9), vec![Item::Run { from: 0, seq: 4, part: 0, at: 0 }, Item::Event(finish)]);
        assert_eq!(MessageShape::from_text(0).items().len(), 0);
    }
}
