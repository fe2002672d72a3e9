//! The AI SDK's UI message stream (`twoplane_core::ui`) across the wasm boundary, with the `ui`
//! feature: a whole stream ingested, and what a reader joining it at an offset reads. The same
//! two bulk calls, with the same JSON in and out, as the Node addon's (bindings/node/src/ui.rs),
//! so the full build (`twoplane/wasm-full`) can map a stream where the addon cannot load (an edge
//! runtime) and replay the shared vectors (tests/vectors/ui.json). Conversion only.
//!
//! Off in the shipped module: the UI mapping needs the core's JSON reader and writer and the
//! message fold, the same weight that keeps `message-text` out of the 40 KB budget.
//!
//! Guarantees, and why:
//! - **Text crosses as UTF-16 code units** in (`&[u16]`): a raw lone surrogate in the JSON is
//!   refused by the core (`invalid_json`) instead of being replaced on the way in. What comes out
//!   is JSON the core wrote, which escapes every lone surrogate, so a `String` loses nothing.
//! - **Nothing panics**: every failure is a `"<kind>: ..."` error with the core's kind.

use twoplane_core::json::{parse_value, JsonValue};
use twoplane_core::message::{encode_message_frame_into, message_frame_from_value, MessageFrame};
use twoplane_core::ui::{ingest_all, resume_all};
use twoplane_core::{Error, ErrorKind, StreamStatus, Text};
use wasm_bindgen::prelude::*;

/// A JSON array read from code units. The core's reader takes UTF-8, so the units are decoded
/// first; a raw lone surrogate cannot be and is refused as the JSON error it is (JSON.stringify
/// escapes them, so only a hand-made string has one).
fn array_of(json: &[u16], what: &'static str) -> Result<Vec<JsonValue>, Error> {
    let src = String::from_utf16(json)
        .map_err(|_| Error::new(ErrorKind::InvalidJson, "invalid JSON: a raw unpaired surrogate (escape it)"))?;
    match parse_value(&src)? {
        JsonValue::Array(items) => Ok(items),
        _ => Err(Error::field(ErrorKind::InvalidArgument, what, format!("{what} is a JSON array"))),
    }
}

/// `uiIngest(streamId, chunksJson)`: the chunks (a JSON array) ingested into a fresh message
/// `streamId`; `{"frames":[...],"abort":bool}` as JSON, as the addon answers.
#[wasm_bindgen(js_name = uiIngest)]
pub fn ui_ingest(stream_id: &[u16], chunks: &[u16]) -> Result<String, String> {
    let fail = |e: Error| e.to_string();
    let id = Text::from_units(stream_id.to_vec());
    let ingested = ingest_all(&id, &array_of(chunks, "chunks").map_err(fail)?).map_err(fail)?;
    // The frames in the core's own encoding, written straight into the answer: the addon's
    // parse-and-rewrite of each frame gives the same text.
    let mut out = String::from("{\"frames\":[");
    for (i, f) in ingested.frames.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        encode_message_frame_into(&mut out, f);
    }
    out.push_str(if ingested.aborted.is_some() { "],\"abort\":true}" } else { "],\"abort\":false}" });
    Ok(out)
}

/// `uiResume(streamId, framesJson, from, status, error)`: the chunks (a JSON array) a reader
/// joining the message `frames` make at `from` reads, the stream having ended with `status`
/// (`complete`, `cancelled`, `error`, `interrupted`) and `error` (absent for none).
#[wasm_bindgen(js_name = uiResume)]
pub fn ui_resume(
    stream_id: &[u16],
    frames: &[u16],
    from: f64,
    status: &[u16],
    error: Option<Vec<u16>>,
) -> Result<String, String> {
    let fail = |e: Error| e.to_string();
    let id = Text::from_units(stream_id.to_vec());
    let frames: Vec<MessageFrame> = array_of(frames, "frames")
        .and_then(|items| items.iter().map(message_frame_from_value).collect())
        .map_err(fail)?;
    let from = twoplane_core::jsnum::offset_arg("from", from).map_err(fail)?;
    let Some(status) = StreamStatus::ALL.into_iter().find(|s| s.as_str().encode_utf16().eq(status.iter().copied()))
    else {
        let named = String::from_utf16_lossy(status);
        return Err(fail(Error::field(ErrorKind::InvalidStatus, "status", format!("unknown stream status {named:?}"))));
    };
    let error = error.map(Text::from_units);
    let chunks = resume_all(&id, &frames, from, status, error.as_ref()).map_err(fail)?;
    Ok(JsonValue::Array(chunks).to_json())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_text::u;

    fn kind_of(e: String) -> String {
        e.split(": ").next().unwrap_or_default().to_owned()
    }

    /// The shared vectors through these two calls natively (JavaScript replays them over the
    /// built module: tests/browser/lib/replay.mjs, `replayUiVectors`).
    #[test]
    fn replays_ui_json() {
        let v = parse_value(include_str!("../../../tests/vectors/ui.json")).unwrap();
        let text = |c: &JsonValue, k: &str| u(&c.get(k).unwrap().as_text().unwrap().to_string_lossy());
        let json = |c: &JsonValue, k: &str| u(&c.get(k).unwrap().to_json());
        for c in v.get("ingest").unwrap().as_array().unwrap() {
            let got = parse_value(&ui_ingest(&text(c, "streamId"), &json(c, "chunks")).unwrap()).unwrap();
            assert_eq!(got.get("frames").unwrap().to_json(), c.get("frames").unwrap().to_json());
            assert_eq!(got.get("abort"), c.get("abort"));
        }
        let resume = v.get("resume").unwrap().as_array().unwrap();
        for c in resume {
            let from = c.get("from").unwrap().as_f64().unwrap();
            let error = c.get("error").unwrap().as_text().map(|t| t.units().to_vec());
            let got = ui_resume(&text(c, "streamId"), &json(c, "frames"), from, &text(c, "status"), error).unwrap();
            assert_eq!(got, c.get("chunks").unwrap().to_json());
        }
        for c in v.get("errors").unwrap().as_array().unwrap() {
            let e = ui_ingest(&text(c, "streamId"), &json(c, "chunks")).unwrap_err();
            assert_eq!(kind_of(e), c.get("kind").unwrap().as_text().unwrap().to_string_lossy());
        }
        assert!(resume.len() >= 20);
    }

    #[test]
    fn keeps_lone_surrogates_and_refuses_with_kinds() {
        let chunks = r#"[{"type":"start"},{"type":"text-start","id":"t"},{"type":"text-delta","id":"t","delta":"a\ud800"},{"type":"text-end","id":"t"}]"#;
        let out = ui_ingest(&u("m"), &u(chunks)).unwrap();
        assert!(out.contains(r#""text":"a\ud800""#), "{out}");
        let frames = parse_value(&out).unwrap().get("frames").unwrap().to_json();
        let back = ui_resume(&u("m"), &u(&frames), 0.0, &u("complete"), None).unwrap();
        assert!(back.contains(r#""delta":"a\ud800""#), "{back}");
        let refused = |r: Result<String, String>| kind_of(r.unwrap_err());
        assert_eq!(refused(ui_ingest(&u("m"), &[0x5B, 0x22, 0xD800, 0x22, 0x5D])), "invalid_json");
        assert_eq!(refused(ui_ingest(&u("m"), &u("{}"))), "invalid_argument");
        assert_eq!(refused(ui_ingest(&u("m"), &u("[{}]"))), "missing_field");
        assert_eq!(refused(ui_resume(&u("m"), &u(&frames), -1.0, &u("complete"), None)), "invalid_offset");
        assert_eq!(refused(ui_resume(&u("m"), &u(&frames), 0.0, &u("done"), None)), "invalid_status");
        assert_eq!(
            refused(ui_resume(&u("m"), &u(r#"[{"type":"nope"}]"#), 0.0, &u("complete"), None)),
            "unknown_frame_type"
        );
    }
}
