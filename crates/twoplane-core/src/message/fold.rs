//! The accumulated message (docs/contract.md §8): its parts with their bodies and attributes,
//! its metadata and finish reason, and the stored JSON document.
//!
//! [`Message::apply`] folds one chunk or event by the rules of [`Tally`] and nothing else, so the
//! durable assembly, the producer's log and the Rust reader build the same message from the same
//! frames. The document is written as `JSON.stringify` writes the same object.

use super::codec::write_attrs;
use super::frame::{Attrs, Event, FrameNumbers, MessageFrame, MessageKind};
use super::rules::{Breach, Decision, Tally};
use crate::error::{Error, ErrorKind, Result};
use crate::jsnum;
use crate::json::{parse_value, write_json_string, wrong_type, JsonValue};
use crate::text::Text;

/// One part: its kind, body and attributes, and whether its body ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub kind: Text,
    pub body: Text,
    pub attrs: Attrs,
    pub ended: bool,
}

impl Part {
    fn new(kind: Text, attrs: Attrs) -> Self {
        Part { kind, body: Text::new(), attrs, ended: false }
    }

    /// The document key of the body: `inputText` for a tool call, `text` otherwise.
    pub fn body_key(&self) -> &'static str {
        if is_tool_kind(&self.kind) {
            "inputText"
        } else {
            "text"
        }
    }

    /// Whether the document writes the body: always for `text` and `reasoning`, else when not empty.
    fn writes_body(&self) -> bool {
        !self.body.is_empty() || self.kind == "text" || self.kind == "reasoning"
    }
}

fn is_tool_kind(kind: &Text) -> bool {
    kind.units().starts_with(&"tool-".encode_utf16().collect::<Vec<_>>()) || *kind == "dynamic-tool"
}

/// The message as the events so far make it.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    parts: Vec<Part>,
    metadata: Attrs,
    finish_reason: Option<Text>,
    tally: Tally,
}

impl Default for Message {
    fn default() -> Self {
        Message::from_text(Text::new())
    }
}

impl Message {
    /// An empty message: an empty part 0.
    pub fn new() -> Self {
        Message::default()
    }

    /// A message of one text, part 0 (today's durable text).
    pub fn from_text(body: Text) -> Self {
        let tally = Tally::new(body.len() as f64);
        Message {
            parts: vec![Part { body, ..Part::new("text".into(), Vec::new()) }],
            metadata: Vec::new(),
            finish_reason: None,
            tally,
        }
    }

    /// The length in the coordinate: where a reader holding this message joins.
    pub fn len(&self) -> u64 {
        self.tally.pos() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    pub fn metadata(&self) -> &Attrs {
        &self.metadata
    }

    pub fn finish_reason(&self) -> Option<&Text> {
        self.finish_reason.as_ref()
    }

    /// The numbers the rules read.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Whether anything structural happened: then part 0 alone no longer says the message.
    pub fn has_structure(&self) -> bool {
        self.parts.len() > 1 || self.parts.first().is_none_or(|p| p.body.len() as u64 != self.len())
    }

    /// The body length of every part (an `open`'s `parts`), `None` when nothing structural
    /// happened (the table is then `[len]`).
    pub fn part_table(&self) -> Option<Vec<u64>> {
        self.has_structure().then(|| self.parts.iter().map(|p| p.body.len() as u64).collect())
    }

    /// Fold one chunk or event. A frame that breaks a rule of §8 is an `invalid_field` error (an
    /// `invalid_offset` one for a gap) and changes nothing; a replay changes nothing.
    pub fn apply(&mut self, frame: &MessageFrame) -> Result<Decision> {
        if frame.span().is_none() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("a {} frame is not part of a message's content", frame.kind().as_str()),
            ));
        }
        let n = FrameNumbers::of(frame, &Text::new());
        let kind = frame.kind();
        let decision = self.tally.decide(kind, n.a, n.b, n.c, n.part, n.at).map_err(|b| breach_error(kind, b))?;
        self.apply_decided(decision, frame);
        Ok(decision)
    }

    fn apply_decided(&mut self, decision: Decision, frame: &MessageFrame) {
        let Some((_, seq)) = frame.span() else { return };
        match (decision, frame) {
            (Decision::Body { part, at, .. }, MessageFrame::Chunk { text, .. }) => {
                if let Some(p) = self.parts.get_mut(part as usize) {
                    // Rule 5 of §4 for the part: body = body[..at] ++ text. The units the body held
                    // past `at` are replaced by the chunk's, as the text reader does.
                    p.body.truncate(at as usize);
                    p.body.push_units(text.units());
                }
            }
            (Decision::Start { .. }, MessageFrame::Event { event: Event::Start { kind, value, .. }, .. }) => {
                self.parts.push(Part::new(kind.clone(), value.clone()));
            }
            (Decision::End { part }, MessageFrame::Event { event: Event::End { value, .. }, .. }) => {
                if let Some(p) = self.parts.get_mut(part as usize) {
                    p.ended = true;
                    merge(&mut p.attrs, value);
                }
            }
            (Decision::Set { part }, MessageFrame::Event { event: Event::Set { value, .. }, .. }) => {
                if let Some(p) = self.parts.get_mut(part as usize) {
                    merge(&mut p.attrs, value);
                }
            }
            (Decision::Meta, MessageFrame::Event { event: Event::Meta { value }, .. }) => {
                merge(&mut self.metadata, value)
            }
            (Decision::Finish, MessageFrame::Event { event: Event::Finish { reason }, .. }) => {
                self.finish_reason = Some(reason.clone());
            }
            // Held changes nothing; a transient part is live only, so the message never keeps it.
            _ => {}
        }
        self.tally.commit(decision, seq as f64);
    }

    /// The stored document: `{"parts":[...],"metadata":{...}?,"finishReason":"..."?}`.
    pub fn document(&self) -> Text {
        let mut out = String::from("{\"parts\":[");
        let mut first = true;
        for (i, p) in self.parts.iter().enumerate() {
            // Part 0 exists in every message; it is listed once anything touched it. Ended
            // counts: every part a document lists is loaded as ended, so a listed empty text
            // part stays listed through a load.
            if i == 0 && p.body.is_empty() && p.attrs.is_empty() && !p.ended {
                continue;
            }
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str("{\"type\":");
            write_json_string(&mut out, p.kind.units());
            if p.writes_body() {
                out.push_str(",\"");
                out.push_str(p.body_key());
                out.push_str("\":");
                write_json_string(&mut out, p.body.units());
            }
            for (k, v) in &p.attrs {
                out.push(',');
                write_json_string(&mut out, k.units());
                out.push(':');
                crate::json::write_json_value(&mut out, v);
            }
            out.push('}');
        }
        out.push(']');
        if !self.metadata.is_empty() {
            out.push_str(",\"metadata\":");
            write_attrs(&mut out, &self.metadata);
        }
        if let Some(reason) = &self.finish_reason {
            out.push_str(",\"finishReason\":");
            write_json_string(&mut out, reason.units());
        }
        out.push('}');
        Text::from(out.as_str())
    }

    /// The plain-text rendering stored in `body`: the text parts' bodies, concatenated.
    pub fn text_body(&self) -> Text {
        let mut out = Text::new();
        for p in self.parts.iter().filter(|p| p.kind == "text") {
            out.push_units(p.body.units());
        }
        out
    }

    /// A stored document, `len` units long in the coordinate (the row's `seq`). Parts are
    /// numbered in order, after an untouched part 0 when the first listed part is not `text`;
    /// every listed part counts as ended, since a document is written at the seal.
    pub fn from_document(json: &Text, len: u64) -> Result<Message> {
        let src = json
            .to_string_checked()
            .ok_or_else(|| Error::field(ErrorKind::InvalidJson, "parts", "a stored document is not valid Unicode"))?;
        let doc = parse_value(&src)?;
        if !matches!(doc, JsonValue::Object(_)) {
            return Err(wrong_type("parts", "an object", &doc));
        }
        let listed = match doc.get("parts") {
            Some(JsonValue::Array(items)) => items,
            Some(other) => return Err(wrong_type("parts", "an array", other)),
            None => return Err(Error::field(ErrorKind::MissingField, "parts", "a document lists its parts")),
        };
        let mut parts = Vec::with_capacity(listed.len() + 1);
        for item in listed {
            let (Some(members), Some(kind)) = (item.as_object(), item.get("type").and_then(JsonValue::as_text)) else {
                return Err(Error::field(
                    ErrorKind::InvalidField,
                    "parts",
                    "every part is an object with a string type",
                ));
            };
            let mut part = Part::new(kind.clone(), Vec::new());
            part.ended = true;
            let key = part.body_key();
            for (k, v) in members {
                if k == "type" {
                    continue;
                }
                if k == key {
                    part.body = v
                        .as_text()
                        .cloned()
                        .ok_or_else(|| Error::field(ErrorKind::InvalidField, "parts", "a part's body is a string"))?;
                } else {
                    merge(&mut part.attrs, &[(k.clone(), v.clone())]);
                }
            }
            parts.push(part);
        }
        // The implicit part 0, untouched, when the document does not start with a text part.
        let implicit = parts.first().is_none_or(|p| p.kind != "text");
        if implicit {
            parts.insert(0, Part::new("text".into(), Vec::new()));
        }
        let metadata = match doc.get("metadata") {
            None => Vec::new(),
            Some(JsonValue::Object(m)) => m.clone(),
            Some(other) => return Err(wrong_type("metadata", "an object", other)),
        };
        let finish_reason = match doc.get("finishReason") {
            None => None,
            Some(JsonValue::String(t)) => Some(t.clone()),
            Some(other) => return Err(wrong_type("finishReason", "a string", other)),
        };
        let lens: Vec<f64> = parts.iter().map(|p| p.body.len() as f64).collect();
        if !Tally::table_fits(len as f64, &lens) || len > jsnum::MAX_SAFE_INTEGER {
            return Err(Error::field(ErrorKind::InvalidOffset, "seq", "the document's bodies are longer than its seq"));
        }
        let mut tally = Tally::with_parts(len as f64, &lens);
        for (i, p) in parts.iter().enumerate() {
            if p.ended {
                tally.commit(Decision::End { part: i as u32 }, len as f64);
            }
        }
        Ok(Message { parts, metadata, finish_reason, tally })
    }
}

/// Members of `value` replace those of `attrs` with the same key in place, or are appended.
fn merge(attrs: &mut Attrs, value: &[(Text, JsonValue)]) {
    for (k, v) in value {
        match attrs.iter_mut().find(|(key, _)| key == k) {
            Some(slot) => slot.1 = v.clone(),
            None => attrs.push((k.clone(), v.clone())),
        }
    }
}

/// The error for a frame that breaks a rule, naming the rule.
pub(crate) fn breach_error(kind: MessageKind, breach: Breach) -> Error {
    let n = jsnum::format;
    let what = kind.as_str();
    match breach {
        Breach::Gap { from, pos } => Error::field(
            ErrorKind::InvalidOffset,
            "from",
            format!("{what} at {} leaves a gap after {}", n(from), n(pos)),
        ),
        Breach::Span => Error::field(ErrorKind::ChunkSpan, "text", "chunk does not span exactly its offsets"),
        Breach::Malformed => Error::field(ErrorKind::InvalidField, "part", format!("{what} is malformed")),
        Breach::UnknownPart { part } => {
            Error::field(ErrorKind::InvalidField, "part", format!("{what} for part {} names no known part", n(part)))
        }
        Breach::NotNext { part, count } => Error::field(
            ErrorKind::InvalidField,
            "part",
            format!("part {} does not follow the {} parts", n(part), n(count)),
        ),
        Breach::BodyBreak { part, at, len } => Error::field(
            ErrorKind::InvalidField,
            "at",
            format!("chunk for part {} at {} does not continue its body of {} units", n(part), n(at), n(len)),
        ),
        Breach::AfterEnd { part } => {
            Error::field(ErrorKind::InvalidField, "part", format!("chunk for part {} follows its end", n(part)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(json: &str) -> Attrs {
        parse_value(json).unwrap().as_object().unwrap().to_vec()
    }

    fn ev(from: u64, event: Event) -> MessageFrame {
        MessageFrame::Event { from, event }
    }

    #[test]
    fn folds_a_message_and_writes_its_document() {
        let mut m = Message::new();
        let frames = vec![
            ev(0, Event::Start { part: 1, kind: "reasoning".into(), value: vec![] }),
            MessageFrame::chunk(1, 1, 0, "hm".into()).unwrap(),
            ev(3, Event::End { part: 1, value: vec![] }),
            ev(4, Event::Start { part: 2, kind: "tool-search".into(), value: attrs(r#"{"toolCallId":"c1"}"#) }),
            MessageFrame::chunk(5, 2, 0, "{\"q\"".into()).unwrap(),
            MessageFrame::chunk(9, 2, 4, ":1}".into()).unwrap(),
            ev(
                12,
                Event::Set { part: 2, value: attrs(r#"{"state":"output-available","output":1,"preliminary":true}"#) },
            ),
            ev(13, Event::Set { part: 2, value: attrs(r#"{"output":2,"preliminary":false}"#) }),
            ev(14, Event::Transient { kind: Some("data-x".into()), value: vec![] }),
            ev(15, Event::Start { part: 3, kind: "text".into(), value: vec![] }),
            MessageFrame::chunk(16, 3, 0, Text::from_units(vec![0x61, 0xD800])).unwrap(),
            ev(18, Event::Meta { value: attrs(r#"{"model":"m"}"#) }),
            ev(19, Event::Finish { reason: "stop".into() }),
        ];
        for f in &frames {
            m.apply(f).unwrap();
        }
        assert_eq!(m.len(), 20);
        assert_eq!(
            m.document().to_string_lossy(),
            concat!(
                r#"{"parts":[{"type":"reasoning","text":"hm"},"#,
                r#"{"type":"tool-search","inputText":"{\"q\":1}","toolCallId":"c1","state":"output-available","output":2,"preliminary":false},"#,
                r#"{"type":"text","text":"a\ud800"}],"metadata":{"model":"m"},"finishReason":"stop"}"#
            )
        );
        assert_eq!(m.text_body(), Text::from_units(vec![0x61, 0xD800]));
        assert_eq!(m.part_table(), Some(vec![0, 2, 7, 2]));
        // The document loads back to the same document.
        let back = Message::from_document(&m.document(), m.len()).unwrap();
        assert_eq!(back.document(), m.document());
        assert_eq!(back.len(), 20);
        // Replays change nothing; rule breaks are errors that change nothing.
        let before = m.clone();
        assert_eq!(m.apply(&frames[5]).unwrap(), Decision::Held);
        let bad = MessageFrame::chunk(20, 9, 0, "x".into()).unwrap();
        assert_eq!(m.apply(&bad).unwrap_err().kind(), ErrorKind::InvalidField);
        assert_eq!(m.apply(&MessageFrame::Absent).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(m, before);
    }

    #[test]
    fn an_overlapping_chunk_is_placed_at_its_offset() {
        // Rule 5 of §4, per part: the body becomes body[..at] ++ text, the chunk's units winning
        // over those held past `at`.
        let mut m = Message::from_text("abc".into());
        m.apply(&MessageFrame::chunk(1, 0, 1, "XYZ".into()).unwrap()).unwrap();
        assert_eq!(m.parts()[0].body, "aXYZ");
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn a_single_text_is_part_0() {
        let mut m = Message::new();
        m.apply(&MessageFrame::chunk(0, 0, 0, "ab".into()).unwrap()).unwrap();
        assert!(!m.has_structure());
        assert_eq!(m.part_table(), None);
        assert_eq!(m.document().to_string_lossy(), r#"{"parts":[{"type":"text","text":"ab"}]}"#);
        assert_eq!(Message::new().document().to_string_lossy(), r#"{"parts":[]}"#);
    }

    #[test]
    fn documents_are_checked() {
        for bad in ["[]", "{}", r#"{"parts":{}}"#, r#"{"parts":[1]}"#, r#"{"parts":[{"type":"text","text":1}]}"#] {
            assert!(Message::from_document(&bad.into(), 9).is_err(), "{bad}");
        }
        assert!(Message::from_document(&r#"{"parts":[{"type":"text","text":"abc"}]}"#.into(), 2).is_err());
        let doc = Text::from(r#"{"parts":[{"type":"reasoning","text":"r"}]}"#);
        let m = Message::from_document(&doc, 2).unwrap();
        assert_eq!(m.parts().len(), 2);
        assert_eq!(m.parts()[0].kind, "text");
        assert_eq!(m.document(), doc);
        // An empty text part that was listed stays listed through a load.
        let doc = Text::from(r#"{"parts":[{"type":"text","text":""}]}"#);
        assert_eq!(Message::from_document(&doc, 1).unwrap().document(), doc);
    }
}
