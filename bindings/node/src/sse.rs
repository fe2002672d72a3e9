//! The batch SSE encoder's native half (docs/contract.md §5). JavaScript serializes the frames with one
//! `JSON.stringify(frames)` call and passes their resume points; this cuts the array text into
//! its elements and writes each as one event, `id: <resume point>\n` (when the frame has one)
//! then `data: <element JSON>\n\n`, in a single pass.
//!
//! Why this shape: `JSON.stringify` of a frame object is the definition of the `data:` line (the
//! object may carry extra fields, any key order, lone surrogates escaped as `\udxxx`), and V8
//! writes it faster than anything that reads the object through Node-API property by property.
//! What the addon saves is the per-frame JavaScript work: one `JSON.stringify` call per frame,
//! a template and a concatenation. Both strings cross as UTF-16 code units, so V8 transcodes
//! nothing on the way in or out (reading two-byte strings as UTF-8 measured twice as slow).
//!
//! The event layout is the core's (`twoplane_core::sse::encode_json_event_utf16`); this module
//! only splits the array text into its elements.

use napi::bindgen_prelude::Float64Array;
use napi::{Env, JsString};
use napi_derive::napi;
use twoplane_core::sse::encode_json_event_utf16;
use twoplane_core::ErrorKind;

use crate::error::{err, Kind};
use crate::text::{js_string, units_of};
use napi::Result;

/// The ASCII code units the splitter looks at; everything else is copied without a second look.
const STRUCTURAL: [bool; 128] = {
    let mut t = [false; 128];
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b'[' as usize] = true;
    t[b']' as usize] = true;
    t[b',' as usize] = true;
    t
};

/// The events of `json` (the code units of the compact JSON text of an array, as
/// `JSON.stringify` writes it) with `ids[i]` as the resume point of element `i` (NaN: none).
/// `None` when the text is not such an array or the element count differs from `ids.len()`;
/// never panics. Works on UTF-16 so V8 strings cross without transcoding either way.
pub fn events_of_json_array(json: &[u16], ids: &[f64]) -> Option<Vec<u16>> {
    let end = json.len().checked_sub(1)?;
    if end == 0 || json[0] != u16::from(b'[') || json[end] != u16::from(b']') {
        return None;
    }
    let mut out: Vec<u16> = Vec::with_capacity(json.len() + ids.len() * 32);
    let mut ids = ids.iter();
    let mut emit = |elem: &[u16]| -> Option<()> {
        let id = *ids.next()?;
        encode_json_event_utf16(&mut out, (!id.is_nan()).then_some(id), elem);
        Some(())
    };
    if end > 1 {
        let (mut i, mut start, mut depth, mut in_string) = (1usize, 1usize, 0u32, false);
        while i < end {
            let u = json[i];
            if u < 0x80 && STRUCTURAL[usize::from(u)] {
                let b = u as u8;
                if in_string {
                    match b {
                        b'"' => in_string = false,
                        // The escaped unit is never structural: step over it.
                        b'\\' => i += 1,
                        _ => {}
                    }
                } else {
                    match b {
                        b'"' => in_string = true,
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth = depth.checked_sub(1)?,
                        b',' if depth == 0 => {
                            emit(json.get(start..i)?)?;
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
            }
            i += 1;
        }
        if depth != 0 || in_string || i != end {
            return None;
        }
        emit(json.get(start..end)?)?;
    }
    if ids.next().is_some() {
        return None;
    }
    Some(out)
}

/// `encodeSseJson(JSON.stringify(frames), resumePoints, count)`: the events of every frame,
/// concatenated. The resume points are the first `count` entries of `resumePoints`, so the caller
/// can reuse one scratch array (allocating a typed array per call costs more than a small batch).
#[napi(catch_unwind)]
pub fn encode_sse_json<'e>(env: &'e Env, json: JsString, ids: Float64Array, count: f64) -> Result<JsString<'e>, Kind> {
    let bad =
        || err(ErrorKind::InvalidArgument, "expected the JSON text of an array with one resume point per element");
    let count = twoplane_core::jsnum::as_offset(count)
        .and_then(|c| usize::try_from(c).ok())
        .filter(|&c| c <= ids.len())
        .ok_or_else(bad)?;
    let units = units_of(&json)?;
    let out = events_of_json_array(&units, &ids[..count]).ok_or_else(bad)?;
    js_string(env, &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    fn run(json: &str, ids: &[f64]) -> Option<String> {
        events_of_json_array(&u(json), ids).map(|v| String::from_utf16(&v).unwrap())
    }

    #[test]
    fn splits_top_level_elements_only() {
        let json = r#"[{"type":"chunk","from":0,"seq":3,"text":"a,\"]}["},{"type":"absent","x":[1,{"y":"}"}]}]"#;
        let out = run(json, &[3.0, f64::NAN]).unwrap();
        assert_eq!(
            out,
            "id: 3\ndata: {\"type\":\"chunk\",\"from\":0,\"seq\":3,\"text\":\"a,\\\"]}[\"}\n\n\
             data: {\"type\":\"absent\",\"x\":[1,{\"y\":\"}\"}]}\n\n"
        );
    }

    #[test]
    fn ids_print_like_javascript() {
        let out = run("[{},{},{}]", &[1e21, 1.5, 9007199254740993.0]).unwrap();
        assert_eq!(out, "id: 1e+21\ndata: {}\n\nid: 1.5\ndata: {}\n\nid: 9007199254740992\ndata: {}\n\n");
    }

    #[test]
    fn malformed_input_is_refused_not_a_panic() {
        for bad in ["", "[", "]", "{}", "[{]", "[\"\\", "[\"abc]", "[{}]]", "[}{]", "[\"\\\"]"] {
            assert_eq!(run(bad, &[1.0]), None, "{bad:?}");
        }
        assert_eq!(run("[]", &[]), Some(String::new()));
        assert_eq!(run("[1,2]", &[1.0]), None);
        assert_eq!(run("[1]", &[1.0, 2.0]), None);
    }
}
