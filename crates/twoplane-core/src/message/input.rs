//! What a producer sends to grow a message (docs/server.md, "Producer API", and
//! docs/contract.md §8): one event as a JSON object, in the frames' own vocabulary without
//! offsets, since the stream places every event at its end.
//!
//! | `type` | members | what it does |
//! | --- | --- | --- |
//! | `chunk` | `text`, and `part` or `id` (neither: part 0) | text appended to a part's body |
//! | `part` | `kind`, `id`?, `value`? | the next part starts; `id` is the producer's own name for it |
//! | `part-end` | `part` or `id`, `value`? | the part receives no more body |
//! | `set` | `part` or `id`, `value` | attributes merged into the part |
//! | `meta` | `value` | merged into the message's metadata |
//! | `finish` | `reason` | the finish reason |
//! | `transient` | `kind`?, `value`? | a live-only part, never stored |
//!
//! Guarantees: decoding is strict (a member this table does not list, a wrong type, `part` and
//! `id` together, a `value` naming `type`, `text` or `inputText`, or holding a number too large
//! for a double, which would be stored as `null`, is an error naming the field, with a stable
//! kind); text keeps every UTF-16 unit the JSON spells (`\udxxx` escapes of
//! lone surrogates included); object members keep their order.

use super::frame::{check_value, Attrs};
use crate::error::{Error, ErrorKind, Result};
use crate::jsnum;
use crate::json::{parse_value, preview, wrong_type, JsonValue};
use crate::text::Text;

/// Which part an event names: its number, or the id its producer gave it at its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartRef {
    Number(u32),
    Id(Text),
}

/// One event a producer sends.
#[derive(Clone, Debug, PartialEq)]
pub enum ProducerEvent {
    Chunk { part: PartRef, text: Text },
    Start { kind: Text, id: Option<Text>, value: Attrs },
    End { part: PartRef, value: Attrs },
    Set { part: PartRef, value: Attrs },
    Meta { value: Attrs },
    Finish { reason: Text },
    Transient { kind: Option<Text>, value: Attrs },
}

impl ProducerEvent {
    /// The part the event names, if it names one.
    pub fn part(&self) -> Option<&PartRef> {
        match self {
            ProducerEvent::Chunk { part, .. } | ProducerEvent::End { part, .. } | ProducerEvent::Set { part, .. } => {
                Some(part)
            }
            _ => None,
        }
    }
}

/// Decode one producer event from its JSON text.
pub fn parse_producer_event(json: &str) -> Result<ProducerEvent> {
    producer_event_from_value(&parse_value(json)?)
}

/// Check a parsed JSON value as one producer event.
pub fn producer_event_from_value(v: &JsonValue) -> Result<ProducerEvent> {
    let JsonValue::Object(members) = v else { return Err(wrong_type("event", "an object", v)) };
    let ty = match v.get("type") {
        Some(JsonValue::String(t)) => t.to_string_lossy(),
        Some(other) => return Err(wrong_type("type", "a string", other)),
        None => return Err(Error::field(ErrorKind::MissingField, "type", "an event names its type")),
    };
    let allowed: &[&str] = match ty.as_str() {
        "chunk" => &["type", "part", "id", "text"],
        "part" => &["type", "kind", "id", "value"],
        "part-end" => &["type", "part", "id", "value"],
        "set" => &["type", "part", "id", "value"],
        "meta" => &["type", "value"],
        "finish" => &["type", "reason"],
        "transient" => &["type", "kind", "value"],
        _ => {
            let shown = v.get("type").and_then(JsonValue::as_text).map(preview).unwrap_or_default();
            return Err(Error::field(ErrorKind::UnknownFrameType, "type", format!("unknown event type {shown}")));
        }
    };
    if let Some((key, _)) = members.iter().find(|(k, _)| !allowed.iter().any(|a| k == a)) {
        return Err(Error::field(
            ErrorKind::InvalidField,
            "event",
            format!("a {ty} event has no member {} (it takes {})", preview(key), allowed.join(", ")),
        ));
    }
    Ok(match ty.as_str() {
        "chunk" => ProducerEvent::Chunk { part: part_ref(v, true)?, text: string(v, "text")? },
        "part" => ProducerEvent::Start { kind: string(v, "kind")?, id: optional_string(v, "id")?, value: value(v)? },
        "part-end" => ProducerEvent::End { part: part_ref(v, false)?, value: value(v)? },
        "set" => ProducerEvent::Set { part: part_ref(v, false)?, value: value(v)? },
        "meta" => ProducerEvent::Meta { value: value(v)? },
        "finish" => ProducerEvent::Finish { reason: string(v, "reason")? },
        _ => ProducerEvent::Transient { kind: optional_string(v, "kind")?, value: value(v)? },
    })
}

/// `part` (a number) or `id` (a string), not both; with `default_zero`, neither is part 0.
fn part_ref(v: &JsonValue, default_zero: bool) -> Result<PartRef> {
    match (v.get("part"), v.get("id")) {
        (Some(_), Some(_)) => {
            Err(Error::field(ErrorKind::InvalidField, "part", "name a part by part or by id, not both"))
        }
        (Some(JsonValue::Number(n)), None) => {
            jsnum::as_offset(*n).and_then(|p| u32::try_from(p).ok()).map(PartRef::Number).ok_or_else(|| {
                Error::field(
                    ErrorKind::InvalidField,
                    "part",
                    format!("part must be an integer in 0..=2^32-1, not {}", jsnum::format(*n)),
                )
            })
        }
        (Some(other), None) => Err(wrong_type("part", "a number", other)),
        (None, Some(JsonValue::String(id))) => Ok(PartRef::Id(id.clone())),
        (None, Some(other)) => Err(wrong_type("id", "a string", other)),
        (None, None) if default_zero => Ok(PartRef::Number(0)),
        (None, None) => Err(Error::field(ErrorKind::MissingField, "part", "the event names its part (part or id)")),
    }
}

fn string(v: &JsonValue, key: &'static str) -> Result<Text> {
    match v.get(key) {
        Some(JsonValue::String(t)) => Ok(t.clone()),
        Some(other) => Err(wrong_type(key, "a string", other)),
        None => Err(Error::field(ErrorKind::MissingField, key, format!("missing field {key}"))),
    }
}

fn optional_string(v: &JsonValue, key: &'static str) -> Result<Option<Text>> {
    match v.get(key) {
        None => Ok(None),
        Some(JsonValue::String(t)) => Ok(Some(t.clone())),
        Some(other) => Err(wrong_type(key, "a string", other)),
    }
}

/// An optional object (absent: empty) that names no reserved key.
fn value(v: &JsonValue) -> Result<Attrs> {
    match v.get("value") {
        None => Ok(Vec::new()),
        Some(JsonValue::Object(members)) => {
            check_value(members)?;
            if members.iter().any(|(_, v)| !finite(v)) {
                // `1e999` parses as an infinity, which JSON writes back as `null`: stored, the
                // value would silently differ from what the producer sent.
                return Err(Error::field(
                    ErrorKind::InvalidField,
                    "value",
                    "a number in value is past what a double holds (about 1.8e308); send it as a string",
                ));
            }
            Ok(members.clone())
        }
        Some(other) => Err(wrong_type("value", "an object", other)),
    }
}

/// Whether every number in `v` is finite.
fn finite(v: &JsonValue) -> bool {
    match v {
        JsonValue::Number(n) => n.is_finite(),
        JsonValue::Array(items) => items.iter().all(finite),
        JsonValue::Object(members) => members.iter().all(|(_, v)| finite(v)),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_decodes() {
        let ev = |s: &str| parse_producer_event(s).unwrap();
        assert_eq!(
            ev(r#"{"type":"chunk","text":"hi"}"#),
            ProducerEvent::Chunk { part: PartRef::Number(0), text: "hi".into() }
        );
        assert_eq!(
            ev(r#"{"type":"chunk","id":"r","text":"\ud800"}"#),
            ProducerEvent::Chunk { part: PartRef::Id("r".into()), text: Text::from_units(vec![0xD800]) }
        );
        let start = ev(r#"{"type":"part","kind":"tool-search","id":"c1","value":{"toolCallId":"c1","b":1}}"#);
        let ProducerEvent::Start { kind, id, value } = start else { panic!() };
        assert_eq!((kind, id), ("tool-search".into(), Some("c1".into())));
        assert_eq!(value.iter().map(|(k, _)| k.to_string_lossy()).collect::<Vec<_>>(), ["toolCallId", "b"]);
        assert_eq!(
            ev(r#"{"type":"part-end","part":2}"#),
            ProducerEvent::End { part: PartRef::Number(2), value: vec![] }
        );
        assert!(matches!(ev(r#"{"type":"set","id":"d","value":{"data":[1]}}"#), ProducerEvent::Set { .. }));
        assert_eq!(ev(r#"{"type":"meta"}"#), ProducerEvent::Meta { value: vec![] });
        assert_eq!(ev(r#"{"type":"finish","reason":"stop"}"#), ProducerEvent::Finish { reason: "stop".into() });
        assert_eq!(ev(r#"{"type":"transient"}"#), ProducerEvent::Transient { kind: None, value: vec![] });
    }

    #[test]
    fn refusals_name_their_field() {
        for (input, kind, field) in [
            ("[]", ErrorKind::InvalidField, "event"),
            ("{}", ErrorKind::MissingField, "type"),
            (r#"{"type":"nope"}"#, ErrorKind::UnknownFrameType, "type"),
            (r#"{"type":"chunk","text":"x","from":1}"#, ErrorKind::InvalidField, "event"),
            (r#"{"type":"chunk","part":1,"id":"a","text":"x"}"#, ErrorKind::InvalidField, "part"),
            (r#"{"type":"chunk","part":-1,"text":"x"}"#, ErrorKind::InvalidField, "part"),
            (r#"{"type":"chunk","part":"1","text":"x"}"#, ErrorKind::InvalidField, "part"),
            (r#"{"type":"chunk"}"#, ErrorKind::MissingField, "text"),
            (r#"{"type":"part"}"#, ErrorKind::MissingField, "kind"),
            (r#"{"type":"part-end"}"#, ErrorKind::MissingField, "part"),
            (r#"{"type":"set","part":0,"value":[]}"#, ErrorKind::InvalidField, "value"),
            (r#"{"type":"set","part":0,"value":{"text":1}}"#, ErrorKind::InvalidField, "value"),
            (r#"{"type":"finish","reason":3}"#, ErrorKind::InvalidField, "reason"),
            (r#"{"type":"meta","value":{"a":[1,{"b":-1e999}]}}"#, ErrorKind::InvalidField, "value"),
            ("{", ErrorKind::InvalidJson, ""),
        ] {
            let e = parse_producer_event(input).unwrap_err();
            assert_eq!(e.kind(), kind, "{input}: {e}");
            if !field.is_empty() {
                assert_eq!(e.field_name(), Some(field), "{input}: {e}");
            }
        }
    }
}
