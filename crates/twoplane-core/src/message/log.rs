//! The producer's log of a message (docs/contract.md §8): every chunk and event in coordinate
//! order, from which a replay from any offset, a checkpoint's chunk row for any slice, and the
//! message at any offset are cut.
//!
//! Guarantees: the frames it hands out obey the rules of [`super::rules`] (it checks each push
//! with them), a replay from `f` starts exactly at `f` (a delta across `f` is cut, its body offset
//! moved with it), and a row is today's text row exactly when its slice is part 0 text written
//! in the shorthand, which is what keeps a single-text message's rows byte-identical.

use super::codec::encode_frame_list;
use super::fold::Message;
use super::frame::{Attrs, Event, MessageFrame};
use super::rows::MessageChunkRow;
use crate::error::{Error, ErrorKind, Result};
use crate::text::Text;

/// Every chunk and event produced, end to end.
#[derive(Clone, Debug, Default)]
pub struct MessageLog {
    frames: Vec<MessageFrame>,
    message: Message,
}

impl MessageLog {
    pub fn new() -> Self {
        MessageLog::default()
    }

    /// The produced length in the coordinate.
    pub fn len(&self) -> u64 {
        self.message.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The produced message (transient parts are never in it).
    pub fn message(&self) -> &Message {
        &self.message
    }

    pub fn frames(&self) -> &[MessageFrame] {
        &self.frames
    }

    /// Append `text` to part `part`'s body. An empty text is no frame at all.
    pub fn delta(&mut self, part: u32, text: Text) -> Result<Option<MessageFrame>> {
        if text.is_empty() {
            return Ok(None);
        }
        let at =
            self.message.parts().get(part as usize).map(|p| p.body.len() as u64).ok_or_else(|| {
                Error::field(ErrorKind::InvalidArgument, "part", format!("part {part} has not started"))
            })?;
        let frame = MessageFrame::chunk(self.len(), part, at, text)?;
        self.push(frame).map(Some)
    }

    /// Start the next part; returns its number and its frame.
    pub fn start(&mut self, kind: Text, value: Attrs) -> Result<(u32, MessageFrame)> {
        let part = u32::try_from(self.message.parts().len())
            .map_err(|_| Error::new(ErrorKind::InvalidState, "a message holds at most 2^32 parts"))?;
        let frame = self.event(Event::Start { part, kind, value })?;
        Ok((part, frame))
    }

    /// Append one structural event at the end.
    pub fn event(&mut self, event: Event) -> Result<MessageFrame> {
        self.push(MessageFrame::Event { from: self.len(), event })
    }

    fn push(&mut self, frame: MessageFrame) -> Result<MessageFrame> {
        frame.validate()?;
        self.message.apply(&frame)?;
        self.frames.push(frame.clone());
        Ok(frame)
    }

    /// The frames that cover `from..to`, cut to it.
    fn slice(&self, from: u64, to: u64) -> Vec<MessageFrame> {
        let to = to.min(self.len());
        if from >= to {
            return Vec::new();
        }
        // Frames are contiguous, so the first one that ends after `from` is found by bisection.
        let start = self.frames.partition_point(|f| f.span().is_some_and(|(_, seq)| seq <= from));
        let mut out = Vec::new();
        for frame in &self.frames[start..] {
            let Some((f_from, f_seq)) = frame.span() else { continue };
            if f_from >= to {
                break;
            }
            out.push(cut(frame, from.max(f_from), to.min(f_seq)));
        }
        out
    }

    /// A replay from `f`: every frame from `f` on, the one across `f` cut at it.
    pub fn frames_from(&self, f: u64) -> Vec<MessageFrame> {
        self.slice(f, self.len())
    }

    /// The `open` of a replay from `f`, with the part table when something structural happened
    /// before `f`.
    pub fn open_frame(&self, stream_id: Text, f: u64, durable_seq: u64, ended: bool) -> MessageFrame {
        let parts = self.message_at(f).part_table();
        MessageFrame::Open { stream_id, from: f, seq: self.len(), durable_seq, ended, parts }
    }

    /// The message as it stood at `d` (clamped to the produced length).
    pub fn message_at(&self, d: u64) -> Message {
        let mut m = Message::new();
        for frame in self.slice(0, d.min(self.len())) {
            // The log only holds frames that applied in this order, so each applies again.
            let _ = m.apply(&frame);
        }
        m
    }

    /// The chunk row of a checkpoint of `from..to`: a text row when the slice is part 0 text in
    /// the shorthand, else a parts row whose transient frames carry no content.
    pub fn row(&self, from: u64, to: u64) -> MessageChunkRow {
        // A checkpoint covers what was produced: an end past it is the produced length.
        let to = to.min(self.len());
        let frames = self.slice(from, to);
        if frames.iter().all(|f| matches!(f.to_frame(), Some(crate::frame::Frame::Chunk { .. }))) {
            let mut text = Text::new();
            for f in &frames {
                if let MessageFrame::Chunk { text: t, .. } = f {
                    text.push_units(t.units());
                }
            }
            return MessageChunkRow { seq: to, text: Some(text), parts: None };
        }
        let stored: Vec<MessageFrame> = frames
            .into_iter()
            .map(|f| match f {
                MessageFrame::Event { from, event } => MessageFrame::Event { from, event: event.stored() },
                other => other,
            })
            .collect();
        MessageChunkRow { seq: to, text: Some(Text::new()), parts: Some(encode_frame_list(&stored)) }
    }
}

/// `frame` cut to `from..to` (within its span): a chunk keeps the units inside, its body offset
/// moved by what was cut off the front; an event, one unit wide, is whole or not asked for.
fn cut(frame: &MessageFrame, from: u64, to: u64) -> MessageFrame {
    match frame {
        MessageFrame::Chunk { from: f, part, at, text, .. } => {
            let skip = (from - f) as usize;
            let keep = (to - from) as usize;
            let units = text.units().get(skip..skip + keep).unwrap_or_default();
            MessageFrame::Chunk { from, seq: to, part: *part, at: at + skip as u64, text: Text::from_slice(units) }
        }
        other => other.clone(),
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
