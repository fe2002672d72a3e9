//! Message frames to and from JSON (docs/contract.md §8), on top of the six-frame codec.
//!
//! Guarantees: every frame that has a six-frame form is written by [`crate::json::encode_frame_into`]
//! and read by [`crate::json::frame_from_value`], so a single-text stream's bytes are today's; the
//! other frames are written as `JSON.stringify` writes the same object with the keys in the order
//! of §8 (text, lone surrogates included, through the same string writer); decoding accepts only
//! valid frames and names the field and kind of the first problem.

use super::frame::{check_value, Attrs, Event, MessageFrame, MessageKind};
use crate::error::{Error, ErrorKind, Result};
use crate::frame::check_chunk_span;
use crate::jsnum;
use crate::json::{
    encode_frame_into, frame_from_value, offset_field, parse_value, preview, push_u64, required, text_field,
    write_chunk_head, write_json_object, write_json_string, wrong_type, JsonValue,
};
use crate::text::Text;

/// A message frame as `JSON.stringify` writes the same object.
pub fn encode_message_frame(frame: &MessageFrame) -> String {
    let mut out = String::new();
    encode_message_frame_into(&mut out, frame);
    out
}

/// [`encode_message_frame`], appending to `out`.
pub fn encode_message_frame_into(out: &mut String, frame: &MessageFrame) {
    match frame {
        // The hot case, a part 0 delta in the shorthand: today's chunk, written without first
        // copying its text into a six-frame chunk.
        MessageFrame::Chunk { from, seq, part: 0, at, text } if at == from => {
            out.reserve(64 + text.len());
            write_chunk_head(out, *from, *seq, text);
            out.push('}');
            return;
        }
        MessageFrame::Chunk { .. } | MessageFrame::Event { .. } | MessageFrame::Open { parts: Some(_), .. } => {}
        six => {
            if let Some(six) = six.to_frame() {
                return encode_frame_into(out, &six);
            }
        }
    }
    match frame {
        MessageFrame::Open { stream_id, from, seq, durable_seq, ended, parts } => {
            out.push_str("{\"type\":\"open\",\"streamId\":");
            write_json_string(out, stream_id.units());
            for (key, v) in [(",\"from\":", from), (",\"seq\":", seq), (",\"durableSeq\":", durable_seq)] {
                out.push_str(key);
                push_u64(out, *v);
            }
            out.push_str(if *ended { ",\"ended\":true" } else { ",\"ended\":false" });
            if let Some(parts) = parts {
                out.push_str(",\"parts\":[");
                for (i, len) in parts.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    push_u64(out, *len);
                }
                out.push(']');
            }
            out.push('}');
        }
        MessageFrame::Chunk { from, seq, part, at, text } => {
            write_chunk_head(out, *from, *seq, text);
            out.push_str(",\"part\":");
            push_u64(out, u64::from(*part));
            out.push_str(",\"at\":");
            push_u64(out, *at);
            out.push('}');
        }
        MessageFrame::Event { from, event } => {
            out.push_str("{\"type\":\"");
            out.push_str(event.kind().as_str());
            out.push_str("\",\"from\":");
            push_u64(out, *from);
            out.push_str(",\"seq\":");
            push_u64(out, from.saturating_add(1));
            if let Some(part) = event.part() {
                out.push_str(",\"part\":");
                push_u64(out, u64::from(part));
            }
            match event {
                Event::Start { kind, value, .. } => {
                    out.push_str(",\"kind\":");
                    write_json_string(out, kind.units());
                    push_value(out, value);
                }
                Event::Transient { kind, value } => {
                    if let Some(kind) = kind {
                        out.push_str(",\"kind\":");
                        write_json_string(out, kind.units());
                    }
                    push_value(out, value);
                }
                Event::End { value, .. } | Event::Set { value, .. } | Event::Meta { value } => push_value(out, value),
                Event::Finish { reason } => {
                    out.push_str(",\"reason\":");
                    write_json_string(out, reason.units());
                }
            }
            out.push('}');
        }
        // Every other frame has a six-frame form, written above.
        _ => {}
    }
}

/// `,"value":{...}` when the value has members; an empty value is omitted.
fn push_value(out: &mut String, value: &Attrs) {
    if !value.is_empty() {
        out.push_str(",\"value\":");
        write_attrs(out, value);
    }
}

/// Attributes as a JSON object, members in the order held: exactly how a [`JsonValue::Object`]
/// with the same members is written, since a value is one.
pub fn write_attrs(out: &mut String, value: &Attrs) {
    write_json_object(out, value);
}

/// Parse and check one message frame.
pub fn decode_message_frame(input: &str) -> Result<MessageFrame> {
    message_frame_from_value(&parse_value(input)?)
}

/// [`decode_message_frame`] over UTF-16 code units, as a binding receives a JavaScript string.
/// The text must be well-formed: `JSON.stringify` escapes every lone surrogate, so a raw one is
/// not JSON this contract writes, and it is refused (`invalid_json`) rather than replaced.
pub fn decode_message_frame_units(units: &[u16]) -> Result<MessageFrame> {
    let src = String::from_utf16(units)
        .map_err(|_| Error::new(ErrorKind::InvalidJson, "invalid JSON: a raw unpaired surrogate (escape it)"))?;
    decode_message_frame(&src)
}

/// Check a parsed JSON value as a message frame. Unknown keys are ignored, as in §1.
pub fn message_frame_from_value(v: &JsonValue) -> Result<MessageFrame> {
    if !matches!(v, JsonValue::Object(_)) {
        // The six-frame decoder words this error; keep one wording.
        return frame_from_value(v).map(MessageFrame::from);
    }
    let type_text = text_field(v, "type")?;
    let kind = MessageKind::from_name(type_text.units()).ok_or_else(|| {
        Error::field(ErrorKind::UnknownFrameType, "type", format!("unknown frame type {}", preview(type_text)))
    })?;
    if !kind.is_event() {
        let six = MessageFrame::from(frame_from_value(v)?);
        return match six {
            MessageFrame::Open { stream_id, from, seq, durable_seq, ended, .. } => {
                Ok(MessageFrame::Open { stream_id, from, seq, durable_seq, ended, parts: parts_field(v)? })
            }
            MessageFrame::Chunk { from, seq, text, .. } => {
                let (part, at) = match (v.get("part"), v.get("at")) {
                    (None, None) => (0, from),
                    _ => (part_field(v)?, offset_field(v, "at")?),
                };
                check_chunk_span(from, seq, text.len())?;
                MessageFrame::chunk(from, part, at, text)
            }
            other => Ok(other),
        };
    }
    let from = offset_field(v, "from")?;
    let seq = offset_field(v, "seq")?;
    if from.checked_add(1) != Some(seq) {
        return Err(Error::field(
            ErrorKind::InvalidOffset,
            "seq",
            format!("a {} frame spans one unit, not {from}..{seq}", kind.as_str()),
        ));
    }
    let event = match kind {
        MessageKind::Part => {
            let part = part_field(v)?;
            let kind = text_field(v, "kind")?.clone();
            Event::Start { part, kind, value: value_field(v)? }
        }
        MessageKind::PartEnd => Event::End { part: part_field(v)?, value: value_field(v)? },
        MessageKind::Set => Event::Set { part: part_field(v)?, value: value_field(v)? },
        MessageKind::Meta => Event::Meta { value: value_field(v)? },
        MessageKind::Finish => Event::Finish { reason: text_field(v, "reason")?.clone() },
        _ => {
            let kind = match v.get("kind") {
                None => None,
                Some(JsonValue::String(t)) => Some(t.clone()),
                Some(other) => return Err(wrong_type("kind", "a string", other)),
            };
            Event::Transient { kind, value: value_field(v)? }
        }
    };
    Ok(MessageFrame::Event { from, event })
}

/// A part number: an integer in `0..=2^32-1`.
fn part_field(v: &JsonValue) -> Result<u32> {
    match required(v, "part")? {
        JsonValue::Number(n) => jsnum::as_offset(*n).and_then(|p| u32::try_from(p).ok()).ok_or_else(|| {
            Error::field(
                ErrorKind::InvalidField,
                "part",
                format!("field part must be an integer in 0..=2^32-1, not {}", jsnum::format(*n)),
            )
        }),
        other => Err(wrong_type("part", "a number", other)),
    }
}

/// An optional object; absent is empty.
fn value_field(v: &JsonValue) -> Result<Attrs> {
    match v.get("value") {
        None => Ok(Vec::new()),
        Some(JsonValue::Object(members)) => {
            let value = members.clone();
            check_value(&value)?;
            Ok(value)
        }
        Some(other) => Err(wrong_type("value", "an object", other)),
    }
}

/// The open's part table: absent, or a non-empty array of offsets.
fn parts_field(v: &JsonValue) -> Result<Option<Vec<u64>>> {
    let items = match v.get("parts") {
        None => return Ok(None),
        Some(JsonValue::Array(items)) if !items.is_empty() => items,
        Some(other) => return Err(wrong_type("parts", "a non-empty array", other)),
    };
    items
        .iter()
        .map(|item| {
            item.as_f64().and_then(jsnum::as_offset).ok_or_else(|| {
                Error::field(ErrorKind::InvalidOffset, "parts", "every body length must be an integer in 0..=2^53-1")
            })
        })
        .collect::<Result<Vec<u64>>>()
        .map(Some)
}

/// A list of frames as a JSON array (a parts chunk row's content).
pub fn encode_frame_list(frames: &[MessageFrame]) -> Text {
    let mut out = String::from("[");
    for (i, f) in frames.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        encode_message_frame_into(&mut out, f);
    }
    out.push(']');
    Text::from(out.as_str())
}

/// The frames of a parts chunk row.
pub fn decode_frame_list(json: &Text) -> Result<Vec<MessageFrame>> {
    // Chunk rows were written by this codec, whose output is always valid Unicode (lone
    // surrogates are escapes), so a lone surrogate here is not JSON text this codec wrote.
    let src = json
        .to_string_checked()
        .ok_or_else(|| Error::field(ErrorKind::InvalidJson, "parts", "a chunk row's parts are not valid Unicode"))?;
    match parse_value(&src)? {
        JsonValue::Array(items) => items.iter().map(message_frame_from_value).collect(),
        other => Err(wrong_type("parts", "an array", &other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Frame, StreamStatus};
    use crate::json::{decode_frame, encode_frame};
    use proptest::prelude::*;

    fn attrs(json: &str) -> Attrs {
        parse_value(json).unwrap().as_object().unwrap().to_vec()
    }

    #[test]
    fn exact_encodings() {
        let cases: Vec<(MessageFrame, &str)> = vec![
            (MessageFrame::chunk(2, 0, 2, "ab".into()).unwrap(), r#"{"type":"chunk","from":2,"seq":4,"text":"ab"}"#),
            (
                MessageFrame::chunk(9, 0, 2, "a".into()).unwrap(),
                r#"{"type":"chunk","from":9,"seq":10,"text":"a","part":0,"at":2}"#,
            ),
            (
                MessageFrame::chunk(9, 3, 0, Text::from_units(vec![0xD800])).unwrap(),
                r#"{"type":"chunk","from":9,"seq":10,"text":"\ud800","part":3,"at":0}"#,
            ),
            (
                MessageFrame::Event {
                    from: 0,
                    event: Event::Start { part: 1, kind: "tool-search".into(), value: attrs(r#"{"toolCallId":"c1"}"#) },
                },
                r#"{"type":"part","from":0,"seq":1,"part":1,"kind":"tool-search","value":{"toolCallId":"c1"}}"#,
            ),
            (
                MessageFrame::Event { from: 5, event: Event::End { part: 1, value: vec![] } },
                r#"{"type":"part-end","from":5,"seq":6,"part":1}"#,
            ),
            (
                MessageFrame::Event {
                    from: 6,
                    event: Event::Set { part: 1, value: attrs(r#"{"output":[1,"\ud800"]}"#) },
                },
                r#"{"type":"set","from":6,"seq":7,"part":1,"value":{"output":[1,"\ud800"]}}"#,
            ),
            (
                MessageFrame::Event { from: 7, event: Event::Meta { value: attrs(r#"{"m":null}"#) } },
                r#"{"type":"meta","from":7,"seq":8,"value":{"m":null}}"#,
            ),
            (
                MessageFrame::Event { from: 8, event: Event::Finish { reason: "stop".into() } },
                r#"{"type":"finish","from":8,"seq":9,"reason":"stop"}"#,
            ),
            (
                MessageFrame::Event {
                    from: 9,
                    event: Event::Transient { kind: Some("data-x".into()), value: attrs(r#"{"data":1}"#) },
                },
                r#"{"type":"transient","from":9,"seq":10,"kind":"data-x","value":{"data":1}}"#,
            ),
            (
                MessageFrame::Event { from: 9, event: Event::Transient { kind: None, value: vec![] } },
                r#"{"type":"transient","from":9,"seq":10}"#,
            ),
            (
                MessageFrame::Open {
                    stream_id: "s".into(),
                    from: 4,
                    seq: 9,
                    durable_seq: 4,
                    ended: false,
                    parts: Some(vec![0, 2]),
                },
                r#"{"type":"open","streamId":"s","from":4,"seq":9,"durableSeq":4,"ended":false,"parts":[0,2]}"#,
            ),
        ];
        for (frame, json) in cases {
            assert_eq!(encode_message_frame(&frame), json);
            assert_eq!(decode_message_frame(json).as_ref(), Ok(&frame), "{json}");
            assert!(frame.validate().is_ok());
        }
    }

    fn err_of(input: &str) -> (ErrorKind, Option<&'static str>) {
        let e = decode_message_frame(input).expect_err(input);
        (e.kind(), e.field_name())
    }

    #[test]
    fn decode_errors() {
        use ErrorKind::*;
        let c = r#""type":"chunk","from":0,"seq":1,"text":"a""#;
        assert_eq!(err_of(&format!(r#"{{{c},"part":1}}"#)), (MissingField, Some("at")));
        assert_eq!(err_of(&format!(r#"{{{c},"at":1}}"#)), (MissingField, Some("part")));
        assert_eq!(err_of(&format!(r#"{{{c},"part":-1,"at":0}}"#)), (InvalidField, Some("part")));
        assert_eq!(err_of(&format!(r#"{{{c},"part":4294967296,"at":0}}"#)), (InvalidField, Some("part")));
        assert_eq!(err_of(&format!(r#"{{{c},"part":"1","at":0}}"#)), (InvalidField, Some("part")));
        assert_eq!(err_of(&format!(r#"{{{c},"part":1,"at":0.5}}"#)), (InvalidOffset, Some("at")));
        assert_eq!(err_of(&format!(r#"{{{c},"part":1,"at":9007199254740991}}"#)), (InvalidOffset, Some("at")));
        assert_eq!(err_of(r#"{"type":"part","from":0,"seq":2,"part":1,"kind":"x"}"#), (InvalidOffset, Some("seq")));
        assert_eq!(err_of(r#"{"type":"part","from":0,"seq":1,"kind":"x"}"#), (MissingField, Some("part")));
        assert_eq!(err_of(r#"{"type":"part","from":0,"seq":1,"part":1}"#), (MissingField, Some("kind")));
        assert_eq!(err_of(r#"{"type":"set","from":0,"seq":1,"part":1,"value":[]}"#), (InvalidField, Some("value")));
        assert_eq!(
            err_of(r#"{"type":"set","from":0,"seq":1,"part":1,"value":{"type":"text"}}"#),
            (InvalidField, Some("value"))
        );
        assert_eq!(err_of(r#"{"type":"finish","from":0,"seq":1}"#), (MissingField, Some("reason")));
        assert_eq!(err_of(r#"{"type":"transient","from":0,"seq":1,"kind":3}"#), (InvalidField, Some("kind")));
        assert_eq!(err_of(r#"{"type":"meta","seq":1}"#), (MissingField, Some("from")));
        assert_eq!(
            err_of(r#"{"type":"open","streamId":"s","from":0,"seq":0,"durableSeq":0,"ended":false,"parts":[]}"#),
            (InvalidField, Some("parts"))
        );
        assert_eq!(
            err_of(r#"{"type":"open","streamId":"s","from":0,"seq":0,"durableSeq":0,"ended":false,"parts":[-1]}"#),
            (InvalidOffset, Some("parts"))
        );
        assert_eq!(err_of(r#"{"type":"unknown"}"#), (UnknownFrameType, Some("type")));
        assert_eq!(err_of("[]"), (InvalidJson, None));
        assert_eq!(err_of("{}"), (MissingField, Some("type")));
    }

    #[test]
    fn units_decode_as_text_and_refuse_raw_lone_surrogates() {
        let json: Vec<u16> = r#"{"type":"meta","from":0,"seq":1}"#.encode_utf16().collect();
        assert_eq!(decode_message_frame_units(&json), decode_message_frame(r#"{"type":"meta","from":0,"seq":1}"#));
        let mut raw: Vec<u16> = r#"{"type":"finish","from":0,"seq":1,"reason":""#.encode_utf16().collect();
        raw.extend([0xD800, u16::from(b'"'), u16::from(b'}')]);
        assert_eq!(decode_message_frame_units(&raw).unwrap_err().kind(), ErrorKind::InvalidJson);
    }

    #[test]
    fn frame_lists_round_trip() {
        let frames = vec![
            MessageFrame::chunk(0, 0, 0, "x".into()).unwrap(),
            MessageFrame::Event { from: 1, event: Event::Transient { kind: None, value: vec![] } },
        ];
        let json = encode_frame_list(&frames);
        assert_eq!(decode_frame_list(&json).unwrap(), frames);
        assert_eq!(decode_frame_list(&"{}".into()).unwrap_err().kind(), ErrorKind::InvalidField);
        assert_eq!(decode_frame_list(&Text::from_units(vec![0xD800])).unwrap_err().kind(), ErrorKind::InvalidJson);
    }

    fn arb_units() -> impl Strategy<Value = Vec<u16>> {
        let unit = prop_oneof![0x20u16..0x7F, 0xD800u16..0xDC00, 0xDC00u16..0xE000, any::<u16>(), Just(0x22u16)];
        proptest::collection::vec(unit, 0..12)
    }

    fn arb_frame() -> impl Strategy<Value = Frame> {
        let status = proptest::sample::select(StreamStatus::ALL.to_vec());
        prop_oneof![
            (arb_units(), 0u64..100, 0u64..100, 0u64..100, any::<bool>()).prop_map(|(id, from, x, d, ended)| {
                Frame::Open { stream_id: Text::from_units(id), from, seq: from + x, durable_seq: d, ended }
            }),
            (0u64..1000, arb_units()).prop_map(|(from, t)| Frame::chunk(from, Text::from_units(t)).unwrap()),
            (0u64..1000).prop_map(|seq| Frame::Durable { seq }),
            (0u64..1000, status, proptest::option::of(arb_units())).prop_map(|(seq, status, e)| Frame::End {
                seq,
                status,
                error: e.map(Text::from_units)
            }),
            (0u64..9, 0u64..9).prop_map(|(floor_seq, durable_seq)| Frame::Stale { floor_seq, durable_seq }),
            Just(Frame::Absent),
        ]
    }

    fn arb_value() -> impl Strategy<Value = Attrs> {
        proptest::collection::vec(
            (
                arb_units().prop_filter("not reserved", |k| {
                    !["type", "text", "inputText"].iter().any(|r| r.encode_utf16().eq(k.iter().copied()))
                }),
                arb_units(),
            ),
            0..3,
        )
        .prop_map(|m| {
            m.into_iter().map(|(k, v)| (Text::from_units(k), JsonValue::String(Text::from_units(v)))).collect()
        })
    }

    fn arb_message_frame() -> impl Strategy<Value = MessageFrame> {
        prop_oneof![
            arb_frame().prop_map(MessageFrame::from),
            (0u64..1000, 0u32..5, 0u64..1000, arb_units()).prop_map(|(from, part, at, t)| MessageFrame::chunk(
                from,
                part,
                at,
                Text::from_units(t)
            )
            .unwrap()),
            (0u64..1000, 0u32..5, arb_units(), arb_value()).prop_map(|(from, part, k, value)| MessageFrame::Event {
                from,
                event: Event::Start { part, kind: Text::from_units(k), value }
            }),
            (0u64..1000, 0u32..5, arb_value())
                .prop_map(|(from, part, value)| MessageFrame::Event { from, event: Event::Set { part, value } }),
            (0u64..1000, 0u32..5, arb_value())
                .prop_map(|(from, part, value)| MessageFrame::Event { from, event: Event::End { part, value } }),
            (0u64..1000, arb_value())
                .prop_map(|(from, value)| MessageFrame::Event { from, event: Event::Meta { value } }),
            (0u64..1000, arb_units()).prop_map(|(from, r)| MessageFrame::Event {
                from,
                event: Event::Finish { reason: Text::from_units(r) }
            }),
            (0u64..1000, proptest::option::of(arb_units()), arb_value()).prop_map(|(from, k, value)| {
                MessageFrame::Event { from, event: Event::Transient { kind: k.map(Text::from_units), value } }
            }),
        ]
    }

    proptest! {
        /// Today's frames are written and read exactly as the six-frame codec does.
        #[test]
        fn six_frames_are_byte_identical(f in arb_frame()) {
            let json = encode_frame(&f);
            prop_assert_eq!(encode_message_frame(&MessageFrame::from(f.clone())), json.clone());
            prop_assert_eq!(decode_message_frame(&json).unwrap().to_frame(), Some(decode_frame(&json).unwrap()));
        }

        #[test]
        fn message_frames_round_trip(f in arb_message_frame()) {
            let json = encode_message_frame(&f);
            let back = decode_message_frame(&json);
            prop_assert_eq!(back.as_ref(), Ok(&f));
        }

        #[test]
        fn arbitrary_input_never_panics(s in r#"[\[\]{}",:0-9a-z\\]{0,64}"#) {
            let _ = decode_message_frame(&s);
            let _ = decode_frame_list(&Text::from(s.as_str()));
        }
    }
}
