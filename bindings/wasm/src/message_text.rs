//! The text half of messages (docs/contract.md §8) across the wasm boundary, with the
//! `message-text` feature: the frame codec, the durable message and its reader. Off in the
//! shipped module for its size (see [`crate::message`]); the Node addon always has it.
//!
//! Guarantees, and why:
//! - **Text crosses as UTF-16 code units** in (`&[u16]`); what comes out is JSON the core wrote,
//!   which escapes every lone surrogate and is therefore well-formed, so a `String` loses nothing.
//! - **The reader decides from numbers** (`messageReaderFeed`, as `messageConformFeed`) and is
//!   handed only the frames whose action changed the message, so its document is the core's.
//! - **Nothing panics**: a stale handle gets a sentinel answer, bad input a `"<kind>: ..."` error.

use std::cell::RefCell;

use twoplane_core::jsnum;
use twoplane_core::message::{
    assemble_durable_message, decode_message_frame_units, encode_message_event, encode_message_frame,
    message_resume_point, Message, MessageAction, MessageChunkRow, MessageReaderCore,
};
use wasm_bindgen::prelude::*;

use crate::message::{insert, numbers, remove, with};
use crate::{Slab, NO_INSTANCE};

/// A message's reader: the numeric core that decides, and the message it holds (the caller hands
/// it the frames whose action changes the message, so the document is the core's).
struct ReaderState {
    core: MessageReaderCore,
    message: Message,
    /// The part and splice offset of the last action (NaN when it had none).
    part: f64,
    at: f64,
}

thread_local! {
    static MESSAGES: RefCell<Slab<Message>> = const { RefCell::new(Slab::new()) };
    static READERS: RefCell<Slab<ReaderState>> = const { RefCell::new(Slab::new()) };
}

// ------------------------------------------------------------------ the frame codec

/// A frame's JSON text (`JSON.stringify(frame)`) decoded strictly and written back by the core:
/// `as_event` false gives the frame's JSON, true its SSE event. Refused frames are the core's
/// decode errors.
#[wasm_bindgen(js_name = messageFrameEncode)]
pub fn message_frame_encode(json: &[u16], as_event: bool) -> Result<String, String> {
    let frame = decode_message_frame_units(json).map_err(|e| e.to_string())?;
    Ok(if as_event { encode_message_event(&frame) } else { encode_message_frame(&frame) })
}

/// The field a refused frame's decode error names (`"at"`, `"value"`, ...), empty when it names
/// none or the frame decodes: asked once a decode failed, so the error can carry it.
#[wasm_bindgen(js_name = messageFrameErrorField)]
pub fn message_frame_error_field(json: &[u16]) -> String {
    decode_message_frame_units(json).err().and_then(|e| e.field_name()).unwrap_or_default().to_owned()
}

/// The SSE `id:` of a frame given as JSON text, or -1 when it has none.
#[wasm_bindgen(js_name = messageFrameResumePoint)]
pub fn message_frame_resume_point(json: &[u16]) -> Result<f64, String> {
    let frame = decode_message_frame_units(json).map_err(|e| e.to_string())?;
    Ok(message_resume_point(&frame).map_or(-1.0, |id| id as f64))
}

// ------------------------------------------------------------------ the durable message

/// The durable message from its row (`body` and the stored document `stored`, each absent when
/// not a string; the row's `seq`) and its chunk rows, packed as
/// `MessageChunkRow::from_js_packed` reads them. Returns its handle.
#[wasm_bindgen(js_name = messageAssemble)]
#[allow(clippy::too_many_arguments)]
pub fn message_assemble(
    body: Option<Vec<u16>>,
    stored: Option<Vec<u16>>,
    seq: f64,
    seqs: &[f64],
    texts: &[u16],
    text_lens: &[f64],
    parts: &[u16],
    parts_lens: &[f64],
) -> Result<u32, String> {
    let fail = |e: twoplane_core::Error| e.to_string();
    let seq = jsnum::offset_arg("seq", seq).map_err(fail)?;
    let rows = MessageChunkRow::from_js_packed(seqs, texts, text_lens, parts, parts_lens).map_err(fail)?;
    let body = body.map(twoplane_core::Text::from_units);
    let stored = stored.map(twoplane_core::Text::from_units);
    let message = assemble_durable_message(body.as_ref(), stored.as_ref(), seq, &rows).map_err(fail)?;
    Ok(insert(&MESSAGES, message))
}

#[wasm_bindgen(js_name = messageDrop)]
pub fn message_drop(h: u32) {
    remove(&MESSAGES, h);
}

/// The stored document (`{"parts":[...],...}`); empty for an unknown handle.
#[wasm_bindgen(js_name = messageDocument)]
pub fn message_document(h: u32) -> String {
    with(&MESSAGES, h, String::new(), |m| m.document().to_string_lossy())
}

/// The length in the coordinate: where a reader holding the message joins.
#[wasm_bindgen(js_name = messageLen)]
pub fn message_len(h: u32) -> f64 {
    with(&MESSAGES, h, f64::NAN, |m| m.len() as f64)
}

/// Every part's body length (an `open`'s `parts`), empty when nothing structural happened.
#[wasm_bindgen(js_name = messagePartTable)]
pub fn message_part_table(h: u32) -> Vec<f64> {
    with(&MESSAGES, h, Vec::new(), |m| m.part_table().unwrap_or_default().into_iter().map(|l| l as f64).collect())
}

// ------------------------------------------------------------------ the reader

/// A reader holding the durable message `message` (a `messageAssemble` handle, copied: the
/// durable message stays as it was). An unknown handle is `invalid_argument`.
#[wasm_bindgen(js_name = messageReaderNew)]
pub fn message_reader_new(message: u32) -> Result<u32, String> {
    let Some(message) = with(&MESSAGES, message, None, |m| Some(m.clone())) else {
        return Err("invalid_argument: no such durable message".to_owned());
    };
    let core = MessageReaderCore::new(message.tally().clone());
    Ok(insert(&READERS, ReaderState { core, message, part: f64::NAN, at: f64::NAN }))
}

#[wasm_bindgen(js_name = messageReaderDrop)]
pub fn message_reader_drop(h: u32) {
    remove(&READERS, h);
}

/// One frame as numbers; returns the `MessageAction::code` (NO_INSTANCE for an unknown handle).
/// The action's part and splice offset are read next with `messageReaderPart`/`messageReaderAt`.
#[wasm_bindgen(js_name = messageReaderFeed)]
pub fn message_reader_feed(h: u32, kind_id: u32, a: f64, b: f64, c: f64, part: f64, at: f64) -> u32 {
    with(&READERS, h, NO_INSTANCE, |s| {
        let action = s.core.feed_numbers(numbers(kind_id, a, b, c, part, at));
        s.part = action.part().map_or(f64::NAN, f64::from);
        s.at = match action {
            MessageAction::Splice { at, .. } => at as f64,
            _ => f64::NAN,
        };
        action.code()
    })
}

#[wasm_bindgen(js_name = messageReaderPart)]
pub fn message_reader_part(h: u32) -> f64 {
    with(&READERS, h, f64::NAN, |s| s.part)
}

#[wasm_bindgen(js_name = messageReaderAt)]
pub fn message_reader_at(h: u32) -> f64 {
    with(&READERS, h, f64::NAN, |s| s.at)
}

/// Fold the frame (its JSON text) whose action changed the message into the message held; the
/// core decided it already, so it applies the same way. A frame that does not decode is the
/// core's error.
#[wasm_bindgen(js_name = messageReaderApply)]
pub fn message_reader_apply(h: u32, json: &[u16]) -> Result<(), String> {
    let frame = decode_message_frame_units(json).map_err(|e| e.to_string())?;
    with(&READERS, h, Err("invalid_argument: no such reader".to_owned()), |s| {
        s.message.apply(&frame).map(|_| ()).map_err(|e| e.to_string())
    })
}

/// The held message's document.
#[wasm_bindgen(js_name = messageReaderDocument)]
pub fn message_reader_document(h: u32) -> String {
    with(&READERS, h, String::new(), |s| s.message.document().to_string_lossy())
}

#[wasm_bindgen(js_name = messageReaderResumeFrom)]
pub fn message_reader_resume_from(h: u32) -> f64 {
    // The held message's length: the core's resume point whenever every change was folded, and
    // still what is held when the adapter could not fold one (it stops the reader then).
    with(&READERS, h, f64::NAN, |s| s.message.len() as f64)
}

/// `StopReason::code` once stopped, -1 while live.
#[wasm_bindgen(js_name = messageReaderStopCode)]
pub fn message_reader_stop_code(h: u32) -> i32 {
    with(&READERS, h, -1, |s| s.core.stopped().map_or(-1, |r| r.code() as i32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_text::u;

    #[test]
    fn codec_round_trips_and_refuses() {
        let json = r#"{"type":"part","from":0,"seq":1,"part":1,"kind":"reasoning"}"#;
        assert_eq!(message_frame_encode(&u(json), false).unwrap(), json);
        assert_eq!(message_frame_encode(&u(json), true).unwrap(), format!("id: 1\ndata: {json}\n\n"));
        assert_eq!(message_frame_resume_point(&u(json)).unwrap(), 1.0);
        assert_eq!(message_frame_resume_point(&u(r#"{"type":"absent"}"#)).unwrap(), -1.0);
        assert!(message_frame_encode(&u(r#"{"type":"step"}"#), false).unwrap_err().starts_with("unknown_frame_type: "));
        assert!(message_frame_encode(&[0xD800], false).unwrap_err().starts_with("invalid_json: "));
        assert_eq!(message_frame_error_field(&u(r#"{"type":"step"}"#)), "type");
        assert_eq!(message_frame_error_field(&u(json)), "");
    }

    #[test]
    fn reader_decides_and_holds_the_message() {
        let frames = u(r#"[{"type":"part","from":0,"seq":1,"part":1,"kind":"reasoning"}]"#);
        let m = message_assemble(None, None, 0.0, &[1.0], &[], &[0.0], &frames, &[frames.len() as f64]).unwrap();
        assert_eq!((message_len(m), message_part_table(m)), (1.0, vec![0.0, 0.0]));
        let r = message_reader_new(m).unwrap();
        assert_eq!(message_reader_feed(r, 1, 1.0, 3.0, 2.0, 1.0, 0.0), 1);
        assert_eq!((message_reader_part(r), message_reader_at(r)), (1.0, 0.0));
        message_reader_apply(r, &u(r#"{"type":"chunk","from":1,"seq":3,"text":"ab","part":1,"at":0}"#)).unwrap();
        assert_eq!(message_reader_document(r), r#"{"parts":[{"type":"reasoning","text":"ab"}]}"#);
        assert_eq!(message_document(m), r#"{"parts":[{"type":"reasoning","text":""}]}"#, "the durable one is a copy");
        assert_eq!(message_reader_feed(r, 1, 5.0, 6.0, 1.0, 1.0, 2.0), 2);
        assert_eq!((message_reader_stop_code(r), message_reader_resume_from(r)), (3, 3.0));
        assert!(message_assemble(None, None, 0.5, &[], &[], &[], &[], &[])
            .unwrap_err()
            .starts_with("invalid_offset: "));
        message_drop(m);
        assert!(message_reader_new(m).unwrap_err().starts_with("invalid_argument: "));
    }
}
