//! The order of a compacted message (docs/contract.md §8, "The stored document"): the document a
//! seal writes keeps, beside the parts, where each part's body runs and each structural event lay
//! on the coordinate, so that an ended message read back from the store can be cut at any offset
//! and continued exactly, as its chunk rows could before the seal folded them.
//!
//! The member is `"spans"`, an array in coordinate order of
//! - `[part, len]`: `len` units of part `part`'s body (the next ones: a part's runs follow each
//!   other in its body), and
//! - an event frame as the frame codec writes it (`{"type":"part","from":3,"seq":4,...}`),
//!   transient parts without their content, as in a chunk row.
//!
//! Parts are numbered as the producer numbered them (part 0 is the implicit text part, listed in
//! `"parts"` only once something touched it). The text is held once, in the parts' bodies.
//!
//! Guarantees:
//! - [`document_frames`] gives back exactly the frames [`sealed_document`] was written from (runs
//!   of one part merged), or `None` when the document has no spans (one compacted by an older
//!   version: known only whole, as before) or when the spans do not fold to the document's own
//!   parts (a document edited after the seal, a body made longer or shorter): never a message
//!   other than the document's. (A body edited to another text of the same length cuts as
//!   edited: the text is the document's.)
//! - A message whose frames are the same writes the same document, byte for byte.

use super::codec::{encode_message_frame_into, message_frame_from_value};
use super::fold::Message;
use super::frame::{Event, MessageFrame};
use crate::error::Result;
use crate::jsnum;
use crate::json::{parse_value, JsonValue};
use crate::text::Text;

/// One stretch of a produced message, as a seal writes it: `len` body units of part `part`, or
/// one structural event's frame.
#[derive(Clone, Copy, Debug)]
pub enum SealedSpan<'a> {
    Run { part: u32, len: u64 },
    Event(&'a MessageFrame),
}

/// The document of `message` with its spans (from 0 to the message's end, in coordinate order;
/// adjacent runs of one part are written as one), as a seal stores it.
pub fn sealed_document<'a>(message: &Message, spans: impl IntoIterator<Item = SealedSpan<'a>>) -> Text {
    let mut entries: Vec<String> = Vec::new();
    let mut run: Option<(u32, u64)> = None;
    for span in spans {
        match span {
            SealedSpan::Run { part, len } => match &mut run {
                Some((p, n)) if *p == part => *n += len,
                _ => {
                    entries.extend(run.take().map(|(p, n)| format!("[{p},{n}]")));
                    run = Some((part, len));
                }
            },
            SealedSpan::Event(frame) => {
                entries.extend(run.take().map(|(p, n)| format!("[{p},{n}]")));
                let mut out = String::new();
                match frame {
                    MessageFrame::Event { from, event } => {
                        encode_message_frame_into(&mut out, &MessageFrame::Event { from: *from, event: event.stored() })
                    }
                    other => encode_message_frame_into(&mut out, other),
                }
                entries.push(out);
            }
        }
    }
    entries.extend(run.take().map(|(p, n)| format!("[{p},{n}]")));
    let mut document = message.document().into_units();
    // The document is an object: its closing brace makes way for the spans member.
    document.pop();
    let mut out = Text::from_units(document);
    out.push_str(",\"spans\":[");
    out.push_str(&entries.join(","));
    out.push_str("]}");
    out
}

/// One entry of the spans.
enum Span {
    Run { part: u32, len: u64 },
    Event(MessageFrame),
}

/// The frames a sealed document was written from, in coordinate order, and the message's length;
/// `None` for a document without spans or whose spans do not fold to its parts (see the module
/// header). A document that is not one at all is the error [`Message::from_document`] gives.
pub fn document_frames(document: &Text) -> Result<Option<(Vec<MessageFrame>, u64)>> {
    let Some(src) = document.to_string_checked() else {
        // Not valid Unicode: the whole-document reader says how.
        return Message::from_document(document, 0).map(|_| None);
    };
    let value = parse_value(&src)?;
    if !matches!(value, JsonValue::Object(_)) {
        return Message::from_document(document, 0).map(|_| None);
    }
    let spans = match value.get("spans") {
        Some(JsonValue::Array(entries)) => match entries.iter().map(span_of).collect::<Option<Vec<Span>>>() {
            Some(spans) => spans,
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    let mut len = 0u64;
    for span in &spans {
        len = match span {
            Span::Run { len: n, .. } => len.saturating_add(*n),
            Span::Event(_) => len.saturating_add(1),
        };
    }
    if len > jsnum::MAX_SAFE_INTEGER {
        return Ok(None);
    }
    let whole = Message::from_document(document, len)?;
    Ok(frames_of(spans, &whole).map(|frames| (frames, len)))
}

fn span_of(entry: &JsonValue) -> Option<Span> {
    match entry {
        JsonValue::Array(run) => match &run[..] {
            [part, len] => Some(Span::Run {
                part: u32::try_from(jsnum::as_offset(part.as_f64()?)?).ok()?,
                len: jsnum::as_offset(len.as_f64()?)?,
            }),
            _ => None,
        },
        JsonValue::Object(_) => match message_frame_from_value(entry).ok()? {
            frame @ MessageFrame::Event { .. } => Some(Span::Event(frame)),
            _ => None,
        },
        _ => None,
    }
}

/// Rebuild the frames, each run's text cut from its part's body in `whole`, and check that they
/// fold by the rules to `whole` itself.
fn frames_of(spans: Vec<Span>, whole: &Message) -> Option<Vec<MessageFrame>> {
    let starts = spans
        .iter()
        .filter(|s| matches!(s, Span::Event(MessageFrame::Event { event: Event::Start { .. }, .. })))
        .count();
    // Part 0 is left out of the document while nothing touched it: the listed parts are then the
    // producer's from 1 on, unless the document's reader put the implicit part 0 back itself.
    let count = starts + 1;
    let shift = count.checked_sub(whole.parts().len()).filter(|&s| s <= 1)?;
    let body = |part: u32| -> &[u16] {
        (part as usize).checked_sub(shift).and_then(|i| whole.parts().get(i)).map_or(&[][..], |p| p.body.units())
    };
    let mut offsets = vec![0u64; count];
    let mut frames = Vec::with_capacity(spans.len());
    let mut folded = Message::new();
    let mut pos = 0u64;
    for span in spans {
        let frame = match span {
            Span::Run { part, len } => {
                let at = offsets.get_mut(part as usize)?;
                let units = body(part).get(*at as usize..at.checked_add(len)? as usize)?;
                let frame = MessageFrame::chunk(pos, part, *at, Text::from_slice(units)).ok()?;
                *at += len;
                frame
            }
            Span::Event(frame @ MessageFrame::Event { from, .. }) if from == pos => frame,
            Span::Event(_) => return None,
        };
        folded.apply(&frame).ok()?;
        pos = frame.span()?.1;
        frames.push(frame);
    }
    let same = folded.len() == whole.len() && folded.document() == whole.document();
    same.then_some(frames)
}
