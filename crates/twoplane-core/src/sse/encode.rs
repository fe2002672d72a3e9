//! The SSE encoder (docs/contract.md §5): the response headers, the keep-alive comment, and
//! frames (or JSON text already serialized) written as events.
//!
//! Guarantees: an encoded frame is `id: <resume point>\n` (only when the frame has one) followed
//! by `data: <JSON>\n\n`, the JSON byte for byte what `JSON.stringify` writes for the same
//! frame; it never holds a raw CR or LF, so one frame is one `data:` line and one event.

use std::fmt::Write as _;

use crate::frame::{frame_resume_point, Frame};
use crate::json;

/// The SSE response headers, in the order the contract lists them. `no-transform` and
/// `x-accel-buffering: no` stop compressing or buffering proxies from batching the tokens.
pub const STREAM_SSE_HEADERS: [(&str, &str); 4] = [
    ("content-type", "text/event-stream; charset=utf-8"),
    ("cache-control", "no-cache, no-transform"),
    ("connection", "keep-alive"),
    ("x-accel-buffering", "no"),
];

/// A comment line that clients skip; sent while the model is quiet so that proxies and load
/// balancers do not close the connection for inactivity.
pub const KEEP_ALIVE_COMMENT: &str = ": ping\n\n";

/// How often [`KEEP_ALIVE_COMMENT`] is sent by default.
pub const DEFAULT_KEEP_ALIVE_MS: u64 = 15_000;

/// Append one frame as one SSE event to `out`.
pub fn encode_event_into(out: &mut String, frame: &Frame) {
    if let Some(id) = frame_resume_point(frame) {
        // Writing into a String cannot fail.
        let _ = writeln!(out, "id: {id}");
    }
    out.push_str("data: ");
    json::encode_frame_into(out, frame);
    out.push_str("\n\n");
}

/// The same event layout for a frame already serialized by someone else (JavaScript's
/// `JSON.stringify`, extra fields and all), in UTF-16 so a JavaScript string crosses without
/// transcoding: `id: <String(resume point)>\n` when there is one, then `data: <json>\n\n`.
pub fn encode_json_event_utf16(out: &mut Vec<u16>, resume_point: Option<f64>, json: &[u16]) {
    let ascii = |out: &mut Vec<u16>, s: &str| out.extend(s.bytes().map(u16::from));
    if let Some(id) = resume_point {
        ascii(out, "id: ");
        if let Some(offset) = crate::jsnum::as_offset(id) {
            ascii(out, itoa::Buffer::new().format(offset));
        } else {
            ascii(out, &crate::jsnum::format(id));
        }
        ascii(out, "\n");
    }
    ascii(out, "data: ");
    out.extend_from_slice(json);
    ascii(out, "\n\n");
}

/// One frame as one SSE event.
pub fn encode_event(frame: &Frame) -> String {
    let mut out = String::with_capacity(estimated_event_len(frame));
    encode_event_into(&mut out, frame);
    out
}

/// Many frames as consecutive events, in one buffer reserved up front. Nothing in the runtimes
/// builds a batch this way (the server appends each event with `encode_event_into`), so it is
/// test support only.
#[cfg(any(test, feature = "testing"))]
pub fn encode_events(frames: &[Frame]) -> String {
    let mut out = String::with_capacity(frames.iter().map(estimated_event_len).sum());
    for frame in frames {
        encode_event_into(&mut out, frame);
    }
    out
}

/// An upper estimate of an event's length for the common case: the fixed part of the largest
/// frame with three 16-digit offsets, plus three UTF-8 bytes per text unit (the most a unit of
/// well-formed text takes). Only text full of escapes exceeds it, and then the buffer just grows.
fn estimated_event_len(frame: &Frame) -> usize {
    const FIXED: usize = 128;
    let text_units = match frame {
        Frame::Open { stream_id, .. } => stream_id.len(),
        Frame::Chunk { text, .. } => text.len(),
        Frame::End { error, .. } => error.as_ref().map_or(0, |e| e.len()),
        Frame::Durable { .. } | Frame::Stale { .. } | Frame::Absent => 0,
    };
    FIXED + 3 * text_units
}
