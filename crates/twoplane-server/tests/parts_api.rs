//! Messages made of parts through the producer API (docs/server.md, "Messages with parts"),
//! over real HTTP against `twoplane serve`'s own assembly on a temporary SQLite file.
//!
//! - Events one request each at their offsets (retried safely: a repeat is `409 offset_behind`
//!   and changes nothing), and a newline-delimited stream of events cut at random bytes: the
//!   store holds exactly the produced message (its document, and its text parts as the body),
//!   and readers that join at every offset and fold what they receive with the core's reader
//!   end with exactly that message.
//! - Refusals keep what came before: a malformed line, a delta for a part that has not started,
//!   an unknown or duplicate part id are `400` with a stable kind, the lines before them applied
//!   and nothing of theirs.
//! - A single-text stream written through `/append` reads exactly as before (no part frame, no
//!   document).

use std::net::SocketAddr;

use bytes::Bytes;
use common::producer::{get, open, post, read_frames, send, start};
use http_body_util::StreamBody;
use hyper::body::Frame as BodyFrame;
use serde_json::{json, Value};
use std::collections::HashMap;

use twoplane_core::message::{
    parse_producer_event, Event, Message, MessageAction, MessageLog, MessageReader, PartRef, ProducerEvent,
};
use twoplane_core::reader::StopReason;
use twoplane_core::Text;

mod common;

/// The message of the issue, as producer events: reasoning, a tool call whose input arrives in
/// 40 pieces, its output (preliminary, then final), two texts, a data part replaced once, a
/// transient part, metadata and the finish reason.
fn issue_events() -> Vec<Value> {
    let mut events = vec![
        json!({"type": "part", "kind": "reasoning", "id": "r"}),
        json!({"type": "chunk", "id": "r", "text": "Let me look "}),
        json!({"type": "chunk", "id": "r", "text": "that up 😀."}),
        json!({"type": "part-end", "id": "r"}),
        json!({"type": "part", "kind": "tool-search", "id": "c1", "value": {"toolCallId": "c1", "state": "input-streaming"}}),
    ];
    let input = r#"{"query":"weather in Zürich","units":"metric","days":3,"details":["wind","rain"]}"#;
    let units: Vec<char> = input.chars().collect();
    let per = units.len().div_ceil(40);
    for piece in units.chunks(per) {
        events.push(json!({"type": "chunk", "id": "c1", "text": piece.iter().collect::<String>()}));
    }
    events.extend([
        json!({"type": "part-end", "id": "c1", "value": {"state": "input-available", "input": {"query": "weather in Zürich"}}}),
        json!({"type": "set", "id": "c1", "value": {"state": "output-available", "output": {"temp": 18}, "preliminary": true}}),
        json!({"type": "set", "id": "c1", "value": {"output": {"temp": 19}, "preliminary": false}}),
        json!({"type": "part", "kind": "text", "id": "t1"}),
        json!({"type": "chunk", "id": "t1", "text": "It is 19 °C"}),
        json!({"type": "part-end", "id": "t1"}),
        json!({"type": "part", "kind": "data-weather", "id": "w", "value": {"id": "w", "data": {"status": "loading"}}}),
        json!({"type": "transient", "kind": "data-notice", "value": {"data": "almost there"}}),
        json!({"type": "set", "id": "w", "value": {"data": {"status": "done", "temp": 19}}}),
        json!({"type": "part", "kind": "text", "id": "t2"}),
        json!({"type": "chunk", "id": "t2", "text": " and sunny."}),
        json!({"type": "part-end", "id": "t2"}),
        json!({"type": "meta", "value": {"model": "mock"}}),
        json!({"type": "finish", "reason": "stop"}),
    ]);
    events
}

/// Each event's length in the coordinate: a chunk's UTF-16 length, one for every other event.
fn width(event: &Value) -> u64 {
    match event["type"].as_str() {
        Some("chunk") => event["text"].as_str().unwrap().encode_utf16().count() as u64,
        _ => 1,
    }
}

/// The message the events make, by the core's own producer log (the same rules).
fn log_of(events: &[Value]) -> MessageLog {
    let mut log = MessageLog::new();
    let mut ids = HashMap::new();
    for e in events {
        let event = match parse_producer_event(&e.to_string()).unwrap() {
            ProducerEvent::Start { kind, id, value } => {
                let (part, _) = log.start(kind, value).unwrap();
                if let Some(id) = id {
                    ids.insert(id, part);
                }
                continue;
            }
            ProducerEvent::Chunk { part, text } => {
                log.delta(resolve(&ids, &part), text).unwrap();
                continue;
            }
            ProducerEvent::End { part, value } => Event::End { part: resolve(&ids, &part), value },
            ProducerEvent::Set { part, value } => Event::Set { part: resolve(&ids, &part), value },
            ProducerEvent::Meta { value } => Event::Meta { value },
            ProducerEvent::Finish { reason } => Event::Finish { reason },
            ProducerEvent::Transient { kind, value } => Event::Transient { kind, value },
        };
        log.event(event).unwrap();
    }
    log
}

fn resolve(ids: &HashMap<Text, u32>, part: &PartRef) -> u32 {
    match part {
        PartRef::Number(n) => *n,
        PartRef::Id(id) => ids[id],
    }
}

/// Read `id` from `from` holding `durable`, folding every frame with the core's reader; the
/// message it ends with (it must end on `end`).
async fn read_message(addr: SocketAddr, id: &str, durable: Message) -> Message {
    let from = durable.len();
    let mut reader = MessageReader::new(id.into(), durable);
    for frame in read_frames(addr, id, from).await {
        if let MessageAction::Stop(reason) = reader.feed(&frame) {
            assert_eq!(reason, StopReason::End, "a reader from {from} stopped on {reason:?} at {frame:?}");
        }
    }
    assert_eq!(reader.core().stopped(), Some(StopReason::End), "a reader from {from} did not end");
    reader.message().clone()
}

async fn close(addr: SocketAddr, id: &str) -> Value {
    let (status, answer) = post(addr, &format!("/v1/streams/{id}/close"), "").await;
    assert_eq!(status, 200, "{answer}");
    answer
}

#[tokio::test]
async fn events_at_their_offsets_make_the_message_and_retries_change_nothing() {
    let served = start().await;
    let addr = served.addr;
    open(addr, "m1").await;
    let events = issue_events();
    let mut offset = 0;
    for (i, e) in events.iter().enumerate() {
        let path = format!("/v1/streams/m1/event?offset={offset}");
        let (status, answer) = post(addr, &path, e.to_string()).await;
        assert_eq!(status, 200, "event {i}: {answer}");
        offset += width(e);
        assert_eq!(answer["seq"], json!(offset), "event {i}");
        if e["type"] == "part" {
            assert!(answer["part"].as_u64().unwrap() >= 1);
        }
        if i % 7 == 0 {
            // The same request again (a retry whose answer was lost): refused, nothing appended.
            let (status, again) = post(addr, &path, e.to_string()).await;
            assert_eq!((status, again["kind"].as_str()), (409, Some("offset_behind")), "{again}");
            assert_eq!(again["seq"], json!(offset));
        }
    }
    let want = log_of(&events).message().clone();
    assert_eq!(offset, want.len());
    close(addr, "m1").await;
    let (_, status) = get(addr, "/v1/streams/m1").await;
    assert_eq!(status["stored"]["document"].as_str().map(Text::from), Some(want.document()), "{status}");
    assert_eq!(status["stored"]["text"].as_str().map(Text::from), Some(want.text_body()));
    assert_eq!(status["stored"]["seq"], json!(want.len()));
    assert_eq!(read_message(addr, "m1", Message::new()).await.document(), want.document());
}

#[tokio::test]
async fn a_stream_of_events_cut_anywhere_gives_the_message_to_every_joiner() {
    let served = start().await;
    let addr = served.addr;
    open(addr, "m2").await;
    let events = issue_events();
    let ndjson: String = events.iter().map(|e| format!("{e}\n")).collect();
    let bytes = ndjson.into_bytes();
    // Cut at every 5th byte and inside the UTF-8 of "😀" and "ü".
    let pieces: Vec<Bytes> = bytes.chunks(5).map(Bytes::copy_from_slice).collect();
    let body =
        StreamBody::new(futures::stream::iter(pieces.into_iter().map(|b| Ok::<_, std::io::Error>(BodyFrame::data(b)))));
    let (status, answer) = send(addr, "/v1/streams/m2/events?offset=0", body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["events"], json!(events.len()));
    let want = log_of(&events).message().clone();
    // Before the seal: joiners at several offsets, each holding the produced message there.
    let log = log_of(&events);
    let joins: Vec<u64> = (0..=want.len()).step_by(7).chain([want.len() - 1, want.len()]).collect();
    let readers: Vec<_> = joins.iter().map(|&at| tokio::spawn(read_message(addr, "m2", log.message_at(at)))).collect();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    close(addr, "m2").await;
    for (at, r) in joins.iter().zip(readers) {
        assert_eq!(r.await.unwrap().document(), want.document(), "a reader that joined at {at}");
    }
    let (_, status) = get(addr, "/v1/streams/m2").await;
    assert_eq!(status["stored"]["document"].as_str().map(Text::from), Some(want.document()));
}

#[tokio::test]
async fn refusals_keep_what_came_before() {
    let served = start().await;
    let addr = served.addr;
    open(addr, "m3").await;
    let lines = concat!(
        "{\"type\":\"part\",\"kind\":\"reasoning\",\"id\":\"r\"}\n",
        "{\"type\":\"chunk\",\"id\":\"r\",\"text\":\"ok\"}\n",
        "{\"type\":\"chunk\",\"id\":\"nope\",\"text\":\"lost\"}\n",
        "{\"type\":\"chunk\",\"id\":\"r\",\"text\":\"never\"}\n",
    );
    let (status, answer) = post(addr, "/v1/streams/m3/events", lines).await;
    assert_eq!((status, answer["kind"].as_str()), (400, Some("unknown_part")), "{answer}");
    assert!(answer["message"].as_str().unwrap().starts_with("line 3:"), "{answer}");
    assert_eq!(answer["seq"], json!(3), "the two lines before it were applied");
    for (event, kind) in [
        (json!({"type": "part", "kind": "text", "id": "r"}), "duplicate_part_id"),
        (json!({"type": "chunk", "part": 9, "text": "x"}), "unknown_part"),
        (json!({"type": "chunk", "text": "x", "from": 2}), "bad_event"),
        (json!({"type": "set", "id": "r", "value": {"text": "no"}}), "bad_event"),
        (json!({"type": "tick"}), "bad_event"),
    ] {
        let (status, answer) = post(addr, "/v1/streams/m3/event?offset=3", event.to_string()).await;
        assert_eq!((status, answer["kind"].as_str()), (400, Some(kind)), "{event}: {answer}");
        assert_eq!(answer["seq"], json!(3), "{event}: nothing appended");
    }
    let (status, answer) = post(addr, "/v1/streams/m3/event?offset=3", r#"{"type":"part-end","id":"r"}"#).await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = post(addr, "/v1/streams/m3/event?offset=4", r#"{"type":"chunk","id":"r","text":"x"}"#).await;
    assert_eq!((status, answer["kind"].as_str()), (400, Some("invalid_argument")), "after its end: {answer}");
    let (status, answer) = post(addr, "/v1/streams/m3/event", r#"{"type":"finish","reason":"stop"}"#).await;
    assert_eq!((status, answer["kind"].as_str()), (400, Some("missing_offset")), "{answer}");
    close(addr, "m3").await;
    let (_, status) = get(addr, "/v1/streams/m3").await;
    assert_eq!(status["stored"]["document"], json!(r#"{"parts":[{"type":"reasoning","text":"ok"}]}"#));
}

#[tokio::test]
async fn a_single_text_reads_exactly_as_before() {
    let served = start().await;
    let addr = served.addr;
    open(addr, "t").await;
    let (status, _) = post(addr, "/v1/streams/t/append?offset=0", "plain ").await;
    assert_eq!(status, 200);
    // A chunk event for part 0 is the same thing as an append.
    let (status, _) = post(addr, "/v1/streams/t/event?offset=6", r#"{"type":"chunk","text":"text"}"#).await;
    assert_eq!(status, 200);
    close(addr, "t").await;
    let frames = read_frames(addr, "t", 0).await;
    assert!(frames.iter().all(|f| f.to_frame().is_some()), "only the six frames: {frames:?}");
    let (_, status) = get(addr, "/v1/streams/t").await;
    assert_eq!(status["stored"]["text"], json!("plain text"));
    assert!(status["stored"].get("document").is_none(), "no document for a single text: {status}");
}
