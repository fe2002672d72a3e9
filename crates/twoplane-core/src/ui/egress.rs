//! A message and its later frames out as UI message chunks (docs/ai-sdk.md, "Out").
//!
//! Guarantees:
//! - [`message_chunks`] of a message from nothing is its compacted replay: per part, in part
//!   order, its start, one delta with its whole body (none when empty), its end if it ended (a
//!   tool call: the chunks that reach its state), and `finish` when the message has a finish
//!   reason. From an earlier state of the same message, it is exactly the chunks that take a
//!   reader from there to here (new parts whole, grown bodies as one delta, new ends, a tool's
//!   new states), so a reader that read the earlier chunks reads on without a duplicate.
//! - [`UiEgress`] follows a reader: after the replay, each live frame gives the chunks of what
//!   it changed, with the ids the replay gave its part (`text-<part>` for a text, the producer's
//!   id or `reasoning-<part>` for reasoning, the `toolCallId` of a call), so replay and tail fit.
//!   A body delta costs the delta's text, never a copy of the body.
//! - Attributes whose names start with `$` are hints ([`super::HINT_STREAMED`], ...) and never
//!   reach a chunk as such; a chunk type the ingest kept as an atomic part comes out as it came
//!   in (its fields; a reserved name moved aside comes back).

use super::vocab::{is_data, is_tool, Obj, HINT_APPROVAL_RESPONSE, HINT_DROPPED, HINT_INPUT_ERROR, HINT_STREAMED};
use crate::error::Result;
use crate::frame::StreamStatus;
use crate::json::JsonValue;
use crate::message::{Attrs, Decision, Event, Message, MessageFrame, Part};
use crate::text::Text;

/// The `start` chunk: the message id, and the whole metadata when it has any.
pub fn start_chunk(message_id: &Text, metadata: &Attrs) -> JsonValue {
    let meta = whole_metadata(metadata);
    Obj::typed("start").text("messageId", message_id).maybe("messageMetadata", meta.as_ref()).build()
}

/// The chunks that take a reader holding `prev` (`None`: nothing) to `next`, a later state of the
/// same message (see the module guarantees). The `start` chunk is [`start_chunk`]'s.
pub fn message_chunks(prev: Option<&Message>, next: &Message) -> Vec<JsonValue> {
    let mut out = Vec::new();
    // A step's `finish-step` waits for the step's other parts: ai 5 and 6 forget the active text
    // and reasoning parts at it, so a part of the step that grows in the same call must come first.
    let mut step_end: Option<JsonValue> = None;
    for (i, part) in next.parts().iter().enumerate() {
        let before = prev.and_then(|m| m.parts().get(i)).map(Snapshot::of);
        if before.is_none() && i == 0 && untouched(part) {
            continue;
        }
        if part.kind == "step-start" {
            out.extend(step_end.take());
        }
        let at = out.len();
        part_chunks(i as u32, before.as_ref(), part, next, &mut out);
        if part.kind == "step-start" && out.len() > at && is_type(&out[out.len() - 1], "finish-step") {
            step_end = out.pop();
        }
        // Parts a `reset-step` took back are replayed, then the reset (the SDK drops them again:
        // leaving them out would build the same message, but not its last snapshot).
        if before.is_none() && dropped(part) && !next.parts().get(i + 1).is_some_and(dropped) {
            out.push(Obj::typed("reset-step").build());
        }
    }
    out.extend(step_end);
    if let Some(prev) = prev {
        let changed: Attrs = next
            .metadata()
            .iter()
            .filter(|(k, v)| prev.metadata().iter().all(|(pk, pv)| pk != k || pv != v))
            .cloned()
            .collect();
        if !changed.is_empty() {
            out.push(metadata_chunk(&changed));
        }
    }
    if next.finish_reason().is_some() && prev.is_none_or(|p| p.finish_reason().is_none()) {
        out.push(finish_chunk(next.finish_reason()));
    }
    out
}

/// The chunks that end a reader's stream, given how the stream ended: on `complete`, the ends of
/// the text and reasoning parts still open that came from a producer that was not a UI stream
/// (which never sends them), and `finish` when the message had none; on `cancelled`, `abort` (with the reason);
/// on `error`, `error` with the message.
pub fn end_chunks(message: &Message, status: StreamStatus, error: Option<&Text>, finished: bool) -> Vec<JsonValue> {
    let mut out = Vec::new();
    match status {
        StreamStatus::Complete => {
            for (i, p) in message.parts().iter().enumerate() {
                // A part with a `state` came from a UI stream, which ends its parts itself (or
                // leaves them streaming, as an errored model does): only the others are ended.
                let stateless = !p.attrs.iter().any(|(k, _)| k == "state");
                if (p.kind == "text" || p.kind == "reasoning") && stateless && !p.ended && !(i == 0 && untouched(p)) {
                    out.push(
                        Obj::typed(&format!("{}-end", p.kind.to_string_lossy()))
                            .text("id", &body_id(i as u32, p))
                            .build(),
                    );
                }
            }
            if !finished {
                out.push(finish_chunk(message.finish_reason()));
            }
        }
        StreamStatus::Cancelled => {
            out.push(Obj::typed("abort").maybe("reason", error.map(|e| JsonValue::String(e.clone())).as_ref()).build())
        }
        StreamStatus::Error => out.push(
            Obj::typed("error")
                .text("errorText", error.unwrap_or(&Text::from("the stream ended with an error")))
                .build(),
        ),
        StreamStatus::Interrupted => {}
    }
    out
}

/// The chunks of one live frame, applied to `message` (the message as the reader holds it).
/// A frame that is not content (`open`, `durable`, terminals) gives nothing; one the message's
/// rules refuse is an error and changes nothing.
pub fn frame_chunks(message: &mut Message, frame: &MessageFrame) -> Result<Vec<JsonValue>> {
    let mut out = Vec::new();
    match frame {
        MessageFrame::Chunk { text, .. } => {
            if let Decision::Body { part, held, .. } = message.apply(frame)? {
                let p = &message.parts()[part as usize];
                let delta = Text::from_slice(text.tail(held as usize));
                if !delta.is_empty() {
                    out.push(delta_chunk(part, p, delta));
                }
            }
        }
        MessageFrame::Event { event, .. } => match event {
            Event::Meta { value } => {
                if message.apply(frame)? != Decision::Held {
                    out.push(metadata_chunk(value));
                }
            }
            Event::Finish { reason } => {
                if message.apply(frame)? != Decision::Held {
                    out.push(finish_chunk(Some(reason)));
                }
            }
            Event::Transient { kind, value } => {
                if message.apply(frame)? != Decision::Held {
                    let mut chunk = Obj::typed(
                        &kind.as_ref().map(Text::to_string_lossy).unwrap_or_else(|| "data-transient".into()),
                    );
                    for (k, v) in value {
                        chunk = chunk.with(&k.to_string_lossy(), v.clone());
                    }
                    out.push(chunk.with("transient", JsonValue::Bool(true)).build());
                }
            }
            _ => {
                let index = event.part().unwrap_or(0) as usize;
                let before = message.parts().get(index).map(Snapshot::of);
                if message.apply(frame)? != Decision::Held {
                    if let Some(next) = message.parts().get(index) {
                        part_chunks(index as u32, before.as_ref(), next, message, &mut out);
                    }
                }
            }
        },
        _ => {}
    }
    Ok(out)
}

/// A reader's UI stream: the message as it holds it, and how it ended.
#[derive(Clone, Debug, Default)]
pub struct UiEgress {
    message: Message,
    finished: bool,
}

impl UiEgress {
    pub fn new() -> Self {
        UiEgress::default()
    }

    /// The message as the reader holds it.
    pub fn message(&self) -> &Message {
        &self.message
    }

    /// `start` and the compacted replay of `message`.
    pub fn replay(&mut self, message_id: &Text, message: Message) -> Vec<JsonValue> {
        let mut out = vec![start_chunk(message_id, message.metadata())];
        out.extend(message_chunks(None, &message));
        self.note(&out);
        self.message = message;
        out
    }

    /// The chunks from the message held to `next`, a later state of it (the store, say).
    pub fn advance_to(&mut self, next: Message) -> Vec<JsonValue> {
        let out = message_chunks(Some(&self.message), &next);
        self.note(&out);
        self.message = next;
        out
    }

    /// The chunks of one live frame.
    pub fn frame(&mut self, frame: &MessageFrame) -> Result<Vec<JsonValue>> {
        let out = frame_chunks(&mut self.message, frame)?;
        self.note(&out);
        Ok(out)
    }

    /// The chunks that end the stream.
    pub fn end(&mut self, status: StreamStatus, error: Option<&Text>) -> Vec<JsonValue> {
        let out = end_chunks(&self.message, status, error, self.finished);
        self.note(&out);
        out
    }

    fn note(&mut self, chunks: &[JsonValue]) {
        if chunks.iter().any(|c| c.get("type").and_then(JsonValue::as_text).is_some_and(|t| *t == "finish")) {
            self.finished = true;
        }
    }
}

/// What a part was before a frame changed it: enough to tell the change, no copy of the body.
struct Snapshot {
    body_len: usize,
    ended: bool,
    attrs: Attrs,
}

impl Snapshot {
    fn of(p: &Part) -> Snapshot {
        Snapshot { body_len: p.body.len(), ended: p.ended, attrs: p.attrs.clone() }
    }
}

/// The chunks that take part `i` from `before` (`None`: not started) to `next`.
fn part_chunks(i: u32, before: Option<&Snapshot>, next: &Part, message: &Message, out: &mut Vec<JsonValue>) {
    let attr = |k: &str| next.attrs.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v);
    let old = |k: &str| before.and_then(|b| b.attrs.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v));
    let grown = next.body.len() > before.map_or(0, |b| b.body_len);
    let newly_ended = next.ended && !before.is_some_and(|b| b.ended);
    let kind = next.kind.to_string_lossy();
    if dropped(next) && old(HINT_DROPPED).is_none() && before.is_some() {
        // A `reset-step` took the part back: the SDK drops every part of the step at once.
        if !message.parts().get(i as usize + 1).is_some_and(dropped) {
            out.push(Obj::typed("reset-step").build());
        }
        return;
    }
    match kind.as_str() {
        "step-start" => {
            if before.is_none() {
                out.push(Obj::typed("start-step").build());
            }
            if newly_ended {
                out.push(Obj::typed("finish-step").build());
            }
        }
        "text" | "reasoning" => {
            let id = body_id(i, next);
            if before.is_none() {
                out.push(
                    Obj::typed(&format!("{kind}-start"))
                        .text("id", &id)
                        .maybe("providerMetadata", attr("providerMetadata"))
                        .build(),
                );
            }
            if grown {
                let delta = Text::from_slice(next.body.tail(before.map_or(0, |b| b.body_len)));
                out.push(Obj::typed(&format!("{kind}-delta")).text("id", &id).text("delta", &delta).build());
            } else if before.is_some()
                && attr("providerMetadata") != old("providerMetadata")
                && !newly_done(before, next)
            {
                out.push(
                    Obj::typed(&format!("{kind}-delta"))
                        .text("id", &id)
                        .with("delta", JsonValue::String(Text::new()))
                        .maybe("providerMetadata", attr("providerMetadata"))
                        .build(),
                );
            }
            if newly_done(before, next) {
                let meta = if before.is_some() { attr("providerMetadata") } else { None };
                out.push(
                    Obj::typed(&format!("{kind}-end"))
                        .text("id", &id)
                        .maybe("providerMetadata", meta)
                        .maybe("citations", attr("citations"))
                        .build(),
                );
            }
        }
        "error" => {
            if before.is_none() {
                out.push(Obj::typed("error").maybe("errorText", attr("errorText")).build());
            }
        }
        _ if is_tool(&next.kind) => {
            let streamed = attr(HINT_STREAMED).is_some();
            if before.is_none() && streamed {
                out.push(tool_input_start(next));
            }
            if grown {
                let delta = Text::from_slice(next.body.tail(before.map_or(0, |b| b.body_len)));
                let call = attr("toolCallId").cloned().unwrap_or(JsonValue::Null);
                out.push(
                    Obj::typed("tool-input-delta").with("toolCallId", call).text("inputTextDelta", &delta).build(),
                );
            }
            let had = before.map(|b| tool_state_chunks(&next.kind, &b.attrs)).unwrap_or_default();
            let now = tool_state_chunks(&next.kind, &next.attrs);
            let same = had.iter().zip(&now).take_while(|(a, b)| a == b).count();
            out.extend(now.into_iter().skip(same));
        }
        _ if is_data(&next.kind) => {
            if before.is_none() || attr("data") != old("data") {
                out.push(Obj::typed(&kind).maybe("id", attr("id")).maybe("data", attr("data")).build());
            }
        }
        _ => {
            if before.is_none() {
                let mut chunk = Obj::typed(&kind);
                for (k, v) in next.attrs.iter().filter(|(k, _)| !k.units().starts_with(&[0x24]) || is_moved(k)) {
                    let name = k.to_string_lossy();
                    chunk = chunk.with(name.strip_prefix('$').unwrap_or(&name), v.clone());
                }
                out.push(chunk.build());
            }
        }
    }
}

/// A reserved member name the ingest moved aside (`$text`, `$type`, `$inputText`).
fn is_moved(k: &Text) -> bool {
    crate::message::frame::RESERVED_KEYS.iter().any(|r| *k == format!("${r}").as_str())
}

/// Whether a text or reasoning part is done: its `state` says so, or, for a part without one (a
/// producer that was not a UI stream), it ended.
fn is_done(p: &Part) -> bool {
    match p.attrs.iter().rev().find(|(k, _)| k == "state") {
        Some((_, v)) => v.as_text().is_some_and(|s| *s == "done"),
        None => p.ended,
    }
}

fn newly_done(before: Option<&Snapshot>, next: &Part) -> bool {
    let was = before.is_some_and(|b| match b.attrs.iter().rev().find(|(k, _)| k == "state") {
        Some((_, v)) => v.as_text().is_some_and(|s| *s == "done"),
        None => b.ended,
    });
    is_done(next) && !was
}

/// Whether `chunk` is of type `ty`.
fn is_type(chunk: &JsonValue, ty: &str) -> bool {
    chunk.get("type").and_then(JsonValue::as_text).is_some_and(|t| *t == ty)
}

/// Whether a `reset-step` took the part back.
fn dropped(p: &Part) -> bool {
    p.attrs.iter().any(|(k, _)| k == HINT_DROPPED)
}

/// A part with nothing in it (the implicit part 0 of a message that never used it).
fn untouched(p: &Part) -> bool {
    p.body.is_empty() && p.attrs.is_empty() && !p.ended
}

/// The id a text or reasoning part's chunks carry.
fn body_id(i: u32, p: &Part) -> Text {
    match p.attrs.iter().rev().find(|(k, _)| k == "id").and_then(|(_, v)| v.as_text()) {
        Some(id) if p.kind == "reasoning" => id.clone(),
        _ => Text::from(format!("{}-{i}", p.kind.to_string_lossy()).as_str()),
    }
}

/// A body delta of part `part`.
fn delta_chunk(part: u32, p: &Part, delta: Text) -> JsonValue {
    if is_tool(&p.kind) {
        let call =
            p.attrs.iter().rev().find(|(k, _)| k == "toolCallId").map(|(_, v)| v.clone()).unwrap_or(JsonValue::Null);
        return Obj::typed("tool-input-delta").with("toolCallId", call).text("inputTextDelta", &delta).build();
    }
    let kind = if p.kind == "reasoning" { "reasoning" } else { "text" };
    Obj::typed(&format!("{kind}-delta")).text("id", &body_id(part, p)).text("delta", &delta).build()
}

fn tool_input_start(p: &Part) -> JsonValue {
    let attr = |k: &str| p.attrs.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v);
    let (name, dynamic) = tool_name(p);
    Obj::typed("tool-input-start")
        .maybe("toolCallId", attr("toolCallId"))
        .with("toolName", name)
        .maybe("dynamic", dynamic.as_ref())
        .maybe("providerExecuted", attr("providerExecuted"))
        .maybe("title", attr("title"))
        .maybe("toolMetadata", attr("toolMetadata"))
        .maybe("inputEncoding", attr("inputEncoding"))
        .maybe("providerMetadata", attr("callProviderMetadata"))
        .build()
}

/// A tool part's name, and `dynamic: true` for a dynamic call.
fn tool_name(p: &Part) -> (JsonValue, Option<JsonValue>) {
    if p.kind == "dynamic-tool" {
        let name =
            p.attrs.iter().rev().find(|(k, _)| k == "toolName").map(|(_, v)| v.clone()).unwrap_or(JsonValue::Null);
        return (name, Some(JsonValue::Bool(true)));
    }
    (JsonValue::String(Text::from_slice(p.kind.tail("tool-".len()))), None)
}

/// The chunks that take a tool call from its input to its state (after the input's start and
/// deltas): the input, or its error; the approval asked and answered; the output, its error or
/// its denial.
fn tool_state_chunks(kind: &Text, attrs: &Attrs) -> Vec<JsonValue> {
    let attr = |k: &str| attrs.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v);
    let mut out = Vec::new();
    let state = attr("state").and_then(JsonValue::as_text).map(Text::to_string_lossy).unwrap_or_default();
    if state.is_empty() || state == "input-streaming" {
        return out;
    }
    let part = Part { kind: kind.clone(), body: Text::new(), attrs: attrs.clone(), ended: true };
    let (name, dynamic) = tool_name(&part);
    let call = attr("toolCallId").cloned().unwrap_or(JsonValue::Null);
    let head = |ty: &str| {
        Obj::typed(ty)
            .with("toolCallId", call.clone())
            .with("toolName", name.clone())
            .maybe("dynamic", dynamic.as_ref())
    };
    if attr(HINT_INPUT_ERROR).is_some() {
        out.push(
            head("tool-input-error")
                .maybe("input", attr("input"))
                .maybe("errorText", attr("errorText"))
                .maybe("providerExecuted", attr("providerExecuted"))
                .maybe("providerMetadata", attr("callProviderMetadata"))
                .maybe("toolMetadata", attr("toolMetadata"))
                .maybe("title", attr("title"))
                .build(),
        );
        return out;
    }
    out.push(
        head("tool-input-available")
            .maybe("input", attr("input"))
            .maybe("providerExecuted", attr("providerExecuted"))
            .maybe("providerMetadata", attr("callProviderMetadata"))
            .maybe("title", attr("title"))
            .maybe("toolMetadata", attr("toolMetadata"))
            .build(),
    );
    if let Some(approval) = attr("approval") {
        let a = |k: &str| approval.get(k);
        out.push(
            Obj::typed("tool-approval-request")
                .maybe("approvalId", a("id"))
                .with("toolCallId", call.clone())
                .maybe("approvalDescriptor", a("descriptor"))
                .maybe("inputSchemaInput", a("inputSchemaInput"))
                .maybe("reason", a("requestReason"))
                .maybe("isAutomatic", a("isAutomatic"))
                .maybe("signature", a("signature"))
                .build(),
        );
        if let Some(answer) = attr(HINT_APPROVAL_RESPONSE) {
            out.push(
                Obj::typed("tool-approval-response")
                    .maybe("approvalId", a("id"))
                    .maybe("approved", answer.get("approved"))
                    .maybe("reason", answer.get("reason"))
                    .build(),
            );
        }
    }
    let output = |ty: &str| Obj::typed(ty).with("toolCallId", call.clone()).maybe("dynamic", dynamic.as_ref());
    match state.as_str() {
        "output-available" => {
            let preliminary = attr("preliminary").filter(|v| v.as_bool() == Some(true));
            out.push(
                output("tool-output-available")
                    .maybe("output", attr("output"))
                    .maybe("preliminary", preliminary)
                    .maybe("providerExecuted", attr("providerExecuted"))
                    .maybe("providerMetadata", attr("resultProviderMetadata"))
                    .maybe("toolMetadata", attr("toolMetadata"))
                    .build(),
            );
        }
        "output-error" => out.push(
            output("tool-output-error")
                .maybe("errorText", attr("errorText"))
                .maybe("providerExecuted", attr("providerExecuted"))
                .maybe("providerMetadata", attr("resultProviderMetadata"))
                .maybe("toolMetadata", attr("toolMetadata"))
                .build(),
        ),
        "output-denied" => out.push(Obj::typed("tool-output-denied").with("toolCallId", call).build()),
        _ => {}
    }
    out
}

fn metadata_chunk(value: &Attrs) -> JsonValue {
    let meta = whole_metadata(value).unwrap_or(JsonValue::Object(Vec::new()));
    Obj::typed("message-metadata").with("messageMetadata", meta).build()
}

/// Metadata as the SDK holds it: the object, or what a `$whole` member carries (metadata that
/// is not an object); `None` when there is none.
fn whole_metadata(metadata: &Attrs) -> Option<JsonValue> {
    if metadata.is_empty() {
        return None;
    }
    match metadata.iter().rev().find(|(k, _)| k == "$whole") {
        Some((_, v)) => Some(v.clone()),
        None => Some(JsonValue::Object(metadata.clone())),
    }
}

fn finish_chunk(reason: Option<&Text>) -> JsonValue {
    Obj::typed("finish").maybe("finishReason", reason.map(|r| JsonValue::String(r.clone())).as_ref()).build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_value;
    use crate::message::MessageLog;
    use crate::ui::{UiIngest, UiOp};

    /// The message a list of chunks makes, through the ingest and the core's log.
    fn ingest(chunks: &[&str]) -> MessageLog {
        let mut ui = UiIngest::new("m".into(), 1);
        let mut log = MessageLog::new();
        for c in chunks {
            for op in ui.feed(&parse_value(c).unwrap()).unwrap() {
                match op {
                    UiOp::Event(e) => drop(log.event(e).unwrap()),
                    UiOp::Delta { part, text } => drop(log.delta(part, text).unwrap()),
                    UiOp::Abort { .. } => {}
                }
            }
        }
        log
    }

    fn types(chunks: &[JsonValue]) -> Vec<String> {
        chunks.iter().map(|c| c.get("type").and_then(JsonValue::as_text).unwrap().to_string_lossy()).collect()
    }

    const TURN: &[&str] = &[
        r#"{"type":"start","messageId":"m","messageMetadata":{"model":"x"}}"#,
        r#"{"type":"start-step"}"#,
        r#"{"type":"reasoning-start","id":"r1"}"#,
        r#"{"type":"reasoning-delta","id":"r1","delta":"hm"}"#,
        r#"{"type":"reasoning-end","id":"r1"}"#,
        r#"{"type":"tool-input-start","toolCallId":"c","toolName":"search"}"#,
        r#"{"type":"tool-input-delta","toolCallId":"c","inputTextDelta":"{\"q\""}"#,
        r#"{"type":"tool-input-delta","toolCallId":"c","inputTextDelta":":1}"}"#,
        r#"{"type":"tool-input-available","toolCallId":"c","toolName":"search","input":{"q":1}}"#,
        r#"{"type":"tool-output-available","toolCallId":"c","output":1,"preliminary":true}"#,
        r#"{"type":"tool-output-available","toolCallId":"c","output":2}"#,
        r#"{"type":"finish-step"}"#,
        r#"{"type":"text-start","id":"t"}"#,
        r#"{"type":"text-delta","id":"t","delta":"ok"}"#,
        r#"{"type":"data-w","id":"d","data":1}"#,
        r#"{"type":"data-w","id":"d","data":2}"#,
        r#"{"type":"text-end","id":"t"}"#,
        r#"{"type":"finish","finishReason":"stop"}"#,
    ];

    #[test]
    fn a_replay_is_compact_and_in_order() {
        let log = ingest(TURN);
        let mut egress = UiEgress::new();
        let out = egress.replay(&"m".into(), log.message().clone());
        assert_eq!(
            types(&out),
            [
                "start",
                "start-step",
                "reasoning-start",
                "reasoning-delta",
                "reasoning-end",
                "tool-input-start",
                "tool-input-delta",
                "tool-input-available",
                "tool-output-available",
                "text-start",
                "text-delta",
                "text-end",
                "data-w",
                "finish-step",
                "finish"
            ]
        );
        assert_eq!(out[6].get("inputTextDelta").unwrap().as_text().unwrap(), "{\"q\":1}");
        assert_eq!(out[8].get("output"), Some(&JsonValue::Number(2.0)));
        assert_eq!(out[8].get("preliminary"), None, "a final output is not preliminary");
        assert_eq!(out[0].to_json(), r#"{"type":"start","messageId":"m","messageMetadata":{"model":"x"}}"#);
        assert!(egress.end(StreamStatus::Complete, None).is_empty(), "finished and every text ended");
    }

    #[test]
    fn a_replay_at_any_cut_then_the_tail_gives_every_chunk_once() {
        let log = ingest(TURN);
        let whole = {
            let mut e = UiEgress::new();
            e.replay(&"m".into(), log.message().clone());
            e.message().document()
        };
        for cut in 0..=log.len() {
            let mut e = UiEgress::new();
            let mut out = e.replay(&"m".into(), log.message_at(cut));
            for frame in log.frames_from(cut) {
                out.extend(e.frame(&frame).unwrap());
            }
            assert_eq!(e.message().document(), whole, "cut at {cut}");
            // Text deltas for one id add up to its body once: no duplicate.
            let deltas: String = out
                .iter()
                .filter(|c| c.get("type").and_then(JsonValue::as_text).is_some_and(|t| *t == "text-delta"))
                .map(|c| c.get("delta").unwrap().as_text().unwrap().to_string_lossy())
                .collect();
            assert_eq!(deltas, "ok", "cut at {cut}: {:?}", types(&out));
            let inputs = types(&out).iter().filter(|t| *t == "tool-input-available").count();
            assert_eq!(inputs, 1, "cut at {cut}: {:?}", types(&out));
            let finals = out
                .iter()
                .rfind(|c| c.get("type").and_then(JsonValue::as_text).is_some_and(|t| *t == "tool-output-available"))
                .and_then(|c| c.get("output").cloned());
            assert_eq!(finals, Some(JsonValue::Number(2.0)), "cut at {cut}");
        }
    }

    #[test]
    fn ends_and_unknown_kinds() {
        let log = ingest(&[
            r#"{"type":"text-start","id":"t"}"#,
            r#"{"type":"text-delta","id":"t","delta":"a"}"#,
            r#"{"type":"brand-new","text":"x","n":1}"#,
        ]);
        let mut e = UiEgress::new();
        let out = e.replay(&"m".into(), log.message().clone());
        assert_eq!(out.last().unwrap().to_json(), r#"{"type":"brand-new","text":"x","n":1}"#);
        // A UI stream's text ends itself (or stays streaming, as an errored model leaves it).
        assert_eq!(types(&e.clone().end(StreamStatus::Complete, None)), ["finish"]);
        // A plain text producer's part 0 is ended for it.
        let mut plain = UiEgress::new();
        plain.replay(&"m".into(), Message::from_text("abc".into()));
        assert_eq!(types(&plain.end(StreamStatus::Complete, None)), ["text-end", "finish"]);
        assert_eq!(
            e.clone().end(StreamStatus::Cancelled, Some(&"stop".into()))[0].to_json(),
            r#"{"type":"abort","reason":"stop"}"#
        );
        assert_eq!(types(&e.end(StreamStatus::Error, Some(&"x".into()))), ["error"]);
    }
}
