//! The batch SSE encoder's splitter (docs/contract.md §5): many frames already serialized by
//! JavaScript in one `JSON.stringify(frames)` call, cut into their elements and written as one
//! event each.
//!
//! Why it takes an array's text: `JSON.stringify` of a frame object is the definition of its
//! `data:` line (extra fields, any key order, lone surrogates escaped as `\udxxx`), and an engine
//! writes that text faster than anything that reads the objects property by property. Cutting
//! the array into elements is all that is left to do, in one pass over UTF-16 code units, so a
//! JavaScript string crosses a binding without transcoding either way.
//!
//! Guarantees:
//! - For the compact JSON text of an array (what `JSON.stringify` writes) with one resume point
//!   per element, the output is the concatenation of [`encode_json_event_utf16`] of every element
//!   with its resume point (NaN: none), in order.
//! - Any other input (not an array's text, unbalanced brackets, an unterminated string, a count
//!   of resume points that differs from the count of elements) is an `invalid_argument` error;
//!   no input panics (`fuzz/fuzz_targets/sse_json_array.rs`).

use super::encode::encode_json_event_utf16;
use crate::error::{Error, ErrorKind, Result};

/// The ASCII code units the splitter looks at; every other unit is copied without a second look.
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

/// The events of `json` (the code units of the compact JSON text of an array) with `ids[i]` as
/// the resume point of element `i` (NaN: the element has none).
pub fn encode_json_array_events(json: &[u16], ids: &[f64]) -> Result<Vec<u16>> {
    split(json, ids).ok_or_else(|| {
        Error::new(ErrorKind::InvalidArgument, "expected the JSON text of an array with one resume point per element")
    })
}

fn split(json: &[u16], ids: &[f64]) -> Option<Vec<u16>> {
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
        // `i` passes `end` only when an escape's backslash was the last unit before `]`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn u(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    fn run(json: &str, ids: &[f64]) -> Option<String> {
        encode_json_array_events(&u(json), ids).ok().map(|v| String::from_utf16(&v).unwrap())
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
    fn malformed_input_is_an_invalid_argument_not_a_panic() {
        for bad in ["", "[", "]", "{}", "[{]", "[\"\\", "[\"abc]", "[{}]]", "[}{]", "[\"\\\"]"] {
            assert_eq!(run(bad, &[1.0]), None, "{bad:?}");
        }
        let e = encode_json_array_events(&u("[1,2]"), &[1.0]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert_eq!(run("[]", &[]), Some(String::new()));
        assert_eq!(run("[1]", &[1.0, 2.0]), None);
    }

    #[test]
    fn lone_surrogates_in_elements_are_copied_untouched() {
        let mut json = u("[\"");
        json.extend([0xD800, 0x61, 0xDFFF]);
        json.extend(u("\"]"));
        let out = encode_json_array_events(&json, &[f64::NAN]).unwrap();
        let mut want = u("data: \"");
        want.extend([0xD800, 0x61, 0xDFFF]);
        want.extend(u("\"\n\n"));
        assert_eq!(out, want);
    }

    /// A frame-like JSON value, as a compact text, with strings that hold the splitter's
    /// structural characters and escapes.
    fn element() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            "[a-z,\\[\\]{}\"\\\\ ]{0,8}".prop_map(|s| {
                let mut out = String::new();
                crate::json::write_json_string(&mut out, &u(&s));
                out
            }),
            (0u32..1000).prop_map(|n| n.to_string()),
            Just("null".to_owned()),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec(inner, 0..4).prop_map(|v| {
                    let members: Vec<String> = v.iter().enumerate().map(|(i, x)| format!("\"k{i}\":{x}")).collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    proptest! {
        /// The batch is exactly the events of its elements, one by one.
        #[test]
        fn batch_is_the_concatenation_of_single_events(
            elems in prop::collection::vec(element(), 0..6),
            seed in any::<u64>(),
        ) {
            let ids: Vec<f64> =
                (0..elems.len()).map(|i| if (seed >> i) & 1 == 1 { f64::NAN } else { (seed % 97 + i as u64) as f64 }).collect();
            let json = format!("[{}]", elems.join(","));
            let got = encode_json_array_events(&u(&json), &ids).unwrap();
            let mut want = Vec::new();
            for (e, id) in elems.iter().zip(&ids) {
                encode_json_event_utf16(&mut want, (!id.is_nan()).then_some(*id), &u(e));
            }
            prop_assert_eq!(got, want);
        }

        /// Arbitrary units and counts never panic.
        #[test]
        fn arbitrary_input_never_panics(json in prop::collection::vec(any::<u16>(), 0..40), n in 0usize..4) {
            let _ = encode_json_array_events(&json, &vec![1.0; n]);
        }
    }
}
