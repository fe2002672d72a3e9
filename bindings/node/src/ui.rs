//! The AI SDK's UI message stream (`twoplane_core::ui`) for JavaScript: a whole stream ingested,
//! and what a reader joining it at an offset reads. Bulk calls, JSON text in and out, for the
//! shared vectors (`tests/vectors/ui.json`) and for a Node server that maps a stream itself.
//! Conversion only; every rule is the core's.
//!
//! Guarantees: text crosses as UTF-16 code units ([`units_of`]), so a lone surrogate in a chunk's
//! JSON is refused by the core (`invalid_json`) rather than replaced; what comes out is JSON the
//! core wrote (lone surrogates escaped); every failure is an error whose `code` is the core's kind,
//! and nothing panics.

use napi::{Env, JsString};
use napi_derive::napi;
use twoplane_core::json::{parse_value, JsonValue};
use twoplane_core::message::{message_frame_from_value, MessageFrame};
use twoplane_core::ui::{ingest_all, resume_all};
use twoplane_core::{Error, ErrorKind, StreamStatus, Text};

use crate::error::{from_core, Kind};
use crate::text::{js_string, units_of};
use napi::Result;

/// A JSON array read from a JavaScript string's code units.
fn array_of(s: &JsString<'_>, what: &'static str) -> Result<Vec<JsonValue>, Kind> {
    let src = String::from_utf16(&units_of(s)?).map_err(|_| {
        from_core(Error::new(ErrorKind::InvalidJson, "invalid JSON: a raw unpaired surrogate (escape it)"))
    })?;
    match parse_value(&src).map_err(from_core)? {
        JsonValue::Array(items) => Ok(items),
        _ => Err(from_core(Error::field(ErrorKind::InvalidArgument, what, format!("{what} is a JSON array")))),
    }
}

fn out<'e>(env: &'e Env, value: &JsonValue) -> Result<JsString<'e>, Kind> {
    let units: Vec<u16> = value.to_json().encode_utf16().collect();
    js_string(env, &units)
}

/// `uiIngest(streamId, chunksJson)`: the chunks (a JSON array) ingested into a fresh message;
/// `{"frames": [...], "abort": bool}` as JSON.
#[napi(js_name = "uiIngest", catch_unwind)]
pub fn ui_ingest<'e>(env: &'e Env, stream_id: JsString, chunks: JsString) -> Result<JsString<'e>, Kind> {
    let id = Text::from_units(units_of(&stream_id)?);
    let ingested = ingest_all(&id, &array_of(&chunks, "chunks")?).map_err(from_core)?;
    let frames =
        ingested.frames.iter().map(frame_value).collect::<std::result::Result<Vec<_>, _>>().map_err(from_core)?;
    let result = JsonValue::Object(vec![
        ("frames".into(), JsonValue::Array(frames)),
        ("abort".into(), JsonValue::Bool(ingested.aborted.is_some())),
    ]);
    out(env, &result)
}

/// `uiResume(streamId, framesJson, from, status, error)`: the chunks (a JSON array) a reader
/// joining the message `frames` make at `from` reads, the stream having ended with `status`
/// (`complete`, `cancelled`, `error`, `interrupted`) and `error` (or null).
#[napi(js_name = "uiResume", catch_unwind)]
pub fn ui_resume<'e>(
    env: &'e Env,
    stream_id: JsString,
    frames: JsString,
    from: f64,
    status: String,
    error: Option<JsString>,
) -> Result<JsString<'e>, Kind> {
    let id = Text::from_units(units_of(&stream_id)?);
    let frames: Vec<MessageFrame> = array_of(&frames, "frames")?
        .iter()
        .map(message_frame_from_value)
        .collect::<std::result::Result<_, _>>()
        .map_err(from_core)?;
    let from = twoplane_core::jsnum::offset_arg("from", from).map_err(from_core)?;
    let status = StreamStatus::ALL.into_iter().find(|s| s.as_str() == status).ok_or_else(|| {
        from_core(Error::field(ErrorKind::InvalidStatus, "status", format!("unknown stream status {status:?}")))
    })?;
    let error = error.map(|e| units_of(&e).map(Text::from_units)).transpose()?;
    let chunks = resume_all(&id, &frames, from, status, error.as_ref()).map_err(from_core)?;
    out(env, &JsonValue::Array(chunks))
}

/// A frame as a JSON value (the core's codec, read back).
fn frame_value(f: &MessageFrame) -> std::result::Result<JsonValue, Error> {
    parse_value(&twoplane_core::message::encode_message_frame(f))
}
