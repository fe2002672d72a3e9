//! A stream that goes on (docs/contract.md §9): a new hosted stream seeded with the message a
//! stream already made, so that the same coordinate goes on from its end.
//!
//! Guarantees (each under the stream's lock, before the stream is shared):
//! - The seed is the message's frames in coordinate order, checked by the part rules as a
//!   producer's pushes are (`produce.rs`): the stream then holds exactly that text and shape, and
//!   its durable length is the seed's end (the store holds it), so the next push starts at that
//!   offset, a joiner's replay includes the seed, and the seal compacts the whole message.
//! - The frames of an ended stream still hosted here are its own, cut at an offset it holds.

use twoplane_core::message::{MessageFrame, MessageShape};
use twoplane_core::Text;

use super::stream::LiveStream;
use crate::error::{PlaneError, PlaneErrorKind};

impl LiveStream {
    /// The frames of this stream's message up to `at`, when it still holds all of them.
    pub fn frames_until(&self, at: u64) -> Option<Vec<MessageFrame>> {
        let st = self.lock();
        if st.text.floor() > 0 || at > st.text.seq() {
            return None;
        }
        let units = |f: u64, t: u64| Text::from_slice(&st.text.range(f, t));
        Some(match &st.shape {
            None if at == 0 => Vec::new(),
            None => vec![MessageFrame::Chunk { from: 0, seq: at, part: 0, at: 0, text: units(0, at) }],
            Some(shape) => shape.frames(0, at, &mut |f, t| units(f, t)),
        })
    }

    /// The message this stream made so far, when it still holds all of it.
    pub fn message(&self) -> Option<twoplane_core::message::Message> {
        let frames = self.frames_until(self.seq())?;
        let mut message = twoplane_core::message::Message::new();
        for frame in &frames {
            // Every frame was checked by the part rules when it was produced.
            let _ = message.apply(frame);
        }
        Some(message)
    }

    /// Seed a new stream with `frames` (see the module guarantees); they end at `at`, which the
    /// store holds.
    pub fn seed(&self, frames: &[MessageFrame], at: u64) -> Result<(), PlaneError> {
        let mut st = self.lock();
        let bad = |why: String| PlaneError::new(PlaneErrorKind::Store, format!("stream {}: {why}", self.id));
        for frame in frames {
            let from = st.text.seq();
            match frame {
                MessageFrame::Chunk { from: f, seq, part, text, .. } if *f == from => {
                    if let Some(shape) = st.shape.as_mut() {
                        shape.delta(*part, text.len()).map_err(|e| bad(e.message().to_owned()))?;
                    } else if *part != 0 {
                        return Err(bad(format!("part {part} has not started")));
                    }
                    st.text.append(text.units(), *seq);
                }
                MessageFrame::Event { from: f, event } if *f == from => {
                    let shape = st.shape.get_or_insert_with(|| MessageShape::from_text(from));
                    shape.event(event.clone()).map_err(|e| bad(e.message().to_owned()))?;
                    st.text.append(&[super::produce::EVENT_PLACEHOLDER], from + 1);
                }
                other => return Err(bad(format!("the stored frames leave a gap at {from}: {other:?}"))),
            }
        }
        if st.text.seq() != at {
            return Err(bad(format!("the stored frames end at {}, the row at {at}", st.text.seq())));
        }
        st.durable.raise_to(at);
        Ok(())
    }

    /// The chunk row a compacted row goes back to: the seed as part 0 text, or as a parts row
    /// (`(text, parts)`).
    pub fn expanded_row(&self) -> Result<(String, Option<String>), PlaneError> {
        let st = self.lock();
        let at = st.text.seq();
        match st.shape.as_ref().filter(|shape| shape.structured_before(at)) {
            None => Ok((crate::target::utf8_for_table(&st.text.range(0, at), "the stored text")?, None)),
            Some(shape) => {
                let row = shape.row(0, at, &mut |f, t| Text::from_slice(&st.text.range(f, t)));
                Ok((String::new(), Some(row.parts.map(|json| json.to_string_lossy()).unwrap_or_default())))
            }
        }
    }
}
