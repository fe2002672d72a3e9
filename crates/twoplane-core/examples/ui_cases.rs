//! The UI message stream module (`twoplane_core::ui`) run over the AI SDK's own recorded streams,
//! for `tests/ai-sdk/check-egress.mjs` to judge with the SDK's reader:
//!
//! `cargo run -p twoplane-core --example ui_cases -- tests/ai-sdk/fixtures OUT.ndjson`
//!
//! For every fixture (`<major>/<name>.chunks.json`, one chunk per line), two kinds of case, one
//! JSON object per line of OUT:
//! - `cut`: the first `at` chunks ingested, and the compacted replay of the message they made
//!   (with `abort` when one of them was an `abort`): what a reader that joins then reads first;
//! - `join`: the whole stream ingested, a reader joining at offset `at` of the message (every
//!   event boundary): the replay of the message there, the live chunks of every later frame, and
//!   the chunks that end the stream as it ended (`finish` seen: complete; `abort`: cancelled;
//!   neither: interrupted);
//! - `advance`: a reader that holds the message at one boundary and is brought to a later one in
//!   one step (`UiEgress::advance_to`, what the server does when a reader falls back on the
//!   store), then follows the live tail to the end.
//!
//! A chunk the ingest refuses is written as `{"error": ...}` in place of the case's chunks.

use std::io::Write;
use std::path::Path;

use twoplane_core::json::{parse_value, JsonValue};
use twoplane_core::message::MessageLog;
use twoplane_core::ui::{UiEgress, UiIngest, UiOp};
use twoplane_core::{StreamStatus, Text};

/// What ingesting some chunks gave: the message's log, and whether an `abort` came.
struct Ingested {
    log: MessageLog,
    aborted: Option<Option<Text>>,
    finished: bool,
}

fn ingest(id: &Text, chunks: &[JsonValue]) -> Result<Ingested, String> {
    let mut ui = UiIngest::new(id.clone(), 1);
    let mut out = Ingested { log: MessageLog::new(), aborted: None, finished: false };
    for c in chunks {
        if c.get("type").and_then(JsonValue::as_text).is_some_and(|t| *t == "finish") {
            out.finished = true;
        }
        for op in ui.feed(c).map_err(|e| e.to_string())? {
            match op {
                UiOp::Event(e) => drop(out.log.event(e).map_err(|e| e.to_string())?),
                UiOp::Delta { part, text } => drop(out.log.delta(part, text).map_err(|e| e.to_string())?),
                UiOp::Abort { reason } => out.aborted = Some(reason),
            }
        }
    }
    Ok(out)
}

fn case(out: &mut impl Write, major: &str, fixture: &str, mode: &str, at: u64, chunks: Result<Vec<JsonValue>, String>) {
    let body = match chunks {
        Ok(chunks) => format!("\"chunks\":{}", JsonValue::Array(chunks).to_json()),
        Err(e) => format!("\"error\":{}", JsonValue::String(e.as_str().into()).to_json()),
    };
    writeln!(out, "{{\"major\":\"{major}\",\"fixture\":\"{fixture}\",\"mode\":\"{mode}\",\"at\":{at},{body}}}")
        .unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (fixtures, target) = match args.as_slice() {
        [_, fixtures, target] => (Path::new(fixtures).to_owned(), target.clone()),
        _ => panic!("usage: ui_cases FIXTURES_DIR OUT.ndjson"),
    };
    let mut out = std::io::BufWriter::new(std::fs::File::create(&target).unwrap());
    let mut majors: Vec<_> =
        std::fs::read_dir(&fixtures).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    majors.sort();
    let mut count = 0;
    for dir in majors {
        let major = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".chunks.json"))
            .collect();
        files.sort();
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().trim_end_matches(".chunks.json").to_owned();
            let text = std::fs::read_to_string(&file).unwrap();
            let chunks: Vec<JsonValue> =
                text.lines().filter(|l| !l.trim().is_empty()).map(|l| parse_value(l).unwrap()).collect();
            let id = chunks
                .iter()
                .find_map(|c| c.get("messageId").and_then(JsonValue::as_text).cloned())
                .unwrap_or_else(|| Text::from("m"));
            for k in 0..=chunks.len() {
                let replay = ingest(&id, &chunks[..k]).map(|ingested| {
                    let mut egress = UiEgress::new();
                    let mut replay = egress.replay(&id, ingested.log.message().clone());
                    if let Some(reason) = &ingested.aborted {
                        replay.extend(egress.end(StreamStatus::Cancelled, reason.as_ref()));
                    }
                    replay
                });
                case(&mut out, &major, &name, "cut", k as u64, replay);
                count += 1;
            }
            let whole = match ingest(&id, &chunks) {
                Ok(whole) => whole,
                Err(e) => {
                    case(&mut out, &major, &name, "join", 0, Err(e));
                    continue;
                }
            };
            let (status, reason) = match (&whole.aborted, whole.finished) {
                (Some(reason), _) => (StreamStatus::Cancelled, reason.clone()),
                (None, true) => (StreamStatus::Complete, None),
                (None, false) => (StreamStatus::Interrupted, None),
            };
            let mut boundaries: Vec<u64> = vec![0];
            boundaries.extend(whole.log.frames().iter().filter_map(|f| f.span().map(|(_, seq)| seq)));
            for (i, &from) in boundaries.iter().enumerate() {
                for &to in boundaries[i..].iter().skip(1).step_by(5) {
                    let mut egress = UiEgress::new();
                    let mut chunks = egress.replay(&id, whole.log.message_at(from));
                    chunks.extend(egress.advance_to(whole.log.message_at(to)));
                    let tail: Result<Vec<_>, String> = whole
                        .log
                        .frames_from(to)
                        .iter()
                        .map(|f| egress.frame(f).map_err(|e| e.to_string()))
                        .collect::<Result<Vec<_>, _>>()
                        .map(|v| v.into_iter().flatten().collect());
                    let chunks = tail.map(|tail| {
                        chunks.extend(tail);
                        chunks.extend(egress.end(status, reason.as_ref()));
                        chunks
                    });
                    case(&mut out, &major, &name, "advance", from * 1_000_000 + to, chunks);
                    count += 1;
                }
            }
            for at in boundaries {
                let mut egress = UiEgress::new();
                let mut chunks = egress.replay(&id, whole.log.message_at(at));
                let tail: Result<Vec<_>, String> = whole
                    .log
                    .frames_from(at)
                    .iter()
                    .map(|f| egress.frame(f).map_err(|e| e.to_string()))
                    .collect::<Result<Vec<_>, _>>()
                    .map(|v| v.into_iter().flatten().collect());
                let chunks = tail.map(|tail| {
                    chunks.extend(tail);
                    chunks.extend(egress.end(status, reason.as_ref()));
                    chunks
                });
                case(&mut out, &major, &name, "join", at, chunks);
                count += 1;
            }
        }
    }
    out.flush().unwrap();
    println!("ui_cases: {count} cases written to {target}");
}
