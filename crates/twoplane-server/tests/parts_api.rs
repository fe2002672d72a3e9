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
use common::parts::{issue_events, log_of, width};
use common::producer::{get, open, post, read_frames, send, start};
use http_body_util::StreamBody;
use hyper::body::Frame as BodyFrame;
use serde_json::{json, Value};
use twoplane_core::message::{Message, MessageAction, MessageReader};
use twoplane_core::reader::StopReason;
use twoplane_core::Text;

mod common;

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
