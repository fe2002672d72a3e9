//! The frame JSON codec, and the small strict JSON reader and writer under it: the value model
//! (`value.rs`), the reader (`parse.rs`), the writer (`write.rs`) and frames to and from JSON
//! (`frame_codec.rs`).
//!
//! Guarantees:
//! - **Text is never altered.** Strings are held as UTF-16 code units ([`Text`](crate::text::Text)). A `\udxxx`
//!   escape decodes to that very code unit, paired or not, and the writer emits an unpaired
//!   surrogate back as the same escape, so any text JavaScript can hold survives a trip through
//!   this codec unit for unit. (This is why the crate carries its own JSON code: `serde_json`
//!   strings are Rust `String`s, which cannot hold a lone surrogate.)
//! - **Bytes match JavaScript.** [`write_json_string`] and [`encode_frame`] produce exactly the
//!   bytes of ES2019 `JSON.stringify` for the same string or frame object, with the frame keys in
//!   the order of docs/contract.md §1, so SSE `data:` lines compare byte for byte with a JavaScript
//!   producer's.
//! - **Parsing is strict RFC 8259**, as `JSON.parse` is: no comments, trailing commas, leading
//!   zeros, raw control characters, non-standard escapes or trailing garbage. Duplicate object keys
//!   are kept, and lookups take the last one, which is the value `JSON.parse` keeps.
//! - **Hostile input cannot hurt.** No input panics, and nesting is bounded by [`MAX_DEPTH`] so
//!   the recursive reader cannot exhaust the stack (a wasm stack is small).
//! - **Decoded frames are valid**: offsets are integers in `0..=2^53-1`, an `open` has
//!   `from <= seq`, and a chunk's text spans exactly `seq - from` units. Every rejection is an
//!   [`Error`](crate::error::Error) whose kind and field name say what was wrong.

mod frame_codec;
mod parse;
mod value;
mod write;

pub use frame_codec::{decode_frame, decode_frame_bytes, encode_frame, encode_frame_into, frame_from_value};
pub(crate) use frame_codec::{offset_field, preview, required, text_field, write_chunk_head, wrong_type};
pub use parse::{parse_value, parse_value_bytes, MAX_DEPTH};
pub use value::JsonValue;
pub(crate) use write::{push_u64, write_json_object};
pub use write::{write_json_string, write_json_value};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::frame::{Frame, StreamStatus};
    use crate::jsnum;
    use crate::text::Text;
    use proptest::prelude::*;

    fn units(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    fn stringify(u: &[u16]) -> String {
        let mut out = String::new();
        write_json_string(&mut out, u);
        out
    }

    fn err_of(input: &str) -> (ErrorKind, Option<&'static str>) {
        let e = decode_frame(input).expect_err(input);
        (e.kind(), e.field_name())
    }

    fn sample_frames() -> Vec<Frame> {
        vec![
            Frame::Open { stream_id: "msg-1".into(), from: 0, seq: 12, durable_seq: 5, ended: false },
            Frame::Open {
                stream_id: Text::from_units(vec![0xD800, 0x22]),
                from: 3,
                seq: 3,
                durable_seq: 9,
                ended: true,
            },
            Frame::Chunk { from: 7, seq: 13, text: "hé\"\n😀".into() },
            Frame::Chunk { from: 0, seq: 0, text: Text::new() },
            Frame::Chunk { from: 1, seq: 3, text: Text::from_units(vec![0xDC00, 0xD800]) },
            Frame::Durable { seq: jsnum::MAX_SAFE_INTEGER },
            Frame::End { seq: 4, status: StreamStatus::Complete, error: None },
            Frame::End { seq: 0, status: StreamStatus::Error, error: Some("boom \u{1}".into()) },
            Frame::End { seq: 2, status: StreamStatus::Cancelled, error: Some(Text::new()) },
            Frame::End { seq: 2, status: StreamStatus::Interrupted, error: None },
            Frame::Stale { floor_seq: 10, durable_seq: 8 },
            Frame::Absent,
        ]
    }

    #[test]
    fn exact_frame_encodings() {
        let cases: Vec<(Frame, &str)> = vec![
            (
                Frame::Open { stream_id: "s1".into(), from: 0, seq: 12, durable_seq: 5, ended: false },
                r#"{"type":"open","streamId":"s1","from":0,"seq":12,"durableSeq":5,"ended":false}"#,
            ),
            (
                Frame::Open { stream_id: "s".into(), from: 1, seq: 2, durable_seq: 2, ended: true },
                r#"{"type":"open","streamId":"s","from":1,"seq":2,"durableSeq":2,"ended":true}"#,
            ),
            (Frame::Chunk { from: 3, seq: 5, text: "ab".into() }, r#"{"type":"chunk","from":3,"seq":5,"text":"ab"}"#),
            (Frame::Durable { seq: 9007199254740991 }, r#"{"type":"durable","seq":9007199254740991}"#),
            (
                Frame::End { seq: 4, status: StreamStatus::Complete, error: None },
                r#"{"type":"end","seq":4,"status":"complete"}"#,
            ),
            (
                Frame::End { seq: 4, status: StreamStatus::Error, error: Some("bad \"x\"".into()) },
                r#"{"type":"end","seq":4,"status":"error","error":"bad \"x\""}"#,
            ),
            (Frame::Stale { floor_seq: 10, durable_seq: 8 }, r#"{"type":"stale","floorSeq":10,"durableSeq":8}"#),
            (Frame::Absent, r#"{"type":"absent"}"#),
        ];
        for (frame, expected) in cases {
            assert_eq!(encode_frame(&frame), expected);
        }
    }

    #[test]
    fn encode_into_appends() {
        let mut out = String::from("data: ");
        encode_frame_into(&mut out, &Frame::Absent);
        assert_eq!(out, "data: {\"type\":\"absent\"}");
    }

    #[test]
    fn every_frame_round_trips() {
        for f in sample_frames() {
            let json = encode_frame(&f);
            assert_eq!(decode_frame(&json).as_ref(), Ok(&f), "{json}");
            assert_eq!(decode_frame_bytes(json.as_bytes()).as_ref(), Ok(&f));
            assert_eq!(frame_from_value(&parse_value(&json).unwrap()).as_ref(), Ok(&f));
        }
    }

    #[test]
    fn string_escapes_match_json_stringify() {
        assert_eq!(stringify(&units("")), r#""""#);
        assert_eq!(stringify(&units("a\"b\\c/d")), r#""a\"b\\c/d""#);
        assert_eq!(stringify(&units("\u{8}\u{c}\n\r\t")), r#""\b\f\n\r\t""#);
        assert_eq!(stringify(&units("\u{0}\u{1}\u{b}\u{1f}")), r#""\u0000\u0001\u000b\u001f""#);
        assert_eq!(stringify(&units(" \u{7f}")), "\" \u{7f}\"");
        assert_eq!(stringify(&units("\u{2028}\u{2029}")), "\"\u{2028}\u{2029}\"");
        assert_eq!(stringify(&units("é漢😀")), "\"é漢😀\"");
        assert_eq!(stringify(&[0xD800]), r#""\ud800""#);
        assert_eq!(stringify(&[0xDBFF, 0x61]), r#""\udbffa""#);
        assert_eq!(stringify(&[0xDC00]), r#""\udc00""#);
        assert_eq!(stringify(&[0x61, 0xDFFF]), r#""a\udfff""#);
        assert_eq!(stringify(&[0xDC00, 0xD800]), r#""\udc00\ud800""#);
        assert_eq!(stringify(&[0xD800, 0xD800, 0xDC00]), "\"\\ud800\u{10000}\"");
        assert_eq!(stringify(&[0xD83D, 0xDE00]), "\"😀\"");
    }

    #[test]
    fn every_control_unit_has_one_spelling() {
        for u in 0u16..0x20 {
            let s = stringify(&[u]);
            let expected = match u {
                0x08 => "\"\\b\"".to_owned(),
                0x09 => "\"\\t\"".to_owned(),
                0x0A => "\"\\n\"".to_owned(),
                0x0C => "\"\\f\"".to_owned(),
                0x0D => "\"\\r\"".to_owned(),
                _ => format!("\"\\u{u:04x}\""),
            };
            assert_eq!(s, expected);
            assert_eq!(parse_value(&s).unwrap(), JsonValue::String(Text::from_units(vec![u])));
        }
    }

    #[test]
    fn escapes_decode_to_units_verbatim() {
        let pair = parse_value(r#""\ud83d\ude00""#).unwrap();
        assert_eq!(pair, JsonValue::String("😀".into()));
        let upper = parse_value(r#""\uD83D\uDE00""#).unwrap();
        assert_eq!(upper, pair);
        let lone = parse_value(r#""a\ud800b""#).unwrap();
        assert_eq!(lone.as_text().unwrap().units(), &[0x61, 0xD800, 0x62]);
        let reversed = parse_value(r#""\udc00\ud800""#).unwrap();
        assert_eq!(reversed.as_text().unwrap().units(), &[0xDC00, 0xD800]);
        let simple = parse_value(r#""\"\\\/\b\f\n\r\t""#).unwrap();
        assert_eq!(simple.as_text().unwrap(), "\"\\/\u{8}\u{c}\n\r\t");
        // Raw UTF-8 becomes UTF-16; an astral character is two units.
        let raw = parse_value("\"é😀\"").unwrap();
        assert_eq!(raw.as_text().unwrap().units(), &[0xE9, 0xD83D, 0xDE00]);
    }

    #[test]
    fn lone_surrogates_survive_decode_then_encode() {
        for json in [
            r#"{"type":"chunk","from":0,"seq":1,"text":"\ud800"}"#,
            r#"{"type":"chunk","from":4,"seq":6,"text":"\udc00\ud800"}"#,
            r#"{"type":"chunk","from":0,"seq":3,"text":"x\udfffy"}"#,
            r#"{"type":"open","streamId":"\udbff","from":0,"seq":0,"durableSeq":0,"ended":false}"#,
            r#"{"type":"end","seq":0,"status":"error","error":"\ud800"}"#,
        ] {
            assert_eq!(encode_frame(&decode_frame(json).unwrap()), json);
        }
        // An escaped valid pair is written back raw, as JSON.stringify does.
        let f = decode_frame(r#"{"type":"chunk","from":0,"seq":2,"text":"\ud83d\ude00"}"#).unwrap();
        assert_eq!(encode_frame(&f), "{\"type\":\"chunk\",\"from\":0,\"seq\":2,\"text\":\"😀\"}");
    }

    #[test]
    fn parses_general_json() {
        let v = parse_value(" {\"a\" : [1, -2.5e3, true, false, null, {}, []], \"b\":\"x\"}\r\n\t").unwrap();
        assert_eq!(v.get("b").and_then(JsonValue::as_text).unwrap(), "x");
        let a = v.get("a").and_then(JsonValue::as_array).unwrap();
        assert_eq!(a.len(), 7);
        assert_eq!(a[1].as_f64(), Some(-2500.0));
        assert_eq!(a[2].as_bool(), Some(true));
        assert!(a[4].is_null());
        assert_eq!(v.to_json(), r#"{"a":[1,-2500,true,false,null,{},[]],"b":"x"}"#);
        assert_eq!(parse_value("0").unwrap(), JsonValue::Number(0.0));
        assert_eq!(parse_value("-0").unwrap().as_f64().map(f64::is_sign_negative), Some(true));
        assert_eq!(parse_value("1E+2").unwrap(), JsonValue::Number(100.0));
        assert_eq!(parse_value("0.1").unwrap(), JsonValue::Number(0.1));
        assert_eq!(parse_value("1e400").unwrap(), JsonValue::Number(f64::INFINITY));
        assert_eq!(parse_value("\"\u{7f}\"").unwrap().as_text().unwrap().units(), &[0x7F]);
    }

    #[test]
    fn rejects_what_json_parse_rejects() {
        for bad in [
            "",
            " ",
            "[1,]",
            "{\"a\":1,}",
            "[1 2]",
            "{\"a\" 1}",
            "{a:1}",
            "{'a':1}",
            "01",
            "-01",
            "1.",
            ".5",
            "+1",
            "1e",
            "1e+",
            "-",
            "--1",
            "0x10",
            "NaN",
            "Infinity",
            "tru",
            "nul",
            "True",
            "[",
            "{",
            "\"abc",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\u12G4\"",
            "\"\\\"",
            "\"a\u{1}b\"",
            "\"\t\"",
            "\"\n\"",
            "1 2",
            "{} x",
            "/* c */ 1",
            "1 // c",
            "\u{feff}1",
            "\u{a0}1",
            "\u{b}1",
            "\u{c}1",
            "[1]]",
            "{\"a\":1}}",
        ] {
            let e = parse_value(bad).expect_err(bad);
            assert_eq!(e.kind(), ErrorKind::InvalidJson, "{bad:?}");
        }
        assert_eq!(parse_value_bytes(b"\"\xff\"").unwrap_err().kind(), ErrorKind::InvalidJson);
        assert_eq!(parse_value_bytes(b"\"\xed\xa0\x80\"").unwrap_err().kind(), ErrorKind::InvalidJson);
        assert_eq!(decode_frame_bytes(b"{\"type\":\"absent\"}\xc3").unwrap_err().kind(), ErrorKind::InvalidJson);
    }

    #[test]
    fn duplicate_keys_keep_all_and_look_up_last() {
        let v = parse_value(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 3);
        assert_eq!(v.get("a"), Some(&JsonValue::Number(3.0)));
        assert_eq!(v.get_units(&units("b")), Some(&JsonValue::Number(2.0)));
        assert_eq!(v.get("c"), None);
        assert_eq!(JsonValue::Null.get("a"), None);
        let f = decode_frame(r#"{"type":"chunk","type":"durable","seq":4}"#).unwrap();
        assert_eq!(f, Frame::Durable { seq: 4 });
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse_value(&ok).is_ok());
        let too_deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(parse_value(&too_deep).unwrap_err().kind(), ErrorKind::InvalidJson);
        let hostile = "[{\"a\":".repeat(1_000_000);
        assert_eq!(parse_value(&hostile).unwrap_err().kind(), ErrorKind::InvalidJson);
        assert_eq!(decode_frame(&"[".repeat(1_000_000)).unwrap_err().kind(), ErrorKind::InvalidJson);
    }

    #[test]
    fn write_json_value_like_stringify() {
        let v = JsonValue::Array(vec![
            JsonValue::Number(f64::NAN),
            JsonValue::Number(f64::INFINITY),
            JsonValue::Number(-0.0),
            JsonValue::Number(1e21),
            JsonValue::Number(1.5e-7),
            JsonValue::Number(123456789.125),
            JsonValue::Object(vec![(Text::from_units(vec![0xD800]), JsonValue::String("\u{2028}".into()))]),
        ]);
        assert_eq!(v.to_json(), "[null,null,0,1e+21,1.5e-7,123456789.125,{\"\\ud800\":\"\u{2028}\"}]");
    }

    #[test]
    fn frame_shape_errors() {
        assert_eq!(err_of("[]"), (ErrorKind::InvalidJson, None));
        assert_eq!(err_of("\"open\""), (ErrorKind::InvalidJson, None));
        assert!(decode_frame("null").unwrap_err().message().contains("must be a JSON object"));
        assert_eq!(err_of("{"), (ErrorKind::InvalidJson, None));
        assert_eq!(err_of("{}"), (ErrorKind::MissingField, Some("type")));
        assert_eq!(err_of(r#"{"type":1}"#), (ErrorKind::InvalidField, Some("type")));
        assert_eq!(err_of(r#"{"type":null}"#), (ErrorKind::InvalidField, Some("type")));
        assert_eq!(err_of(r#"{"type":"Open"}"#), (ErrorKind::UnknownFrameType, Some("type")));
        assert_eq!(err_of(r#"{"type":"\ud800"}"#), (ErrorKind::UnknownFrameType, Some("type")));
        let long = format!(r#"{{"type":"{}"}}"#, "x".repeat(10_000));
        assert!(decode_frame(&long).unwrap_err().message().len() < 200);
    }

    #[test]
    fn open_errors() {
        let base = r#""type":"open""#;
        assert_eq!(err_of(&format!("{{{base}}}")), (ErrorKind::MissingField, Some("streamId")));
        assert_eq!(err_of(&format!(r#"{{{base},"streamId":5}}"#)), (ErrorKind::InvalidField, Some("streamId")));
        assert_eq!(err_of(&format!(r#"{{{base},"streamId":"s"}}"#)), (ErrorKind::MissingField, Some("from")));
        let with = |rest: &str| format!(r#"{{{base},"streamId":"s",{rest}}}"#);
        let cases = [
            (r#""from":"0""#, ErrorKind::InvalidField, "from"),
            (r#""from":0"#, ErrorKind::MissingField, "seq"),
            (r#""from":0,"seq":1"#, ErrorKind::MissingField, "durableSeq"),
            (r#""from":0,"seq":1,"durableSeq":0"#, ErrorKind::MissingField, "ended"),
            (r#""from":0,"seq":1,"durableSeq":0,"ended":1"#, ErrorKind::InvalidField, "ended"),
            (r#""from":0,"seq":1,"durableSeq":-1,"ended":true"#, ErrorKind::InvalidOffset, "durableSeq"),
            (r#""from":0.5,"seq":1,"durableSeq":0,"ended":true"#, ErrorKind::InvalidOffset, "from"),
            (r#""from":2,"seq":1,"durableSeq":0,"ended":true"#, ErrorKind::InvalidOffset, "seq"),
        ];
        for (rest, kind, field) in cases {
            assert_eq!(err_of(&with(rest)), (kind, Some(field)), "{rest}");
        }
        let f = decode_frame(&with(r#""from":1.0,"seq":1e2,"durableSeq":0,"ended":true,"extra":[1]"#)).unwrap();
        assert_eq!(f, Frame::Open { stream_id: "s".into(), from: 1, seq: 100, durable_seq: 0, ended: true });
    }

    #[test]
    fn offset_errors() {
        for (seq, kind) in [
            ("-1", ErrorKind::InvalidOffset),
            ("1.5", ErrorKind::InvalidOffset),
            ("9007199254740992", ErrorKind::InvalidOffset),
            ("1e400", ErrorKind::InvalidOffset),
            ("\"1\"", ErrorKind::InvalidField),
            ("null", ErrorKind::InvalidField),
            ("true", ErrorKind::InvalidField),
            ("[1]", ErrorKind::InvalidField),
        ] {
            assert_eq!(err_of(&format!(r#"{{"type":"durable","seq":{seq}}}"#)), (kind, Some("seq")), "{seq}");
        }
        assert_eq!(decode_frame(r#"{"type":"durable","seq":-0}"#).unwrap(), Frame::Durable { seq: 0 });
        assert_eq!(
            decode_frame(r#"{"type":"durable","seq":9007199254740991}"#).unwrap(),
            Frame::Durable { seq: jsnum::MAX_SAFE_INTEGER }
        );
        assert_eq!(err_of(r#"{"type":"durable"}"#), (ErrorKind::MissingField, Some("seq")));
        assert_eq!(err_of(r#"{"type":"stale","durableSeq":1}"#), (ErrorKind::MissingField, Some("floorSeq")));
        assert_eq!(err_of(r#"{"type":"stale","floorSeq":1}"#), (ErrorKind::MissingField, Some("durableSeq")));
        assert_eq!(
            err_of(r#"{"type":"stale","floorSeq":1,"durableSeq":0.1}"#),
            (ErrorKind::InvalidOffset, Some("durableSeq"))
        );
    }

    #[test]
    fn chunk_errors() {
        assert_eq!(err_of(r#"{"type":"chunk","seq":1,"text":"a"}"#), (ErrorKind::MissingField, Some("from")));
        assert_eq!(err_of(r#"{"type":"chunk","from":0,"text":"a"}"#), (ErrorKind::MissingField, Some("seq")));
        assert_eq!(err_of(r#"{"type":"chunk","from":0,"seq":1}"#), (ErrorKind::MissingField, Some("text")));
        assert_eq!(err_of(r#"{"type":"chunk","from":0,"seq":1,"text":1}"#), (ErrorKind::InvalidField, Some("text")));
        assert_eq!(err_of(r#"{"type":"chunk","from":0,"seq":2,"text":"a"}"#), (ErrorKind::ChunkSpan, Some("text")));
        assert_eq!(err_of(r#"{"type":"chunk","from":2,"seq":1,"text":"a"}"#), (ErrorKind::ChunkSpan, Some("text")));
        assert_eq!(err_of(r#"{"type":"chunk","from":0,"seq":1,"text":"😀"}"#), (ErrorKind::ChunkSpan, Some("text")));
        assert!(decode_frame(r#"{"type":"chunk","from":0,"seq":2,"text":"😀"}"#).is_ok());
    }

    #[test]
    fn end_errors() {
        assert_eq!(err_of(r#"{"type":"end","status":"complete"}"#), (ErrorKind::MissingField, Some("seq")));
        assert_eq!(err_of(r#"{"type":"end","seq":1}"#), (ErrorKind::MissingField, Some("status")));
        assert_eq!(err_of(r#"{"type":"end","seq":1,"status":0}"#), (ErrorKind::InvalidField, Some("status")));
        assert_eq!(
            err_of(r#"{"type":"end","seq":1,"status":"streaming"}"#),
            (ErrorKind::InvalidStatus, Some("status"))
        );
        // A null error is no error (the original's consumers read it so); other types are refused.
        assert_eq!(
            decode_frame(r#"{"type":"end","seq":1,"status":"complete","error":null}"#).unwrap(),
            Frame::End { seq: 1, status: StreamStatus::Complete, error: None }
        );
        assert_eq!(
            err_of(r#"{"type":"end","seq":1,"status":"complete","error":false}"#),
            (ErrorKind::InvalidField, Some("error"))
        );
        assert_eq!(
            err_of(r#"{"type":"end","seq":1,"status":"complete","error":{}}"#),
            (ErrorKind::InvalidField, Some("error"))
        );
        assert_eq!(err_of(r#"{"type":"end","seq":-3,"status":"complete"}"#), (ErrorKind::InvalidOffset, Some("seq")));
    }

    #[test]
    fn absent_ignores_extras() {
        assert_eq!(decode_frame(r#" {"x":{"y":[]},"type":"absent","seq":"junk"} "#).unwrap(), Frame::Absent);
    }

    fn arb_units() -> impl Strategy<Value = Vec<u16>> {
        // Weight the interesting units: controls, quotes, both surrogate halves, and ASCII.
        let unit = prop_oneof![
            any::<u16>(),
            0u16..0x20,
            Just(0x22u16),
            Just(0x5Cu16),
            0xD800u16..0xDC00,
            0xDC00u16..0xE000,
            0x20u16..0x7F,
        ];
        proptest::collection::vec(unit, 0..24)
    }

    fn arb_offset() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..1000, 0u64..=jsnum::MAX_SAFE_INTEGER]
    }

    fn arb_frame() -> impl Strategy<Value = Frame> {
        let status = proptest::sample::select(StreamStatus::ALL.to_vec());
        prop_oneof![
            (arb_units(), arb_offset(), 0u64..1000, arb_offset(), any::<bool>()).prop_map(
                |(id, from, extra, durable_seq, ended)| Frame::Open {
                    stream_id: Text::from_units(id),
                    from,
                    seq: (from + extra).min(jsnum::MAX_SAFE_INTEGER),
                    durable_seq,
                    ended,
                }
            ),
            (0u64..1_000_000, arb_units()).prop_map(|(from, t)| Frame::chunk(from, Text::from_units(t)).unwrap()),
            arb_offset().prop_map(|seq| Frame::Durable { seq }),
            (arb_offset(), status, proptest::option::of(arb_units()))
                .prop_map(|(seq, status, error)| { Frame::End { seq, status, error: error.map(Text::from_units) } }),
            (arb_offset(), arb_offset()).prop_map(|(floor_seq, durable_seq)| Frame::Stale { floor_seq, durable_seq }),
            Just(Frame::Absent),
        ]
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_frame_bytes(&bytes);
            let _ = parse_value_bytes(&bytes);
        }

        #[test]
        fn arbitrary_strings_never_panic(s in ".{0,128}") {
            let _ = decode_frame(&s);
        }

        #[test]
        fn json_shaped_strings_never_panic(s in r#"[\[\]{}",:0-9eE+\-. a-z\\/\u00e9\u{1F600}\t\n]{0,96}"#) {
            let _ = decode_frame(&s);
            if let Ok(v) = parse_value(&s) {
                // Whatever parses must re-parse from its own encoding to the same value.
                prop_assert_eq!(parse_value(&v.to_json()).ok(), Some(v));
            }
        }

        #[test]
        fn frames_round_trip(f in arb_frame()) {
            let json = encode_frame(&f);
            let back = decode_frame(&json);
            prop_assert_eq!(back.as_ref(), Ok(&f));
            prop_assert_eq!(encode_frame(&back.unwrap()), json);
        }

        #[test]
        fn strings_round_trip_unit_for_unit(u in arb_units()) {
            let json = stringify(&u);
            let v = parse_value(&json).unwrap();
            prop_assert_eq!(v.as_text().map(Text::units), Some(u.as_slice()));
        }
    }
}
