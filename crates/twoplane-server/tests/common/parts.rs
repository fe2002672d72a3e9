//! A message made of parts for the server's tests: the issue's message as producer events, and
//! the message they make, by the core's own producer log.

#![allow(dead_code)] // each test binary uses a different part of `common`

use std::collections::HashMap;

use serde_json::{json, Value};
use twoplane_core::message::{parse_producer_event, Event, MessageLog, PartRef, ProducerEvent};
use twoplane_core::Text;

/// The message of the issue, as producer events: reasoning, a tool call whose input arrives in
/// 40 pieces, its output (preliminary, then final), two texts, a data part replaced once, a
/// transient part, metadata and the finish reason.
pub fn issue_events() -> Vec<Value> {
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
pub fn width(event: &Value) -> u64 {
    match event["type"].as_str() {
        Some("chunk") => event["text"].as_str().unwrap().encode_utf16().count() as u64,
        _ => 1,
    }
}

/// The message the events make, by the core's own producer log (the same rules).
pub fn log_of(events: &[Value]) -> MessageLog {
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
