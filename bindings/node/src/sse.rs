//! The batch SSE encoder's native half (docs/contract.md §5). JavaScript serializes the frames with one
//! `JSON.stringify(frames)` call and passes their resume points; the core
//! (`twoplane_core::sse::encode_json_array_events`) cuts the array text into its elements and
//! writes each as one event. Conversion only: both strings cross as UTF-16 code units, so V8
//! transcodes nothing on the way in or out (reading two-byte strings as UTF-8 measured twice as
//! slow).

use napi::bindgen_prelude::Float64Array;
use napi::{Env, JsString};
use napi_derive::napi;
use twoplane_core::sse::encode_json_array_events;
use twoplane_core::ErrorKind;

use crate::error::{err, from_core, Kind};
use crate::text::{js_string, units_of};
use napi::Result;

/// `encodeSseJson(JSON.stringify(frames), resumePoints, count)`: the events of every frame,
/// concatenated. The resume points are the first `count` entries of `resumePoints`, so the caller
/// can reuse one scratch array (allocating a typed array per call costs more than a small batch).
#[napi(catch_unwind)]
pub fn encode_sse_json<'e>(env: &'e Env, json: JsString, ids: Float64Array, count: f64) -> Result<JsString<'e>, Kind> {
    let count = twoplane_core::jsnum::as_offset(count)
        .and_then(|c| usize::try_from(c).ok())
        .filter(|&c| c <= ids.len())
        .ok_or_else(|| err(ErrorKind::InvalidArgument, "count is not a length within resumePoints"))?;
    let units = units_of(&json)?;
    let out = encode_json_array_events(&units, &ids[..count]).map_err(from_core)?;
    js_string(env, &out)
}
