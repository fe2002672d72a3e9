//! The AI SDK's UI message stream through `twoplane serve` over real HTTP (docs/server.md, "The
//! AI SDK's UI message stream"), on a temporary SQLite file. The SDK's own reader judges the same
//! routes in `tests/ai-sdk` (the `aisdk` part); here the server's own promises are checked:
//!
//! - what a `GET` sends, ingested again, is the message the `POST` made, while it streams and
//!   after it ended (then from the store, the same events), from every offset `?from=N`, with
//!   every event's `id:` the length it brings the reader to and the replay split at `N`;
//! - a continuation (`POST .../open` at the end, then the next turn) whose `start` names another
//!   message is refused (`400 bad_chunk`) and loses nothing: the first turn stays, and the stream
//!   goes on again from there;
//! - `204` for a message without a stream; `400 bad_chunk` with what came before kept and the
//!   stream sealed `error`; a reader's cancel ends the producer's request with `409 cancelled`
//!   and the readers' streams with `abort`; a body that breaks off seals `interrupted`.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use common::producer::{post, send, start};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame as BodyFrame;
use twoplane_core::json::{parse_value, JsonValue};
use twoplane_core::message::MessageLog;
use twoplane_core::ui::{UiIngest, UiOp};
use twoplane_core::Text;

mod common;

/// A turn of the SDK's shape: reasoning, a tool call with streamed input and its outputs, two
/// texts, a data part replaced, a transient one, metadata and the finish.
fn turn(id: &str) -> Vec<String> {
    let mut chunks = vec![
        format!(r#"{{"type":"start","messageId":"{id}","messageMetadata":{{"model":"mock"}}}}"#),
        r#"{"type":"start-step"}"#.into(),
        r#"{"type":"reasoning-start","id":"r1"}"#.into(),
        r#"{"type":"reasoning-delta","id":"r1","delta":"Let me look "}"#.into(),
        r#"{"type":"reasoning-delta","id":"r1","delta":"that up 😀."}"#.into(),
        r#"{"type":"reasoning-end","id":"r1"}"#.into(),
        r#"{"type":"tool-input-start","toolCallId":"c1","toolName":"search"}"#.into(),
    ];
    for piece in ["{\"q\":", "\"zü", "rich\"", "}"] {
        chunks.push(format!(r#"{{"type":"tool-input-delta","toolCallId":"c1","inputTextDelta":{}}}"#, json(piece)));
    }
    chunks.extend([
        r#"{"type":"tool-input-available","toolCallId":"c1","toolName":"search","input":{"q":"zürich"}}"#.into(),
        r#"{"type":"tool-output-available","toolCallId":"c1","output":{"t":18},"preliminary":true}"#.into(),
        r#"{"type":"tool-output-available","toolCallId":"c1","output":{"t":19}}"#.into(),
        r#"{"type":"finish-step"}"#.into(),
        r#"{"type":"start-step"}"#.into(),
        r#"{"type":"text-start","id":"t1"}"#.into(),
        r#"{"type":"text-delta","id":"t1","delta":"It is 19 °C"}"#.into(),
        r#"{"type":"text-end","id":"t1"}"#.into(),
        r#"{"type":"data-weather","id":"w","data":{"s":"loading"}}"#.into(),
        r#"{"type":"data-notice","data":"almost","transient":true}"#.into(),
        r#"{"type":"data-weather","id":"w","data":{"s":"done"}}"#.into(),
        r#"{"type":"text-start","id":"t2"}"#.into(),
        r#"{"type":"text-delta","id":"t2","delta":" and sunny."}"#.into(),
        r#"{"type":"text-end","id":"t2"}"#.into(),
        r#"{"type":"finish-step"}"#.into(),
        r#"{"type":"finish","finishReason":"stop","messageMetadata":{"tokens":9}}"#.into(),
    ]);
    chunks
}

fn json(s: &str) -> String {
    JsonValue::String(Text::from(s)).to_json()
}

fn sse(chunks: &[String]) -> String {
    chunks.iter().map(|c| format!("data: {c}\n\n")).chain(["data: [DONE]\n\n".into()]).collect()
}

/// The message chunks make, by the core's ingest and log (what a reader of them holds).
fn message_of(id: &str, chunks: &[JsonValue]) -> MessageLog {
    let mut ui = UiIngest::new(id.into(), 1);
    let mut log = MessageLog::new();
    for c in chunks {
        for op in ui.feed(c).unwrap_or_else(|e| panic!("{e}: {}", c.to_json())) {
            match op {
                UiOp::Event(e) => drop(log.event(e).unwrap()),
                UiOp::Delta { part, text } => drop(log.delta(part, text).unwrap()),
                UiOp::Abort { .. } => {}
            }
        }
    }
    log
}

/// One `GET .../ui-message-stream`: the status, and the events `(id, chunk or [DONE])` in order,
/// each with the `id:` field it carried itself (`None`: none; the server writes one `id:` and one
/// `data:` line at most, so the blocks are read as such).
async fn resume(addr: SocketAddr, id: &str, from: Option<u64>) -> (u16, Vec<(Option<String>, String)>) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let path = match from {
        Some(n) => format!("/v1/streams/{id}/ui-message-stream?from={n}"),
        None => format!("/v1/streams/{id}/ui-message-stream"),
    };
    let request = hyper::Request::get(path).header("host", addr.to_string()).body(Full::new(Bytes::new())).unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    if status == 200 {
        assert_eq!(response.headers()["x-vercel-ai-ui-message-stream"], "v1");
        assert_eq!(response.headers()["content-type"], "text/event-stream");
    }
    let mut body = response.into_body();
    let mut text = String::new();
    let mut out = Vec::new();
    let read = async {
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.unwrap().into_data() else { continue };
            text.push_str(std::str::from_utf8(&data).unwrap());
            while let Some(end) = text.find("\n\n") {
                let block: String = text.drain(..end + 2).collect();
                let (mut id, mut data) = (None, None);
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = Some(v.to_string());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data = Some(v.to_string());
                    }
                }
                let Some(data) = data else { continue }; // a keep-alive comment
                let done = data == "[DONE]";
                out.push((id, data));
                if done {
                    return;
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read).await.expect("the resume ends within 30 s");
    (status, out)
}

/// What a reader cut after `events[..k]` keeps and where it resumes: the chunks up to the last
/// event that carried an `id:` (a whole group), and that id (`None`: nothing whole yet).
fn kept(events: &[(Option<String>, String)], k: usize) -> (Vec<JsonValue>, Option<u64>) {
    match events[..k].iter().rposition(|(id, _)| id.is_some()) {
        None => (Vec::new(), None),
        Some(i) => (chunks_of(&events[..=i]), events[i].0.as_deref().and_then(|v| v.parse().ok())),
    }
}

/// The chunks of a resume past its first group (the replay of what the reader holds, which a
/// reader skips).
fn past_first_group(events: &[(Option<String>, String)]) -> Vec<JsonValue> {
    let first = events.iter().position(|(id, _)| id.is_some()).expect("a group");
    chunks_of(&events[first + 1..])
}

fn chunks_of(events: &[(Option<String>, String)]) -> Vec<JsonValue> {
    events.iter().filter(|(_, d)| d != "[DONE]").map(|(_, d)| parse_value(d).unwrap()).collect()
}

fn types(chunks: &[JsonValue]) -> Vec<String> {
    chunks.iter().map(|c| c.get("type").and_then(JsonValue::as_text).unwrap().to_string_lossy()).collect()
}

#[tokio::test]
async fn a_message_read_back_from_every_offset_is_the_message_produced() {
    let served = start().await;
    let addr = served.addr;
    let chunks = turn("u1");
    let (status, answer) = post(addr, "/v1/streams/u1/ui-message-stream", sse(&chunks)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!((answer["status"].as_str(), answer["chunks"].as_u64()), (Some("complete"), Some(chunks.len() as u64)));
    let produced: Vec<JsonValue> = chunks.iter().map(|c| parse_value(c).unwrap()).collect();
    let want = message_of("u1", &produced);
    let len = want.len();
    assert_eq!(answer["seq"].as_u64(), Some(len));
    for from in [None, Some(0), Some(1), Some(7), Some(len / 2), Some(len - 1), Some(len), Some(len + 5)] {
        let (status, events) = resume(addr, "u1", from).await;
        assert_eq!(status, 200);
        assert_eq!(events.last().map(|e| e.1.as_str()), Some("[DONE]"), "from {from:?}");
        let got = chunks_of(&events);
        assert_eq!(
            got[0].get("messageId").and_then(JsonValue::as_text).map(Text::to_string_lossy).as_deref(),
            Some("u1")
        );
        assert_eq!(
            message_of("u1", &got).message().document(),
            want.message().document(),
            "from {from:?}: {:?}",
            types(&got)
        );
        // Ids never go back; the first group (the replay of what the reader holds) ends with
        // exactly its offset; the last chunk carries the whole length, and [DONE] no id.
        let ids: Vec<u64> = events.iter().filter_map(|(id, _)| id.as_deref()?.parse().ok()).collect();
        assert!(ids.windows(2).all(|w| w[0] <= w[1]), "from {from:?}: {ids:?}");
        let held = from.unwrap_or(0).min(len);
        assert_eq!(ids[0], held, "from {from:?}");
        assert_eq!(events[events.len() - 2].0.as_deref(), Some(len.to_string().as_str()));
        assert_eq!(events[events.len() - 1].0, None);
    }
    // A reader whose connection breaks after any event resumes from its Last-Event-ID (the last
    // whole group's) and, skipping the replay of what it holds, ends with the message: nothing
    // lost, nothing twice.
    let (_, events) = resume(addr, "u1", None).await;
    assert!(events.iter().filter(|(id, _)| id.is_none()).count() > 2, "groups of several events");
    for k in 0..events.len() {
        let (mut got, at) = kept(&events, k);
        let (_, again) = resume(addr, "u1", at).await;
        got.extend(if at.is_some() { past_first_group(&again) } else { chunks_of(&again) });
        assert_eq!(message_of("u1", &got).message().document(), want.message().document(), "cut after {k}");
        assert_eq!(got.len(), chunks_of(&events).len(), "cut after {k}: {:?}", types(&got));
    }
    // After a restart the ended stream is the store's: its sealed document keeps the order of
    // its runs and events, so the replay is split at the reader's offset as while it was hosted,
    // event for event.
    let mut hosted = Vec::new();
    for from in [None, Some(1), Some(7), Some(len / 2), Some(len - 1), Some(len)] {
        hosted.push(resume(addr, "u1", from).await);
    }
    let served = served.restart().await;
    let addr = served.addr;
    for (i, from) in [None, Some(1), Some(7), Some(len / 2), Some(len - 1), Some(len)].into_iter().enumerate() {
        let (status, events) = resume(addr, "u1", from).await;
        assert_eq!(status, 200);
        let got = chunks_of(&events);
        assert_eq!(message_of("u1", &got).message().document(), want.message().document(), "from {from:?}");
        let ids: Vec<u64> = events.iter().filter_map(|(id, _)| id.as_deref()?.parse().ok()).collect();
        assert_eq!(ids[0], from.unwrap_or(0).min(len), "from {from:?}: {ids:?}");
        assert_eq!(events, hosted[i].1, "from {from:?}: the store's replay is the host's");
    }
    // A message without a stream: 204.
    let (status, _) = resume(addr, "nobody", None).await;
    assert_eq!(status, 204);
    let (status, _) = post(addr, "/v1/streams/plain/open", r#"{"create":true}"#).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_reader_joining_mid_stream_gets_the_replay_then_the_tail() {
    let served = start().await;
    let addr = served.addr;
    let chunks = turn("u2");
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<BodyFrame<Bytes>, std::io::Error>>(2);
    let body = StreamBody::new(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) }));
    let producer = tokio::spawn(send(addr, "/v1/streams/u2/ui-message-stream", body));
    let half = chunks.len() / 2;
    for c in &chunks[..half] {
        tx.send(Ok(BodyFrame::data(Bytes::from(format!("data: {c}\n\n"))))).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let reader = tokio::spawn(resume(addr, "u2", Some(3)));
    tokio::time::sleep(Duration::from_millis(300)).await;
    for c in &chunks[half..] {
        tx.send(Ok(BodyFrame::data(Bytes::from(format!("data: {c}\n\n"))))).await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(tx);
    let (status, answer) = producer.await.unwrap();
    assert_eq!(status, 200, "{answer}");
    let (status, events) = reader.await.unwrap();
    assert_eq!(status, 200);
    let produced: Vec<JsonValue> = chunks.iter().map(|c| parse_value(c).unwrap()).collect();
    let got = chunks_of(&events);
    assert_eq!(message_of("u2", &got).message().document(), message_of("u2", &produced).message().document());
    // The live tail came as the chunks of its frames: the second text's delta, on its own.
    assert!(got.iter().any(|c| c.get("delta").and_then(JsonValue::as_text).is_some_and(|d| *d == " and sunny.")));
    assert_eq!(types(&got).last().map(String::as_str), Some("finish"));
}

#[tokio::test]
async fn refusals_cancels_and_broken_bodies_end_every_reader() {
    let served = start().await;
    let addr = served.addr;
    // A chunk that cannot be placed: 400, what came before kept, the stream sealed error.
    let chunks = vec![
        r#"{"type":"text-start","id":"t"}"#.to_owned(),
        r#"{"type":"text-delta","id":"t","delta":"kept"}"#.to_owned(),
        r#"{"type":"text-delta","id":"nope","delta":"lost"}"#.to_owned(),
    ];
    let (status, answer) = post(addr, "/v1/streams/bad/ui-message-stream", sse(&chunks)).await;
    assert_eq!((status, answer["kind"].as_str()), (400, Some("bad_chunk")), "{answer}");
    assert!(answer["message"].as_str().unwrap().starts_with("chunk 3:"), "{answer}");
    let (_, events) = resume(addr, "bad", None).await;
    let got = chunks_of(&events);
    assert!(got.iter().any(|c| c.get("delta").and_then(JsonValue::as_text).is_some_and(|d| *d == "kept")));
    assert_eq!(types(&got).last().map(String::as_str), Some("error"), "{:?}", types(&got));
    let (status, answer) =
        post(addr, "/v1/streams/bad2/ui-message-stream", sse(&[r#"{"type":"start","messageId":"other"}"#.into()]))
            .await;
    assert_eq!((status, answer["kind"].as_str()), (400, Some("bad_chunk")), "{answer}");

    // A reader's cancel: the producer's request ends 409 cancelled, readers get abort.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<BodyFrame<Bytes>, std::io::Error>>(2);
    let body = StreamBody::new(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) }));
    let producer = tokio::spawn(send(addr, "/v1/streams/c/ui-message-stream", body));
    tx.send(Ok(BodyFrame::data(Bytes::from("data: {\"type\":\"text-start\",\"id\":\"t\"}\n\n")))).await.unwrap();
    tx.send(Ok(BodyFrame::data(Bytes::from("data: {\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"a\"}\n\n"))))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let reader = tokio::spawn(resume(addr, "c", None));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, answer) = post(addr, "/v1/streams/c/cancel", "").await;
    assert_eq!(status, 202, "{answer}");
    let (status, answer) = producer.await.unwrap();
    assert_eq!((status, answer["kind"].as_str()), (409, Some("cancelled")), "{answer}");
    let (_, events) = reader.await.unwrap();
    assert_eq!(types(&chunks_of(&events)).last().map(String::as_str), Some("abort"));
    drop(tx);

    // A producer's own abort seals cancelled.
    let aborted =
        vec![r#"{"type":"text-start","id":"t"}"#.to_owned(), r#"{"type":"abort","reason":"user stop"}"#.to_owned()];
    let (status, answer) = post(addr, "/v1/streams/ab/ui-message-stream", sse(&aborted)).await;
    assert_eq!((status, answer["status"].as_str()), (200, Some("cancelled")), "{answer}");
    let (_, events) = resume(addr, "ab", None).await;
    let last = chunks_of(&events).pop().unwrap();
    assert_eq!(last.to_json(), r#"{"type":"abort","reason":"user stop"}"#);

    // A body that breaks off: interrupted, and a reader ends.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<BodyFrame<Bytes>, std::io::Error>>(2);
    let body = StreamBody::new(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) }));
    let producer = tokio::spawn(send(addr, "/v1/streams/br/ui-message-stream", body));
    tx.send(Ok(BodyFrame::data(Bytes::from("data: {\"type\":\"text-start\",\"id\":\"t\"}\n\n")))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    tx.send(Err(std::io::Error::other("the producer died"))).await.unwrap();
    let _ = producer.await;
    let (status, events) = resume(addr, "br", None).await;
    assert_eq!(status, 200);
    assert_eq!(events.last().map(|e| e.1.as_str()), Some("[DONE]"), "an interrupted stream still ends");
}

#[tokio::test]
async fn a_continuation_whose_start_names_another_message_is_refused_and_loses_nothing() {
    let served = start().await;
    let addr = served.addr;
    let chunks = turn("g1");
    let (status, answer) = post(addr, "/v1/streams/g1/ui-message-stream", sse(&chunks)).await;
    assert_eq!((status, answer["status"].as_str()), (200, Some("complete")), "{answer}");
    let len = answer["seq"].as_u64().unwrap();
    let produced: Vec<JsonValue> = chunks.iter().map(|c| parse_value(c).unwrap()).collect();
    let want = message_of("g1", &produced).message().document().to_string_lossy();
    let next = |id: &str| {
        vec![
            format!(r#"{{"type":"start","messageId":"{id}"}}"#),
            r#"{"type":"start-step"}"#.into(),
            r#"{"type":"text-start","id":"t3"}"#.into(),
            r#"{"type":"text-delta","id":"t3","delta":" Anything else?"}"#.into(),
            r#"{"type":"text-end","id":"t3"}"#.into(),
            r#"{"type":"finish-step"}"#.into(),
            r#"{"type":"finish","finishReason":"stop"}"#.into(),
        ]
    };
    let stored = |answer: &serde_json::Value| {
        (answer["stored"]["status"].as_str().map(str::to_owned), answer["stored"]["seq"].as_u64())
    };
    // Going on at the wrong offset, or with a stream that does not exist: refused, nothing changes.
    let (status, answer) = post(addr, "/v1/streams/g1/open", format!(r#"{{"offset":{}}}"#, len - 1)).await;
    assert_eq!(
        (status, answer["kind"].as_str(), answer["durableSeq"].as_u64()),
        (409, Some("wrong_offset"), Some(len))
    );
    let (status, answer) = post(addr, "/v1/streams/nobody/open", r#"{"offset":0}"#).await;
    assert_eq!((status, answer["kind"].as_str()), (404, Some("unknown_stream")), "{answer}");
    // Going on at its end with a turn whose start names another message: refused by kind.
    let (status, answer) = post(addr, "/v1/streams/g1/open", format!(r#"{{"offset":{len}}}"#)).await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = post(addr, "/v1/streams/g1/ui-message-stream", sse(&next("other"))).await;
    assert_eq!((status, answer["kind"].as_str()), (400, Some("bad_chunk")), "{answer}");
    // Nothing was lost: the first turn, whole, at its length; the stream says it failed.
    let (status, answer) = common::producer::get(addr, "/v1/streams/g1").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(stored(&answer), (Some("error".to_owned()), Some(len)), "{answer}");
    assert_eq!(answer["stored"]["document"].as_str(), Some(want.as_str()), "{answer}");
    // And it goes on again from there, with a turn that names it.
    let (status, answer) = post(addr, "/v1/streams/g1/open", format!(r#"{{"offset":{len}}}"#)).await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = post(addr, "/v1/streams/g1/ui-message-stream", sse(&next("g1"))).await;
    assert_eq!((status, answer["status"].as_str()), (200, Some("complete")), "{answer}");
    let (_, answer) = common::producer::get(addr, "/v1/streams/g1").await;
    let document = answer["stored"]["document"].as_str().unwrap().to_owned();
    assert!(
        document.contains(r#""text":"It is 19 °C""#) && document.contains(r#""text":" Anything else?""#),
        "{document}"
    );
    assert!(stored(&answer).1.unwrap() > len);
}
