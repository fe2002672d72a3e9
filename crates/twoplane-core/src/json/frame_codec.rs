//! Frames to and from JSON: the encoder writes the keys in the order of docs/contract.md §1, and
//! the decoder accepts only valid frames, naming the field and kind of the first problem.

use super::parse::{parse_value, parse_value_bytes};
use super::value::JsonValue;
use super::write::{push_u64, write_json_string};
use crate::error::{Error, ErrorKind, Result};
use crate::frame::{check_chunk_span, Frame, FrameKind, StreamStatus};
use crate::jsnum;
use crate::text::Text;

/// A frame as `JSON.stringify` writes the same object, keys in the order of docs/contract.md §1.
pub fn encode_frame(frame: &Frame) -> String {
    let mut out = String::new();
    encode_frame_into(&mut out, frame);
    out
}

/// [`encode_frame`], appending to `out` (so an SSE writer can build `data: ...` in one buffer).
/// Offsets are written as given; [`Frame::validate`] is how to check a hand-built frame first.
pub fn encode_frame_into(out: &mut String, frame: &Frame) {
    // Reserve once: the fixed keys plus up to three 16-digit offsets, and one byte per text unit
    // (exact for ASCII, the common case; longer text grows the buffer once more at most).
    match frame {
        Frame::Open { stream_id, from, seq, durable_seq, ended } => {
            out.reserve(96 + stream_id.len());
            out.push_str("{\"type\":\"open\",\"streamId\":");
            write_json_string(out, stream_id.units());
            out.push_str(",\"from\":");
            push_u64(out, *from);
            out.push_str(",\"seq\":");
            push_u64(out, *seq);
            out.push_str(",\"durableSeq\":");
            push_u64(out, *durable_seq);
            out.push_str(if *ended { ",\"ended\":true}" } else { ",\"ended\":false}" });
        }
        Frame::Chunk { from, seq, text } => {
            out.reserve(64 + text.len());
            write_chunk_head(out, *from, *seq, text);
            out.push('}');
        }
        Frame::Durable { seq } => {
            out.reserve(48);
            out.push_str("{\"type\":\"durable\",\"seq\":");
            push_u64(out, *seq);
            out.push('}');
        }
        Frame::End { seq, status, error } => {
            out.reserve(64 + error.as_ref().map_or(0, Text::len));
            out.push_str("{\"type\":\"end\",\"seq\":");
            push_u64(out, *seq);
            out.push_str(",\"status\":\"");
            // Status names are plain lowercase ASCII: nothing to escape.
            out.push_str(status.as_str());
            out.push('"');
            if let Some(error) = error {
                out.push_str(",\"error\":");
                write_json_string(out, error.units());
            }
            out.push('}');
        }
        Frame::Stale { floor_seq, durable_seq } => {
            out.reserve(80);
            out.push_str("{\"type\":\"stale\",\"floorSeq\":");
            push_u64(out, *floor_seq);
            out.push_str(",\"durableSeq\":");
            push_u64(out, *durable_seq);
            out.push('}');
        }
        Frame::Absent => out.push_str("{\"type\":\"absent\"}"),
    }
}

/// A chunk's `{"type":"chunk","from":…,"seq":…,"text":…`, left open: a message chunk writes its
/// `part` and `at` after the same keys, so both chunks share this one writer.
pub(crate) fn write_chunk_head(out: &mut String, from: u64, seq: u64, text: &Text) {
    out.push_str("{\"type\":\"chunk\",\"from\":");
    push_u64(out, from);
    out.push_str(",\"seq\":");
    push_u64(out, seq);
    out.push_str(",\"text\":");
    write_json_string(out, text.units());
}

/// Parse and check one frame (see the module header for what "check" guarantees).
pub fn decode_frame(input: &str) -> Result<Frame> {
    frame_from_value(&parse_value(input)?)
}

/// [`decode_frame`] over raw bytes, which must be UTF-8.
pub fn decode_frame_bytes(input: &[u8]) -> Result<Frame> {
    frame_from_value(&parse_value_bytes(input)?)
}

/// Check a parsed JSON value as a frame. Fields are checked in wire order, so the first problem
/// reported is the first one a reader of the JSON would meet. Unknown keys are ignored: frames
/// that passed through JavaScript may carry extra fields.
pub fn frame_from_value(v: &JsonValue) -> Result<Frame> {
    if !matches!(v, JsonValue::Object(_)) {
        return Err(Error::new(
            ErrorKind::InvalidJson,
            format!("a frame must be a JSON object, not {}", v.type_name()),
        ));
    }
    let type_text = text_field(v, "type")?;
    let kind = FrameKind::ALL.into_iter().find(|k| type_text == k.as_str()).ok_or_else(|| {
        Error::field(ErrorKind::UnknownFrameType, "type", format!("unknown frame type {}", preview(type_text)))
    })?;
    match kind {
        FrameKind::Open => {
            let stream_id = text_field(v, "streamId")?.clone();
            let from = offset_field(v, "from")?;
            let seq = offset_field(v, "seq")?;
            let durable_seq = offset_field(v, "durableSeq")?;
            let ended = bool_field(v, "ended")?;
            if seq < from {
                return Err(Error::field(
                    ErrorKind::InvalidOffset,
                    "seq",
                    format!("open has seq {seq} below from {from}"),
                ));
            }
            Ok(Frame::Open { stream_id, from, seq, durable_seq, ended })
        }
        FrameKind::Chunk => {
            let from = offset_field(v, "from")?;
            let seq = offset_field(v, "seq")?;
            let text = text_field(v, "text")?;
            check_chunk_span(from, seq, text.len())?;
            Ok(Frame::Chunk { from, seq, text: text.clone() })
        }
        FrameKind::Durable => Ok(Frame::Durable { seq: offset_field(v, "seq")? }),
        FrameKind::End => {
            let seq = offset_field(v, "seq")?;
            let status_text = text_field(v, "status")?;
            let status = StreamStatus::ALL.into_iter().find(|s| status_text == s.as_str()).ok_or_else(|| {
                Error::field(
                    ErrorKind::InvalidStatus,
                    "status",
                    format!("unknown stream status {}", preview(status_text)),
                )
            })?;
            // `"error": null` reads as no error: the TypeScript plane's consumers took a null
            // error for an absent one, and a relay written against them may send it that way.
            // The encoder still omits the field, so the canonical form is unchanged.
            let error = match v.get("error") {
                None | Some(JsonValue::Null) => None,
                Some(JsonValue::String(t)) => Some(t.clone()),
                Some(other) => return Err(wrong_type("error", "a string", other)),
            };
            Ok(Frame::End { seq, status, error })
        }
        FrameKind::Stale => {
            Ok(Frame::Stale { floor_seq: offset_field(v, "floorSeq")?, durable_seq: offset_field(v, "durableSeq")? })
        }
        FrameKind::Absent => Ok(Frame::Absent),
    }
}

pub(crate) fn required<'v>(v: &'v JsonValue, name: &'static str) -> Result<&'v JsonValue> {
    v.get(name).ok_or_else(|| Error::field(ErrorKind::MissingField, name, format!("missing field {name}")))
}

pub(crate) fn wrong_type(name: &'static str, expected: &str, found: &JsonValue) -> Error {
    Error::field(ErrorKind::InvalidField, name, format!("field {name} must be {expected}, not {}", found.type_name()))
}

pub(crate) fn text_field<'v>(v: &'v JsonValue, name: &'static str) -> Result<&'v Text> {
    match required(v, name)? {
        JsonValue::String(t) => Ok(t),
        other => Err(wrong_type(name, "a string", other)),
    }
}

fn bool_field(v: &JsonValue, name: &'static str) -> Result<bool> {
    match required(v, name)? {
        JsonValue::Bool(b) => Ok(*b),
        other => Err(wrong_type(name, "a boolean", other)),
    }
}

/// A JSON number is an offset when JavaScript would call it one: `Number.isInteger`, not
/// negative, and exactly representable (so `1.0` and `1e2` pass, as they do in JavaScript).
pub(crate) fn offset_field(v: &JsonValue, name: &'static str) -> Result<u64> {
    match required(v, name)? {
        JsonValue::Number(n) => jsnum::as_offset(*n).ok_or_else(|| {
            Error::field(
                ErrorKind::InvalidOffset,
                name,
                format!("field {name} must be an integer in 0..=2^53-1, not {}", jsnum::format(*n)),
            )
        }),
        other => Err(wrong_type(name, "a number", other)),
    }
}

/// A bounded, quoted rendering of untrusted text for error messages, so a hostile megabyte-long
/// `type` cannot make a megabyte-long log line.
pub(crate) fn preview(t: &Text) -> String {
    const LIMIT: usize = 64;
    let mut out = String::new();
    if t.len() > LIMIT {
        write_json_string(&mut out, t.units().get(..LIMIT).unwrap_or_default());
        out.push_str("...");
    } else {
        write_json_string(&mut out, t.units());
    }
    out
}
