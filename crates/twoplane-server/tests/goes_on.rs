//! A stream that goes on, through a real `twoplane serve` (docs/server.md, "A stream that goes
//! on"): the producer's server is killed mid-answer (SIGKILL: nothing seals anything) and started
//! again on the same SQLite file, which marks the stream `interrupted` at the length its store
//! holds; the producer re-opens it at that durable end (`POST /v1/streams/{id}/open` with
//! `{"offset": N}`) and finishes its text. A reader that read part of it before the crash resumes
//! from the offset it holds and ends with exactly the producer's text, once. An ended stream goes
//! on the same way, and the refusals name their kind.

mod common;

use std::time::Duration;

use common::cluster::{http, Instance, Sse};
use twoplane_core::json::decode_frame;
use twoplane_core::Frame;

fn start(dir: &std::path::Path, name: &str) -> Instance {
    let db = dir.join("goes-on.db");
    let args: Vec<String> =
        ["--listen", "127.0.0.1:0", "--db", db.to_str().unwrap()].iter().map(|s| s.to_string()).collect();
    let (name, child, log) = Instance::spawn(name, &args, dir);
    Instance::ready(name, child, log)
}

async fn post(server: &Instance, path: &str, body: &str) -> (u16, serde_json::Value, String) {
    http(server.addr, "POST", path, Some(body.to_owned())).await.unwrap()
}

/// Read a reader's frames until its text reaches `want` units or its terminal; returns the text
/// it holds (spliced at each chunk's `from`) and its last event id.
async fn read_into(reader: &mut Sse, text: &mut Vec<u16>, last_id: &mut String, until_len: usize) -> Option<Frame> {
    while text.len() < until_len {
        let event = reader.event_within(Duration::from_secs(10)).await.unwrap()?;
        if !event.last_event_id.is_empty() {
            *last_id = event.last_event_id.clone();
        }
        match decode_frame(&event.data).unwrap() {
            Frame::Chunk { from, text: t, .. } => {
                text.truncate(from as usize);
                text.extend_from_slice(t.units());
            }
            Frame::Open { .. } | Frame::Durable { .. } => {}
            terminal => return Some(terminal),
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_producer_goes_on_from_what_is_durable_and_readers_see_its_text_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path(), "first");
    let answer: Vec<u16> =
        "Resuming is asking for what you lack. 😀 Nothing twice, nothing lost.".encode_utf16().collect();
    let (status, _, raw) = post(&server, "/v1/streams/k/open", r#"{"create":true}"#).await;
    assert_eq!(status, 200, "{raw}");
    let mut reader = Sse::get(server.addr, "/api/stream?streamId=k&from=0", None).await.unwrap();
    // The first part, made durable; then more that the crash may or may not have let land.
    let cut = 20;
    let text = |a: usize, b: usize| String::from_utf16(&answer[a..b]).unwrap();
    let (status, _, raw) = post(&server, "/v1/streams/k/append?offset=0", &text(0, cut)).await;
    assert_eq!(status, 200, "{raw}");
    let (status, _, raw) = post(&server, "/v1/streams/k/flush", "").await;
    assert_eq!(status, 200, "{raw}");
    let (status, _, raw) = post(&server, &format!("/v1/streams/k/append?offset={cut}"), &text(cut, 30)).await;
    assert_eq!(status, 200, "{raw}");
    let (mut held, mut last_id) = (Vec::new(), String::new());
    assert!(read_into(&mut reader, &mut held, &mut last_id, 30).await.is_none());
    drop(reader);
    server.kill();

    let server = start(dir.path(), "second");
    let (status, state, raw) = http(server.addr, "GET", "/v1/streams/k", None).await.unwrap();
    assert_eq!(status, 200, "{raw}");
    let durable = state["stored"]["seq"].as_u64().unwrap_or_else(|| panic!("no stored seq: {raw}")) as usize;
    assert!((cut..=30).contains(&durable), "{raw}");
    assert_eq!(state["stored"]["status"], "interrupted", "{raw}");
    // Going on from anywhere but the durable end is refused, and says where it stands.
    let (status, e, raw) = post(&server, "/v1/streams/k/open", &format!(r#"{{"offset":{}}}"#, durable + 1)).await;
    assert_eq!(
        (status, e["kind"].as_str(), e["durableSeq"].as_u64()),
        (409, Some("wrong_offset"), Some(durable as u64)),
        "{raw}"
    );
    let (status, opened, raw) = post(&server, "/v1/streams/k/open", &format!(r#"{{"offset":{durable}}}"#)).await;
    assert_eq!((status, opened["seq"].as_u64()), (200, Some(durable as u64)), "{raw}");
    let (status, e, _) = post(&server, "/v1/streams/k/open", &format!(r#"{{"offset":{durable}}}"#)).await;
    assert_eq!((status, e["kind"].as_str()), (409, Some("already_open")), "one producer at a time");
    // The reader comes back from what it holds while the producer finishes.
    let mut reader = Sse::get(server.addr, "/api/stream?streamId=k&from=0", Some(&last_id)).await.unwrap();
    let (status, _, raw) =
        post(&server, &format!("/v1/streams/k/append?offset={durable}"), &text(durable, answer.len())).await;
    assert_eq!(status, 200, "{raw}");
    let (status, _, raw) = post(&server, "/v1/streams/k/close", "{}").await;
    assert_eq!(status, 200, "{raw}");
    let end = read_into(&mut reader, &mut held, &mut last_id, usize::MAX).await;
    assert!(matches!(end, Some(Frame::End { .. })), "{end:?}");
    assert_eq!(String::from_utf16(&held).unwrap(), String::from_utf16(&answer).unwrap(), "the producer's text, once");
    let (_, state, raw) = http(server.addr, "GET", "/v1/streams/k", None).await.unwrap();
    assert_eq!(
        (state["stored"]["seq"].as_u64(), state["stored"]["status"].as_str()),
        (Some(answer.len() as u64), Some("complete")),
        "{raw}"
    );

    // An ended stream goes on the same way; a stream with no row is refused.
    let (status, _, raw) = post(&server, "/v1/streams/k/open", &format!(r#"{{"offset":{}}}"#, answer.len())).await;
    assert_eq!(status, 200, "{raw}");
    let (status, e, _) = post(&server, "/v1/streams/nothing/open", r#"{"offset":0}"#).await;
    assert_eq!((status, e["kind"].as_str()), (404, Some("unknown_stream")));
}
