//! Writes the shared JSON vectors (`tests/vectors/*.json`) that every runtime replays: the Rust
//! tests, the WebAssembly build in Node and in Chromium, and the Node addon.
//!
//! Usage: `cargo run -p twoplane-core --example gen_vectors -- <out-dir>`. The output is
//! deterministic (a fixed-seed generator), so the test command regenerates it and diffs it with
//! the checked-in copy. Expected values come from the core itself; the cases that pin the
//! contract's own examples are also asserted here against hand-written answers, so a core
//! regression cannot silently rewrite the vectors.

use std::fs;
use std::path::Path;

use twoplane_core::conform::Conform;
use twoplane_core::ddl_args::ddl_of_js_args;
use twoplane_core::json::{parse_value, write_json_string, write_json_value, JsonValue};
use twoplane_core::jsview::{self, OwnedRawPieces};
use twoplane_core::message::{
    assemble_durable_message, assemble_durable_message_at, decode_message_frame, encode_message_event,
    encode_message_frame, merge_frames, message_resume_point, stored_frames, Attrs, Event, Message, MessageAction,
    MessageChunkRow, MessageConform, MessageFrame, MessageKind, MessageLog, MessageReader, MessageVerdict,
    MessageViolation,
};
use twoplane_core::reader::{Reader, ReaderAction};
use twoplane_core::request::{
    is_absolute_url, stream_request_from_fetch, stream_request_from_http, subscribe_url_units,
};
use twoplane_core::splice::{assembly_order, splice_stream_text, stream_chunk_id_text, stream_chunk_id_units};
use twoplane_core::sql::{stream_chunk_table_ddl, Dialect, StreamColumns, StreamTables};
use twoplane_core::sse::{encode_event, SseDecoder};
use twoplane_core::text::pair_safe_cut;
use twoplane_core::{frame_resume_point, json, Frame, Text};

fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| "tests/vectors".to_owned());
    let out = Path::new(&out);
    fs::create_dir_all(out).expect("create output dir");
    write(out, "conform.json", conform_vectors());
    write(out, "reader.json", reader_vectors());
    write(out, "text.json", text_vectors());
    write(out, "codec.json", codec_vectors());
    write(out, "sse.json", sse_vectors());
    write(out, "request.json", request_vectors());
    write(out, "ddl.json", ddl_vectors());
    write(out, "cut.json", cut_vectors());
    write(out, "message.json", message_vectors());
    write(out, "ui.json", ui_vectors());
    write(out, "merge.json", merge_vectors());
}

// ---------------------------------------------------------------- output

/// One case per line, so a diff of the checked-in files shows which cases changed.
fn write(dir: &Path, name: &str, sections: Vec<(&str, Vec<JsonValue>)>) {
    let mut s = String::from("{\n");
    for (i, (key, cases)) in sections.iter().enumerate() {
        write_json_string(&mut s, &utf16(key));
        s.push_str(": [\n");
        for (j, case) in cases.iter().enumerate() {
            s.push_str("  ");
            write_json_value(&mut s, case);
            s.push_str(if j + 1 < cases.len() { ",\n" } else { "\n" });
        }
        s.push_str(if i + 1 < sections.len() { "],\n" } else { "]\n" });
    }
    s.push_str("}\n");
    fs::write(dir.join(name), s).expect("write vector file");
}

fn utf16(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

fn obj(members: Vec<(&str, JsonValue)>) -> JsonValue {
    JsonValue::Object(members.into_iter().map(|(k, v)| (Text::from(k), v)).collect())
}

fn s(x: &str) -> JsonValue {
    JsonValue::String(Text::from(x))
}

fn t(x: Text) -> JsonValue {
    JsonValue::String(x)
}

fn n(x: f64) -> JsonValue {
    JsonValue::Number(x)
}

fn j(src: &str) -> JsonValue {
    parse_value(src).unwrap_or_else(|e| panic!("bad literal {src}: {e}"))
}

fn arr(items: Vec<JsonValue>) -> JsonValue {
    JsonValue::Array(items)
}

fn frame_value(f: &Frame) -> JsonValue {
    parse_value(&json::encode_frame(f)).expect("own encoding parses")
}

/// A small fixed-seed generator (xorshift64*), so the vectors are identical on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Deltas mixing ASCII, CJK, emoji (surrogate pairs) and the odd lone surrogate, as a model and
/// JavaScript may produce them.
fn production(rng: &mut Rng, deltas: usize) -> Vec<Text> {
    const PIECES: [&str; 10] = ["Hel", "lo", " wor", "ld", "漢字", "かな", "😀", "👩‍💻", "\"q\"\\", "\n\t"];
    (0..deltas)
        .map(|_| {
            let mut d = Text::from(PIECES[rng.below(PIECES.len() as u64) as usize]);
            if rng.chance(5) {
                d.push_units(&[0xD800 + rng.below(0x800) as u16]);
            }
            d
        })
        .collect()
}

// ---------------------------------------------------------------- conform

enum Call {
    Feed(JsonValue),
    End,
    Fail,
}

/// Runs `calls` through a conform pass and records what each verdict emits. `step` feeds one call
/// and returns the verdict (the six-frame pass's converts to a [`MessageVerdict`]) with the pass's
/// `pos`, `lastDurable` and requested offset after it, so the six-frame and the parts vectors
/// write what a verdict emits in one way.
fn record_conform<C>(
    stream_id: &str,
    mut c: C,
    calls: &[Call],
    mut step: impl FnMut(&mut C, &Call) -> (MessageVerdict, [f64; 3]),
) -> Vec<JsonValue> {
    let mut out = Vec::new();
    for call in calls {
        let frame = match call {
            Call::Feed(f) => Some(f),
            Call::End | Call::Fail => None,
        };
        let (verdict, [pos, last_durable, requested]) = step(&mut c, call);
        let stale = || obj(vec![("type", s("stale")), ("floorSeq", n(pos)), ("durableSeq", n(last_durable))]);
        let synth = || {
            let r = n(requested);
            obj(vec![
                ("type", s("open")),
                ("streamId", s(stream_id)),
                ("from", r.clone()),
                ("seq", r.clone()),
                ("durableSeq", r),
                ("ended", JsonValue::Bool(false)),
            ])
        };
        let (frames, violation) = match verdict {
            MessageVerdict::Drop => (vec![], None),
            MessageVerdict::Pass => (vec![frame.cloned().expect("pass needs a frame")], None),
            MessageVerdict::OpenThenPass => (vec![synth(), frame.cloned().expect("pass needs a frame")], None),
            MessageVerdict::Violation(MessageViolation::Stream(v)) => {
                let raw = OwnedRawPieces::of(frame);
                (vec![stale()], Some(t(v.reason(&raw.borrowed()))))
            }
            MessageVerdict::Violation(MessageViolation::Part(p)) => (vec![stale()], Some(t(p.reason()))),
            MessageVerdict::Terminate => (vec![stale()], None),
        };
        out.push(obj(vec![("out", arr(frames)), ("violation", violation.unwrap_or(JsonValue::Null))]));
    }
    out
}

fn run_conform(stream_id: &str, from: f64, calls: &[Call]) -> Vec<JsonValue> {
    let id = utf16(stream_id);
    record_conform(stream_id, Conform::new(from), calls, |c, call| {
        let verdict = match call {
            Call::Feed(f) => c.feed(jsview::conform_input(f, &id)),
            Call::End => c.end(),
            Call::Fail => c.fail(),
        };
        (verdict.into(), [c.pos(), c.last_durable(), c.requested()])
    })
}

fn conform_case(name: &str, stream_id: &str, from: f64, calls: Vec<Call>) -> JsonValue {
    conform_case_by(run_conform, name, stream_id, from, calls)
}

/// A conform case: its calls as the vectors write them, and what `run` (one of the passes) emits.
fn conform_case_by(
    run: fn(&str, f64, &[Call]) -> Vec<JsonValue>,
    name: &str,
    stream_id: &str,
    from: f64,
    calls: Vec<Call>,
) -> JsonValue {
    let expect = run(stream_id, from, &calls);
    let calls = calls
        .into_iter()
        .map(|c| match c {
            Call::Feed(f) => obj(vec![("feed", f)]),
            Call::End => obj(vec![("end", JsonValue::Bool(true))]),
            Call::Fail => obj(vec![("fail", JsonValue::Bool(true))]),
        })
        .collect();
    obj(vec![
        ("name", s(name)),
        ("streamId", s(stream_id)),
        ("from", n(from)),
        ("calls", arr(calls)),
        ("expect", arr(expect)),
    ])
}

fn conform_vectors() -> Vec<(&'static str, Vec<JsonValue>)> {
    use Call::{End, Fail, Feed};
    let open = |from: u64, seq: u64| {
        j(&format!(r#"{{"type":"open","streamId":"s","from":{from},"seq":{seq},"durableSeq":0,"ended":false}}"#))
    };
    let chunk = |from: u64, text: &str| frame_value(&Frame::chunk(from, Text::from(text)).unwrap());
    let mut cases = vec![
        conform_case(
            "open passes and sets the position",
            "s",
            2.0,
            vec![Feed(open(2, 5)), Feed(chunk(2, "abc")), Feed(j(r#"{"type":"end","seq":5,"status":"complete"}"#))],
        ),
        conform_case(
            "end with a null error passes",
            "s",
            0.0,
            vec![
                Feed(open(0, 1)),
                Feed(chunk(0, "a")),
                Feed(j(r#"{"type":"end","seq":1,"status":"error","error":null}"#)),
            ],
        ),
        conform_case("open may start below the request", "s", 4.0, vec![Feed(open(1, 5)), Feed(chunk(1, "bcde"))]),
        conform_case("second open is absorbed", "s", 0.0, vec![Feed(open(0, 0)), Feed(open(0, 0))]),
        conform_case(
            "open after a synthesized open is absorbed",
            "s",
            0.0,
            vec![Feed(chunk(0, "ab")), Feed(open(0, 2))],
        ),
        conform_case(
            "open for another stream",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"open","streamId":"t","from":0,"seq":0,"durableSeq":0,"ended":false}"#))],
        ),
        conform_case(
            "open with a non-string stream id",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"open","streamId":7,"from":0,"seq":0,"durableSeq":0}"#))],
        ),
        conform_case(
            "open missing its stream id",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"open","from":0,"seq":0,"durableSeq":0}"#))],
        ),
        conform_case(
            "open with fractional from",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"open","streamId":"s","from":0.5,"seq":1,"durableSeq":0}"#))],
        ),
        conform_case(
            "open with string offsets",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"open","streamId":"s","from":"0","seq":0,"durableSeq":0}"#))],
        ),
        conform_case(
            "open with negative from",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"open","streamId":"s","from":-1,"seq":0,"durableSeq":0}"#))],
        ),
        conform_case(
            "open with seq below from",
            "s",
            5.0,
            vec![Feed(j(r#"{"type":"open","streamId":"s","from":3,"seq":2,"durableSeq":0}"#))],
        ),
        conform_case(
            "open with missing durableSeq",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"open","streamId":"s","from":0,"seq":0}"#))],
        ),
        conform_case("open past the request", "s", 2.0, vec![Feed(open(3, 9))]),
        conform_case(
            "open with a lone surrogate id",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"open","streamId":"\ud800x","from":0,"seq":0,"durableSeq":0}"#))],
        ),
        conform_case("chunk synthesizes open", "s", 3.0, vec![Feed(chunk(3, "xy")), Feed(chunk(5, "z"))]),
        conform_case(
            "chunk replay is absorbed",
            "s",
            0.0,
            vec![Feed(chunk(0, "abc")), Feed(chunk(0, "abc")), Feed(chunk(1, "bc")), Feed(chunk(0, "a"))],
        ),
        conform_case("chunk overlap passes whole", "s", 0.0, vec![Feed(chunk(0, "abc")), Feed(chunk(1, "bcde"))]),
        conform_case("chunk gap", "s", 0.0, vec![Feed(chunk(0, "ab")), Feed(chunk(3, "d"))]),
        conform_case("chunk gap before any open", "s", 2.0, vec![Feed(chunk(3, "d"))]),
        conform_case(
            "chunk with a short text",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"chunk","from":0,"seq":3,"text":"ab"}"#))],
        ),
        conform_case("chunk with no text", "s", 0.0, vec![Feed(j(r#"{"type":"chunk","from":0,"seq":3}"#))]),
        conform_case(
            "chunk with a numeric text",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"chunk","from":0,"seq":1,"text":5}"#))],
        ),
        conform_case(
            "chunk with string offsets",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"chunk","from":"0","seq":"1","text":"a"}"#))],
        ),
        conform_case(
            "chunk with fractional offsets",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"chunk","from":0.5,"seq":1.5,"text":"a"}"#))],
        ),
        conform_case(
            "chunk with negative from",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"chunk","from":-1,"seq":0,"text":"a"}"#))],
        ),
        conform_case(
            "chunk with huge offsets",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"chunk","from":1e300,"seq":1e300,"text":""}"#))],
        ),
        conform_case(
            "chunk with array offsets",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"chunk","from":[1,null,2],"seq":{},"text":"a"}"#))],
        ),
        conform_case("empty chunk at the position is absorbed", "s", 2.0, vec![Feed(chunk(2, ""))]),
        conform_case(
            "chunk spanning a surrogate pair",
            "s",
            0.0,
            vec![Feed(chunk(0, "a😀")), Feed(j(r#"{"type":"chunk","from":2,"seq":4,"text":"\ude00b"}"#))],
        ),
        conform_case(
            "durable passes within the prefix",
            "s",
            0.0,
            vec![
                Feed(chunk(0, "abc")),
                Feed(j(r#"{"type":"durable","seq":2}"#)),
                Feed(j(r#"{"type":"durable","seq":3}"#)),
            ],
        ),
        conform_case(
            "durable rewinding is dropped",
            "s",
            0.0,
            vec![
                Feed(chunk(0, "abc")),
                Feed(j(r#"{"type":"durable","seq":3}"#)),
                Feed(j(r#"{"type":"durable","seq":2}"#)),
            ],
        ),
        conform_case(
            "durable past the position is dropped",
            "s",
            0.0,
            vec![Feed(chunk(0, "ab")), Feed(j(r#"{"type":"durable","seq":3}"#))],
        ),
        conform_case(
            "durable non-integer is dropped",
            "s",
            0.0,
            vec![
                Feed(j(r#"{"type":"durable","seq":"1"}"#)),
                Feed(j(r#"{"type":"durable"}"#)),
                Feed(j(r#"{"type":"durable","seq":0.5}"#)),
            ],
        ),
        conform_case("durable synthesizes open", "s", 4.0, vec![Feed(j(r#"{"type":"durable","seq":4}"#))]),
        conform_case(
            "end at the position",
            "s",
            0.0,
            vec![
                Feed(chunk(0, "ab")),
                Feed(j(r#"{"type":"end","seq":2,"status":"complete"}"#)),
                Feed(chunk(2, "c")),
                End,
                Fail,
            ],
        ),
        conform_case(
            "end below the position with an error",
            "s",
            0.0,
            vec![
                Feed(chunk(0, "ab")),
                Feed(j(r#"{"type":"end","seq":1,"status":"error","error":"boom","extra":[1]}"#)),
            ],
        ),
        conform_case("end synthesizes open", "s", 3.0, vec![Feed(j(r#"{"type":"end","seq":3,"status":"cancelled"}"#))]),
        conform_case(
            "end outruns the delivered text",
            "s",
            0.0,
            vec![
                Feed(chunk(0, "ab")),
                Feed(j(r#"{"type":"durable","seq":1}"#)),
                Feed(j(r#"{"type":"end","seq":4,"status":"complete"}"#)),
            ],
        ),
        conform_case("end malformed", "s", 0.0, vec![Feed(j(r#"{"type":"end","seq":-1,"status":"complete"}"#))]),
        conform_case(
            "end with a string seq",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"end","seq":"2","status":"complete"}"#))],
        ),
        conform_case("end with no seq", "s", 0.0, vec![Feed(j(r#"{"type":"end","status":"complete"}"#))]),
        conform_case(
            "stale passes bare",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"stale","floorSeq":9,"durableSeq":3}"#)), Feed(chunk(0, "a"))],
        ),
        conform_case("absent passes bare", "s", 0.0, vec![Feed(j(r#"{"type":"absent"}"#)), End]),
        conform_case(
            "stale after open",
            "s",
            0.0,
            vec![Feed(open(0, 0)), Feed(j(r#"{"type":"stale","floorSeq":0,"durableSeq":0}"#))],
        ),
        conform_case("unknown type", "s", 0.0, vec![Feed(j(r#"{"type":"chunky"}"#))]),
        conform_case("missing type", "s", 0.0, vec![Feed(j(r#"{"seq":1}"#))]),
        conform_case("numeric type", "s", 0.0, vec![Feed(j(r#"{"type":3}"#))]),
        conform_case("frame that is a number", "s", 0.0, vec![Feed(j("42"))]),
        conform_case("frame that is null", "s", 0.0, vec![Feed(j("null"))]),
        conform_case("frame that is a string", "s", 0.0, vec![Feed(j(r#""chunk""#))]),
        conform_case("frame that is an array", "s", 0.0, vec![Feed(j(r#"[{"type":"absent"}]"#))]),
        conform_case("source ends without a terminal", "s", 0.0, vec![Feed(chunk(0, "ab")), End, End]),
        conform_case("source ends before anything", "s", 7.0, vec![End]),
        conform_case(
            "source fails",
            "s",
            0.0,
            vec![Feed(chunk(0, "ab")), Feed(j(r#"{"type":"durable","seq":2}"#)), Fail, Fail, End],
        ),
        conform_case(
            "extra fields survive",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"chunk","from":0,"seq":1,"text":"a","meta":{"k":[1,2]}}"#))],
        ),
        conform_case(
            "everything after a violation is dropped",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"bogus"}"#)), Feed(chunk(0, "a")), End, Fail],
        ),
        conform_case(
            "integer-valued floats are integers",
            "s",
            0.0,
            vec![Feed(j(r#"{"type":"chunk","from":0.0,"seq":2e0,"text":"ab"}"#))],
        ),
    ];
    cases.extend(generated_conform_cases());

    // The contract's examples, pinned by hand.
    let gap = run_conform("s", 0.0, &[Feed(chunk(0, "ab")), Feed(chunk(3, "d"))]);
    assert_eq!(gap[1].get("violation"), Some(&s("relay chunk at 3 leaves a gap after 2")));
    let span = run_conform("s", 0.0, &[Feed(j(r#"{"type":"chunk","from":0,"seq":3,"text":"ab"}"#))]);
    assert_eq!(span[0].get("violation"), Some(&s("relay chunk 0→3 does not span exactly its offsets")));
    let cannot = run_conform("s", 2.0, &[Feed(open(3, 9))]);
    assert_eq!(cannot[0].get("violation"), Some(&s("relay open at 3 cannot serve the requested 2")));
    let malformed = run_conform("s", 0.0, &[Feed(j(r#"{"type":"open","from":0,"seq":0,"durableSeq":0}"#))]);
    assert_eq!(malformed[0].get("violation"), Some(&s("relay open for undefined at 0 is malformed")));
    vec![("cases", cases)]
}

/// Relayed sequences built from the true frames of a production, then replayed, overlapped,
/// gapped, dropped, duplicated, reordered and truncated. The text itself is never forged.
fn generated_conform_cases() -> Vec<JsonValue> {
    let mut rng = Rng(0x7770_1A2E_5EED_0001);
    let mut cases = Vec::new();
    for i in 0..40 {
        let count = 3 + rng.below(8) as usize;
        let deltas = production(&mut rng, count);
        let mut produced = Text::new();
        let mut truth = Vec::new();
        for d in &deltas {
            let from = produced.len() as u64;
            produced.push_units(d.units());
            truth.push(Frame::chunk(from, d.clone()).unwrap());
            if rng.chance(30) {
                truth.push(Frame::Durable { seq: rng.below(produced.len() as u64 + 1) });
            }
        }
        let total = produced.len() as u64;
        truth.push(Frame::End {
            seq: rng.below(total + 1),
            status: twoplane_core::StreamStatus::Complete,
            error: None,
        });
        let join = rng.below(total + 1);
        let mut relayed: Vec<Frame> = Vec::new();
        if rng.chance(50) {
            relayed.push(Frame::Open {
                stream_id: "s".into(),
                from: join.saturating_sub(rng.below(3)),
                seq: total,
                durable_seq: 0,
                ended: false,
            });
        }
        for f in &truth {
            match rng.below(10) {
                0 => {} // dropped
                1 => {
                    relayed.push(f.clone());
                    relayed.push(f.clone());
                }
                2 if !relayed.is_empty() => {
                    let k = rng.below(relayed.len() as u64) as usize;
                    relayed.insert(k, f.clone());
                }
                3 => {
                    // An overlap: the same text re-cut from an earlier offset.
                    if let Frame::Chunk { from, seq, .. } = f {
                        let back = rng.below(*from + 1);
                        let text = Text::from_slice(produced.slice((from - back) as usize, *seq as usize).unwrap());
                        relayed.push(Frame::chunk(from - back, text).unwrap());
                    } else {
                        relayed.push(f.clone());
                    }
                }
                _ => relayed.push(f.clone()),
            }
        }
        if rng.chance(20) {
            relayed.truncate(rng.below(relayed.len() as u64 + 1) as usize);
        }
        let mut calls: Vec<Call> = relayed.iter().map(|f| Call::Feed(frame_value(f))).collect();
        calls.push(if rng.chance(50) { Call::End } else { Call::Fail });
        cases.push(conform_case(&format!("generated relay {i}"), "s", join as f64, calls));
    }
    cases
}

// ---------------------------------------------------------------- reader

fn reader_case(name: &str, stream_id: &str, durable: Text, frames: Vec<JsonValue>) -> JsonValue {
    let id = utf16(stream_id);
    let mut r = Reader::new(durable.len() as u64);
    let mut acc = durable.clone();
    let mut expect = Vec::new();
    for f in &frames {
        let action = r.feed(jsview::reader_input(f, &id));
        expect.push(match action {
            ReaderAction::Ignore => obj(vec![("action", s("ignore"))]),
            ReaderAction::Splice { at } => {
                acc.truncate(at as usize);
                acc.push_units(f.get("text").and_then(JsonValue::as_text).expect("splice needs text").units());
                obj(vec![("action", s("splice")), ("at", n(at as f64))])
            }
            ReaderAction::Stop(reason) => obj(vec![("action", s("stop")), ("reason", s(reason.as_str()))]),
        });
    }
    obj(vec![
        ("name", s(name)),
        ("streamId", s(stream_id)),
        ("durable", t(durable)),
        ("frames", arr(frames)),
        ("expect", arr(expect)),
        ("text", t(acc)),
        ("resumeFrom", n(r.resume_from() as f64)),
    ])
}

fn reader_vectors() -> Vec<(&'static str, Vec<JsonValue>)> {
    let chunk = |from: u64, text: &str| frame_value(&Frame::chunk(from, Text::from(text)).unwrap());
    let open = |id: &str, from: u64| {
        j(&format!(
            r#"{{"type":"open","streamId":"{id}","from":{from},"seq":{from},"durableSeq":{from},"ended":false}}"#
        ))
    };
    let mut cases = vec![
        reader_case(
            "seeded with the durable text",
            "s",
            Text::from("Hel"),
            vec![open("s", 3), chunk(3, "lo"), j(r#"{"type":"end","seq":5,"status":"complete"}"#), chunk(5, "!")],
        ),
        reader_case(
            "splices at the chunk's own offset",
            "s",
            Text::from("ab"),
            vec![open("s", 1), chunk(1, "bcd"), chunk(3, "de")],
        ),
        reader_case(
            "a replay inside the text changes nothing",
            "s",
            Text::from("abcd"),
            vec![open("s", 4), chunk(0, "ab"), chunk(2, "cd")],
        ),
        reader_case("a gap stops the reader", "s", Text::from("ab"), vec![open("s", 2), chunk(3, "x"), chunk(2, "c")]),
        reader_case("an open for another stream stops it", "s", Text::from(""), vec![open("t", 0), chunk(0, "x")]),
        reader_case(
            "stale stops it",
            "s",
            Text::from(""),
            vec![j(r#"{"type":"stale","floorSeq":5,"durableSeq":5}"#), chunk(0, "x")],
        ),
        reader_case("absent stops it", "s", Text::from(""), vec![j(r#"{"type":"absent"}"#)]),
        reader_case(
            "durable carries no text",
            "s",
            Text::from("a"),
            vec![open("s", 1), j(r#"{"type":"durable","seq":1}"#), chunk(1, "b")],
        ),
        reader_case(
            "a malformed chunk stops it",
            "s",
            Text::from(""),
            vec![j(r#"{"type":"chunk","from":0,"seq":3,"text":"ab"}"#)],
        ),
        reader_case(
            "a non-numeric offset stops it",
            "s",
            Text::from(""),
            vec![j(r#"{"type":"chunk","from":"0","seq":1,"text":"a"}"#)],
        ),
        reader_case("an unknown frame stops it", "s", Text::from(""), vec![j(r#"{"type":"bogus"}"#)]),
        reader_case(
            "surrogate halves join across chunks",
            "s",
            Text::from_units(vec![0x61, 0xD83D]),
            vec![open("s", 2), j(r#"{"type":"chunk","from":2,"seq":3,"text":"\ude00"}"#), chunk(3, "漢")],
        ),
        reader_case(
            "a lone surrogate survives",
            "s",
            Text::from(""),
            vec![j(r#"{"type":"chunk","from":0,"seq":2,"text":"\udc00\ud800"}"#)],
        ),
    ];
    // Generated: a true production, delivered across reconnects from the reader's own resume
    // point, with 8% of chunks replaying an overlap.
    let mut rng = Rng(0x5EAD_E200_0000_0042);
    for i in 0..12 {
        let count = 5 + rng.below(10) as usize;
        let deltas = production(&mut rng, count);
        let mut produced = Text::new();
        let mut spans = Vec::new();
        for d in &deltas {
            spans.push((produced.len() as u64, d.clone()));
            produced.push_units(d.units());
        }
        let join = rng.below(produced.len() as u64 + 1);
        let durable = Text::from_slice(produced.slice(0, join as usize).unwrap());
        let mut frames = vec![open("s", join)];
        let mut first = true;
        for (from, d) in &spans {
            let end = from + d.len() as u64;
            if end <= join {
                continue;
            }
            let start = if first {
                join
            } else if rng.chance(8) {
                from.saturating_sub(rng.below(4))
            } else {
                *from
            };
            first = false;
            let text = Text::from_slice(produced.slice(start as usize, end as usize).unwrap());
            frames.push(frame_value(&Frame::chunk(start, text).unwrap()));
        }
        frames.push(j(&format!(r#"{{"type":"end","seq":{},"status":"complete"}}"#, produced.len())));
        let case = reader_case(&format!("generated delivery {i}"), "s", durable, frames);
        assert_eq!(case.get("text"), Some(&t(produced.clone())), "generated delivery {i} must rebuild the text");
        cases.push(case);
    }
    vec![("cases", cases)]
}

// ---------------------------------------------------------------- splice, assembly, ids

fn text_vectors() -> Vec<(&'static str, Vec<JsonValue>)> {
    let units = |u: &[u16]| Text::from_slice(u);
    let splice_inputs: Vec<(Text, Text)> = vec![
        (Text::from("ab"), Text::from("xyz")),
        (Text::from("abc"), Text::from("x")),
        (Text::from(""), Text::from("")),
        (Text::from(""), Text::from("hello")),
        (Text::from("hello"), Text::from("")),
        (Text::from("same"), Text::from("same")),
        (units(&[0xD83D]), Text::from("😀!")),
        (Text::from("😀"), units(&[0xD83D])),
        (Text::from("漢字"), Text::from("漢字かな")),
        (units(&[0xDC00]), units(&[0xD800, 0xDC00, 0xD800])),
    ];
    let splice: Vec<JsonValue> = splice_inputs
        .into_iter()
        .map(|(d, p)| {
            let expected = splice_stream_text(d.units(), p.units());
            obj(vec![("durable", t(d)), ("produced", t(p)), ("expected", t(expected))])
        })
        .collect();
    assert_eq!(splice[0].get("expected"), Some(&s("abz")));

    let assemble_inputs: Vec<JsonValue> = vec![
        j(
            r#"{"message":{"body":"B:"},"chunks":[{"seq":5,"text":"c"},{"seq":2,"text":"a"},{"seq":5,"text":"d"},{"seq":3}]}"#,
        ),
        j(r#"{"message":null,"chunks":[]}"#),
        j(r#"{"message":{},"chunks":[{"seq":1,"text":"x"}]}"#),
        j(r#"{"message":{"body":"only"}}"#),
        j(r#"{"chunks":[{"seq":10,"text":"b"},{"seq":4,"text":"a"}]}"#),
        j(r#"{"message":{"body":"\ud83d"},"chunks":[{"seq":2,"text":"\ude00"}]}"#),
        j(
            r#"{"message":{"body":""},"chunks":[{"seq":3,"text":"a"},{"seq":3,"text":"b"},{"seq":3,"text":"c"},{"seq":1,"text":"z"}]}"#,
        ),
    ];
    let assemble: Vec<JsonValue> = assemble_inputs
        .into_iter()
        .map(|input| {
            let body = input.get("message").and_then(|m| m.get("body")).and_then(JsonValue::as_text).cloned();
            let chunks = input.get("chunks").and_then(JsonValue::as_array).unwrap_or(&[]);
            let seqs: Vec<f64> = chunks.iter().map(|c| jsview::number(c.get("seq"))).collect();
            let mut out = body.unwrap_or_default();
            for i in assembly_order(&seqs) {
                if let Some(text) = chunks[i as usize].get("text").and_then(JsonValue::as_text) {
                    out.push_units(text.units());
                }
            }
            let mut members = input.as_object().unwrap().to_vec();
            members.push((Text::from("expected"), t(out)));
            JsonValue::Object(members)
        })
        .collect();
    assert_eq!(assemble[0].get("expected"), Some(&s("B:acd")));

    let chunk_id: Vec<JsonValue> = [("m1", 42.0), ("", 0.0), ("a:b", 7.0), ("漢😀", 9007199254740991.0)]
        .into_iter()
        .map(|(id, seq)| {
            obj(vec![("streamId", s(id)), ("seq", n(seq)), ("expected", t(stream_chunk_id_units(&utf16(id), seq)))])
        })
        .chain(std::iter::once({
            let id = Text::from_units(vec![0xD800]);
            let expected = stream_chunk_id_units(id.units(), 3.0);
            obj(vec![("streamId", t(id)), ("seq", n(3.0)), ("expected", t(expected))])
        }))
        .collect();
    assert_eq!(chunk_id[0].get("expected"), Some(&s("m1:42")));

    // A `seq` that is not a number: JavaScript prints it (`${seq}`) and the core joins. `seq` names
    // the JavaScript value a replay passes (`undefined` has no JSON form, so it is the tag
    // `{"undefined": true}`); `seqText` is what a template literal prints for it.
    let chunk_id_text: Vec<JsonValue> = [
        ("m1", obj(vec![("undefined", JsonValue::Bool(true))]), "undefined"),
        ("m1", obj(vec![("value", JsonValue::Null)]), "null"),
        ("m1", obj(vec![("value", s("05"))]), "05"),
        ("m1", obj(vec![("value", s(""))]), ""),
        ("m1", obj(vec![("value", JsonValue::Bool(true))]), "true"),
        ("漢", obj(vec![("value", s("x\u{1F600}"))]), "x\u{1F600}"),
    ]
    .into_iter()
    .map(|(id, seq, seq_text)| {
        let expected = stream_chunk_id_text(&utf16(id), &utf16(seq_text));
        obj(vec![("streamId", s(id)), ("seq", seq), ("seqText", s(seq_text)), ("expected", t(expected))])
    })
    .collect();
    assert_eq!(chunk_id_text[0].get("expected"), Some(&s("m1:undefined")));

    let resume: Vec<JsonValue> = [
        r#"{"type":"open","streamId":"s","from":3,"seq":9,"durableSeq":2,"ended":false}"#,
        r#"{"type":"chunk","from":3,"seq":5,"text":"ab"}"#,
        r#"{"type":"durable","seq":4}"#,
        r#"{"type":"end","seq":7,"status":"complete"}"#,
        r#"{"type":"end","seq":0,"status":"error","error":"x"}"#,
        r#"{"type":"stale","floorSeq":1,"durableSeq":1}"#,
        r#"{"type":"absent"}"#,
    ]
    .into_iter()
    .map(|src| {
        let f = json::decode_frame(src).unwrap();
        let expected = frame_resume_point(&f).map_or(JsonValue::Null, |p| n(p as f64));
        obj(vec![("frame", j(src)), ("expected", expected)])
    })
    .collect();
    vec![
        ("splice", splice),
        ("assemble", assemble),
        ("chunkId", chunk_id),
        ("chunkIdText", chunk_id_text),
        ("resumePoint", resume),
    ]
}

// ---------------------------------------------------------------- frame JSON codec

fn codec_vectors() -> Vec<(&'static str, Vec<JsonValue>)> {
    let texts: Vec<Text> = vec![
        Text::from("plain"),
        Text::from("quote \" backslash \\ slash /"),
        Text::from("\u{0}\u{1}\u{8}\u{9}\u{a}\u{b}\u{c}\u{d}\u{1f} \u{7f}"),
        Text::from("line\u{2028}para\u{2029}"),
        Text::from("漢字かな😀👩‍💻"),
        Text::from_units(vec![0xD800]),
        Text::from_units(vec![0xDC00]),
        Text::from_units(vec![0xDC00, 0xD800]),
        Text::from_units(vec![0x61, 0xD83D, 0xDE00, 0xD83D]),
        Text::from(""),
    ];
    let mut frames: Vec<Frame> = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        frames.push(Frame::chunk(i as u64 * 7, text.clone()).unwrap());
    }
    frames.push(Frame::Open { stream_id: Text::from("m-1 \"x\""), from: 0, seq: 12, durable_seq: 8, ended: false });
    frames.push(Frame::Open {
        stream_id: Text::from_units(vec![0xDBFF]),
        from: 9007199254740991,
        seq: 9007199254740991,
        durable_seq: 0,
        ended: true,
    });
    frames.push(Frame::Durable { seq: 512 });
    for st in twoplane_core::StreamStatus::ALL {
        frames.push(Frame::End { seq: 3, status: st, error: None });
    }
    frames.push(Frame::End {
        seq: 3,
        status: twoplane_core::StreamStatus::Error,
        error: Some(Text::from_units(vec![0x62, 0xD800, 0x0A])),
    });
    frames.push(Frame::Stale { floor_seq: 1024, durable_seq: 512 });
    frames.push(Frame::Absent);
    let encode: Vec<JsonValue> = frames
        .iter()
        .map(|f| {
            let encoded = json::encode_frame(f);
            obj(vec![("frame", frame_value(f)), ("json", s(&encoded))])
        })
        .collect();

    let bad: Vec<(&str, &str)> = vec![
        ("not json", "invalid_json"),
        ("[]", "invalid_json"),
        (r#"{"seq":1}"#, "missing_field"),
        (r#"{"type":5}"#, "invalid_field"),
        (r#"{"type":"chunky"}"#, "unknown_frame_type"),
        (r#"{"type":"chunk","from":0,"seq":2}"#, "missing_field"),
        (r#"{"type":"chunk","from":0,"seq":2,"text":7}"#, "invalid_field"),
        (r#"{"type":"chunk","from":0,"seq":3,"text":"ab"}"#, "chunk_span"),
        (r#"{"type":"chunk","from":-1,"seq":0,"text":""}"#, "invalid_offset"),
        (r#"{"type":"chunk","from":0.5,"seq":1,"text":"a"}"#, "invalid_offset"),
        (r#"{"type":"durable","seq":9007199254740992}"#, "invalid_offset"),
        (r#"{"type":"durable","seq":"3"}"#, "invalid_field"),
        (r#"{"type":"open","streamId":"s","from":2,"seq":1,"durableSeq":0,"ended":false}"#, "invalid_offset"),
        (r#"{"type":"open","streamId":"s","from":0,"seq":1,"durableSeq":0,"ended":"no"}"#, "invalid_field"),
        (r#"{"type":"end","seq":1,"status":"streaming"}"#, "invalid_status"),
        (r#"{"type":"end","seq":1,"status":"error","error":5}"#, "invalid_field"),
        (r#"{"type":"stale","floorSeq":1}"#, "missing_field"),
        (r#"{"type":"absent",}"#, "invalid_json"),
    ];
    let decode_errors: Vec<JsonValue> = bad
        .into_iter()
        .map(|(input, kind)| {
            let err = json::decode_frame(input).expect_err(input);
            assert_eq!(err.kind().as_str(), kind, "{input}");
            obj(vec![("input", s(input)), ("kind", s(kind)), ("field", err.field_name().map_or(JsonValue::Null, s))])
        })
        .collect();
    // Inputs the strict decoder accepts though they are not canonical, with the canonical JSON
    // they decode to: `"error": null` on `end` is no error (the TypeScript plane's consumers read
    // it so).
    let decode_lenient: Vec<JsonValue> = [
        r#"{"type":"end","seq":1,"status":"complete","error":null}"#,
        r#"{"type":"end","seq":4,"status":"error","error":null}"#,
    ]
    .into_iter()
    .map(|input| {
        let frame = json::decode_frame(input).expect(input);
        obj(vec![("input", s(input)), ("json", s(&json::encode_frame(&frame)))])
    })
    .collect();
    assert_eq!(decode_lenient[0].get("json"), Some(&s(r#"{"type":"end","seq":1,"status":"complete"}"#)));
    vec![("encode", encode), ("decodeErrors", decode_errors), ("decodeLenient", decode_lenient)]
}

// ---------------------------------------------------------------- SSE

fn sse_vectors() -> Vec<(&'static str, Vec<JsonValue>)> {
    let streams: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("one event", vec![b"id: 3\ndata: {\"a\":1}\n\n".to_vec()]),
        ("crlf and cr line ends", vec![b"data: a\r\ndata: b\rid: 7\r\n\r\n".to_vec()]),
        ("cr then lf across reads", vec![b"data: x\r".to_vec(), b"\n\r".to_vec(), b"\ndata: y\n\n".to_vec()]),
        ("leading bom", vec![vec![0xEF, 0xBB], vec![0xBF], b"data: bom\n\n".to_vec()]),
        ("bom only at the start", vec![b"data: a\n\n".to_vec(), vec![0xEF, 0xBB, 0xBF], b"data: b\n\n".to_vec()]),
        ("comments and unknown fields", vec![b": ping\n\nfoo: bar\ndata: z\n\n".to_vec()]),
        ("multi-line data", vec![b"data: l1\ndata:l2\ndata\n\n".to_vec()]),
        ("event type", vec![b"event: frame\ndata: q\n\ndata: r\n\n".to_vec()]),
        ("id with NUL is ignored", vec![b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n".to_vec()]),
        ("id persists and can be reset", vec![b"id: 5\ndata: a\n\ndata: b\n\nid\ndata: c\n\n".to_vec()]),
        ("retry digits only", vec![b"retry: 1500\n\nretry: 15x\ndata: a\n\n".to_vec()]),
        ("empty data dispatches nothing", vec![b"event: e\n\ndata: after\n\n".to_vec()]),
        ("no space after colon", vec![b"data:tight\n\ndata:  two spaces\n\n".to_vec()]),
        (
            "utf-8 split across reads",
            vec![vec![b'd', b'a', b't', b'a', b':', b' ', 0xF0, 0x9F], vec![0x98, 0x80, b'\n', b'\n']],
        ),
        ("invalid utf-8 is replaced", vec![vec![b'd', b'a', b't', b'a', b':', 0xFF, b'\n', b'\n']]),
        ("incomplete event at the end is dropped", vec![b"data: done\n\ndata: partial".to_vec()]),
        (
            "escaped lone surrogate in frame json",
            vec![b"id: 1\ndata: {\"type\":\"chunk\",\"from\":0,\"seq\":1,\"text\":\"\\ud800\"}\n\n".to_vec()],
        ),
    ];
    let decode: Vec<JsonValue> = streams
        .into_iter()
        .map(|(name, chunks)| {
            let mut dec = SseDecoder::new();
            let mut events = Vec::new();
            for c in &chunks {
                dec.feed(c, &mut events);
            }
            dec.finish(&mut events);
            let events_json = events
                .iter()
                .map(|e| obj(vec![("event", s(&e.event)), ("data", s(&e.data)), ("id", s(&e.last_event_id))]))
                .collect();
            let chunks_json = chunks.iter().map(|c| arr(c.iter().map(|b| n(*b as f64)).collect())).collect();
            obj(vec![
                ("name", s(name)),
                ("chunks", arr(chunks_json)),
                ("events", arr(events_json)),
                ("lastEventId", s(dec.last_event_id())),
                ("retry", dec.retry().map_or(JsonValue::Null, |r| n(r as f64))),
            ])
        })
        .collect();
    let encode: Vec<JsonValue> = [
        r#"{"type":"open","streamId":"s","from":3,"seq":9,"durableSeq":2,"ended":false}"#,
        r#"{"type":"chunk","from":3,"seq":5,"text":"\ud800\u2028"}"#,
        r#"{"type":"durable","seq":4}"#,
        r#"{"type":"end","seq":7,"status":"error","error":"x\ny"}"#,
        r#"{"type":"stale","floorSeq":1,"durableSeq":1}"#,
        r#"{"type":"absent"}"#,
    ]
    .into_iter()
    .map(|src| {
        let f = json::decode_frame(src).unwrap();
        obj(vec![("frame", j(src)), ("sse", s(&encode_event(&f)))])
    })
    .collect();
    vec![("decode", decode), ("encode", encode)]
}

// ---------------------------------------------------------------- HTTP requests

fn request_vectors() -> Vec<(&'static str, Vec<JsonValue>)> {
    let inputs: Vec<(&str, Option<&str>)> = vec![
        ("http://h/api/stream?streamId=m1&from=12", None),
        ("http://h/api/stream?streamId=m1&from=12", Some("30")),
        ("http://h/api/stream?streamId=m1&from=12", Some("")),
        ("http://h/api/stream?streamId=m1&from=12abc", None),
        ("http://h/api/stream?streamId=m1&from=-5", None),
        ("http://h/api/stream?streamId=m1&from=0x10", None),
        ("http://h/api/stream?streamId=m1&from=1.9", None),
        ("http://h/api/stream?streamId=m1&from=99999999999999999999", None),
        ("http://h/api/stream?streamId=m1", Some("  7")),
        ("http://h/api/stream?streamId=a+b%20c%F0%9F%98%80", None),
        ("http://h/api/stream?from=4", None),
        ("http://h/api/stream", None),
        ("http://h/api/stream?streamId=x&streamId=y&from=2&from=3", None),
        ("http://h/api/stream?streamId=x#frag&from=9", None),
        ("http://h/api/stream?streamId=%E6%BC%A2", Some("abc")),
    ];
    // Relative URLs: a Node `IncomingMessage` carries one and reads fine; a fetch-style request
    // whose URL is relative is refused (`absolute: false`), as `new URL(url)` refused it.
    let relative: Vec<(&str, Option<&str>)> = vec![
        ("/api/stream?streamId=m1&from=3", None),
        ("/api/stream?streamId=m1&from=3", Some("8")),
        ("api/stream?streamId=m2", None),
        ("?streamId=q&from=1", None),
        ("//h/api/stream?streamId=p", None),
        ("1x://h/?streamId=n", None),
        ("", None),
    ];
    let absolute_odd: Vec<(&str, Option<&str>)> =
        vec![("  HTTPS://h/?streamId=t&from=2 ", None), ("c:?streamId=z", None), ("web+app:x?streamId=w", None)];
    let cases = inputs
        .into_iter()
        .chain(relative)
        .chain(absolute_odd)
        .map(|(url, last)| {
            let r = stream_request_from_http(url, last);
            let absolute = stream_request_from_fetch(url, last).is_ok();
            assert_eq!(absolute, is_absolute_url(url), "{url}");
            obj(vec![
                ("url", s(url)),
                ("lastEventId", last.map_or(JsonValue::Null, s)),
                ("absolute", JsonValue::Bool(absolute)),
                ("expected", obj(vec![("streamId", s(&r.stream_id)), ("from", n(r.from))])),
            ])
        })
        .collect::<Vec<_>>();
    assert_eq!(cases[1].get("expected").and_then(|e| e.get("from")), Some(&n(30.0)));
    assert_eq!(cases[2].get("expected").and_then(|e| e.get("from")), Some(&n(0.0)));
    assert_eq!(cases[3].get("expected").and_then(|e| e.get("from")), Some(&n(12.0)));
    vec![("cases", cases), ("subscribe", subscribe_vectors())]
}

/// The subscribe URL (`subscribe_url_units`, what every reader requests) for endpoints with and
/// without a query or a fragment, and ids that need escaping, are not ASCII, or hold lone
/// surrogates.
fn subscribe_vectors() -> Vec<JsonValue> {
    let endpoints = [
        "/api/stream",
        "http://h/api/stream?chat=3",
        "/api/stream?",
        "/api/stream?chat=3&",
        "/api/stream#",
        "/api/stream#top?x=1",
        "https://h:8443/api/stream?chat=3#frag",
    ];
    let ids: Vec<Text> = vec![
        Text::from("m1"),
        Text::from(""),
        Text::from("a b+c"),
        Text::from("a/b?c&d=e#f%g"),
        Text::from("AZaz09-_.!~*'()"),
        Text::from("漢字é"),
        Text::from("😀"),
        Text::from_units(vec![0xD800]),
        Text::from_units(vec![0x61, 0xDC00, 0x62]),
        Text::from_units(vec![0xD83D, 0xDE00, 0xD83D]),
    ];
    // Small enough for a reader to join at (its durable text is that long).
    let froms = [0u64, 7, 130];
    let mut cases = Vec::new();
    for (i, endpoint) in endpoints.iter().enumerate() {
        for (k, id) in ids.iter().enumerate() {
            let from = froms[(i + k) % froms.len()];
            let url = subscribe_url_units(endpoint, id.units(), from);
            cases.push(obj(vec![
                ("endpoint", s(endpoint)),
                ("streamId", t(id.clone())),
                ("from", n(from as f64)),
                ("url", s(&url)),
            ]));
        }
    }
    // The contract's own examples, answered by hand.
    let url = |e: &str, id: &str, from: u64| subscribe_url_units(e, &utf16(id), from);
    assert_eq!(url("/api/stream", "m1", 0), "/api/stream?streamId=m1&from=0");
    assert_eq!(url("/api/stream?chat=3", "a b", 7), "/api/stream?chat=3&streamId=a%20b&from=7");
    assert_eq!(url("/api/stream#", "m1", 1), "/api/stream?streamId=m1&from=1");
    assert_eq!(subscribe_url_units("/s", &[0xD800], 2), "/s?streamId=%EF%BF%BD&from=2");
    cases
}

// ---------------------------------------------------------------- DDL

fn ddl_vectors() -> Vec<(&'static str, Vec<JsonValue>)> {
    let tables: Vec<JsonValue> = vec![
        j(r#"{"message":"messages","chunks":"message_chunks"}"#),
        j(
            r#"{"message":"msg","chunks":"chunks","columns":{"chunkKey":"cid","chunkStream":"mid","chunkSeq":"end","chunkText":"slice"}}"#,
        ),
        j(r#"{"message":"m","chunks":"bad\"name"}"#),
        j(r#"{"message":"m","chunks":"c","columns":{"chunkText":"t\"x"}}"#),
        j(r#"{"message":"m","chunks":""}"#),
    ];
    let mut cases = Vec::new();
    for tbl in tables {
        for dialect in [Dialect::Sqlite, Dialect::Postgres] {
            let text_of = |k: &str| tbl.get(k).and_then(JsonValue::as_text).map(|t| t.to_string_lossy());
            let cols = tbl.get("columns");
            let col = |k: &str| cols.and_then(|c| c.get(k)).and_then(JsonValue::as_text).map(|t| t.to_string_lossy());
            let st = StreamTables {
                message: text_of("message").unwrap_or_default(),
                chunks: text_of("chunks").unwrap_or_default(),
                columns: StreamColumns {
                    chunk_key: col("chunkKey"),
                    chunk_stream: col("chunkStream"),
                    chunk_seq: col("chunkSeq"),
                    chunk_text: col("chunkText"),
                    ..Default::default()
                },
            };
            let result = match stream_chunk_table_ddl(&st, dialect) {
                Ok(stmts) => ("expected", arr(stmts.iter().map(|x| s(x)).collect())),
                Err(e) => ("error", s(e.kind().as_str())),
            };
            cases.push(obj(vec![("tables", tbl.clone()), ("dialect", s(dialect.name())), result]));
        }
    }
    let args = ddl_arg_vectors();
    assert_eq!(
        cases[0].get("expected").and_then(|e| e.as_array()).and_then(|a| a.first()),
        Some(&s(
            r#"CREATE TABLE IF NOT EXISTS "message_chunks" ("id" TEXT PRIMARY KEY, "streamId" TEXT NOT NULL, "seq" INTEGER NOT NULL, "text" TEXT NOT NULL)"#
        ))
    );
    vec![("cases", cases), ("args", args)]
}

/// `streamChunkTableDdl(tables, dialect)` with the arguments exactly as given (any JSON value),
/// through the core's argument checks (`ddl_of_js_args`), which every binding calls.
fn ddl_arg_vectors() -> Vec<JsonValue> {
    let inputs: [(&str, &str); 17] = [
        (r#"{"chunks":"c"}"#, r#""postgres""#),
        (r#"{"chunks":"c"}"#, r#""sqlite""#),
        (r#"{"chunks":"c"}"#, r#""Postgres""#),
        (r#"{"chunks":"c"}"#, r#"{"name":5}"#),
        (r#"{"chunks":"c"}"#, r#"{}"#),
        (r#"null"#, r#"{"name":"postgres"}"#),
        (r#""c""#, r#"{"name":"postgres"}"#),
        (r#"7"#, r#"{"name":"sqlite"}"#),
        (r#"{"chunks":"c"}"#, r#"null"#),
        (r#"{"chunks":"c"}"#, r#"3"#),
        (r#"{"message":"m"}"#, r#""sqlite""#),
        (r#"{"chunks":null}"#, r#""sqlite""#),
        (r#"{"chunks":4}"#, r#""sqlite""#),
        (r#"{"chunks":["c"]}"#, r#""sqlite""#),
        (r#"{"chunks":"c","columns":"x"}"#, r#""sqlite""#),
        (r#"{"chunks":"c","columns":{"chunkKey":true}}"#, r#""sqlite""#),
        (r#"{"chunks":"a\ud800","columns":{"chunkText":"t"}}"#, r#""postgres""#),
    ];
    let cases: Vec<JsonValue> = inputs
        .iter()
        .map(|(tables, dialect)| {
            let (tables, dialect) = (j(tables), j(dialect));
            let args = jsview::ddl_args(&tables, &dialect);
            let result = match ddl_of_js_args(&args) {
                Ok(stmts) => ("expected", arr(stmts.iter().map(|x| s(x)).collect())),
                Err(e) => ("error", s(e.kind().as_str())),
            };
            obj(vec![("tables", tables.clone()), ("dialect", dialect.clone()), result])
        })
        .collect();
    let kind = |i: usize| cases[i].get("error").and_then(JsonValue::as_text).map(Text::to_string_lossy);
    assert_eq!(kind(5).as_deref(), Some("invalid_argument"));
    assert_eq!(kind(9).as_deref(), Some("invalid_argument"));
    assert_eq!(kind(10).as_deref(), Some("missing_field"));
    assert_eq!(kind(12).as_deref(), Some("invalid_field"));
    assert_eq!(kind(16).as_deref(), Some("invalid_identifier"));
    cases
}

// ---------------------------------------------------------------- the cut rule

/// `pair_safe_cut(units, at)`, the cut rule for checkpoints, for every text of up to three units
/// over `a`, a high surrogate and a low surrogate, and every `at` up to one past its end.
fn cut_vectors() -> Vec<(&'static str, Vec<JsonValue>)> {
    const ALPHABET: [u16; 3] = [0x61, 0xD83D, 0xDE00];
    let mut cases = Vec::new();
    for len in 0..=3u32 {
        for mut code in 0..3usize.pow(len) {
            let mut units = Vec::new();
            for _ in 0..len {
                units.push(ALPHABET[code % 3]);
                code /= 3;
            }
            for at in 0..=units.len() + 1 {
                let cut = pair_safe_cut(&units, at);
                cases.push(obj(vec![
                    ("text", t(Text::from_units(units.clone()))),
                    ("at", n(at as f64)),
                    ("cut", n(cut as f64)),
                ]));
            }
        }
    }
    // Answered by hand: a cut inside a pair, and at the live end after a high surrogate, moves
    // back one unit; after a lone high surrogate followed by something else it does not.
    assert_eq!(pair_safe_cut(&[0x61, 0xD83D, 0xDE00], 2), 1);
    assert_eq!(pair_safe_cut(&[0x61, 0xD83D], 2), 1);
    assert_eq!(pair_safe_cut(&[0xD83D, 0x61], 1), 1);
    vec![("cases", cases)]
}

// ---------------------------------------------------------------- messages with parts (§8)

/// A message frame as the JSON object its encoding parses to.
fn message_value(f: &MessageFrame) -> JsonValue {
    parse_value(&encode_message_frame(f)).expect("own encoding parses")
}

fn attrs(src: &str) -> Attrs {
    j(src).as_object().expect("an object literal").to_vec()
}

/// The issue's message: reasoning, a tool call whose input arrives in pieces, its preliminary
/// and final output, a step, a text with a pair split between deltas, a data part replaced, a
/// transient part, metadata and the finish reason.
fn issue_message(pieces: usize) -> MessageLog {
    let mut log = MessageLog::new();
    let (r, _) = log.start("reasoning".into(), vec![]).unwrap();
    for d in ["Let me ", "look that ", "up."] {
        log.delta(r, d.into()).unwrap();
    }
    log.event(Event::End { part: r, value: vec![] }).unwrap();
    let (tool, _) =
        log.start("tool-search".into(), attrs(r#"{"toolCallId":"call-1","state":"input-streaming"}"#)).unwrap();
    let input: Vec<u16> = utf16(r#"{"query":"weather in 東京 😀","units":"metric"}"#);
    let step = input.len().div_ceil(pieces).max(1);
    for piece in input.chunks(step) {
        log.delta(tool, Text::from_slice(piece)).unwrap();
    }
    log.event(Event::End { part: tool, value: vec![] }).unwrap();
    let input_parsed = r#"{"state":"input-available","input":{"query":"weather in 東京 😀","units":"metric"}}"#;
    log.event(Event::Set { part: tool, value: attrs(input_parsed) }).unwrap();
    let preliminary = r#"{"state":"output-available","output":{"status":"loading"},"preliminary":true}"#;
    log.event(Event::Set { part: tool, value: attrs(preliminary) }).unwrap();
    log.event(Event::Set { part: tool, value: attrs(r#"{"output":{"tempC":21},"preliminary":false}"#) }).unwrap();
    log.start("step-start".into(), vec![]).unwrap();
    let (text, _) = log.start("text".into(), vec![]).unwrap();
    log.delta(text, "It is 21 °C ".into()).unwrap();
    log.delta(text, Text::from_units(vec![0xD83D])).unwrap();
    log.delta(text, Text::from_units(vec![0xDE00, 0x2E])).unwrap();
    log.event(Event::End { part: text, value: vec![] }).unwrap();
    let (data, _) = log.start("data-weather".into(), attrs(r#"{"id":"w1","data":{"tempC":20}}"#)).unwrap();
    log.event(Event::Transient { kind: Some("data-notice".into()), value: attrs(r#"{"data":"updating"}"#) }).unwrap();
    log.event(Event::Set { part: data, value: attrs(r#"{"data":{"tempC":21}}"#) }).unwrap();
    log.event(Event::Meta { value: attrs(r#"{"model":"m-1"}"#) }).unwrap();
    log.event(Event::Finish { reason: "stop".into() }).unwrap();
    log
}

/// A random message from the seed: parts of every kind, lone surrogates in bodies.
fn random_message(rng: &mut Rng, steps: usize) -> MessageLog {
    const KINDS: [&str; 5] = ["reasoning", "tool-x", "text", "source-url", "data-d"];
    let mut log = MessageLog::new();
    for d in production(rng, steps) {
        let parts = log.message().parts().len() as u64;
        match rng.below(10) {
            0 => {
                let kind = KINDS[rng.below(KINDS.len() as u64) as usize];
                log.start(kind.into(), vec![]).unwrap();
            }
            1 => {
                let part = rng.below(parts) as u32;
                let value = attrs(&format!(r#"{{"n":{}}}"#, rng.below(9)));
                log.event(Event::Set { part, value }).unwrap();
            }
            2 => {
                log.event(Event::Transient { kind: Some("data-t".into()), value: vec![] }).unwrap();
            }
            _ => {
                let open: Vec<u32> = (0..parts as u32).filter(|&p| !log.message().parts()[p as usize].ended).collect();
                if let Some(&p) = open.get(rng.below(open.len() as u64) as usize) {
                    log.delta(p, d).unwrap();
                }
            }
        }
    }
    log
}

fn row_value(row: &MessageChunkRow) -> JsonValue {
    let opt = |x: &Option<Text>| x.clone().map_or(JsonValue::Null, t);
    obj(vec![("seq", n(row.seq as f64)), ("text", opt(&row.text)), ("parts", opt(&row.parts))])
}

fn run_message_conform(stream_id: &str, from: f64, calls: &[Call]) -> Vec<JsonValue> {
    let id = utf16(stream_id);
    record_conform(stream_id, MessageConform::new(from), calls, |c, call| {
        let verdict = match call {
            Call::Feed(f) => {
                let nums = jsview::message_numbers(f, &id);
                if nums.kind == MessageKind::Open as u32 {
                    let parts = jsview::open_parts(f);
                    c.feed_open(nums.id_matches, nums.a, nums.b, nums.c, parts.as_deref())
                } else {
                    c.feed_numbers(nums)
                }
            }
            Call::End => c.end(),
            Call::Fail => c.fail(),
        };
        (verdict, [c.pos(), c.last_durable(), c.requested()])
    })
}

fn message_conform_case(name: &str, from: f64, calls: Vec<Call>) -> JsonValue {
    conform_case_by(run_message_conform, name, "m", from, calls)
}

fn action_value(a: MessageAction) -> JsonValue {
    // Named by its stable code, the one bindings see, as the replay (tests/vectors.rs) reads it
    // back: a second mapping from the variants could disagree with `code()`.
    let name = ["ignore", "splice", "stop", "start", "end", "set", "meta", "finish", "transient"][a.code() as usize];
    let mut m = vec![("action", s(name))];
    if let Some(p) = a.part() {
        m.push(("part", n(f64::from(p))));
    }
    if let MessageAction::Splice { at, .. } = a {
        m.push(("at", n(at as f64)));
    }
    if let MessageAction::Stop(r) = a {
        m.push(("reason", s(r.as_str())));
    }
    obj(m)
}

/// A reader joined holding the fold of `durable` (frames from 0), fed `frames`.
fn message_reader_case(name: &str, durable: &[MessageFrame], frames: &[MessageFrame]) -> JsonValue {
    let mut held = Message::new();
    for f in durable {
        held.apply(f).expect("the durable frames fold");
    }
    let mut r = MessageReader::new("m".into(), held);
    let expect: Vec<JsonValue> = frames.iter().map(|f| action_value(r.feed(f))).collect();
    obj(vec![
        ("name", s(name)),
        ("streamId", s("m")),
        ("durable", arr(durable.iter().map(message_value).collect())),
        ("frames", arr(frames.iter().map(message_value).collect())),
        ("expect", arr(expect)),
        ("message", t(r.message().document())),
        ("resumeFrom", n(r.core().resume_from() as f64)),
    ])
}

fn message_vectors() -> Vec<(&'static str, Vec<JsonValue>)> {
    use Call::{End, Feed};
    let issue = issue_message(40);
    let mut rng = Rng(0x9A27_5000_0000_0023);

    // encode: every frame of the issue's message, its replays and opens, and the six-frame forms.
    let mut frames: Vec<MessageFrame> = issue.frames().to_vec();
    frames.extend(issue.frames_from(5));
    frames.push(issue.open_frame("m".into(), 5, 4, false));
    frames.push(issue.open_frame("m".into(), 0, 0, false));
    frames.push(MessageFrame::End { seq: 7, status: twoplane_core::StreamStatus::Complete, error: None });
    let encode: Vec<JsonValue> =
        frames.iter().map(|f| obj(vec![("frame", message_value(f)), ("json", s(&encode_message_frame(f)))])).collect();
    assert_eq!(
        encode_message_frame(&MessageFrame::chunk(3, 0, 3, "ab".into()).unwrap()),
        r#"{"type":"chunk","from":3,"seq":5,"text":"ab"}"#,
        "a part 0 chunk at its from is today's chunk"
    );

    let decode_errors: Vec<JsonValue> = [
        r#"{"type":"chunk","from":0,"seq":1,"text":"a","part":1}"#,
        r#"{"type":"chunk","from":0,"seq":1,"text":"a","part":1.5,"at":0}"#,
        r#"{"type":"chunk","from":0,"seq":1,"text":"a","part":0,"at":-1}"#,
        r#"{"type":"part","from":3,"seq":5,"part":1,"kind":"text"}"#,
        r#"{"type":"part","from":3,"seq":4,"kind":"text"}"#,
        r#"{"type":"part","from":3,"seq":4,"part":1}"#,
        r#"{"type":"set","from":3,"seq":4,"part":1,"value":"x"}"#,
        r#"{"type":"set","from":3,"seq":4,"part":1,"value":{"text":"x"}}"#,
        r#"{"type":"part-end","from":3,"seq":4,"part":1,"value":{"type":"x"}}"#,
        r#"{"type":"finish","from":3,"seq":4,"reason":1}"#,
        r#"{"type":"open","streamId":"m","from":0,"seq":0,"durableSeq":0,"ended":false,"parts":[1.5]}"#,
        r#"{"type":"open","streamId":"m","from":0,"seq":0,"durableSeq":0,"ended":false,"parts":{}}"#,
        r#"{"type":"step"}"#,
    ]
    .iter()
    .map(|input| {
        let e = decode_message_frame(input).expect_err(input);
        obj(vec![
            ("input", s(input)),
            ("kind", s(e.kind().as_str())),
            ("field", e.field_name().map_or(JsonValue::Null, s)),
        ])
    })
    .collect();

    // conform: the issue's message relayed whole, from a join mid-part, and with each forgery.
    let whole: Vec<JsonValue> = issue.frames().iter().map(message_value).collect();
    let v = |f: MessageFrame| message_value(&f);
    let c = |from: u64, part: u32, at: u64, text: &str| v(MessageFrame::chunk(from, part, at, text.into()).unwrap());
    let ev = |from: u64, event: Event| v(MessageFrame::Event { from, event });
    let start = |from: u64, part: u32, kind: &str| ev(from, Event::Start { part, kind: kind.into(), value: vec![] });
    let mut conform = vec![
        message_conform_case(
            "the issue's message, whole",
            0.0,
            whole
                .iter()
                .cloned()
                .chain([v(MessageFrame::End {
                    seq: issue.len(),
                    status: twoplane_core::StreamStatus::Complete,
                    error: None,
                })])
                .map(Feed)
                .chain([End])
                .collect(),
        ),
        {
            let mut calls = vec![Feed(message_value(&issue.open_frame("m".into(), 9, 9, false)))];
            calls.extend(issue.frames_from(9).iter().map(|f| Feed(message_value(f))));
            calls.push(Feed(v(MessageFrame::End {
                seq: issue.len(),
                status: twoplane_core::StreamStatus::Complete,
                error: None,
            })));
            message_conform_case("joined mid-part with the open's part table", 9.0, calls)
        },
        message_conform_case(
            "a delta for an unknown part",
            0.0,
            vec![Feed(start(0, 1, "reasoning")), Feed(c(1, 2, 0, "x"))],
        ),
        message_conform_case(
            "a body offset that leaves a gap",
            0.0,
            vec![Feed(start(0, 1, "reasoning")), Feed(c(1, 1, 0, "ab")), Feed(c(3, 1, 3, "c"))],
        ),
        message_conform_case(
            "a part that changes kind",
            0.0,
            vec![Feed(start(0, 1, "reasoning")), Feed(start(1, 1, "text"))],
        ),
        message_conform_case("a part that skips a number", 0.0, vec![Feed(start(0, 2, "reasoning"))]),
        message_conform_case(
            "a delta after its part's end",
            0.0,
            vec![Feed(start(0, 1, "text")), Feed(ev(1, Event::End { part: 1, value: vec![] })), Feed(c(2, 1, 0, "x"))],
        ),
        message_conform_case(
            "a set for an unknown part",
            0.0,
            vec![Feed(ev(0, Event::Set { part: 4, value: vec![] }))],
        ),
        message_conform_case("an event that leaves a gap", 2.0, vec![Feed(ev(3, Event::Meta { value: vec![] }))]),
        message_conform_case("an event two units wide", 0.0, vec![Feed(j(r#"{"type":"meta","from":0,"seq":2}"#))]),
        message_conform_case(
            "a part number that is not a number",
            0.0,
            vec![Feed(j(r#"{"type":"set","from":0,"seq":1,"part":"0"}"#))],
        ),
        message_conform_case(
            "a replayed event is absorbed",
            0.0,
            vec![Feed(start(0, 1, "text")), Feed(start(0, 1, "text")), Feed(c(0, 0, 0, "x")), Feed(c(1, 1, 0, "y"))],
        ),
        message_conform_case(
            "an overlapping delta continues its body",
            0.0,
            vec![Feed(start(0, 1, "text")), Feed(c(1, 1, 0, "ab")), Feed(c(2, 1, 1, "bcd"))],
        ),
        message_conform_case(
            "an overlapping delta that does not",
            0.0,
            vec![Feed(start(0, 1, "text")), Feed(c(1, 1, 0, "ab")), Feed(c(2, 1, 2, "bcd"))],
        ),
        message_conform_case(
            "a shorthand delta after structure",
            0.0,
            vec![Feed(start(0, 1, "text")), Feed(c(1, 0, 1, "x"))],
        ),
        message_conform_case(
            "an open whose table outgrows it",
            3.0,
            vec![Feed(j(
                r#"{"type":"open","streamId":"m","from":3,"seq":3,"durableSeq":3,"ended":false,"parts":[2,2]}"#,
            ))],
        ),
        message_conform_case(
            "without a table, a part before the join is unknown",
            3.0,
            vec![
                Feed(j(r#"{"type":"open","streamId":"m","from":3,"seq":5,"durableSeq":3,"ended":false}"#)),
                Feed(c(3, 1, 1, "x")),
            ],
        ),
        message_conform_case(
            "a single text is the six-frame pass",
            0.0,
            vec![
                Feed(c(0, 0, 0, "ab")),
                Feed(v(MessageFrame::Durable { seq: 1 })),
                Feed(c(1, 0, 1, "bc")),
                Feed(c(4, 0, 4, "x")),
            ],
        ),
    ];
    for i in 0..12 {
        let log = random_message(&mut rng, 12);
        let from = rng.below(log.len() + 1);
        let mut frames: Vec<JsonValue> = log.frames_from(from).iter().map(message_value).collect();
        // A forgery now and then: a part number or body offset moved, a frame dropped.
        if !frames.is_empty() && rng.chance(60) {
            let k = rng.below(frames.len() as u64) as usize;
            let f = decode_message_frame(&frames[k].to_json()).unwrap();
            match (rng.below(3), f) {
                (0, MessageFrame::Chunk { from, seq, part, at, text }) => {
                    frames[k] = v(MessageFrame::Chunk { from, seq, part: part + 7, at, text });
                }
                (1, MessageFrame::Chunk { from, seq, part, at, text }) => {
                    frames[k] = v(MessageFrame::Chunk { from, seq, part, at: at + 1, text });
                }
                _ => {
                    frames.remove(k);
                }
            }
        }
        let mut calls = vec![Feed(message_value(&log.open_frame("m".into(), from, from, false)))];
        calls.extend(frames.into_iter().map(Feed));
        conform.push(message_conform_case(&format!("generated {i}"), from as f64, calls));
    }

    // reader: joins at every kind of point of the issue's message, and refusals.
    let mut reader = Vec::new();
    for from in [0, 3, 5, 9, 30, 60, issue.len() - 3, issue.len()] {
        let durable = issue.frames().iter().filter(|f| f.span().is_some_and(|(_, seq)| seq <= from)).cloned();
        // Cut the frame across `from` so the durable frames end exactly there.
        let durable: Vec<MessageFrame> = durable.chain(issue_cut(&issue, from)).collect();
        let mut frames = vec![issue.open_frame("m".into(), from, from, false)];
        frames.extend(issue.frames_from(from));
        frames.push(MessageFrame::End { seq: issue.len(), status: twoplane_core::StreamStatus::Complete, error: None });
        reader.push(message_reader_case(&format!("the issue's message joined at {from}"), &durable, &frames));
    }
    let r0 = MessageFrame::Event { from: 0, event: Event::Start { part: 1, kind: "reasoning".into(), value: vec![] } };
    let ch = |from: u64, part: u32, at: u64, text: &str| MessageFrame::chunk(from, part, at, text.into()).unwrap();
    reader.push(message_reader_case("a delta for an unknown part stops it", &[], &[ch(0, 1, 0, "x")]));
    reader.push(message_reader_case("a gap in a body stops it", std::slice::from_ref(&r0), &[ch(1, 1, 2, "x")]));
    reader.push(message_reader_case("a gap in the message stops it", std::slice::from_ref(&r0), &[ch(2, 1, 0, "x")]));
    reader.push(message_reader_case(
        "an overlap is spliced at its own offset",
        &[r0.clone(), ch(1, 1, 0, "ab")],
        &[ch(2, 1, 1, "bcd"), ch(1, 1, 0, "ab")],
    ));
    reader.push(message_reader_case(
        "a transient part is reported, never kept",
        &[],
        &[MessageFrame::Event {
            from: 0,
            event: Event::Transient { kind: Some("data-t".into()), value: attrs(r#"{"data":1}"#) },
        }],
    ));
    for i in 0..8 {
        let log = random_message(&mut rng, 14);
        let from = rng.below(log.len() + 1);
        let durable: Vec<MessageFrame> = log
            .frames()
            .iter()
            .filter(|f| f.span().is_some_and(|(_, seq)| seq <= from))
            .cloned()
            .chain(issue_cut(&log, from))
            .collect();
        reader.push(message_reader_case(&format!("generated {i}"), &durable, &log.frames_from(from)));
    }

    // assemble: the issue's message from its rows at checkpoints, sealed, and broken rows.
    let mut assemble = Vec::new();
    let len = issue.len();
    for cuts in [vec![len], vec![1, 7, 20, 47, len], vec![4, 5, 6, len - 1]] {
        let mut from = 0;
        let mut rows = Vec::new();
        for &to in &cuts {
            rows.push(issue.row(from, to));
            from = to;
            let m = assemble_durable_message(None, None, 0, &rows).expect("own rows assemble");
            assert_eq!(m, issue.message_at(to));
            assemble.push(obj(vec![
                ("seq", n(0.0)),
                ("chunks", arr(rows.iter().map(row_value).collect())),
                ("document", t(m.document())),
                ("len", n(m.len() as f64)),
            ]));
        }
    }
    let doc = issue.message().document();
    // Compacted the old way, and sealed with the order of its runs and events: whole, the same.
    for stored in [doc.clone(), issue.sealed_document()] {
        assemble.push(obj(vec![
            ("body", t(issue.message().text_body())),
            ("stored", t(stored)),
            ("seq", n(len as f64)),
            ("chunks", arr(vec![])),
            ("document", t(doc.clone())),
            ("len", n(len as f64)),
        ]));
    }
    // sealed: the sealed document cut at every offset is the message there.
    let sealed_doc = issue.sealed_document();
    let cuts: Vec<JsonValue> = (0..len)
        .map(|at| {
            let m = assemble_durable_message_at(None, Some(&sealed_doc), len, &[], at)
                .expect("a sealed document reads")
                .expect("a sealed document cuts anywhere");
            assert_eq!(m, issue.message_at(at));
            obj(vec![("at", n(at as f64)), ("document", t(m.document())), ("len", n(m.len() as f64))])
        })
        .collect();
    let sealed = vec![obj(vec![("stored", t(sealed_doc.clone())), ("seq", n(len as f64)), ("cuts", arr(cuts))])];

    // goesOn: the frames a stream that goes on starts from (`stored_frames`), and the message
    // once a continuation from the stored end is folded after them.
    let mut goes_on = Vec::new();
    let chunk_rows = vec![issue.row(0, 7), issue.row(7, 20), issue.row(20, 47)];
    // (name, body, stored document, the row's seq, chunk rows)
    type StoredCase = (&'static str, Option<Text>, Option<Text>, u64, Vec<MessageChunkRow>);
    let stored_cases: Vec<StoredCase> = vec![
        ("sealed with its spans", None, Some(sealed_doc.clone()), len, vec![]),
        ("a producer that died: its chunk rows", None, None, 0, chunk_rows),
        ("a text row's body", Some("Hi there".into()), None, 8, vec![]),
        ("compacted before spans: cannot go on", None, Some(issue.message().document()), len, vec![]),
    ];
    for (name, body, stored, seq, rows) in stored_cases {
        let frames = stored_frames(body.as_ref(), stored.as_ref(), &rows).expect("own rows read back");
        let mut case =
            vec![("name", s(name)), ("seq", n(seq as f64)), ("chunks", arr(rows.iter().map(row_value).collect()))];
        if let Some(b) = &body {
            case.push(("body", t(b.clone())));
        }
        if let Some(d) = &stored {
            case.push(("stored", t(d.clone())));
        }
        match frames {
            None => case.push(("frames", JsonValue::Null)),
            Some(frames) => {
                let mut m = Message::new();
                for f in &frames {
                    m.apply(f).expect("stored frames fold");
                }
                let end = m.len();
                let k = m.parts().len() as u32;
                let more = vec![
                    MessageFrame::Event {
                        from: end,
                        event: Event::Start { part: k, kind: "text".into(), value: vec![] },
                    },
                    MessageFrame::chunk(end + 1, k, 0, "and more".into()).unwrap(),
                    MessageFrame::Event { from: end + 9, event: Event::End { part: k, value: vec![] } },
                ];
                for f in &more {
                    m.apply(f).expect("a continuation folds");
                }
                case.push(("frames", arr(frames.iter().map(message_value).collect())));
                case.push(("more", arr(more.iter().map(message_value).collect())));
                case.push(("document", t(m.document())));
                case.push(("len", n(m.len() as f64)));
            }
        }
        goes_on.push(obj(case));
    }
    let mut single = MessageLog::new();
    for d in production(&mut rng, 6) {
        single.delta(0, d).unwrap();
    }
    let single_rows = vec![single.row(0, 3), single.row(3, single.len())];
    assert!(single_rows.iter().all(|r| r.parts.is_none()), "a single text's rows are text rows");
    let m = assemble_durable_message(Some(&"B:".into()), None, 0, &single_rows).unwrap();
    assemble.push(obj(vec![
        ("body", s("B:")),
        ("seq", n(0.0)),
        ("chunks", arr(single_rows.iter().map(row_value).collect())),
        ("document", t(m.document())),
        ("len", n(m.len() as f64)),
    ]));
    for (chunks, what) in [
        (
            vec![issue.row(0, 9), MessageChunkRow { seq: 10, text: Some("x".into()), parts: None }],
            "a text row after structure",
        ),
        (vec![issue.row(3, 9)], "a parts row that starts past the message"),
        (
            vec![MessageChunkRow { seq: 1, text: Some(Text::new()), parts: Some("{".into()) }],
            "a parts row that is not JSON",
        ),
    ] {
        let e = assemble_durable_message(None, None, 0, &chunks).expect_err(what);
        assemble.push(obj(vec![
            ("name", s(what)),
            ("seq", n(0.0)),
            ("chunks", arr(chunks.iter().map(row_value).collect())),
            ("error", s(e.kind().as_str())),
        ]));
    }

    // replay and rows: the producer's cuts of the issue's message.
    let log_value = arr(issue.frames().iter().map(message_value).collect());
    let mut replay = Vec::new();
    for from in [0, 2, 5, 9, len - 1, len] {
        replay.push(obj(vec![
            ("from", n(from as f64)),
            ("frames", arr(issue.frames_from(from).iter().map(message_value).collect())),
            (
                "parts",
                issue
                    .message_at(from)
                    .part_table()
                    .map_or(JsonValue::Null, |p| arr(p.iter().map(|&x| n(x as f64)).collect())),
            ),
        ]));
    }
    let mut rows = Vec::new();
    for (from, to) in [(0, 0), (0, 3), (2, 6), (5, 9), (9, 40), (40, len)] {
        rows.push(obj(vec![("from", n(from as f64)), ("to", n(to as f64)), ("row", row_value(&issue.row(from, to)))]));
    }

    let resume: Vec<JsonValue> = issue.frames()[..6]
        .iter()
        .chain(&[issue.open_frame("m".into(), 5, 4, false), MessageFrame::Absent])
        .map(|f| {
            obj(vec![
                ("frame", message_value(f)),
                ("expected", message_resume_point(f).map_or(JsonValue::Null, |x| n(x as f64))),
            ])
        })
        .collect();

    let sse: Vec<JsonValue> = issue.frames()[..8]
        .iter()
        .chain(&[issue.open_frame("m".into(), 5, 4, false), MessageFrame::Absent])
        .map(|f| obj(vec![("frame", message_value(f)), ("event", s(&encode_message_event(f)))]))
        .collect();

    vec![
        ("encode", encode),
        ("sse", sse),
        ("decodeErrors", decode_errors),
        ("conform", conform),
        ("reader", reader),
        ("assemble", assemble),
        ("sealed", sealed),
        ("goesOn", goes_on),
        ("log", vec![obj(vec![("name", s("the issue's message")), ("frames", log_value)])]),
        ("replay", replay),
        ("rows", rows),
        ("resumePoint", resume),
    ]
}

/// The part of the frame across `at` that lies before it, if a delta straddles `at`.
fn issue_cut(log: &MessageLog, at: u64) -> Option<MessageFrame> {
    let frame = log.frames().iter().find(|f| f.span().is_some_and(|(from, seq)| from < at && at < seq))?;
    match frame {
        MessageFrame::Chunk { from, part, at: body, text, .. } => {
            let keep = (at - from) as usize;
            MessageFrame::chunk(*from, *part, *body, Text::from_slice(&text.units()[..keep])).ok()
        }
        _ => None,
    }
}

// ---------------------------------------------------------------- ui.json

/// The AI SDK's UI message stream (`twoplane_core::ui`): every chunk type of `ai` 7 (whose chunk
/// types are a superset of 5's and 6's), taken from the streams the SDK itself recorded
/// (`tests/ai-sdk/fixtures/7`), plus a type no SDK has and chunks that cannot be placed.
fn ui_vectors() -> Vec<(&'static str, Vec<JsonValue>)> {
    use twoplane_core::ui::{ingest_all, resume_all};
    use twoplane_core::StreamStatus;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ai-sdk/fixtures/7");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .expect("the recorded fixtures of ai 7")
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".chunks.json").map(str::to_owned))
        .collect();
    names.sort();
    let mut streams: Vec<(String, Vec<JsonValue>)> = names
        .iter()
        .map(|name| {
            let text = fs::read_to_string(dir.join(format!("{name}.chunks.json"))).expect("a fixture");
            (name.clone(), text.lines().filter(|l| !l.trim().is_empty()).map(j).collect())
        })
        .collect();
    streams.push((
        "a type no SDK has, and reserved names".into(),
        vec![
            j(r#"{"type":"start","messageId":"m"}"#),
            j(r#"{"type":"brand-new","text":"kept","type2":1,"nested":{"a":[1,2]}}"#),
            j(r#"{"type":"text-start","id":"t"}"#),
            j(r#"{"type":"text-delta","id":"t","delta":"a\ud800b"}"#),
            j(r#"{"type":"text-end","id":"t"}"#),
        ],
    ));
    let mut ingest = Vec::new();
    let mut resume = Vec::new();
    for (name, chunks) in &streams {
        let id = chunks
            .iter()
            .find_map(|c| c.get("messageId").and_then(JsonValue::as_text).cloned())
            .unwrap_or_else(|| Text::from("m"));
        let ingested = ingest_all(&id, chunks).expect("a recorded stream ingests");
        let frames: Vec<JsonValue> = ingested.frames.iter().map(message_value).collect();
        let mut case = vec![("name", s(name)), ("streamId", t(id.clone())), ("chunks", arr(chunks.clone()))];
        case.push(("frames", arr(frames.clone())));
        case.push(("abort", ingested.aborted.as_ref().map_or(JsonValue::Bool(false), |_| JsonValue::Bool(true))));
        ingest.push(obj(case));
        let finished =
            chunks.iter().any(|c| c.get("type").and_then(JsonValue::as_text).is_some_and(|t| *t == "finish"));
        let (status, reason) = match &ingested.aborted {
            Some(reason) => (StreamStatus::Cancelled, reason.clone()),
            None if finished => (StreamStatus::Complete, None),
            None => (StreamStatus::Interrupted, None),
        };
        let len = ingested.frames.last().and_then(|f| f.span()).map_or(0, |(_, seq)| seq);
        for from in [0, 1, len / 3, len / 2, len.saturating_sub(1), len] {
            let out = resume_all(&id, &ingested.frames, from, status, reason.as_ref()).expect("a replay");
            resume.push(obj(vec![
                ("name", s(name)),
                ("streamId", t(id.clone())),
                ("frames", arr(frames.clone())),
                ("from", n(from as f64)),
                ("status", s(status.as_str())),
                ("error", reason.clone().map_or(JsonValue::Null, t)),
                ("chunks", arr(out)),
            ]));
        }
    }
    let mut errors = Vec::new();
    for (name, chunks) in [
        ("a delta for an id no part was started with", vec![j(r#"{"type":"text-delta","id":"t","delta":"x"}"#)]),
        ("a start naming another message", vec![j(r#"{"type":"start","messageId":"other"}"#)]),
        ("a chunk that is not an object", vec![j("[1]")]),
        ("a chunk without a type", vec![j(r#"{"delta":"x"}"#)]),
        (
            "a tool output for an unknown call",
            vec![j(r#"{"type":"tool-output-available","toolCallId":"c","output":1}"#)],
        ),
    ] {
        let e = ingest_all(&Text::from("m"), &chunks).expect_err(name);
        errors.push(obj(vec![
            ("name", s(name)),
            ("streamId", s("m")),
            ("chunks", arr(chunks)),
            ("kind", s(e.kind().as_str())),
            ("field", e.field_name().map_or(JsonValue::Null, s)),
        ]));
    }
    vec![("ingest", ingest), ("resume", resume), ("errors", errors)]
}

// ---------------------------------------------------------------- the display-rate merge (§5)

/// The frames a reader is due in one write, and what the merge makes of them: the issue's message
/// whole (its deltas run together within each part, never across a structural event), a text
/// stream whose durables come between its deltas, and by hand the runs that must not merge.
fn merge_vectors() -> Vec<(&'static str, Vec<JsonValue>)> {
    let case = |name: &str, frames: &[MessageFrame]| {
        let merged = merge_frames(frames);
        obj(vec![
            ("name", s(name)),
            ("frames", JsonValue::Array(frames.iter().map(message_value).collect())),
            ("merged", JsonValue::Array(merged.iter().map(message_value).collect())),
        ])
    };
    let issue = issue_message(40);
    let mut whole = vec![issue.open_frame("m".into(), 0, 0, false)];
    whole.extend(issue.frames().iter().cloned());
    let mut text = vec![];
    for (i, piece) in ["Hel", "lo, ", "wor", "ld", "!"].iter().enumerate() {
        let from = text.iter().filter_map(MessageFrame::span).map(|(_, seq)| seq).max().unwrap_or(0);
        text.push(MessageFrame::chunk(from, 0, from, (*piece).into()).unwrap());
        if i % 2 == 1 {
            text.push(MessageFrame::Durable { seq: from });
            text.push(MessageFrame::Durable { seq: from + piece.len() as u64 });
        }
    }
    text.push(MessageFrame::End { seq: 13, status: twoplane_core::StreamStatus::Complete, error: None });
    let chunk = |from, part, at, t: &str| MessageFrame::chunk(from, part, at, t.into()).unwrap();
    let apart = [chunk(0, 0, 0, "a"), chunk(2, 0, 1, "b"), chunk(3, 0, 3, "c"), chunk(4, 1, 4, "d")];
    // Answered by hand: the text stream's five deltas become runs broken only by its durables
    // (each pair of which becomes the later one), and nothing in `apart` merges.
    let merged_text = merge_frames(&text);
    assert_eq!(merged_text.len(), 6, "{merged_text:?}");
    assert_eq!(merge_frames(&apart), apart.to_vec());
    vec![(
        "cases",
        vec![case("issue message", &whole), case("text with durables", &text), case("nothing merges", &apart)],
    )]
}
