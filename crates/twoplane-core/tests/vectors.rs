//! Replays the shared vectors of `tests/vectors/` through the Rust core: the same cases the
//! WebAssembly build and the Node addon replay, read back from the checked-in files.

use std::path::PathBuf;

use twoplane_core::conform::Conform;
use twoplane_core::ddl_args::ddl_of_js_args;
use twoplane_core::json::{self, parse_value, JsonValue};
use twoplane_core::jsview::{self, OwnedRawPieces};
use twoplane_core::message::{
    assemble_durable_message, assemble_durable_message_at, decode_message_frame, encode_message_event,
    encode_message_frame, merge_frames, message_frame_from_value, message_resume_point, stored_frames, Message,
    MessageAction, MessageChunkRow, MessageConform, MessageFrame, MessageKind, MessageLog, MessageReader,
    MessageVerdict, MessageViolation,
};
use twoplane_core::reader::{Reader, ReaderAction};
use twoplane_core::request::{
    is_absolute_url, stream_request_from_fetch, stream_request_from_http, subscribe_url_units,
};
use twoplane_core::splice::{assembly_order, splice_stream_text, stream_chunk_id_text, stream_chunk_id_units};
use twoplane_core::sql::{stream_chunk_table_ddl, Dialect, StreamColumns, StreamTables};
use twoplane_core::sse::{encode_event, SseDecoder};
use twoplane_core::text::pair_safe_cut;
use twoplane_core::{frame_resume_point, Text};

fn load(name: &str) -> JsonValue {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors").join(name);
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_value(&src).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cases<'a>(file: &'a JsonValue, section: &str) -> &'a [JsonValue] {
    let list = file.get(section).and_then(JsonValue::as_array).expect("section");
    assert!(!list.is_empty(), "section {section} is empty");
    list
}

fn text<'a>(v: &'a JsonValue, key: &str) -> &'a Text {
    v.get(key).and_then(JsonValue::as_text).unwrap_or_else(|| panic!("{key} is not a string"))
}

fn num(v: &JsonValue, key: &str) -> f64 {
    v.get(key).and_then(JsonValue::as_f64).unwrap_or_else(|| panic!("{key} is not a number"))
}

fn jstr(x: &str) -> JsonValue {
    JsonValue::String(Text::from(x))
}

fn obj(members: Vec<(&str, JsonValue)>) -> JsonValue {
    JsonValue::Object(members.into_iter().map(|(k, v)| (Text::from(k), v)).collect())
}

/// Replays every case of a conform section. `step` feeds one call to the pass and returns its
/// verdict (the six-frame pass's converts to a [`MessageVerdict`]) with the pass's `pos`,
/// `lastDurable` and requested offset after it; what that verdict emits is read here once, so the
/// six-frame and the parts replays check the same rules of emission.
fn replay_conform<C>(
    file: &JsonValue,
    section: &str,
    new: impl Fn(f64) -> C,
    mut step: impl FnMut(&mut C, &JsonValue, &Text) -> (MessageVerdict, [f64; 3]),
) {
    for case in cases(file, section) {
        let name = text(case, "name").to_string_lossy();
        let id = text(case, "streamId");
        let mut c = new(num(case, "from"));
        let calls = case.get("calls").and_then(JsonValue::as_array).unwrap();
        let expect = case.get("expect").and_then(JsonValue::as_array).unwrap();
        assert_eq!(calls.len(), expect.len(), "{name}");
        for (i, (call, want)) in calls.iter().zip(expect).enumerate() {
            let fed = call.get("feed");
            let (verdict, [pos, last_durable, requested]) = step(&mut c, call, id);
            let stale = obj(vec![
                ("type", jstr("stale")),
                ("floorSeq", JsonValue::Number(pos)),
                ("durableSeq", JsonValue::Number(last_durable)),
            ]);
            let r = JsonValue::Number(requested);
            let synth = obj(vec![
                ("type", jstr("open")),
                ("streamId", JsonValue::String(id.clone())),
                ("from", r.clone()),
                ("seq", r.clone()),
                ("durableSeq", r),
                ("ended", JsonValue::Bool(false)),
            ]);
            let (out, violation) = match verdict {
                MessageVerdict::Drop => (vec![], JsonValue::Null),
                MessageVerdict::Pass => (vec![fed.unwrap().clone()], JsonValue::Null),
                MessageVerdict::OpenThenPass => (vec![synth, fed.unwrap().clone()], JsonValue::Null),
                MessageVerdict::Violation(MessageViolation::Stream(v)) => {
                    let raw = OwnedRawPieces::of(fed);
                    (vec![stale], JsonValue::String(v.reason(&raw.borrowed())))
                }
                MessageVerdict::Violation(MessageViolation::Part(p)) => (vec![stale], JsonValue::String(p.reason())),
                MessageVerdict::Terminate => (vec![stale], JsonValue::Null),
            };
            assert_eq!(Some(&JsonValue::Array(out)), want.get("out"), "{name}: call {i}");
            assert_eq!(Some(&violation), want.get("violation"), "{name}: call {i}");
        }
    }
}

#[test]
fn conform_vectors() {
    replay_conform(&load("conform.json"), "cases", Conform::new, |c, call, id| {
        let verdict = match call.get("feed") {
            Some(frame) => c.feed(jsview::conform_input(frame, id.units())),
            None if call.get("end").is_some() => c.end(),
            None => c.fail(),
        };
        (verdict.into(), [c.pos(), c.last_durable(), c.requested()])
    });
}

#[test]
fn reader_vectors() {
    let file = load("reader.json");
    for case in cases(&file, "cases") {
        let name = text(case, "name").to_string_lossy();
        let id = text(case, "streamId");
        let mut acc = text(case, "durable").clone();
        let mut r = Reader::new(acc.len() as u64);
        let frames = case.get("frames").and_then(JsonValue::as_array).unwrap();
        let expect = case.get("expect").and_then(JsonValue::as_array).unwrap();
        for (i, (frame, want)) in frames.iter().zip(expect).enumerate() {
            let got = match r.feed(jsview::reader_input(frame, id.units())) {
                ReaderAction::Ignore => obj(vec![("action", jstr("ignore"))]),
                ReaderAction::Splice { at } => {
                    acc.truncate(at as usize);
                    acc.push_units(text(frame, "text").units());
                    obj(vec![("action", jstr("splice")), ("at", JsonValue::Number(at as f64))])
                }
                ReaderAction::Stop(reason) => obj(vec![("action", jstr("stop")), ("reason", jstr(reason.as_str()))]),
            };
            assert_eq!(&got, want, "{name}: frame {i}");
        }
        assert_eq!(&acc, text(case, "text"), "{name}");
        assert_eq!(r.resume_from() as f64, num(case, "resumeFrom"), "{name}");
    }
}

#[test]
fn text_vectors() {
    let file = load("text.json");
    for case in cases(&file, "splice") {
        let got = splice_stream_text(text(case, "durable").units(), text(case, "produced").units());
        assert_eq!(&got, text(case, "expected"));
    }
    for case in cases(&file, "assemble") {
        let mut out =
            case.get("message").and_then(|m| m.get("body")).and_then(JsonValue::as_text).cloned().unwrap_or_default();
        let chunks = case.get("chunks").and_then(JsonValue::as_array).unwrap_or(&[]);
        let seqs: Vec<f64> = chunks.iter().map(|c| jsview::number(c.get("seq"))).collect();
        for i in assembly_order(&seqs) {
            if let Some(t) = chunks[i as usize].get("text").and_then(JsonValue::as_text) {
                out.push_units(t.units());
            }
        }
        assert_eq!(&out, text(case, "expected"));
    }
    for case in cases(&file, "chunkIdText") {
        let got = stream_chunk_id_text(text(case, "streamId").units(), text(case, "seqText").units());
        assert_eq!(got, *text(case, "expected"));
    }
    for case in cases(&file, "chunkId") {
        let got = stream_chunk_id_units(text(case, "streamId").units(), num(case, "seq"));
        assert_eq!(&got, text(case, "expected"));
    }
    for case in cases(&file, "resumePoint") {
        let mut encoded = String::new();
        json::write_json_value(&mut encoded, case.get("frame").unwrap());
        let frame = json::decode_frame(&encoded).unwrap();
        let want = case.get("expected").and_then(JsonValue::as_f64);
        assert_eq!(frame_resume_point(&frame).map(|p| p as f64), want);
    }
}

#[test]
fn codec_vectors() {
    let file = load("codec.json");
    for case in cases(&file, "encode") {
        let mut source = String::new();
        json::write_json_value(&mut source, case.get("frame").unwrap());
        let frame = json::frame_from_value(case.get("frame").unwrap()).unwrap();
        let encoded = json::encode_frame(&frame);
        assert_eq!(Text::from(encoded.as_str()), *text(case, "json"));
        // The generic writer and the frame encoder agree, and decoding is the inverse.
        assert_eq!(source, encoded);
        assert_eq!(json::decode_frame(&encoded).unwrap(), frame);
    }
    for case in cases(&file, "decodeLenient") {
        let input = text(case, "input").to_string_lossy();
        let frame = json::decode_frame(&input).unwrap();
        assert_eq!(Text::from(json::encode_frame(&frame).as_str()), *text(case, "json"), "{input}");
    }
    for case in cases(&file, "decodeErrors") {
        let input = text(case, "input").to_string_lossy();
        let err = json::decode_frame(&input).unwrap_err();
        assert_eq!(err.kind().as_str(), text(case, "kind").to_string_lossy(), "{input}");
        let field = case.get("field").and_then(JsonValue::as_text).map(Text::to_string_lossy);
        assert_eq!(err.field_name().map(str::to_owned), field, "{input}");
    }
}

#[test]
fn sse_vectors() {
    let file = load("sse.json");
    for case in cases(&file, "decode") {
        let name = text(case, "name").to_string_lossy();
        let mut dec = SseDecoder::new();
        let mut events = Vec::new();
        for chunk in case.get("chunks").and_then(JsonValue::as_array).unwrap() {
            let bytes: Vec<u8> = chunk.as_array().unwrap().iter().map(|b| b.as_f64().unwrap() as u8).collect();
            dec.feed(&bytes, &mut events);
        }
        dec.finish(&mut events);
        let want = case.get("events").and_then(JsonValue::as_array).unwrap();
        assert_eq!(events.len(), want.len(), "{name}");
        for (e, w) in events.iter().zip(want) {
            assert_eq!(Text::from(e.event.as_str()), *text(w, "event"), "{name}");
            assert_eq!(Text::from(e.data.as_str()), *text(w, "data"), "{name}");
            assert_eq!(Text::from(e.last_event_id.as_str()), *text(w, "id"), "{name}");
        }
        assert_eq!(Text::from(dec.last_event_id()), *text(case, "lastEventId"), "{name}");
        assert_eq!(dec.retry().map(|r| r as f64), case.get("retry").and_then(JsonValue::as_f64), "{name}");
    }
    for case in cases(&file, "encode") {
        let frame = json::frame_from_value(case.get("frame").unwrap()).unwrap();
        assert_eq!(Text::from(encode_event(&frame).as_str()), *text(case, "sse"));
    }
}

#[test]
fn request_vectors() {
    let file = load("request.json");
    for case in cases(&file, "cases") {
        let url = text(case, "url").to_string_lossy();
        let last = case.get("lastEventId").and_then(JsonValue::as_text).map(Text::to_string_lossy);
        let got = stream_request_from_http(&url, last.as_deref());
        let want = case.get("expected").unwrap();
        let absolute = case.get("absolute").and_then(JsonValue::as_bool).unwrap();
        assert_eq!(is_absolute_url(&url), absolute, "{url}");
        match stream_request_from_fetch(&url, last.as_deref()) {
            Ok(strict) => assert!(absolute && strict == got, "{url}"),
            Err(e) => assert!(!absolute && e.kind().as_str() == "invalid_url", "{url}: {e}"),
        }
        assert_eq!(Text::from(got.stream_id.as_str()), *text(want, "streamId"), "{url}");
        assert_eq!(got.from, num(want, "from"), "{url}");
    }
}

#[test]
fn subscribe_url_vectors() {
    let file = load("request.json");
    for case in cases(&file, "subscribe") {
        let endpoint = text(case, "endpoint").to_string_lossy();
        let from = num(case, "from") as u64;
        let got = subscribe_url_units(&endpoint, text(case, "streamId").units(), from);
        assert_eq!(Text::from(got.as_str()), *text(case, "url"), "{endpoint} {:?}", text(case, "streamId"));
    }
}

#[test]
fn cut_rule_vectors() {
    let file = load("cut.json");
    for case in cases(&file, "cases") {
        let units = text(case, "text").units();
        let at = num(case, "at") as usize;
        assert_eq!(pair_safe_cut(units, at) as f64, num(case, "cut"), "{units:x?} at {at}");
    }
}

#[test]
fn ddl_argument_vectors() {
    let file = load("ddl.json");
    for case in cases(&file, "args") {
        let (tables, dialect) = (case.get("tables").unwrap(), case.get("dialect").unwrap());
        let args = jsview::ddl_args(tables, dialect);
        match (ddl_of_js_args(&args), case.get("expected")) {
            (Ok(stmts), Some(want)) => assert_eq!(&JsonValue::Array(stmts.iter().map(|x| jstr(x)).collect()), want),
            (Err(e), None) => assert_eq!(e.kind().as_str(), text(case, "error").to_string_lossy()),
            (got, want) => panic!("ddl args mismatch: {got:?} vs {want:?}"),
        }
    }
}

#[test]
fn ddl_vectors() {
    let file = load("ddl.json");
    for case in cases(&file, "cases") {
        let tables = case.get("tables").unwrap();
        let s = |v: Option<&JsonValue>| v.and_then(JsonValue::as_text).map(Text::to_string_lossy);
        let cols = tables.get("columns");
        let col = |k: &str| s(cols.and_then(|c| c.get(k)));
        let st = StreamTables {
            message: s(tables.get("message")).unwrap_or_default(),
            chunks: s(tables.get("chunks")).unwrap_or_default(),
            columns: StreamColumns {
                chunk_key: col("chunkKey"),
                chunk_stream: col("chunkStream"),
                chunk_seq: col("chunkSeq"),
                chunk_text: col("chunkText"),
                ..Default::default()
            },
        };
        let dialect = Dialect::from_name(&text(case, "dialect").to_string_lossy()).unwrap();
        match (stream_chunk_table_ddl(&st, dialect), case.get("expected")) {
            (Ok(stmts), Some(want)) => {
                let got: Vec<JsonValue> = stmts.iter().map(|x| jstr(x)).collect();
                assert_eq!(&JsonValue::Array(got), want);
            }
            (Err(e), None) => assert_eq!(e.kind().as_str(), text(case, "error").to_string_lossy()),
            (got, want) => panic!("ddl mismatch: {got:?} vs {want:?}"),
        }
    }
}

// ---------------------------------------------------------------- message.json (§8)

fn message_of_frames(frames: &JsonValue) -> Message {
    let mut m = Message::new();
    for f in frames.as_array().unwrap() {
        m.apply(&message_frame_from_value(f).unwrap()).unwrap();
    }
    m
}

fn opt_text(v: &JsonValue, key: &str) -> Option<Text> {
    v.get(key).and_then(JsonValue::as_text).cloned()
}

fn rows_of(v: &JsonValue) -> Vec<MessageChunkRow> {
    v.get("chunks")
        .and_then(JsonValue::as_array)
        .unwrap()
        .iter()
        .map(|r| MessageChunkRow { seq: num(r, "seq") as u64, text: opt_text(r, "text"), parts: opt_text(r, "parts") })
        .collect()
}

#[test]
fn message_codec_vectors() {
    let file = load("message.json");
    for case in cases(&file, "encode") {
        let json = text(case, "json").to_string_lossy();
        let frame = message_frame_from_value(case.get("frame").unwrap()).unwrap();
        assert_eq!(encode_message_frame(&frame), json);
        assert_eq!(decode_message_frame(&json).unwrap(), frame, "{json}");
        // A frame of today's wire is written by the six-frame codec, byte for byte.
        if let Some(six) = frame.to_frame() {
            assert_eq!(json::encode_frame(&six), json);
        }
    }
    for case in cases(&file, "decodeErrors") {
        let input = text(case, "input").to_string_lossy();
        let e = decode_message_frame(&input).unwrap_err();
        assert_eq!(
            Some(e.kind().as_str()),
            case.get("kind").and_then(JsonValue::as_text).map(|k| k.to_string_lossy()).as_deref(),
            "{input}"
        );
        let field = case.get("field").and_then(JsonValue::as_text).map(|f| f.to_string_lossy());
        assert_eq!(e.field_name().map(str::to_owned), field, "{input}");
    }
    for case in cases(&file, "sse") {
        let f = message_frame_from_value(case.get("frame").unwrap()).unwrap();
        assert_eq!(&Text::from(encode_message_event(&f).as_str()), text(case, "event"));
    }
    for case in cases(&file, "resumePoint") {
        let f = message_frame_from_value(case.get("frame").unwrap()).unwrap();
        assert_eq!(message_resume_point(&f).map(|x| x as f64), case.get("expected").and_then(JsonValue::as_f64));
    }
}

#[test]
fn message_conform_vectors() {
    replay_conform(&load("message.json"), "conform", MessageConform::new, |c, call, id| {
        let verdict = match call.get("feed") {
            Some(frame) => {
                let n = jsview::message_numbers(frame, id.units());
                if n.kind == MessageKind::Open as u32 {
                    c.feed_open(n.id_matches, n.a, n.b, n.c, jsview::open_parts(frame).as_deref())
                } else {
                    c.feed_numbers(n)
                }
            }
            None if call.get("end").is_some() => c.end(),
            None => c.fail(),
        };
        (verdict, [c.pos(), c.last_durable(), c.requested()])
    });
}

#[test]
fn message_reader_vectors() {
    let file = load("message.json");
    for case in cases(&file, "reader") {
        let name = text(case, "name").to_string_lossy();
        let mut r = MessageReader::new(text(case, "streamId").clone(), message_of_frames(case.get("durable").unwrap()));
        let frames = case.get("frames").and_then(JsonValue::as_array).unwrap();
        let expect = case.get("expect").and_then(JsonValue::as_array).unwrap();
        assert_eq!(frames.len(), expect.len(), "{name}");
        for (i, (f, want)) in frames.iter().zip(expect).enumerate() {
            let action = r.feed(&message_frame_from_value(f).unwrap());
            let got = text(want, "action").to_string_lossy();
            assert_eq!(action.code(), message_action_code(&got), "{name}: frame {i}");
            assert_eq!(action.part().map(f64::from), want.get("part").and_then(JsonValue::as_f64), "{name}: frame {i}");
            if let MessageAction::Splice { at, .. } = action {
                assert_eq!(Some(at as f64), want.get("at").and_then(JsonValue::as_f64), "{name}: frame {i}");
            }
            if let MessageAction::Stop(reason) = action {
                assert_eq!(text(want, "reason"), reason.as_str(), "{name}: frame {i}");
            }
        }
        assert_eq!(&r.message().document(), text(case, "message"), "{name}");
        assert_eq!(r.core().resume_from() as f64, num(case, "resumeFrom"), "{name}");
    }
}

fn message_action_code(name: &str) -> u32 {
    ["ignore", "splice", "stop", "start", "end", "set", "meta", "finish", "transient"]
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("unknown action {name}")) as u32
}

#[test]
fn message_assemble_vectors() {
    let file = load("message.json");
    for case in cases(&file, "assemble") {
        let body = opt_text(case, "body");
        let stored = opt_text(case, "stored");
        let got = assemble_durable_message(body.as_ref(), stored.as_ref(), num(case, "seq") as u64, &rows_of(case));
        match case.get("error").and_then(JsonValue::as_text) {
            Some(kind) => assert_eq!(got.unwrap_err().kind().as_str(), kind.to_string_lossy()),
            None => {
                let m = got.unwrap();
                assert_eq!(&m.document(), text(case, "document"));
                assert_eq!(m.len() as f64, num(case, "len"));
            }
        }
    }
}

#[test]
fn message_sealed_vectors() {
    let file = load("message.json");
    for case in cases(&file, "sealed") {
        let stored = text(case, "stored");
        let seq = num(case, "seq") as u64;
        for cut in case.get("cuts").and_then(JsonValue::as_array).unwrap() {
            let at = num(cut, "at") as u64;
            let m = assemble_durable_message_at(None, Some(stored), seq, &[], at).unwrap().expect("cuts exactly");
            assert_eq!(&m.document(), text(cut, "document"), "at {at}");
            assert_eq!(m.len() as f64, num(cut, "len"));
        }
    }
}

#[test]
fn message_goes_on_vectors() {
    let file = load("message.json");
    for case in cases(&file, "goesOn") {
        let name = text(case, "name").to_string_lossy();
        let (body, stored) = (opt_text(case, "body"), opt_text(case, "stored"));
        let got = stored_frames(body.as_ref(), stored.as_ref(), &rows_of(case)).unwrap();
        if case.get("frames") == Some(&JsonValue::Null) {
            assert_eq!(got, None, "{name}");
            continue;
        }
        let frames = got.expect("goes on");
        assert_eq!(frames, frames_of(case), "{name}");
        let more = frames_under(case, "more");
        let mut m = Message::new();
        for f in frames.iter().chain(&more) {
            m.apply(f).unwrap();
        }
        assert_eq!(&m.document(), text(case, "document"), "{name}");
        assert_eq!(m.len() as f64, num(case, "len"), "{name}");
    }
}

#[test]
fn message_log_vectors() {
    let file = load("message.json");
    let log_frames = cases(&file, "log")[0].get("frames").and_then(JsonValue::as_array).unwrap();
    let mut log = MessageLog::new();
    for f in log_frames {
        // Rebuild the producer's log from its frames: each delta and event at the end.
        match message_frame_from_value(f).unwrap() {
            MessageFrame::Chunk { part, text, .. } => {
                log.delta(part, text).unwrap();
            }
            MessageFrame::Event { event, .. } => {
                log.event(event).unwrap();
            }
            other => panic!("{other:?} is not content"),
        }
    }
    for case in cases(&file, "replay") {
        let from = num(case, "from") as u64;
        let want: Vec<MessageFrame> = case
            .get("frames")
            .and_then(JsonValue::as_array)
            .unwrap()
            .iter()
            .map(|f| message_frame_from_value(f).unwrap())
            .collect();
        assert_eq!(log.frames_from(from), want, "replay from {from}");
        let parts = case
            .get("parts")
            .and_then(JsonValue::as_array)
            .map(|p| p.iter().map(|x| x.as_f64().unwrap() as u64).collect());
        assert_eq!(log.message_at(from).part_table(), parts, "parts at {from}");
    }
    for case in cases(&file, "rows") {
        let (from, to) = (num(case, "from") as u64, num(case, "to") as u64);
        let row = case.get("row").unwrap();
        let want =
            MessageChunkRow { seq: num(row, "seq") as u64, text: opt_text(row, "text"), parts: opt_text(row, "parts") };
        assert_eq!(log.row(from, to), want, "row {from}..{to}");
    }
}

fn frames_of(case: &JsonValue) -> Vec<MessageFrame> {
    frames_under(case, "frames")
}

/// The message frames of the array `key` of `case`.
fn frames_under(case: &JsonValue, key: &str) -> Vec<MessageFrame> {
    case.get(key).and_then(JsonValue::as_array).unwrap().iter().map(|f| message_frame_from_value(f).unwrap()).collect()
}

#[test]
fn ui_vectors() {
    use twoplane_core::ui::{ingest_all, resume_all};
    let file = load("ui.json");
    for case in cases(&file, "ingest") {
        let chunks = case.get("chunks").and_then(JsonValue::as_array).unwrap();
        let got = ingest_all(text(case, "streamId"), chunks).unwrap();
        assert_eq!(got.frames, frames_of(case), "{}", text(case, "name").to_string_lossy());
        assert_eq!(got.aborted.is_some(), case.get("abort") == Some(&JsonValue::Bool(true)));
    }
    for case in cases(&file, "resume") {
        let status = twoplane_core::StreamStatus::parse(&text(case, "status").to_string_lossy()).unwrap();
        let error = case.get("error").and_then(JsonValue::as_text);
        let got =
            resume_all(text(case, "streamId"), &frames_of(case), num(case, "from") as u64, status, error).unwrap();
        let want = case.get("chunks").and_then(JsonValue::as_array).unwrap();
        assert_eq!(got, want, "{} from {}", text(case, "name").to_string_lossy(), num(case, "from"));
    }
    for case in cases(&file, "errors") {
        let chunks = case.get("chunks").and_then(JsonValue::as_array).unwrap();
        let e = ingest_all(text(case, "streamId"), chunks).unwrap_err();
        assert_eq!(e.kind().as_str(), text(case, "kind").to_string_lossy());
        assert_eq!(
            e.field_name().map(str::to_owned),
            case.get("field").and_then(JsonValue::as_text).map(Text::to_string_lossy)
        );
    }
}

// ---------------------------------------------------------------- merge.json (§5, merged writes)

#[test]
fn merge_vectors() {
    let file = load("merge.json");
    let frames_of = |v: &JsonValue| -> Vec<MessageFrame> {
        v.as_array().unwrap().iter().map(|f| message_frame_from_value(f).unwrap()).collect()
    };
    for case in cases(&file, "cases") {
        let (frames, merged) = (frames_of(case.get("frames").unwrap()), frames_of(case.get("merged").unwrap()));
        assert_eq!(merge_frames(&frames), merged, "{:?}", case.get("name"));
    }
}
