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
use super::shape::Item;
use crate::error::Result;
use crate::jsnum;
use crate::json::{parse_value, JsonValue};
use crate::text::Text;

/// The document of `message` with the spans of `items` (a shape's items from 0 to the message's
/// end, in order), as a seal stores it.
pub fn sealed_document(message: &Message, items: &[Item]) -> Text {
    let mut entries: Vec<String> = Vec::with_capacity(items.len());
    let mut run: Option<(u32, u64)> = None;
    for item in items {
        match item {
            Item::Run { from, seq, part, .. } => match &mut run {
                Some((p, len)) if p == part => *len += seq - from,
                _ => {
                    entries.extend(run.take().map(|(p, len)| format!("[{p},{len}]")));
                    run = Some((*part, seq - from));
                }
            },
            Item::Event(frame) => {
                entries.extend(run.take().map(|(p, len)| format!("[{p},{len}]")));
                let mut out = String::new();
                match &**frame {
                    MessageFrame::Event { from, event } => {
                        encode_message_frame_into(&mut out, &MessageFrame::Event { from: *from, event: event.stored() })
                    }
                    other => encode_message_frame_into(&mut out, other),
                }
                entries.push(out);
            }
        }
    }
    entries.extend(run.take().map(|(p, len)| format!("[{p},{len}]")));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_value;
    use crate::message::log::MessageLog;
    use crate::message::rows::assemble_durable_message_at;
    use crate::message::stored::stored_frames;

    fn attrs(json: &str) -> crate::message::frame::Attrs {
        parse_value(json).unwrap().as_object().unwrap().to_vec()
    }

    /// An AI SDK-like message: part 0 untouched, a reasoning part and a tool call whose input
    /// deltas interleave, its output set later, a transient part, metadata and a finish.
    fn produced() -> MessageLog {
        let mut log = MessageLog::new();
        let (r, _) = log.start("reasoning".into(), vec![]).unwrap();
        log.delta(r, "thi".into()).unwrap();
        let (t, _) = log.start("tool-search".into(), attrs(r#"{"toolCallId":"c1"}"#)).unwrap();
        log.delta(t, "{\"q\":".into()).unwrap();
        log.delta(r, Text::from_units(vec![0x6E, 0xD83D])).unwrap();
        log.delta(r, Text::from_units(vec![0xDE00, 0x6B])).unwrap();
        log.delta(t, "1}".into()).unwrap();
        log.event(Event::End { part: r, value: vec![] }).unwrap();
        log.event(Event::Set { part: t, value: attrs(r#"{"state":"input-available","input":{"q":1}}"#) }).unwrap();
        log.event(Event::Transient { kind: Some("data-t".into()), value: attrs(r#"{"data":1}"#) }).unwrap();
        let (x, _) = log.start("text".into(), vec![]).unwrap();
        log.delta(x, "ok".into()).unwrap();
        log.event(Event::Set { part: t, value: attrs(r#"{"state":"output-available","output":[2]}"#) }).unwrap();
        log.event(Event::Meta { value: attrs(r#"{"m":1}"#) }).unwrap();
        log.event(Event::Finish { reason: "stop".into() }).unwrap();
        log
    }

    #[test]
    fn a_sealed_document_cuts_exactly_at_every_offset() {
        let log = produced();
        let doc = log.sealed_document();
        let len = log.len();
        let whole = log.message().document().to_string_lossy();
        let sealed = doc.to_string_lossy();
        // The document the app reads, then the spans: the parts are written once.
        assert!(sealed.starts_with(&whole[..whole.len() - 1]), "{sealed}");
        assert!(sealed.contains(r#""spans":[{"type":"part","from":0,"seq":1,"part":1,"kind":"reasoning"},[1,3],"#));
        assert!(sealed.contains(r#"{"type":"transient","from":"#) && !sealed.contains(r#""data":1"#));
        for at in 0..len {
            let cut = assemble_durable_message_at(None, Some(&doc), len, &[], at).unwrap();
            assert_eq!(cut, Some(log.message_at(at)), "at {at}");
        }
        let at_end = assemble_durable_message_at(None, Some(&doc), len, &[], len).unwrap().unwrap();
        assert_eq!(at_end.document(), log.message().document());
        // Back to the frames the producer made, which fold to the message.
        let frames = stored_frames(None, Some(&doc), &[]).unwrap().unwrap();
        let stored: Vec<MessageFrame> = log
            .frames_from(0)
            .into_iter()
            .map(|f| match f {
                MessageFrame::Event { from, event } => MessageFrame::Event { from, event: event.stored() },
                other => other,
            })
            .collect();
        assert_eq!(frames, stored);
        assert_eq!(document_frames(&doc).unwrap().map(|(_, n)| n), Some(len));
    }

    #[test]
    fn a_document_without_spans_or_edited_since_is_known_only_whole() {
        let log = produced();
        let len = log.len();
        let plain = log.message().document();
        assert_eq!(document_frames(&plain).unwrap(), None);
        assert_eq!(assemble_durable_message_at(None, Some(&plain), len, &[], 3).unwrap(), None);
        assert_eq!(stored_frames(None, Some(&plain), &[]).unwrap(), None);
        let sealed = log.sealed_document().to_string_lossy();
        // A body made longer after the seal, spans that name a part the parts do not have, spans
        // longer than the bodies, an event out of place: none of them is read as a cut.
        let edits = [
            sealed.replacen("\"ok\"", "\"okay\"", 1),
            sealed.replacen("[1,3]", "[7,3]", 1),
            sealed.replacen("[1,3]", "[1,30]", 1),
            sealed.replacen(r#""from":0,"seq":1,"part":1"#, r#""from":1,"seq":2,"part":1"#, 1),
            sealed.replacen("\"spans\":[", "\"spans\":[7,", 1),
        ];
        for edited in edits {
            assert_ne!(edited, sealed);
            let edited = Text::from(edited.as_str());
            assert_eq!(document_frames(&edited).unwrap(), None, "{edited}");
            assert_eq!(assemble_durable_message_at(None, Some(&edited), len, &[], 3).unwrap(), None);
        }
        assert!(document_frames(&Text::from("[1]")).is_err(), "not a document at all");
    }

    #[test]
    fn a_text_only_start_and_a_listed_part_0_number_the_same() {
        // Part 0 written to before anything structural: listed, so no shift.
        let mut log = MessageLog::new();
        log.delta(0, "ab".into()).unwrap();
        let (r, _) = log.start("reasoning".into(), vec![]).unwrap();
        log.delta(r, "x".into()).unwrap();
        log.delta(0, "c".into()).unwrap();
        let doc = log.sealed_document();
        assert!(doc.to_string_lossy().contains(r#""spans":[[0,2],"#));
        for at in 0..log.len() {
            assert_eq!(
                assemble_durable_message_at(None, Some(&doc), log.len(), &[], at).unwrap(),
                Some(log.message_at(at))
            );
        }
    }
}
