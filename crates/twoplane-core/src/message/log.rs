//! The producer's log of a message (docs/contract.md §8): every chunk and event in coordinate
//! order, from which a replay from any offset, a checkpoint's chunk row for any slice, and the
//! message at any offset are cut.
//!
//! It is the in-memory form of what the native plane keeps (a [`MessageShape`] over the produced
//! units), used by the tests and the vector generator to cut what the plane cuts.
//!
//! Guarantees: the frames it hands out obey the rules of [`super::rules`] (it checks each push
//! with them), a replay from `f` starts exactly at `f` (a delta across `f` is cut, its body offset
//! moved with it), and a row is today's text row exactly when its slice is part 0 text written
//! in the shorthand, which is what keeps a single-text message's rows byte-identical.

use super::fold::Message;
use super::frame::{Attrs, Event, MessageFrame};
use super::rows::MessageChunkRow;
use super::shape::MessageShape;
use crate::error::{Error, ErrorKind, Result};
use crate::text::Text;

/// Every chunk and event produced, end to end: the pushes as they came, and the text by
/// coordinate (a placeholder unit where each event lies) under a [`MessageShape`], which cuts
/// replays and rows as the native plane does.
#[derive(Clone, Debug, Default)]
pub struct MessageLog {
    frames: Vec<MessageFrame>,
    shape: MessageShape,
    units: Vec<u16>,
    message: Message,
}

/// The unit an event occupies in the text (never read: events carry no text).
const PLACEHOLDER: u16 = 0;

impl MessageLog {
    pub fn new() -> Self {
        MessageLog::default()
    }

    /// The produced length in the coordinate.
    pub fn len(&self) -> u64 {
        self.shape.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The produced message (transient parts are never in it).
    pub fn message(&self) -> &Message {
        &self.message
    }

    /// The pushes, one frame each, as they were fanned out live.
    pub fn frames(&self) -> &[MessageFrame] {
        &self.frames
    }

    pub fn shape(&self) -> &MessageShape {
        &self.shape
    }

    /// Append `text` to part `part`'s body. An empty text is no frame at all.
    pub fn delta(&mut self, part: u32, text: Text) -> Result<Option<MessageFrame>> {
        if text.is_empty() {
            return Ok(None);
        }
        if part as usize >= self.shape.part_count() {
            return Err(Error::field(ErrorKind::InvalidArgument, "part", format!("part {part} has not started")));
        }
        let (from, at) = self.shape.delta(part, text.len())?;
        self.units.extend_from_slice(text.units());
        let frame = MessageFrame::chunk(from, part, at, text)?;
        Ok(Some(self.record(frame)))
    }

    /// Start the next part; returns its number and its frame.
    pub fn start(&mut self, kind: Text, value: Attrs) -> Result<(u32, MessageFrame)> {
        let part = u32::try_from(self.shape.part_count())
            .map_err(|_| Error::new(ErrorKind::InvalidState, "a message holds at most 2^32 parts"))?;
        let frame = self.event(Event::Start { part, kind, value })?;
        Ok((part, frame))
    }

    /// Append one structural event at the end.
    pub fn event(&mut self, event: Event) -> Result<MessageFrame> {
        let frame = self.shape.event(event)?;
        self.units.push(PLACEHOLDER);
        Ok(self.record((*frame).clone()))
    }

    fn record(&mut self, frame: MessageFrame) -> MessageFrame {
        // The shape checked the frame by the same rules the fold applies.
        let _ = self.message.apply(&frame);
        self.frames.push(frame.clone());
        frame
    }

    fn text(&self) -> impl FnMut(u64, u64) -> Text + '_ {
        |from, to| Text::from_slice(&self.units[from as usize..to as usize])
    }

    /// A replay from `f`: every run and event from `f` on, the one across `f` cut at it (one
    /// chunk per run of a part's deltas).
    pub fn frames_from(&self, f: u64) -> Vec<MessageFrame> {
        self.shape.frames(f, self.len(), &mut self.text())
    }

    /// The `open` of a replay from `f`, with the part table when something structural happened
    /// before `f`.
    pub fn open_frame(&self, stream_id: Text, f: u64, durable_seq: u64, ended: bool) -> MessageFrame {
        let parts = self.shape.part_table_at(f);
        MessageFrame::Open { stream_id, from: f, seq: self.len(), durable_seq, ended, parts }
    }

    /// The message as it stood at `d` (clamped to the produced length).
    pub fn message_at(&self, d: u64) -> Message {
        self.shape.message_at(d, &mut self.text())
    }

    /// The chunk row of a checkpoint of `from..to` ([`MessageShape::row`]).
    pub fn row(&self, from: u64, to: u64) -> MessageChunkRow {
        self.shape.row(from, to, &mut self.text())
    }

    /// The document a seal stores for the whole message, with its spans ([`super::spans`]).
    pub fn sealed_document(&self) -> Text {
        self.shape.sealed_document(self.message(), self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_and_rows_are_cut_exactly() {
        let mut log = MessageLog::new();
        log.delta(0, "ab".into()).unwrap();
        assert_eq!(log.row(0, 1), MessageChunkRow { seq: 1, text: Some("a".into()), parts: None });
        let (p, _) = log.start("reasoning".into(), vec![]).unwrap();
        log.delta(p, "xyz".into()).unwrap();
        log.event(Event::Transient { kind: Some("data-t".into()), value: vec![] }).unwrap();
        log.delta(0, "c".into()).unwrap();
        assert_eq!(log.len(), 8);
        assert_eq!(
            log.frames_from(4),
            vec![
                MessageFrame::chunk(4, 1, 1, "yz".into()).unwrap(),
                MessageFrame::Event { from: 6, event: Event::Transient { kind: Some("data-t".into()), value: vec![] } },
                MessageFrame::chunk(7, 0, 2, "c".into()).unwrap(),
            ]
        );
        let row = log.row(4, 7);
        assert_eq!(
            row.parts.unwrap().to_string_lossy(),
            r#"[{"type":"chunk","from":4,"seq":6,"text":"yz","part":1,"at":1},{"type":"transient","from":6,"seq":7}]"#
        );
        assert_eq!(log.message_at(5).parts()[1].body, "xy");
        assert_eq!(log.message_at(5).part_table(), Some(vec![2, 2]));
        assert_eq!(log.message_at(2).part_table(), None);
        assert!(log.delta(5, "x".into()).is_err());
        // Reversed or outrunning ranges are empty, never a panic.
        assert_eq!(log.row(5, 3), MessageChunkRow { seq: 3, text: Some(Text::new()), parts: None });
        assert_eq!(log.row(7, 99).seq, 8);
        assert!(log.frames_from(99).is_empty());
        assert_eq!(log.delta(0, Text::new()).unwrap(), None);
    }
}
