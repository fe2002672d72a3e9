//! How JavaScript sees a parsed JSON value, for the rules that read untyped frames (test support:
//! only with the `testing` feature).
//!
//! A relay hands over whatever its adapter produced, so the conform pass and the reader must
//! behave on a frame with a string where a number belongs, a missing field, or a value that is
//! not an object at all exactly as the JavaScript they replace does. This module reduces a
//! [`JsonValue`] to the numeric inputs of [`Conform`](crate::conform::Conform) and
//! [`Reader`](crate::reader::Reader) and prints values as `String(x)` and `JSON.stringify(x)`
//! would, so Rust replays the shared vectors with the same meaning as every JS backend.

use crate::conform::{ConformInput, RawPieces};
use crate::ddl_args::{DdlArgs, JsArg, JsType};
use crate::frame::FrameKind;
use crate::jsnum;
use crate::json::{write_json_value, JsonValue};
use crate::message::{FrameNumbers, MessageKind};
use crate::reader::ReaderInput;
use crate::text::Text;

/// A JSON number as itself; anything else (strings included) as NaN, which fails every integer
/// check exactly as `Number.isInteger` fails a non-number.
pub fn number(v: Option<&JsonValue>) -> f64 {
    v.and_then(JsonValue::as_f64).unwrap_or(f64::NAN)
}

/// The UTF-16 length of a string value, `None` for anything else.
pub fn text_len(v: Option<&JsonValue>) -> Option<f64> {
    v.and_then(JsonValue::as_text).map(|t| t.len() as f64)
}

/// `String(v)`; a missing value prints `undefined`.
pub fn js_string(v: Option<&JsonValue>) -> Text {
    let mut out = Text::new();
    match v {
        None => out.push_str("undefined"),
        Some(v) => push_js_string(&mut out, v),
    }
    out
}

fn push_js_string(out: &mut Text, v: &JsonValue) {
    match v {
        JsonValue::Null => out.push_str("null"),
        JsonValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsonValue::Number(n) => out.push_str(&jsnum::format(*n)),
        JsonValue::String(s) => out.push_units(s.units()),
        JsonValue::Array(items) => {
            // Array.prototype.join: null and undefined elements print as nothing.
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(",");
                }
                if !item.is_null() {
                    push_js_string(out, item);
                }
            }
        }
        JsonValue::Object(_) => out.push_str("[object Object]"),
    }
}

/// `JSON.stringify(v)` as a template literal prints it; a missing value prints `undefined`.
pub fn json_stringify(v: Option<&JsonValue>) -> Text {
    match v {
        None => Text::from("undefined"),
        Some(v) => {
            let mut s = String::new();
            write_json_value(&mut s, v);
            Text::from(s.as_str())
        }
    }
}

/// The frame's kind when `type` is one of the six strings; `None` for anything else, including
/// a frame that is not an object.
pub fn frame_kind(frame: &JsonValue) -> Option<FrameKind> {
    frame.as_object()?;
    let name = frame.get("type")?.as_text()?.to_string_checked()?;
    FrameKind::from_name(&name)
}

/// A field of an object frame (`None` for a missing field or a non-object frame).
fn field<'a>(frame: &'a JsonValue, name: &str) -> Option<&'a JsonValue> {
    frame.as_object()?;
    frame.get(name)
}

/// Whether `frame.streamId === stream_id`.
fn id_matches(frame: &JsonValue, stream_id: &[u16]) -> bool {
    field(frame, "streamId").and_then(JsonValue::as_text).is_some_and(|t| t.units() == stream_id)
}

/// The numeric conform input for an untyped frame.
pub fn conform_input(frame: &JsonValue, stream_id: &[u16]) -> ConformInput {
    let f = |name| field(frame, name);
    match frame_kind(frame) {
        Some(FrameKind::Open) => ConformInput::Open {
            stream_id_matches: id_matches(frame, stream_id),
            from: number(f("from")),
            seq: number(f("seq")),
            durable_seq: number(f("durableSeq")),
        },
        Some(FrameKind::Chunk) => {
            ConformInput::Chunk { from: number(f("from")), seq: number(f("seq")), text_len: text_len(f("text")) }
        }
        Some(FrameKind::Durable) => ConformInput::Durable { seq: number(f("seq")) },
        Some(FrameKind::End) => ConformInput::End { seq: number(f("seq")) },
        Some(FrameKind::Stale) => ConformInput::Stale,
        Some(FrameKind::Absent) => ConformInput::Absent,
        None => ConformInput::Unknown,
    }
}

/// The numeric reader input for an untyped frame.
pub fn reader_input(frame: &JsonValue, stream_id: &[u16]) -> ReaderInput {
    let f = |name| field(frame, name);
    match frame_kind(frame) {
        Some(FrameKind::Open) => {
            ReaderInput::Open { stream_id_matches: id_matches(frame, stream_id), from: number(f("from")) }
        }
        Some(FrameKind::Chunk) => {
            ReaderInput::Chunk { from: number(f("from")), seq: number(f("seq")), text_len: text_len(f("text")) }
        }
        Some(FrameKind::Durable) => ReaderInput::Durable,
        Some(FrameKind::End) => ReaderInput::End,
        Some(FrameKind::Stale) => ReaderInput::Stale,
        Some(FrameKind::Absent) => ReaderInput::Absent,
        None => ReaderInput::Unknown,
    }
}

/// The numbers of an untyped message frame (docs/contract.md §8), as a binding reads them:
/// the kind from `type` (unknown for anything else), and NaN for every missing or non-number
/// field, so `part` and `at` are NaN exactly when a chunk uses the shorthand.
pub fn message_numbers(frame: &JsonValue, stream_id: &[u16]) -> FrameNumbers {
    let f = |name| field(frame, name);
    let kind = frame
        .as_object()
        .and(frame.get("type"))
        .and_then(JsonValue::as_text)
        .and_then(|t| MessageKind::from_name(t.units()))
        .unwrap_or(MessageKind::Unknown);
    let mut n = FrameNumbers::new(kind);
    match kind {
        MessageKind::Open => {
            n.id_matches = id_matches(frame, stream_id);
            (n.a, n.b, n.c) = (number(f("from")), number(f("seq")), number(f("durableSeq")));
        }
        MessageKind::Chunk => {
            (n.a, n.b) = (number(f("from")), number(f("seq")));
            n.c = text_len(f("text")).unwrap_or(f64::NAN);
            // Absent is NaN, and so is a non-number; the rules read both NaN as the shorthand
            // and one NaN beside a number as malformed (a `part` of `"1"` with an `at` too).
            (n.part, n.at) = (number(f("part")), number(f("at")));
        }
        MessageKind::Durable | MessageKind::End => n.a = number(f("seq")),
        k if k.is_event() => {
            (n.a, n.b, n.part) = (number(f("from")), number(f("seq")), number(f("part")));
        }
        _ => {}
    }
    n
}

/// An `open`'s part table as a binding reads it: `None` when absent; every element as a number
/// (NaN for a non-number, which fails the table check).
pub fn open_parts(frame: &JsonValue) -> Option<Vec<f64>> {
    let items = field(frame, "parts")?;
    Some(match items.as_array() {
        Some(items) => items.iter().map(|i| number(Some(i))).collect(),
        // Not an array: a table that cannot fit.
        None => vec![f64::NAN],
    })
}

/// The printed values a violation reason may quote, owned.
#[derive(Clone, Debug, Default)]
pub struct OwnedRawPieces {
    pub stream_id_json: Text,
    pub from: Text,
    pub seq: Text,
    pub type_json: Text,
}

impl OwnedRawPieces {
    pub fn of(frame: Option<&JsonValue>) -> Self {
        let f = |name| frame.and_then(|fr| field(fr, name));
        OwnedRawPieces {
            stream_id_json: json_stringify(f("streamId")),
            from: js_string(f("from")),
            seq: js_string(f("seq")),
            type_json: json_stringify(f("type")),
        }
    }

    pub fn borrowed(&self) -> RawPieces<'_> {
        RawPieces {
            stream_id_json: self.stream_id_json.units(),
            from: self.from.units(),
            seq: self.seq.units(),
            type_json: self.type_json.units(),
        }
    }
}

/// A JSON value's JavaScript type and units, as a binding reads the value `JSON.parse` makes
/// (`None` is an absent property: `undefined`).
pub fn js_arg(v: Option<&JsonValue>) -> JsArg<'_> {
    match v {
        None => JsArg::ABSENT,
        Some(JsonValue::Null) => JsArg::of_type(JsType::Null),
        Some(JsonValue::Bool(_)) => JsArg::of_type(JsType::Boolean),
        Some(JsonValue::Number(_)) => JsArg::of_type(JsType::Number),
        Some(JsonValue::String(t)) => JsArg::string(t.units()),
        Some(JsonValue::Array(_) | JsonValue::Object(_)) => JsArg::of_type(JsType::Object),
    }
}

/// `streamChunkTableDdl(tables, dialect)`'s arguments read from JSON values exactly as a binding
/// reads them from the JavaScript values (nested members of a non-object read as absent).
pub fn ddl_args<'a>(tables: &'a JsonValue, dialect: &'a JsonValue) -> DdlArgs<'a> {
    let cols = tables.get("columns");
    let col = |k: &str| js_arg(cols.and_then(|c| c.get(k)));
    DdlArgs {
        tables: js_arg(Some(tables)),
        dialect: js_arg(Some(dialect)),
        dialect_name: js_arg(dialect.get("name")),
        chunks: js_arg(tables.get("chunks")),
        columns: js_arg(cols),
        chunk_key: col("chunkKey"),
        chunk_stream: col("chunkStream"),
        chunk_seq: col("chunkSeq"),
        chunk_text: col("chunkText"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_value;

    #[test]
    fn prints_like_javascript() {
        let v = parse_value(r#"{"a":[1,null,"x",[2,3]],"b":{},"c":1e21,"d":"\ud800"}"#).unwrap();
        assert_eq!(js_string(v.get("a")), Text::from("1,,x,2,3"));
        assert_eq!(js_string(v.get("b")), Text::from("[object Object]"));
        assert_eq!(js_string(v.get("c")), Text::from("1e+21"));
        assert_eq!(js_string(v.get("zz")), Text::from("undefined"));
        assert_eq!(js_string(v.get("d")).units(), &[0xD800]);
        assert_eq!(json_stringify(v.get("d")), Text::from("\"\\ud800\""));
    }

    #[test]
    fn untyped_frames_reduce_to_numbers() {
        let v = parse_value(r#"{"type":"chunk","from":"0","seq":2,"text":"ab"}"#).unwrap();
        match conform_input(&v, &[]) {
            ConformInput::Chunk { from, seq, text_len } => {
                assert!(from.is_nan());
                assert_eq!((seq, text_len), (2.0, Some(2.0)));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(conform_input(&parse_value("5").unwrap(), &[]), ConformInput::Unknown);
        assert_eq!(conform_input(&parse_value(r#"{"type":"OPEN"}"#).unwrap(), &[]), ConformInput::Unknown);
        let open = parse_value(r#"{"type":"open","streamId":"s","from":0,"seq":0,"durableSeq":0}"#).unwrap();
        let s: Vec<u16> = "s".encode_utf16().collect();
        assert!(matches!(conform_input(&open, &s), ConformInput::Open { stream_id_matches: true, .. }));
        assert!(matches!(conform_input(&open, &[]), ConformInput::Open { stream_id_matches: false, .. }));
    }
}
